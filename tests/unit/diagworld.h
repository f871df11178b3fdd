/* SPDX-License-Identifier: MIT */
/*
 * Synthetic jobs for the diagnosis unit tests (test_diagnose.c, test_waits.c, test_setup.c,
 * test_colls.c, test_quiet.c): processes, their connections and their communicators' counters
 * as the engine would snapshot them, and diagnose() run on them. Include after <cmocka.h>.
 * Header only: every helper is static inline, so a test file that uses some of them builds
 * without unused-function warnings.
 */
#ifndef NT_DIAGWORLD_H
#define NT_DIAGWORLD_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "diagnose/diagnose.h"
#include "testutil.h"

#define SEC	     NT_NSEC_PER_SEC
#define MSEC	     (SEC / 1000)
#define NOW	     (1000 * SEC)
#define STALL_START  (NOW - 10 * SEC)
#define TCP_EST	     1
#define TCP_SYN_SENT 2
#define MAX_PROCS    128
#define MAX_CONNS    256
#define MAX_OUT	     16

static const struct diag_config cfg = {
	.stall_threshold_ns = 5 * SEC,
	.active_window_ns = SEC,
};

/* A synthetic job: processes and their connections, as the engine would snapshot them. */
struct world {
	struct snap_proc procs[MAX_PROCS];
	struct snap_conn conns[MAX_CONNS];
	struct snapshot s;
	int next_port;
	/* for rings: the connection rank r sends on, and the one it receives on */
	int send_conn[MAX_PROCS];
	int recv_conn[MAX_PROCS];
};

static inline struct world *world_new(void)
{
	struct world *w = calloc(1, sizeof(*w));

	assert_non_null(w);
	w->s.now_ns = NOW;
	w->s.procs = w->procs;
	w->s.conns = w->conns;
	w->next_port = 40000;
	return w;
}

