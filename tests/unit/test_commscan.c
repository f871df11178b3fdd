// SPDX-License-Identifier: MIT
/*
 * attach's communicator scan (nccl/ncclcommscan.h): which candidates are a live ncclComm,
 * which mappings of /proc/PID/maps are searched, and the scan itself over this process's own
 * memory (process_vm_readv on itself needs no privilege), with comms laid out at 2.28.9's
 * offsets: live ones found, freed (zeroed magic) and torn ones not.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"
#include "nccl/ncclcommscan.h"

/* NCCL 2.28.9's struct ncclComm (the known table in nccllib.c; sizeof 1082968) */
#define HASH_OFF   0x1044c8
#define RANK_OFF   0x1044d0
#define NRANKS_OFF 0x1044d4
#define END_OFF	   1082960
#define COMM_SIZE  (END_OFF + 8)

static const struct comm_cand good = {NCCL_COMM_MAGIC, NCCL_COMM_MAGIC, 0x9f3c1234abcd0001ULL, 3,
				      8};

static void test_cand_good(void **state)
{
	(void)state;
	assert_null(comm_cand_reject(&good));
}

static void test_cand_rejects(void **state)
{
	struct comm_cand c;

	(void)state;
	c = good;
	c.end_magic = 0; /* freed: commFree zeroes both */
	assert_string_equal(comm_cand_reject(&c), "endMagic differs");
	c = good;
	c.start_magic = 0;
	assert_string_equal(comm_cand_reject(&c), "no startMagic");
	c = good;
	c.rank = 8;
	assert_string_equal(comm_cand_reject(&c), "rank out of range");
	c.rank = -1;
	assert_string_equal(comm_cand_reject(&c), "rank out of range");
	c = good;
	c.nranks = 0;
	assert_string_equal(comm_cand_reject(&c), "nRanks out of range");
	c.nranks = 65537;
	c.rank = 0;
	assert_string_equal(comm_cand_reject(&c), "nRanks out of range");
	c = good;
	c.hash = 0;
	assert_string_equal(comm_cand_reject(&c), "commHash not set");
	/* the bounds themselves */
	c = good;
	c.nranks = 65536;
	c.rank = 65535;
	assert_null(comm_cand_reject(&c));
	c.nranks = 1;
	c.rank = 0;
	assert_null(comm_cand_reject(&c));
}

