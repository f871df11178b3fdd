// SPDX-License-Identifier: MIT
/*
 * Command-line parsing for every subcommand (cli.h), and their --help texts. Over 700 lines on
 * purpose: most of it is the help texts and the option tables, read top to bottom; the parsers
 * share trace_opt() and its checks, which a split would export as internals.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "cmd/cli.h"
#include "cmd/listen.h"
#include "diagnose/diagnose.h"
#include "present/dump.h"
#include "trace/tracer.h"

const char *cli_self = "/proc/self/exe";

const char cli_main_help[] =
	"Usage: nccltrace COMMAND [OPTIONS]\n"
	"\n"
	"Find out why a multi-process (NCCL) job is stuck, from outside the job.\n"
	"\n"
	"Commands:\n"
	"  run [OPTIONS] -- CMD [ARGS...]   run CMD as the invoking user and trace it\n"
	"  attach [OPTIONS] PID...          trace a job already running (or already hung)\n"
	"  report [--json] DUMP...          summarise a trace dump (several: one job's hosts)\n"
	"  probes LIB                       what nccltrace can probe in an NCCL library or\n"
	"                                   libibverbs\n"
	"  doctor [DUMP... | -- CMD...]     lint the NCCL/PyTorch environment\n"
	"  convert DUMP... -o TRACE.json    the dump as a Perfetto / Chrome trace\n"
	"  cat DUMP                         the dump's records whole, one per line, for jq\n"
	"  watch HOST:PORT...               one live view of the tracers of a job's hosts\n"
	"  replay [OPTIONS] DUMP...         serve dumps as their tracers served them live,\n"
	"                                   for watch (--nodes N: a job of N nodes)\n"
	"  agent [OPTIONS]                  trace every NCCL job of this node, always on\n"
	"  version                          print the version\n"
	"\n"
	"Examples:\n"
	"  sudo nccltrace run -- torchrun --nproc_per_node=8 train.py\n"
	"  sudo nccltrace run --stall-threshold 3 -- ./build/ringjob --ranks 4 --stall-rank 1\n"
	"  sudo nccltrace attach --once 4711\n"
	"  sudo nccltrace agent --listen 127.0.0.1:9464\n"
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
	"progress stops. The stacks of its culprit and waiters are evidence: native ones (each\n"
	"thread stopped alone, for microseconds) and, for CPython 3.9-3.13, Python ones\n"
	"(file:line, read without stopping it); both need ptrace's permission (root, Yama's\n"
	"ptrace_scope). Findings are shown live (a dashboard when stdout is a terminal, else on\n"
	"stderr) and written to the trace dump. Dashboard keys: q quit, p pause, s sort, Tab,\n"
	"arrows, Enter details, d snapshot, ? help.\n"
	"Exits with CMD's status (128+N if a signal N killed it); 64-78 for nccltrace's own "
	"errors.\n"
	"\n"
	"Options:\n"
	"  -o, --dump PATH            trace dump (JSON Lines; zstd frames if PATH ends in .zst);\n"
	"                             default nccltrace-HOST-DATE-TIME.jsonl (-2, -3... where\n"
	"                             that exists); a PATH that exists is refused\n"
	"      --dump-detail WHAT     adaptive (default): a snapshot each second while something\n"
	"                             happens, one in 30 s while the job runs calm, and the\n"
	"                             minute before anything happens at full resolution;\n"
	"                             full: a snapshot each second, always\n"
	"      --max-dump-bytes SIZE  the dump never grows past SIZE (K, M, G: KiB, MiB, GiB;\n"
	"                             at least 256K): the calm stretches are thinned first as\n"
	"                             it fills, then nothing more is written; the footer and\n"
	"                             report say what was left out (default: no limit)\n"
	"  -t, --stall-threshold SEC  no progress for this long is a stall (default 5); the\n"
	"                             ceiling: a job that moves faster is called stalled after\n"
	"                             10 x its own p99 gap between moves (at least the floor)\n"
	"      --min-threshold SEC    the adaptive threshold's floor (default 1)\n"
	"      --fixed-threshold      no adaptation: -t for every wait\n"
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
	"      --listen ADDR:PORT     serve /metrics (Prometheus) and /state (JSON, for\n"
	"                             'nccltrace watch'); a bare PORT is on 127.0.0.1\n"
	"      --token-file FILE      requests must carry 'Authorization: Bearer' and FILE's\n"
	"                             first line; required to listen on a non-loopback address\n"
	"      --record-budget N      NCCL records a second each process may send the tracer\n"
	"                             (default 4096), and N/4 TCP and N/4 process records; what\n"
	"                             is over it is counted as suppressed, shown, not written\n"
	"      --ringbuf-kb N         the kernel's record buffer in KiB (default 1024); a small\n"
	"                             one loses records on purpose (the tests do)\n"
	"  -v, --verbose              more detail (-vv: libbpf debug output)\n"
	"  -h, --help                 this help\n"
	"\n"
	"Examples:\n"
	"  sudo nccltrace run -- torchrun --nproc_per_node=8 train.py\n"
	"  sudo nccltrace run -v -t 3 --dump /tmp/ring.jsonl -- ./build/ringjob --ranks 4 \\\n"
	"      --duration 12 --stall-rank 1 --stall-after 3 --stall-for 6\n";

const char cli_attach_help[] =
	"Usage: nccltrace attach [OPTIONS] PID...\n"
	"\n"
	"Trace a job that is already running, or already hung, from any pid of it: its launcher\n"
	"(torchrun, mpirun, a script) or a rank, whose launcher is found by climbing its\n"
	"parents (the first without a rank variable). The job is the launcher's process tree;\n"
	"nccltrace says which processes it took and why. Within a second: every thread's stack\n"
	"(each stopped alone for tens of microseconds), NCCL's phases from them, the NCCL probes,\n"
	"and each socket's age from the kernel (sock_diag), so a stall that began before the\n"
	"attach is named with its true age; the communicators made before the attach are found\n"
	"in the ranks' memory (NCCL 2.21+), so their collective counters name the rank behind\n"
	"where no socket carries the collectives (NVLink, SHM), counted from the attach. The job\n"
	"is never signalled: q, Ctrl-C or the job's end detach, and detaching leaves no probe,\n"
	"no BPF program and no ptrace.\n"
	"Exits 0 once detached (the job's own status if it ended meanwhile); with --once, 1 when\n"
	"a problem was found and 0 when none; 64-78 for nccltrace's own errors.\n"
	"\n"
	"Options:\n"
	"      --once                 one diagnosis: print it (as 'nccltrace report'), write the\n"
	"                             dump, detach and exit\n"
	"      --json                 with --once: print the report's JSON ({\"findings\":[...]})\n"
	"  -o, --dump PATH            trace dump (JSON Lines; zstd frames if PATH ends in .zst);\n"
	"                             default nccltrace-HOST-DATE-TIME.jsonl (-2, -3... where\n"
	"                             that exists); a PATH that exists is refused\n"
	"      --dump-detail WHAT     adaptive (default) or full, as for run\n"
	"      --max-dump-bytes SIZE  the dump never grows past SIZE (at least 256K), as for run\n"
	"  -t, --stall-threshold SEC  no progress for this long is a stall (default 5), the\n"
	"                             adaptive threshold's ceiling, as for run\n"
	"      --min-threshold SEC    its floor (default 1)\n"
	"      --fixed-threshold      no adaptation: -t for every wait\n"
	"      --no-tui               plain output (default when stdout is not a terminal)\n"
	"      --attach-mode MODE     auto (default), fentry, kprobe or tracepoint\n"
	"      --nccl-lib PATH        probe this NCCL library (default: found in the maps)\n"
	"      --collectives          a probe per collective (costs microseconds per collective)\n"
	"      --tcp-hooks WHEN       auto (default) or always, as for run\n"
	"      --listen ADDR:PORT     serve /metrics and /state while attached, as for run\n"
	"      --token-file FILE      the bearer token --listen needs off loopback\n"
	"      --record-budget N      NCCL records a second per process (default 4096; N/4 TCP\n"
	"                             and N/4 process records)\n"
	"      --ringbuf-kb N         the kernel's record buffer in KiB (default 1024)\n"
	"  -v, --verbose              more detail (-vv: libbpf debug output)\n"
	"  -h, --help                 this help\n"
	"\n"
	"Examples:\n"
	"  sudo nccltrace attach --once 4711\n"
	"  sudo nccltrace attach --once --json -t 3 4711\n"
	"  sudo nccltrace attach --dump /tmp/hang.jsonl 4711 4712\n";

const char cli_report_help[] =
	"Usage: nccltrace report [--json | --html OUT] DUMP...\n"
	"\n"
	"Summarise a trace dump written by 'nccltrace run': what ran, the findings with their\n"
	"evidence, likely causes and settings, each rank's timeline of NCCL phases, its\n"
	"connections and how it ended, and the events lost.\n"
	"\n"
	"Several dumps of one job (one per host) are merged: their snapshots are put on one\n"
	"clock by each dump's realtime anchor and diagnosed as one job, so a rank waiting on a\n"
	"rank of another host names it, with that host's evidence.\n"
	"\n"
	"Options:\n"
	"  --json      print {\"findings\":[...], \"ranks\":[...]} (each finding: kind, rank,\n"
	"              peer_rank, phase, since_s, summary, evidence, settings, hypotheses,\n"
	"              stacks: native frames and, for a Python process, python frames)\n"
	"  --html OUT  write a self-contained HTML timeline to OUT (no external resources):\n"
	"              one row per rank, phases coloured, stalls marked, findings listed\n"
	"  -h, --help  this help\n"
	"\n"
	"Examples:\n"
	"  nccltrace report --json /tmp/ring.jsonl\n"
	"  nccltrace report --html /tmp/ring.html /tmp/ring.jsonl\n"
	"  nccltrace report host-a.jsonl host-b.jsonl\n";

const char cli_probes_help[] =
	"Usage: nccltrace probes [--no-cache] LIB\n"
	"\n"
	"Check what nccltrace can probe in an NCCL library: its version and build-id, each probe\n"
	"(resolved or missing, with its file offset), where the struct offsets come from\n"
	"(DWARF, the cache, a built-in table, or none), its profiler plugin API, and what tells\n"
	"each fact about a job on it (sources: probes, the plugin, NCCL's log, stacks). Given\n"
	"libibverbs.so.1, the verbs probes\n"
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
	"Usage: nccltrace convert DUMP... -o TRACE.json\n"
	"\n"
	"Write the dump as Chrome trace-event JSON, which https://ui.perfetto.dev and\n"
	"chrome://tracing open: one process per rank, one track per thread; NCCL phases as\n"
	"slices, nested on each thread; collectives (recorded with run --collectives) as async\n"
	"slices from a rank's launch to the last rank's launch of the same one, which is how long\n"
	"it waited for the others; TCP bytes/s and collective counts as counters; findings,\n"
	"process events, InfiniBand QP changes and HCA events as instant markers.\n"
	"Several dumps of one job (one per host) become one trace, on the first dump's time\n"
	"axis by their realtime anchors, each process named with its host.\n"
	"\n"
	"Options:\n"
	"  -o, --output PATH  the trace to write (replaced if it exists)\n"
	"  -h, --help         this help\n"
	"\n"
	"Example:\n"
	"  nccltrace convert /tmp/ring.jsonl -o /tmp/ring.trace.json\n";

const char cli_cat_help[] =
	"Usage: nccltrace cat DUMP\n"
	"\n"
	"Print the dump's records, one JSON object per line, with each snapshot and state record\n"
	"whole: the dump writes them as what changed since the last one (format 2), which jq\n"
	"alone cannot read. A dump of format 1 comes out as it is.\n"
	"\n"
	"Options:\n"
	"  -h, --help  this help\n"
	"\n"
	"Example:\n"
	"  nccltrace cat /tmp/ring.jsonl | jq -c 'select(.type==\"snapshot\") | .conns | length'\n";

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
	"that differ across ranks; variables sudo's env_reset dropped. Before a run, this host's\n"
	"PCI tree too: ACS redirect on a switch port between a GPU and an RDMA NIC or GPU behind\n"
	"it, a GPU's or NIC's link narrower than its maximum, an IOMMU translating DMA.\n"
	"\n"
	"One line per problem: severity, variable, what is wrong, what to do. Then the NCCL\n"
	"library the job will load (a libnccl.so* in LD_PRELOAD first) and what tells each\n"
	"fact about the job on it, as 'nccltrace probes' shows.\n"
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

int cli_parse_bytes(const char *s, uint64_t min, uint64_t *out)
{
	static const char units[] = "kmgt";
	unsigned long long v;
	const char *u;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end) {
		u = strchr(units, end[0] | 0x20);
		if (!u || (end[1] && strcmp(end + 1, "iB") && strcmp(end + 1, "B")))
			return -1;
		for (int i = 0; i <= u - units; i++) {
			if (v > UINT64_MAX / 1024)
				return -1;
			v *= 1024;
		}
	}
	if (v < min)
		return -1;
	*out = v;
	return 0;
}

static int parse_mode(const char *s, enum nt_attach_mode *m)
{
	for (int i = NT_MODE_AUTO; i <= NT_MODE_TRACEPOINT; i++) {
		if (strcmp(s, tracer_mode_name(i)) == 0) {
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

/* A whole number from lo to hi; 0 or -1 */
static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

