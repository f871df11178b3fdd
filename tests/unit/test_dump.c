// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "present/dump.h"
#include "present/records.h"
#include "testutil.h"
#include "nccltrace.h"

#define ERRLEN 512

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

#define WRITE_STR(path, s) write_file((path), (s), sizeof(s) - 1)

static size_t read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, len - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	return n;
}

/* What dump_read handed over. */
struct got {
	int n;
	int stop_at; /* return non-zero at this line */
	int line[64];
	long long i[64];
	char type[64][16];
};

static int collect(void *ctx, json_t *rec, int line)
{
	struct got *g = ctx;
	const char *type = json_string_value(json_object_get(rec, "type"));

	assert_true(g->n < 64);
	assert_true(json_is_object(rec));
	g->line[g->n] = line;
	g->i[g->n] = json_integer_value(json_object_get(rec, "i"));
	snprintf(g->type[g->n], sizeof(g->type[0]), "%s", type ? type : "");
	g->n++;
	return g->stop_at && line == g->stop_at;
}

static void write_records(const char *path, int n)
{
	struct dump *d = NULL;

	assert_int_equal(dump__create(path, false, 0, 0, &d), 0);
	assert_non_null(d);
	assert_string_equal(dump__path(d), path);
	{
		json_t *h = json_pack("{s:i,s:s}", "nccltrace", NT_DUMP_FORMAT, "type", "header");

		assert_int_equal(dump__write(d, h), 0);
		json_decref(h);
	}
	for (int i = 0; i < n; i++) {
		json_t *r = json_pack("{s:s,s:i}", "type", "rec", "i", i);

		assert_int_equal(dump__write(d, r), 0);
		json_decref(r);
	}
	dump__close(d);
}

static void test_write_then_read(void **state)
{
	struct test_tmp *t = *state;
	struct got g = {0};
	char err[ERRLEN];
	struct stat st;
	mode_t old = umask(022);

	write_records(t->path, 5);
	umask(old);
	assert_int_equal(stat(t->path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0640);

	assert_int_equal(dump_read(t->path, collect, &g, err, sizeof(err)), 0);
	assert_int_equal(g.n, 6);
	assert_string_equal(g.type[0], "header");
	assert_int_equal(g.line[0], 1);
	for (int i = 0; i < 5; i++) {
		assert_string_equal(g.type[i + 1], "rec");
		assert_int_equal(g.i[i + 1], i);
		assert_int_equal(g.line[i + 1], i + 2);
	}
}

static void test_write_format(void **state)
{
	struct test_tmp *t = *state;
	struct dump *d;
	json_t *r;
	char buf[512];

	assert_int_equal(dump__create(t->path, false, 0, 0, &d), 0);
	r = json_pack("{s:i,s:s}", "nccltrace", 1, "host", "h\xc3\xa9");
	assert_int_equal(dump__write(d, r), 0);
	json_decref(r);
	r = json_pack("{s:[i,i]}", "a", 1, 2);
	assert_int_equal(dump__write(d, r), 0);
	json_decref(r);
	dump__close(d);
	/* compact, ASCII only, one record a line, each ending in a newline */
	read_file(t->path, buf, sizeof(buf));
	assert_string_equal(buf, "{\"nccltrace\":1,\"host\":\"h\\u00E9\"}\n{\"a\":[1,2]}\n");
}

/* uid and gid nobody has, to see that the file changed hands */
#define OTHER_UID 65534
#define OTHER_GID 65534

static void test_create_chown(void **state)
{
	struct test_tmp *t = *state;
	struct dump *d;
	struct stat st;
	char other[160];

	/* giving it to ourselves is allowed with or without root */
	assert_int_equal(dump__create(t->path, true, getuid(), getgid(), &d), 0);
	dump__close(d);
	assert_int_equal(stat(t->path, &st), 0);
	assert_int_equal(st.st_uid, getuid());
	assert_int_equal(st.st_gid, getgid());
	/* to someone else, only root can: the owner shows whether the chown ran, and when */
	if (geteuid() != 0) {
		print_message("test_create_chown: not root, so the chown to uid %d is not tried\n",
			      OTHER_UID);
		skip();
	}
	snprintf(other, sizeof(other), "%s/other.jsonl", t->dir);
	assert_int_equal(dump__create(other, true, OTHER_UID, OTHER_GID, &d), 0);
	dump__close(d);
	assert_int_equal(stat(other, &st), 0);
	assert_int_equal(st.st_uid, OTHER_UID);
	assert_int_equal(st.st_gid, OTHER_GID);
	unlink(other);
	assert_int_equal(dump__create(other, false, OTHER_UID, OTHER_GID, &d), 0);
	dump__close(d);
	assert_int_equal(stat(other, &st), 0);
	assert_int_equal(st.st_uid, getuid());
	assert_int_equal(st.st_gid, getgid());
}

static void test_create_refuses_existing(void **state)
{
	struct test_tmp *t = *state;
	struct dump *d = NULL;
	char buf[64];

	WRITE_STR(t->path, "precious\n");
	assert_int_equal(dump__create(t->path, false, 0, 0, &d), -EEXIST);
	assert_null(d);
	read_file(t->path, buf, sizeof(buf));
	assert_string_equal(buf, "precious\n");
}

static void test_create_refuses_symlink(void **state)
{
	struct test_tmp *t = *state;
	struct dump *d = NULL;
	char target[160], link[160], other[160], buf[64];
	struct stat st;
	int err;

	snprintf(target, sizeof(target), "%s/target-not-there", t->dir);
	snprintf(link, sizeof(link), "%s/link.jsonl", t->dir);
	assert_int_equal(symlink(target, link), 0);
	err = dump__create(link, false, 0, 0, &d);
	assert_true(err < 0);
	assert_int_equal(err, -EEXIST);
	assert_null(d);
	/* the link was not followed */
	assert_int_equal(lstat(target, &st), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));

	/* nor is one to an existing file written through */
	snprintf(other, sizeof(other), "%s/other", t->dir);
	WRITE_STR(other, "keep\n");
	unlink(link);
	assert_int_equal(symlink(other, link), 0);
	assert_true(dump__create(link, false, 0, 0, &d) < 0);
	read_file(other, buf, sizeof(buf));
	assert_string_equal(buf, "keep\n");
}

