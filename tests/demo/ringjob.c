// SPDX-License-Identifier: MIT
/*
 * ringjob: a stand-in for a multi-process NCCL job, so that nccltrace can be exercised on any
 * Linux box without GPUs.  One binary plays both parts of a torchrun-style job:
 *
 *   launcher  (RANK unset) opens one listening socket per rank and forks the workers, so that no
 *             port can be taken by someone else between choosing it and listening on it;
 *   worker    (RANK set) joins a ring over TCP on 127.0.0.1 and, like NCCL's proxy thread,
 *             busy-polls non-blocking sockets: a healthy rank spends its life in send()/recv()
 *             calls that return EAGAIN, and a stalled peer shows up as a rank whose EAGAIN spin
 *             never ends.  That is the signature the tracer is meant to diagnose.
 *
 * A fault can be injected into one rank (sleep, SIGSTOP or exit) and is announced by a single
 * "STALL" line carrying CLOCK_REALTIME, so that tests can compare the tracer's verdict with the
 * truth.
 *
 * The launcher is ringlauncher.c, the worker ringworker.c; this file holds what both use
 * (messages, clocks, the options) and main(), which picks one.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <arpa/inet.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ringjob.h"

static bool quiet;

/* --- messages --- */

/*
 * Up to 65 processes share one terminal or pipe: format the whole line first and write it with
 * one write(2), so that lines never interleave mid-way.
 */
static void msg_vwrite(int fd, const char *fmt, va_list ap)
{
	static const char prefix[] = PROG ": ";
	char line[1024];
	size_t len = sizeof(prefix) - 1, room = sizeof(line) - len - 1, off = 0;
	int saved = errno;
	int n;

	memcpy(line, prefix, len);
	n = vsnprintf(line + len, room, fmt, ap);
	if (n < 0)
		n = 0;
	len += (size_t)n < room ? (size_t)n : room - 1;
	line[len++] = '\n';
	while (off < len) {
		ssize_t w = write(fd, line + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	errno = saved;
}

__attribute__((format(printf, 1, 2))) void msg_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	msg_vwrite(STDERR_FILENO, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 1, 2))) void msg_info(const char *fmt, ...)
{
	va_list ap;

	if (quiet)
		return;
	va_start(ap, fmt);
	msg_vwrite(STDERR_FILENO, fmt, ap);
	va_end(ap);
}

/*
 * _exit() rather than exit(): the sender thread may be the one failing, and exit() is not safe
 * to race with the main thread.  Nothing but rank 0's final summary ever sits in stdio buffers.
 */
__attribute__((format(printf, 2, 3), noreturn)) void job_fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	msg_vwrite(STDERR_FILENO, fmt, ap);
	va_end(ap);
	fflush(stdout);
	_exit(code);
}

/* --- time --- */

uint64_t clock_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

double clock_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct timespec ts_from_sec(double s)
{
	struct timespec ts;

	if (s < 0)
		s = 0;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec > 999999999L)
		ts.tv_nsec = 999999999L;
	return ts;
}

void sleep_for(double s)
{
	struct timespec req = ts_from_sec(s), rem;

	/* a SIGSTOP/SIGCONT pair may cut the sleep short; the stall must still last its length */
	while (nanosleep(&req, &rem) < 0 && errno == EINTR)
		req = rem;
}

/* --- options --- */

enum {
	OPT_RANKS = 256,
	OPT_DURATION,
	OPT_STEPS,
	OPT_SIZE,
	OPT_STALL_RANK,
	OPT_STALL_AFTER,
	OPT_STALL_FOR,
	OPT_STALL_MODE,
	OPT_BLOCKING,
	OPT_HOSTS,
	OPT_PORT,
	OPT_LOCAL_RANKS,
	OPT_STEP_EVERY,
	OPT_PAUSE_EVERY,
	OPT_PAUSE_FOR,
	OPT_SLOW_RANK,
	OPT_SLOW_BY,
};

