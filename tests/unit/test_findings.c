// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include "diagnose/findings.h"

#define SEC NT_NSEC_PER_SEC

/* What the callback heard. */
struct heard {
	int n;
	struct {
		enum finding_event ev;
		int id;
		char key[96];
		uint64_t since_ns;
		bool open;
	} e[128];
};

static void record(void *ctx, enum finding_event ev, const struct tracked_finding *t)
{
	struct heard *h = ctx;

	assert_true(h->n < 128);
	h->e[h->n].ev = ev;
	h->e[h->n].id = t->id;
	snprintf(h->e[h->n].key, sizeof(h->e[h->n].key), "%s", t->f.key);
	h->e[h->n].since_ns = t->f.since_ns;
	h->e[h->n].open = t->open;
	h->n++;
}

static struct finding mk(const char *key, uint64_t since)
{
	struct finding f;

	memset(&f, 0, sizeof(f));
	f.kind = FINDING_STALL;
	snprintf(f.key, sizeof(f.key), "%s", key);
	f.pid = 101;
	f.rank = 1;
	f.peer_pid = 102;
	f.peer_rank = 2;
	f.conn = -1;
	f.since_ns = since;
	return f;
}

static const struct tracked_finding *tracked(const struct findings *fs, const char *key)
{
	const struct tracked_finding *last = NULL;

	for (int i = 0; i < fs->n; i++)
		if (strcmp(fs->v[i].f.key, key) == 0)
			last = &fs->v[i];
	return last;
}

static void test_open_on_first_report(void **state)
{
	struct findings fs;
	struct heard h = {0};
	struct finding f = mk("stall:pid:101", 5 * SEC);

	(void)state;
	findings_init(&fs, 3 * SEC, 5 * SEC);
	assert_int_equal(findings_open_count(&fs), 0);
	findings_update(&fs, &f, 1, 10 * SEC, record, &h);
	assert_int_equal(h.n, 1);
	assert_int_equal(h.e[0].ev, FINDING_OPEN);
	assert_int_equal(h.e[0].id, 1);
	assert_string_equal(h.e[0].key, "stall:pid:101");
	assert_true(h.e[0].open);
	assert_int_equal(findings_open_count(&fs), 1);
	assert_true(tracked(&fs, "stall:pid:101")->opened_ns == 10 * SEC);
	/* nothing reported: nothing heard */
	findings_update(&fs, NULL, 0, 10 * SEC + 1, record, &h);
	assert_int_equal(h.n, 1);
	findings_free(&fs);
}

static void test_update_interval(void **state)
{
	struct findings fs;
	struct heard h = {0};
	struct finding f = mk("stall:pid:101", 5 * SEC);

	(void)state;
	findings_init(&fs, 3 * SEC, 5 * SEC);
	findings_update(&fs, &f, 1, 10 * SEC, record, &h);
	for (uint64_t t = 11; t <= 14; t++)
		findings_update(&fs, &f, 1, t * SEC, record, &h);
	/* still only the open */
	assert_int_equal(h.n, 1);
	findings_update(&fs, &f, 1, 15 * SEC, record, &h);
	assert_int_equal(h.n, 2);
	assert_int_equal(h.e[1].ev, FINDING_UPDATE);
	assert_int_equal(h.e[1].id, 1);
	/* and the next one five seconds after that one */
	findings_update(&fs, &f, 1, 19 * SEC, record, &h);
	assert_int_equal(h.n, 2);
	findings_update(&fs, &f, 1, 20 * SEC, record, &h);
	assert_int_equal(h.n, 3);
	assert_int_equal(h.e[2].ev, FINDING_UPDATE);
	assert_int_equal(findings_open_count(&fs), 1);
	findings_free(&fs);
}

