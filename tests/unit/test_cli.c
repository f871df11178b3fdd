// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include "cmd/agent.h"
#include "cmd/cli.h"
#include "trace/tracer.h"

#define ERRLEN 256

/* argv as a writable compound literal in the caller's block: getopt may permute it */
#define RUN(o, err, ...)    parse_run((o), (err), (char *[]){"run", __VA_ARGS__, NULL})
#define REPORT(o, err, ...) parse_report((o), (err), (char *[]){"report", __VA_ARGS__, NULL})

static int count_args(char **argv)
{
	int n = 0;

	while (argv[n])
		n++;
	return n;
}

static int parse_run(struct run_opts *o, char *err, char **argv)
{
	err[0] = '\0';
	return cli_parse_run(count_args(argv), argv, o, err, ERRLEN);
}

static int parse_report(struct report_opts *o, char *err, char **argv)
{
	err[0] = '\0';
	return cli_parse_report(count_args(argv), argv, o, err, ERRLEN);
}

/* The error is one non-empty line that contains want. */
static void assert_error(const char *err, const char *want)
{
	assert_true(err[0] != '\0');
	assert_null(strchr(err, '\n'));
	if (!strstr(err, want))
		fail_msg("error '%s' does not mention '%s'", err, want);
}

static void test_run_defaults(void **state)
{
	struct run_opts o;
	char err[ERRLEN];

	(void)state;
	assert_int_equal(RUN(&o, err, "ls"), 0);
	assert_true(o.stall_threshold_s == 5.0);
	assert_int_equal(o.mode, NT_MODE_AUTO);
	assert_null(o.dump_path);
	assert_false(o.no_tui);
	assert_int_equal(o.verbose, 0);
	assert_null(o.user);
	assert_false(o.help);
	assert_int_equal(o.ncmd, 1);
	assert_string_equal(o.cmd[0], "ls");
	assert_null(o.cmd[1]);
}

static void test_run_all_options(void **state)
{
	struct run_opts o;
	char err[ERRLEN];

	(void)state;
	assert_int_equal(RUN(&o, err, "--dump", "/tmp/x.jsonl", "-t", "2.5", "--no-tui", "-v", "-v",
			     "--user", "alice", "--attach-mode", "tracepoint", "--", "python3",
			     "train.py"),
			 0);
	assert_string_equal(o.dump_path, "/tmp/x.jsonl");
	assert_true(o.stall_threshold_s == 2.5);
	assert_true(o.no_tui);
	assert_int_equal(o.verbose, 2);
	assert_string_equal(o.user, "alice");
	assert_int_equal(o.mode, NT_MODE_TRACEPOINT);
	assert_int_equal(o.ncmd, 2);
	assert_string_equal(o.cmd[0], "python3");
	assert_string_equal(o.cmd[1], "train.py");
	assert_null(o.cmd[2]);
}

static void test_run_short_and_equals_forms(void **state)
{
	struct run_opts o;
	char err[ERRLEN];

	(void)state;
	assert_int_equal(RUN(&o, err, "-o", "d.jsonl", "--stall-threshold=3",
			     "--attach-mode=kprobe", "-u", "bob", "-vv", "--", "true"),
			 0);
	assert_string_equal(o.dump_path, "d.jsonl");
	assert_true(o.stall_threshold_s == 3.0);
	assert_int_equal(o.mode, NT_MODE_KPROBE);
	assert_string_equal(o.user, "bob");
	assert_int_equal(o.verbose, 2);
	assert_string_equal(o.cmd[0], "true");

	assert_int_equal(RUN(&o, err, "--dump=e.jsonl", "-t0.5", "--attach-mode", "fentry", "x"),
			 0);
	assert_string_equal(o.dump_path, "e.jsonl");
	assert_true(o.stall_threshold_s == 0.5);
	assert_int_equal(o.mode, NT_MODE_FENTRY);
	assert_string_equal(o.cmd[0], "x");
}

static void test_run_attach_modes(void **state)
{
	static const char *const names[] = {"auto", "fentry", "kprobe", "tracepoint"};
	static const enum nt_attach_mode modes[] = {NT_MODE_AUTO, NT_MODE_FENTRY, NT_MODE_KPROBE,
						    NT_MODE_TRACEPOINT};
	struct run_opts o;
	char err[ERRLEN];

	(void)state;
	for (int i = 0; i < 4; i++) {
		o.mode = -1;
		assert_int_equal(RUN(&o, err, "--attach-mode", (char *)names[i], "--", "ls"), 0);
		assert_int_equal(o.mode, modes[i]);
		assert_string_equal(tracer_mode_name(modes[i]), names[i]);
	}
}

