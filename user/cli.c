// SPDX-License-Identifier: MIT
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

const char cli_main_help[] =
	"Usage: nccltrace COMMAND [OPTIONS]\n"
	"\n"
	"Find out why a multi-process (NCCL) job is stuck, from outside the job.\n"
	"\n"
	"Commands:\n"
	"  run [OPTIONS] -- CMD [ARGS...]   run CMD as the invoking user and trace it\n"
	"  report [--json] DUMP             summarise a trace dump\n"
	"  probes LIB                       what nccltrace can probe in an NCCL library or\n"
	"                                   libibverbs\n"
	"  doctor [DUMP... | -- CMD...]     lint the NCCL/PyTorch environment\n"
	"  convert DUMP -o TRACE.json       the dump as a Perfetto / Chrome trace\n"
	"  version                          print the version\n"
	"\n"
	"Examples:\n"
	"  sudo nccltrace run -- torchrun --nproc_per_node=8 train.py\n"
	"  sudo nccltrace run --stall-threshold 3 -- ./build/ringjob --ranks 4 --stall-rank 1\n"
	"  nccltrace report --json nccltrace-myhost-20261129-120000.jsonl\n"
	"  nccltrace probes /usr/local/cuda/lib/libnccl.so.2\n"
	"  nccltrace doctor -- env NCCL_SOCKET_IFNAME=eth0 torchrun --nproc_per_node=8 train.py\n"
	"\n"
	"'nccltrace COMMAND --help' describes a command.\n";

const char cli_run_help[] =
	"Usage: nccltrace run [OPTIONS] -- CMD [ARGS...]\n"
	"\n"
	"Start CMD as the invoking user (SUDO_UID/SUDO_GID, or --user), follow it and every\n"
	"process it starts, account their TCP connections in the kernel, follow NCCL's phases,\n"
	"sockets and settings with uprobes, and name the process the others wait on when\n"
	"progress stops. Findings are shown live (a dashboard when stdout is a terminal, else on\n"
	"stderr) and written to the trace dump. Dashboard keys: q quit, p pause, s sort, Tab,\n"
	"arrows, Enter details, d snapshot, ? help.\n"
	"Exits with CMD's status (128+N if a signal N killed it); 64-78 for nccltrace's own "
	"errors.\n"
	"\n"
	"Options:\n"
	"  -o, --dump PATH            trace dump (JSON Lines); default "
	"nccltrace-HOST-DATE-TIME.jsonl\n"
	"  -t, --stall-threshold SEC  no progress for this long is a stall (default 5)\n"
	"      --no-tui               plain output: findings and the job's output on the terminal\n"
	"                             (default when stdout is not a terminal); otherwise a live\n"
	"                             dashboard, with the job's output in DUMP's .log file\n"
	"  -u, --user NAME            run CMD as NAME (default: the sudo caller)\n"
	"      --attach-mode MODE     auto (default), fentry, kprobe or tracepoint\n"
	"      --nccl-lib PATH        probe this NCCL library from the start (default: found in\n"
	"                             the processes' memory maps as they load it)\n"
	"      --collectives          a probe per collective (type, count, root): costs several\n"
	"                             microseconds per collective; collective counts are read\n"
	"                             from NCCL's own counters without it\n"
	"      --tcp-hooks WHEN       auto (default): the per-call TCP hooks come off while every\n"
	"                             NCCL communicator keeps moving and no rank is in setup,\n"
	"                             and back on within 0.5 s of any stop; always: never off\n"
	"  -v, --verbose              more detail (-vv: libbpf debug output)\n"
	"  -h, --help                 this help\n"
	"\n"
	"Examples:\n"
	"  sudo nccltrace run -- torchrun --nproc_per_node=8 train.py\n"
	"  sudo nccltrace run -v -t 3 --dump /tmp/ring.jsonl -- ./build/ringjob --ranks 4 \\\n"
	"      --duration 12 --stall-rank 1 --stall-after 3 --stall-for 6\n";

