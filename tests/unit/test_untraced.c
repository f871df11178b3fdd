// SPDX-License-Identifier: MIT
/*
 * One host's tracer in a job of several (issue 51): a wait of its ranks on an untraced peer (a
 * rank of another host) and its own culprit. Node 0 of two, ranks 0-3 here, ranks 4-7 on the
 * other host: rank 1 asleep mid-training, ranks 0 and 2 wait on it over traced connections, rank
 * 3 on a socket to the other host. Where that wait is the same stop seen through the other host
 * (it began after the wait on rank 1, and rank 3 launched as many collectives on the same
 * communicator as rank 1's waiters), it is evidence of rank 1's finding, not a second one; where
 * it is older, or the counters do not say so, it stays its own finding (synthetic snapshots,
 * diagworld.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "diagworld.h"

#define UNTRACED_PORT 40000

/*
 * Node 0's view: rank 1 (pid 101) asleep outside NCCL since STALL_START, behind on comm HASH
 * (AllReduce 100 where ranks 0, 2, 3 launched 101); ranks 0 and 2 spin on their receives from
 * it; rank 3 spins on its socket to 10.0.0.2, silent since untraced_since. *ux: that socket.
 */
static struct world *node0(uint64_t untraced_since, int *ux)
{
	struct world *w = world_new();
	struct snap_proc *p;
	struct nt_tuple t;
	int a, b;

	for (int r = 0; r < 4; r++) {
		p = add_proc(w, 100 + r, r, 'R', "");
		p->world_size = 8;
		p->nccl = true;
		add_comm(w, r, 8, r == 1 ? 100 : 101,
			 r == 1 ? STALL_START - 50 * MSEC : STALL_START - 20 * MSEC);
	}
	p = proc(w, 101);
	p->state = 'S';
	p->cpu_busy_ns = 0;
	snprintf(p->where, sizeof(p->where), "clock_nanosleep");
	/* rank 2 receives from rank 1 (1 -> 2), rank 0 too (the reverse ring, 1 -> 0) */
	a = add_pair(w, 101, 102, STALL_START);
	spin(&w->conns[a + 1]);
	b = add_pair(w, 101, 100, STALL_START + 5 * MSEC);
	spin(&w->conns[b + 1]);
	tuple4(&t, "10.0.0.1", 51000, "10.0.0.2", UNTRACED_PORT);
	*ux = add_conn(w, 103, -1, &t, untraced_since);
	spin(&w->conns[*ux]);
	return w;
}

static const struct finding *finding_of(const struct finding *out, int n, int pid)
{
	for (int i = 0; i < n; i++)
		if (out[i].pid == pid)
			return &out[i];
	return NULL;
}

/* (a) rank 3's wait began after rank 1's stop, in the same collective: one finding */
static void test_untraced_wait_joins_culprit(void **state)
{
	struct world *w;
	struct finding out[MAX_OUT];
	int ux, n;

	(void)state;
	w = node0(STALL_START + 300 * MSEC, &ux);
	n = run(w, out);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].pid, 101);
	assert_int_equal(out[0].rank, 1);
	assert_true(has_waiter(&out[0], 100));
	assert_true(has_waiter(&out[0], 102));
	assert_true(has_waiter(&out[0], 103));
	assert_true(evidence_has(&out[0], "rank 3 (pid 103) also waits on 10.0.0.2:40000"));
	assert_true(evidence_has(&out[0], "a rank of another host (untraced)"));
	assert_true(evidence_has(&out[0], "silent since after the wait on rank 1 began"));
	assert_true(evidence_has(&out[0], "as many collectives launched on comm "
					  "9f3c1a2b3c4d5e6f as ranks 0,2"));
	/* the untraced wait's start equal to the wait on rank 1's: not older, it joins too */
	free(w);
	w = node0(STALL_START, &ux);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].pid, 101);
	free(w);
}