static void test_create_missing_dir(void **state)
{
	struct test_tmp *t = *state;
	struct dump *d = NULL;
	char path[192];

	snprintf(path, sizeof(path), "%s/no/such/dir.jsonl", t->dir);
	assert_int_equal(dump__create(path, false, 0, 0, &d), -ENOENT);
	assert_null(d);
}

static void test_read_missing_file(void **state)
{
	struct test_tmp *t = *state;
	struct got g = {0};
	char err[ERRLEN];

	assert_int_equal(dump_read(t->path, collect, &g, err, sizeof(err)), -1);
	assert_contains(err, t->path);
	assert_contains(err, strerror(ENOENT));
	assert_int_equal(g.n, 0);
}

static void test_read_empty(void **state)
{
	struct test_tmp *t = *state;
	struct got g = {0};
	char err[ERRLEN];

	write_file(t->path, "", 0);
	assert_int_equal(dump_read(t->path, collect, &g, err, sizeof(err)), -1);
	assert_contains(err, t->path);
	assert_contains(err, "empty");
	assert_int_equal(g.n, 0);

	/* blank lines only: still nothing */
	WRITE_STR(t->path, "\n\n");
	assert_int_equal(dump_read(t->path, collect, &g, err, sizeof(err)), -1);
	assert_int_equal(g.n, 0);
}

static void test_read_no_header(void **state)
{
	struct test_tmp *t = *state;
	struct got g = {0};
	char err[ERRLEN];

	WRITE_STR(t->path, "{\"type\":\"proc\",\"pid\":1}\n{\"nccltrace\":1}\n");
	assert_int_equal(dump_read(t->path, collect, &g, err, sizeof(err)), -1);
	assert_contains(err, ":1:");
	assert_contains(err, "not an nccltrace dump");
	assert_int_equal(g.n, 0);

	/* "nccltrace" must be the format number */
	WRITE_STR(t->path, "{\"nccltrace\":\"1\"}\n");
	assert_int_equal(dump_read(t->path, collect, &g, err, sizeof(err)), -1);
	assert_contains(err, ":1:");
	assert_int_equal(g.n, 0);
}

static void test_read_header_after_blank_line(void **state)
{
	struct test_tmp *t = *state;
	struct got g = {0};
	char err[ERRLEN];

	/* a blank first line does not let a file without a header through */
	WRITE_STR(t->path, "\n{\"type\":\"proc\"}\n");
	assert_int_equal(dump_read(t->path, collect, &g, err, sizeof(err)), -1);
	assert_contains(err, ":2:");
	assert_contains(err, "not an nccltrace dump");
	assert_int_equal(g.n, 0);

	/* blank lines around records are skipped, and the line numbers stay right */
	WRITE_STR(t->path, "\n{\"nccltrace\":1}\n\n{\"type\":\"x\",\"i\":4}\n");
	assert_int_equal(dump_read(t->path, collect, &g, err, sizeof(err)), 0);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.line[0], 2);
	assert_int_equal(g.line[1], 4);
	assert_int_equal(g.i[1], 4);
}