static void test_update_takes_new_content(void **state)
{
	struct findings fs;
	struct heard h = {0};
	struct finding f = mk("stall:pid:101", 5 * SEC);

	(void)state;
	findings_init(&fs, 3 * SEC, 5 * SEC);
	findings_update(&fs, &f, 1, 10 * SEC, record, &h);
	f.nwaiters = 3;
	snprintf(f.summary, sizeof(f.summary), "now three wait");
	findings_update(&fs, &f, 1, 11 * SEC, record, &h);
	assert_int_equal(tracked(&fs, "stall:pid:101")->f.nwaiters, 3);
	assert_string_equal(tracked(&fs, "stall:pid:101")->f.summary, "now three wait");
	assert_true(tracked(&fs, "stall:pid:101")->last_seen_ns == 11 * SEC);
	findings_free(&fs);
}

static void test_since_never_later(void **state)
{
	struct findings fs;
	struct heard h = {0};
	struct finding f = mk("stall:pid:101", 5 * SEC);

	(void)state;
	findings_init(&fs, 3 * SEC, 1 * SEC);
	findings_update(&fs, &f, 1, 10 * SEC, record, &h);
	/* a later estimate of the start does not move it */
	f.since_ns = 7 * SEC;
	findings_update(&fs, &f, 1, 11 * SEC, record, &h);
	assert_true(tracked(&fs, "stall:pid:101")->f.since_ns == 5 * SEC);
	assert_int_equal(h.n, 2);
	assert_true(h.e[1].since_ns == 5 * SEC);
	/* an earlier one does */
	f.since_ns = 3 * SEC;
	findings_update(&fs, &f, 1, 12 * SEC, record, &h);
	assert_true(tracked(&fs, "stall:pid:101")->f.since_ns == 3 * SEC);
	f.since_ns = 9 * SEC;
	findings_update(&fs, &f, 1, 13 * SEC, record, &h);
	assert_true(tracked(&fs, "stall:pid:101")->f.since_ns == 3 * SEC);
	findings_free(&fs);
}

static void test_close_after_absent(void **state)
{
	struct findings fs;
	struct heard h = {0};
	struct finding f = mk("stall:pid:101", 5 * SEC);

	(void)state;
	findings_init(&fs, 3 * SEC, 5 * SEC);
	findings_update(&fs, &f, 1, 10 * SEC, record, &h);
	findings_update(&fs, NULL, 0, 11 * SEC, record, &h);
	findings_update(&fs, NULL, 0, 12 * SEC, record, &h);
	findings_update(&fs, NULL, 0, 13 * SEC - 1, record, &h);
	assert_int_equal(h.n, 1);
	assert_int_equal(findings_open_count(&fs), 1);
	findings_update(&fs, NULL, 0, 13 * SEC, record, &h);
	assert_int_equal(h.n, 2);
	assert_int_equal(h.e[1].ev, FINDING_CLOSE);
	assert_int_equal(h.e[1].id, 1);
	assert_false(h.e[1].open);
	assert_int_equal(findings_open_count(&fs), 0);
	/* closed once */
	findings_update(&fs, NULL, 0, 20 * SEC, record, &h);
	assert_int_equal(h.n, 2);

	/* seen again in time, it stays open */
	findings_free(&fs);
	findings_init(&fs, 3 * SEC, 5 * SEC);
	h.n = 0;
	for (uint64_t t = 10; t < 30; t += 2)
		findings_update(&fs, &f, 1, t * SEC, record, &h);
	assert_int_equal(findings_open_count(&fs), 1);
	for (int i = 0; i < h.n; i++)
		assert_int_not_equal(h.e[i].ev, FINDING_CLOSE);
	findings_free(&fs);
}

