// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "diagnose.h"
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

static struct world *world_new(void)
{
	struct world *w = calloc(1, sizeof(*w));

	assert_non_null(w);
	w->s.now_ns = NOW;
	w->s.procs = w->procs;
	w->s.conns = w->conns;
	w->next_port = 40000;
	return w;
}

static struct snap_proc *add_proc(struct world *w, int pid, int rank, char state, const char *where)
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

static struct snap_proc *proc(struct world *w, int pid)
{
	for (int i = 0; i < w->s.nprocs; i++)
		if (w->procs[i].pid == pid)
			return &w->procs[i];
	fail_msg("no pid %d", pid);
	return NULL;
}

static void set_exited(struct snap_proc *p, int status, uint64_t when)
{
	p->exited = true;
	p->state = 'X';
	p->exit_status = status;
	p->exit_ns = when;
}

static void tuple4(struct nt_tuple *t, const char *sa, int sp, const char *da, int dp)
{
	*t = test_tuple(AF_INET, sa, sp, da, dp);
}

/* An established connection owned by pid; progress is its last byte either way. */
static int add_conn(struct world *w, int pid, int peer_pid, const struct nt_tuple *t,
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
static int add_pair(struct world *w, int a, int b, uint64_t progress)
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
static void spin(struct snap_conn *c)
{
	c->c.last_eagain_ns = NOW - 100 * MSEC;
	c->c.last_recv_try_ns = c->c.last_eagain_ns;
	c->c.recv_eagain = 123456;
}

static void set_progress(struct snap_conn *c, uint64_t t)
{
	c->c.last_send_ns = c->c.last_recv_ns = t;
}

/* Ranks 0..n-1 (pids 100+r), rank r sends to rank r+1; every connection last moved at progress. */
static void ring(struct world *w, int n, uint64_t progress)
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
static struct world *stalled_ring(int n, int stuck, char state)
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

static bool has_waiter(const struct finding *f, int pid)
{
	for (int i = 0; i < f->nwaiters; i++)
		if (f->waiters[i] == pid)
			return true;
	return false;
}

static int run(struct world *w, struct finding *out)
{
	memset(out, 0, MAX_OUT * sizeof(*out));
	return diagnose(&w->s, &cfg, out, MAX_OUT);
}

static void test_kind_names_round_trip(void **state)
{
	(void)state;
	for (int k = 0; k < FINDING_KIND_MAX; k++) {
		const char *name = finding_kind_name(k);

		assert_non_null(name);
		assert_string_not_equal(name, "?");
		assert_int_equal(finding_kind_parse(name), k);
		for (int j = 0; j < k; j++)
			assert_string_not_equal(finding_kind_name(j), name);
	}
	assert_string_equal(finding_kind_name(FINDING_STALL), "stall");
	assert_string_equal(finding_kind_name(FINDING_PEER_DEAD), "peer_dead");
	assert_string_equal(finding_kind_name(FINDING_KIND_MAX), "?");
	assert_string_equal(finding_kind_name(-1), "?");
	assert_int_equal(finding_kind_parse("bogus"), -1);
	assert_int_equal(finding_kind_parse(""), -1);
	assert_int_equal(finding_kind_parse("STALL"), -1);
}

static void test_healthy_ring(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];

	(void)state;
	ring(w, 4, NOW - 20 * MSEC);
	/* busy: EAGAIN now and then, but bytes keep flowing */
	for (int r = 0; r < 4; r++)
		spin(&w->conns[w->recv_conn[r]]);
	assert_int_equal(run(w, out), 0);
	for (int r = 0; r < 4; r++)
		assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 100 + r), -1);
	free(w);
}

static void test_sleeping_rank_stalls_ring(void **state)
{
	struct world *w = stalled_ring(4, 1, 'S');
	struct finding out[MAX_OUT];
	const struct finding *f = &out[0];

	(void)state;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(f->kind, FINDING_STALL);
	assert_int_equal(f->pid, 101);
	assert_int_equal(f->rank, 1);
	/* the direct waiter: rank 2 receives from rank 1 */
	assert_int_equal(f->peer_pid, 102);
	assert_int_equal(f->peer_rank, 2);
	assert_int_equal(f->conn, w->recv_conn[2]);
	assert_int_equal(f->nwaiters, 3);
	assert_true(has_waiter(f, 100));
	assert_true(has_waiter(f, 102));
	assert_true(has_waiter(f, 103));
	assert_false(has_waiter(f, 101));
	assert_contains(f->summary, "rank 1");
	assert_contains(f->phase, "sleeping");
	assert_contains(f->phase, "clock_nanosleep");
	assert_string_equal(f->key, "stall:pid:101");
	assert_true(f->nevidence >= 2);
	assert_true(evidence_has(f, "state S"));
	assert_true(evidence_has(f, "rank 2 (pid 102)"));
	/* the waiting started when rank 1 stopped sending */
	assert_true(f->since_ns == STALL_START);
	free(w);
}

static void test_stopped_rank(void **state)
{
	struct world *w = stalled_ring(4, 1, 'T');
	struct finding out[MAX_OUT];

	(void)state;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_PEER_STOPPED);
	assert_int_equal(out[0].pid, 101);
	assert_int_equal(out[0].rank, 1);
	assert_int_equal(out[0].peer_rank, 2);
	assert_string_equal(out[0].key, "peer_stopped:pid:101");
	assert_contains(out[0].phase, "stopped");
	assert_contains(out[0].summary, "rank 1");
	/* a stopped process waits on nobody, even with an old EAGAIN spin of its own */
	spin(&w->conns[w->recv_conn[1]]);
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 101), -1);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].pid, 101);
	free(w);
}

static void test_exited_rank_with_waiters(void **state)
{
	struct world *w = stalled_ring(4, 1, 'S');
	struct finding out[MAX_OUT];

	(void)state;
	set_exited(proc(w, 101), 0, STALL_START);
	for (int i = 0; i < w->s.nconns; i++) {
		if (w->conns[i].pid == 101) {
			w->conns[i].closed = true;
			w->conns[i].closed_ns = STALL_START;
		}
	}
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_PEER_DEAD);
	assert_int_equal(out[0].pid, 101);
	assert_int_equal(out[0].rank, 1);
	assert_int_equal(out[0].peer_rank, 2);
	assert_string_equal(out[0].key, "peer_dead:pid:101");
	assert_contains(out[0].phase, "exited with status 0");
	assert_true(evidence_has(&out[0], "pid 101 exited with status 0"));

	/* killed instead: the stall and the abnormal exit are one finding */
	proc(w, 101)->exit_status = SIGKILL;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_PEER_DEAD);
	assert_int_equal(out[0].pid, 101);
	assert_contains(out[0].phase, "killed by signal 9");
	free(w);
}

