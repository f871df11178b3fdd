/* SPDX-License-Identifier: MIT */
/*
 * Connection totals from a dump: each snapshot record lists the connections that changed, so
 * the last counts of every connection are kept by id and summed per process. Pure.
 */
#ifndef NT_DUMPCONNS_H
#define NT_DUMPCONNS_H

#include <jansson.h>

struct dump_conn {
	char id[24];
	int pid;
	long long sent, recv, retrans;
};

struct dump_conns {
	struct dump_conn *v;
	int n, cap;
};

/* Take the connections of a snapshot record; 0 or -ENOMEM. */
int dump_conns_update(struct dump_conns *d, json_t *snapshot);

struct dump_conn_sum {
	int conns;
	long long sent, recv, retrans;
};

struct dump_conn_sum dump_conns_of(const struct dump_conns *d, int pid);
void dump_conns_free(struct dump_conns *d);

#endif /* NT_DUMPCONNS_H */