const char cli_report_help[] =
	"Usage: nccltrace report [--json | --html OUT] DUMP\n"
	"\n"
	"Summarise a trace dump written by 'nccltrace run': what ran, the findings with their\n"
	"evidence, likely causes and settings, each rank's timeline of NCCL phases, its\n"
	"connections and how it ended, and the events lost.\n"
	"\n"
	"Options:\n"
	"  --json      print {\"findings\":[...], \"ranks\":[...]} (each finding: kind, rank,\n"
	"              peer_rank, phase, since_s, summary, evidence, settings, hypotheses)\n"
	"  --html OUT  write a self-contained HTML timeline to OUT (no external resources):\n"
	"              one row per rank, phases coloured, stalls marked, findings listed\n"
	"  -h, --help  this help\n"
	"\n"
	"Examples:\n"
	"  nccltrace report --json /tmp/ring.jsonl\n"
	"  nccltrace report --html /tmp/ring.html /tmp/ring.jsonl\n";

const char cli_probes_help[] =
	"Usage: nccltrace probes [--no-cache] LIB\n"
	"\n"
	"Check what nccltrace can probe in an NCCL library: its version and build-id, each probe\n"
	"(resolved or missing, with its file offset), and where the struct offsets come from\n"
	"(DWARF, the cache, a built-in table, or none). Given libibverbs.so.1, the verbs probes\n"
	"at their default symbol version, and the <infiniband/verbs.h> offsets they read. Exits\n"
	"0 when the core probes resolve, 1 otherwise.\n"
	"\n"
	"Options:\n"
	"  --no-cache  neither read nor write the offsets cache ($NCCLTRACE_CACHE_DIR or\n"
	"              /var/cache/nccltrace)\n"
	"  -h, --help  this help\n"
	"\n"
	"Example:\n"
	"  nccltrace probes /usr/local/cuda/lib/libnccl.so.2\n"
	"  nccltrace probes /usr/lib/x86_64-linux-gnu/libibverbs.so.1\n";

const char cli_convert_help[] =
	"Usage: nccltrace convert DUMP -o TRACE.json\n"
	"\n"
	"Write the dump as Chrome trace-event JSON, which https://ui.perfetto.dev and\n"
	"chrome://tracing open: one process per rank, one track per thread; NCCL phases as\n"
	"slices, nested on each thread; collectives (recorded with run --collectives) as async\n"
	"slices from a rank's launch to the last rank's launch of the same one, which is how long\n"
	"it waited for the others; TCP bytes/s and collective counts as counters; findings,\n"
	"process events, InfiniBand QP changes and HCA events as instant markers.\n"
	"\n"
	"Options:\n"
	"  -o, --output PATH  the trace to write (replaced if it exists)\n"
	"  -h, --help         this help\n"
	"\n"
	"Example:\n"
	"  nccltrace convert /tmp/ring.jsonl -o /tmp/ring.trace.json\n";

const char cli_doctor_help[] =
	"Usage: nccltrace doctor [--json] [--nccl-lib LIB] [DUMP... | -- CMD [ARGS...]]\n"
	"\n"
	"Lint the environment an NCCL job runs with: of this shell (no argument), of a command\n"
	"without running it (its 'env' prefix and torchrun's --master-addr/--master-port "
	"applied),\n"
	"or of every rank of trace dumps. 'nccltrace run' does the same before it starts the job.\n"
	"\n"
	"Checks: NCCL_* names NCCL does not read (from the strings of the NCCL library found, or\n"
	"a built-in 2.28.9 table), with the closest real name; names from tuning guides that do\n"
	"not exist (NCCL_SOCKET_TIMEOUT...) or belong to PyTorch; values NCCL cannot use; an\n"
	"NCCL_SOCKET_IFNAME no local interface matches; an NCCL_IB_GID_INDEX empty or RoCE v1\n"
	"in the local HCA's GID table (/sys/class/infiniband); RANK, LOCAL_RANK, WORLD_SIZE,\n"
	"MASTER_ADDR, MASTER_PORT (in range, one world and one master across ranks, every rank\n"
	"present, no loopback master across hosts, the port free before launch); NCCL settings\n"
	"that differ across ranks; variables sudo's env_reset dropped.\n"
	"\n"
	"One line per problem: severity, variable, what is wrong, what to do.\n"
	"Exits 0 when clean, 1 when problems were found, 64-78 on usage or input errors.\n"
	"\n"
	"Options:\n"
	"  --json            print {\"problems\":[...]} instead\n"
	"  --nccl-lib PATH   take the real names from this library\n"
	"  -h, --help        this help\n"
	"\n"
	"Examples:\n"
	"  nccltrace doctor\n"
	"  nccltrace doctor -- env NCCL_SOCKET_IFNAME=eth0 torchrun --nproc_per_node=8 train.py\n"
	"  nccltrace doctor --json nccltrace-myhost-20261129-120000.jsonl\n";