static void test_abnormal_exit_before_anyone_waits(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];

	(void)state;
	/* the others still make progress: nobody has noticed yet */
	ring(w, 4, NOW - 500 * MSEC);
	set_exited(proc(w, 101), 3 << 8, NOW - 2 * SEC);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_PEER_DEAD);
	assert_int_equal(out[0].pid, 101);
	assert_int_equal(out[0].rank, 1);
	assert_true(out[0].peer_pid == 100 || out[0].peer_pid == 102);
	assert_int_equal(out[0].peer_rank, out[0].peer_pid - 100);
	assert_true(out[0].since_ns == NOW - 2 * SEC);
	assert_string_equal(out[0].key, "peer_dead:pid:101");
	assert_contains(out[0].summary, "rank 1");
	assert_contains(out[0].summary, "exited with status 3");
	assert_true(out[0].nevidence >= 2);

	/* the launcher then kills the rest: still the one finding about rank 1 */
	set_exited(proc(w, 100), SIGTERM, NOW - 1500 * MSEC);
	set_exited(proc(w, 102), SIGTERM, NOW - 1400 * MSEC);
	set_exited(proc(w, 103), SIGTERM, NOW - 1300 * MSEC);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_PEER_DEAD);
	assert_int_equal(out[0].pid, 101);
	assert_contains(out[0].summary, "rank 1");
	free(w);
}

static void test_clean_exit_nobody_waiting(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];

	(void)state;
	ring(w, 4, NOW - 500 * MSEC);
	set_exited(proc(w, 101), 0, NOW - 2 * SEC);
	assert_int_equal(run(w, out), 0);
	free(w);

	/* teardown: killed after every peer had already gone is no finding either */
	w = world_new();
	ring(w, 3, NOW - 500 * MSEC);
	set_exited(proc(w, 100), 0, NOW - 3 * SEC);
	set_exited(proc(w, 102), 0, NOW - 3 * SEC);
	set_exited(proc(w, 101), SIGTERM, NOW - 2 * SEC);
	assert_int_equal(run(w, out), 0);
	free(w);
}

static void test_slow_but_progressing(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];

	(void)state;
	ring(w, 4, NOW - SEC);
	w->procs[1].state = 'S';
	for (int r = 0; r < 4; r++)
		if (r != 1)
			spin(&w->conns[w->recv_conn[r]]);
	assert_int_equal(run(w, out), 0);
	for (int r = 0; r < 4; r++)
		assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 100 + r), -1);
	free(w);
}

static void test_idle_is_not_waiting(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];

	(void)state;
	ring(w, 4, NOW - 60 * SEC);
	for (int r = 0; r < 4; r++) {
		w->procs[r].state = 'S';
		snprintf(w->procs[r].where, sizeof(w->procs[r].where), "epoll_wait");
	}
	assert_int_equal(run(w, out), 0);

	/* an EAGAIN long ago, outside the active window, is not trying now */
	w->conns[w->recv_conn[2]].c.last_eagain_ns = NOW - 30 * SEC;
	/* sitting in poll is not waiting on one connection */
	w->conns[w->recv_conn[3]].blocked = SNAP_BLOCK_POLL;
	w->conns[w->recv_conn[3]].blocked_tid = 103;
	w->conns[w->recv_conn[3]].blocked_since_ns = NOW - 60 * SEC;
	assert_int_equal(run(w, out), 0);
	free(w);
}

static void test_blocked_in_recv(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];

	(void)state;
	ring(w, 4, STALL_START);
	w->procs[1].state = 'S';
	for (int r = 0; r < 4; r++) {
		struct snap_conn *c = &w->conns[w->recv_conn[r]];

		if (r == 1)
			continue;
		w->procs[r].state = 'S';
		snprintf(w->procs[r].where, sizeof(w->procs[r].where), "recvfrom");
		c->blocked = SNAP_BLOCK_RECV;
		c->blocked_tid = 1000 + r;
		c->blocked_since_ns = STALL_START;
	}
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 102), w->recv_conn[2]);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_STALL);
	assert_int_equal(out[0].pid, 101);
	assert_int_equal(out[0].peer_pid, 102);
	assert_int_equal(out[0].nwaiters, 3);
	assert_true(evidence_has(&out[0], "thread 1002 blocked in receive"));

	/*
	 * blocked again just now is still a wait (sampling sees a thread that wakes and blocks
	 * again as freshly blocked); bytes a moment ago are not
	 */
	for (int r = 0; r < 4; r++)
		w->conns[w->recv_conn[r]].blocked_since_ns = NOW - SEC;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].pid, 101);
	for (int r = 0; r < 4; r++)
		set_progress(&w->conns[w->recv_conn[r]], NOW - SEC);
	assert_int_equal(run(w, out), 0);
	free(w);
}

