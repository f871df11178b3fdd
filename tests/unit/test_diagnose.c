// SPDX-License-Identifier: MIT
/*
 * The diagnosis driver on synthetic snapshots (diagworld.h): finding kinds' names, the death
 * rules (exits.c), stable keys, the output limit, an empty snapshot, the threshold's bounds.
 * The rule families have their own files: test_waits.c, test_setup.c, test_colls.c,
 * test_quiet.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include "diagworld.h"

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

/* a threshold from another host's dump or /state is bounded like -t (fuzz_state: 2e103 s) */
static void test_threshold_bounded(void **state)
{
	struct diag_config c;

	(void)state;
	diag_config_init(&c, 2e103);
	assert_true(c.stall_threshold_ns == (uint64_t)DIAG_MAX_THRESHOLD_S * NT_NSEC_PER_SEC);
	diag_config_init(&c, -3);
	assert_true(c.stall_threshold_ns == NT_NSEC_PER_SEC);
	diag_config_init(&c, __builtin_nan(""));
	assert_true(c.stall_threshold_ns == NT_NSEC_PER_SEC);
	diag_config_init(&c, 2.5);
	assert_true(c.stall_threshold_ns == 2500000000ULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kind_names_round_trip),
		cmocka_unit_test(test_exited_rank_with_waiters),
		cmocka_unit_test(test_abnormal_exit_before_anyone_waits),
		cmocka_unit_test(test_clean_exit_nobody_waiting),
		cmocka_unit_test(test_keys_stable),
		cmocka_unit_test(test_max_respected),
		cmocka_unit_test(test_empty_snapshot),
		cmocka_unit_test(test_threshold_bounded),
	};

	return cmocka_run_group_tests_name("diagnose", tests, NULL, NULL);
}
