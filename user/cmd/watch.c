// SPDX-License-Identifier: MIT
/*
 * `nccltrace watch HOST:PORT...`: the whole job from every host's tracer (`run --listen`): each
 * round (2 Hz) fetches every /state, puts the snapshots on one clock by their realtime anchors,
 * merges them and diagnoses the job as one (present/jobview.c), so a rank waiting on a rank of
 * another host names it with that host's evidence. A dashboard in a terminal, else the findings
 * as they open and close; --once prints one round (--json: the report's contract).
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "cmd/cli.h"
#include "cmd/subcmds.h"
#include "cmd/watchjob.h"
#include "model/snapmerge.h"
#include "present/console.h"
#include "present/dashboard.h"
#include "present/jobview.h"
#include "present/tui.h"
#include "util/clock.h"

#define ROUND_NS (NT_NSEC_PER_SEC / 2)
/* more tracers than this: --once tells how many answered, the findings first */
#define WATCH_HOSTS_LISTED 16

static const char watch_help[] =
	"Usage: nccltrace watch [--once [--json]] [--token-file FILE] [-t SEC] [--no-tui]\n"
	"                       [--job RULE=ID] HOST:PORT...\n"
	"\n"
	"Watch a job of several hosts, one 'nccltrace run --listen' (or 'nccltrace agent\n"
	"--listen') per host: fetch every tracer's /state twice a second, put the snapshots on\n"
	"one clock (each tracer's realtime anchor) and diagnose them as one job, so a rank\n"
	"waiting on a rank of another host names that rank, with its host's evidence. A\n"
	"dashboard when stdout is a terminal, else the findings as they open and close.\n"
	"\n"
	"Options:\n"
	"  --once             one round: print the findings and exit\n"
	"  --json             with --once: {\"findings\":[...], \"hosts\":[...]} (the findings as\n"
	"                     'report --json' has them, each with its culprit's \"host\")\n"
	"  --token-file FILE  send 'Authorization: Bearer' and FILE's first line\n"
	"  --job RULE=ID      of each agent ('nccltrace agent --listen'), that job (as its\n"
	"                     /state names it: MASTER_ADDR=10.0.0.1:29500/16); an agent of\n"
	"                     one job needs none\n"
	"  -t, --stall-threshold SEC  default: the first tracer's\n"
	"  --no-tui           plain output even on a terminal\n"
	"  --full-pages       fetch each tracer's whole /state every round (by default only\n"
	"                     what changed since the last round's: ?since=SEQ)\n"
	"  -h, --help         this help\n"
	"\n"
	"Without a dashboard, SIGINT or SIGTERM stops it: it then tells what its rounds cost\n"
	"(wall and CPU time a round, peak RSS).\n"
	"\n"
	"Exit status: 0; 69 when no tracer answers; 64 on usage errors.\n"
	"\n"
	"Examples:\n"
	"  nccltrace watch node1:9464 node2:9464\n"
	"  nccltrace watch --once --json --token-file /etc/nccltrace.token 10.0.0.1:9464\n"
	"  nccltrace replay --nodes 128 --listen 9500 stall.jsonl healthy.jsonl &\n"
	"  nccltrace watch $(seq -f 127.0.0.1:%g 9500 9627)\n";

static int watch_parse(struct watch *w, int argc, char **argv, char *err, size_t errlen)
{
	enum { OPT_ONCE = 256, OPT_JSON, OPT_TOKEN, OPT_NO_TUI, OPT_JOB, OPT_FULL };
	static const struct option longopts[] = {
		{"once", no_argument, NULL, OPT_ONCE},
		{"json", no_argument, NULL, OPT_JSON},
		{"token-file", required_argument, NULL, OPT_TOKEN},
		{"stall-threshold", required_argument, NULL, 't'},
		{"no-tui", no_argument, NULL, OPT_NO_TUI},
		{"job", required_argument, NULL, OPT_JOB},
		{"full-pages", no_argument, NULL, OPT_FULL},
		{"help", no_argument, NULL, 'h'},
		{},
	};
	bool full = false;
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":t:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_ONCE:
			w->once = true;
			break;
		case OPT_FULL:
			full = true;
			break;
		case OPT_JSON:
			w->json = true;
			break;
		case OPT_TOKEN:
			w->token_file = optarg;
			break;
		case OPT_NO_TUI:
			w->no_tui = true;
			break;
		case OPT_JOB:
			if (!strchr(optarg, '=')) {
				snprintf(err, errlen,
					 "--job '%s': expected RULE=ID (an agent's /state "
					 "names each job so)",
					 optarg);
				return -1;
			}
			w->job = optarg;
			break;
		case 't':
			if (cli_parse_seconds(optarg, DIAG_MAX_THRESHOLD_S, &w->threshold_s)) {
				snprintf(err, errlen, "--stall-threshold '%s': expected seconds",
					 optarg);
				return -1;
			}
			break;
		case 'h':
			return 1;
		case ':':
			snprintf(err, errlen, "option '%s' needs a value", argv[optind - 1]);
			return -1;
		default:
			snprintf(err, errlen, "unknown option '%s'", argv[optind - 1]);
			return -1;
		}
	}
	if (w->json && !w->once) {
		snprintf(err, errlen, "--json is for --once (the live view is a dashboard)");
		return -1;
	}
	if (optind >= argc) {
		snprintf(err, errlen, "no tracer given (usage: nccltrace watch HOST:PORT...)");
		return -1;
	}
	if (watch_alloc(w, argv + optind, argc - optind)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (int i = 0; i < w->n; i++)
		w->ep[i].full = full;
	return 0;
}

