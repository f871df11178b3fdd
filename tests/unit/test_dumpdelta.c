// SPDX-License-Identifier: MIT
/*
 * Dump format 2: snapshot and state records as what changed (present/dumpdelta.c), and the
 * pre-trigger ring that holds a calm job's snapshots (present/dumpring.c, dump__hold)
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "present/dump.h"
#include "present/dumpdelta.h"
#include "present/dumpring.h"
#include "nccltrace.h"

#define S 1000000000ll

/* a connection whose bytes and last send are as given (ages as of ts) */
static json_t *conn(const char *id, json_int_t bytes, json_int_t sent_at, json_int_t ts)
{
	return json_pack(
		"{s:s, s:I, s:f, s:n, s:o}", "id", id, "bytes_sent", bytes, "last_send_age_s",
		(double)(ts - sent_at) / S, "last_recv_age_s", "nccl",
		json_pack("{s:s, s:f}", "phase", "x", "for_s", (double)(ts - sent_at) / S));
}

static json_t *proc(int pid, json_int_t total)
{
	return json_pack("{s:i, s:I}", "pid", pid, "total", total);
}

static json_t *snapshot(json_int_t ts, json_t *procs, json_t *conns)
{
	return json_pack("{s:s, s:I, s:o, s:o}", "type", "snapshot", "ts_ns", ts, "procs", procs,
			 "conns", conns);
}

/* rec through the writer and the text of a file, then the reader: what a reader gets */
static json_t *through(struct delta_enc *e, struct delta_dec *d, const json_t *rec, char **text)
{
	json_t *w = json_deep_copy(rec), *r;
	char err[256];

	assert_int_equal(delta_encode(e, w), 0);
	*text = json_dumps(w, JSON_COMPACT);
	json_decref(w);
	r = json_loads(*text, 0, NULL);
	assert_non_null(r);
	if (delta_decode(d, r, err, sizeof(err))) {
		print_error("decode: %s\n", err);
		fail();
	}
	return r;
}

/* ages that only grew with the time between frames: the same elements, written as references */
static void test_round_trip(void **state)
{
	struct delta_enc *e = delta_enc_new();
	struct delta_dec *d = delta_dec_new();
	json_int_t t0 = 100 * S;
	json_t *f[4], *got;
	char *text;

	(void)state;
	f[0] = snapshot(t0, json_pack("[o,o]", proc(1, 5), proc(2, 5)),
			json_pack("[o,o,o]", conn("a", 10, t0 - S / 2, t0),
				  conn("b", 20, t0 - S, t0), conn("c", 30, t0 - 2 * S, t0)));
	/* a second later: b moved, a and c did not (their ages one second older) */
	f[1] = snapshot(t0 + S, json_pack("[o,o]", proc(1, 5), proc(2, 6)),
			json_pack("[o,o,o]", conn("a", 10, t0 - S / 2, t0 + S),
				  conn("b", 25, t0 + S / 2, t0 + S),
				  conn("c", 30, t0 - 2 * S, t0 + S)));
	/* a gone, d new, c before b: order is the frame's own */
	f[2] = snapshot(t0 + 3 * S, json_pack("[o,o]", proc(1, 5), proc(2, 6)),
			json_pack("[o,o,o]", conn("c", 30, t0 - 2 * S, t0 + 3 * S),
				  conn("b", 25, t0 + S / 2, t0 + 3 * S),
				  conn("d", 1, t0 + 3 * S, t0 + 3 * S)));
	/* nothing moved */
	f[3] = snapshot(t0 + 4 * S, json_pack("[o,o]", proc(1, 5), proc(2, 6)),
			json_pack("[o,o,o]", conn("c", 30, t0 - 2 * S, t0 + 4 * S),
				  conn("b", 25, t0 + S / 2, t0 + 4 * S),
				  conn("d", 1, t0 + 3 * S, t0 + 4 * S)));
	for (int i = 0; i < 4; i++) {
		got = through(e, d, f[i], &text);
		if (!json_equal(got, f[i])) {
			char *a = json_dumps(f[i], JSON_COMPACT),
			     *b = json_dumps(got, JSON_COMPACT);

			print_error("frame %d\nwant %s\ngot  %s\n", i, a, b);
			free(a);
			free(b);
			fail();
		}
		if (i == 0)
			assert_non_null(strstr(text, "\"key\":true"));
		if (i == 1) {
			/* a and c by reference, b whole; proc 1 by reference */
			assert_non_null(strstr(text, "\"delta\":true"));
			assert_non_null(strstr(text, "\"procs\":[0,{"));
			assert_non_null(strstr(text, "\"conns\":[0,{\"bytes_sent\":25") ||
					strstr(text, "\"conns\":[0,{\"id\":\"b\""));
			assert_null(strstr(text, "\"id\":\"a\""));
		}
		if (i == 2)
			assert_non_null(strstr(text, "\"conns\":[2,1,{"));
		if (i == 3)
			assert_non_null(strstr(text, "\"procs\":[[0,2]],\"conns\":[[0,3]]"));
		json_decref(got);
		free(text);
		json_decref(f[i]);
	}
	delta_enc_free(e);
	delta_dec_free(d);
}

