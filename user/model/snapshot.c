// SPDX-License-Identifier: MIT
/* Lookups and names over a snapshot (pure). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/snapfields.h"
#include "model/snapshot.h"

/* ncclFunc_t, which also indexes comm->seqNumber[] for the first five */
static const char *const coll_names[] = {"Broadcast", "Reduce",	  "AllGather", "ReduceScatter",
					 "AllReduce", "SendRecv", "Send",      "Recv",
					 "AlltoAll",  "Scatter",  "Gather"};

const char *snap_coll_name(int f)
{
	return f >= 0 && f < (int)(sizeof(coll_names) / sizeof(coll_names[0])) ? coll_names[f]
									       : "collective";
}

static unsigned int pid_slot(int pid, unsigned int mask)
{
	return ((unsigned int)pid * 2654435761u) & mask;
}

int snapshot_proc_at(const struct snapshot *s, int pid)
{
	int lo = 0, hi = s->nprocs - 1;

	if (s->ix && s->ix->hash) {
		for (unsigned int h = pid_slot(pid, s->ix->hmask);; h = (h + 1) & s->ix->hmask) {
			int v = s->ix->hash[h];

			if (!v)
				return -1;
			if (s->procs[v - 1].pid == pid)
				return v - 1;
		}
	}
	if (!s->ix) {
		for (int i = 0; i < s->nprocs; i++)
			if (s->procs[i].pid == pid)
				return i;
		return -1;
	}
	while (lo <= hi) {
		int mid = (lo + hi) / 2, p = s->procs[s->ix->by_pid[mid]].pid;

		if (p == pid)
			return s->ix->by_pid[mid];
		if (p < pid)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

const char *snap_src_name(int src)
{
	switch (src) {
	case SNAP_SRC_SEQNUMBER:
		return "comm->seqNumber";
	case SNAP_SRC_PROFILER:
		return "NCCL profiler plugin";
	case SNAP_SRC_ENQUEUE:
		return "ncclEnqueueCheck";
	case SNAP_SRC_COLLOPCOUNT:
		return "comm->sharedRes->collOpCount";
	default:
		return "?";
	}
}

const struct snap_proc *snapshot_proc(const struct snapshot *s, int pid)
{
	int i = snapshot_proc_at(s, pid);

	return i < 0 ? NULL : &s->procs[i];
}

const struct snap_setting *snap_proc_setting(const struct snap_proc *p, const char *name)
{
	for (int i = 0; p && i < p->nset; i++)
		if (!strcmp(p->set[i].name, name))
			return &p->set[i];
	return NULL;
}

const int *snapshot_conns_of(const struct snapshot *s, int i, int *n)
{
	*n = s->ix->conn_at[i + 1] - s->ix->conn_at[i];
	return s->ix->conn_of + s->ix->conn_at[i];
}

static const struct snap_proc *sort_procs; /* qsort has no context argument */

static int by_pid_cmp(const void *a, const void *b)
{
	int pa = sort_procs[*(const int *)a].pid, pb = sort_procs[*(const int *)b].pid;

	return pa < pb ? -1 : pa > pb;
}

void snapshot_clamp_procs(struct snapshot *s)
{
	for (int i = 0; i < s->nprocs; i++)
		sf_clamp(&s->procs[i], sf_proc, sf_proc_n, s->now_ns);
	for (int i = 0; i < s->ncomms; i++)
		sf_clamp(&s->comms[i], sf_comm, sf_comm_n, s->now_ns);
}

void snapshot_clamp(struct snapshot *s)
{
	snapshot_clamp_procs(s);
	for (int i = 0; i < s->nconns; i++) {
		sf_clamp(&s->conns[i], sf_sconn, sf_sconn_n, s->now_ns);
		sf_clamp(&s->conns[i].c, sf_conn, sf_conn_n, s->now_ns);
	}
}

/*
 * O(P log P + C log P): the processes sorted by pid, then each connection's owner found by a
 * binary search and the connections bucketed by owner (a counting sort, stable).
 */
int snapshot_index(const struct snapshot *s, struct snap_index *ix)
{
	struct snapshot tmp = *s;
	int *owner = malloc(((size_t)s->nconns + 1) * sizeof(int));

	ix->hmask = 15;
	while (ix->hmask < 2 * (unsigned int)s->nprocs) /* at most half full */
		ix->hmask = ix->hmask * 2 + 1;
	ix->hash = calloc((size_t)ix->hmask + 1, sizeof(int));
	ix->by_pid = malloc(((size_t)s->nprocs + 1) * sizeof(int));
	ix->conn_of = malloc(((size_t)s->nconns + 1) * sizeof(int));
	ix->conn_at = calloc((size_t)s->nprocs + 2, sizeof(int));
	if (!owner || !ix->hash || !ix->by_pid || !ix->conn_of || !ix->conn_at) {
		free(owner);
		snapshot_index_free(ix);
		return -ENOMEM;
	}
	for (int i = 0; i < s->nprocs; i++)
		ix->by_pid[i] = i;
	sort_procs = s->procs;
	if (s->nprocs > 1)
		qsort(ix->by_pid, s->nprocs, sizeof(int), by_pid_cmp);
	for (int i = 0; i < s->nprocs; i++) {
		unsigned int h = pid_slot(s->procs[i].pid, ix->hmask);

		while (ix->hash[h])
			h = (h + 1) & ix->hmask;
		ix->hash[h] = i + 1;
	}
	tmp.ix = ix;
	for (int c = 0; c < s->nconns; c++) {
		/* a process's connections often come together: the last owner first */
		owner[c] = c && s->conns[c].pid == s->conns[c - 1].pid
				   ? owner[c - 1]
				   : snapshot_proc_at(&tmp, s->conns[c].pid);
		ix->conn_at[owner[c] + 1]++; /* -1 (no such process) counts in slot 0: ignored */
	}
	/* conn_at[i + 1] counts procs[i]'s; prefix sums make starts, slot 0 dropped */
	ix->conn_at[0] = 0;
	for (int i = 1; i <= s->nprocs; i++)
		ix->conn_at[i] += ix->conn_at[i - 1];
	for (int i = s->nprocs; i > 0; i--)
		ix->conn_at[i] = ix->conn_at[i - 1];
	ix->conn_at[0] = 0;
	for (int c = 0; c < s->nconns; c++)
		if (owner[c] >= 0)
			ix->conn_of[ix->conn_at[owner[c] + 1]++] = c;
	free(owner);
	return 0;
}

void snapshot_index_free(struct snap_index *ix)
{
	free(ix->hash);
	free(ix->by_pid);
	free(ix->conn_of);
	free(ix->conn_at);
	ix->hash = ix->by_pid = ix->conn_of = ix->conn_at = NULL;
}

void snap_proc_name(const struct snap_proc *p, int pid, char *buf, size_t len)
{
	const char *host = p && p->host ? p->host : NULL;

	if (p && p->host_pid)
		pid = p->host_pid;
	if (p && p->rank >= 0)
		snprintf(buf, len, "rank %d (pid %d%s%s)", p->rank, pid, host ? ", " : "",
			 host ? host : "");
	else if (p && p->comm[0])
		snprintf(buf, len, "pid %d (%s%s%s)", pid, p->comm, host ? ", " : "",
			 host ? host : "");
	else
		snprintf(buf, len, "pid %d%s%s", pid, host ? " on " : "", host ? host : "");
}

uint64_t snap_comm_total(const struct snap_comm *c)
{
	uint64_t t = 0;

	if (c->total_only)
		return c->total;
	for (int f = 0; f < SNAP_NSEQ; f++)
		t += c->seq[f];
	return t;
}
