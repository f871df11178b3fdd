// SPDX-License-Identifier: MIT
/*
 * The diagnosis at the sizes users run: 512 and 4096 ranks with 64 connections each (262 144
 * connections), in rings, trees, all-to-all, a cycle, two independent hangs, and with the
 * waiters starved of CPU. One root cause is one finding naming the hung rank, with every
 * waiter listed; nothing else is named.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include "synth.h"
#include "testutil.h"
#include "util/fmt.h"

#define MAX_OUT 8

static const struct diag_config cfg = {
	.stall_threshold_ns = 5 * SYNTH_SEC,
	.active_window_ns = SYNTH_SEC,
};

static struct finding *out;

static int setup(void **state)
{
	(void)state;
	out = calloc(MAX_OUT, sizeof(*out));
	return out ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	free(out);
	return 0;
}

/* One finding, naming rank hung with the n-1 others as its waiters */
static void one_culprit(struct synth *y, int hung)
{
	int n = diagnose(&y->s, &cfg, out, MAX_OUT);

	assert_non_null(y);
	if (n != 1)
		fail_msg("%d findings, first: %s", n, n ? out[0].summary : "");
	assert_int_equal(out[0].kind, FINDING_STALL);
	assert_int_equal(out[0].rank, hung);
	assert_int_equal(out[0].nwaiters, y->nranks - 1);
	for (int k = 0; k < out[0].nwaiters; k++)
		assert_int_not_equal(out[0].waiters[k].rank, hung);
}

static void test_ring(void **state)
{
	(void)state;
	for (int n = 512; n <= 4096; n *= 8) {
		struct synth *y = synth_new(n, 64, SYNTH_RING, n / 3);

		one_culprit(y, n / 3);
		/* the ranges of text: every waiter in two runs, and the count */
		assert_contains(out[0].summary,
				n == 512 ? "ranks 0-169,171-511 (511) wait on it"
					 : "ranks 0-1364,1366-4095 (4095) wait on it");
		synth_free(y);
	}
}

static void test_tree(void **state)
{
	(void)state;
	for (int n = 512; n <= 4096; n *= 8) {
		struct synth *y = synth_new(n, 64, SYNTH_TREE, n - 7); /* a leaf */

		one_culprit(y, n - 7);
		synth_free(y);
		y = synth_new(n, 64, SYNTH_TREE, 5); /* inside the tree */
		one_culprit(y, 5);
		synth_free(y);
	}
}

static void test_all_to_all(void **state)
{
	(void)state;
	for (int n = 512; n <= 4096; n *= 8) {
		struct synth *y = synth_new(n, 64, SYNTH_ALL2ALL, 77);

		one_culprit(y, 77);
		synth_free(y);
	}
}

static void test_cycle(void **state)
{
	struct synth *y = synth_new(4096, 64, SYNTH_CYCLE, 0);
	int n = diagnose(&y->s, &cfg, out, MAX_OUT);

	(void)state;
	/* nobody is hung: everyone waits on the next, one cycle named by its smallest pid */
	assert_int_equal(n, 1);
	assert_true(out[0].cycle);
	assert_int_equal(out[0].pid, 1000);
	assert_int_equal(out[0].nwaiters, 4096);
	synth_free(y);
}

static void test_two_hangs(void **state)
{
	struct synth *y = synth_new(4096, 64, SYNTH_TWO, 100);
	int n = diagnose(&y->s, &cfg, out, MAX_OUT), a, b;

	(void)state;
	/* two rings, each hung on its own: two findings, each with its own half */
	assert_int_equal(n, 2);
	a = out[0].rank < out[1].rank ? 0 : 1;
	b = 1 - a;
	assert_int_equal(out[a].rank, 100);
	assert_int_equal(out[b].rank, 100 + 2048);
	assert_int_equal(out[a].nwaiters, 2047);
	assert_int_equal(out[b].nwaiters, 2047);
	synth_free(y);
}

/*
 * 31 spinning ranks on 2 cores: a waiter the scheduler has not run for a while shows no EAGAIN
 * in the last second. Its schedstat says why: it still waits, and is no culprit.
 */