/* A key frame at least every DELTA_KEY_EVERY_S, and after the writer lost track (reset) */
static void test_key_frames(void **state)
{
	struct delta_enc *e = delta_enc_new();
	json_int_t t0 = 10 * S;
	int keys = 0, n = 0;

	(void)state;
	for (json_int_t t = t0; t <= t0 + 2 * DELTA_KEY_EVERY_S * S; t += 10 * S, n++) {
		json_t *r = snapshot(t, json_pack("[o]", proc(1, 1)), json_array());

		assert_int_equal(delta_encode(e, r), 0);
		keys += json_is_true(json_object_get(r, "key"));
		assert_true(json_is_true(json_object_get(r, "key")) ^
			    json_is_true(json_object_get(r, "delta")));
		json_decref(r);
	}
	assert_int_equal(keys, 3); /* t0, +KEY, +2 KEY */
	delta_enc_reset(e);
	{
		json_t *r = snapshot(t0 + 3 * DELTA_KEY_EVERY_S * S, json_array(), json_array());

		assert_int_equal(delta_encode(e, r), 0);
		assert_true(json_is_true(json_object_get(r, "key")));
		json_decref(r);
	}
	/* other records pass untouched */
	{
		json_t *r =
			json_pack("{s:s, s:I, s:[i]}", "type", "finding", "ts_ns", t0, "conns", 1);
		char *before = json_dumps(r, JSON_COMPACT), *after;

		assert_int_equal(delta_encode(e, r), 0);
		after = json_dumps(r, JSON_COMPACT);
		assert_string_equal(before, after);
		free(before);
		free(after);
		json_decref(r);
	}
	delta_enc_free(e);
}

/* state records: their "state" object's arrays; their numbers are never ages */
static void test_state_frames(void **state)
{
	struct delta_enc *e = delta_enc_new();
	struct delta_dec *d = delta_dec_new();
	json_t *a = json_pack("{s:s, s:I, s:{s:I, s:[{s:i, s:f}], s:[{s:s}], s:[]}}", "type",
			      "state", "ts_ns", 5 * S, "state", "now_ns", 5 * S, "procs", "pid", 1,
			      "for_s", 2.0, "conns", "id", "x", "comms");
	json_t *b = json_deep_copy(a), *got;
	char *text;

	(void)state;
	json_object_set_new(b, "ts_ns", json_integer(6 * S));
	json_object_set_new(json_object_get(b, "state"), "now_ns", json_integer(6 * S));
	got = through(e, d, a, &text);
	assert_true(json_equal(got, a));
	json_decref(got);
	free(text);
	got = through(e, d, b, &text);
	assert_true(json_equal(got, b)); /* for_s stays 2.0: not an age here */
	assert_non_null(strstr(text, "\"procs\":[0],\"conns\":[0]"));
	json_decref(got);
	free(text);
	json_decref(a);
	json_decref(b);
	delta_enc_free(e);
	delta_dec_free(d);
}

