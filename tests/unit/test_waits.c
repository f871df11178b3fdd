// SPDX-License-Identifier: MIT
/*
 * The diagnosis on synthetic snapshots (diagworld.h): wait-for chains over sockets (waits.c).
 * Healthy, slow and idle rings give nothing; a sleeping, stopped or blocked rank, an unanswered
 * connect, an untraced peer, a cycle are named with their waiters; a peer end that just sent,
 * and counters that still move, are no wait; what a process waits on.
 * One file (about 800 lines) as waits.c is one: each case reads as a change to the same ring of
 * diagworld.h, and a rule's cases stay beside each other.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "diagworld.h"

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

/*
 * The rank at the chain's end sleeps in its main thread, but a thread of it is kept runnable
 * and unrun (a proxy spinning among more spinners than CPUs, as 8 ranks on 2 cores): its own
 * tries are unseen, not absent. No culprit rather than it (the rank it would wait on, once run,
 * is the one); run again, it is named.
 */
static void test_starved_sleeper_no_culprit(void **state)
{
	struct world *w = stalled_ring(4, 1, 'S');
	struct finding out[MAX_OUT];

	(void)state;
	proc(w, 101)->runnable_ns = 900 * MSEC;
	assert_int_equal(run(w, out), 0);
	proc(w, 101)->runnable_ns = 100 * MSEC;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].pid, 101);
	free(w);
}

/*
 * Attached to a running job: a chain's end whose main thread did not stop for its stack yet
 * (running, on a busy machine) may be spinning inside NCCL, entered before the attach: no
 * culprit until a stack says where it is; stopped, it is one whatever its stack
 */
static void test_unseen_at_attach_no_culprit(void **state)
{
	struct world *w = stalled_ring(4, 1, 'R');
	struct finding out[MAX_OUT];

	(void)state;
	proc(w, 101)->cpu_busy_ns = SEC;
	for (int r = 0; r < 4; r++) {
		proc(w, 100 + r)->attached_ns = STALL_START + SEC;
		proc(w, 100 + r)->stack_at_attach_ns = STALL_START + SEC;
	}
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].pid, 101);
	proc(w, 101)->stack_at_attach_ns = 0;
	assert_int_equal(run(w, out), 0);
	proc(w, 101)->state = 'T';
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_PEER_STOPPED);
	free(w);
}

/*
 * The waiter saw nothing for 10 s, but the other end of its connection sent a moment ago: the
 * bytes are on their way (a loopback backlog on a busy node), the connection is not stalled, and
 * its sender asleep in its next call (or exited after its last send) is no culprit.
 */
static void test_peer_end_just_sent(void **state)
{
	struct world *w = stalled_ring(4, 1, 'S');
	struct finding out[MAX_OUT];

	(void)state;
	w->conns[w->send_conn[1]].c.last_send_ns = NOW - 100 * MSEC;
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 102), -1);
	/* rank 3 waits on rank 2, which spins on its own receive: nobody to name */
	assert_int_equal(run(w, out), 0);
	set_exited(proc(w, 101), 0, NOW - 50 * MSEC);
	assert_int_equal(run(w, out), 0);
	/* a send older than the threshold is no excuse: rank 1 exited and its peers wait */
	w->conns[w->send_conn[1]].c.last_send_ns = NOW - 6 * SEC;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_PEER_DEAD);
	assert_int_equal(out[0].pid, 101);
	free(w);
}

/*
 * The ring goes again after rank 1's sleep: rank 1 sent to rank 2, rank 2 to rank 3, which got
 * its data 5 ms ago and sleeps in its own pacing before it sends to rank 0, whose receive has
 * had nothing for 10 s. Rank 3 is the front of the progress, not a second culprit; once it has
 * moved nothing for longer than the threshold, it is named.
 */
static void test_wave_front_no_culprit(void **state)
{
	struct world *w = stalled_ring(4, 1, 'S');
	struct finding out[MAX_OUT];

	(void)state;
	set_progress(&w->conns[w->send_conn[1]], NOW - 15 * MSEC);
	set_progress(&w->conns[w->recv_conn[2]], NOW - 15 * MSEC);
	set_progress(&w->conns[w->send_conn[2]], NOW - 10 * MSEC);
	set_progress(&w->conns[w->recv_conn[3]], NOW - 5 * MSEC);
	w->procs[3].state = 'S';
	snprintf(w->procs[3].where, sizeof(w->procs[3].where), "clock_nanosleep");
	w->procs[3].cpu_busy_ns = 0;
	/* rank 0 still waits on rank 3, which is not waiting: the old rule named it */
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 100), w->recv_conn[0]);
	assert_int_equal(run(w, out), 0);
	/* rank 3 then moves nothing for longer than the threshold: it holds rank 0 */
	set_progress(&w->conns[w->recv_conn[3]], NOW - 6 * SEC);
	w->conns[w->recv_conn[3]].c.last_eagain_ns = NOW - 7 * SEC;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].pid, 103);
	assert_int_equal(out[0].peer_pid, 100);
	free(w);
}

