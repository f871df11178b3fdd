// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>
#include "util/fmt.h"
#include "testutil.h"

static void test_count(void **state)
{
	static const struct {
		uint64_t n;
		const char *want;
	} cases[] = {
		{0, "0"},
		{999, "999"},
		{9999, "9999"},
		{10000, "10k"},
		{81234, "81k"},
		{999999, "999k"},
		{1000000, "1.0M"},
		{1200000, "1.2M"},
		{1500000, "1.5M"},
		{999949999, "999.9M"},
		{999950000, "1.0G"},
		{999999999, "1.0G"},
		{2500000000ULL, "2.5G"},
	};
	char buf[16];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* the buffer is what comes back */
		assert_ptr_equal(fmt_count(cases[i].n, buf, sizeof(buf)), buf);
		assert_string_equal(buf, cases[i].want);
	}
	/* cut to the buffer, terminated */
	fmt_count(123456789012ULL, buf, 4);
	assert_string_equal(buf, "123");
}

static void test_bytes(void **state)
{
	static const struct {
		uint64_t n;
		const char *want;
	} cases[] = {
		{0, "0 B"},
		{1, "1 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{1048473, "1023.9 KiB"},
		{1048575, "1.0 MiB"},
		{1048576, "1.0 MiB"},
		{5ULL << 30, "5.0 GiB"},
		{3ULL << 39, "1.5 TiB"},
		{1ULL << 50, "1024.0 TiB"},
	};
	char buf[24];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_ptr_equal(fmt_bytes(cases[i].n, buf, sizeof(buf)), buf);
		assert_string_equal(buf, cases[i].want);
	}
}

static struct nt_tuple tuple(int family, const char *sa, int sp, const char *da, int dp)
{
	return test_tuple(family, sa, sp, da, dp);
}

static void test_endpoint_ipv4(void **state)
{
	struct nt_tuple t = tuple(AF_INET, "127.0.0.1", 40312, "10.1.2.3", 29500);
	char buf[64];

	(void)state;
	assert_ptr_equal(fmt_endpoint(&t, 1, buf, sizeof(buf)), buf);
	assert_string_equal(buf, "127.0.0.1:40312");
	fmt_endpoint(&t, 0, buf, sizeof(buf));
	assert_string_equal(buf, "10.1.2.3:29500");
	t = tuple(AF_INET, "255.255.255.255", 65535, "0.0.0.0", 0);
	fmt_endpoint(&t, 1, buf, sizeof(buf));
	assert_string_equal(buf, "255.255.255.255:65535");
	fmt_endpoint(&t, 0, buf, sizeof(buf));
	assert_string_equal(buf, "0.0.0.0:0");
	/* short buffer: cut, terminated */
	fmt_endpoint(&t, 1, buf, 8);
	assert_string_equal(buf, "255.255");
}

static void test_endpoint_ipv6(void **state)
{
	struct nt_tuple t = tuple(AF_INET6, "fe80::1:2", 51000, "::1", 80);
	char buf[64];

	(void)state;
	fmt_endpoint(&t, 0, buf, sizeof(buf));
	assert_string_equal(buf, "[::1]:80");
	fmt_endpoint(&t, 1, buf, sizeof(buf));
	assert_string_equal(buf, "[fe80::1:2]:51000");
	t = tuple(AF_INET6, "::ffff:10.0.0.1", 1, "::", 2);
	fmt_endpoint(&t, 1, buf, sizeof(buf));
	assert_string_equal(buf, "[::ffff:10.0.0.1]:1");
	fmt_endpoint(&t, 0, buf, sizeof(buf));
	assert_string_equal(buf, "[::]:2");
}

