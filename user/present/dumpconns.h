/* SPDX-License-Identifier: MIT */
/*
 * Connection totals from a dump: each snapshot record lists the connections that changed, so
 * the last counts of every connection are kept by id and summed per process. Pure.
 */
#ifndef NT_DUMPCONNS_H
#define NT_DUMPCONNS_H

#include <jansson.h>
#include <stdbool.h>

struct dump_conn {
	char id[24];
	int pid;
	long long sent, recv, retrans;
	int mi; /* its process's dump_moved, -1 before it moved anything */
};

/* the bytes a process's connections moved, sent and received, as the snapshots came */
struct dump_moved {
	int pid;
	long long bytes;
	bool changed; /* by the last snapshot taken */
};

struct dump_conns {
	struct dump_conn *v;
	int n, cap;
	struct dump_moved *m;
	int nm, capm;
	int hint; /* where the next connection is looked for first */
};

/*
 * Take the connections of a snapshot record; 0 or -ENOMEM. A connection's counts that went
 * down are a new connection under an old id: all it counts is moved.
 */
int dump_conns_update(struct dump_conns *d, json_t *snapshot);

struct dump_conn_sum {
	int conns;
	long long sent, recv, retrans;
};

struct dump_conn_sum dump_conns_of(const struct dump_conns *d, int pid);
void dump_conns_free(struct dump_conns *d);

#endif /* NT_DUMPCONNS_H */