static void test_connect_unanswered(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];
	struct nt_tuple t;
	struct snap_conn *c;

	(void)state;
	add_proc(w, 200, 0, 'S', "connect");
	tuple4(&t, "10.0.0.1", 45000, "10.0.0.2", 29500);
	c = &w->conns[add_conn(w, 200, -1, &t, 0)];
	c->c.state = TCP_SYN_SENT;
	c->c.first_ns = NOW - 10 * SEC;
	c->c.state_ns = NOW - 10 * SEC;
	c->c.syn_retrans = 3;
	c->c.flags = NT_CONN_ACTIVE;
	c->c.bytes_sent = c->c.bytes_recv = 0;
	c->blocked = SNAP_BLOCK_CONNECT;
	c->blocked_tid = 200;
	c->blocked_since_ns = NOW - 10 * SEC;

	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_CONN_ERROR);
	assert_int_equal(out[0].pid, 0);
	assert_int_equal(out[0].rank, -1);
	assert_int_equal(out[0].peer_pid, 200);
	assert_int_equal(out[0].peer_rank, 0);
	assert_int_equal(out[0].conn, 0);
	assert_string_equal(out[0].key, "conn_error:addr:10.0.0.2:29500");
	assert_contains(out[0].summary, "10.0.0.2:29500");
	assert_contains(out[0].phase, "connect unanswered");
	assert_true(evidence_has(&out[0], "3 SYN retransmits"));
	assert_true(out[0].since_ns == NOW - 10 * SEC);

	/* inside NCCL transport setup: the ring setup is what blocks, and on which rank */
	w->procs[0].nccl_setup = SNAP_SETUP_TRANSPORT;
	w->procs[0].nccl_setup_since_ns = NOW - 11 * SEC;
	snprintf(w->procs[0].nccl_phase, sizeof(w->procs[0].nccl_phase), "proxy connect");
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_RING_SETUP_BLOCKED);
	assert_int_equal(out[0].rank, 0);
	assert_int_equal(out[0].peer_rank, -1);
	assert_int_equal(out[0].conn, 0);
	assert_contains(out[0].phase, "transport setup (proxy connect), connecting");
	assert_contains(out[0].summary, "its connect to 10.0.0.2:29500 is not answered (3 SYN");
	assert_int_equal(out[0].nhyp >= 1, 1);
	assert_contains(out[0].hypotheses[0], "packets to 10.0.0.2:29500 are dropped");
	w->procs[0].nccl_setup = SNAP_SETUP_INIT;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_INIT_BLOCKED);
	w->procs[0].nccl_setup = SNAP_SETUP_NONE;

	/* a connect that has not taken long yet */
	c->c.state_ns = NOW - 2 * SEC;
	c->blocked_since_ns = NOW - 2 * SEC;
	assert_int_equal(run(w, out), 0);
	free(w);
}

static void test_untraced_peer(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];
	struct nt_tuple t;
	int ci;

	(void)state;
	add_proc(w, 300, 5, 'R', "");
	tuple4(&t, "10.0.0.1", 51000, "10.0.0.9", 40000);
	ci = add_conn(w, 300, -1, &t, STALL_START);
	spin(&w->conns[ci]);

	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_STALL);
	assert_int_equal(out[0].pid, 0);
	assert_int_equal(out[0].peer_pid, 300);
	assert_int_equal(out[0].peer_rank, 5);
	assert_int_equal(out[0].conn, ci);
	assert_string_equal(out[0].key, "stall:addr:10.0.0.9:40000");
	assert_contains(out[0].summary, "10.0.0.9:40000");
	assert_contains(out[0].summary, "rank 5");
	assert_contains(out[0].phase, "untraced");
	assert_true(out[0].nevidence >= 1);

	/* a peer pid that is not in the snapshot is as good as untraced */
	w->conns[ci].peer_pid = 999;
	assert_int_equal(run(w, out), 1);
	assert_string_equal(out[0].key, "stall:addr:10.0.0.9:40000");
	free(w);
}

/* NCCL RAS keep-alive sockets sit idle between keep-alives: never a stall, however old */
static void test_ras_socket_ignored(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];
	int ci;

	(void)state;
	add_proc(w, 300, 0, 'S', "epoll_wait");
	add_proc(w, 301, 1, 'S', "epoll_wait");
	ci = add_pair(w, 300, 301, STALL_START);
	spin(&w->conns[ci]);
	w->conns[ci].ras = true;
	w->conns[ci + 1].ras = true;
	assert_int_equal(run(w, out), 0);
	/* the same connection, not RAS: rank 0 waits on rank 1 */
	w->conns[ci].ras = false;
	w->conns[ci + 1].ras = false;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].rank, 1);
	free(w);
}

/* a process spinning on a socket to itself (NCCL's proxy) waits on nobody we can name */
static void test_self_connection_is_no_wait(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];
	int ci;

	(void)state;
	add_proc(w, 300, 0, 'R', "");
	ci = add_pair(w, 300, 300, STALL_START);
	spin(&w->conns[ci]);
	spin(&w->conns[ci + 1]);
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 300), -1);
	assert_int_equal(run(w, out), 0);
	free(w);
}

/* ranks 0..n-1 (pids 100+r) of one job, none connected yet */
static void job(struct world *w, int n)
{
	for (int r = 0; r < n; r++) {
		struct snap_proc *p = add_proc(w, 100 + r, r, 'S', "epoll_wait");

		p->world_size = n;
		p->nccl = true;
	}
}

static void in_setup(struct snap_proc *p, int cls, uint64_t since, const char *inner)
{
	p->nccl_setup = cls;
	p->nccl_setup_since_ns = since;
	p->nccl_since_ns = since;
	snprintf(p->nccl_phase, sizeof(p->nccl_phase), "%s", inner);
}

static void test_ring_setup_blocked(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];

	(void)state;
	job(w, 3);
	in_setup(proc(w, 100), SNAP_SETUP_TRANSPORT, STALL_START, "proxy call");
	in_setup(proc(w, 102), SNAP_SETUP_TRANSPORT, STALL_START + SEC, "socket accept");
	snprintf(proc(w, 101)->where, sizeof(proc(w, 101)->where), "clock_nanosleep");
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_RING_SETUP_BLOCKED);
	assert_int_equal(out[0].pid, 101);
	assert_int_equal(out[0].rank, 1);
	assert_int_equal(out[0].peer_pid, 100); /* in setup the longest */
	assert_int_equal(out[0].nwaiters, 2);
	assert_true(out[0].since_ns == STALL_START);
	assert_contains(out[0].summary, "transport setup");
	assert_contains(out[0].phase, "outside NCCL");
	assert_true(evidence_has(&out[0], "now in proxy call"));
	assert_string_equal(out[0].key, "ring_setup_blocked:pid:101");

	/* stopped or exited instead */
	proc(w, 101)->state = 'T';
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_PEER_STOPPED);
	proc(w, 101)->state = 'S';
	set_exited(proc(w, 101), 0, STALL_START);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_PEER_DEAD);

	/* not long enough yet */
	proc(w, 101)->exited = false;
	proc(w, 101)->state = 'S';
	in_setup(proc(w, 100), SNAP_SETUP_TRANSPORT, NOW - SEC, "proxy call");
	in_setup(proc(w, 102), SNAP_SETUP_TRANSPORT, NOW - SEC, "proxy call");
	assert_int_equal(run(w, out), 0);
	free(w);
}