static const struct option long_opts[] = {
	{"ranks", required_argument, NULL, OPT_RANKS},
	{"duration", required_argument, NULL, OPT_DURATION},
	{"steps", required_argument, NULL, OPT_STEPS},
	{"size", required_argument, NULL, OPT_SIZE},
	{"stall-rank", required_argument, NULL, OPT_STALL_RANK},
	{"stall-after", required_argument, NULL, OPT_STALL_AFTER},
	{"stall-for", required_argument, NULL, OPT_STALL_FOR},
	{"stall-mode", required_argument, NULL, OPT_STALL_MODE},
	{"blocking", no_argument, NULL, OPT_BLOCKING},
	{"hosts", required_argument, NULL, OPT_HOSTS},
	{"port", required_argument, NULL, OPT_PORT},
	{"local-ranks", required_argument, NULL, OPT_LOCAL_RANKS},
	{"step-every", required_argument, NULL, OPT_STEP_EVERY},
	{"pause-every", required_argument, NULL, OPT_PAUSE_EVERY},
	{"pause-for", required_argument, NULL, OPT_PAUSE_FOR},
	{"slow-rank", required_argument, NULL, OPT_SLOW_RANK},
	{"slow-by", required_argument, NULL, OPT_SLOW_BY},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static void usage_print(void)
{
	printf("Usage: " PROG " [OPTIONS]\n"
	       "\n"
	       "Run a toy NCCL-style ring over TCP on 127.0.0.1.  A launcher (like torchrun)\n"
	       "forks --ranks workers; in every step each worker sends --size bytes to the\n"
	       "next rank and receives as many from the previous one, busy-polling\n"
	       "non-blocking sockets the way NCCL's proxy thread does.  One rank can be made\n"
	       "to stall, to give a hang diagnoser something to find.\n"
	       "\n"
	       "Options:\n"
	       "  --ranks N           number of workers, 1..%d (default 4)\n"
	       "  --duration SECONDS  run for about this long, as timed by rank 0 (default 10)\n"
	       "  --steps K           run exactly K ring steps instead of --duration\n"
	       "  --size BYTES        bytes each rank sends per step, %d..%ld\n"
	       "                      (default 65536)\n"
	       "  --stall-rank R      inject a fault into rank R (default: no fault)\n"
	       "  --stall-after S     ... at the first step boundary S seconds or more after\n"
	       "                      that rank's first step (default 2)\n"
	       "  --stall-for T       how long a sleep or stop stall lasts (default 10)\n"
	       "  --stall-mode MODE   sleep: the rank sleeps T seconds, then carries on\n"
	       "                      stop:  the rank stops itself with SIGSTOP and the\n"
	       "                             launcher sends SIGCONT T seconds later\n"
	       "                      exit:  the rank exits with status 3; the launcher\n"
	       "                             then ends the whole job\n"
	       "                      (default sleep)\n"
	       "  --blocking          blocking sockets and a sender thread instead of the\n"
	       "                      non-blocking EAGAIN spin\n"
	       "  --hosts A0,A1,...   a ring across hosts: rank r's host's IPv4 address\n"
	       "                      (default 127.0.0.1 for every rank); needs --port\n"
	       "  --port P            rank r listens at port P+r on its host\n"
	       "  --local-ranks LO-HI the ranks this launcher starts (default all): run one\n"
	       "                      launcher per host with the same --ranks, --hosts, --port\n"
	       "  --step-every S      S seconds of compute after each step, like a training\n"
	       "                      step (default 0: back to back)\n"
	       "  --pause-every S     every rank pauses after each S / --step-every steps, all\n"
	       "                      together (an evaluation every N steps)\n"
	       "  --pause-for T       ... for T seconds (default 3)\n"
	       "  --slow-rank R       rank R is slower: each step takes it --slow-by x\n"
	       "                      --step-every longer (a straggler, not a stall)\n"
	       "  --slow-by F         default 0.2\n"
	       "  -q, --quiet         print only rank 0's summary, STALL markers and errors\n"
	       "  -h, --help          show this help\n"
	       "\n"
	       "A faulty rank prints one line to stderr just before it stalls:\n"
	       "  " PROG ": STALL rank R pid P mode MODE at_realtime_ns T last_send_realtime_ns S\n"
	       "(S: when it last sent to the next rank, from which that rank waits; 0: never)\n"
	       "Rank 0 prints one line to stdout at the end, even with --quiet:\n"
	       "  " PROG ": rank 0 done: K steps, B bytes sent, X.X MB/s, E s, P pauses\n"
	       "\n"
	       "Exit status: 0 when every rank finished; otherwise that of the first failing\n"
	       "rank (128+N if it died of signal N): 1 system error, 2 lost connection to a\n"
	       "peer, 3 --stall-mode exit, 5 corrupt data, 64 bad usage.\n"
	       "\n"
	       "Examples:\n"
	       "  ./" PROG " --ranks 4 --duration 3\n"
	       "  ./" PROG " --ranks 8 --size 1048576 --steps 200\n"
	       "  ./" PROG " --ranks 4 --duration 8 --stall-rank 1 --stall-after 1 \\\n"
	       "      --stall-for 3\n"
	       "  ./" PROG " --ranks 4 --duration 8 --stall-rank 2 --stall-mode stop \\\n"
	       "      --stall-for 3\n"
	       "  ./" PROG " --ranks 4 --duration 5 --stall-rank 3 --stall-mode exit\n"
	       "  ./" PROG " --blocking --ranks 2 --duration 2 -q\n"
	       "  ./" PROG " --ranks 4 --hosts 198.18.0.1,198.18.0.1,198.18.0.2,198.18.0.2 \\\n"
	       "      --port 47000 --local-ranks 0-1   (and --local-ranks 2-3 on the other)\n",
	       MAX_RANKS, MIN_SIZE, MAX_SIZE);
}

__attribute__((format(printf, 1, 2), noreturn)) static void usage_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	msg_vwrite(STDERR_FILENO, fmt, ap);
	va_end(ap);
	exit(EXIT_USAGE);
}

