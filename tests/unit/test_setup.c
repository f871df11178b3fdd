// SPDX-License-Identifier: MIT
/*
 * The diagnosis on synthetic snapshots (diagworld.h): ranks blocked in NCCL's setup (setup.c):
 * ring and init setup blocked, slow init, a rank that never started, one killed in setup,
 * connects NCCL retries silently.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include "diagworld.h"

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

	/*
	 * rank 1 was inside the setup 0.3 s ago: it has just got through, ahead of the others,
	 * and is between its first collectives; not what they wait for (the IB handshake's end,
	 * test_ib). Out of it for longer than the threshold, it is again.
	 */
	proc(w, 101)->nccl_setup_seen_ns = NOW - 300 * MSEC;
	assert_int_equal(run(w, out), 0);
	proc(w, 101)->nccl_setup_seen_ns = NOW - 6 * SEC;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].pid, 101);

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

/*
 * Real NCCL's first collective at 8 ranks, rank 5 late to it (asleep in its own code): the
 * lazy ring setup of ranks 4 and 6, its neighbours, waits on it; the other five got through
 * their setup at once (their peers were there), launched AllReduce #1 and wait for it outside
 * NCCL, in cudaStreamSynchronize, running. They are outside NCCL and out of the setup for
 * longer than the threshold, like rank 5: only rank 5 may be named, once, or no one; never a
 * rank that took part in the setup the others wait in.
 */
static void first_collective_late(struct world *w, bool counters)
{
	job(w, 8);
	for (int r = 0; r < 8; r++) {
		struct snap_proc *p = proc(w, 100 + r);

		if (r == 4 || r == 6) {
			in_setup(p, SNAP_SETUP_TRANSPORT, STALL_START, "ncclTransportP2pSetup");
			p->nccl_setup_seen_ns = NOW;
			p->nccl_transport_entered_ns = STALL_START;
		} else if (r != 5) {
			/* in its setup from 20 ms before the waiters, through it 50 ms after */
			p->state = 'R';
			p->cpu_busy_ns = SEC;
			snprintf(p->where, sizeof(p->where), "cudaStreamSynchronize");
			p->nccl_setup_seen_ns = STALL_START;
			p->nccl_transport_entered_ns = STALL_START - 20 * MSEC;
		} else {
			snprintf(p->where, sizeof(p->where), "clock_nanosleep");
		}
		if (counters)
			add_comm(w, r, 8, r == 4 || r == 5 || r == 6 ? 0 : 1,
				 r == 4 || r == 5 || r == 6 ? STALL_START - SEC
							    : STALL_START + 50 * MSEC);
	}
}

/*
 * The same, with the entries of the ranks through the setup never seen (their records lost)
 * and the counters known: NCCL's counters say they launched the first collective, rank 5 did
 * not; rank 5 is named, not the first rank outside NCCL. The waiters' proxies poll their net
 * accept: the evidence says how long and how often.
 */
static void test_first_collective_late_entries_lost(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];
	int n;

	(void)state;
	first_collective_late(w, true);
	for (int r = 0; r < 8; r++)
		if (r != 4 && r != 6)
			proc(w, 100 + r)->nccl_transport_entered_ns = 0;
	proc(w, 104)->net_poll =
		(struct snap_net_poll){NT_P_NET_ACCEPT, STALL_START + 100 * MSEC, 1300000, 4711};
	proc(w, 106)->net_poll =
		(struct snap_net_poll){NT_P_NET_CONNECT, STALL_START, 42, 4712, "10.0.0.5:43517"};
	n = run(w, out);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].pid, 105);
	assert_int_equal(out[0].kind, FINDING_RING_SETUP_BLOCKED);
	assert_int_equal(out[0].nwaiters, 7);
	assert_true(evidence_has(&out[0], "its thread 4711 polls ncclNetSocketAccept for 9.9s, "
					  "1.3M tries"));
	assert_true(evidence_has(&out[0], "its thread 4712 polls ncclNetSocketConnect to "
					  "10.0.0.5:43517 for 10.0s, 42 tries"));
	/* where a traced process listens there, the connect is for its rank */
	{
		struct nt_tuple t;
		int i;

		tuple4(&t, "10.0.0.5", 43517, "0.0.0.0", 0);
		i = add_conn(w, 107, -1, &t, STALL_START);
		w->conns[i].c.flags = NT_CONN_LISTENER;
		w->conns[i].c.state = 10; /* TCP_LISTEN */
	}
	n = run(w, out);
	assert_int_equal(n, 1);
	assert_true(evidence_has(&out[0], "its thread 4712 polls ncclNetSocketConnect to "
					  "10.0.0.5:43517 (rank 7) for 10.0s, 42 tries"));
	/* without the counters, nothing says rank 0 took part: it is named (test above) */

	/* records lost or suppressed are never silent: the last line says so, whatever came */
	assert_false(evidence_has(&out[0], "records not received"));
	w->s.records_lost = 174;
	w->s.records_suppressed = 3;
	n = run(w, out);
	assert_int_equal(n, 1);
	assert_true(strstr(out[0].evidence[out[0].nevidence - 1],
			   "records not received: 174 lost (ring buffer full), 3 over budget; "
			   "phases and counters are read each tick") ==
		    out[0].evidence[out[0].nevidence - 1]);
	free(w);
}

