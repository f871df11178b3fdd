// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "trace/jobkey.h"

/* an environment as /proc/PID/environ has it: NUL-separated, from "A=1|B=2" */
static size_t env(char *buf, size_t cap, const char *bars)
{
	size_t n = strlen(bars) + 1;

	assert_true(n <= cap);
	memcpy(buf, bars, n);
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '|')
			buf[i] = '\0';
	return n;
}

/* the rules in their order, each passed over when it says nothing */
static void test_rules_in_order(void **state)
{
	char e[512];
	struct jobkey k;
	size_t n;

	(void)state;
	n = env(e, sizeof(e),
		"PATH=/bin|TORCHELASTIC_RUN_ID=e3b0c442|SLURM_JOB_ID=4711|"
		"MASTER_ADDR=10.0.0.1|MASTER_PORT=29500|WORLD_SIZE=16");
	assert_int_equal(jobkey_from_env(e, n, &k), 0);
	assert_string_equal(k.rule, "TORCHELASTIC_RUN_ID");
	assert_string_equal(k.id, "e3b0c442");
	/* torchrun's default run id says nothing: Slurm's job and step name the job */
	n = env(e, sizeof(e),
		"TORCHELASTIC_RUN_ID=none|SLURM_JOB_ID=4711|SLURM_STEP_ID=0|"
		"MASTER_ADDR=10.0.0.1|MASTER_PORT=29500|WORLD_SIZE=16");
	assert_int_equal(jobkey_from_env(e, n, &k), 0);
	assert_string_equal(k.rule, "SLURM_JOB_ID");
	assert_string_equal(k.id, "4711.0");
	n = env(e, sizeof(e), "SLURM_JOB_ID=4711|X=1");
	assert_int_equal(jobkey_from_env(e, n, &k), 0);
	assert_string_equal(k.id, "4711");
	n = env(e, sizeof(e), "SLURM_JOB_ID=|MASTER_ADDR=10.0.0.1|MASTER_PORT=29500|WORLD_SIZE=16");
	assert_int_equal(jobkey_from_env(e, n, &k), 0);
	assert_string_equal(k.rule, "MASTER_ADDR");
	assert_string_equal(k.id, "10.0.0.1:29500/16");
	/* a master without a world size, or nothing: the launcher's tree (the caller's) */
	n = env(e, sizeof(e), "MASTER_ADDR=10.0.0.1|MASTER_PORT=29500");
	assert_int_equal(jobkey_from_env(e, n, &k), -1);
	n = env(e, sizeof(e), "MASTER_ADDRX=1|XMASTER_PORT=2|WORLD_SIZE=3");
	assert_int_equal(jobkey_from_env(e, n, &k), -1);
	assert_int_equal(jobkey_from_env(e, 0, &k), -1);
	jobkey_launcher(812, 4678155, &k);
	assert_string_equal(k.rule, "launcher");
	assert_string_equal(k.id, "pid 812 started 4678155");
}

/* a name's last entry without its NUL (a cut environ) is read within its length only */
static void test_cut_environ(void **state)
{
	char e[64] = "SLURM_JOB_ID=12345";
	struct jobkey k;

	(void)state;
	assert_int_equal(jobkey_from_env(e, 12, &k), -1); /* "SLURM_JOB_ID" and no '=' */
}

/* a key as a file-name part: nothing but [A-Za-z0-9._-], cut to the room */
static void test_file_part(void **state)
{
	struct jobkey k = {.rule = "MASTER_ADDR", .id = "10.0.0.1:29500/16"};
	char out[64], small[6];

	(void)state;
	jobkey_file_part(&k, out, sizeof(out));
	assert_string_equal(out, "10.0.0.1_29500_16");
	snprintf(k.id, sizeof(k.id), "../../etc/x y\n$(z)");
	jobkey_file_part(&k, out, sizeof(out));
	assert_string_equal(out, ".._.._etc_x_y___z_");
	jobkey_file_part(&k, small, sizeof(small));
	assert_string_equal(small, ".._..");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules_in_order),
		cmocka_unit_test(test_cut_environ),
		cmocka_unit_test(test_file_part),
	};

	return cmocka_run_group_tests_name("jobkey", tests, NULL, NULL);
}