static void test_init_blocked_and_slow_init(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];

	(void)state;
	job(w, 3);
	for (int r = 0; r < 3; r++)
		in_setup(proc(w, 100 + r), SNAP_SETUP_INIT, STALL_START, "socket accept");
	/* every rank inside init, however long: slow (a big cluster), not blocked by a rank */
	assert_int_equal(run(w, out), 0);
	/* one rank elsewhere inside NCCL: perhaps slow too, no finding */
	in_setup(proc(w, 101), SNAP_SETUP_NONE, 0, "topology");
	assert_int_equal(run(w, out), 0);
	/* outside NCCL: that is the one */
	proc(w, 101)->nccl_phase[0] = '\0';
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_INIT_BLOCKED);
	assert_int_equal(out[0].rank, 1);
	assert_contains(out[0].summary, "communicator init");
	free(w);
}

/* a rank killed while it waited in NCCL setup is a consequence, not a cause */
static void test_killed_while_in_setup(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];

	(void)state;
	ring(w, 3, NOW - SEC);
	set_exited(proc(w, 102), SIGKILL, NOW - SEC);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_PEER_DEAD);
	assert_int_equal(out[0].pid, 102);
	proc(w, 102)->nccl_setup = SNAP_SETUP_INIT;
	proc(w, 102)->nccl_setup_since_ns = STALL_START;
	assert_int_equal(run(w, out), 0);
	free(w);
}

static void test_rank_never_started(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];

	(void)state;
	job(w, 3);
	/* rank 2 never appeared: the job has pids 100 and 101 only */
	w->s.nprocs = 2;
	for (int r = 0; r < 2; r++)
		in_setup(proc(w, 100 + r), SNAP_SETUP_INIT, STALL_START, "socket accept");
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_PEER_DEAD);
	assert_int_equal(out[0].pid, 0);
	assert_int_equal(out[0].rank, 2);
	assert_string_equal(out[0].phase, "never started");
	assert_string_equal(out[0].key, "peer_dead:rank:2");
	assert_true(evidence_has(&out[0], "RANK=2"));
	free(w);
}

static void test_chain_ends_at_untraced_address(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];
	struct nt_tuple t;
	int x;

	(void)state;
	/*
	 * Ranks 0..3 here, the rest of the ring on another host: rank 0 receives from an
	 * untraced address, rank r+1 from rank r. Rank 3 is listed first and its connection is the
	 * oldest, which must not make it the culprit's direct waiter.
	 */
	add_proc(w, 103, 3, 'R', "");
	add_proc(w, 102, 2, 'R', "");
	add_proc(w, 101, 1, 'R', "");
	add_proc(w, 100, 0, 'R', "");
	tuple4(&t, "10.0.0.1", 51000, "10.0.0.9", 40000);
	x = add_conn(w, 100, -1, &t, STALL_START);
	spin(&w->conns[x]);
	for (int r = 0; r < 3; r++) {
		int i = add_pair(w, 100 + r, 101 + r, STALL_START);

		set_progress(&w->conns[i + 1], STALL_START - (r + 1) * SEC);
		spin(&w->conns[i + 1]);
	}
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].pid, 0);
	assert_string_equal(out[0].key, "stall:addr:10.0.0.9:40000");
	assert_int_equal(out[0].peer_pid, 100);
	assert_int_equal(out[0].conn, x);
	assert_int_equal(out[0].nwaiters, 4);
	for (int r = 0; r < 4; r++)
		assert_true(has_waiter(&out[0], 100 + r));
	free(w);
}

static void test_two_waiters_on_one_address(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];
	struct nt_tuple t;
	int a, b;

	(void)state;
	/* two ranks wait on the same untraced store server, each on its own connection */
	add_proc(w, 100, 0, 'R', "");
	add_proc(w, 101, 1, 'R', "");
	tuple4(&t, "10.0.0.1", 51000, "10.0.0.9", 29500);
	a = add_conn(w, 100, -1, &t, NOW - 8 * SEC);
	tuple4(&t, "10.0.0.1", 51001, "10.0.0.9", 29500);
	b = add_conn(w, 101, -1, &t, NOW - 12 * SEC);
	spin(&w->conns[a]);
	spin(&w->conns[b]);
	assert_int_equal(run(w, out), 1);
	assert_string_equal(out[0].key, "stall:addr:10.0.0.9:29500");
	assert_int_equal(out[0].nwaiters, 2);
	/* the longest waiter, and since when */
	assert_int_equal(out[0].peer_pid, 101);
	assert_int_equal(out[0].conn, b);
	assert_true(out[0].since_ns == NOW - 12 * SEC);
	free(w);
}

static void test_longest_direct_waiter(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];
	int a, b;

	(void)state;
	/* rank 1 sleeps; ranks 0 and 2 both wait on it directly, rank 0 for longer */
	add_proc(w, 100, 0, 'R', "");
	add_proc(w, 101, 1, 'S', "futex");
	add_proc(w, 102, 2, 'R', "");
	a = add_pair(w, 101, 100, NOW - 20 * SEC) + 1;
	b = add_pair(w, 101, 102, NOW - 8 * SEC) + 1;
	spin(&w->conns[a]);
	spin(&w->conns[b]);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].pid, 101);
	assert_int_equal(out[0].nwaiters, 2);
	assert_int_equal(out[0].peer_pid, 100);
	assert_int_equal(out[0].peer_rank, 0);
	assert_int_equal(out[0].conn, a);
	/* since: the oldest last progress, that of the longest waiter */
	assert_true(out[0].since_ns == NOW - 20 * SEC);
	assert_contains(out[0].summary, "20.0s");
	free(w);
}

