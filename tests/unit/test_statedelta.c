// SPDX-License-Identifier: MIT
/*
 * /state as what changed (present/statedelta.c): a server's answers to ?since= read back by a
 * client are the pages themselves; a client the server does not know starts from a whole page;
 * a delta against a page the client lacks is refused, not guessed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/snapjson.h"
#include "present/statedelta.h"

/* a page of seq: n conns of which those below moved have moved bytes */
static json_t *page(int seq, int n, int moved, json_int_t bytes)
{
	json_t *conns = json_array(), *procs = json_array();

	for (int i = 0; i < n; i++)
		json_array_append_new(conns,
				      json_pack("{s:i,s:I,s:s}", "pid", 100 + i % 4, "bytes_sent",
						i < moved ? bytes : (json_int_t)i, "src",
						"127.0.0.1:4000"));
	for (int i = 0; i < 4; i++)
		json_array_append_new(procs, json_pack("{s:i,s:i}", "pid", 100 + i, "rank", i));
	return json_pack("{s:i,s:i,s:s,s:[],s:{s:I,s:o,s:o,s:[]}}", "nccltrace_state", 1, "seq",
			 seq, "host", "n1", "findings", "state", "now_ns",
			 (json_int_t)1000000000 * seq, "procs", procs, "conns", conns, "comms");
}

/* the answer as a client reads it: parsed, made whole */
static json_t *read_back(struct delta_dec *dec, const char *body, bool *was_delta)
{
	json_t *o = json_loads(body, 0, NULL);
	char err[200];

	assert_non_null(o);
	*was_delta = json_is_true(json_object_get(o, "delta"));
	if (state_delta_take(dec, o, err, sizeof(err))) {
		print_error("take: %s\n", err);
		fail();
	}
	return o;
}

static void test_round_trip(void **st)
{
	struct state_deltas *d = state_deltas_new();
	struct delta_dec *dec = delta_dec_new();
	uint64_t since = 0;
	bool delta;

	(void)st;
	for (int seq = 1; seq <= 6; seq++) {
		json_t *p = page(seq, 40, 3, 1000 * seq), *got;
		char *body = state_deltas_answer(d, p, since);

		assert_non_null(body);
		got = read_back(dec, body, &delta);
		/* the first whole (nobody known at 0), each next a delta of the 3 that moved */
		assert_int_equal(delta, seq > 1);
		if (seq > 1)
			assert_true(strlen(body) < 600);
		assert_true(json_equal(got, p));
		since = (uint64_t)json_integer_value(json_object_get(got, "seq"));
		free(body);
		json_decref(got);
		json_decref(p);
	}
	delta_dec_free(dec);
	state_deltas_free(d);
}

/* two clients at two places, and one the server has forgotten */
static void test_clients(void **st)
{
	struct state_deltas *d = state_deltas_new();
	struct delta_dec *a = delta_dec_new(), *b = delta_dec_new(), *c = delta_dec_new();
	json_t *p1 = page(1, 10, 2, 5), *p2 = page(2, 10, 2, 6), *p3 = page(3, 10, 5, 7), *g;
	char *s;
	bool delta;

	(void)st;
	s = state_deltas_answer(d, p1, 0); /* a: whole p1 */
	g = read_back(a, s, &delta);
	json_decref(g);
	free(s);
	s = state_deltas_answer(d, p2, 0); /* b: whole p2 */
	g = read_back(b, s, &delta);
	json_decref(g);
	free(s);
	/* a from 1 to 3, b from 2 to 3: each its own delta, each right */
	s = state_deltas_answer(d, p3, 1);
	g = read_back(a, s, &delta);
	assert_true(delta && json_equal(g, p3));
	json_decref(g);
	free(s);
	s = state_deltas_answer(d, p3, 2);
	g = read_back(b, s, &delta);
	assert_true(delta && json_equal(g, p3));
	json_decref(g);
	free(s);
	/* a seq nobody stands at: the whole page */
	s = state_deltas_answer(d, p3, 77);
	g = read_back(c, s, &delta);
	assert_false(delta);
	assert_true(json_equal(g, p3));
	json_decref(g);
	free(s);
	json_decref(p1);
	json_decref(p2);
	json_decref(p3);
	delta_dec_free(a);
	delta_dec_free(b);
	delta_dec_free(c);
	state_deltas_free(d);
}