/* What a reader is told of a delta frame it cannot make whole */
static void test_bad_frames(void **state)
{
	struct delta_dec *d = delta_dec_new();
	char err[256];
	json_t *r;

	(void)state;
	r = json_loads(
		"{\"type\":\"snapshot\",\"ts_ns\":1,\"procs\":[0],\"conns\":[],\"delta\":true}", 0,
		NULL);
	assert_int_equal(delta_decode(d, r, err, sizeof(err)), -1);
	assert_string_equal(err, "a snapshot delta frame with no key frame before it");
	json_decref(r);
	r = json_loads("{\"type\":\"snapshot\",\"ts_ns\":1,\"procs\":[{\"pid\":1}],\"conns\":[],"
		       "\"key\":true}",
		       0, NULL);
	assert_int_equal(delta_decode(d, r, err, sizeof(err)), 0);
	assert_null(json_object_get(r, "key"));
	json_decref(r);
	r = json_loads("{\"type\":\"snapshot\",\"ts_ns\":2,\"procs\":[[0,2]],\"conns\":[],"
		       "\"delta\":true}",
		       0, NULL);
	assert_int_equal(delta_decode(d, r, err, sizeof(err)), -1);
	assert_string_equal(err, "snapshot delta frame, procs: element 0 refers to 0..1 of the "
				 "last frame, which has 1");
	json_decref(r);
	r = json_loads("{\"type\":\"snapshot\",\"ts_ns\":2,\"procs\":[\"x\"],\"conns\":[],"
		       "\"delta\":true}",
		       0, NULL);
	assert_int_equal(delta_decode(d, r, err, sizeof(err)), -1);
	assert_string_equal(err, "snapshot delta frame, procs: element 0 is neither an object nor "
				 "a reference");
	json_decref(r);
	/* the failed frames changed nothing: a good one still reads */
	r = json_loads("{\"type\":\"snapshot\",\"ts_ns\":2,\"procs\":[0],\"conns\":[],"
		       "\"delta\":true}",
		       0, NULL);
	assert_int_equal(delta_decode(d, r, err, sizeof(err)), 0);
	assert_int_equal(json_integer_value(json_object_get(
				 json_array_get(json_object_get(r, "procs"), 0), "pid")),
			 1);
	json_decref(r);
	delta_dec_free(d);
}

static json_t *str_record(const void *item)
{
	return json_string(item);
}

static const struct dump_held_ops str_ops = {.record = str_record, .free = free};

/* a string held at ts, as many bytes as it has */
static int push_str(struct dump_ring *r, char *s, uint64_t ts, bool keep)
{
	return dump_ring_push(r, s, &str_ops, strlen(s), ts, keep);
}

/* an element as JSON a that says it is element id (DELTA_ID) */
static json_t *with_id(json_t *a, const char *id)
{
	json_object_set_new(a, DELTA_ID, json_string(id));
	return a;
}

/*
 * An element's identity, where it carries one, stands for its text: the same identity is the
 * same element however its JSON reads, another is another; none is ever written
 */