static void test_first_collective_late_at_scale(void **state)
{
	struct finding out[MAX_OUT];

	(void)state;
	for (int counters = 0; counters < 2; counters++) {
		struct world *w = world_new();
		int n;

		first_collective_late(w, counters);
		n = run(w, out);
		for (int i = 0; i < n; i++)
			if (out[i].kind != FINDING_CONFIG)
				assert_int_equal(out[i].rank, 5);
		/*
		 * the waiters' setup names its culprit, once: a ring-setup hang (the counters,
		 * where known, leave it to the setup's rule: its neighbours are launching)
		 */
		assert_int_equal(n, 1);
		assert_int_equal(out[0].pid, 105);
		assert_int_equal(out[0].kind, FINDING_RING_SETUP_BLOCKED);
		assert_true(has_waiter(&out[0], 104) && has_waiter(&out[0], 106));
		/* and every other rank waits: those through the setup, through its waiters */
		assert_int_equal(out[0].nwaiters, 7);
		assert_contains(out[0].summary, "ranks 4,6 wait in NCCL transport setup");
		assert_true(evidence_has(&out[0], "waiting through them: ranks 0-3,7 (through the "
						  "setup with them, each one's main thread since "
						  "outside it)"));
		/*
		 * rank 5 in its setup too: every rank behind is launching, none is named (which
		 * of the three holds the others is the sockets' or the handshake's to say)
		 */
		in_setup(proc(w, 105), SNAP_SETUP_TRANSPORT, STALL_START, "ncclTransportP2pSetup");
		proc(w, 105)->nccl_transport_entered_ns = STALL_START;
		n = run(w, out);
		for (int i = 0; i < n; i++)
			assert_int_equal(out[i].kind, FINDING_CONFIG);
		free(w);
	}
	/*
	 * without counters: rank 5's last setup of that kind long before (another
	 * communicator's): it is named still; the others entered theirs a second before the
	 * waiters (slower to their first collective): still with them
	 */
	{
		struct world *w = world_new();
		int n;

		first_collective_late(w, false);
		proc(w, 105)->nccl_transport_entered_ns = STALL_START - 60 * SEC;
		for (int r = 0; r < 8; r++)
			if (r != 4 && r != 5 && r != 6)
				proc(w, 100 + r)->nccl_transport_entered_ns = STALL_START - SEC;
		n = run(w, out);
		assert_int_equal(n, 1);
		assert_int_equal(out[0].pid, 105);
		/* before the change this guards, the first rank outside NCCL was named: rank 0 */
		for (int r = 0; r < 8; r++)
			if (r != 4 && r != 5 && r != 6)
				proc(w, 100 + r)->nccl_transport_entered_ns = 0;
		n = run(w, out);
		assert_int_equal(n, 1);
		assert_int_equal(out[0].pid, 100);
		/*
		 * every rank outside entered with them, rank 3 then died in it: no participant,
		 * the dead one is named
		 */
		for (int r = 0; r < 8; r++)
			if (r != 4 && r != 6)
				proc(w, 100 + r)->nccl_transport_entered_ns = STALL_START - SEC;
		set_exited(proc(w, 103), SIGKILL, STALL_START + SEC);
		n = run(w, out);
		assert_int_equal(n, 1);
		assert_int_equal(out[0].pid, 103);
		assert_int_equal(out[0].kind, FINDING_PEER_DEAD);
		free(w);
	}
}