static void test_reopen_gets_new_id(void **state)
{
	struct findings fs;
	struct heard h = {0};
	struct finding f = mk("stall:pid:101", 5 * SEC);

	(void)state;
	findings_init(&fs, 3 * SEC, 5 * SEC);
	findings_update(&fs, &f, 1, 10 * SEC, record, &h);
	findings_update(&fs, NULL, 0, 20 * SEC, record, &h);
	assert_int_equal(h.e[1].ev, FINDING_CLOSE);
	f.since_ns = 25 * SEC;
	findings_update(&fs, &f, 1, 30 * SEC, record, &h);
	assert_int_equal(h.n, 3);
	assert_int_equal(h.e[2].ev, FINDING_OPEN);
	assert_int_equal(h.e[2].id, 2);
	/* a new condition: its own start, not the old one's */
	assert_true(h.e[2].since_ns == 25 * SEC);
	assert_int_equal(findings_open_count(&fs), 1);
	findings_free(&fs);
}

static void test_several_findings(void **state)
{
	struct findings fs;
	struct heard h = {0};
	struct finding f[40];
	char key[32];

	(void)state;
	findings_init(&fs, 3 * SEC, 5 * SEC);
	/* more than the first allocation holds */
	for (int i = 0; i < 40; i++) {
		snprintf(key, sizeof(key), "stall:pid:%d", 1000 + i);
		f[i] = mk(key, SEC);
	}
	findings_update(&fs, f, 40, 10 * SEC, record, &h);
	assert_int_equal(h.n, 40);
	for (int i = 0; i < 40; i++) {
		snprintf(key, sizeof(key), "stall:pid:%d", 1000 + i);
		assert_int_equal(h.e[i].ev, FINDING_OPEN);
		assert_int_equal(h.e[i].id, i + 1);
		assert_string_equal(h.e[i].key, key);
		assert_int_equal(tracked(&fs, key)->id, i + 1);
	}
	assert_int_equal(findings_open_count(&fs), 40);
	/* only the first ten go on: the other thirty close */
	h.n = 0;
	findings_update(&fs, f, 10, 12 * SEC, record, &h);
	assert_int_equal(h.n, 0);
	findings_update(&fs, f, 10, 13 * SEC, record, &h);
	assert_int_equal(h.n, 30);
	for (int i = 0; i < 30; i++) {
		assert_int_equal(h.e[i].ev, FINDING_CLOSE);
		assert_int_equal(h.e[i].id, 11 + i);
	}
	assert_int_equal(findings_open_count(&fs), 10);
	findings_free(&fs);
	assert_int_equal(fs.n, 0);
	assert_null(fs.v);
}

static void test_close_all(void **state)
{
	struct findings fs;
	struct heard h = {0};
	struct finding f[3] = {mk("a", SEC), mk("b", SEC), mk("c", SEC)};

	(void)state;
	findings_init(&fs, 3 * SEC, 5 * SEC);
	findings_update(&fs, f, 3, 10 * SEC, record, &h);
	/* one of them closed already */
	findings_update(&fs, f, 2, 12 * SEC, record, &h);
	findings_update(&fs, f, 2, 13 * SEC, record, &h);
	assert_int_equal(findings_open_count(&fs), 2);
	h.n = 0;
	findings_close_all(&fs, 14 * SEC, record, &h);
	assert_int_equal(h.n, 2);
	assert_int_equal(h.e[0].ev, FINDING_CLOSE);
	assert_string_equal(h.e[0].key, "a");
	assert_int_equal(h.e[1].ev, FINDING_CLOSE);
	assert_string_equal(h.e[1].key, "b");
	assert_int_equal(findings_open_count(&fs), 0);
	findings_close_all(&fs, 15 * SEC, record, &h);
	assert_int_equal(h.n, 2);
	findings_free(&fs);
}

static void test_event_names(void **state)
{
	(void)state;
	assert_string_equal(finding_event_name(FINDING_OPEN), "open");
	assert_string_equal(finding_event_name(FINDING_UPDATE), "update");
	assert_string_equal(finding_event_name(FINDING_CLOSE), "close");
}