static void test_identities(void **state)
{
	struct delta_enc *e = delta_enc_new();
	struct delta_dec *d = delta_dec_new();
	json_int_t t0 = 100 * S;
	json_t *f[2], *got;
	char *text;

	(void)state;
	f[0] = snapshot(t0, json_pack("[o]", proc(1, 5)),
			json_pack("[o,o]", with_id(conn("a", 10, t0, t0), "A1"),
				  with_id(conn("b", 20, t0, t0), "B1")));
	/* a's JSON moved but its identity did not; b's JSON is the same but its identity not */
	f[1] = snapshot(t0 + S, json_pack("[o]", proc(1, 5)),
			json_pack("[o,o]", with_id(conn("a", 11, t0, t0 + S), "A1"),
				  with_id(conn("b", 20, t0, t0 + S), "B2")));
	got = through(e, d, f[0], &text);
	assert_null(strstr(text, "\\u0001"));
	assert_null(json_object_get(json_array_get(json_object_get(got, "conns"), 0), DELTA_ID));
	free(text);
	json_decref(got);
	got = through(e, d, f[1], &text);
	assert_null(strstr(text, "\\u0001"));
	/* a from the last frame (its old figures: what its identity said), b whole */
	assert_non_null(strstr(text, "\"conns\":[0,{\"id\":\"b\""));
	assert_int_equal(json_integer_value(json_object_get(
				 json_array_get(json_object_get(got, "conns"), 0), "bytes_sent")),
			 10);
	free(text);
	json_decref(got);
	for (int i = 0; i < 2; i++)
		json_decref(f[i]);
	delta_enc_free(e);
	delta_dec_free(d);
}

/* The ring: frames wait their span, then only the kept ones leave for the file; bytes bound it */
static void test_ring(void **state)
{
	struct dump_ring *r = dump_ring_new(60 * S, 100);
	const struct dump_held_ops *ops;
	bool keep;
	char *t;

	(void)state;
	for (int i = 0; i < 5; i++)
		assert_int_equal(
			push_str(r, strdup(i == 2 ? "kept" : "x"), (uint64_t)i * S, i == 2), 0);
	assert_null(dump_ring_pop(r, 59 * S, false, &ops, &keep)); /* nothing a minute old */
	t = dump_ring_pop(r, 60 * S, false, &ops, &keep);
	assert_string_equal(t, "x");
	assert_false(keep);
	free(t);
	assert_null(dump_ring_pop(r, 60 * S, false, &ops, &keep));
	t = dump_ring_pop(r, 63 * S, false, &ops, &keep);
	free(t);
	t = dump_ring_pop(r, 63 * S, false, &ops, &keep);
	assert_string_equal(t, "kept");
	assert_true(keep);
	assert_ptr_equal(ops, &str_ops);
	free(t);
	assert_int_equal(dump_ring_count(r), 2);
	/* over its bytes: the oldest goes, however young */
	assert_int_equal(push_str(r, calloc(1, 1), 5 * S, false), 0);
	{
		char *big = malloc(101);

		memset(big, 'b', 100);
		big[100] = '\0';
		assert_int_equal(push_str(r, big, 6 * S, false), 0);
	}
	/* 102 bytes: the two oldest go (101, then 100, within the bound) */
	for (int i = 0; i < 2; i++) {
		t = dump_ring_pop(r, 6 * S, false, &ops, &keep);
		assert_string_equal(t, "x");
		free(t);
	}
	assert_null(dump_ring_pop(r, 6 * S, false, &ops, &keep));
	assert_int_equal(dump_ring_count(r), 2);
	t = dump_ring_pop(r, 0, true, &ops, &keep); /* all: the release */
	assert_string_equal(t, "");
	free(t);
	t = dump_ring_pop(r, 0, true, &ops, &keep);
	assert_int_equal(strlen(t), 100);
	free(t);
	assert_null(dump_ring_pop(r, 0, true, &ops, &keep));
	dump_ring_free(r);
}

struct seen {
	int snapshots;
	json_int_t ts[256];
	json_int_t total[256];
	int conns[256];
	json_int_t last_bytes[256]; /* the last connection's */
};

static int on_rec(void *ctx, json_t *rec, int line)
{
	struct seen *s = ctx;

	(void)line;
	if (strcmp(json_string_value(json_object_get(rec, "type")) ?: "", "snapshot"))
		return 0;
	assert_null(json_object_get(rec, "delta"));
	s->ts[s->snapshots] = json_integer_value(json_object_get(rec, "ts_ns"));
	s->conns[s->snapshots] = (int)json_array_size(json_object_get(rec, "conns"));
	s->last_bytes[s->snapshots] = json_integer_value(json_object_get(
		json_array_get(json_object_get(rec, "conns"), s->conns[s->snapshots] - 1),
		"bytes_sent"));
	s->total[s->snapshots++] = json_integer_value(
		json_object_get(json_array_get(json_object_get(rec, "procs"), 0), "total"));
	return 0;
}