static json_t *hosts_json(const struct watch *w)
{
	json_t *a = json_array();

	for (int i = 0; i < w->n; i++)
		json_array_append_new(a, json_pack("{s:s,s:s?,s:s?}", "endpoint", w->ep[i].spec,
						   "host", w->cur[i] ? w->host[i] : NULL, "error",
						   w->ep[i].err[0] ? w->ep[i].err : NULL));
	return a;
}

static void print_once(const struct watch *w)
{
	json_t *fs = jobview_open_findings(&w->v), *f, *e;
	size_t i, j;

	if (w->json) {
		json_t *o =
			json_pack("{s:o,s:o,s:s}", "findings", fs, "hosts", hosts_json(w), "clock",
				  "aligned by each tracer's CLOCK_REALTIME anchor: the hosts' "
				  "clocks are assumed to agree within their NTP skew");

		json_dumpf(o, stdout, JSON_INDENT(1));
		putchar('\n');
		json_decref(o);
		return;
	}
	/* many tracers: how many answered, and those that did not, after the findings */
	if (w->n <= WATCH_HOSTS_LISTED)
		for (int k = 0; k < w->n; k++)
			printf("%s: %s\n", w->ep[k].spec, w->cur[k] ? w->host[k] : w->ep[k].err);
	printf("%zu finding%s\n", json_array_size(fs), json_array_size(fs) == 1 ? "" : "s");
	json_array_foreach(fs, i, f)
	{
		printf("\n%s %.1fs: %s\n", json_string_value(json_object_get(f, "kind")),
		       json_number_value(json_object_get(f, "since_s")),
		       json_string_value(json_object_get(f, "summary")));
		json_array_foreach(json_object_get(f, "evidence"), j, e)
			printf("    %s\n", json_string_value(e));
		json_array_foreach(json_object_get(f, "hypotheses"), j, e)
			printf("    %s %s\n", j ? "or:" : "likely:", json_string_value(e));
	}
	if (w->n > WATCH_HOSTS_LISTED) {
		int ok = 0, shown = 0;

		for (int k = 0; k < w->n; k++)
			ok += w->cur[k] != NULL;
		printf("\n%d of %d tracers answered\n", ok, w->n);
		for (int k = 0; k < w->n && shown < WATCH_HOSTS_LISTED; k++)
			if (!w->cur[k] && ++shown)
				printf("  %s: %s\n", w->ep[k].spec, w->ep[k].err);
		if (w->n - ok > shown)
			printf("  ... %d more\n", w->n - ok - shown);
	}
	json_decref(fs);
}

static void tell(void *ctx, enum finding_event ev, const struct tracked_finding *t)
{
	const struct watch *w = ctx;

	console_finding(stdout, ev, t, w->merged ? w->merged->s.now_ns : 0);
	fflush(stdout);
}

static void sleep_until(uint64_t t)
{
	uint64_t now = clock_mono_ns();

	if (t > now) {
		struct timespec ts = {(time_t)((t - now) / NT_NSEC_PER_SEC),
				      (long)((t - now) % NT_NSEC_PER_SEC)};

		nanosleep(&ts, NULL);
	}
}