enum {
	OPT_NO_TUI = 256,
	OPT_MODE,
	OPT_NCCL_LIB,
	OPT_COLLECTIVES,
	OPT_TCP_HOOKS,
	OPT_ONCE,
	OPT_JSON_ATTACH,
	OPT_LISTEN,
	OPT_TOKEN_FILE,
	OPT_MIN_THRESHOLD,
	OPT_FIXED_THRESHOLD,
	OPT_BUDGET,
	OPT_RINGBUF_KB,
	OPT_DUMP_DETAIL,
	OPT_MAX_DUMP_BYTES,
};

/* The options run and attach share */
static const struct option trace_longopts[] = {
	{"dump", required_argument, NULL, 'o'},
	{"stall-threshold", required_argument, NULL, 't'},
	{"min-threshold", required_argument, NULL, OPT_MIN_THRESHOLD},
	{"fixed-threshold", no_argument, NULL, OPT_FIXED_THRESHOLD},
	{"no-tui", no_argument, NULL, OPT_NO_TUI},
	{"attach-mode", required_argument, NULL, OPT_MODE},
	{"nccl-lib", required_argument, NULL, OPT_NCCL_LIB},
	{"collectives", no_argument, NULL, OPT_COLLECTIVES},
	{"tcp-hooks", required_argument, NULL, OPT_TCP_HOOKS},
	{"listen", required_argument, NULL, OPT_LISTEN},
	{"token-file", required_argument, NULL, OPT_TOKEN_FILE},
	{"record-budget", required_argument, NULL, OPT_BUDGET},
	{"ringbuf-kb", required_argument, NULL, OPT_RINGBUF_KB},
	{"dump-detail", required_argument, NULL, OPT_DUMP_DETAIL},
	{"max-dump-bytes", required_argument, NULL, OPT_MAX_DUMP_BYTES},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
};
#define NTRACE_OPTS (sizeof(trace_longopts) / sizeof(trace_longopts[0]))

