// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "present/convert.h"
#include "present/convertmerge.h"

#define MS 1000000LL
#define T0 (1000 * 1000 * MS) /* the trace starts 1000 s after boot */

/* A dump of two ranks: init with bootstrap nested, a phase never left, two launches of one
 * collective, two snapshots, a finding opened and closed. */
static const char *const dump_lines[] = {
	"{\"nccltrace\":1,\"start_ns\":1000000000000}",
	"{\"type\":\"rank\",\"ts_ns\":1000001000000,\"pid\":100,\"rank\":0}",
	"{\"type\":\"rank\",\"ts_ns\":1000001000000,\"pid\":101,\"rank\":1}",
	"{\"type\":\"nccl_thread\",\"ts_ns\":1000002000000,\"pid\":101,\"tid\":111,\"role\":"
	"\"proxy_progress\"}",
	"{\"type\":\"nccl\",\"ts_ns\":1000010000000,\"pid\":100,\"tid\":100,\"probe\":\"comm_"
	"init\",\"event\":\"enter\",\"phase\":\"init\"}",
	"{\"type\":\"nccl\",\"ts_ns\":1000011000000,\"pid\":100,\"tid\":100,\"probe\":\"bootstrap_"
	"init\",\"event\":\"enter\",\"phase\":\"bootstrap\",\"rank\":0}",
	"{\"type\":\"nccl\",\"ts_ns\":1000015000000,\"pid\":100,\"tid\":100,\"probe\":\"bootstrap_"
	"init\",\"event\":\"exit\",\"phase\":\"bootstrap\"}",
	"{\"type\":\"nccl\",\"ts_ns\":1000016000000,\"pid\":100,\"tid\":100,\"probe\":\"socket_"
	"connect\",\"event\":\"enter\",\"phase\":\"socket connect\"}",
	"{\"type\":\"nccl\",\"ts_ns\":1000020000000,\"pid\":100,\"tid\":100,\"probe\":\"comm_"
	"init\",\"event\":\"exit\",\"phase\":\"init\"}",
	"{\"type\":\"nccl\",\"ts_ns\":1000030000000,\"pid\":101,\"tid\":101,\"probe\":\"ring_"
	"connect\",\"event\":\"enter\",\"phase\":\"ring setup\"}",
	"{\"type\":\"nccl\",\"ts_ns\":1000040000000,\"pid\":100,\"tid\":100,\"probe\":\"enqueue\","
	"\"event\":\"enter\",\"phase\":\"enqueue\",\"coll\":\"AllReduce\",\"comm_hash\":\"9f3c\","
	"\"seq\":1}",
	"{\"type\":\"nccl\",\"ts_ns\":1000060000000,\"pid\":101,\"tid\":101,\"probe\":\"enqueue\","
	"\"event\":\"enter\",\"phase\":\"enqueue\",\"coll\":\"AllReduce\",\"comm_hash\":\"9f3c\","
	"\"seq\":1}",
	"{\"type\":\"snapshot\",\"ts_ns\":1001000000000,\"procs\":[{\"pid\":100,\"nccl\":{"
	"\"comms\":[{\"comm_hash\":\"9f3c\",\"collectives\":{\"AllReduce\":1}}]}}],\"conns\":[{"
	"\"id\":\"a\",\"pid\":100,\"bytes_sent\":1000000,\"bytes_recv\":0}]}",
	"{\"type\":\"snapshot\",\"ts_ns\":1002000000000,\"procs\":[],\"conns\":[{\"id\":\"a\","
	"\"pid\":100,\"bytes_sent\":3000000,\"bytes_recv\":0}]}",
	"{\"type\":\"finding\",\"event\":\"open\",\"id\":1,\"kind\":\"stall\",\"pid\":101,\"rank\":"
	"1,\"ts_ns\":1001500000000,\"summary\":\"rank 1 sleeps\",\"evidence\":[\"x\"]}",
	"{\"type\":\"finding\",\"event\":\"close\",\"id\":1,\"kind\":\"stall\",\"pid\":101,"
	"\"rank\":1,\"ts_ns\":1001900000000,\"summary\":\"rank 1 sleeps\",\"evidence\":[\"x\"]}",
	"{\"type\":\"footer\",\"ts_ns\":1003000000000}",
};