/* more clients than it keeps places for: the oldest starts again from a whole page */
static void test_forgets_oldest(void **st)
{
	struct state_deltas *d = state_deltas_new();
	char *s;

	(void)st;
	for (int seq = 1; seq <= STATEDELTA_BASES + 1; seq++) {
		json_t *p = page(seq, 8, 1, seq);

		free(state_deltas_answer(d, p, 0));
		json_decref(p);
	}
	{
		json_t *p = page(50, 8, 1, 50), *o;

		s = state_deltas_answer(d, p, 1);
		o = json_loads(s, 0, NULL);
		assert_false(json_is_true(json_object_get(o, "delta")));
		free(s);
		json_decref(o);
		s = state_deltas_answer(d, p, STATEDELTA_BASES + 1);
		o = json_loads(s, 0, NULL);
		assert_true(json_is_true(json_object_get(o, "delta")));
		free(s);
		json_decref(o);
		json_decref(p);
	}
	state_deltas_free(d);
}

/* a delta the client has no base for, or whose references overrun it: refused */
static void test_refused(void **st)
{
	struct delta_dec *dec = delta_dec_new();
	char err[200];
	json_t *o = json_loads("{\"seq\":5,\"delta\":true,\"since\":4,\"state\":{\"now_ns\":1,"
			       "\"procs\":[0],\"conns\":[],\"comms\":[]}}",
			       0, NULL);

	(void)st;
	assert_int_equal(state_delta_take(dec, o, err, sizeof(err)), -1);
	json_decref(o);
	o = json_loads("{\"seq\":6,\"state\":{\"now_ns\":2,\"procs\":[{\"pid\":1}],\"conns\":[],"
		       "\"comms\":[]}}",
		       0, NULL);
	assert_int_equal(state_delta_take(dec, o, err, sizeof(err)), 0);
	json_decref(o);
	o = json_loads("{\"seq\":7,\"delta\":true,\"since\":6,\"state\":{\"now_ns\":3,"
		       "\"procs\":[[0,2]],\"conns\":[],\"comms\":[]}}",
		       0, NULL);
	assert_int_equal(state_delta_take(dec, o, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "refers to"));
	json_decref(o);
	/* no seq (an agent's page): left as it is */
	o = json_loads("{\"jobs\":[]}", 0, NULL);
	assert_int_equal(state_delta_take(dec, o, err, sizeof(err)), 0);
	json_decref(o);
	assert_int_equal(state_since("12"), 12);
	assert_int_equal(state_since("12x"), 0);
	assert_int_equal(state_since("-3"), 0);
	assert_int_equal(state_since(NULL), 0);
	delta_dec_free(dec);
}

/* a connection element: its times, bytes and label */
static json_t *conn_el(int port, json_int_t t, json_int_t bytes, const char *label)
{
	char src[32];

	snprintf(src, sizeof(src), "127.0.0.1:%d", port);
	return json_pack("{s:i,s:I,s:I,s:I,s:i,s:s,s:s,s:s?}", "pid", 100 + port % 7, "bytes_sent",
			 bytes, "first_ns", t, "last_send_ns", t + 5, "family", 2, "src", src,
			 "dst", "127.0.0.1:9", "nccl_label", label);
}

static json_t *snap_of(json_t *conns, json_int_t now)
{
	return json_pack("{s:I,s:[],s:o,s:[]}", "now_ns", now, "procs", "conns", conns, "comms");
}

/* conn i of a and b the same, field for field, label for label */
static void same_conns(const struct snapstore *a, const struct snapstore *b)
{
	assert_int_equal(a->s.nconns, b->s.nconns);
	for (int i = 0; i < a->s.nconns; i++) {
		struct snap_conn x = a->s.conns[i], y = b->s.conns[i];

		assert_true((x.nccl_label == NULL) == (y.nccl_label == NULL));
		if (x.nccl_label)
			assert_string_equal(x.nccl_label, y.nccl_label);
		x.nccl_label = y.nccl_label = NULL;
		assert_memory_equal(&x, &y, sizeof(x));
	}
}

/*
 * watch's reading of a host's pages round after round: the connections a page shares with the
 * last (the same objects, as a page of what changed makes them) taken from the last read, their
 * times moved to this round's shift, are what reading the page afresh gives
 */
