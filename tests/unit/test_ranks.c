// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include "trace/ranks.h"

/* A NUL-separated buffer whose last entry has no trailing NUL (the literal's own is cut off). */
#define ENV_NO_TRAILING(s) (s), (sizeof(s) - 1)
/* ... and one whose last entry ends with a NUL, as /proc/PID/environ does. */
#define ENV_TRAILING(s) (s), sizeof(s)

static void test_parse_torchrun_env(void **state)
{
	static const char env[] = "PATH=/usr/bin\0RANK=3\0LOCAL_RANK=1\0WORLD_SIZE=8\0"
				  "MASTER_ADDR=10.0.0.1\0MASTER_PORT=29500";
	struct rank_info ri;

	(void)state;
	ranks_parse_environ(ENV_NO_TRAILING(env), &ri);
	assert_int_equal(ri.rank, 3);
	assert_int_equal(ri.local_rank, 1);
	assert_int_equal(ri.world_size, 8);
	assert_int_equal(ri.master_port, 29500);
	assert_string_equal(ri.master_addr, "10.0.0.1");
	assert_string_equal(ri.source, "RANK");

	ranks_parse_environ(ENV_TRAILING(env), &ri);
	assert_int_equal(ri.rank, 3);
	assert_int_equal(ri.master_port, 29500);
}

static void test_parse_empty(void **state)
{
	struct rank_info ri;

	(void)state;
	memset(&ri, 0x55, sizeof(ri));
	ranks_parse_environ("", 0, &ri);
	assert_int_equal(ri.rank, -1);
	assert_int_equal(ri.local_rank, -1);
	assert_int_equal(ri.world_size, -1);
	assert_int_equal(ri.master_port, -1);
	assert_string_equal(ri.master_addr, "");
	assert_string_equal(ri.source, "");

	ranks_parse_environ(ENV_TRAILING("PATH=/bin\0HOME=/root"), &ri);
	assert_int_equal(ri.rank, -1);
	assert_string_equal(ri.source, "");
}

static void test_parse_respects_length(void **state)
{
	/* the length, not a NUL, ends the buffer: nothing past it is read */
	static const char env[] = "WORLD_SIZE=4\0RANK=12";
	struct rank_info ri;

	(void)state;
	ranks_parse_environ(env, sizeof(env) - 2, &ri);
	assert_int_equal(ri.rank, 1);
	assert_int_equal(ri.world_size, 4);

	ranks_parse_environ(env, 12, &ri); /* "WORLD_SIZE=4" */
	assert_int_equal(ri.world_size, 4);
	assert_int_equal(ri.rank, -1);

	ranks_parse_environ(env, 11, &ri); /* "WORLD_SIZE=" */
	assert_int_equal(ri.world_size, -1);
}

static void test_rank_precedence(void **state)
{
	struct rank_info ri;

	(void)state;
	/* RANK wins wherever it is */
	ranks_parse_environ(ENV_NO_TRAILING("SLURM_PROCID=4\0PMI_RANK=3\0OMPI_COMM_WORLD_RANK=2\0"
					    "RANK=1"),
			    &ri);
	assert_int_equal(ri.rank, 1);
	assert_string_equal(ri.source, "RANK");
	ranks_parse_environ(ENV_NO_TRAILING("RANK=1\0OMPI_COMM_WORLD_RANK=2\0PMI_RANK=3\0"
					    "SLURM_PROCID=4"),
			    &ri);
	assert_int_equal(ri.rank, 1);
	assert_string_equal(ri.source, "RANK");

	/* then OMPI_COMM_WORLD_RANK */
	ranks_parse_environ(ENV_NO_TRAILING("SLURM_PROCID=4\0PMI_RANK=3\0OMPI_COMM_WORLD_RANK=2"),
			    &ri);
	assert_int_equal(ri.rank, 2);
	assert_string_equal(ri.source, "OMPI_COMM_WORLD_RANK");
	ranks_parse_environ(ENV_NO_TRAILING("OMPI_COMM_WORLD_RANK=2\0PMI_RANK=3\0SLURM_PROCID=4"),
			    &ri);
	assert_int_equal(ri.rank, 2);
	assert_string_equal(ri.source, "OMPI_COMM_WORLD_RANK");

	/* then PMI_RANK */
	ranks_parse_environ(ENV_NO_TRAILING("SLURM_PROCID=4\0PMI_RANK=3"), &ri);
	assert_int_equal(ri.rank, 3);
	assert_string_equal(ri.source, "PMI_RANK");
	ranks_parse_environ(ENV_NO_TRAILING("PMI_RANK=3\0SLURM_PROCID=4"), &ri);
	assert_int_equal(ri.rank, 3);
	assert_string_equal(ri.source, "PMI_RANK");

	/* a variable given twice: the first one counts, as for getenv(3) */
	ranks_parse_environ(ENV_NO_TRAILING("RANK=1\0RANK=2"), &ri);
	assert_int_equal(ri.rank, 1);
	ranks_parse_environ(ENV_NO_TRAILING("PMI_RANK=3\0PMI_RANK=5"), &ri);
	assert_int_equal(ri.rank, 3);

	/* SLURM_PROCID alone */
	ranks_parse_environ(ENV_TRAILING("SLURM_PROCID=4"), &ri);
	assert_int_equal(ri.rank, 4);
	assert_string_equal(ri.source, "SLURM_PROCID");
}

