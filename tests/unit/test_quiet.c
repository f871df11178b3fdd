// SPDX-License-Identifier: MIT
/*
 * The diagnosis on synthetic snapshots (diagworld.h): quiet mode (quiet.c), the per-call TCP
 * hooks off while every communicator moves and back when one stops, and connections' ages
 * after the hooks resume.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "diagworld.h"

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

/*
 * While the hooks are off, a connection's counters are frozen at the switch: no wait is read from
 * them. A healthy job's end: rank 1 exited, rank 0 (its communicator destroyed, not launching,
 * on a busy machine) still alive, its last EAGAIN and byte 12 s old.
 */
static void test_quiet_hooks_read_no_wait(void **state)
{
	struct world *w = world_new();
	struct finding out[MAX_OUT];
	int c;

	(void)state;
	add_proc(w, 100, 0, 'R', "")->runnable_ns = SEC;
	set_exited(add_proc(w, 101, 1, 'R', ""), 0, NOW - 100 * MSEC);
	c = add_pair(w, 100, 101, NOW - 12 * SEC);
	w->conns[c].c.last_eagain_ns = NOW - 11 * SEC;
	w->conns[c].c.eagain_since_ns = NOW - 11 * SEC;
	w->s.tcp_quiet = true;
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 100), -1);
	assert_int_equal(run(w, out), 0);
	/* the same counters with the hooks on: a wait on the exited rank */
	w->s.tcp_quiet = false;
	assert_int_equal(diagnose_waiting_conn(&w->s, &cfg, 100), c);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_PEER_DEAD);
	free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quiet_after_hold_and_back_on_stop),
		cmocka_unit_test(test_quiet_reason_names_rank_behind),
		cmocka_unit_test(test_quiet_never_in_setup_findings_or_without_nccl),
		cmocka_unit_test(test_resumed_hooks_do_not_age_connections),
		cmocka_unit_test(test_quiet_hooks_read_no_wait),
	};

	return cmocka_run_group_tests_name("quiet", tests, NULL, NULL);
}