/* The same stop with other culprits' evidence: stopped in the collective; over NVLink here */
static void test_untraced_wait_joins_other_culprits(void **state)
{
	struct world *w;
	struct finding out[MAX_OUT];
	struct nt_tuple t;
	int ux;

	(void)state;
	/* SIGSTOPped inside the collective it launched like the others */
	w = node0(STALL_START + 300 * MSEC, &ux);
	proc(w, 101)->state = 'T';
	comm_store[1].seq[AR] = 101;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_PEER_STOPPED);
	assert_int_equal(out[0].pid, 101);
	assert_true(has_waiter(&out[0], 103));
	assert_true(evidence_has(&out[0], "rank 3 (pid 103) also waits on 10.0.0.2:40000"));
	free(w);
	/* no socket to rank 1 (NVLink inside the host): the counters name it, since its waiters
	 * launched; rank 3's socket to the other host went silent after that */
	w = node0(STALL_START + 300 * MSEC, &ux);
	t = w->conns[ux].c.t;
	w->s.nconns = 0;
	assert_int_equal(add_conn(w, 103, -1, &t, STALL_START + 300 * MSEC), 0);
	spin(&w->conns[0]);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].pid, 101);
	assert_contains(out[0].summary, "has not launched");
	assert_true(evidence_has(&out[0], "rank 3 (pid 103) also waits on 10.0.0.2:40000"));
	/* silent since before its waiters launched: its own */
	set_progress(&w->conns[0], STALL_START - SEC);
	assert_int_equal(run(w, out), 2);
	free(w);
}

/* (a), with the other host's rank named by rank 3's NCCL log: named in the line */
static void test_untraced_wait_joins_named_rank(void **state)
{
	static struct snap_nccl_log log = {
		.ncomm = 1,
		.comm = {{.hash = HASH, .rank = 3, .nranks = 8}},
		.npath = 1,
		.path = {{.comm = 0,
			  .from = 4,
			  .to = 3,
			  .side = SNAP_LOG_RECV,
			  .net = true,
			  .channels = 0x1,
			  .transport = "NET/Socket/0"}},
	};
	struct world *w;
	struct finding out[MAX_OUT];
	int ux;

	(void)state;
	w = node0(STALL_START + 300 * MSEC, &ux);
	proc(w, 103)->nccl_log = &log;
	w->conns[ux].nccl_label = "net (net accept)";
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].pid, 101);
	assert_true(evidence_has(&out[0], "also waits on rank 4 at 10.0.0.2:40000"));
	free(w);
}

/* (b) rank 3's wait on the other host began well before rank 1 stopped: its own finding */
static void test_older_untraced_wait_stays(void **state)
{
	struct world *w;
	struct finding out[MAX_OUT];
	const struct finding *f;
	int ux, n;

	(void)state;
	w = node0(STALL_START - 3 * SEC, &ux);
	n = run(w, out);
	assert_int_equal(n, 2);
	f = finding_of(out, n, 101);
	assert_non_null(f);
	assert_false(evidence_has(f, "also waits on"));
	assert_false(evidence_has(f, "none here is behind"));
	f = finding_of(out, n, 0);
	assert_non_null(f);
	assert_int_equal(f->rank, -1);
	assert_int_equal(f->peer_pid, 103);
	assert_contains(f->phase, "untraced peer silent");
	free(w);
	/*
	 * rank 1 stopped inside the collective, as far along as the others: the wait that stays
	 * says nothing of the counters, where a culprit is named here
	 */
	w = node0(STALL_START - 3 * SEC, &ux);
	proc(w, 101)->state = 'T';
	comm_store[1].seq[AR] = 101;
	n = run(w, out);
	assert_int_equal(n, 2);
	f = finding_of(out, n, 0);
	assert_non_null(f);
	assert_false(evidence_has(f, "none here is behind"));
	free(w);
}