static void test_invalid_numbers(void **state)
{
	static const char *const bad[] = {"x", "-1", "", "99999999999", "3x", "1.5", "0x10"};
	struct rank_info ri;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char env[256];
		int len = snprintf(env, sizeof(env),
				   "RANK=%s%cLOCAL_RANK=%s%cWORLD_SIZE=%s%cMASTER_PORT=%s", bad[i],
				   0, bad[i], 0, bad[i], 0, bad[i]);

		ranks_parse_environ(env, len, &ri);
		if (ri.rank != -1 || ri.local_rank != -1 || ri.world_size != -1 ||
		    ri.master_port != -1)
			fail_msg("'%s' parsed as %d/%d/%d/%d", bad[i], ri.rank, ri.local_rank,
				 ri.world_size, ri.master_port);
		assert_string_equal(ri.source, "");
	}
	/* an invalid RANK does not hide a valid launcher variable */
	ranks_parse_environ(ENV_NO_TRAILING("RANK=x\0PMI_RANK=2"), &ri);
	assert_int_equal(ri.rank, 2);
	assert_string_equal(ri.source, "PMI_RANK");
	/* 0 is a rank */
	ranks_parse_environ(ENV_NO_TRAILING("RANK=0"), &ri);
	assert_int_equal(ri.rank, 0);
	assert_string_equal(ri.source, "RANK");
}

static void test_entries_without_equals(void **state)
{
	struct rank_info ri;

	(void)state;
	ranks_parse_environ(ENV_NO_TRAILING("RANK\0garbage\0=5\0\0RANK=4"), &ri);
	assert_int_equal(ri.rank, 4);
	ranks_parse_environ(ENV_NO_TRAILING("RANK"), &ri);
	assert_int_equal(ri.rank, -1);
	ranks_parse_environ(ENV_NO_TRAILING("=RANK=5"), &ri);
	assert_int_equal(ri.rank, -1);
}

static void test_local_rank_and_size_fallbacks(void **state)
{
	struct rank_info ri;

	(void)state;
	ranks_parse_environ(
		ENV_NO_TRAILING("OMPI_COMM_WORLD_LOCAL_RANK=2\0OMPI_COMM_WORLD_SIZE=16"), &ri);
	assert_int_equal(ri.local_rank, 2);
	assert_int_equal(ri.world_size, 16);
	ranks_parse_environ(ENV_NO_TRAILING("SLURM_LOCALID=5\0SLURM_NTASKS=32"), &ri);
	assert_int_equal(ri.local_rank, 5);
	assert_int_equal(ri.world_size, 32);
	/* torchrun's own variables win over the launcher's, in either order */
	ranks_parse_environ(ENV_NO_TRAILING("LOCAL_RANK=1\0SLURM_LOCALID=5\0WORLD_SIZE=8\0"
					    "SLURM_NTASKS=32"),
			    &ri);
	assert_int_equal(ri.local_rank, 1);
	assert_int_equal(ri.world_size, 8);
	ranks_parse_environ(ENV_NO_TRAILING("SLURM_LOCALID=5\0LOCAL_RANK=1\0SLURM_NTASKS=32\0"
					    "WORLD_SIZE=8"),
			    &ri);
	assert_int_equal(ri.local_rank, 1);
	assert_int_equal(ri.world_size, 8);
}

static void test_master_addr(void **state)
{
	char env[160];
	struct rank_info ri;
	int len;

	(void)state;
	ranks_parse_environ(ENV_NO_TRAILING("MASTER_ADDR=node-17.cluster"), &ri);
	assert_string_equal(ri.master_addr, "node-17.cluster");
	ranks_parse_environ(ENV_NO_TRAILING("MASTER_ADDR="), &ri);
	assert_string_equal(ri.master_addr, "");
	/* one that does not fit is dropped, not cut */
	len = snprintf(env, sizeof(env), "MASTER_ADDR=%0100d", 7);
	ranks_parse_environ(env, len, &ri);
	assert_string_equal(ri.master_addr, "");
	/* the longest that fits */
	len = snprintf(env, sizeof(env), "MASTER_ADDR=%063d", 7);
	ranks_parse_environ(env, len, &ri);
	assert_int_equal(strlen(ri.master_addr), 63);
}