static void test_wait_cycle(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];

	(void)state;
	/* everyone spins on a receive from its predecessor: nobody is the obvious culprit */
	ring(w, 4, STALL_START);
	for (int r = 0; r < 4; r++)
		spin(&w->conns[w->recv_conn[r]]);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].nwaiters, 4);
	assert_true(out[0].pid >= 100 && out[0].pid <= 103);
	assert_true(out[0].summary[0] != '\0');

	/* a process outside the cycle waiting on one of its members joins the same finding */
	add_proc(w, 200, 4, 'R', "");
	spin(&w->conns[add_pair(w, 102, 200, STALL_START) + 1]);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].nwaiters, 5);
	assert_true(has_waiter(&out[0], 200));
	free(w);

	/* two processes waiting on each other */
	w = world_new();
	ring(w, 2, STALL_START);
	spin(&w->conns[w->recv_conn[0]]);
	spin(&w->conns[w->recv_conn[1]]);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].nwaiters, 2);
	free(w);
}

static void test_long_ring(void **state)
{
	struct world *w = stalled_ring(100, 0, 'S');
	struct finding out[MAX_OUT];

	(void)state;
	/* a chain longer than any fixed bound still ends at the sleeping rank */
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_STALL);
	assert_int_equal(out[0].pid, 100);
	assert_int_equal(out[0].peer_pid, 101);
	assert_int_equal(out[0].nwaiters, DIAG_MAX_WAITERS);
	free(w);
}

static void test_waiting_conn_oldest_progress(void **state)
{
	struct world *w = world_new();
	struct nt_tuple t;
	int a, b, c, l;

	(void)state;
	add_proc(w, 100, 0, 'R', "");
	tuple4(&t, "10.0.0.1", 50001, "10.0.0.2", 1);
	a = add_conn(w, 100, -1, &t, NOW - 8 * SEC);
	tuple4(&t, "10.0.0.1", 50002, "10.0.0.2", 2);
	b = add_conn(w, 100, -1, &t, NOW - 20 * SEC);
	/* older still, but not being tried */
	tuple4(&t, "10.0.0.1", 50003, "10.0.0.2", 3);
	c = add_conn(w, 100, -1, &t, NOW - 30 * SEC);
	/* a listener is not a data connection, however old */
	tuple4(&t, "0.0.0.0", 29500, "0.0.0.0", 0);
	l = add_conn(w, 100, -1, &t, NOW - 40 * SEC);
	w->conns[l].c.flags = NT_CONN_LISTENER;
	w->conns[l].c.state = 10;
	spin(&w->conns[l]);
	spin(&w->conns[a]);
	spin(&w->conns[b]);
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 100), b);

	/* a closed connection is not tried */
	w->conns[b].closed = true;
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 100), a);
	/*
	 * recent progress on another connection (PyTorch's TCPStore, RAS keep-alives) does not
	 * hide the wait; progress on the connection itself ends it
	 */
	set_progress(&w->conns[c], NOW - SEC);
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 100), a);
	set_progress(&w->conns[a], NOW - SEC);
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 100), -1);
	set_progress(&w->conns[a], NOW - 8 * SEC);
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 100), a);

	/* processes that cannot be waiting */
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 12345), -1);
	w->procs[0].state = 'Z';
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 100), -1);
	w->procs[0].state = 't';
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 100), -1);
	w->procs[0].state = 'R';
	set_exited(&w->procs[0], 0, NOW - SEC);
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 100), -1);
	free(w);
}

static void test_keys_stable(void **state)
{
	struct world *w = stalled_ring(4, 1, 'S');
	struct finding a[MAX_OUT], b[MAX_OUT];

	(void)state;
	assert_int_equal(run(w, a), 1);
	/* a second later, the same condition */
	w->s.now_ns += SEC;
	for (int i = 0; i < w->s.nconns; i++)
		if (w->conns[i].c.last_eagain_ns)
			w->conns[i].c.last_eagain_ns += SEC;
	assert_int_equal(run(w, b), 1);
	assert_string_equal(a[0].key, b[0].key);
	assert_int_equal(a[0].kind, b[0].kind);
	assert_int_equal(a[0].pid, b[0].pid);
	assert_true(a[0].since_ns == b[0].since_ns);
	free(w);

	/* another culprit, another key */
	w = stalled_ring(4, 2, 'S');
	assert_int_equal(run(w, b), 1);
	assert_string_not_equal(a[0].key, b[0].key);
	assert_string_equal(b[0].key, "stall:pid:102");
	free(w);
}

static void test_max_respected(void **state)
{
	struct world *w = world_new();
	struct finding out[3];
	int a, b;

	(void)state;
	/* two independent stalls */
	add_proc(w, 100, 0, 'S', "");
	add_proc(w, 101, 1, 'R', "");
	add_proc(w, 200, 2, 'S', "");
	add_proc(w, 201, 3, 'R', "");
	a = add_pair(w, 100, 101, STALL_START) + 1;
	b = add_pair(w, 200, 201, STALL_START) + 1;
	spin(&w->conns[a]);
	spin(&w->conns[b]);
	/* and an abnormal exit */
	add_proc(w, 300, 4, 'X', "");
	add_proc(w, 301, 5, 'R', "");
	add_pair(w, 300, 301, NOW - 100 * MSEC);
	set_exited(proc(w, 300), SIGSEGV, NOW - 2 * SEC);

	memset(out, 0, sizeof(out));
	assert_int_equal(diagnose(&w->s, &cfg, out, 3), 3);
	memset(out, 0x5a, sizeof(out));
	assert_int_equal(diagnose(&w->s, &cfg, out, 1), 1);
	assert_int_equal(out[0].pid, 100);
	/* nothing written past max */
	for (size_t i = 0; i < 2 * sizeof(out[0]); i++)
		assert_int_equal(((unsigned char *)&out[1])[i], 0x5a);
	assert_int_equal(diagnose(&w->s, &cfg, out, 0), 0);
	free(w);
}

static void test_empty_snapshot(void **state)
{
	struct snapshot s = {.now_ns = NOW};
	struct finding out[1];

	(void)state;
	assert_int_equal(diagnose(&s, &cfg, out, 1), 0);
	assert_int_equal(diagnose_waiting_conn(&s, &cfg, 1), -1);
}

/* ---- collective counters (comm->seqNumber[]): NVLink jobs, mismatches, stragglers ---- */

#define MAX_COMMS 64
#define HASH	  0x9f3c1a2b3c4d5e6fULL
#define AR	  4 /* AllReduce */
#define BCAST	  0 /* Broadcast */

static struct snap_comm comm_store[MAX_COMMS];