static void test_cached_parse(void **st)
{
	struct snapjson_cache cache = {0};
	json_t *c1 = json_array(), *c2 = json_array(), *o1, *o2;
	struct snapstore *r1, *r2, *fresh;
	char err[128];

	(void)st;
	for (int i = 0; i < 4; i++)
		json_array_append_new(c1,
				      conn_el(4000 + i, 1000 + i, 10 * i, i % 2 ? "net" : NULL));
	o1 = snap_of(json_incref(c1), 5000);
	r1 = snapjson_parse_cached(o1, 70, &cache, err, sizeof(err));
	assert_non_null(r1);
	assert_int_equal(cache.n, 4);
	/* the next page: conns 0, 1 and 3 the same objects, conn 2 new */
	json_array_append(c2, json_array_get(c1, 0));
	json_array_append(c2, json_array_get(c1, 1));
	json_array_append_new(c2, conn_el(4002, 1002, 99, "bootstrap"));
	json_array_append(c2, json_array_get(c1, 3));
	o2 = snap_of(json_incref(c2), 6000);
	r2 = snapjson_parse_cached(o2, -30, &cache, err, sizeof(err));
	snapstore_free(r1); /* the cache's strings were in it: r2 has its own */
	fresh = snapjson_parse(o2, -30, err, sizeof(err));
	assert_non_null(r2);
	assert_non_null(fresh);
	same_conns(r2, fresh);
	assert_int_equal(r2->s.conns[0].c.first_ns, 1000 - 30);
	assert_int_equal(r2->s.conns[2].c.bytes_sent, 99);
	snapstore_free(r2);
	snapstore_free(fresh);
	snapjson_cache_free(&cache);
	json_decref(o1);
	json_decref(o2);
	json_decref(c1);
	json_decref(c2);
}

/*
 * A store moved in time is the same as the page read again with the shift and the move: every
 * time of every table (processes, their stacks, GPU, verbs and NCCL log; connections;
 * communicators) moved, 0 kept, nothing else changed (written back, the two are equal)
 */
static void test_store_shift(void **st)
{
	json_t *o = json_loads(
		"{\"now_ns\":900000,\"tcp_resumed_ns\":1000,"
		"\"procs\":[{\"pid\":7,\"rank\":1,\"nccl_since_ns\":5000,\"exit_ns\":0,"
		"\"ib_hs_since_ns\":6000,\"stacks\":[{\"tid\":7,\"taken_ns\":7000,\"frames\":"
		"[{\"pc\":1,\"func\":\"f\"}],\"nccl_frames\":[0]}],\"gpu\":{\"index\":0,"
		"\"xid_ns\":8000,\"sampled_ns\":8100},\"ib_error\":{\"ts_ns\":8200,\"count\":1},"
		"\"ib\":{\"async_ns\":8300,\"qps\":[{\"created_ns\":8400,\"changed_ns\":8500}]},"
		"\"nccl_log\":{\"comms\":[{\"rank\":1,\"start_ns\":8600,\"complete_ns\":0,"
		"\"rings_ns\":8700}],\"paths\":[{\"from\":0,\"to\":1}]}}],"
		"\"conns\":[{\"pid\":7,\"first_ns\":100,\"last_send_ns\":200,"
		"\"blocked_since_ns\":300,\"family\":2,\"src\":\"127.0.0.1:1\","
		"\"dst\":\"127.0.0.1:2\",\"nccl_label\":\"net\"}],"
		"\"comms\":[{\"pid\":7,\"nranks\":2,\"changed_ns\":400,\"seq\":[1,2,3,4,5]}]}",
		0, NULL);
	struct snapstore *a, *b;
	json_t *ja, *jb;
	char err[128];

	(void)st;
	assert_non_null(o);
	a = snapjson_parse(o, 50, err, sizeof(err));
	b = snapjson_parse(o, 50 + 1234, err, sizeof(err));
	assert_non_null(a);
	assert_non_null(b);
	snapstore_shift(a, 1234);
	ja = snapjson_from_snapshot(&a->s);
	jb = snapjson_from_snapshot(&b->s);
	if (!json_equal(ja, jb)) {
		char *x = json_dumps(ja, JSON_SORT_KEYS), *y = json_dumps(jb, JSON_SORT_KEYS);

		print_error("moved: %s\nread: %s\n", x, y);
		free(x);
		free(y);
		fail();
	}
	/* and it moved: a stack's time, a log's, a connection's */
	assert_int_equal(a->s.procs[0].stacks[0].st.taken_ns, 7000 + 50 + 1234);
	assert_int_equal(a->s.procs[0].nccl_log->comm[0].rings_ns, 8700 + 50 + 1234);
	assert_int_equal(a->s.procs[0].nccl_log->comm[0].complete_ns, 0);
	assert_int_equal(a->s.conns[0].c.first_ns, 100 + 50 + 1234);
	json_decref(ja);
	json_decref(jb);
	snapstore_free(a);
	snapstore_free(b);
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),     cmocka_unit_test(test_clients),
		cmocka_unit_test(test_forgets_oldest), cmocka_unit_test(test_refused),
		cmocka_unit_test(test_cached_parse),   cmocka_unit_test(test_store_shift),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