static void test_maps_lines(void **state)
{
	uint64_t lo = 0, hi = 0;

	(void)state;
	/* anonymous, blank path: the next line's first field must not be taken for one */
	assert_true(comm_scan_map_wanted("7f4dcaaa2000-7f4dcb2a2000 rw-p 00000000 00:00 0 \n"
					 "7f4dcb2a2000-7f4dcb3ae000 rw-p 00000000 00:00 0 \n",
					 &lo, &hi));
	assert_int_equal(lo, 0x7f4dcaaa2000ULL);
	assert_int_equal(hi, 0x7f4dcb2a2000ULL);
	assert_true(comm_scan_map_wanted(
		"560e6f02f000-560e6f050000 rw-p 00000000 00:00 0                          [heap]",
		&lo, &hi));
	assert_true(comm_scan_map_wanted("7f0000000000-7f0000001000 rw-p 00000000 00:00 0 "
					 "[anon:glibc malloc]",
					 &lo, &hi));
	/* not malloc's: guard pages, read-only, shared, files, devices (GPU, pinned), stacks */
	assert_false(
		comm_scan_map_wanted("7f4dc4041000-7f4dc8000000 ---p 00000000 00:00 0 ", &lo, &hi));
	assert_false(comm_scan_map_wanted("7f4dcb5b8000-7f4dcb5bc000 r--p 00000000 00:00 0 "
					  "[vvar]",
					  &lo, &hi));
	assert_false(comm_scan_map_wanted("7f0000000000-7f0000100000 rw-s 00000000 00:01 4242 "
					  "/dev/shm/fakenccl-1",
					  &lo, &hi));
	assert_false(comm_scan_map_wanted("7f0000000000-7f0000100000 rw-p 00021000 08:01 1234 "
					  "/usr/lib/libnccl.so.2",
					  &lo, &hi));
	assert_false(comm_scan_map_wanted("200000000-300000000 rw-s 00000000 00:05 77 "
					  "/dev/nvidiactl",
					  &lo, &hi));
	assert_false(comm_scan_map_wanted("7ffe0b1ef000-7ffe0b210000 rw-p 00000000 00:00 0 "
					  "[stack]",
					  &lo, &hi));
	assert_false(comm_scan_map_wanted("garbage", &lo, &hi));
	assert_false(comm_scan_map_wanted("", &lo, &hi));
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

static char *fake_comm(uint64_t start, uint64_t end, uint64_t hash, int32_t rank, int32_t nranks)
{
	char *c = calloc(1, COMM_SIZE);

	assert_non_null(c);
	memcpy(c, &start, 8);
	memcpy(c + END_OFF, &end, 8);
	memcpy(c + HASH_OFF, &hash, 8);
	memcpy(c + RANK_OFF, &rank, 4);
	memcpy(c + NRANKS_OFF, &nranks, 4);
	return c;
}

static const struct nt_nccl_offsets *offs(void)
{
	static struct nt_nccl_offsets o;

	memset(&o, 0xff, sizeof(o));
	o.comm_hash = HASH_OFF;
	o.comm_rank = RANK_OFF;
	o.comm_nranks = NRANKS_OFF;
	o.comm_endmagic = END_OFF;
	return &o;
}

/* Is addr among the n found? Its rank in *rank. */
static bool found_at(const struct comm_found *f, int n, const void *addr, int *rank)
{
	for (int i = 0; i < n; i++)
		if (f[i].addr == (uintptr_t)addr) {
			*rank = f[i].rank;
			return true;
		}
	return false;
}

static void test_scan_self(void **state)
{
	char *live = fake_comm(NCCL_COMM_MAGIC, NCCL_COMM_MAGIC, 0x1111, 2, 4);
	char *split = fake_comm(NCCL_COMM_MAGIC, NCCL_COMM_MAGIC, 0x2222, 0, 2);
	char *freed = fake_comm(0, 0, 0x3333, 1, 4);
	char *torn = fake_comm(NCCL_COMM_MAGIC, 0x1234, 0x4444, 1, 4);
	struct comm_found f[16];
	struct comm_scan_stats st;
	int n, rank = -1;

	(void)state;
	n = comm_scan(getpid(), offs(), f, 16, &st);
	assert_true(n >= 2);
	assert_true(found_at(f, n, live, &rank));
	assert_int_equal(rank, 2);
	assert_true(found_at(f, n, split, &rank));
	assert_int_equal(rank, 0);
	assert_false(found_at(f, n, freed, &rank));
	assert_false(found_at(f, n, torn, &rank));
	/* the torn one's startMagic was a candidate, rejected */
	assert_true(st.candidates >= 3);
	assert_true(st.bytes >= 4 * COMM_SIZE);
	assert_true(st.maps > 0);
	/* a sanitizer's own mappings make the process large enough to reach the scan's caps */
	if (!UNDER_ASAN)
		assert_false(st.capped);
	free(live);
	free(split);
	free(freed);
	free(torn);
}

static void test_scan_no_endmagic(void **state)
{
	struct nt_nccl_offsets o = *offs();
	struct comm_found f[1];
	struct comm_scan_stats st;

	(void)state;
	/* NCCL before 2.21, or no DWARF: nothing to check a candidate against */
	o.comm_endmagic = -1;
	assert_int_equal(comm_scan(getpid(), &o, f, 1, &st), -ENOTSUP);
	assert_int_equal(comm_scan(getpid(), NULL, f, 1, &st), -ENOTSUP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cand_good),	 cmocka_unit_test(test_cand_rejects),
		cmocka_unit_test(test_maps_lines),	 cmocka_unit_test(test_scan_self),
		cmocka_unit_test(test_scan_no_endmagic),
	};

	return cmocka_run_group_tests_name("commscan", tests, NULL, NULL);
}
