// SPDX-License-Identifier: MIT
/* The report's progress strips: bytes a second per column, drawn a character a column. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>
#include "present/dumpconns.h"
#include "present/heat.h"

#define S 1000000000ULL

/* 100 bytes in the first second, none in the second (a stall), 300 in the third */
static void add_ring(struct heat *h, int pid)
{
	assert_int_equal(heat_add(h, pid, 10 * S, 0), 0);
	assert_int_equal(heat_add(h, pid, 11 * S, 100), 0);
	assert_int_equal(heat_add(h, pid, 12 * S, 100), 0);
	assert_int_equal(heat_add(h, pid, 13 * S, 400), 0);
}

static void test_columns_per_second(void **state)
{
	struct heat h = {0};
	double v[6];

	(void)state;
	add_ring(&h, 7);
	assert_true(heat_columns(&h, 7, 10 * S, 13 * S, 3, v));
	assert_float_equal(v[0], 100, 1e-6);
	assert_float_equal(v[1], 0, 1e-6);
	assert_float_equal(v[2], 300, 1e-6);
	/* half-second columns: a snapshot's interval spread over it, not put at its end */
	assert_true(heat_columns(&h, 7, 10 * S, 13 * S, 6, v));
	assert_float_equal(v[0], 100, 1e-6);
	assert_float_equal(v[1], 100, 1e-6);
	assert_float_equal(v[2], 0, 1e-6);
	assert_float_equal(v[3], 0, 1e-6);
	assert_float_equal(v[4], 300, 1e-6);
	assert_float_equal(v[5], 300, 1e-6);
	/* another pid never seen, and no time at all */
	assert_true(heat_columns(&h, 8, 10 * S, 13 * S, 3, v));
	assert_float_equal(v[0] + v[1] + v[2], 0, 1e-9);
	assert_false(heat_columns(&h, 7, 13 * S, 13 * S, 3, v));
	assert_false(heat_columns(&h, 7, 10 * S, 13 * S, 0, v));
	/* a point out of time order is not taken */
	assert_int_equal(heat_add(&h, 7, 12 * S, 999), 0);
	assert_true(heat_columns(&h, 7, 10 * S, 13 * S, 3, v));
	assert_float_equal(v[2], 300, 1e-6);
	heat_free(&h);
}

static void test_strip_heights(void **state)
{
	const double v[] = {0, 800, 100, 0.001, 650, 400};
	char out[64];

	(void)state;
	heat_strip(v, 6, 800, false, out, sizeof(out));
	/* nothing: blank; the most: the top; a trickle: the lowest, never blank */
	assert_string_equal(out, " @:.#+");
	heat_strip(v, 6, 800, true, out, sizeof(out));
	assert_string_equal(out, " █▂▁▇▅");
	/* no room: whole characters only, always terminated */
	heat_strip(v, 6, 800, true, out, 5);
	assert_string_equal(out, " █");
	heat_strip(v, 6, 0, false, out, sizeof(out));
	assert_string_equal(out, "      ");
}

static void test_utf8_locale(void **state)
{
	(void)state;
	assert_true(heat_utf8(NULL, NULL, "en_US.UTF-8"));
	assert_true(heat_utf8("", "", "C.utf8"));
	assert_true(heat_utf8(NULL, "de_DE.UTF-8", "C"));
	/* the first set one decides, as setlocale takes them */
	assert_false(heat_utf8("C", "en_US.UTF-8", "en_US.UTF-8"));
	assert_false(heat_utf8(NULL, NULL, NULL));
	assert_false(heat_utf8(NULL, NULL, "POSIX"));
	assert_false(heat_utf8(NULL, NULL, "en_US.ISO-8859-1"));
}

/* a snapshot record with one connection */
static json_t *snap(const char *id, int pid, long long sent, long long recv, bool listener)
{
	return json_pack("{s:s,s:[{s:s,s:i,s:I,s:I,s:b}]}", "type", "snapshot", "conns", "id", id,
			 "pid", pid, "bytes_sent", (json_int_t)sent, "bytes_recv", (json_int_t)recv,
			 "listener", listener);
}

static void take(struct dump_conns *d, json_t *s)
{
	assert_int_equal(dump_conns_update(d, s), 0);
	json_decref(s);
}

static void test_moved_per_process(void **state)
{
	struct dump_conns d = {0};

	(void)state;
	take(&d, snap("ffff1", 10, 100, 50, false));
	assert_int_equal(d.nm, 1);
	assert_int_equal(d.m[0].bytes, 150);
	assert_true(d.m[0].changed);
	take(&d, snap("ffff1", 10, 100, 50, false));
	assert_false(d.m[0].changed); /* nothing moved since */
	take(&d, snap("ffff1", 10, 160, 50, false));
	assert_int_equal(d.m[0].bytes, 210);
	/* the kernel reused the address for a new connection: its counts are all new */
	take(&d, snap("ffff1", 10, 20, 0, false));
	assert_int_equal(d.m[0].bytes, 230);
	/* a listener moves nothing */
	take(&d, snap("ffff2", 10, 5000, 5000, true));
	assert_int_equal(d.m[0].bytes, 230);
	dump_conns_free(&d);
}