/* nconns connections that move each second */
static json_t *conns_at(int nconns, int i)
{
	json_t *c = json_array();

	for (int k = 0; k < nconns; k++) {
		char id[16];

		snprintf(id, sizeof(id), "c%d", k);
		json_array_append_new(c, conn(id, (json_int_t)i * 1000 + k, (json_int_t)i * S,
					      (json_int_t)i * S));
	}
	return c;
}

static json_t *rec_record(const void *item)
{
	return json_incref((json_t *)item);
}

static void rec_free(void *item)
{
	json_decref(item);
}

/* records held as they are */
static const struct dump_held_ops rec_ops = {.record = rec_record, .free = rec_free};

/*
 * Through a real file: a calm minute and a half held, one in 30 s kept; then the release writes
 * the last minute at full resolution; the reader makes every delta whole. The same with no
 * connection, a few, and 300. Settled instead (a clean end), the last minute gives only its
 * kept frame, the others counted as thinned.
 */
static void hold_and_read(int nconns, bool settle)
{
	char dir[] = "/tmp/nccltrace-delta-XXXXXX", path[64], err[256];
	struct dump *dp;
	struct seen seen = {0};
	uint64_t held, dropped;
	json_t *h;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/d.jsonl", dir);
	assert_int_equal(dump__create(path, false, 0, 0, &dp), 0);
	h = json_pack("{s:i}", "nccltrace", NT_DUMP_FORMAT);
	assert_int_equal(dump__write(dp, h), 0);
	json_decref(h);
	for (int i = 0; i <= 90; i++) {
		json_t *r = snapshot((json_int_t)i * S, json_pack("[o]", proc(1, i / 10)),
				     conns_at(nconns, i));

		assert_int_equal(dump__hold(dp, r, &rec_ops, 200 + 200 * (size_t)nconns,
					    (uint64_t)i * S, i % 30 == 0),
				 0);
	}
	dump__frames(dp, &held, &dropped);
	assert_int_equal(held, 91);
	assert_int_equal(dropped, 29); /* 1..29 left the ring by second 90; 0 and 30 kept */
	assert_int_equal(settle ? dump__settle(dp) : dump__release(dp), 0);
	dump__frames(dp, &held, &dropped);
	assert_int_equal(dropped, settle ? 29 + 58 : 29); /* 31..59, 61..89 */
	dump__close(dp);
	assert_int_equal(dump_read(path, on_rec, &seen, err, sizeof(err)), 0);
	assert_int_equal(seen.snapshots, settle ? 4 : 2 + 60);
	assert_int_equal(seen.ts[0], 0);
	assert_int_equal(seen.ts[1], 30 * S);
	for (int i = 2; i < seen.snapshots; i++) {
		int sec = settle ? 30 * i : 29 + i;

		assert_int_equal(seen.ts[i], (json_int_t)sec * S);
		assert_int_equal(seen.total[i], sec / 10);
		assert_int_equal(seen.conns[i], nconns);
		assert_int_equal(seen.last_bytes[i],
				 nconns ? (json_int_t)sec * 1000 + nconns - 1 : 0);
	}
	unlink(path);
	rmdir(dir);
}

static void test_hold_and_read(void **state)
{
	char dir[] = "/tmp/nccltrace-delta-XXXXXX", path[64], err[256];
	struct seen seen = {0};
	FILE *f;

	(void)state;
	hold_and_read(0, false);
	hold_and_read(3, false);
	hold_and_read(300, false);
	hold_and_read(3, true);
	/* a delta frame whose key frame is gone */
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/d.jsonl", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"{\"nccltrace\":2}\n{\"type\":\"proc\",\"ts_ns\":1}\n"
		"{\"type\":\"snapshot\",\"ts_ns\":2,\"procs\":[0],\"conns\":[],\"delta\":true}\n");
	fclose(f);
	assert_int_equal(dump_read(path, on_rec, &seen, err, sizeof(err)), -1);
	assert_non_null(
		strstr(err, "d.jsonl:3: a snapshot delta frame with no key frame before it"));
	unlink(path);
	rmdir(dir);
}