static void test_run_cmd_options_pass_through(void **state)
{
	char *argv[] = {"run", "-t", "3", "--", "ls", "-la", NULL};
	struct run_opts o;
	char err[ERRLEN];

	(void)state;
	assert_int_equal(cli_parse_run(6, argv, &o, err, sizeof(err)), 0);
	assert_true(o.stall_threshold_s == 3.0);
	assert_int_equal(o.ncmd, 2);
	/* the command is argv itself, in order, not a copy */
	assert_ptr_equal(o.cmd, &argv[4]);
	assert_string_equal(o.cmd[0], "ls");
	assert_string_equal(o.cmd[1], "-la");
	assert_null(o.cmd[2]);
	/* CMD's options that are also ours stay CMD's */
	assert_int_equal(RUN(&o, err, "--", "ringjob", "-t", "9", "-v", "--dump", "y", "--help"),
			 0);
	assert_true(o.stall_threshold_s == 5.0);
	assert_int_equal(o.verbose, 0);
	assert_null(o.dump_path);
	assert_false(o.help);
	assert_int_equal(o.ncmd, 7);
	assert_string_equal(o.cmd[6], "--help");
}

static void test_run_without_dashdash(void **state)
{
	struct run_opts o;
	char err[ERRLEN];

	(void)state;
	assert_int_equal(RUN(&o, err, "ls", "-l"), 0);
	assert_int_equal(o.ncmd, 2);
	assert_string_equal(o.cmd[0], "ls");
	assert_string_equal(o.cmd[1], "-l");

	/* parsing stops at the first non-option */
	assert_int_equal(RUN(&o, err, "-v", "torchrun", "-t", "9", "--no-tui"), 0);
	assert_int_equal(o.verbose, 1);
	assert_true(o.stall_threshold_s == 5.0);
	assert_false(o.no_tui);
	assert_int_equal(o.ncmd, 4);
	assert_string_equal(o.cmd[0], "torchrun");
	assert_string_equal(o.cmd[3], "--no-tui");
}

static void test_run_dashdash_then_dash_cmd(void **state)
{
	struct run_opts o;
	char err[ERRLEN];

	(void)state;
	/* after "--" even a leading dash belongs to CMD */
	assert_int_equal(RUN(&o, err, "--", "-weird"), 0);
	assert_int_equal(o.ncmd, 1);
	assert_string_equal(o.cmd[0], "-weird");
}

static void test_run_unknown_option(void **state)
{
	struct run_opts o;
	char err[ERRLEN];

	(void)state;
	assert_int_equal(RUN(&o, err, "--bogus", "--", "ls"), -1);
	assert_error(err, "--bogus");
	assert_error(err, "unknown option");

	assert_int_equal(RUN(&o, err, "-x", "--", "ls"), -1);
	assert_error(err, "-x");

	/* in a group of short options */
	assert_int_equal(RUN(&o, err, "-vq", "ls"), -1);
	assert_error(err, "-q");

	/* a lone "-" is not a command */
	assert_int_equal(RUN(&o, err, "-", "ls"), -1);
	assert_error(err, "'-'");
}

static void test_run_missing_command(void **state)
{
	struct run_opts o;
	char err[ERRLEN];
	char *only[] = {"run", NULL};

	(void)state;
	err[0] = '\0';
	assert_int_equal(cli_parse_run(1, only, &o, err, sizeof(err)), -1);
	assert_error(err, "no command");

	assert_int_equal(RUN(&o, err, "-v", "--no-tui"), -1);
	assert_error(err, "no command");

	assert_int_equal(RUN(&o, err, "-t", "2", "--"), -1);
	assert_error(err, "no command");
}

