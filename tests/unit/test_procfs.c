// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "trace/procfs.h"

/* This process's own /proc/self/stat line, the template for the synthetic ones. */
static void self_stat(char *buf, size_t len)
{
	int fd = open("/proc/self/stat", O_RDONLY);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, len - 1);
	close(fd);
	assert_true(n > 0);
	buf[n] = '\0';
}

/* The real line with its "(comm)" replaced by "(" comm ")". */
static void with_comm(const char *real, const char *comm, char *out, size_t len)
{
	const char *open_p = strchr(real, '('), *close_p = strrchr(real, ')');

	assert_non_null(open_p);
	assert_non_null(close_p);
	snprintf(out, len, "%.*s(%s%s", (int)(open_p - real), real, comm, close_p);
}

static void test_parse_self(void **state)
{
	char buf[1024];
	struct proc_stat st;

	(void)state;
	self_stat(buf, sizeof(buf));
	memset(&st, 0, sizeof(st));
	assert_int_equal(procfs_parse_stat(buf, &st), 0);
	/* reading its own stat, this process is running */
	assert_int_equal(st.state, 'R');
	assert_int_equal(st.ppid, getppid());
	assert_string_equal(st.comm, "test_procfs");
}

static void test_parse_comm_with_spaces_and_parens(void **state)
{
	char real[1024], buf[1200];
	struct proc_stat ref, st;

	(void)state;
	self_stat(real, sizeof(real));
	assert_int_equal(procfs_parse_stat(real, &ref), 0);

	with_comm(real, "a b) c", buf, sizeof(buf));
	assert_non_null(strstr(buf, "(a b) c) R "));
	memset(&st, 0, sizeof(st));
	assert_int_equal(procfs_parse_stat(buf, &st), 0);
	assert_string_equal(st.comm, "a b) c");
	assert_int_equal(st.state, ref.state);
	assert_int_equal(st.ppid, ref.ppid);
	assert_true(st.cpu_ns == ref.cpu_ns);

	with_comm(real, "((x) (y", buf, sizeof(buf));
	assert_int_equal(procfs_parse_stat(buf, &st), 0);
	assert_string_equal(st.comm, "((x) (y");
	assert_int_equal(st.ppid, ref.ppid);

	with_comm(real, ") S 1 2 3", buf, sizeof(buf));
	assert_int_equal(procfs_parse_stat(buf, &st), 0);
	assert_string_equal(st.comm, ") S 1 2 3");
	assert_int_equal(st.state, ref.state);
	assert_int_equal(st.ppid, ref.ppid);

	with_comm(real, "", buf, sizeof(buf));
	assert_int_equal(procfs_parse_stat(buf, &st), 0);
	assert_string_equal(st.comm, "");

	/* longer than the kernel's 15 characters: cut, terminated */
	with_comm(real, "0123456789abcdefghij", buf, sizeof(buf));
	assert_int_equal(procfs_parse_stat(buf, &st), 0);
	assert_string_equal(st.comm, "0123456789abcde");
	assert_int_equal(st.ppid, ref.ppid);
}

static void test_parse_fields(void **state)
{
	/* pid comm state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
	static const char line[] =
		"4711 (python3) T 4700 4711 4700 34816 -1 4194304 1200 0 3 0 250 "
		"50 0 0 20 0 4 0 123456 1000000 200 18446744073709551615\n";
	long tck = sysconf(_SC_CLK_TCK);
	struct proc_stat st;

	(void)state;
	assert_true(tck > 0);
	assert_int_equal(procfs_parse_stat(line, &st), 0);
	assert_int_equal(st.state, 'T');
	assert_int_equal(st.ppid, 4700);
	assert_string_equal(st.comm, "python3");
	assert_true(st.cpu_ns == 300ULL * (1000000000ULL / tck));
}

static void test_parse_stat_garbage(void **state)
{
	static const char *const bad[] = {
		"",
		"1234",
		"1234 (x",
		"1234 x) S 1 2 3 4 5 6 7 8 9 10 11 12",
		"1234 )x( S 1 2 3 4 5 6 7 8 9 10 11 12",
		"1234 (x) S",
		"1234 (x) S 1 2 3",
		"1234 (x) S one 2 3 4 5 6 7 8 9 10 11 12",
		"1234 (x) S 1 2 3 4 5 6 7 8 9 10 11 twelve 13",
	};
	struct proc_stat st;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (procfs_parse_stat(bad[i], &st) != -EINVAL)
			fail_msg("'%s' accepted", bad[i]);
}

static void test_parse_syscall(void **state)
{
	long nr;
	unsigned long arg0;

	(void)state;
	nr = 5;
	arg0 = 5;
	assert_int_equal(procfs_parse_syscall("running\n", &nr, &arg0), 0);
	assert_int_equal(nr, -1);
	assert_int_equal(arg0, 0);

	assert_int_equal(procfs_parse_syscall("232 0x5 0x7ffd1c2e4f20 0x10 0xffffffff 0x0 0x8 "
					      "0x7ffd1c2e4ef8 0x7f3b2c8e5d3e\n",
					      &nr, &arg0),
			 0);
	assert_int_equal(nr, 232);
	assert_int_equal(arg0, 5);

	assert_int_equal(procfs_parse_syscall("45 0x1f 0x7f00 0x4\n", &nr, &arg0), 0);
	assert_int_equal(nr, 45);
	assert_int_equal(arg0, 0x1f);

	assert_int_equal(procfs_parse_syscall("0 0xffffffffffffffff 0x0\n", &nr, &arg0), 0);
	assert_int_equal(nr, 0);
	assert_true(arg0 == ~0UL);
}

static void test_parse_syscall_garbage(void **state)
{
	static const char *const bad[] = {"", "\n", "garbage", "run", "x232 0x5", "RUNNING"};
	long nr;
	unsigned long arg0;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		nr = 77;
		if (procfs_parse_syscall(bad[i], &nr, &arg0) != -EINVAL)
			fail_msg("'%s' accepted as %ld", bad[i], nr);
	}
}

static void test_read_stat_self(void **state)
{
	struct proc_stat st;

	(void)state;
	assert_int_equal(procfs_read_stat(getpid(), &st), 0);
	assert_int_equal(st.ppid, getppid());
	assert_string_equal(st.comm, "test_procfs");
	/* pid 0 is not a process in /proc */
	assert_int_equal(procfs_read_stat(0, &st), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_self),
		cmocka_unit_test(test_parse_comm_with_spaces_and_parens),
		cmocka_unit_test(test_parse_fields),
		cmocka_unit_test(test_parse_stat_garbage),
		cmocka_unit_test(test_parse_syscall),
		cmocka_unit_test(test_parse_syscall_garbage),
		cmocka_unit_test(test_read_stat_self),
	};

	return cmocka_run_group_tests_name("procfs", tests, NULL, NULL);
}