static json_t *convert_lines(const char *const *lines, int n, char *err, size_t errlen)
{
	char path[] = "/tmp/nt-convert-XXXXXX";
	int fd = mkstemp(path);
	FILE *f;
	json_t *t;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	for (int i = 0; i < n; i++)
		fprintf(f, "%s\n", lines[i]);
	fclose(f);
	t = convert_dump(path, false, err, errlen);
	unlink(path);
	return t;
}

/* The event, which must be there: of one that is missing every field would read 0, and two
 * missing ones would compare equal. */
static json_t *find_ev(json_t *ev, const char *ph, const char *name, int pid)
{
	size_t i;
	json_t *e;

	json_array_foreach(ev, i, e)
	{
		if (!strcmp(json_string_value(json_object_get(e, "ph")), ph) &&
		    !strcmp(json_string_value(json_object_get(e, "name")), name) &&
		    json_integer_value(json_object_get(e, "pid")) == pid)
			return e;
	}
	fail_msg("no event ph '%s' name '%s' on pid %d in the trace", ph, name, pid);
	return NULL;
}

static double num(json_t *e, const char *k)
{
	return json_number_value(json_object_get(e, k));
}

static void test_convert_contract(void **state)
{
	char err[256];
	json_t *t = convert_lines(dump_lines, sizeof(dump_lines) / sizeof(dump_lines[0]), err,
				  sizeof(err));
	json_t *ev, *e, *a, *b;
	double last = 0;
	size_t i;

	(void)state;
	assert_non_null(t);
	ev = json_object_get(t, "traceEvents");
	assert_true(json_is_array(ev));
	/* every event has what the format wants, in time order */
	json_array_foreach(ev, i, e)
	{
		assert_true(json_is_string(json_object_get(e, "ph")));
		assert_true(json_is_string(json_object_get(e, "name")));
		assert_true(json_is_integer(json_object_get(e, "pid")));
		assert_true(json_is_integer(json_object_get(e, "tid")));
		assert_true(num(e, "ts") >= last);
		last = num(e, "ts");
	}
	/* pid = rank; names for processes and threads */
	e = find_ev(ev, "M", "process_name", 1);
	assert_string_equal(json_string_value(json_object_get(json_object_get(e, "args"), "name")),
			    "rank 1 (pid 101)");
	e = find_ev(ev, "M", "thread_name", 1);
	assert_non_null(e);
	/* nested phases: init 10..20 ms contains bootstrap 11..15 ms, on rank 0's main thread */
	a = find_ev(ev, "X", "init", 0);
	b = find_ev(ev, "X", "bootstrap", 0);
	assert_non_null(a);
	assert_non_null(b);
	assert_true(num(a, "ts") == 10000 && num(a, "dur") == 10000);
	assert_true(num(b, "ts") == 11000 && num(b, "dur") == 4000);
	assert_int_equal(json_integer_value(json_object_get(a, "tid")), 100);
	/* a phase left open inside a closed one ends with it; one never left ends with the trace */
	e = find_ev(ev, "X", "socket connect", 0);
	assert_true(num(e, "ts") == 16000 && num(e, "dur") == 4000);
	e = find_ev(ev, "X", "ring setup", 1);
	assert_true(num(e, "ts") == 30000 && num(e, "ts") + num(e, "dur") == 3000000);
	/* the collective: rank 0 waits from its launch (40 ms) until rank 1's (60 ms) */
	a = find_ev(ev, "b", "AllReduce #1", 0);
	b = find_ev(ev, "e", "AllReduce #1", 0);
	assert_true(num(a, "ts") == 40000 && num(b, "ts") == 60000);
	assert_string_equal(json_string_value(json_object_get(a, "id")),
			    json_string_value(json_object_get(b, "id")));
	a = find_ev(ev, "b", "AllReduce #1", 1);
	b = find_ev(ev, "e", "AllReduce #1", 1);
	assert_true(num(a, "ts") == num(b, "ts")); /* the last one waits for nobody */
	/* 2 MB in the second between the snapshots */
	e = find_ev(ev, "C", "TCP MB/s sent", 0);
	assert_true(num(json_object_get(e, "args"), "MB/s") == 2.0);
	e = find_ev(ev, "C", "collectives, comm 9f3c", 0);
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(e, "args"), "AllReduce")), 1);
	/* the finding on the culprit's process */
	e = find_ev(ev, "i", "stall opened", 1);
	assert_non_null(e);
	assert_string_equal(json_string_value(json_object_get(e, "s")), "p");
	assert_non_null(find_ev(ev, "i", "stall closed", 1));
	json_decref(t);
}