static void test_run_bad_threshold(void **state)
{
	static const char *const bad[] = {"abc", "0", "-1",  "1e9", "nan",
					  "3s",	 "",  "inf", "-0",  "86401"};
	struct run_opts o;
	char err[ERRLEN];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char quoted[32];

		assert_int_equal(RUN(&o, err, "-t", (char *)bad[i], "--", "ls"), -1);
		assert_error(err, "stall-threshold");
		snprintf(quoted, sizeof(quoted), "'%s'", bad[i]);
		assert_error(err, quoted);

		assert_int_equal(RUN(&o, err, "--stall-threshold", (char *)bad[i], "--", "ls"), -1);
		assert_error(err, quoted);
	}
	/* the upper bound itself is allowed */
	assert_int_equal(RUN(&o, err, "-t", "86400", "--", "ls"), 0);
	assert_true(o.stall_threshold_s == 86400.0);
}

static void test_run_bad_attach_mode(void **state)
{
	struct run_opts o;
	char err[ERRLEN];

	(void)state;
	assert_int_equal(RUN(&o, err, "--attach-mode", "bogus", "--", "ls"), -1);
	assert_error(err, "'bogus'");
	assert_error(err, "attach-mode");
	/* names are exact */
	assert_int_equal(RUN(&o, err, "--attach-mode", "FENTRY", "--", "ls"), -1);
	assert_error(err, "'FENTRY'");
	assert_int_equal(RUN(&o, err, "--attach-mode", "", "--", "ls"), -1);
	assert_error(err, "attach-mode");
}

static void test_run_tcp_hooks(void **state)
{
	struct run_opts o;
	char err[ERRLEN];

	(void)state;
	assert_int_equal(RUN(&o, err, "--", "ls"), 0);
	assert_false(o.tcp_always); /* quiet mode by default */
	assert_int_equal(RUN(&o, err, "--tcp-hooks", "always", "--", "ls"), 0);
	assert_true(o.tcp_always);
	assert_int_equal(RUN(&o, err, "--tcp-hooks=auto", "--", "ls"), 0);
	assert_false(o.tcp_always);
	assert_int_equal(RUN(&o, err, "--tcp-hooks", "never", "--", "ls"), -1);
	assert_error(err, "--tcp-hooks 'never': expected auto or always");
}

/* The intake's bound and the ring buffer's size: whole numbers in range, else one line */
static void test_run_budget_and_ringbuf(void **state)
{
	struct run_opts o;
	char err[ERRLEN];

	(void)state;
	assert_int_equal(RUN(&o, err, "--", "ls"), 0);
	assert_int_equal(o.budget, 0); /* the default: NT_BUDGET_DEFAULT */
	assert_int_equal(o.ringbuf_kb, 0);
	assert_int_equal(RUN(&o, err, "--record-budget", "64", "--ringbuf-kb=4", "--", "ls"), 0);
	assert_int_equal(o.budget, 64);
	assert_int_equal(o.ringbuf_kb, 4);
	assert_int_equal(RUN(&o, err, "--record-budget", "1000000", "--", "ls"), 0);
	assert_int_equal(o.budget, 1000000);
	for (int i = 0; i < 6; i++) {
		const char *bad[] = {"0", "15", "1000001", "-64", "64x", ""};

		assert_int_equal(RUN(&o, err, "--record-budget", (char *)bad[i], "--", "ls"), -1);
		assert_error(err, "expected records a second, 16 to 1000000");
	}
	for (int i = 0; i < 5; i++) {
		const char *bad[] = {"0", "2", "12", "2097152", "4k"};

		assert_int_equal(RUN(&o, err, "--ringbuf-kb", (char *)bad[i], "--", "ls"), -1);
		assert_error(err, "expected a power of 2 from 4 to 1048576");
	}
}

static void test_run_option_missing_value(void **state)
{
	struct run_opts o;
	char err[ERRLEN];

	(void)state;
	assert_int_equal(RUN(&o, err, "-t"), -1);
	assert_error(err, "'-t'");
	assert_error(err, "needs a value");

	assert_int_equal(RUN(&o, err, "--dump"), -1);
	assert_error(err, "'--dump'");
	assert_error(err, "needs a value");

	assert_int_equal(RUN(&o, err, "-v", "--attach-mode"), -1);
	assert_error(err, "'--attach-mode'");

	assert_int_equal(RUN(&o, err, "--user"), -1);
	assert_error(err, "'--user'");

	/* an empty dump path is not a path */
	assert_int_equal(RUN(&o, err, "--dump", "", "--", "ls"), -1);
	assert_error(err, "--dump");
}