/* The shared options, then a command's own extra[0..n), ended as getopt_long wants */
static void longopts_with(struct option *out, const struct option *extra, size_t n)
{
	memcpy(out, trace_longopts, sizeof(trace_longopts));
	memcpy(out + NTRACE_OPTS, extra, n * sizeof(*extra));
	memset(out + NTRACE_OPTS + n, 0, sizeof(*out));
}

/*
 * One option of those run and attach share, each case with its own check: long, but a table
 * read top to bottom. 0 when taken, 1 when c is none of them, -1 with err.
 */
static int trace_opt(int c, struct run_opts *o, char *err, size_t errlen)
{
	switch (c) {
	case 'o':
		if (!*optarg) {
			snprintf(err, errlen, "--dump needs a non-empty path");
			return -1;
		}
		o->dump_path = optarg;
		return 0;
	case 't':
		if (cli_parse_seconds(optarg, DIAG_MAX_THRESHOLD_S, &o->stall_threshold_s)) {
			snprintf(err, errlen,
				 "--stall-threshold '%s': expected seconds, > 0 and <= %d", optarg,
				 DIAG_MAX_THRESHOLD_S);
			return -1;
		}
		return 0;
	case OPT_MIN_THRESHOLD:
		if (cli_parse_seconds(optarg, DIAG_MAX_THRESHOLD_S, &o->min_threshold_s)) {
			snprintf(err, errlen,
				 "--min-threshold '%s': expected seconds, > 0 and <= %d", optarg,
				 DIAG_MAX_THRESHOLD_S);
			return -1;
		}
		return 0;
	case OPT_FIXED_THRESHOLD:
		o->fixed_threshold = true;
		return 0;
	case OPT_DUMP_DETAIL:
		if (strcmp(optarg, "adaptive") && strcmp(optarg, "full")) {
			snprintf(err, errlen, "--dump-detail '%s': expected adaptive or full",
				 optarg);
			return -1;
		}
		o->dump_full = !strcmp(optarg, "full");
		return 0;
	case OPT_MAX_DUMP_BYTES:
		if (cli_parse_bytes(optarg, DUMP_BUDGET_MIN, &o->max_dump_bytes)) {
			snprintf(err, errlen,
				 "--max-dump-bytes '%s': expected bytes, at least 256K (suffixes "
				 "K, M, "
				 "G, T: powers of 1024)",
				 optarg);
			return -1;
		}
		return 0;
	case OPT_NO_TUI:
		o->no_tui = true;
		return 0;
	case OPT_MODE:
		if (parse_mode(optarg, &o->mode)) {
			snprintf(err, errlen,
				 "--attach-mode '%s': expected auto, fentry, kprobe or tracepoint",
				 optarg);
			return -1;
		}
		return 0;
	case OPT_NCCL_LIB:
		o->nccl_lib = optarg;
		return 0;
	case OPT_COLLECTIVES:
		o->collectives = true;
		return 0;
	case OPT_TCP_HOOKS:
		if (strcmp(optarg, "auto") && strcmp(optarg, "always")) {
			snprintf(err, errlen, "--tcp-hooks '%s': expected auto or always", optarg);
			return -1;
		}
		o->tcp_always = !strcmp(optarg, "always");
		return 0;
	case OPT_LISTEN:
		o->listen = optarg;
		return 0;
	case OPT_TOKEN_FILE:
		o->token_file = optarg;
		return 0;
	case OPT_BUDGET:
		if (parse_uint(optarg, 16, 1000000, &o->budget)) {
			snprintf(err, errlen,
				 "--record-budget '%s': expected records a second, 16 to 1000000",
				 optarg);
			return -1;
		}
		return 0;
	case OPT_RINGBUF_KB:
		if (parse_uint(optarg, 4, 1 << 20, &o->ringbuf_kb) ||
		    (o->ringbuf_kb & (o->ringbuf_kb - 1))) {
			snprintf(err, errlen,
				 "--ringbuf-kb '%s': expected a power of 2 from 4 to 1048576",
				 optarg);
			return -1;
		}
		return 0;
	case 'v':
		o->verbose++;
		return 0;
	case 'h':
		o->help = true;
		return 0;
	default:
		return 1;
	}
}