static void test_starved_waiters(void **state)
{
	struct synth *y = synth_new(512, 64, SYNTH_RING, 20);

	(void)state;
	for (int r = 0; r < 512; r += 7) {
		struct snap_conn *c = &y->conns[r * 64];

		if (r == 20)
			continue;
		/* its last attempt 3 s ago, after the last progress; runnable, hardly run */
		c->c.last_eagain_ns = SYNTH_NOW - 3 * SYNTH_SEC;
		y->procs[r].runnable_ns = SYNTH_SEC * 9 / 10;
		y->procs[r].cpu_busy_ns = SYNTH_SEC / 20;
	}
	one_culprit(y, 20);
	assert_true(evidence_has(&out[0], "starved of CPU"));
	synth_free(y);

	/*
	 * The same rank NOT starved, running flat out without trying: busy elsewhere, a culprit
	 * of its own (the ranks up to 20 still wait on 20)
	 */
	y = synth_new(64, 8, SYNTH_RING, 20);
	y->conns[30 * 8].c.last_eagain_ns = SYNTH_NOW - 3 * SYNTH_SEC;
	assert_int_equal(diagnose(&y->s, &cfg, out, MAX_OUT), 2);
	assert_int_equal(out[0].rank == 30 ? out[0].nwaiters : out[1].nwaiters, 53);
	assert_contains(out[0].rank == 30 ? out[0].phase : out[1].phase,
			"running outside socket calls");
	synth_free(y);

	/* neither starved nor running: no evidence either way, no culprit for that chain */
	y = synth_new(64, 8, SYNTH_RING, 20);
	y->conns[30 * 8].c.last_eagain_ns = SYNTH_NOW - 3 * SYNTH_SEC;
	y->procs[30].cpu_busy_ns = SYNTH_SEC / 50;
	assert_int_equal(diagnose(&y->s, &cfg, out, MAX_OUT), 1);
	assert_int_equal(out[0].rank, 20); /* the real one is still named, by its own waiters */
	synth_free(y);
}

/* A rank inside NCCL setup at a chain's end takes part in NCCL: never the culprit */
static void test_end_inside_nccl_is_no_culprit(void **state)
{
	struct synth *y = synth_new(64, 8, SYNTH_RING, 20);

	(void)state;
	y->procs[20].nccl = true;
	y->procs[20].nccl_setup = SNAP_SETUP_INIT;
	y->procs[20].nccl_setup_since_ns = SYNTH_NOW - SYNTH_SEC; /* just now: no setup block */
	snprintf(y->procs[20].nccl_phase, sizeof(y->procs[20].nccl_phase), "bootstrap recv");
	assert_int_equal(diagnose(&y->s, &cfg, out, MAX_OUT), 0);
	/* outside NCCL, with its probes live: named */
	y->procs[20].nccl_setup = SNAP_SETUP_NONE;
	y->procs[20].nccl_phase[0] = '\0';
	assert_int_equal(diagnose(&y->s, &cfg, out, MAX_OUT), 1);
	assert_contains(out[0].phase, "outside NCCL");
	synth_free(y);
}

static void test_ranges(void **state)
{
	int a[] = {5, 3, 4, 0, 1, 9, 10, 11, 12, 7, 4}, b[] = {2}, c[] = {1, 2};
	char buf[64], tiny[12];

	(void)state;
	assert_string_equal(fmt_ranges(a, 11, buf, sizeof(buf)), "0,1,3-5,7,9-12");
	assert_string_equal(fmt_ranges(b, 1, buf, sizeof(buf)), "2");
	assert_string_equal(fmt_ranges(c, 2, buf, sizeof(buf)), "1,2");
	assert_string_equal(fmt_ranges(b, 0, buf, sizeof(buf)), "");
	/* never a number cut in two: what does not fit ends in "..." */
	assert_string_equal(fmt_ranges(a, 11, tiny, sizeof(tiny)), "0,1,3-5,...");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring),
		cmocka_unit_test(test_tree),
		cmocka_unit_test(test_all_to_all),
		cmocka_unit_test(test_cycle),
		cmocka_unit_test(test_two_hangs),
		cmocka_unit_test(test_starved_waiters),
		cmocka_unit_test(test_end_inside_nccl_is_no_culprit),
		cmocka_unit_test(test_ranges),
	};

	return cmocka_run_group_tests_name("scale", tests, setup, teardown);
}