static void test_to_json_contract(void **state)
{
	struct tracked_finding t;
	json_t *o, *v;

	(void)state;
	memset(&t, 0, sizeof(t));
	t.id = 7;
	t.open = true;
	t.opened_ns = 12 * SEC;
	t.last_seen_ns = 14 * SEC;
	t.f = mk("stall:pid:101", 10 * SEC);
	snprintf(t.f.phase, sizeof(t.f.phase), "sleeping in clock_nanosleep");
	snprintf(t.f.summary, sizeof(t.f.summary), "rank 1 (pid 101) is sleeping");
	snprintf(t.f.evidence[0], sizeof(t.f.evidence[0]), "/proc/101/stat state S");
	snprintf(t.f.evidence[1], sizeof(t.f.evidence[1]), "rank 2 waits");
	t.f.nevidence = 2;
	t.f.waiters[0] = (struct finding_waiter){102, 2};
	t.f.waiters[1] = (struct finding_waiter){103, 3};
	t.f.nwaiters = 2;
	t.f.nsettings = 2;
	snprintf(t.f.settings[0].name, sizeof(t.f.settings[0].name), "NCCL_SOCKET_IFNAME");
	snprintf(t.f.settings[0].source, sizeof(t.f.settings[0].source), "read");
	snprintf(t.f.settings[0].value, sizeof(t.f.settings[0].value), "eth0");
	snprintf(t.f.settings[0].ranks, sizeof(t.f.settings[0].ranks), "rank 0 eth0, rank 1 eth1");
	snprintf(t.f.settings[1].name, sizeof(t.f.settings[1].name), "NCCL_NET");
	snprintf(t.f.settings[1].source, sizeof(t.f.settings[1].source), "unset");
	t.f.nhyp = 1;
	snprintf(t.f.hypotheses[0], sizeof(t.f.hypotheses[0]), "NCCL_SOCKET_IFNAME differs");
	t.f.comm_hash = 0x9f3c;

	o = finding_to_json(&t, FINDING_OPEN, 12500 * (SEC / 1000), "127.0.0.1:1->127.0.0.1:2");
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "kind")), "stall");
	assert_true(json_is_integer(json_object_get(o, "rank")));
	assert_int_equal(json_integer_value(json_object_get(o, "rank")), 1);
	assert_int_equal(json_integer_value(json_object_get(o, "peer_rank")), 2);
	assert_int_equal(json_integer_value(json_object_get(o, "pid")), 101);
	assert_int_equal(json_integer_value(json_object_get(o, "peer_pid")), 102);
	assert_string_equal(json_string_value(json_object_get(o, "phase")),
			    "sleeping in clock_nanosleep");
	v = json_object_get(o, "since_s");
	assert_true(json_is_number(v));
	assert_true(fabs(json_number_value(v) - 2.5) < 1e-9);
	assert_string_equal(json_string_value(json_object_get(o, "summary")),
			    "rank 1 (pid 101) is sleeping");
	v = json_object_get(o, "evidence");
	assert_true(json_is_array(v));
	assert_int_equal(json_array_size(v), 2);
	assert_string_equal(json_string_value(json_array_get(v, 0)), "/proc/101/stat state S");
	assert_string_equal(json_string_value(json_array_get(v, 1)), "rank 2 waits");
	v = json_object_get(o, "settings");
	assert_true(json_is_object(v));
	assert_int_equal(json_object_size(v), 2);
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(v, "NCCL_SOCKET_IFNAME"), "value")),
			    "eth0");
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(v, "NCCL_SOCKET_IFNAME"), "ranks")),
			    "rank 0 eth0, rank 1 eth1");
	/* unset: NCCL decides at run time, value null; no ranks when they agree */
	assert_true(json_is_null(json_object_get(json_object_get(v, "NCCL_NET"), "value")));
	assert_null(json_object_get(json_object_get(v, "NCCL_NET"), "ranks"));
	v = json_object_get(o, "hypotheses");
	assert_int_equal(json_array_size(v), 1);
	assert_string_equal(json_string_value(json_array_get(v, 0)), "NCCL_SOCKET_IFNAME differs");
	assert_string_equal(json_string_value(json_object_get(o, "comm_hash")), "0000000000009f3c");
	assert_int_equal(json_integer_value(json_object_get(o, "id")), 7);
	assert_string_equal(json_string_value(json_object_get(o, "event")), "open");
	assert_string_equal(json_string_value(json_object_get(o, "type")), "finding");
	assert_string_equal(json_string_value(json_object_get(o, "conn")),
			    "127.0.0.1:1->127.0.0.1:2");
	v = json_object_get(o, "waiters");
	assert_int_equal(json_array_size(v), 2);
	assert_int_equal(json_integer_value(json_array_get(v, 1)), 103);
	json_decref(o);
}

