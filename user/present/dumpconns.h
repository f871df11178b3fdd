/* SPDX-License-Identifier: MIT */
/*
 * Connection totals from a dump: each snapshot record lists the connections that changed, so
 * the last counts of every connection are kept by id and summed per process. Pure.
 */
#ifndef NT_DUMPCONNS_H
#define NT_DUMPCONNS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * With columns on, each connection's bytes moved over the dump, in DUMP_CONN_COLS columns of one
 * width for every connection: one second at first, doubled (each pair of columns summed) when
 * the dump outgrows them. Memory is bounded by the connections, not the hours.
 */
#define DUMP_CONN_COLS 32

struct dump_conn {
	char id[24];
	int pid, peer_pid;
	char src[48], dst[48];
	long long sent, recv, retrans;
	bool net;    /* NCCL's socket transport ("nccl":"net"): the rank's data goes over it */
	int mi;	     /* its process's dump_moved, -1 before it moved anything */
	double *col; /* [DUMP_CONN_COLS] bytes moved in each column, with columns on */
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
	int hint;		 /* where the next connection is looked for first */
	bool cols;		 /* set before the first update: keep each connection's columns */
	uint64_t t0_ns, last_ns; /* the first snapshot's time, the last one's */
	double col_s;		 /* a column's width */
};

/*
 * Take the connections of a snapshot record; 0 or -ENOMEM. A connection's counts that went
 * down are a new connection under an old id: all it counts is moved. With columns on, what a
 * connection moved since the last snapshot is spread evenly over the time between the two (the
 * first snapshot's in its first column).
 */
int dump_conns_update(struct dump_conns *d, json_t *snapshot);

struct dump_conn_sum {
	int conns;
	bool net; /* one of them is NCCL's socket transport */
	long long sent, recv, retrans;
};

struct dump_conn_sum dump_conns_of(const struct dump_conns *d, int pid);
/* how many columns hold the dump so far (0 before the first snapshot) */
int dump_conns_ncols(const struct dump_conns *d);
void dump_conns_free(struct dump_conns *d);

#endif /* NT_DUMPCONNS_H */