static bool allowed(const char *key)
{
	return ranks_env_allowed(key, strlen(key));
}

static void test_allow_list(void **state)
{
	static const char *const yes[] = {
		"NCCL_DEBUG",
		"NCCL_SOCKET_IFNAME",
		"TORCH_DISTRIBUTED_DEBUG",
		"TORCH_NCCL_ASYNC_ERROR_HANDLING",
		"CUDA_VISIBLE_DEVICES",
		"RANK",
		"LOCAL_RANK",
		"WORLD_SIZE",
		"MASTER_ADDR",
		"MASTER_PORT",
		"OMPI_COMM_WORLD_RANK",
		"PMI_RANK",
		"SLURM_PROCID",
	};
	static const char *const no[] = {
		"NCCL_",
		"TORCH_",
		"CUDA_",
		"PATH",
		"HOME",
		"AWS_SECRET_ACCESS_KEY",
		"MY_NCCL_X",
		"nccl_debug",
		"RANKS",
		"RAN",
		"",
		"LD_PRELOAD",
		"SLURM_JOB_PASSWORD",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!allowed(yes[i]))
			fail_msg("'%s' should be allowed", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (allowed(no[i]))
			fail_msg("'%s' should not be allowed", no[i]);
	/* the key is keylen bytes, not up to a NUL */
	assert_true(ranks_env_allowed("NCCL_DEBUG=INFO", 10));
	assert_true(ranks_env_allowed("RANKING", 4));
	assert_false(ranks_env_allowed("RANK", 3));
	assert_false(ranks_env_allowed("NCCL_DEBUG", 5));
}

struct seen {
	int n;
	char key[16][64];
	char val[16][64];
};

static void collect(void *ctx, const char *key, size_t keylen, const char *val, size_t vallen)
{
	struct seen *s = ctx;

	assert_true(s->n < 16);
	assert_true(keylen < 64 && vallen < 64);
	memcpy(s->key[s->n], key, keylen);
	s->key[s->n][keylen] = '\0';
	memcpy(s->val[s->n], val, vallen);
	s->val[s->n][vallen] = '\0';
	s->n++;
}

static void test_env_each(void **state)
{
	static const char env[] = "AWS_SECRET_ACCESS_KEY=hunter2\0NCCL_DEBUG=INFO\0PATH=/bin\0"
				  "RANK=2\0NOEQUALS\0NCCL_X=a=b\0HOME=/root\0TORCH_EMPTY=\0"
				  "MY_NCCL_X=1\0CUDA_VISIBLE_DEVICES=0,1";
	struct seen s = {0};

	(void)state;
	assert_int_equal(ranks_env_each(ENV_NO_TRAILING(env), collect, &s), 5);
	assert_int_equal(s.n, 5);
	assert_string_equal(s.key[0], "NCCL_DEBUG");
	assert_string_equal(s.val[0], "INFO");
	assert_string_equal(s.key[1], "RANK");
	assert_string_equal(s.val[1], "2");
	assert_string_equal(s.key[2], "NCCL_X");
	assert_string_equal(s.val[2], "a=b");
	assert_string_equal(s.key[3], "TORCH_EMPTY");
	assert_string_equal(s.val[3], "");
	/* the last entry, without a trailing NUL */
	assert_string_equal(s.key[4], "CUDA_VISIBLE_DEVICES");
	assert_string_equal(s.val[4], "0,1");
	for (int i = 0; i < s.n; i++)
		assert_null(strstr(s.val[i], "hunter2"));

	memset(&s, 0, sizeof(s));
	assert_int_equal(ranks_env_each(ENV_TRAILING("PATH=/bin\0HOME=/"), collect, &s), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(ranks_env_each("", 0, collect, &s), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_torchrun_env),
		cmocka_unit_test(test_parse_empty),
		cmocka_unit_test(test_parse_respects_length),
		cmocka_unit_test(test_rank_precedence),
		cmocka_unit_test(test_invalid_numbers),
		cmocka_unit_test(test_entries_without_equals),
		cmocka_unit_test(test_local_rank_and_size_fallbacks),
		cmocka_unit_test(test_master_addr),
		cmocka_unit_test(test_allow_list),
		cmocka_unit_test(test_env_each),
	};

	return cmocka_run_group_tests_name("ranks", tests, NULL, NULL);
}