/* a merged report's ranks on one grid: the same grid unchanged, another's by time shared */
static void test_resample(void **state)
{
	double v[4] = {100, 200, 0, 400}, out[6];

	(void)state;
	heat_resample(v, 4, 10, 2, out, 4, 10, 2);
	for (int i = 0; i < 4; i++)
		assert_float_equal(out[i], v[i], 1e-9);
	/* a grid starting 2 s earlier, columns of 1 s: nothing before, halves of v's columns */
	heat_resample(v, 4, 10, 2, out, 6, 8, 1);
	assert_float_equal(out[0], 0, 1e-9);
	assert_float_equal(out[1], 0, 1e-9);
	assert_float_equal(out[2], 100, 1e-9);
	assert_float_equal(out[3], 100, 1e-9);
	assert_float_equal(out[4], 200, 1e-9);
	/* columns of 3 s from 11 s: [11,14) is half of 100, all of 200's second half... */
	heat_resample(v, 4, 10, 2, out, 2, 11, 3);
	assert_float_equal(out[0], (100 * 1 + 200 * 2) / 3.0, 1e-9);
	assert_float_equal(out[1], (0 * 2 + 400 * 1) / 3.0, 1e-9);
}

/* a snapshot at t seconds with one connection that has sent `sent` bytes */
static json_t *snap_at(double t, long long sent)
{
	return json_pack("{s:s,s:I,s:[{s:s,s:i,s:i,s:s,s:s,s:I,s:I}]}", "type", "snapshot", "ts_ns",
			 (json_int_t)(1000000000000LL + (long long)(t * 1e9)), "conns", "id",
			 "ffffa", "pid", 10, "peer_pid", 11, "src", "10.0.0.1:40000", "dst",
			 "10.0.0.2:50000", "bytes_sent", (json_int_t)sent, "bytes_recv",
			 (json_int_t)0);
}

/*
 * Each connection's columns: a second each at first, what moved between two snapshots spread
 * over the time between them, the first snapshot's count in none, and the columns doubled (pairs
 * summed) when the dump outgrows them, every byte still counted
 */
static void test_conn_columns(void **state)
{
	struct dump_conns d = {.cols = true};
	double sum = 0;

	(void)state;
	take(&d, snap_at(0, 5000)); /* moved before the dump */
	assert_int_equal(dump_conns_ncols(&d), 1);
	assert_null(d.v[0].col);
	take(&d, snap_at(1, 6000));
	take(&d, snap_at(2, 8000));
	assert_string_equal(d.v[0].src, "10.0.0.1:40000");
	assert_int_equal(d.v[0].peer_pid, 11);
	assert_float_equal(d.col_s, 1, 1e-9);
	assert_float_equal(d.v[0].col[0], 1000, 1e-6);
	assert_float_equal(d.v[0].col[1], 2000, 1e-6);
	/* thinned: one snapshot 10 s later, 100 bytes a second in between */
	take(&d, snap_at(12, 9000));
	for (int i = 2; i < 12; i++)
		assert_float_equal(d.v[0].col[i], 100, 1e-6);
	assert_int_equal(dump_conns_ncols(&d), 13);
	/* 40 s in: past 32 columns of 1 s, now 32 of 2 s, the pairs summed */
	take(&d, snap_at(40, 9000 + 28 * 50));
	assert_float_equal(d.col_s, 2, 1e-9);
	assert_float_equal(d.v[0].col[0], 3000, 1e-6);
	assert_float_equal(d.v[0].col[1], 200, 1e-6);
	assert_float_equal(d.v[0].col[19], 100, 1e-6); /* 38-40 s: 50 a second */
	assert_int_equal(dump_conns_ncols(&d), 21);
	for (int i = 0; i < DUMP_CONN_COLS; i++)
		sum += d.v[0].col[i];
	assert_float_equal(sum, 9000 + 28 * 50 - 5000, 1e-6);
	dump_conns_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_columns_per_second), cmocka_unit_test(test_strip_heights),
		cmocka_unit_test(test_utf8_locale),	   cmocka_unit_test(test_moved_per_process),
		cmocka_unit_test(test_conn_columns),	   cmocka_unit_test(test_resample),
	};

	return cmocka_run_group_tests_name("heat", tests, NULL, NULL);
}