/* On every track, two slices are disjoint or one holds the other. */
static void test_convert_nesting(void **state)
{
	char err[256];
	json_t *t = convert_lines(dump_lines, sizeof(dump_lines) / sizeof(dump_lines[0]), err,
				  sizeof(err));
	json_t *ev = json_object_get(t, "traceEvents"), *x, *y;
	size_t i, j, nx = 0;

	(void)state;
	json_array_foreach(ev, i, x)
	{
		double xs = num(x, "ts"), xe = xs + num(x, "dur");

		if (strcmp(json_string_value(json_object_get(x, "ph")), "X"))
			continue;
		nx++;
		json_array_foreach(ev, j, y)
		{
			double ys = num(y, "ts"), ye = ys + num(y, "dur");

			if (i == j || strcmp(json_string_value(json_object_get(y, "ph")), "X") ||
			    json_integer_value(json_object_get(x, "pid")) !=
				    json_integer_value(json_object_get(y, "pid")) ||
			    json_integer_value(json_object_get(x, "tid")) !=
				    json_integer_value(json_object_get(y, "tid")))
				continue;
			assert_true(xe <= ys || ye <= xs || (xs <= ys && ye <= xe) ||
				    (ys <= xs && xe <= ye));
		}
	}
	assert_int_equal(nx, 4);
	json_decref(t);
}

/*
 * The convert command's way (convert_dumps_sink): the same events as the trace held in memory,
 * each once, in the same time order, with one dump; two dumps of one job on one axis
 */
static void test_convert_streamed(void **state)
{
	char path[] = "/tmp/nt-convert-XXXXXX", err[256], *buf = NULL, *paths[2];
	int fd = mkstemp(path);
	size_t n = 0, len = 0;
	struct convert_sink *s;
	json_t *held, *streamed;
	FILE *f;

	(void)state;
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	for (size_t i = 0; i < sizeof(dump_lines) / sizeof(dump_lines[0]); i++)
		fprintf(f, "%s\n", dump_lines[i]);
	fclose(f);
	held = convert_dump(path, false, err, sizeof(err));
	assert_non_null(held);
	paths[0] = paths[1] = path;
	s = convert_dumps_sink(paths, 1, err, sizeof(err));
	assert_non_null(s);
	f = open_memstream(&buf, &len);
	assert_int_equal(convert_sink_write(s, f, &n, err, sizeof(err)), 0);
	fclose(f);
	convert_sink_free(s);
	streamed = json_loads(buf, 0, NULL);
	assert_non_null(streamed);
	assert_int_equal(n, json_array_size(json_object_get(held, "traceEvents")));
	assert_true(json_equal(held, streamed));
	json_decref(streamed);
	free(buf);
	/* the same dump twice, as two hosts: every event twice, still in time order */
	s = convert_dumps_sink(paths, 2, err, sizeof(err));
	assert_non_null(s);
	buf = NULL;
	f = open_memstream(&buf, &len);
	assert_int_equal(convert_sink_write(s, f, &n, err, sizeof(err)), 0);
	fclose(f);
	convert_sink_free(s);
	streamed = json_loads(buf, 0, NULL);
	assert_int_equal(n, 2 * json_array_size(json_object_get(held, "traceEvents")));
	{
		json_t *ev = json_object_get(streamed, "traceEvents"), *e;
		double last = 0;
		size_t i;

		assert_int_equal(json_array_size(ev), n);
		json_array_foreach(ev, i, e)
		{
			assert_true(num(e, "ts") >= last);
			last = num(e, "ts");
		}
	}
	json_decref(streamed);
	json_decref(held);
	free(buf);
	/* a dump that is not one: NULL, with why */
	paths[0] = "/nonexistent/dump.jsonl";
	assert_null(convert_dumps_sink(paths, 1, err, sizeof(err)));
	assert_non_null(strstr(err, "/nonexistent/dump.jsonl"));
	unlink(path);
}

static void test_convert_bad_dump(void **state)
{
	static const char *const bad[] = {"{\"nccltrace\":1,\"start_ns\":1}", "{not json"};
	char err[256] = "";

	(void)state;
	assert_null(convert_lines(bad, 2, err, sizeof(err)));
	assert_non_null(strstr(err, ":2:"));
	assert_null(convert_dump("/nonexistent/dump.jsonl", false, err, sizeof(err)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_convert_contract),
		cmocka_unit_test(test_convert_nesting),
		cmocka_unit_test(test_convert_streamed),
		cmocka_unit_test(test_convert_bad_dump),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