static void test_run_help(void **state)
{
	struct run_opts o;
	char err[ERRLEN];

	(void)state;
	assert_int_equal(RUN(&o, err, "-h"), 0);
	assert_true(o.help);
	assert_int_equal(RUN(&o, err, "-v", "--help"), 0);
	assert_true(o.help);
	assert_int_equal(RUN(&o, err, "--", "ls"), 0);
	assert_false(o.help);
}

static void test_run_repeated_parsing(void **state)
{
	struct run_opts o;
	char err[ERRLEN];

	(void)state;
	/* a long parse, then an error in the middle of a group of short options ... */
	assert_int_equal(RUN(&o, err, "-v", "-v", "-t", "7", "--no-tui", "--", "a", "b", "c"), 0);
	assert_int_equal(o.verbose, 2);
	assert_int_equal(RUN(&o, err, "-vx", "ls"), -1);
	/* ... leave nothing behind: each parse starts from argv[1] with fresh options */
	assert_int_equal(RUN(&o, err, "-v", "ls"), 0);
	assert_int_equal(o.verbose, 1);
	assert_false(o.no_tui);
	assert_true(o.stall_threshold_s == 5.0);
	assert_int_equal(o.ncmd, 1);
	assert_string_equal(o.cmd[0], "ls");
	for (int i = 0; i < 3; i++) {
		assert_int_equal(RUN(&o, err, "ls"), 0);
		assert_int_equal(o.verbose, 0);
		assert_string_equal(o.cmd[0], "ls");
	}
	/* an error with options left in the group leaves none of them for the next parse */
	assert_int_equal(RUN(&o, err, "-xvv", "ls"), -1);
	assert_int_equal(RUN(&o, err, "ls"), 0);
	assert_int_equal(o.verbose, 0);
	assert_int_equal(o.ncmd, 1);
	/* report parsing (which permutes) and run parsing (which does not) after each other */
	{
		struct report_opts r;

		assert_int_equal(REPORT(&r, err, "d.jsonl", "--json"), 0);
		assert_string_equal(r.path, "d.jsonl");
		assert_true(r.json);
		assert_int_equal(RUN(&o, err, "ls", "-l"), 0);
		assert_int_equal(o.ncmd, 2);
		assert_string_equal(o.cmd[1], "-l");
		assert_int_equal(REPORT(&r, err, "e.jsonl"), 0);
		assert_string_equal(r.path, "e.jsonl");
		assert_false(r.json);
	}
}