/*
 * Every rank pauses at once (an evaluation), rank 0 a little later than rank 1: rank 1's receive
 * has had nothing for 6 s, but rank 1 slept 5.5 s of them itself and has tried only since. It
 * waited 0.5 s, not 6: no wait. Trying for longer than the threshold, it waits on rank 0.
 */
static void test_waiter_that_slept_first(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];
	struct snap_conn *rc;

	(void)state;
	ring(w, 2, NOW - 6 * SEC);
	w->procs[0].state = 'S';
	snprintf(w->procs[0].where, sizeof(w->procs[0].where), "clock_nanosleep");
	rc = &w->conns[w->recv_conn[1]];
	spin(rc);
	rc->c.eagain_since_ns = NOW - 500 * MSEC;
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 101), -1);
	assert_int_equal(run(w, out), 0);
	rc->c.eagain_since_ns = NOW - 5500 * MSEC;
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 101), w->recv_conn[1]);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].pid, 100);
	/* blocked in its receive instead: since the progress, whatever an old EAGAIN said */
	rc->c.eagain_since_ns = NOW - 500 * MSEC;
	rc->blocked = SNAP_BLOCK_RECV;
	rc->blocked_since_ns = NOW - 400 * MSEC;
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 101), w->recv_conn[1]);
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

/*
 * A stopped rank's other connection keeps receiving (NCCL RAS's keep-alives from its peers, on a
 * build whose probes cannot label RAS sockets): the bytes wait unread in its receive queue, and
 * tcp_info dates their arrival. That is no move of the rank's own: it is still the culprit
 */
static void test_stopped_rank_unread_keepalives(void **state)
{
	struct world *w = stalled_ring(4, 1, 'T');
	struct finding out[MAX_OUT];
	int ka;

	(void)state;
	ka = add_pair(w, 101, 103, STALL_START);
	w->conns[ka].c.last_recv_ns = NOW - 400 * MSEC;
	w->conns[ka].c.recv_q = 360;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_PEER_STOPPED);
	assert_int_equal(out[0].pid, 101);
	/* read by a rank that runs, the same bytes are its own move: not the front of the stop */
	w->procs[1].state = 'S';
	w->conns[ka].c.recv_q = 0;
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

/*
 * Host a's tracer alone, rank 0 of 4 waiting on a socket of NCCL's net transport to another
 * host: its NCCL log's NET Channel lines name the rank there (rank 3 sends to it, it sends to
 * rank 1), by the socket's direction; who, never that it is the cause
 */
