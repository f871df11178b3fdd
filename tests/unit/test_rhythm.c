// SPDX-License-Identifier: MIT
/*
 * The adaptive stall threshold: the rhythm model (warm-up, a change of rhythm, a burst after a
 * pause, the table that keeps rhythms from tick to tick), the threshold it gives (k x p99,
 * clamped), the diagnosis with it on synthetic jobs (diagworld.h: a fast communicator and a
 * fast ring stop for 1.5 s; the same with --fixed-threshold; a pause on every rank), and the
 * findings' early, sure and transient lives.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "diagnose/findings.h"
#include "model/rhythm.h"
#include "diagworld.h"

/* run's defaults: -t 5, adaptive from 1 s, k = 10 */
static struct diag_config adaptive(void)
{
	struct diag_config c = cfg;

	c.min_threshold_ns = SEC;
	c.adapt_k = 10;
	return c;
}

/* n moves gap apart from t0, one event each; returns the time of the last */
static uint64_t moves(struct rhythm *r, uint64_t t0, uint64_t gap, int n)
{
	for (int i = 0; i < n; i++)
		rhythm_moved(r, t0 + (uint64_t)i * gap, 1, 0);
	return t0 + (uint64_t)(n - 1) * gap;
}

static void test_warm_up(void **state)
{
	struct rhythm r = {0};

	(void)state;
	/* RHYTHM_WARM gaps need RHYTHM_WARM + 1 moves; one short, nothing is known */
	moves(&r, SEC, 100 * MSEC, RHYTHM_WARM);
	assert_int_equal(r.n, RHYTHM_WARM - 1);
	assert_int_equal(rhythm_p99(&r), 0);
	rhythm_moved(&r, SEC + RHYTHM_WARM * 100 * MSEC, 1, 0);
	assert_int_equal(rhythm_p99(&r), 100 * MSEC);
	/* a move not after the last is no gap */
	rhythm_moved(&r, SEC, 1, 0);
	assert_int_equal(r.n, RHYTHM_WARM);
	/* then ten collectives a tick: 10 ms each, once the average has followed */
	for (int i = 1; i <= 40; i++)
		rhythm_moved(&r, 3 * SEC + (uint64_t)i * 100 * MSEC, 10, 0);
	assert_true(r.every_ns >= 10 * MSEC && r.every_ns <= 15 * MSEC);
}

static void test_rhythm_change(void **state)
{
	struct rhythm r = {0};
	uint64_t t;

	(void)state;
	/* a phase of training at 100 ms, then a slower one at 500 ms */
	t = moves(&r, SEC, 100 * MSEC, 200);
	assert_int_equal(rhythm_p99(&r), 100 * MSEC);
	t = moves(&r, t + 500 * MSEC, 500 * MSEC, 3);
	/* three slow gaps among 128: p99 is slow at once (errs long) */
	assert_int_equal(rhythm_p99(&r), 500 * MSEC);
	/* and back: the slow gaps leave the window after RHYTHM_GAPS new ones */
	moves(&r, t + 100 * MSEC, 100 * MSEC, RHYTHM_GAPS);
	assert_int_equal(rhythm_p99(&r), 100 * MSEC);
}

static void test_burst_after_pause(void **state)
{
	struct rhythm r = {0};
	uint64_t t;

	(void)state;
	t = moves(&r, SEC, 100 * MSEC, 100);
	/* one 3 s pause (an evaluation), then the burst: one gap in 100 is the 1 % let pass */
	t = moves(&r, t + 3 * SEC, 100 * MSEC, 30);
	assert_int_equal(rhythm_p99(&r), 100 * MSEC);
	/* a second pause within the window: pauses are part of the rhythm */
	moves(&r, t + 3 * SEC, 100 * MSEC, 5);
	assert_int_equal(rhythm_p99(&r), 3 * SEC);
}

static void test_seen_counts(void **state)
{
	struct rhythm r = {0};

	(void)state;
	rhythm_seen(&r, SEC, 100, 1, 100 * MSEC);
	rhythm_seen(&r, SEC + 100 * MSEC, 100, 2, 100 * MSEC); /* no move */
	rhythm_seen(&r, SEC + 200 * MSEC, 120, 3, 100 * MSEC);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.gap[0], 200 * 1000);
	assert_int_equal(r.every_ns, 10 * MSEC);
	/* at the next tick again, 130 ms later by a late tick: one tick apart */
	rhythm_seen(&r, SEC + 330 * MSEC, 121, 4, 100 * MSEC);
	assert_int_equal(r.gap[1], 100 * 1000);
	/* a count that went back is a new communicator: its clock starts again */
	rhythm_seen(&r, SEC + 500 * MSEC, 5, 6, 100 * MSEC);
	assert_int_equal(r.n, 2);
	rhythm_seen(&r, SEC + 800 * MSEC, 6, 9, 100 * MSEC);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.gap[2], 300 * 1000);
}