/* The examples in the help texts parse as written ("--help examples must run as written"). */
static int parse_example(const char *line, char *err)
{
	char buf[512], *argv[64], *save = NULL, *tok;
	int argc = 0, first, rc;

	snprintf(buf, sizeof(buf), "%s", line);
	for (tok = strtok_r(buf, " \\", &save); tok && argc < 63;
	     tok = strtok_r(NULL, " \\", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	/* "sudo nccltrace run ..." or "nccltrace report ..." */
	first = strcmp(argv[0], "sudo") == 0 ? 2 : 1;

	if (strcmp(argv[first], "run") == 0) {
		struct run_opts o;

		rc = cli_parse_run(argc - first, argv + first, &o, err, ERRLEN);
		if (rc == 0 && (o.help || o.ncmd < 1))
			rc = -1;
	} else if (strcmp(argv[first], "attach") == 0) {
		struct attach_opts o;

		rc = cli_parse_attach(argc - first, argv + first, &o, err, ERRLEN);
		if (rc == 0 && (o.run.help || o.npids < 1))
			rc = -1;
	} else if (strcmp(argv[first], "report") == 0) {
		struct report_opts o;

		rc = cli_parse_report(argc - first, argv + first, &o, err, ERRLEN);
	} else if (strcmp(argv[first], "doctor") == 0) {
		struct doctor_opts o;

		rc = cli_parse_doctor(argc - first, argv + first, &o, err, ERRLEN);
		if (rc == 0 && o.help)
			rc = -1;
	} else if (strcmp(argv[first], "agent") == 0) {
		struct agent_opts o;

		rc = agent_parse_opts(&o, argc - first, argv + first, err, ERRLEN);
		if (rc == 0 && o.help)
			rc = -1;
	} else if (strcmp(argv[first], "probes") == 0) {
		/* one library path, options before it */
		rc = argc - first >= 2 && argv[argc - 1][0] != '-' ? 0 : -1;
	} else {
		return -1;
	}
	return rc;
}

static int check_help_examples(const char *help)
{
	const char *p = strstr(help, "Example");
	int n = 0;

	assert_non_null(p);
	p = strchr(p, '\n') + 1;
	while (*p == ' ') {
		char line[512];
		size_t l = 0;
		char err[ERRLEN] = "";

		/* join continuation lines ending in a backslash */
		for (;;) {
			const char *nl = strchr(p, '\n');
			size_t ll = nl ? (size_t)(nl - p) : strlen(p);

			assert_true(l + ll + 1 < sizeof(line));
			memcpy(line + l, p, ll);
			l += ll;
			line[l] = '\0';
			p = nl ? nl + 1 : p + ll;
			if (ll == 0 || line[l - 1] != '\\')
				break;
			line[l - 1] = ' ';
		}
		if (parse_example(line, err))
			fail_msg("help example does not parse: '%s': %s", line, err);
		n++;
	}
	return n;
}

static void test_help_examples_parse(void **state)
{
	(void)state;
	assert_int_equal(check_help_examples(cli_run_help), 2);
	assert_int_equal(check_help_examples(cli_main_help), 7);
	assert_int_equal(check_help_examples(cli_attach_help), 3);
	assert_int_equal(check_help_examples(cli_report_help), 3);
	assert_int_equal(check_help_examples(cli_probes_help), 2);
	assert_int_equal(check_help_examples(cli_doctor_help), 3);
}

#define DOCTOR(o, err, ...) parse_doctor((o), (err), (char *[]){"doctor", __VA_ARGS__, NULL})

static int parse_doctor(struct doctor_opts *o, char *err, char **argv)
{
	err[0] = '\0';
	return cli_parse_doctor(count_args(argv), argv, o, err, ERRLEN);
}

static void test_doctor_parse(void **state)
{
	struct doctor_opts o;
	char err[ERRLEN];
	char *only[] = {"doctor", NULL};

	(void)state;
	/* no argument: this shell */
	assert_int_equal(cli_parse_doctor(1, only, &o, err, ERRLEN), 0);
	assert_null(o.cmd);
	assert_int_equal(o.ndumps, 0);
	assert_int_equal(DOCTOR(&o, err, "--json", "a.jsonl", "b.jsonl"), 0);
	assert_true(o.json);
	assert_int_equal(o.ndumps, 2);
	assert_string_equal(o.dumps[1], "b.jsonl");
	/* the command's own options are its own */
	assert_int_equal(DOCTOR(&o, err, "--nccl-lib", "/x/libnccl.so.2", "--", "env", "A=1",
				"torchrun", "--json"),
			 0);
	assert_string_equal(o.nccl_lib, "/x/libnccl.so.2");
	assert_int_equal(o.ncmd, 4);
	assert_string_equal(o.cmd[0], "env");
	assert_false(o.json);
	assert_int_equal(DOCTOR(&o, err, "--bogus"), -1);
	assert_string_equal(err, "unknown option '--bogus'");
	assert_int_equal(DOCTOR(&o, err, "a.jsonl", "--bogus"), -1);
	assert_string_equal(err, "unknown option '--bogus'");
	assert_int_equal(DOCTOR(&o, err, "--"), -1);
	assert_non_null(strstr(err, "no command after --"));
	assert_int_equal(DOCTOR(&o, err, "--nccl-lib"), -1);
	assert_string_equal(err, "option '--nccl-lib' needs a value");
}

static void test_report_parse(void **state)
{
	struct report_opts o;
	char err[ERRLEN];

	(void)state;
	assert_int_equal(REPORT(&o, err, "--json", "d.jsonl"), 0);
	assert_true(o.json);
	assert_string_equal(o.path, "d.jsonl");
	assert_false(o.help);

	assert_int_equal(REPORT(&o, err, "d.jsonl"), 0);
	assert_false(o.json);
	assert_string_equal(o.path, "d.jsonl");

	/* options after the dump work too */
	assert_int_equal(REPORT(&o, err, "e.jsonl", "--json"), 0);
	assert_true(o.json);
	assert_string_equal(o.path, "e.jsonl");

	assert_int_equal(REPORT(&o, err, "-h"), 0);
	assert_true(o.help);
}

static void test_report_errors(void **state)
{
	struct report_opts o;
	char err[ERRLEN];
	char *only[] = {"report", NULL};

	(void)state;
	err[0] = '\0';
	assert_int_equal(cli_parse_report(1, only, &o, err, sizeof(err)), -1);
	assert_error(err, "no dump");

	assert_int_equal(REPORT(&o, err, "--json"), -1);
	assert_error(err, "no dump");

	/* several dumps (one job's hosts) are merged */
	assert_int_equal(REPORT(&o, err, "a.jsonl", "b.jsonl"), 0);
	assert_int_equal(o.npaths, 2);
	assert_string_equal(o.paths[1], "b.jsonl");

	assert_int_equal(REPORT(&o, err, "--bogus", "a.jsonl"), -1);
	assert_error(err, "--bogus");

	assert_int_equal(REPORT(&o, err, "-z", "a.jsonl"), -1);
	assert_error(err, "-z");
}

static void test_parse_seconds(void **state)
{
	static const char *const bad[] = {"",	    "abc", "0",	    "0.0", "-0",  "-1", "nan",
					  "-nan",   "inf", "1e999", "3s",  " 3 ", "3 ", "1,5",
					  "1e-999", "0x",  "+",	    ".",   "101"};
	double v;

	(void)state;
	assert_int_equal(cli_parse_seconds("5", 100, &v), 0);
	assert_true(v == 5.0);
	assert_int_equal(cli_parse_seconds("0.001", 100, &v), 0);
	assert_true(v == 0.001);
	assert_int_equal(cli_parse_seconds("2.5e1", 100, &v), 0);
	assert_true(v == 25.0);
	/* max is inclusive */
	assert_int_equal(cli_parse_seconds("100", 100, &v), 0);
	assert_true(v == 100.0);
	assert_int_equal(cli_parse_seconds("100.000001", 100, &v), -1);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 42;
		if (cli_parse_seconds(bad[i], 100, &v) != -1)
			fail_msg("'%s' accepted as %g seconds", bad[i], v);
		/* the output is left alone on failure */
		assert_true(v == 42);
	}
}

static void test_parse_bytes(void **state)
{
	static const char *const bad[] = {
		"",	"abc",	    "-1",  "1x",	   "1K ",
		" 1K",	"1KiBs",    "1kb", "1.5M",	   "0x10",
		"+1",	"K",	    "1KK", "99999999999T", "18446744073709551616",
		"1023", "16777216T"};
	static const struct {
		const char *s;
		uint64_t v;
	} good[] = {{"1024", 1024},	{"1K", 1024},	      {"1k", 1024},
		    {"1KB", 1024},	{"1KiB", 1024},	      {"256M", 256ull << 20},
		    {"2G", 2ull << 30}, {"3GiB", 3ull << 30}, {"1T", 1ull << 40}};
	uint64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = 0;
		if (cli_parse_bytes(good[i].s, 1024, &v) || v != good[i].v)
			fail_msg("'%s' read as %llu, want %llu", good[i].s, (unsigned long long)v,
				 (unsigned long long)good[i].v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 42;
		if (cli_parse_bytes(bad[i], 1024, &v) != -1)
			fail_msg("'%s' accepted as %llu bytes", bad[i], (unsigned long long)v);
		assert_true(v == 42);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_bytes),
		cmocka_unit_test(test_run_defaults),
		cmocka_unit_test(test_run_all_options),
		cmocka_unit_test(test_run_short_and_equals_forms),
		cmocka_unit_test(test_run_attach_modes),
		cmocka_unit_test(test_run_cmd_options_pass_through),
		cmocka_unit_test(test_run_without_dashdash),
		cmocka_unit_test(test_run_dashdash_then_dash_cmd),
		cmocka_unit_test(test_run_unknown_option),
		cmocka_unit_test(test_run_missing_command),
		cmocka_unit_test(test_run_bad_threshold),
		cmocka_unit_test(test_run_bad_attach_mode),
		cmocka_unit_test(test_run_tcp_hooks),
		cmocka_unit_test(test_run_budget_and_ringbuf),
		cmocka_unit_test(test_run_option_missing_value),
		cmocka_unit_test(test_run_help),
		cmocka_unit_test(test_run_repeated_parsing),
		cmocka_unit_test(test_help_examples_parse),
		cmocka_unit_test(test_doctor_parse),
		cmocka_unit_test(test_report_parse),
		cmocka_unit_test(test_report_errors),
		cmocka_unit_test(test_parse_seconds),
	};

	return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