/* Rank r's view of the communicator HASH: pids 100+r, counts as given, last moved at `moved`. */
static struct snap_comm *add_comm(struct world *w, int r, int nranks, uint64_t allreduce,
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
static struct world *nvlink_job(int n, uint64_t allreduce, uint64_t moved)
{
	struct world *w = world_new();

	for (int r = 0; r < n; r++) {
		add_proc(w, 100 + r, r, 'R', "");
		add_comm(w, r, n, allreduce, moved);
	}
	return w;
}

static void test_coll_behind_is_culprit(void **state)
{
	struct world *w = nvlink_job(4, 1000, STALL_START);
	struct finding out[MAX_OUT];
	const struct finding *f = &out[0];

	(void)state;
	/* rank 2 never launched AllReduce #1001: it sleeps in the data loader */
	comm_store[2].seq[AR] = 999;
	comm_store[2].changed_ns = STALL_START - SEC;
	w->procs[2].state = 'S';
	snprintf(w->procs[2].where, sizeof(w->procs[2].where), "futex");
	assert_int_equal(run(w, out), 1);
	assert_int_equal(f->kind, FINDING_STALL);
	assert_int_equal(f->rank, 2);
	assert_int_equal(f->pid, 102);
	assert_int_equal(f->comm_hash, HASH);
	assert_int_equal(f->nwaiters, 3);
	assert_true(has_waiter(f, 100) && has_waiter(f, 101) && has_waiter(f, 103));
	assert_int_equal(f->since_ns, STALL_START);
	assert_contains(f->summary, "rank 2 has not launched AllReduce #1000");
	assert_contains(f->summary, "ranks 0,1,3 wait");
	assert_true(evidence_has(f, "rank 2 (pid 102) launched AllReduce 999"));
	assert_true(evidence_has(f, "rank 0 (pid 100) launched AllReduce 1000"));
	free(w);
}

static void test_coll_behind_dead_or_stopped(void **state)
{
	struct finding out[MAX_OUT];

	(void)state;
	for (int k = 0; k < 2; k++) {
		struct world *w = nvlink_job(2, 50, STALL_START);

		comm_store[1].seq[AR] = 49;
		if (k == 0)
			set_exited(&w->procs[1], SIGSEGV, STALL_START);
		else
			w->procs[1].state = 'T';
		assert_int_equal(run(w, out), 1);
		assert_int_equal(out[0].kind, k == 0 ? FINDING_PEER_DEAD : FINDING_PEER_STOPPED);
		assert_int_equal(out[0].rank, 1);
		assert_int_equal(out[0].peer_rank, 0);
		free(w);
	}
}

static void test_coll_progressing_no_finding(void **state)
{
	struct world *w = nvlink_job(4, 1000, NOW - 100 * MSEC);
	struct finding out[MAX_OUT];

	(void)state;
	/* ranks apart, as at any instant of a healthy job: they moved 100 ms ago */
	comm_store[1].seq[AR] = 999;
	comm_store[3].seq[AR] = 1001;
	assert_int_equal(run(w, out), 0);
	/* all equal and idle for long (evaluation, checkpointing): nobody waits on anybody */
	w = (free(w), nvlink_job(4, 1000, STALL_START));
	assert_int_equal(run(w, out), 0);
	free(w);
}

static void test_coll_mismatch_functions(void **state)
{
	struct world *w = nvlink_job(3, 4, STALL_START);
	struct finding out[MAX_OUT];
	const struct finding *f = &out[0];

	(void)state;
	/* rank 1 broadcasts where ranks 0 and 2 all-reduce */
	comm_store[1].seq[AR] = 3;
	comm_store[1].seq[BCAST] = 1;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(f->kind, FINDING_COLLECTIVE_MISMATCH);
	assert_int_equal(f->rank, 1);
	assert_true(has_waiter(f, 100) && has_waiter(f, 102));
	assert_contains(f->phase, "Broadcast #1");
	assert_contains(f->summary, "rank 1 in Broadcast #1, ranks 0,2 in AllReduce #4");
	/* two ranks: the odd one is in the function launched least over the communicator */
	w = (free(w), nvlink_job(2, 4, STALL_START));
	comm_store[0].seq[AR] = 3;
	comm_store[0].seq[BCAST] = 1;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(f->kind, FINDING_COLLECTIVE_MISMATCH);
	assert_int_equal(f->rank, 0);
	free(w);
}

static void test_coll_mismatch_arguments(void **state)
{
	struct world *w = nvlink_job(3, 7, STALL_START);
	struct finding out[MAX_OUT];

	(void)state;
	for (int r = 0; r < 3; r++) {
		comm_store[r].last_coll = AR;
		comm_store[r].last_count = r == 2 ? 32768 : 65536;
		comm_store[r].last_dtype = 7;
	}
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_COLLECTIVE_MISMATCH);
	assert_int_equal(out[0].rank, 2);
	assert_contains(out[0].summary, "rank 2 in AllReduce #7 (count 32768 float32)");
	assert_contains(out[0].summary, "ranks 0,1 in AllReduce #7 (count 65536 float32)");
	/* the same arguments everywhere: not a mismatch (a transport matter, if anything) */
	comm_store[2].last_count = 65536;
	assert_int_equal(run(w, out), 0);
	/* arguments unknown (no --collectives) on one rank: no guess */
	comm_store[2].last_count = 1;
	comm_store[1].last_coll = -1;
	assert_int_equal(run(w, out), 0);
	free(w);
}

/* Refused connects NCCL retries silently while the others wait in the same setup. */
static void test_setup_connect_retries(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];

	(void)state;
	for (int r = 0; r < 3; r++) {
		struct snap_proc *p = add_proc(w, 100 + r, r, 'S', "futex");

		p->nccl_setup = SNAP_SETUP_TRANSPORT;
		p->nccl_setup_since_ns = NOW - 8 * SEC;
		snprintf(p->nccl_phase, sizeof(p->nccl_phase), "proxy call");
	}
	w->procs[1].nccl_retries = 9;
	w->procs[1].nccl_last_retry_ns = NOW - 300 * MSEC;
	w->procs[1].nccl_retry_addr = "10.0.0.9:43517";
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_RING_SETUP_BLOCKED);
	assert_int_equal(out[0].rank, 1);
	assert_int_equal(out[0].nwaiters, 2);
	assert_int_equal(out[0].since_ns, NOW - 8 * SEC);
	assert_contains(out[0].summary, "its connects to 10.0.0.9:43517 fail and NCCL retries them "
					"silently (9 so far); waiting for it: ranks 0,2");
	assert_contains(out[0].hypotheses[0], "had 9 connects fail");
	/* retries from before this setup say nothing about it */
	w->procs[1].nccl_last_retry_ns = NOW - 9 * SEC;
	assert_int_equal(run(w, out), 0);
	/* in setup for less than the threshold: not yet */
	w->procs[1].nccl_last_retry_ns = NOW - 300 * MSEC;
	for (int r = 0; r < 3; r++)
		w->procs[r].nccl_setup_since_ns = NOW - 2 * SEC;
	assert_int_equal(run(w, out), 0);
	free(w);
}

