/* SPDX-License-Identifier: MIT */
/*
 * Synthetic snapshots of large jobs, for the scale unit tests (test_scale.c) and the diagnosis
 * benchmark (tests/bench/diagbench.c): N ranks with K connections each, in the patterns real
 * collectives have (a ring, a tree, all-to-all), one rank (or two) hung, the others spinning on
 * EAGAIN on the connection they wait on, as NCCL's proxy does. Header only.
 */
#ifndef NT_SYNTH_H
#define NT_SYNTH_H

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "diagnose/diagnose.h"

#define SYNTH_SEC   NT_NSEC_PER_SEC
#define SYNTH_NOW   (10000 * SYNTH_SEC)
#define SYNTH_STALL (SYNTH_NOW - 8 * SYNTH_SEC) /* when the hang began */

enum synth_pattern {
	SYNTH_RING,    /* rank r receives from r-1: the chain runs around to the hung rank */
	SYNTH_TREE,    /* a reduce up a binary tree: each rank waits on its parent, the hung
			* rank's ancestors on their child towards it */
	SYNTH_ALL2ALL, /* every rank has K peers; each waits on the hung rank directly */
	SYNTH_CYCLE,   /* every rank waits on the next, nobody is hung: a wait cycle */
	SYNTH_TWO,     /* two rings of N/2, each with its own hung rank */
};

struct synth {
	struct snapshot s;
	struct snap_proc *procs;
	struct snap_conn *conns;
	int nranks, per_rank;
	int hung[2]; /* the hung ranks (-1 if none) */
};

/* A connection of rank a (pid 1000 + a) to rank b, local port port */
static inline struct snap_conn *synth_conn(struct synth *y, int a, int b, int port)
{
	struct snap_conn *c = &y->conns[y->s.nconns++];

	memset(c, 0, sizeof(*c));
	c->id = (uint64_t)y->s.nconns;
	c->pid = 1000 + a;
	c->peer_pid = 1000 + b;
	c->c.t.family = AF_INET;
	c->c.t.saddr[0] = 10;
	c->c.t.saddr[3] = (uint8_t)(a % 250 + 1);
	c->c.t.daddr[0] = 10;
	c->c.t.daddr[3] = (uint8_t)(b % 250 + 1);
	c->c.t.sport = (uint16_t)port;
	c->c.t.dport = (uint16_t)(20000 + b % 40000);
	c->c.state = 1; /* ESTABLISHED */
	c->c.first_ns = SYNTH_NOW - 100 * SYNTH_SEC;
	/* healthy until the hang: progress a moment before it */
	c->c.last_send_ns = c->c.last_recv_ns = SYNTH_STALL - SYNTH_SEC / 10;
	c->c.last_send_try_ns = c->c.last_recv_try_ns = c->c.last_send_ns;
	c->c.tgid = 1000 + a;
	return c;
}

/* rank a waits on its connection c: receives that keep getting EAGAIN */
static inline void synth_spin(struct snap_conn *c)
{
	c->c.recv_eagain = 123456;
	c->c.last_eagain_ns = SYNTH_NOW - SYNTH_SEC / 20;
	c->c.last_recv_try_ns = c->c.last_eagain_ns;
}

/* The rank rank r waits on in the pattern, -1 if none */
static inline int synth_waits_on(const struct synth *y, enum synth_pattern p, int r)
{
	int half = y->nranks / 2;

	switch (p) {
	case SYNTH_RING:
	case SYNTH_CYCLE:
		return (r + y->nranks - 1) % y->nranks;
	case SYNTH_TREE:
		if (r == y->hung[0])
			return -1;
		/* an ancestor of the hung rank waits on its child on the way down to it */
		for (int a = y->hung[0]; a; a = (a - 1) / 2)
			if ((a - 1) / 2 == r)
				return a;
		return r ? (r - 1) / 2 : -1;
	case SYNTH_ALL2ALL:
		return y->hung[0];
	case SYNTH_TWO:
		return r < half ? (r + half - 1) % half : half + (r - half + half - 1) % half;
	}
	return -1;
}

/* n ranks, k connections each (k >= 2), in pattern p; hung: the hung rank (two for SYNTH_TWO) */
static inline struct synth *synth_new(int n, int k, enum synth_pattern p, int hung)
{
	struct synth *y = calloc(1, sizeof(*y));
	int port = 30000;

	if (!y)
		return NULL;
	y->nranks = n;
	y->per_rank = k;
	y->hung[0] = p == SYNTH_CYCLE ? -1 : hung;
	y->hung[1] = p == SYNTH_TWO ? (hung + n / 2) % n : -1;
	y->procs = calloc(n, sizeof(*y->procs));
	y->conns = calloc((size_t)n * k, sizeof(*y->conns));
	if (!y->procs || !y->conns) {
		free(y->procs);
		free(y->conns);
		free(y);
		return NULL;
	}
	y->s.now_ns = SYNTH_NOW;
	y->s.procs = y->procs;
	y->s.conns = y->conns;
	for (int r = 0; r < n; r++) {
		struct snap_proc *q = &y->procs[y->s.nprocs++];
		int on = synth_waits_on(y, p, r);
		bool hung_here = r == y->hung[0] || r == y->hung[1];

		q->pid = 1000 + r;
		q->ppid = 1;
		q->rank = r;
		q->local_rank = r % 8;
		q->world_size = n;
		memcpy(q->comm, "python3", 8);
		q->state = hung_here ? 'S' : 'R';
		q->cpu_busy_ns = hung_here ? 0 : SYNTH_SEC;
		if (hung_here)
			memcpy(q->where, "clock_nanosleep", 16);
		/* k connections: to the waited rank first (the one that spins), then to others */
		for (int j = 0; j < k; j++) {
			int b = j == 0 && on >= 0 ? on : (r + j + 1) % n;
			struct snap_conn *c = synth_conn(y, r, b == r ? (r + 1) % n : b, port++);

			if (j == 0 && on >= 0 && !hung_here)
				synth_spin(c);
			if (port > 65000)
				port = 30000;
		}
	}
	return y;
}

static inline void synth_free(struct synth *y)
{
	if (!y)
		return;
	free(y->procs);
	free(y->conns);
	free(y);
}

#endif /* NT_SYNTH_H */