/*
 * The same hang, attached to: the waiters' setup was under way (since the attach, at least),
 * no entry of the ranks through it was seen, and no counter says who launched (a build whose
 * communicators cannot be read). The stacks taken at attach show five of them waiting on
 * their GPU, outside NCCL: they launched their first collective, their setup behind them.
 */
static void test_first_collective_late_attached(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];
	const uint64_t attach = STALL_START;
	int n;

	(void)state;
	first_collective_late(w, false);
	for (int r = 0; r < 8; r++) {
		struct snap_proc *p = proc(w, 100 + r);

		p->nccl_transport_entered_ns = 0;
		p->nccl_setup_seen_ns = r == 4 || r == 6 ? NOW : 0;
		p->nccl_setup_at_attach = r == 4 || r == 6;
		p->attached_ns = attach;
		p->stack_at_attach_ns = attach + r * MSEC;
		if (r != 4 && r != 5 && r != 6)
			p->gpu_wait_at_attach_ns = attach + r * MSEC;
	}
	n = run(w, out);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].pid, 105);
	assert_true(has_waiter(&out[0], 104) && has_waiter(&out[0], 106));
	/* the evidence says why the others are not named */
	assert_true(evidence_has(&out[0], "through it before the attach: ranks 0-3,7 (the attach "
					  "found each one's main thread waiting on the GPU"));
	/*
	 * rank 3's main thread did not stop in time at the attach (running, on a busy machine):
	 * what it does is unknown, so it is named nowhere; rank 5, known to be outside, is
	 */
	proc(w, 103)->stack_at_attach_ns = 0;
	proc(w, 103)->gpu_wait_at_attach_ns = 0;
	n = run(w, out);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].pid, 105);
	assert_true(evidence_has(&out[0], "not known: rank 3 (attached to, its main thread did not "
					  "stop for its stack yet)"));
	assert_true(evidence_has(&out[0], "through it before the attach: ranks 0-2,7"));
	/* rank 5's neither: no one is named (before: the first of them, rank 3, a waiter) */
	proc(w, 105)->stack_at_attach_ns = 0;
	assert_int_equal(run(w, out), 0);
	proc(w, 105)->stack_at_attach_ns = attach;
	proc(w, 103)->stack_at_attach_ns = attach;
	proc(w, 103)->gpu_wait_at_attach_ns = attach;
	/* what the stacks guard: without them the first rank outside NCCL was named, rank 0 */
	for (int r = 0; r < 8; r++)
		proc(w, 100 + r)->gpu_wait_at_attach_ns = 0;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].pid, 100);
	/* rank 5 waited on its GPU at attach too (its own hung kernel?): no one is named */
	for (int r = 0; r < 8; r++)
		if (r != 4 && r != 6)
			proc(w, 100 + r)->gpu_wait_at_attach_ns = attach;
	assert_int_equal(run(w, out), 0);
	/*
	 * a setup that began after the attach (a later communicator's first collective, the
	 * entries of the ranks through it seen): rank 5's wait at attach, shortly before, says
	 * nothing of this one; it is named
	 */
	for (int r = 0; r < 8; r++) {
		struct snap_proc *p = proc(w, 100 + r);

		p->nccl_setup_at_attach = false;
		if (r != 5)
			p->nccl_transport_entered_ns = STALL_START - 20 * MSEC;
	}
	proc(w, 105)->gpu_wait_at_attach_ns = STALL_START - SEC;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].pid, 105);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_setup_blocked),
		cmocka_unit_test(test_first_collective_late_at_scale),
		cmocka_unit_test(test_first_collective_late_entries_lost),
		cmocka_unit_test(test_first_collective_late_attached),
		cmocka_unit_test(test_init_blocked_and_slow_init),
		cmocka_unit_test(test_rank_never_started),
		cmocka_unit_test(test_killed_while_in_setup),
		cmocka_unit_test(test_setup_connect_retries),
	};

	return cmocka_run_group_tests_name("setup", tests, NULL, NULL);
}