/* --listen and --token-file, together and well formed (run's and attach's); 0 or -1 with err */
static int listen_opts_check(const struct run_opts *o, char *err, size_t errlen)
{
	if (o->listen || o->token_file) {
		struct sockaddr_storage ss;
		bool lo;

		if (!o->listen) {
			snprintf(err, errlen, "--token-file is for --listen, which is not given");
			return -1;
		}
		if (!listen_parse_spec(o->listen, &ss, &lo)) {
			snprintf(err, errlen,
				 "--listen '%s': expected PORT, ADDR:PORT or [ADDR6]:PORT",
				 o->listen);
			return -1;
		}
		if (!lo && !o->token_file) {
			snprintf(
				err, errlen,
				"--listen %s is not a loopback address: it needs --token-file FILE",
				o->listen);
			return -1;
		}
	}
	return 0;
}

int cli_parse_run(int argc, char **argv, struct run_opts *o, char *err, size_t errlen)
{
	static const struct option own[] = {{"user", required_argument, NULL, 'u'}};
	struct option longopts[NTRACE_OPTS + 2];
	int c, r;

	longopts_with(longopts, own, 1);
	memset(o, 0, sizeof(*o));
	o->stall_threshold_s = 5;
	o->min_threshold_s = 1;
	optind = 0; /* glibc: full reinitialisation, so repeated calls (tests) work */
	opterr = 0;
	/* '+': stop at the first non-option, so CMD's own options pass through untouched */
	while ((c = getopt_long(argc, argv, "+:o:t:u:vh", longopts, NULL)) != -1) {
		if (c == 'u') {
			o->user = optarg;
			continue;
		}
		r = trace_opt(c, o, err, errlen);
		if (r < 0)
			return -1;
		if (r > 0) {
			bad_option(c, argc, argv, err, errlen);
			return -1;
		}
		if (o->help)
			return 0;
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
	if (listen_opts_check(o, err, errlen))
		return -1;
	o->cmd = &argv[optind];
	o->ncmd = argc - optind;
	return 0;
}

int cli_parse_attach(int argc, char **argv, struct attach_opts *o, char *err, size_t errlen)
{
	static const struct option own[] = {{"once", no_argument, NULL, OPT_ONCE},
					    {"json", no_argument, NULL, OPT_JSON_ATTACH}};
	struct option longopts[NTRACE_OPTS + 3];
	int c, r;

	longopts_with(longopts, own, 2);
	memset(o, 0, sizeof(*o));
	o->run.stall_threshold_s = 5;
	o->run.min_threshold_s = 1;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:t:vh", longopts, NULL)) != -1) {
		if (c == OPT_ONCE || c == OPT_JSON_ATTACH) {
			*(c == OPT_ONCE ? &o->once : &o->json) = true;
			continue;
		}
		r = trace_opt(c, &o->run, err, errlen);
		if (r > 0)
			bad_option(c, argc, argv, err, errlen);
		if (r)
			return -1;
		if (o->run.help)
			return 0;
	}
	if (o->json && !o->once) {
		snprintf(err, errlen, "--json goes with --once (the live view is text)");
		return -1;
	}
	if (listen_opts_check(&o->run, err, errlen))
		return -1;
	if (optind >= argc) {
		snprintf(err, errlen, "no pid given (usage: nccltrace attach [OPTIONS] PID...)");
		return -1;
	}
	for (int i = optind; i < argc && o->npids < CLI_MAX_PIDS; i++) {
		char *end;
		long v;

		errno = 0;
		v = strtol(argv[i], &end, 10);
		if (errno || end == argv[i] || *end || v <= 0 || v > 0x3fffffff) {
			snprintf(err, errlen, "'%s' is not a pid (a positive number)", argv[i]);
			return -1;
		}
		o->pids[o->npids++] = (int)v;
	}
	if (argc - optind > CLI_MAX_PIDS) {
		snprintf(err, errlen, "at most %d pids (one of the job's is enough)", CLI_MAX_PIDS);
		return -1;
	}
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
	for (int i = optind; i < argc; i++)
		if (argv[i][0] == '-' && argv[i][1]) {
			snprintf(err, errlen, "unknown option '%s'", argv[i]);
			return -1;
		}
	o->path = argv[optind];
	o->paths = &argv[optind];
	o->npaths = argc - optind;
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