/* Where the snapshot does not show the same collective, the two findings stay */
static void test_untraced_wait_other_cause_stays(void **state)
{
	struct world *w;
	struct finding out[MAX_OUT];
	int ux;

	(void)state;
	/* no counters read: nothing says rank 3 is in rank 1's waiters' collective */
	w = node0(STALL_START + 300 * MSEC, &ux);
	w->s.ncomms = 0;
	assert_int_equal(run(w, out), 2);
	free(w);
	/* rank 3 on another communicator than rank 1 and its waiters */
	w = node0(STALL_START + 300 * MSEC, &ux);
	comm_store[3].hash = HASH + 1;
	assert_int_equal(run(w, out), 2);
	free(w);
	/* rank 3 a collective further than rank 1's waiters */
	w = node0(STALL_START + 300 * MSEC, &ux);
	comm_store[3].seq[AR] = 102;
	assert_int_equal(run(w, out), 2);
	free(w);
	/* the other host closed the socket: its own end, not rank 1's wait */
	w = node0(STALL_START + 300 * MSEC, &ux);
	w->conns[ux].c.recv_eof = true;
	assert_int_equal(run(w, out), 2);
	free(w);
	/* rank 3's NCCL warned: something of its own */
	w = node0(STALL_START + 300 * MSEC, &ux);
	proc(w, 103)->nccl_warning = "NET/Socket : peer 10.0.0.2<40000> closed the connection";
	assert_int_equal(run(w, out), 2);
	free(w);
}

/* node0(), rank 1 waiting too: in the collective, as far along as the others */
static struct world *node0_no_culprit(int *ux)
{
	struct world *w = node0(STALL_START + 300 * MSEC, ux);
	struct snap_proc *p = proc(w, 101);

	p->state = 'R';
	snprintf(p->nccl_phase, sizeof(p->nccl_phase), "AllReduce");
	p->where[0] = '\0';
	comm_store[1].seq[AR] = 101;
	return w;
}

/* (c) no culprit here: rank 1 is not asleep, everyone waits through the other host */
static void test_no_local_culprit_keeps_untraced(void **state)
{
	struct world *w;
	struct finding out[MAX_OUT];
	int ux;

	(void)state;
	w = node0_no_culprit(&ux);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].pid, 0);
	assert_int_equal(out[0].rank, -1);
	assert_int_equal(out[0].peer_pid, 103);
	assert_contains(out[0].phase, "untraced peer silent");
	assert_contains(out[0].summary, "waits on 10.0.0.2:40000");
	/* what the counters show here, and no more: none of this host's ranks is behind */
	assert_true(evidence_has(&out[0], "the 4 ranks of comm 9f3c1a2b3c4d5e6f traced here "
					  "(ranks 0-3) launched 101 collectives each"));
	assert_true(evidence_has(&out[0], "none here is behind on NCCL's counters"));
	/* no counters read: nothing said of them */
	w->s.ncomms = 0;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].pid, 0);
	assert_false(evidence_has(&out[0], "none here is behind"));
	free(w);
}

/*
 * The stop ending (real NCCL, two nodes of 4): rank 1 woke and launched #101 a moment ago, the
 * counters here are equal, and rank 3's wait on the other host, silent since before that
 * launch, is the stop's last tick: no finding. Once it outlasts the threshold after the
 * launch, it is a finding again.
 */
static void test_untraced_wait_at_stop_end(void **state)
{
	struct world *w;
	struct finding out[MAX_OUT];
	int ux;

	(void)state;
	w = node0_no_culprit(&ux);
	comm_store[1].changed_ns = NOW - 200 * MSEC;
	assert_int_equal(run(w, out), 0);
	/* launched as the wait began (seen a tick late): the wait is no stop's end */
	comm_store[1].changed_ns = STALL_START + 400 * MSEC;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].peer_pid, 103);
	assert_contains(out[0].phase, "untraced peer silent");
	free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_untraced_wait_joins_culprit),
		cmocka_unit_test(test_untraced_wait_joins_other_culprits),
		cmocka_unit_test(test_untraced_wait_joins_named_rank),
		cmocka_unit_test(test_older_untraced_wait_stays),
		cmocka_unit_test(test_untraced_wait_other_cause_stays),
		cmocka_unit_test(test_no_local_culprit_keeps_untraced),
		cmocka_unit_test(test_untraced_wait_at_stop_end),
	};

	return cmocka_run_group_tests_name("untraced", tests, NULL, NULL);
}