/* An element that is not an object could not be told from a reference: its frame is a key frame */
static void test_non_objects_key(void **state)
{
	struct delta_enc *e = delta_enc_new();
	json_t *a = snapshot(S, json_pack("[o]", proc(1, 1)), json_array());
	json_t *b = snapshot(2 * S, json_pack("[o,i]", proc(1, 1), 7), json_array());

	(void)state;
	assert_int_equal(delta_encode(e, a), 0);
	assert_int_equal(delta_encode(e, b), 0);
	assert_true(json_is_true(json_object_get(b, "key")));
	assert_int_equal(json_integer_value(json_array_get(json_object_get(b, "procs"), 1)), 7);
	json_decref(a);
	json_decref(b);
	delta_enc_free(e);
}

/* Snapshots and states are two chains: a state's references are to the last state */
static void test_types_independent(void **state)
{
	struct delta_enc *e = delta_enc_new();
	struct delta_dec *d = delta_dec_new();
	json_t *st = json_pack("{s:s, s:I, s:{s:[{s:i}], s:[], s:[]}}", "type", "state", "ts_ns", S,
			       "state", "procs", "pid", 9, "conns", "comms");
	json_t *sn = snapshot(S, json_pack("[o,o]", proc(1, 1), proc(2, 2)), json_array());
	json_t *st2 = json_deep_copy(st), *sn2 = json_deep_copy(sn), *got;
	char *text;

	(void)state;
	json_object_set_new(st2, "ts_ns", json_integer(2 * S));
	json_object_set_new(sn2, "ts_ns", json_integer(2 * S));
	got = through(e, d, st, &text);
	json_decref(got);
	free(text);
	got = through(e, d, sn, &text);
	json_decref(got);
	free(text);
	got = through(e, d, st2, &text);
	assert_true(json_equal(got, st2)); /* pid 9, not the snapshot's pid 1 */
	assert_non_null(strstr(text, "\"procs\":[0]"));
	json_decref(got);
	free(text);
	got = through(e, d, sn2, &text);
	assert_true(json_equal(got, sn2));
	assert_non_null(strstr(text, "\"procs\":[[0,2]]"));
	json_decref(got);
	free(text);
	json_decref(st);
	json_decref(sn);
	json_decref(st2);
	json_decref(sn2);
	delta_enc_free(e);
	delta_dec_free(d);
}

/*
 * A frame the file did not take whole (a full disk, a closed file): the next one is a key
 * frame, never a delta on a frame a reader does not have
 */
static void test_write_error_key(void **state)
{
	char dir[] = "/tmp/nccltrace-delta-XXXXXX", path[64];
	struct dump *dp;
	json_t *r;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/d.jsonl", dir);
	assert_int_equal(dump__create(path, false, 0, 0, &dp), 0);
	r = snapshot(S, json_pack("[o]", proc(1, 1)), json_array());
	assert_int_equal(dump__write(dp, r), 0);
	json_decref(r);
	/* the dump's fd, the lowest free one before this open: made to refuse writes */
	fd = open("/dev/null", O_RDONLY);
	assert_true(fd > 0);
	close(fd);
	fd = fd - 1;
	{
		int ro = open(path, O_RDONLY);

		assert_true(ro >= 0);
		assert_int_equal(dup2(ro, fd), fd);
		close(ro);
	}
	r = snapshot(2 * S, json_pack("[o]", proc(1, 1)), json_array());
	assert_int_not_equal(dump__write(dp, r), 0);
	assert_true(json_is_true(json_object_get(r, "delta")));
	json_decref(r);
	{
		int w = open(path, O_WRONLY | O_APPEND);

		assert_true(w >= 0);
		assert_int_equal(dup2(w, fd), fd);
		close(w);
	}
	r = snapshot(3 * S, json_pack("[o]", proc(1, 1)), json_array());
	assert_int_equal(dump__write(dp, r), 0);
	assert_true(json_is_true(json_object_get(r, "key")));
	json_decref(r);
	dump__close(dp);
	unlink(path);
	rmdir(dir);
}