/* A rank that destroyed the communicator keeps its final counts: it will launch no more. */
static void test_coll_destroyed_member(void **state)
{
	struct world *w = nvlink_job(2, 20, STALL_START);
	struct finding out[MAX_OUT];

	(void)state;
	/* real NCCL over NVLink: a Broadcast paired with an AllReduce, the last AllReduce never */
	comm_store[1].seq[AR] = 19;
	comm_store[1].seq[BCAST] = 1;
	comm_store[1].destroyed = true;
	w->procs[1].state = 'S';
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_COLLECTIVE_MISMATCH);
	assert_int_equal(out[0].rank, 1);
	assert_true(evidence_has(&out[0], "rank 1 (pid 101) destroyed comm"));
	/* behind and destroyed */
	comm_store[1].seq[BCAST] = 0;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_STALL);
	assert_int_equal(out[0].rank, 1);
	assert_contains(out[0].phase, "communicator destroyed");
	/* every rank destroyed it, whatever the counts: the job is done with it */
	comm_store[0].destroyed = true;
	assert_int_equal(run(w, out), 0);
	free(w);
}

/* The counters outrank the sockets: a rank inside the collective is never the culprit. */
static void test_coll_overrides_socket_culprit(void **state)
{
	struct world *w = stalled_ring(3, 2, 'S');
	struct finding out[MAX_OUT];
	int n;

	(void)state;
	/*
	 * rank 2 sleeps in futex (cudaStreamSynchronize) inside the collective; rank 1 never
	 * launched it: on the sockets rank 2 looks like the culprit, the counters say rank 1
	 */
	for (int r = 0; r < 3; r++)
		add_comm(w, r, 3, r == 1 ? 9 : 10, STALL_START);
	n = run(w, out);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].rank, 1);
	assert_int_equal(out[0].kind, FINDING_STALL);
	free(w);
	/* both agree: one finding, with the socket evidence and the counters */
	w = stalled_ring(3, 1, 'S');
	for (int r = 0; r < 3; r++)
		add_comm(w, r, 3, r == 1 ? 9 : 10, STALL_START);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].rank, 1);
	assert_true(evidence_has(&out[0], "EAGAIN"));
	assert_true(evidence_has(&out[0], "launched AllReduce 9"));
	free(w);
}

static void test_straggler(void **state)
{
	struct world *w = nvlink_job(4, 500, NOW - 50 * MSEC);
	struct finding out[MAX_OUT];
	const struct diag_config scfg = {
		.stall_threshold_ns = 5 * SEC, .active_window_ns = SEC, .straggler_samples = 16};

	(void)state;
	for (int r = 0; r < 4; r++) {
		comm_store[r].nsamples = 64;
		comm_store[r].differ_bits = 0xffffffffULL;
		comm_store[r].behind_bits = r == 3 ? 0xf0f0f0f0ULL : (r == 1 ? 0x3ULL : 0);
	}
	comm_store[3].behind_since_ns = NOW - 8 * SEC;
	memset(out, 0, sizeof(out));
	assert_int_equal(diagnose(&w->s, &scfg, out, MAX_OUT), 1);
	assert_int_equal(out[0].kind, FINDING_STRAGGLER);
	assert_int_equal(out[0].rank, 3);
	assert_int_equal(out[0].nwaiters, 3);
	assert_int_equal(out[0].since_ns, NOW - 8 * SEC);
	assert_contains(out[0].summary, "alone behind in 16 of the last 64 samples");
	/* below the bar, or off */
	comm_store[3].behind_bits = 0xf0ULL;
	assert_int_equal(diagnose(&w->s, &scfg, out, MAX_OUT), 0);
	comm_store[3].behind_bits = 0xf0f0f0f0ULL;
	assert_int_equal(run(w, out), 0); /* cfg: straggler_samples 0 */
	/* ranks taking turns being last: no straggler */
	comm_store[1].behind_bits = 0x0f0f0f00ULL;
	assert_int_equal(diagnose(&w->s, &scfg, out, MAX_OUT), 0);
	free(w);
}

/* ---- quiet mode: per-call TCP hooks off while every communicator moves ---- */

static const struct diag_config qcfg = {
	.stall_threshold_ns = 5 * SEC,
	.active_window_ns = SEC,
	.quiet_hold_ns = 2 * SEC,
	.quiet_recent_ns = SEC / 2,
};

/* step the world to t with every communicator moved just now; returns diagnose_quiet's say */
static bool quiet_at(struct world *w, struct quiet *q, uint64_t t, int open)
{
	w->s.now_ns = t;
	for (int i = 0; i < w->s.ncomms; i++)
		if (comm_store[i].changed_ns < t - 200 * MSEC)
			comm_store[i].changed_ns = t - 100 * MSEC;
	return diagnose_quiet(&w->s, &qcfg, open, q);
}