static void test_fmt_tuple(void **state)
{
	struct nt_tuple t = tuple(AF_INET, "127.0.0.1", 40312, "127.0.0.1", 40001);
	char buf[112];
	const char *longest = "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535->"
			      "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535";

	(void)state;
	assert_ptr_equal(fmt_tuple(&t, buf, sizeof(buf)), buf);
	assert_string_equal(buf, "127.0.0.1:40312->127.0.0.1:40001");
	t = tuple(AF_INET6, "::1", 40312, "::1", 80);
	fmt_tuple(&t, buf, sizeof(buf));
	assert_string_equal(buf, "[::1]:40312->[::1]:80");
	/* the longest there is fits the buffers the callers use */
	t = tuple(AF_INET6, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 65535,
		  "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 65535);
	fmt_tuple(&t, buf, sizeof(buf));
	assert_string_equal(buf, longest);
}

static void test_tcp_state(void **state)
{
	(void)state;
	assert_string_equal(fmt_tcp_state(1), "ESTABLISHED");
	assert_string_equal(fmt_tcp_state(2), "SYN_SENT");
	assert_string_equal(fmt_tcp_state(3), "SYN_RECV");
	assert_string_equal(fmt_tcp_state(6), "TIME_WAIT");
	assert_string_equal(fmt_tcp_state(7), "CLOSE");
	assert_string_equal(fmt_tcp_state(8), "CLOSE_WAIT");
	assert_string_equal(fmt_tcp_state(10), "LISTEN");
	assert_string_equal(fmt_tcp_state(12), "NEW_SYN_RECV");
	assert_string_equal(fmt_tcp_state(13), "BOUND_INACTIVE");
	assert_string_equal(fmt_tcp_state(0), "?");
	assert_string_equal(fmt_tcp_state(14), "?");
	assert_string_equal(fmt_tcp_state(0xffffffffu), "?");
}

static void test_syscall(void **state)
{
	(void)state;
#ifdef __x86_64__
	assert_string_equal(fmt_syscall(45), "recvfrom");
	assert_string_equal(fmt_syscall(44), "sendto");
	assert_string_equal(fmt_syscall(0), "read");
	assert_string_equal(fmt_syscall(202), "futex");
	assert_string_equal(fmt_syscall(230), "clock_nanosleep");
	assert_string_equal(fmt_syscall(232), "epoll_wait");
	assert_string_equal(fmt_syscall(42), "connect");
	assert_string_equal(fmt_syscall(288), "accept4");
	assert_null(fmt_syscall(3)); /* close: nothing anyone waits in */
	assert_null(fmt_syscall(9999));
#endif
	assert_null(fmt_syscall(-1));
}

static void test_safe(void **state)
{
	char b[64];

	(void)state;
	/* escape sequences: the ESC, BEL and CSI bytes go, the printable rest stays */
	assert_string_equal(fmt_safe("ring\x1b]0;pwned\x07job", b, sizeof(b)), "ring?]0;pwned?job");
	assert_string_equal(fmt_safe("a\x1b[2Jb\x7f", b, sizeof(b)), "a?[2Jb?");
	/* C1 controls, raw (8-bit CSI) and UTF-8 encoded (U+009B) */
	assert_string_equal(fmt_safe("x\x9b"
				     "31my",
				     b, sizeof(b)),
			    "x?31my");
	assert_string_equal(fmt_safe("x\xc2\x9b"
				     "31my",
				     b, sizeof(b)),
			    "x?31my");
	/* newlines cannot forge a line of their own; a tab is a space */
	assert_string_equal(fmt_safe("a\nFAKE\r\tb", b, sizeof(b)), "a?FAKE? b");
	/* valid UTF-8 stays, invalid forms do not: overlong '/', a surrogate, a cut character */
	assert_string_equal(fmt_safe("r\xc3\xa9seau \xe2\x86\x90", b, sizeof(b)),
			    "r\xc3\xa9seau \xe2\x86\x90");
	assert_string_equal(fmt_safe("\xc0\xaf\xed\xa0\x80\xe2\x86", b, sizeof(b)), "???????");
	/* cut at the buffer, never inside a character */
	assert_string_equal(fmt_safe("ab\xe2\x86\x90", b, 5), "ab");
	assert_string_equal(fmt_safe("abcdef", b, 4), "abc");
	assert_string_equal(fmt_safe(NULL, b, sizeof(b)), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_count),	      cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_endpoint_ipv4), cmocka_unit_test(test_endpoint_ipv6),
		cmocka_unit_test(test_fmt_tuple),     cmocka_unit_test(test_tcp_state),
		cmocka_unit_test(test_syscall),	      cmocka_unit_test(test_safe),
	};

	return cmocka_run_group_tests_name("fmt", tests, NULL, NULL);
}