struct counted {
	int n;
	json_int_t last_total;
};

static int count_rec(void *ctx, json_t *rec, int line)
{
	struct counted *c = ctx;

	(void)line;
	if (!strcmp(json_string_value(json_object_get(rec, "type")) ?: "", "snapshot")) {
		c->n++;
		c->last_total = json_integer_value(
			json_object_get(json_array_get(json_object_get(rec, "procs"), 0), "total"));
	}
	return 0;
}

/* write a ".zst" dump of 30 snapshots, a frame a second: frames[] gets each frame's offset */
static int write_zst(const char *path, long *frames, int max)
{
	struct dump *dp;
	json_t *h = json_pack("{s:i}", "nccltrace", NT_DUMP_FORMAT);
	FILE *f;
	unsigned char b[4];
	long off = 0;
	int n = 0;

	assert_int_equal(dump__create(path, false, 0, 0, &dp), 0);
	assert_int_equal(dump__write(dp, h), 0);
	json_decref(h);
	for (int i = 0; i < 30; i++) {
		json_t *r = snapshot((json_int_t)(i + 1) * S, json_pack("[o]", proc(1, i)),
				     json_array());

		assert_int_equal(dump__write(dp, r), 0);
		json_decref(r);
		assert_int_equal(dump__tick(dp, (uint64_t)(i + 1) * S), 0);
	}
	dump__close(dp);
	f = fopen(path, "rb");
	assert_non_null(f);
	while (fread(b, 1, 4, f) == 4) {
		if (b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd && n < max)
			frames[n++] = off;
		off++;
		fseek(f, off, SEEK_SET);
	}
	fclose(f);
	return n;
}

/*
 * A ".zst" dump: a zstd frame a second, read back whole; cut inside a frame, the frames before
 * it read; a corrupt frame an error at its place, after the records before it
 */
static void test_compressed(void **state)
{
	char dir[] = "/tmp/nccltrace-delta-XXXXXX", path[64], err[256];
	struct counted c = {0};
	long frames[64];
	int nf, fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/d.jsonl.zst", dir);
	nf = write_zst(path, frames, 64);
	assert_true(nf >= 29); /* the header's and the first record's, then one a tick */
	assert_int_equal(frames[0], 0);
	assert_int_equal(dump_read(path, count_rec, &c, err, sizeof(err)), 0);
	assert_int_equal(c.n, 30);
	assert_int_equal(c.last_total, 29);
	/* cut in the middle of the 11th frame: ten frames' records */
	assert_int_equal(truncate(path, frames[10] + (frames[11] - frames[10]) / 2), 0);
	memset(&c, 0, sizeof(c));
	assert_int_equal(dump_read(path, count_rec, &c, err, sizeof(err)), 0);
	assert_true(c.n >= 9 && c.n <= 10);
	/* the 6th frame's magic overwritten: the records of the five before it, then the error */
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "XXXX", 4, frames[5]), 4);
	close(fd);
	memset(&c, 0, sizeof(c));
	assert_int_equal(dump_read(path, count_rec, &c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "corrupt compressed data after the"));
	assert_true(c.n >= 4 && c.n <= 5);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),	  cmocka_unit_test(test_key_frames),
		cmocka_unit_test(test_state_frames),	  cmocka_unit_test(test_bad_frames),
		cmocka_unit_test(test_identities),	  cmocka_unit_test(test_ring),
		cmocka_unit_test(test_hold_and_read),	  cmocka_unit_test(test_non_objects_key),
		cmocka_unit_test(test_types_independent), cmocka_unit_test(test_write_error_key),
		cmocka_unit_test(test_compressed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