static void test_table(void **state)
{
	struct rhythms t = {0};
	struct rhythm *a;

	(void)state;
	assert_null(rhythms_get(&t, 0));
	/* many keys: the table grows and keeps each rhythm */
	for (uint64_t k = 1; k <= 1000; k++)
		rhythms_get(&t, k)->last_ns = k;
	assert_int_equal(t.n, 1000);
	for (uint64_t k = 1; k <= 1000; k++)
		assert_int_equal(rhythms_get(&t, k)->last_ns, k);
	rhythms_sweep(&t);
	/* only what is asked for in a round stays past the next sweep */
	for (uint64_t k = 1; k <= 10; k++)
		rhythms_get(&t, k);
	rhythms_sweep(&t);
	assert_int_equal(t.n, 10);
	a = rhythms_get(&t, 7);
	assert_int_equal(a->last_ns, 7);
	assert_int_equal(rhythms_get(&t, 500)->last_ns, 0);
	assert_int_not_equal(rhythm_comm_key(1, 0x9f3c), rhythm_comm_key(2, 0x9f3c));
	assert_int_not_equal(rhythm_comm_key(0, 0), 0);
	rhythms_free(&t);
}

static void test_threshold(void **state)
{
	struct diag_config c = adaptive();

	(void)state;
	assert_int_equal(diag_threshold(&c, 0), 5 * SEC);	       /* learning */
	assert_int_equal(diag_threshold(&c, 20 * MSEC), SEC);	       /* the floor */
	assert_int_equal(diag_threshold(&c, 230 * MSEC), 2300 * MSEC); /* k x p99 */
	assert_int_equal(diag_threshold(&c, 2 * SEC), 5 * SEC);	       /* the ceiling */
	c.min_threshold_ns = 10 * SEC;				       /* a floor above -t: -t */
	assert_int_equal(diag_threshold(&c, 20 * MSEC), 5 * SEC);
	c = adaptive();
	c.adapt_k = 0; /* --fixed-threshold */
	assert_int_equal(diag_threshold(&c, 20 * MSEC), 5 * SEC);
}

/* a 4-rank NVLink job whose AllReduces ran every 20 ms until rank 2 stopped 1.5 s ago */
static struct world *fast_comm_stopped(void)
{
	struct world *w = nvlink_job(4, 1000, NOW - 1500 * MSEC);

	for (int r = 0; r < 4; r++) {
		comm_store[r].gap_p99_ns = 100 * MSEC;
		comm_store[r].every_ns = 20 * MSEC;
	}
	comm_store[2].seq[AR] = 999;
	w->procs[2].state = 'S';
	return w;
}

static void test_fast_comm_named_early(void **state)
{
	struct diag_config c = adaptive();
	struct world *w = fast_comm_stopped();
	struct finding out[MAX_OUT];

	(void)state;
	memset(out, 0, sizeof(out));
	assert_int_equal(diagnose(&w->s, &c, out, MAX_OUT), 1);
	assert_int_equal(out[0].rank, 2);
	assert_int_equal(out[0].threshold_ns, SEC);
	assert_true(out[0].early);
	assert_contains(out[0].threshold_why, "1.0 s: collectives every 20 ms (p99 gap 100 ms)");
	assert_true(evidence_has(&out[0], "threshold 1.0 s: collectives every 20 ms"));
	/* one member still learning: the slowest rhythm decides, -t, nothing at 1.5 s */
	comm_store[3].gap_p99_ns = 0;
	assert_int_equal(diagnose(&w->s, &c, out, MAX_OUT), 0);
	/* --fixed-threshold: -t, nothing at 1.5 s */
	comm_store[3].gap_p99_ns = 100 * MSEC;
	c.adapt_k = 0;
	assert_int_equal(diagnose(&w->s, &c, out, MAX_OUT), 0);
	/* a pause on every rank (all equal): nobody waits, nothing, however fast the rhythm */
	c = adaptive();
	comm_store[2].seq[AR] = 1000;
	assert_int_equal(diagnose(&w->s, &c, out, MAX_OUT), 0);
	/* past -t the same finding is sure */
	comm_store[2].seq[AR] = 999;
	for (int r = 0; r < 4; r++)
		comm_store[r].changed_ns = NOW - 6 * SEC;
	assert_int_equal(diagnose(&w->s, &c, out, MAX_OUT), 1);
	assert_false(out[0].early);
	free(w);
}