static void test_to_json_nulls_and_close(void **state)
{
	struct tracked_finding t;
	json_t *o, *v;

	(void)state;
	memset(&t, 0, sizeof(t));
	t.id = 3;
	t.last_seen_ns = 20 * SEC;
	t.f = mk("conn_error:addr:10.0.0.2:29500", 10 * SEC);
	t.f.kind = FINDING_CONN_ERROR;
	t.f.pid = 0;
	t.f.rank = -1;
	t.f.peer_pid = 0;
	t.f.peer_rank = -1;

	/* closed: since_s runs to the last time it was seen, not to now */
	o = finding_to_json(&t, FINDING_CLOSE, 100 * SEC, NULL);
	assert_string_equal(json_string_value(json_object_get(o, "kind")), "conn_error");
	assert_string_equal(json_string_value(json_object_get(o, "event")), "close");
	assert_true(json_is_null(json_object_get(o, "rank")));
	assert_true(json_is_null(json_object_get(o, "peer_rank")));
	assert_true(json_is_null(json_object_get(o, "pid")));
	assert_true(json_is_null(json_object_get(o, "peer_pid")));
	assert_true(json_is_null(json_object_get(o, "conn")));
	v = json_object_get(o, "since_s");
	assert_true(json_is_number(v));
	assert_true(fabs(json_number_value(v) - 10.0) < 1e-9);
	v = json_object_get(o, "evidence");
	assert_true(json_is_array(v));
	assert_int_equal(json_array_size(v), 0);
	v = json_object_get(o, "settings");
	assert_true(json_is_object(v));
	assert_int_equal(json_object_size(v), 0);
	assert_int_equal(json_array_size(json_object_get(o, "hypotheses")), 0);
	assert_null(json_object_get(o, "comm_hash"));
	assert_true(json_is_string(json_object_get(o, "phase")));
	assert_true(json_is_string(json_object_get(o, "summary")));
	json_decref(o);

	/* a since in the future is 0, not a huge number */
	t.f.since_ns = 30 * SEC;
	o = finding_to_json(&t, FINDING_UPDATE, 25 * SEC, NULL);
	assert_true(json_number_value(json_object_get(o, "since_s")) == 0);
	/* rank 0 is a rank, not null */
	json_decref(o);
	t.f.rank = 0;
	t.f.peer_rank = 0;
	o = finding_to_json(&t, FINDING_UPDATE, 25 * SEC, NULL);
	assert_true(json_is_integer(json_object_get(o, "rank")));
	assert_int_equal(json_integer_value(json_object_get(o, "rank")), 0);
	assert_true(json_is_integer(json_object_get(o, "peer_rank")));
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_on_first_report),
		cmocka_unit_test(test_update_interval),
		cmocka_unit_test(test_update_takes_new_content),
		cmocka_unit_test(test_since_never_later),
		cmocka_unit_test(test_close_after_absent),
		cmocka_unit_test(test_reopen_gets_new_id),
		cmocka_unit_test(test_several_findings),
		cmocka_unit_test(test_close_all),
		cmocka_unit_test(test_event_names),
		cmocka_unit_test(test_to_json_contract),
		cmocka_unit_test(test_to_json_nulls_and_close),
	};

	return cmocka_run_group_tests_name("findings", tests, NULL, NULL);
}