int cli_parse_seconds(const char *s, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end != '\0' || !isfinite(v) || v <= 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

const char *cli_mode_name(enum nt_attach_mode m)
{
	switch (m) {
	case NT_MODE_FENTRY:
		return "fentry";
	case NT_MODE_KPROBE:
		return "kprobe";
	case NT_MODE_TRACEPOINT:
		return "tracepoint";
	default:
		return "auto";
	}
}

static int parse_mode(const char *s, enum nt_attach_mode *m)
{
	for (int i = NT_MODE_AUTO; i <= NT_MODE_TRACEPOINT; i++) {
		if (strcmp(s, cli_mode_name(i)) == 0) {
			*m = i;
			return 0;
		}
	}
	return -1;
}

/* getopt's own messages are replaced by one line in err: silence it and name the option. */
static void bad_option(int c, int argc, char **argv, char *err, size_t errlen)
{
	const char *arg = optind - 1 < argc ? argv[optind - 1] : "?";

	if (c == ':')
		snprintf(err, errlen, "option '%s' needs a value", arg);
	else if (optopt)
		snprintf(err, errlen, "unknown option '-%c'", optopt);
	else
		snprintf(err, errlen, "unknown option '%s'", arg);
}

int cli_parse_run(int argc, char **argv, struct run_opts *o, char *err, size_t errlen)
{
	enum { OPT_NO_TUI = 256, OPT_MODE, OPT_NCCL_LIB, OPT_COLLECTIVES, OPT_TCP_HOOKS };
	static const struct option longopts[] = {
		{"dump", required_argument, NULL, 'o'},
		{"stall-threshold", required_argument, NULL, 't'},
		{"no-tui", no_argument, NULL, OPT_NO_TUI},
		{"user", required_argument, NULL, 'u'},
		{"attach-mode", required_argument, NULL, OPT_MODE},
		{"nccl-lib", required_argument, NULL, OPT_NCCL_LIB},
		{"collectives", no_argument, NULL, OPT_COLLECTIVES},
		{"tcp-hooks", required_argument, NULL, OPT_TCP_HOOKS},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{},
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->stall_threshold_s = 5;
	optind = 0; /* glibc: full reinitialisation, so repeated calls (tests) work */
	opterr = 0;
	/* '+': stop at the first non-option, so CMD's own options pass through untouched */
	while ((c = getopt_long(argc, argv, "+:o:t:u:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!*optarg) {
				snprintf(err, errlen, "--dump needs a non-empty path");
				return -1;
			}
			o->dump_path = optarg;
			break;
		case 't':
			if (cli_parse_seconds(optarg, 86400, &o->stall_threshold_s)) {
				snprintf(err, errlen,
					 "--stall-threshold '%s': expected seconds, > 0 and <= "
					 "86400",
					 optarg);
				return -1;
			}
			break;
		case OPT_NO_TUI:
			o->no_tui = true;
			break;
		case 'u':
			o->user = optarg;
			break;
		case OPT_MODE:
			if (parse_mode(optarg, &o->mode)) {
				snprintf(err, errlen,
					 "--attach-mode '%s': expected auto, fentry, kprobe or "
					 "tracepoint",
					 optarg);
				return -1;
			}
			break;
		case OPT_NCCL_LIB:
			o->nccl_lib = optarg;
			break;
		case OPT_COLLECTIVES:
			o->collectives = true;
			break;
		case OPT_TCP_HOOKS:
			if (strcmp(optarg, "auto") && strcmp(optarg, "always")) {
				snprintf(err, errlen, "--tcp-hooks '%s': expected auto or always",
					 optarg);
				return -1;
			}
			o->tcp_always = !strcmp(optarg, "always");
			break;
		case 'v':
			o->verbose++;
			break;
		case 'h':
			o->help = true;
			return 0;
		default:
			bad_option(c, argc, argv, err, errlen);
			return -1;
		}
	}
	if (optind < argc && strcmp(argv[optind - 1], "--") != 0 && argv[optind][0] == '-') {
		snprintf(err, errlen, "unknown option '%s'", argv[optind]);
		return -1;
	}
	if (optind >= argc) {
		snprintf(err, errlen,
			 "no command to run (usage: nccltrace run [OPTIONS] -- CMD [ARGS...])");
		return -1;
	}
	o->cmd = &argv[optind];
	o->ncmd = argc - optind;
	return 0;
}

/*
 * The options report and doctor share: --json and -h; --nccl-lib and --html where asked for.
 * Returns 0 (optind at the first operand), 1 for --help, -1 with err.
 */
static int parse_shared(int argc, char **argv, const char *shortopts, bool *json,
			const char **nccl_lib, const char **html, bool *help, char *err,
			size_t errlen)
{
	enum { OPT_JSON = 256, OPT_NCCL_LIB, OPT_HTML };
	static const struct option longopts[] = {
		{"json", no_argument, NULL, OPT_JSON},
		{"nccl-lib", required_argument, NULL, OPT_NCCL_LIB},
		{"html", required_argument, NULL, OPT_HTML},
		{"help", no_argument, NULL, 'h'},
		{},
	};
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (c) {
		case OPT_JSON:
			*json = true;
			break;
		case OPT_NCCL_LIB:
			if (!nccl_lib) {
				snprintf(err, errlen, "unknown option '--nccl-lib'");
				return -1;
			}
			*nccl_lib = optarg;
			break;
		case OPT_HTML:
			if (!html) {
				snprintf(err, errlen, "unknown option '--html'");
				return -1;
			}
			if (!*optarg) {
				snprintf(err, errlen, "--html needs a non-empty path");
				return -1;
			}
			*html = optarg;
			break;
		case 'h':
			*help = true;
			return 1;
		default:
			bad_option(c, argc, argv, err, errlen);
			return -1;
		}
	}
	return 0;
}

int cli_parse_report(int argc, char **argv, struct report_opts *o, char *err, size_t errlen)
{
	int r;

	memset(o, 0, sizeof(*o));
	r = parse_shared(argc, argv, ":h", &o->json, NULL, &o->html, &o->help, err, errlen);
	if (r)
		return r < 0 ? -1 : 0;
	if (optind >= argc) {
		snprintf(err, errlen, "no dump given (usage: nccltrace report [--json] DUMP)");
		return -1;
	}
	if (argc - optind > 1) {
		snprintf(err, errlen, "one dump at a time (got '%s' and '%s')", argv[optind],
			 argv[optind + 1]);
		return -1;
	}
	o->path = argv[optind];
	return 0;
}

int cli_parse_doctor(int argc, char **argv, struct doctor_opts *o, char *err, size_t errlen)
{
	int r;

	memset(o, 0, sizeof(*o));
	/* '+': stop at the first operand, so a command's own options stay its own */
	r = parse_shared(argc, argv, "+:h", &o->json, &o->nccl_lib, NULL, &o->help, err, errlen);
	if (r)
		return r < 0 ? -1 : 0;
	if (optind > 1 && !strcmp(argv[optind - 1], "--")) {
		if (optind >= argc) {
			snprintf(err, errlen,
				 "no command after -- (usage: nccltrace doctor -- CMD "
				 "[ARGS...])");
			return -1;
		}
		o->cmd = &argv[optind];
		o->ncmd = argc - optind;
		return 0;
	}
	for (int i = optind; i < argc; i++)
		if (argv[i][0] == '-') {
			snprintf(err, errlen, "unknown option '%s'", argv[i]);
			return -1;
		}
	if (optind < argc) {
		o->dumps = &argv[optind];
		o->ndumps = argc - optind;
	}
	return 0;
}