static void test_read_future_format(void **state)
{
	struct test_tmp *t = *state;
	struct got g = {0};
	char err[ERRLEN], want[32];
	char buf[64];
	int len;

	len = snprintf(buf, sizeof(buf), "{\"nccltrace\":%d}\n{\"type\":\"x\"}\n",
		       NT_DUMP_FORMAT + 1);
	write_file(t->path, buf, len);
	assert_int_equal(dump_read(t->path, collect, &g, err, sizeof(err)), -1);
	assert_contains(err, ":1:");
	assert_contains(err, "newer");
	snprintf(want, sizeof(want), "%d", NT_DUMP_FORMAT + 1);
	assert_contains(err, want);
	assert_int_equal(g.n, 0);
}

static void test_read_garbage_line(void **state)
{
	struct test_tmp *t = *state;
	struct got g = {0};
	char err[ERRLEN];

	WRITE_STR(t->path, "{\"nccltrace\":1}\n{\"type\":\"a\"}\ngarbage{\n{\"type\":\"b\"}\n");
	assert_int_equal(dump_read(t->path, collect, &g, err, sizeof(err)), -1);
	assert_contains(err, t->path);
	assert_contains(err, ":3:");
	assert_null(strchr(err, '\n'));
	/* everything before the bad line was read, nothing after */
	assert_int_equal(g.n, 2);
	assert_string_equal(g.type[1], "a");

	/* valid JSON that is not an object */
	g.n = 0;
	WRITE_STR(t->path, "{\"nccltrace\":1}\n[1,2]\n");
	assert_int_equal(dump_read(t->path, collect, &g, err, sizeof(err)), -1);
	assert_contains(err, ":2:");
	assert_contains(err, "not a JSON object");
	assert_int_equal(g.n, 1);
}

static void test_read_truncated_last_line(void **state)
{
	struct test_tmp *t = *state;
	struct got g = {0};
	char err[ERRLEN];

	/* a full disk or a killed tracer: the records before the cut one are read, and only they */
	WRITE_STR(t->path, "{\"nccltrace\":1}\n{\"type\":\"a\"}\n{\"type\":\"b\",\"i\":");
	assert_int_equal(dump_read(t->path, collect, &g, err, sizeof(err)), 0);
	assert_int_equal(g.n, 2);

	/* a complete record that lacks its newline was cut short all the same */
	g.n = 0;
	WRITE_STR(t->path, "{\"nccltrace\":1}\n{\"type\":\"a\"}");
	assert_int_equal(dump_read(t->path, collect, &g, err, sizeof(err)), 0);
	assert_int_equal(g.n, 1);

	/* but a dump cut inside its header is none */
	g.n = 0;
	WRITE_STR(t->path, "{\"nccltrace\":1");
	assert_int_equal(dump_read(t->path, collect, &g, err, sizeof(err)), -1);
	assert_contains(err, ":1: cut short before its header");
	assert_int_equal(g.n, 0);
}

static void test_read_binary(void **state)
{
	struct test_tmp *t = *state;
	struct got g = {0};
	char err[ERRLEN];

	WRITE_STR(t->path, "{\"nccltrace\":1}\n{\"a\":1}\0\x01\x02zz\n");
	assert_int_equal(dump_read(t->path, collect, &g, err, sizeof(err)), -1);
	assert_contains(err, ":2:");
	assert_contains(err, "binary");
	assert_int_equal(g.n, 1);

	g.n = 0;
	WRITE_STR(t->path, "{\"nccltrace\":1}\n\xff\xfe\x89PNG\x1a\n");
	assert_int_equal(dump_read(t->path, collect, &g, err, sizeof(err)), -1);
	assert_contains(err, ":2:");
	assert_int_equal(g.n, 1);

	/* a binary file from the start */
	g.n = 0;
	WRITE_STR(t->path, "\x7f"
			   "ELF\x02\x01\x01\0\0\0\n");
	assert_int_equal(dump_read(t->path, collect, &g, err, sizeof(err)), -1);
	assert_contains(err, ":1:");
	assert_int_equal(g.n, 0);
}