static void test_quiet_after_hold_and_back_on_stop(void **state)
{
	struct world *w = nvlink_job(3, 1000, NOW - 3 * SEC);
	struct quiet q = {0};

	(void)state;
	assert_false(quiet_at(w, &q, NOW - 3 * SEC, 0)); /* eligible from here */
	assert_false(quiet_at(w, &q, NOW - 1200 * MSEC, 0));
	assert_true(quiet_at(w, &q, NOW - 900 * MSEC, 0)); /* 2.1 s of moving */
	assert_true(quiet_at(w, &q, NOW, 0));
	/* rank 1 stops launching: 0.4 s is still within the window, 0.6 s is not */
	comm_store[1].changed_ns = NOW;
	comm_store[0].changed_ns = comm_store[2].changed_ns = NOW + 300 * MSEC;
	w->s.now_ns = NOW + 400 * MSEC;
	assert_true(diagnose_quiet(&w->s, &qcfg, 0, &q));
	w->s.now_ns = NOW + 600 * MSEC;
	assert_false(diagnose_quiet(&w->s, &qcfg, 0, &q));
	assert_contains(q.why_on, "rank 1's collectives stopped");
	/* and the hold starts over */
	assert_false(quiet_at(w, &q, NOW + 800 * MSEC, 0));
	assert_false(quiet_at(w, &q, NOW + 2600 * MSEC, 0));
	assert_true(quiet_at(w, &q, NOW + 2800 * MSEC, 0));
	free(w);
}

/* One tick sees every rank stop: the reason names the rank behind, not the first listed */
static void test_quiet_reason_names_rank_behind(void **state)
{
	struct world *w = nvlink_job(3, 50, NOW - 3 * SEC);
	struct quiet q = {0};

	(void)state;
	assert_false(quiet_at(w, &q, NOW - 3 * SEC, 0));
	assert_true(quiet_at(w, &q, NOW, 0));
	comm_store[1].seq[AR] = 49;
	for (int r = 0; r < 3; r++)
		comm_store[r].changed_ns = NOW;
	w->s.now_ns = NOW + 600 * MSEC;
	assert_false(diagnose_quiet(&w->s, &qcfg, 0, &q));
	assert_contains(q.why_on, "rank 1's collectives stopped");
	free(w);
}

static void test_quiet_never_in_setup_findings_or_without_nccl(void **state)
{
	struct world *w = nvlink_job(2, 10, NOW);
	struct quiet q = {0};
	struct diag_config always = qcfg;

	(void)state;
	/* a rank in NCCL setup (a new communicator's ring) keeps the hooks on */
	w->procs[1].nccl_setup = SNAP_SETUP_TRANSPORT;
	for (uint64_t t = NOW; t < NOW + 5 * SEC; t += 200 * MSEC)
		assert_false(quiet_at(w, &q, t, 0));
	w->procs[1].nccl_setup = 0;
	/* an open finding too */
	for (uint64_t t = NOW + 5 * SEC; t < NOW + 10 * SEC; t += 200 * MSEC)
		assert_false(quiet_at(w, &q, t, 1));
	/* --tcp-hooks always */
	always.quiet_hold_ns = 0;
	w->s.now_ns = NOW + 20 * SEC;
	assert_false(diagnose_quiet(&w->s, &always, 0, &q));
	/* a job without communicators (no NCCL, or not yet): nothing says it moves */
	w->s.ncomms = 0;
	for (uint64_t t = NOW + 10 * SEC; t < NOW + 15 * SEC; t += 200 * MSEC)
		assert_false(quiet_at(w, &q, t, 0));
	free(w);
}

/* After the hooks come back, a connection's age counts from then, not from before the gap. */
static void test_resumed_hooks_do_not_age_connections(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];
	int c;

	(void)state;
	add_proc(w, 100, 0, 'R', "");
	add_proc(w, 101, 1, 'R', "");
	/* nothing counted for 30 s while quiet; rank 0 spins on its receive since the resume */
	c = add_pair(w, 100, 101, NOW - 30 * SEC);
	spin(&w->conns[c]);
	w->s.tcp_resumed_ns = NOW - 2 * SEC;
	assert_int_equal(run(w, out), 0);
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 100), -1);
	/* past the threshold after the resume it is a stall, aged from the resume */
	w->s.tcp_resumed_ns = NOW - 6 * SEC;
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 100), c);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].since_ns, NOW - 6 * SEC);
	free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kind_names_round_trip),
		cmocka_unit_test(test_quiet_after_hold_and_back_on_stop),
		cmocka_unit_test(test_quiet_reason_names_rank_behind),
		cmocka_unit_test(test_quiet_never_in_setup_findings_or_without_nccl),
		cmocka_unit_test(test_resumed_hooks_do_not_age_connections),
		cmocka_unit_test(test_healthy_ring),
		cmocka_unit_test(test_sleeping_rank_stalls_ring),
		cmocka_unit_test(test_stopped_rank),
		cmocka_unit_test(test_exited_rank_with_waiters),
		cmocka_unit_test(test_abnormal_exit_before_anyone_waits),
		cmocka_unit_test(test_clean_exit_nobody_waiting),
		cmocka_unit_test(test_slow_but_progressing),
		cmocka_unit_test(test_idle_is_not_waiting),
		cmocka_unit_test(test_blocked_in_recv),
		cmocka_unit_test(test_connect_unanswered),
		cmocka_unit_test(test_untraced_peer),
		cmocka_unit_test(test_ras_socket_ignored),
		cmocka_unit_test(test_ring_setup_blocked),
		cmocka_unit_test(test_init_blocked_and_slow_init),
		cmocka_unit_test(test_rank_never_started),
		cmocka_unit_test(test_killed_while_in_setup),
		cmocka_unit_test(test_self_connection_is_no_wait),
		cmocka_unit_test(test_chain_ends_at_untraced_address),
		cmocka_unit_test(test_two_waiters_on_one_address),
		cmocka_unit_test(test_longest_direct_waiter),
		cmocka_unit_test(test_wait_cycle),
		cmocka_unit_test(test_long_ring),
		cmocka_unit_test(test_waiting_conn_oldest_progress),
		cmocka_unit_test(test_keys_stable),
		cmocka_unit_test(test_max_respected),
		cmocka_unit_test(test_empty_snapshot),
		cmocka_unit_test(test_coll_behind_is_culprit),
		cmocka_unit_test(test_coll_behind_dead_or_stopped),
		cmocka_unit_test(test_coll_progressing_no_finding),
		cmocka_unit_test(test_coll_mismatch_functions),
		cmocka_unit_test(test_coll_mismatch_arguments),
		cmocka_unit_test(test_coll_overrides_socket_culprit),
		cmocka_unit_test(test_coll_destroyed_member),
		cmocka_unit_test(test_setup_connect_retries),
		cmocka_unit_test(test_straggler),
	};

	return cmocka_run_group_tests_name("diagnose", tests, NULL, NULL);
}
