/* SPDX-License-Identifier: MIT */
/* The connection table's pure parts: joining the two ends of a connection. */
#ifndef NT_CONNS_H
#define NT_CONNS_H

#include <stdbool.h>
#include "model/snapshot.h"

/* b is the other end of a: same family, addresses and ports swapped. */
bool conns_is_reverse(const struct nt_tuple *a, const struct nt_tuple *b);

/*
 * For each connection whose other end is in the table too, set peer_pid to that end's owner.
 * A known peer is kept when the other end has gone (the peer process exited): what matters is
 * who it was. Returns how many connections have a peer. O(n log n).
 */
int conns_map_peers(struct snap_conn *c, int n);

#endif /* NT_CONNS_H */