static void test_read_callback_stops(void **state)
{
	struct test_tmp *t = *state;
	struct got g = {.stop_at = 3};
	char err[ERRLEN];

	write_records(t->path, 5);
	assert_int_equal(dump_read(t->path, collect, &g, err, sizeof(err)), -1);
	assert_int_equal(g.n, 3);
	assert_contains(err, ":3:");
}

static void test_job_id(void **state)
{
	char buf[64], *cmd[] = {"torchrun", "--nnodes=2", "--rdzv-id", "exp/7", "train.py"},
		      *eq[] = {"torchrun", "--rdzv_id=abc", "x.py"};

	(void)state;
	dump_job_id(buf, sizeof(buf), "4242", "ignored", cmd, 5);
	assert_string_equal(buf, "slurm-4242");
	dump_job_id(buf, sizeof(buf), NULL, "r1", cmd, 5);
	assert_string_equal(buf, "run-r1");
	/* torchrun's own rendezvous id, with a '/' made harmless in a file name */
	dump_job_id(buf, sizeof(buf), "", NULL, cmd, 5);
	assert_string_equal(buf, "run-exp_7");
	dump_job_id(buf, sizeof(buf), NULL, NULL, eq, 3);
	assert_string_equal(buf, "run-abc");
	dump_job_id(buf, sizeof(buf), NULL, NULL, eq, 1);
	assert_string_equal(buf, "");
}

static void test_default_name(void **state)
{
	char buf[128], *tz = getenv("TZ"), *saved = tz ? strdup(tz) : NULL;

	(void)state;
	setenv("TZ", "UTC", 1);
	tzset();
	dump_default_name(buf, sizeof(buf), "node7", "", 1795955696, 1);
	assert_string_equal(buf, "nccltrace-node7-20261129-123456.jsonl");
	dump_default_name(buf, sizeof(buf), "h", NULL, 0, 0);
	assert_string_equal(buf, "nccltrace-h-19700101-000000.jsonl");
	/* one job's dumps, one per host, found together by its id */
	dump_default_name(buf, sizeof(buf), "node7", "slurm-4242", 0, 1);
	assert_string_equal(buf, "nccltrace-node7-slurm-4242-19700101-000000.jsonl");
	/* the next name where that one exists (two runs in one second) */
	dump_default_name(buf, sizeof(buf), "node7", "slurm-4242", 0, 2);
	assert_string_equal(buf, "nccltrace-node7-slurm-4242-19700101-000000-2.jsonl");
	dump_default_name(buf, sizeof(buf), "h", "", 0, 17);
	assert_string_equal(buf, "nccltrace-h-19700101-000000-17.jsonl");
	/* a short buffer is cut, still terminated */
	dump_default_name(buf, 12, "node7", "", 0, 1);
	assert_string_equal(buf, "nccltrace-n");
	if (saved) {
		setenv("TZ", saved, 1);
		free(saved);
	} else {
		unsetenv("TZ");
	}
	tzset();
}

/* What of a connection's events the dump keeps: every change, a lossy link's retransmits thinned */
static void test_conn_event_kept(void **state)
{
	struct nt_ev_conn e = {0};
	int kept = 0;

	(void)state;
	e.c.state = 1; /* TCP_ESTABLISHED */
	for (uint32_t n = 1; n <= 1000; n++) {
		e.c.retrans = n;
		kept += record_conn_event_kept(NT_EV_RETRANS, &e);
	}
	/* the first 8, then 64, 128, ..., 960 */
	assert_int_equal(kept, 8 + 15);
	e.c.retrans = 9;
	assert_false(record_conn_event_kept(NT_EV_RETRANS, &e));
	/* a SYN retransmitted (not established), a state change, a reset: always */
	e.c.state = 2; /* TCP_SYN_SENT */
	assert_true(record_conn_event_kept(NT_EV_RETRANS, &e));
	e.c.state = 1;
	assert_true(record_conn_event_kept(NT_EV_CONN_STATE, &e));
	assert_true(record_conn_event_kept(NT_EV_RESET, &e));
}

/*
 * Written at once while something happens; otherwise calm, held in the ring, one in 30 s kept
 * (and one that says a connection closed)
 */
