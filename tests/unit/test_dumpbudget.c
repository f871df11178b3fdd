// SPDX-License-Identifier: MIT
/*
 * --max-dump-bytes (dump.h): real dumps in a temporary directory, plain and compressed. The calm
 * stretches are thinned first, one in 2, 4 and 8 as the free part halves and none in the last
 * sixteenth; every other record is written until only the footer's share is left; the file
 * never grows past the budget, and it reads back whole.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "present/dump.h"
#include "testutil.h"
#include "nccltrace.h"

#define BUDGET (1u << 20)

static uint64_t file_size(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (uint64_t)st.st_size;
}

/* what the dump has written so far, from its footer's figures */
static uint64_t written(struct dump *d)
{
	json_t *b = dump__budget_json(d);
	uint64_t n = (uint64_t)json_integer_value(json_object_get(b, "written"));

	json_decref(b);
	return n;
}

static json_int_t budget_field(struct dump *d, const char *key)
{
	json_t *b = dump__budget_json(d);
	json_int_t n = json_integer_value(json_object_get(b, key));

	json_decref(b);
	return n;
}

/* a snapshot whose one connection changes each time: about 3 KB that zstd halves at most */
static json_t *snapshot(unsigned i)
{
	char pad[3001];
	unsigned x = i * 2654435761u + 1;

	for (size_t k = 0; k < sizeof(pad) - 1; k++) {
		x = x * 1103515245u + 12345u;
		pad[k] = "0123456789abcdef"[(x >> 16) & 15];
	}
	pad[sizeof(pad) - 1] = '\0';
	return json_pack("{s:s, s:I, s:[{s:i}], s:[{s:s, s:i}]}", "type", "snapshot", "ts_ns",
			 (json_int_t)i * 1000000000, "procs", "pid", 100, "conns", "pad", pad, "i",
			 (int)i);
}

static struct dump *open_dump(struct test_tmp *t, const char *name)
{
	struct dump *d = NULL;
	json_t *h = json_pack("{s:s, s:i, s:I}", "type", "header", "nccltrace", NT_DUMP_FORMAT,
			      "start_ns", (json_int_t)0);

	snprintf(t->path, sizeof(t->path), "%s/%s", t->dir, name);
	assert_int_equal(dump__create(t->path, false, 0, 0, &d), 0);
	dump__set_budget(d, BUDGET);
	assert_int_equal(dump__write(d, h), 0);
	json_decref(h);
	return d;
}

static int count(void *ctx, json_t *rec, int line)
{
	(void)line;
	(*(int *)ctx) += json_is_object(rec);
	return 0;
}

/*
 * Calm frames until the budget stops them, then findings until it stops those: which were
 * written, by how much of the budget was free as each was offered
 */
static void fill(struct test_tmp *t, const char *name)
{
	struct dump *d = open_dump(t, name);
	unsigned offered[5] = {0}, kept[5] = {0}, i, nrec = 0, dropped_from = 0;
	int nread = 0;
	char err[512];

	for (i = 0; i < 4000; i++) {
		uint64_t before = written(d), free_b = BUDGET - before;
		/* the band: free >= 1/2, >= 1/4, >= 1/8, >= 1/16, less */
		int band = free_b >= BUDGET / 2	   ? 0
			   : free_b >= BUDGET / 4  ? 1
			   : free_b >= BUDGET / 8  ? 2
			   : free_b >= BUDGET / 16 ? 3
						   : 4;
		json_t *s = snapshot(i);
		uint64_t calm_before = (uint64_t)budget_field(d, "calm_thinned");

		assert_int_equal(dump__write_calm(d, s), 0);
		json_decref(s);
		offered[band]++;
		if ((uint64_t)budget_field(d, "calm_thinned") == calm_before)
			kept[band]++;
		/* a compressed dump's frame each time: its bytes on disk are what it counts */
		assert_int_equal(dump__tick(d, (uint64_t)(i + 1) * 2000000000ull), 0);
		if (band == 4 && offered[4] > 50)
			break;
	}
	/* every band was met, and thinned as it says */
	for (int b = 0; b < 5; b++)
		assert_true(offered[b] >= 4);
	assert_int_equal(kept[0], offered[0]);
	for (int b = 1; b < 4; b++) {
		unsigned every = 1u << b;

		assert_true(kept[b] + 1 >= offered[b] / every && kept[b] <= offered[b] / every + 1);
	}
	assert_int_equal(kept[4], 0);
	assert_true(written(d) <= BUDGET - BUDGET / 16 + 8192);
	assert_int_equal(budget_field(d, "frames_dropped"), 0);
	assert_int_equal(budget_field(d, "records_dropped"), 0);

	/* findings: written until only the footer's share is left, then counted */
	for (i = 0; i < 4000 && !dropped_from; i++) {
		json_t *f = snapshot(100000 + i);

		json_object_set_new(f, "type", json_string("finding"));
		json_object_set_new(f, "ts_ns", json_integer(5000000 + (json_int_t)i));
		assert_int_equal(dump__write(d, f), 0);
		json_decref(f);
		if (budget_field(d, "records_dropped"))
			dropped_from = 5000000 + i;
		else
			nrec++;
	}
	/* the last sixteenth less the footer's share: 48 KiB, more than 3 KB each */
	assert_true(nrec >= 10);
	assert_int_equal(budget_field(d, "met_ns"), dropped_from);
	{
		json_t *f = json_pack("{s:s, s:I}", "type", "footer", "ts_ns", (json_int_t)9);

		json_object_set_new(f, "budget", dump__budget_json(d));
		assert_int_equal(dump__write(d, f), 0);
		json_decref(f);
	}
	dump__close(d);
	assert_true(file_size(t->path) <= BUDGET);
	/* most of it used: what was left out did not fit */
	assert_true(file_size(t->path) > BUDGET - DUMP_FOOTER_RESERVE - 8192);
	assert_int_equal(dump_read(t->path, count, &nread, err, sizeof(err)), 0);
	/* header, the kept calm frames, the findings, the footer */
	assert_int_equal(nread, 1 + (int)(kept[0] + kept[1] + kept[2] + kept[3]) + (int)nrec + 1);
}

