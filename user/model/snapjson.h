/* SPDX-License-Identifier: MIT */
/*
 * A snapshot as JSON and back: everything diagnose() reads (processes with their NCCL phases,
 * settings, stacks, NCCL log facts and verbs; connections; communicators' counters), so that
 * another machine can diagnose it. `/state` serves it, the dump's `state` records keep it, and
 * `watch` and a merged `report` read it back to diagnose several hosts' ranks as one job.
 */
#ifndef NT_SNAPJSON_H
#define NT_SNAPJSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include "model/snapshot.h"

/* The snapshot as an object; times stay CLOCK_MONOTONIC of this host. */
json_t *snapjson_from_snapshot(const struct snapshot *s);

/* A snapshot read back, owning all it points to. */
struct snapstore {
	struct snapshot s;
	char **strs; /* every string the snapshot points to */
	int nstrs, capstrs;
	void **blocks; /* every other allocation */
	int nblocks, capblocks;
	struct snap_index ix; /* s.ix points here once indexed */
	bool indexed;
};

/*
 * Read o (snapjson_from_snapshot's form) into a new store, every CLOCK_MONOTONIC time moved by
 * shift_ns (0 stays 0: "never"), which puts it on another host's clock. NULL with the reason in
 * err on a malformed object.
 */
struct snapstore *snapjson_parse(json_t *o, int64_t shift_ns, char *err, size_t errlen);
void snapstore_free(struct snapstore *st);
/*
 * Every time of a store read by snapjson_parse moved by by (0 stays 0): what reading it again
 * with shift_ns + by gives, without reading it
 */
void snapstore_shift(struct snapstore *st, int64_t by);

/*
 * What a reader of one host's pages round after round keeps of the last (watch): each
 * connection's element, held, and the connection as read from it. A page of what changed
 * (present/statedelta.h) shares the elements that did not with the last one, the same objects:
 * those are copied, their times moved, not read again. Its strings point into the last round's
 * store, which must outlive the next parse.
 */
struct snapjson_cache {
	json_t **el;
	struct snap_conn *c; /* as read, before the clamp */
	int n;
	int64_t shift;
	int *tab; /* el's index + 1 by address, open addressing; 0 empty */
	size_t cap;
};
/* snapjson_parse(), the connections the cache has taken from it; the cache then this page's */
struct snapstore *snapjson_parse_cached(json_t *o, int64_t shift_ns, struct snapjson_cache *cache,
					char *err, size_t errlen);
void snapjson_cache_free(struct snapjson_cache *cache);

/* Allocations the store frees: zeroed memory, a copy of a string (NULL for NULL). */
void *snapstore_alloc(struct snapstore *st, size_t size);
const char *snapstore_str(struct snapstore *st, const char *s);

#endif /* NT_SNAPJSON_H */