static void test_fast_ring_named_early(void **state)
{
	struct diag_config c = adaptive();
	struct world *w = world_new();
	struct finding out[MAX_OUT];

	(void)state;
	/* rank 1 of a ring that moved data every 10 ms stopped 1.5 s ago; rank 2 spins on it */
	ring(w, 3, NOW - 1500 * MSEC);
	for (int i = 0; i < w->s.nconns; i++)
		w->conns[i].gap_p99_ns = 100 * MSEC;
	spin(&w->conns[w->recv_conn[2]]);
	w->procs[1].state = 'S';
	w->procs[1].cpu_busy_ns = 0;
	snprintf(w->procs[1].where, sizeof(w->procs[1].where), "clock_nanosleep");
	memset(out, 0, sizeof(out));
	assert_int_equal(diagnose(&w->s, &c, out, MAX_OUT), 1);
	assert_int_equal(out[0].rank, 1);
	assert_true(out[0].early);
	assert_int_equal(out[0].threshold_ns, SEC);
	assert_contains(out[0].threshold_why, "data every");
	/* the connection still learning: -t */
	for (int i = 0; i < w->s.nconns; i++)
		w->conns[i].gap_p99_ns = 0;
	assert_int_equal(diagnose(&w->s, &c, out, MAX_OUT), 0);
	free(w);
}

struct told {
	int open, update, close, transient;
};

static void count_cb(void *ctx, enum finding_event ev, const struct tracked_finding *t)
{
	struct told *k = ctx;

	k->open += ev == FINDING_OPEN;
	k->update += ev == FINDING_UPDATE;
	k->close += ev == FINDING_CLOSE;
	k->transient += ev == FINDING_CLOSE && t->transient;
}

static void test_early_sure_transient(void **state)
{
	struct findings fs;
	struct finding f = {.kind = FINDING_STALL, .early = true};
	struct told k = {0};
	json_t *j;

	(void)state;
	findings_init(&fs, SEC, 5 * SEC);
	snprintf(f.key, sizeof(f.key), "stall:pid:7");
	/* opens early, the rank goes on at once: transient */
	findings_update(&fs, &f, 1, NOW, count_cb, &k);
	findings_update(&fs, NULL, 0, NOW + 2 * SEC, count_cb, &k);
	assert_int_equal(k.open, 1);
	assert_int_equal(k.transient, 1);
	assert_int_equal(fs.ntransient, 1);
	j = finding_to_json(&fs.v[0], FINDING_CLOSE, NOW + 2 * SEC, NULL);
	assert_true(json_is_true(json_object_get(j, "transient")));
	assert_true(json_is_true(json_object_get(j, "early")));
	json_decref(j);
	/* opens early, outlives -t: told at once as sure, and never transient */
	snprintf(f.key, sizeof(f.key), "stall:pid:8");
	findings_update(&fs, &f, 1, NOW + 3 * SEC, count_cb, &k);
	f.early = false;
	findings_update(&fs, &f, 1, NOW + 3 * SEC + 200 * MSEC, count_cb, &k);
	assert_int_equal(k.update, 1);
	findings_update(&fs, NULL, 0, NOW + 10 * SEC, count_cb, &k);
	assert_int_equal(k.close, 2);
	assert_int_equal(k.transient, 1);
	j = finding_to_json(&fs.v[1], FINDING_CLOSE, NOW + 10 * SEC, NULL);
	assert_true(json_is_false(json_object_get(j, "transient")));
	assert_true(json_is_false(json_object_get(j, "early")));
	json_decref(j);
	findings_free(&fs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_warm_up),
		cmocka_unit_test(test_rhythm_change),
		cmocka_unit_test(test_burst_after_pause),
		cmocka_unit_test(test_seen_counts),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_threshold),
		cmocka_unit_test(test_fast_comm_named_early),
		cmocka_unit_test(test_fast_ring_named_early),
		cmocka_unit_test(test_early_sure_transient),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