static inline struct snap_proc *add_proc(struct world *w, int pid, int rank, char state,
					 const char *where)
{
	struct snap_proc *p;

	assert_true(w->s.nprocs < MAX_PROCS);
	p = &w->procs[w->s.nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->ppid = 1;
	p->rank = rank;
	p->local_rank = rank;
	p->world_size = -1;
	snprintf(p->comm, sizeof(p->comm), "python3");
	p->state = state;
	snprintf(p->where, sizeof(p->where), "%s", where);
	p->cpu_busy_ns = state == 'R' ? SEC : 0;
	return p;
}

static inline struct snap_proc *proc(struct world *w, int pid)
{
	for (int i = 0; i < w->s.nprocs; i++)
		if (w->procs[i].pid == pid)
			return &w->procs[i];
	fail_msg("no pid %d", pid);
	return NULL;
}

static inline void set_exited(struct snap_proc *p, int status, uint64_t when)
{
	p->exited = true;
	p->state = 'X';
	p->exit_status = status;
	p->exit_ns = when;
}

static inline void tuple4(struct nt_tuple *t, const char *sa, int sp, const char *da, int dp)
{
	*t = test_tuple(AF_INET, sa, sp, da, dp);
}

/* An established connection owned by pid; progress is its last byte either way. */
static inline int add_conn(struct world *w, int pid, int peer_pid, const struct nt_tuple *t,
			   uint64_t progress)
{
	struct snap_conn *c;

	assert_true(w->s.nconns < MAX_CONNS);
	c = &w->conns[w->s.nconns];
	memset(c, 0, sizeof(*c));
	c->id = 0xffff888000000000ULL + w->s.nconns * 0x1000;
	c->pid = pid;
	c->peer_pid = peer_pid;
	c->c.t = *t;
	c->c.tgid = pid;
	c->c.state = TCP_EST;
	c->c.first_ns = SEC;
	c->c.state_ns = SEC;
	c->c.last_send_ns = progress;
	c->c.last_recv_ns = progress;
	c->c.last_send_try_ns = progress;
	c->c.last_recv_try_ns = progress;
	c->c.bytes_sent = c->c.bytes_recv = 1 << 20;
	return w->s.nconns++;
}

/* Both ends of a loopback connection from a to b; returns a's end (b's is the next one). */
static inline int add_pair(struct world *w, int a, int b, uint64_t progress)
{
	struct nt_tuple t, r;
	int port = w->next_port++;
	int i;

	tuple4(&t, "127.0.0.1", port, "127.0.0.1", 29500 + (port % 1000));
	r = t;
	memcpy(r.saddr, t.daddr, 16);
	memcpy(r.daddr, t.saddr, 16);
	r.sport = t.dport;
	r.dport = t.sport;
	i = add_conn(w, a, b, &t, progress);
	add_conn(w, b, a, &r, progress);
	return i;
}

/* The owner keeps calling recv on it and gets EAGAIN. */
static inline void spin(struct snap_conn *c)
{
	c->c.last_eagain_ns = NOW - 100 * MSEC;
	c->c.last_recv_try_ns = c->c.last_eagain_ns;
	c->c.recv_eagain = 123456;
}

static inline void set_progress(struct snap_conn *c, uint64_t t)
{
	c->c.last_send_ns = c->c.last_recv_ns = t;
}

/* Ranks 0..n-1 (pids 100+r), rank r sends to rank r+1; every connection last moved at progress. */
static inline void ring(struct world *w, int n, uint64_t progress)
{
	for (int r = 0; r < n; r++)
		add_proc(w, 100 + r, r, 'R', "");
	for (int r = 0; r < n; r++) {
		int i = add_pair(w, 100 + r, 100 + (r + 1) % n, progress);

		w->send_conn[r] = i;
		w->recv_conn[(r + 1) % n] = i + 1;
	}
}

/*
 * The classic stall: rank `stuck` went to sleep at STALL_START; each rank after it waits to
 * receive from the one before, spinning on EAGAIN. Ranks further along the ring stopped a little
 * later (their predecessor still sent for a moment).
 */
static inline struct world *stalled_ring(int n, int stuck, char state)
{
	struct world *w = world_new();

	ring(w, n, STALL_START);
	for (int k = 1; k < n; k++) {
		int r = (stuck + k) % n;

		for (int i = 0; i < w->s.nconns; i++)
			if (w->conns[i].pid == 100 + r)
				set_progress(&w->conns[i], STALL_START + (k - 1) * 20 * MSEC);
		spin(&w->conns[w->recv_conn[r]]);
	}
	w->procs[stuck].state = state;
	snprintf(w->procs[stuck].where, sizeof(w->procs[stuck].where), "clock_nanosleep");
	w->procs[stuck].cpu_busy_ns = 0;
	return w;
}

static inline bool has_waiter(const struct finding *f, int pid)
{
	for (int i = 0; i < f->nwaiters; i++)
		if (f->waiters[i].pid == pid)
			return true;
	return false;
}

static inline int run(struct world *w, struct finding *out)
{
	memset(out, 0, MAX_OUT * sizeof(*out));
	return diagnose(&w->s, &cfg, out, MAX_OUT);
}

/* ---- communicators' counters (comm->seqNumber[], the profiler plugin's latch) ---- */

#define MAX_COMMS 64
#define HASH	  0x9f3c1a2b3c4d5e6fULL
#define AR	  4 /* AllReduce */
#define BCAST	  0 /* Broadcast */

static struct snap_comm comm_store[MAX_COMMS];

/* Rank r's view of the communicator HASH: pids 100+r, counts as given, last moved at `moved`. */
static inline struct snap_comm *add_comm(struct world *w, int r, int nranks, uint64_t allreduce,
					 uint64_t moved)
{
	struct snap_comm *c;

	if (!w->s.comms) {
		memset(comm_store, 0, sizeof(comm_store));
		w->s.comms = comm_store;
	}
	assert_true(w->s.ncomms < MAX_COMMS);
	c = &comm_store[w->s.ncomms++];
	memset(c, 0, sizeof(*c));
	c->pid = 100 + r;
	c->hash = HASH;
	c->rank = r;
	c->nranks = nranks;
	c->seq[AR] = allreduce;
	c->seq_ok = true;
	c->changed_ns = moved;
	c->last_coll = -1;
	return c;
}

/* n ranks on NVLink: no sockets at all, only processes and their counters */
static inline struct world *nvlink_job(int n, uint64_t allreduce, uint64_t moved)
{
	struct world *w = world_new();

	for (int r = 0; r < n; r++) {
		add_proc(w, 100 + r, r, 'R', "");
		add_comm(w, r, n, allreduce, moved);
	}
	return w;
}

#endif /* NT_DIAGWORLD_H */