static void test_snapshot_busy(void **state)
{
	const uint64_t s = NT_NSEC_PER_SEC, t0 = 1000 * s;
	struct snap_conn c = {0};
	struct snap_proc p = {0};
	struct snapshot sn = {
		.now_ns = t0 + 400 * s, .conns = &c, .nconns = 1, .procs = &p, .nprocs = 1};

	(void)state;
	assert_true(record_snapshot_busy(t0 + 30 * s, t0, 0, false)); /* first minute */
	assert_false(record_snapshot_busy(t0 + 61 * s, t0, 0, false));
	assert_true(record_snapshot_busy(t0 + 61 * s, t0, 0, true)); /* a finding open */
	/* a finding closed 20 s ago, then 30 s after it */
	assert_true(record_snapshot_busy(t0 + 290 * s, t0, t0 + 270 * s, false));
	assert_false(record_snapshot_busy(t0 + 301 * s, t0, t0 + 270 * s, false));

	assert_true(record_snapshot_kept(&sn, t0 + 370 * s, t0 + 399 * s));
	assert_false(record_snapshot_kept(&sn, t0 + 371 * s, t0 + 399 * s));
	/* closed since the last snapshot taken: kept; closed before it: written then */
	c.closed = true;
	c.closed_ns = t0 + 399 * s + 1;
	assert_true(record_snapshot_kept(&sn, t0 + 390 * s, t0 + 399 * s));
	c.closed_ns = t0 + 398 * s;
	assert_false(record_snapshot_kept(&sn, t0 + 390 * s, t0 + 399 * s));

	assert_false(snapshot_in_setup(&sn));
	p.nccl_setup = SNAP_SETUP_TRANSPORT;
	assert_true(snapshot_in_setup(&sn));
	p.exited = true;
	assert_false(snapshot_in_setup(&sn));
}

/* The footer: what was lost, and what was over the budget, per class and per NCCL probe */
static void test_footer_suppressed(void **state)
{
	uint64_t stats[NT_STAT_MAX] = {0}, supp[NT_P_MAX] = {0};
	json_t *f, *s;

	(void)state;
	stats[NT_STAT_RB_DROP] = 3;
	stats[NT_STAT_SUPP_NCCL] = 1300;
	stats[NT_STAT_SUPP_CONN] = 20;
	stats[NT_STAT_POLL_CALLS] = 1000000;
	supp[NT_P_NET_ACCEPT] = 1000;
	supp[NT_P_BOOTSTRAP_RECV] = 300;
	f = record_footer(stats, supp, 1, 0.5, 0, 42);
	s = json_object_get(f, "suppressed");
	assert_int_equal(json_integer_value(json_object_get(s, "total")), 1320);
	assert_int_equal(json_integer_value(json_object_get(s, "nccl")), 1300);
	assert_int_equal(json_integer_value(json_object_get(s, "conn")), 20);
	assert_int_equal(json_integer_value(json_object_get(s, "proc")), 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(s, "by_probe"),
							    "net_socket_accept")),
			 1000);
	assert_int_equal(json_integer_value(
				 json_object_get(json_object_get(s, "by_probe"), "bootstrap_recv")),
			 300);
	assert_int_equal(json_object_size(json_object_get(s, "by_probe")), 2);
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(f, "lost"), "ringbuf_drops")),
		3);
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(f, "totals"), "poll_calls")),
		1000000);
	json_decref(f);
	/* per probe unknown (the map could not be read): the classes still */
	f = record_footer(stats, NULL, 1, 0.5, 0, 42);
	s = json_object_get(f, "suppressed");
	assert_int_equal(json_integer_value(json_object_get(s, "total")), 1320);
	assert_int_equal(json_object_size(json_object_get(s, "by_probe")), 0);
	json_decref(f);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, test_tmp_setup, test_tmp_teardown)
	const struct CMUnitTest tests[] = {
		T(test_write_then_read),
		T(test_conn_event_kept),
		T(test_snapshot_busy),
		T(test_write_format),
		T(test_create_chown),
		T(test_create_refuses_existing),
		T(test_create_refuses_symlink),
		T(test_create_missing_dir),
		T(test_read_missing_file),
		T(test_read_empty),
		T(test_read_no_header),
		T(test_read_header_after_blank_line),
		T(test_read_future_format),
		T(test_read_garbage_line),
		T(test_read_truncated_last_line),
		T(test_read_binary),
		T(test_read_callback_stops),
		cmocka_unit_test(test_default_name),
		cmocka_unit_test(test_job_id),
		cmocka_unit_test(test_footer_suppressed),
	};
#undef T

	return cmocka_run_group_tests_name("dump", tests, NULL, NULL);
}