static long long arg_long(const char *opt, const char *s, long long lo, long long hi)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end || errno || v < lo || v > hi)
		usage_fail("%s: '%s' is not an integer in %lld..%lld", opt, s, lo, hi);
	return v;
}

static double arg_double(const char *opt, const char *s, double lo, double hi)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	/* written so that NaN fails too */
	if (end == s || *end || errno || !(v >= lo && v <= hi))
		usage_fail("%s: '%s' is not a number in %g..%g", opt, s, lo, hi);
	return v;
}

/* "198.18.0.1,198.18.0.2,...": one IPv4 address per rank; how many */
static int hosts_parse(struct opts *o, const char *list)
{
	char buf[MAX_RANKS * 16 + 1], *save = NULL, *tok;
	int n = 0;

	if (strlen(list) >= sizeof(buf))
		usage_fail("--hosts: more than %d addresses", MAX_RANKS);
	strcpy(buf, list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct in_addr a;

		if (n == MAX_RANKS || inet_pton(AF_INET, tok, &a) != 1)
			usage_fail("--hosts: '%s' is not an IPv4 address (or past %d)", tok,
				   MAX_RANKS);
		o->addr[n++] = a.s_addr;
	}
	return n;
}

static void local_parse(struct opts *o, const char *s)
{
	char *end;
	long lo = strtol(s, &end, 10), hi = lo;

	if (end != s && *end == '-')
		hi = strtol(end + 1, &end, 10);
	if (end == s || *end || lo < 0 || hi < lo || hi >= MAX_RANKS)
		usage_fail("--local-ranks: '%s' is not LO-HI (0 <= LO <= HI < %d)", s, MAX_RANKS);
	o->local_lo = (int)lo;
	o->local_hi = (int)hi;
}

static void opts_check(struct opts *o, int nhosts)
{
	if (o->slow_rank >= o->ranks)
		usage_fail("--slow-rank %d is out of range for --ranks %d", o->slow_rank, o->ranks);
	if (o->pause_every > 0 && !o->step_every)
		usage_fail("--pause-every needs --step-every (its steps are counted)");
	if (o->slow_rank >= 0 && !o->step_every)
		usage_fail("--slow-rank needs --step-every (slower than what?)");
	if (o->stall_rank >= o->ranks)
		usage_fail("--stall-rank %d is out of range for --ranks %d", o->stall_rank,
			   o->ranks);
	if (nhosts && nhosts != o->ranks)
		usage_fail("--hosts names %d addresses for --ranks %d", nhosts, o->ranks);
	if (nhosts && !o->port)
		usage_fail("--hosts needs --port (each host must know the others' ports)");
	if (o->port && o->port + o->ranks - 1 > 65535)
		usage_fail("--port %d: ports up to %d needed", o->port, o->port + o->ranks - 1);
	if (o->local_hi < 0)
		o->local_hi = o->ranks - 1;
	if (o->local_hi >= o->ranks)
		usage_fail("--local-ranks up to %d is out of range for --ranks %d", o->local_hi,
			   o->ranks);
}