/* the dashboard of the merged job until q */
static void live_tui(struct watch *w, struct tui *t)
{
	struct dashboard *d = dashboard__new();
	char cmd[160];
	struct dash_info in = {.cmd = cmd, .mode = "watch", .dump = "", .cfg = &w->v.cfg};

	snprintf(cmd, sizeof(cmd), "watch: %d tracer%s", w->n, w->n == 1 ? "" : "s");
	for (bool quit = false; d && !quit;) {
		uint64_t next = clock_mono_ns() + ROUND_NS;
		const struct tui_model *m = NULL;

		watch_round(w);
		if (w->merged) {
			if (!in.start_ns)
				in.start_ns = w->merged->s.now_ns;
			in.expanded = tui__state(t)->expanded;
			m = dashboard__update(d, &w->merged->s, &w->v.fs, &in, tui__state(t)->sort);
		}
		if (m)
			tui__draw(t, m);
		while (!quit && clock_mono_ns() < next) {
			struct pollfd p = {.fd = tui__input_fd(t), .events = POLLIN};
			uint64_t left = next - clock_mono_ns();

			if (poll(&p, 1, (int)(left / 1000000) + 1) > 0 && m) {
				enum tui_action a = tui__keys(t, m, false);

				quit = a == TUI_QUIT_DETACH || a == TUI_QUIT_STOP_JOB;
				if (a == TUI_REDRAW)
					tui__draw(t, m);
			}
		}
	}
	dashboard__free(d);
}

static volatile sig_atomic_t stop_plain;

static void on_stop(int sig)
{
	(void)sig;
	stop_plain = 1;
}

/* what its rounds cost, told when stopped: what a job of many hosts asks of watch */
static void tell_cost(int rounds, uint64_t wall_ns, uint64_t max_ns, uint64_t t0)
{
	struct rusage ru;
	double cpu;

	if (!rounds || getrusage(RUSAGE_SELF, &ru))
		return;
	cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
	      ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
	fprintf(stderr,
		"nccltrace: watch: %d rounds in %.1f s, a round %.1f ms (longest %.1f ms), "
		"%.1f ms of CPU a round (%.1f %% of a core), peak RSS %ld MB\n",
		rounds, (double)(clock_mono_ns() - t0) / 1e9, (double)wall_ns / rounds / 1e6,
		(double)max_ns / 1e6, cpu * 1e3 / rounds,
		100 * cpu / ((double)(clock_mono_ns() - t0) / 1e9), ru.ru_maxrss / 1024);
}

static void live_plain(struct watch *w)
{
	struct sigaction sa = {.sa_handler = on_stop};
	uint64_t t0 = clock_mono_ns(), wall = 0, max = 0;
	int rounds = 0;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	w->tell = tell;
	w->tell_ctx = w;
	while (!stop_plain) {
		uint64_t start = clock_mono_ns(), next = start + ROUND_NS, took;

		if (!watch_round(w))
			for (int i = 0; i < w->n; i++)
				fprintf(stderr, "nccltrace: %s: %s\n", w->ep[i].spec, w->ep[i].err);
		took = clock_mono_ns() - start;
		wall += took;
		if (took > max)
			max = took;
		rounds++;
		if (!stop_plain)
			sleep_until(next);
	}
	tell_cost(rounds, wall, max, t0);
}

static int read_token_file(struct watch *w, char *err, size_t errlen)
{
	FILE *f;

	if (!w->token_file)
		return 0;
	f = fopen(w->token_file, "re");
	if (!f || !fgets(w->token, sizeof(w->token), f)) {
		snprintf(err, errlen, "--token-file %s: %s", w->token_file,
			 f ? "empty (the token is its first line)" : strerror(errno));
		if (f)
			fclose(f);
		return f ? EXIT_DATAERR : EXIT_NOINPUT;
	}
	fclose(f);
	w->token[strcspn(w->token, "\r\n")] = '\0';
	return 0;
}

int watch_main(int argc, char **argv)
{
	struct watch w = {0};
	char err[256];
	struct tui *t = NULL;
	int rc = watch_parse(&w, argc, argv, err, sizeof(err));

	if (rc == 1) {
		fputs(watch_help, stdout);
		watch_free(&w);
		return 0;
	}
	if (!rc && (rc = read_token_file(&w, err, sizeof(err))) == 0 &&
	    watchpoll_init(w.ep, w.n, err, sizeof(err)))
		rc = EXIT_USAGE;
	if (rc) {
		fprintf(stderr, "nccltrace: %s\n", err);
		watch_free(&w);
		return rc < 0 ? EXIT_USAGE : rc;
	}
	if (w.once) {
		int usable = 0;

		watch_round(&w);
		/* an answer that is no tracer's state (an agent's without --job) is none */
		for (int i = 0; i < w.n; i++)
			usable += !w.ep[i].err[0];
		rc = usable ? 0 : EXIT_UNAVAILABLE;
		if (rc)
			fprintf(stderr, "nccltrace: no tracer answered (%s: %s)\n", w.ep[0].spec,
				w.ep[0].err);
		else
			print_once(&w);
	} else if (!w.no_tui && isatty(STDOUT_FILENO) && !tui__open(&t, err, sizeof(err))) {
		live_tui(&w, t);
		tui__close(t);
	} else {
		live_plain(&w);
	}
	watch_free(&w);
	return rc;
}