static void test_untraced_peer_named_by_log(void **state)
{
	static struct snap_nccl_log log = {
		.ncomm = 1,
		.comm = {{.hash = 0xc0ffee, .rank = 0, .nranks = 4}},
		.npath = 3,
		.path = {{.comm = 0,
			  .from = 3,
			  .to = 0,
			  .side = SNAP_LOG_RECV,
			  .net = true,
			  .channels = 0x3,
			  .transport = "NET/Socket/0"},
			 {.comm = 0,
			  .from = 0,
			  .to = 1,
			  .side = SNAP_LOG_SEND,
			  .net = true,
			  .channels = 0x3,
			  .transport = "NET/Socket/0"},
			 {.comm = 0,
			  .from = 0,
			  .to = 2,
			  .side = SNAP_LOG_SENDER,
			  .p2p = true,
			  .channels = 0x1,
			  .transport = "P2P/IPC"}},
	};
	struct world *w = world_new();
	struct finding out[MAX_OUT];
	struct snap_proc *p;
	struct nt_tuple t;
	int ci;

	(void)state;
	p = add_proc(w, 300, 0, 'R', "");
	p->world_size = 4;
	p->nccl_log = &log;
	tuple4(&t, "198.18.0.1", 51000, "198.18.0.2", 40000);
	ci = add_conn(w, 300, -1, &t, STALL_START);
	spin(&w->conns[ci]);
	w->conns[ci].nccl_label = "net (net accept)";

	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].pid, 0);
	assert_int_equal(out[0].rank, -1);
	assert_true(out[0].remote_named);
	assert_int_equal(out[0].remote_rank, 3);
	assert_contains(out[0].summary, "waits on rank 3 at 198.18.0.2:40000 (untraced peer");
	assert_true(evidence_has(&out[0], "NCCL log of rank 0 (pid 300): its NET [receive] on "
					  "channels 0-1 is from rank 3 alone"));
	/* a socket it connected: the one it sends to */
	w->conns[ci].nccl_label = "net (net connect)";
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].remote_rank, 1);
	/* no label, bytes both ways: two candidates, no name */
	w->conns[ci].nccl_label = NULL;
	assert_int_equal(run(w, out), 1);
	assert_false(out[0].remote_named);
	assert_contains(out[0].summary, "waits on 198.18.0.2:40000 (untraced");
	/* bytes received only: the receive side */
	w->conns[ci].c.bytes_sent = 0;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].remote_rank, 3);
	/* a sub-communicator's rank says which */
	log.comm[0].nranks = 2;
	assert_int_equal(run(w, out), 1);
	assert_contains(out[0].summary, "rank 3 of comm 0000000000c0ffee at 198.18.0.2:40000");
	log.comm[0].nranks = 4;
	/* NCCL's bootstrap socket is not its net transport's */
	w->conns[ci].nccl_label = "bootstrap (bootstrap)";
	assert_int_equal(run(w, out), 1);
	assert_false(out[0].remote_named);
	/* two ranks it receives from over NET: the log cannot say which */
	w->conns[ci].nccl_label = "net (net accept)";
	log.path[2] = (struct snap_log_path){
		.comm = 0, .from = 2, .to = 0, .side = SNAP_LOG_RECV, .net = true, .channels = 0x4};
	assert_int_equal(run(w, out), 1);
	assert_false(out[0].remote_named);
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
	/* a chain longer than any fixed bound still ends at the sleeping rank, every waiter told */
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_STALL);
	assert_int_equal(out[0].pid, 100);
	assert_int_equal(out[0].peer_pid, 101);
	assert_int_equal(out[0].nwaiters, 99);
	assert_contains(out[0].summary, "ranks 1-99 (99) wait on it");
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

/*
 * NCCL's data connections silent while the ranks' counters still move (an idle channel the
 * proxy polls, 16 ranks time-sharing 2 cores): no wait, no culprit; once the counters stand
 * still too, the socket wait is back.
 */
static void test_counters_moving_no_socket_wait(void **state)
{
	struct world *w = stalled_ring(4, 1, 'S');
	struct finding out[MAX_OUT];

	(void)state;
	for (int i = 0; i < w->s.nconns; i++)
		w->conns[i].nccl_label = "net (net connect)";
	for (int r = 0; r < 4; r++)
		add_comm(w, r, 4, 20, NOW - 300 * MSEC);
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 102), -1);
	assert_int_equal(run(w, out), 0);
	for (int r = 0; r < 4; r++)
		comm_store[r].changed_ns = STALL_START;
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 102), w->recv_conn[2]);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].pid, 101);
	free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_healthy_ring),
		cmocka_unit_test(test_sleeping_rank_stalls_ring),
		cmocka_unit_test(test_starved_sleeper_no_culprit),
		cmocka_unit_test(test_unseen_at_attach_no_culprit),
		cmocka_unit_test(test_peer_end_just_sent),
		cmocka_unit_test(test_stopped_rank),
		cmocka_unit_test(test_stopped_rank_unread_keepalives),
		cmocka_unit_test(test_slow_but_progressing),
		cmocka_unit_test(test_idle_is_not_waiting),
		cmocka_unit_test(test_blocked_in_recv),
		cmocka_unit_test(test_connect_unanswered),
		cmocka_unit_test(test_untraced_peer),
		cmocka_unit_test(test_untraced_peer_named_by_log),
		cmocka_unit_test(test_ras_socket_ignored),
		cmocka_unit_test(test_self_connection_is_no_wait),
		cmocka_unit_test(test_chain_ends_at_untraced_address),
		cmocka_unit_test(test_two_waiters_on_one_address),
		cmocka_unit_test(test_longest_direct_waiter),
		cmocka_unit_test(test_wait_cycle),
		cmocka_unit_test(test_wave_front_no_culprit),
		cmocka_unit_test(test_waiter_that_slept_first),
		cmocka_unit_test(test_long_ring),
		cmocka_unit_test(test_waiting_conn_oldest_progress),
		cmocka_unit_test(test_counters_moving_no_socket_wait),
	};

	return cmocka_run_group_tests_name("waits", tests, NULL, NULL);
}