static void opts_parse(struct opts *o, int argc, char **argv)
{
	int c, nhosts = 0;

	memset(o, 0, sizeof(*o));
	o->ranks = 4;
	o->duration = 10;
	o->size = 65536;
	o->stall_rank = -1;
	o->stall_after = 2;
	o->stall_for = 10;
	o->stall_mode = STALL_SLEEP;
	o->local_hi = -1;
	o->pause_for = 3;
	o->slow_rank = -1;
	o->slow_by = 0.2;
	for (c = 0; c < MAX_RANKS; c++)
		o->addr[c] = htonl(INADDR_LOOPBACK);

	/* our own messages: getopt's would start with argv[0], not "ringjob:" */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":qh", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_RANKS:
			o->ranks = (int)arg_long("--ranks", optarg, 1, MAX_RANKS);
			break;
		case OPT_DURATION:
			o->duration = arg_double("--duration", optarg, 0.001, MAX_SECONDS);
			break;
		case OPT_STEPS:
			o->steps = (uint64_t)arg_long("--steps", optarg, 1, MAX_STEPS);
			break;
		case OPT_SIZE:
			o->size = (size_t)arg_long("--size", optarg, MIN_SIZE, MAX_SIZE);
			break;
		case OPT_STALL_RANK:
			o->stall_rank = (int)arg_long("--stall-rank", optarg, 0, MAX_RANKS - 1);
			break;
		case OPT_STALL_AFTER:
			o->stall_after = arg_double("--stall-after", optarg, 0, MAX_SECONDS);
			break;
		case OPT_STALL_FOR:
			o->stall_for = arg_double("--stall-for", optarg, 0, MAX_SECONDS);
			break;
		case OPT_STALL_MODE:
			if (!strcmp(optarg, "sleep"))
				o->stall_mode = STALL_SLEEP;
			else if (!strcmp(optarg, "stop"))
				o->stall_mode = STALL_STOP;
			else if (!strcmp(optarg, "exit"))
				o->stall_mode = STALL_EXIT;
			else
				usage_fail("--stall-mode: '%s' is not one of sleep, stop, exit",
					   optarg);
			break;
		case OPT_BLOCKING:
			o->blocking = true;
			break;
		case OPT_HOSTS:
			nhosts = hosts_parse(o, optarg);
			break;
		case OPT_PORT:
			o->port = (int)arg_long("--port", optarg, 1, 65535);
			break;
		case OPT_LOCAL_RANKS:
			local_parse(o, optarg);
			break;
		case OPT_STEP_EVERY:
			o->step_every = arg_double("--step-every", optarg, 0, 60);
			break;
		case OPT_PAUSE_EVERY:
			o->pause_every = arg_double("--pause-every", optarg, 0.1, MAX_SECONDS);
			break;
		case OPT_PAUSE_FOR:
			o->pause_for = arg_double("--pause-for", optarg, 0, MAX_SECONDS);
			break;
		case OPT_SLOW_RANK:
			o->slow_rank = (int)arg_long("--slow-rank", optarg, 0, MAX_RANKS - 1);
			break;
		case OPT_SLOW_BY:
			o->slow_by = arg_double("--slow-by", optarg, 0, 100);
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			usage_print();
			exit(0);
		case ':':
			usage_fail("option '%s' needs a value", argv[optind - 1]);
		default:
			if (optopt)
				usage_fail("unknown option '-%c' (try --help)", optopt);
			usage_fail("unknown option '%s' (try --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		usage_fail("unexpected argument '%s' (try --help)", argv[optind]);
	opts_check(o, nhosts);
}

int main(int argc, char **argv)
{
	struct opts o;

	opts_parse(&o, argc, argv);
	quiet = o.quiet;
	if (getenv("RANK"))
		return worker_main(&o);
	return launcher_main(&o, argv);
}