static void test_plain(void **state)
{
	fill(*state, "budget.jsonl");
}

static void test_compressed(void **state)
{
	fill(*state, "budget.jsonl.zst");
}

/* no budget: every calm frame written, nothing counted */
static void test_none(void **state)
{
	struct test_tmp *t = *state;
	struct dump *d = NULL;

	snprintf(t->path, sizeof(t->path), "%s/none.jsonl", t->dir);
	assert_int_equal(dump__create(t->path, false, 0, 0, &d), 0);
	for (unsigned i = 0; i < 400; i++) {
		json_t *s = snapshot(i);

		assert_int_equal(dump__write_calm(d, s), 0);
		json_decref(s);
	}
	assert_int_equal(budget_field(d, "calm_thinned"), 0);
	assert_true(written(d) > BUDGET);
	dump__close(d);
	assert_true(file_size(t->path) > BUDGET);
}

/* a busy frame past the budget: left out, and the next one written whole (a key frame) */
static void test_frame_dropped(void **state)
{
	struct test_tmp *t = *state;
	struct dump *d = open_dump(t, "frames.jsonl");
	char err[512];
	int nread = 0, n = 0;

	while (!budget_field(d, "frames_dropped")) {
		json_t *s = snapshot((unsigned)n++);

		assert_int_equal(dump__write(d, s), 0);
		json_decref(s);
		assert_true(n < 1000);
	}
	assert_true(budget_field(d, "met_ns") > 0);
	assert_int_equal(budget_field(d, "calm_thinned"), 0);
	dump__close(d);
	assert_true(file_size(t->path) <= BUDGET - DUMP_FOOTER_RESERVE);
	assert_int_equal(dump_read(t->path, count, &nread, err, sizeof(err)), 0);
	assert_int_equal(nread, n);
}

/*
 * A compressed dump: a record bigger than the budget as text that compresses well is written
 * (compressed alone, it fits); one that does not compress is left out
 */
static void test_compressed_big(void **state)
{
	struct test_tmp *t = *state;
	struct dump *d = open_dump(t, "big.jsonl.zst");
	char *pad = malloc(BUDGET + BUDGET / 2 + 1);
	char err[512];
	int nread = 0;
	json_t *r;

	assert_non_null(pad);
	memset(pad, 'a', BUDGET + BUDGET / 2);
	pad[BUDGET + BUDGET / 2] = '\0';
	r = json_pack("{s:s, s:I, s:s}", "type", "finding", "ts_ns", (json_int_t)7, "pad", pad);
	assert_int_equal(dump__write(d, r), 0);
	json_decref(r);
	assert_int_equal(budget_field(d, "records_dropped"), 0);
	assert_true(written(d) < BUDGET / 8);
	/* three times the budget, random hex (zstd halves it at most): it fits in no way */
	free(pad);
	pad = malloc(3 * BUDGET + 1);
	assert_non_null(pad);
	for (uint64_t k = 0, x = 88172645463325252ull; k < 3 * BUDGET; k++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		pad[k] = "0123456789abcdef"[x >> 60];
	}
	pad[3 * BUDGET] = '\0';
	r = json_pack("{s:s, s:I, s:s}", "type", "finding", "ts_ns", (json_int_t)8, "pad", pad);
	assert_int_equal(dump__write(d, r), 0);
	json_decref(r);
	free(pad);
	assert_int_equal(budget_field(d, "records_dropped"), 1);
	assert_int_equal(budget_field(d, "met_ns"), 8);
	dump__close(d);
	assert_true(file_size(t->path) <= BUDGET);
	assert_int_equal(dump_read(t->path, count, &nread, err, sizeof(err)), 0);
	assert_int_equal(nread, 2);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, test_tmp_setup, test_tmp_teardown)
	const struct CMUnitTest tests[] = {
		T(test_plain),	       T(test_compressed),     T(test_none),
		T(test_frame_dropped), T(test_compressed_big),
	};
#undef T

	return cmocka_run_group_tests_name("dumpbudget", tests, NULL, NULL);
}
