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
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROG	  "ringjob"
#define MAX_RANKS 64
/* room for the step header (tag + last step) and a distinct tail tag */
#define MIN_SIZE     24
#define MAX_SIZE     (1L << 30)
#define MAX_SECONDS  1e7
#define MAX_STEPS    1000000000000LL
#define LAST_UNKNOWN UINT64_MAX
#define HELLO_MAGIC  0x52494e474a4f4231ULL /* "RINGJOB1" */
/* NCCL retries refused connects the same way, because peers come up in any order */
#define CONNECT_RETRY_S	 0.05
#define CONNECT_GIVEUP_S 30.0
/*
 * How long a "lost connection" exit may wait for the exit that caused it: a rank that dies takes
 * its neighbours down within microseconds, and the launcher should blame the culprit, not
 * whichever corpse it happened to reap first.
 */
#define SYMPTOM_GRACE_S 0.25

enum {
	EXIT_FAIL = 1,	  /* a system call failed */
	EXIT_LOST = 2,	  /* a peer went away */
	EXIT_STALL = 3,	  /* --stall-mode exit */
	EXIT_CORRUPT = 5, /* the ring delivered the wrong bytes */
	EXIT_USAGE = 64,  /* EX_USAGE */
};

enum stall_mode {
	STALL_SLEEP,
	STALL_STOP,
	STALL_EXIT,
};

static const char *const stall_mode_names[] = {"sleep", "stop", "exit"};

struct opts {
	int ranks;
	double duration;
	uint64_t steps; /* 0: run for --duration */
	size_t size;
	int stall_rank; /* -1: no fault */
	double stall_after;
	double stall_for;
	enum stall_mode stall_mode;
	bool blocking;
	bool quiet;
};

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

__attribute__((format(printf, 1, 2))) static void msg_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	msg_vwrite(STDERR_FILENO, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 1, 2))) static void msg_info(const char *fmt, ...)
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
__attribute__((format(printf, 2, 3), noreturn)) static void job_fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	msg_vwrite(STDERR_FILENO, fmt, ap);
	va_end(ap);
	fflush(stdout);
	_exit(code);
}

/* --- time --- */

static double clock_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct timespec ts_from_sec(double s)
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

static void sleep_for(double s)
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
	       "  -q, --quiet         print only rank 0's summary, STALL markers and errors\n"
	       "  -h, --help          show this help\n"
	       "\n"
	       "A faulty rank prints one line to stderr just before it stalls:\n"
	       "  " PROG ": STALL rank R pid P mode MODE at_realtime_ns T\n"
	       "Rank 0 prints one line to stdout at the end, even with --quiet:\n"
	       "  " PROG ": rank 0 done: K steps, B bytes sent, X.X MB/s, E s\n"
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
	       "  ./" PROG " --blocking --ranks 2 --duration 2 -q\n",
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

static void opts_parse(struct opts *o, int argc, char **argv)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->ranks = 4;
	o->duration = 10;
	o->size = 65536;
	o->stall_rank = -1;
	o->stall_after = 2;
	o->stall_for = 10;
	o->stall_mode = STALL_SLEEP;

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
	if (o->stall_rank >= o->ranks)
		usage_fail("--stall-rank %d is out of range for --ranks %d", o->stall_rank,
			   o->ranks);
}

/* --- worker --- */

/*
 * Every step's payload starts with {tag, last} and ends with the tag again:
 *
 *   tag   identifies (sender rank, step), so a lost, duplicated or torn step is caught cheaply;
 *   last  the index of the job's final step, or LAST_UNKNOWN while nobody has decided yet.
 *
 * Stop agreement in --duration mode: only rank 0 looks at the clock.  At the start of step k,
 * once its time is up, it sets last = k + N - 1 and sends that in step k.  Every rank copies
 * into each step it sends the value it knew when the step began, so the news moves one hop per
 * step: rank j (j >= 1) has it by the end of step k + j - 1 <= k + N - 2 < last.  Hence every
 * rank knows the final step before it gets there, and every rank sends and receives steps
 * 0..last: nobody waits for a step that will never come, nobody closes while its neighbour
 * still expects data.  With --steps K, last = K - 1 is known to all from the start.
 */
struct step_hdr {
	uint64_t tag;
	uint64_t last;
};

struct ring {
	const struct opts *o;
	int rank, world;
	int prev, next; /* neighbour ranks */
	int prev_fd, next_fd;
	size_t size;
	unsigned char *sbuf, *rbuf;
	uint64_t last;
	/* --blocking: the sender thread, kicked once per step */
	pthread_t sender;
	sem_t go, done;
	bool quit;
};

struct hello {
	uint64_t magic;
	uint32_t rank;
	uint32_t world;
};

static uint64_t step_tag(int rank, uint64_t step)
{
	/* injective while step < 2^56; rank + 1 keeps the tag away from all-zero memory */
	return ((uint64_t)(rank + 1) << 56) | (step & ((1ULL << 56) - 1));
}

static long env_long(const char *name, long lo, long hi)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s)
		job_fail(EXIT_USAGE,
			 "%s is not set, but RANK is: workers are started by the launcher (run "
			 "without RANK)",
			 name);
	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < lo || v > hi)
		job_fail(EXIT_USAGE, "%s='%s' is not an integer in %ld..%ld", name, s, lo, hi);
	return v;
}

static void ports_parse(int *ports, int world)
{
	const char *s = getenv("RINGJOB_PORTS");
	const char *p = s;
	int n = 0;

	if (!s)
		job_fail(EXIT_USAGE, "RINGJOB_PORTS is not set, but RANK is: workers are started "
				     "by the launcher (run without RANK)");
	for (;;) {
		char *end;
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (end == p || errno || v < 1 || v > 65535 || n == world)
			break;
		ports[n++] = (int)v;
		if (*end == '\0') {
			if (n == world)
				return;
			break;
		}
		if (*end != ',')
			break;
		p = end + 1;
	}
	job_fail(EXIT_USAGE, "RINGJOB_PORTS='%s' is not a list of %d ports", s, world);
}

static void fd_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) < 0)
		job_fail(EXIT_FAIL, "fcntl(O_NONBLOCK): %s", strerror(errno));
}

__attribute__((noreturn)) static void ring_io_fail(const struct ring *r, const char *op, int peer,
						   int err)
{
	const char *why = err ? strerror(err) : "peer closed the connection";

	if (err == 0 || err == ECONNRESET || err == EPIPE || err == ENOTCONN)
		job_fail(EXIT_LOST, "rank %d: lost connection to rank %d (%s: %s)", r->rank, peer,
			 op, why);
	job_fail(EXIT_FAIL, "rank %d: %s with rank %d: %s", r->rank, op, peer, strerror(err));
}

static void fd_send_all(const struct ring *r, int fd, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			ring_io_fail(r, "send", r->next, errno);
		}
		p += n;
		len -= (size_t)n;
	}
}

/* returns how much arrived; on a short count *err holds errno, or 0 for EOF */
static size_t fd_recv_all(int fd, void *buf, size_t len, int *err)
{
	unsigned char *p = buf;
	size_t got = 0;

	*err = 0;
	while (got < len) {
		ssize_t n = recv(fd, p + got, len - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			*err = errno;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

static int ring_connect(const struct ring *r, int port)
{
	double give_up = clock_mono() + CONNECT_GIVEUP_S;
	struct sockaddr_in sa;
	struct hello h;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int err;

		if (fd < 0)
			job_fail(EXIT_FAIL, "rank %d: socket: %s", r->rank, strerror(errno));
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			/* the listener may be anyone's: tell the acceptor who we are */
			memset(&h, 0, sizeof(h));
			h.magic = HELLO_MAGIC;
			h.rank = (uint32_t)r->rank;
			h.world = (uint32_t)r->world;
			fd_send_all(r, fd, &h, sizeof(h));
			return fd;
		}
		err = errno;
		close(fd);
		/*
		 * After EINTR the connect would go on in the background; a fresh socket is
		 * simpler, and the acceptor drops the abandoned one for want of a hello.
		 */
		if ((err != ECONNREFUSED && err != EINTR) || clock_mono() >= give_up)
			job_fail(EXIT_FAIL, "rank %d: connect to rank %d at 127.0.0.1:%d: %s",
				 r->rank, r->next, port, strerror(err));
		sleep_for(CONNECT_RETRY_S);
	}
}

static int ring_accept(const struct ring *r, int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		struct hello h;
		int err;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			job_fail(EXIT_FAIL, "rank %d: accept: %s", r->rank, strerror(errno));
		}
		if (fd_recv_all(fd, &h, sizeof(h), &err) == sizeof(h) && h.magic == HELLO_MAGIC &&
		    h.rank == (uint32_t)r->prev && h.world == (uint32_t)r->world)
			return fd;
		/* a stray client, or a connect abandoned after EINTR: wait for the real one */
		msg_info("rank %d: dropping a connection that is not rank %d's", r->rank, r->prev);
		close(fd);
	}
}

static void sock_tune(const struct ring *r, int fd)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		job_fail(EXIT_FAIL, "rank %d: TCP_NODELAY: %s", r->rank, strerror(errno));
	if (!r->o->blocking)
		fd_nonblock(fd, true);
}

static void stall_inject(const struct ring *r)
{
	const struct opts *o = r->o;
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	/* printed even with --quiet: it is the ground truth the tracer is graded against */
	msg_err("STALL rank %d pid %d mode %s at_realtime_ns %llu", r->rank, (int)getpid(),
		stall_mode_names[o->stall_mode],
		(unsigned long long)now.tv_sec * 1000000000ULL + (unsigned long long)now.tv_nsec);
	switch (o->stall_mode) {
	case STALL_SLEEP:
		sleep_for(o->stall_for);
		break;
	case STALL_STOP:
		/* the launcher notices through waitpid(WUNTRACED) and sends SIGCONT later */
		raise(SIGSTOP);
		break;
	case STALL_EXIT:
		_exit(EXIT_STALL);
	}
}

static void ring_pack(struct ring *r, uint64_t step)
{
	struct step_hdr h = {.tag = step_tag(r->rank, step), .last = r->last};

	memcpy(r->sbuf, &h, sizeof(h));
	memcpy(r->sbuf + r->size - sizeof(h.tag), &h.tag, sizeof(h.tag));
}

static void ring_check(struct ring *r, uint64_t step)
{
	uint64_t want = step_tag(r->prev, step), tail;
	struct step_hdr h;

	memcpy(&h, r->rbuf, sizeof(h));
	memcpy(&tail, r->rbuf + r->size - sizeof(tail), sizeof(tail));
	if (h.tag != want || tail != want)
		job_fail(EXIT_CORRUPT,
			 "rank %d: step %" PRIu64 ": corrupt data from rank %d (head %#" PRIx64
			 ", tail %#" PRIx64 ", want %#" PRIx64 ")",
			 r->rank, step, r->prev, h.tag, tail, want);
	if (h.last == LAST_UNKNOWN)
		return;
	if (h.last < step || (r->last != LAST_UNKNOWN && h.last != r->last))
		job_fail(EXIT_CORRUPT,
			 "rank %d: step %" PRIu64 ": rank %d says the last step is %" PRIu64
			 ", but it is %" PRIu64,
			 r->rank, step, r->prev, h.last, r->last);
	r->last = h.last;
}

/*
 * NCCL's proxy thread in miniature: no poll(), no select(), just send and recv with
 * MSG_DONTWAIT in turn until the step is through.  Waiting for a slow peer therefore looks like
 * a storm of EAGAIN, which is exactly what nccltrace has to see through.
 */
static void ring_step_spin(struct ring *r)
{
	size_t sent = 0, got = 0;

	while (sent < r->size || got < r->size) {
		ssize_t n;

		if (sent < r->size) {
			n = send(r->next_fd, r->sbuf + sent, r->size - sent,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n > 0)
				sent += (size_t)n;
			else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				ring_io_fail(r, "send", r->next, errno);
		}
		if (got < r->size) {
			n = recv(r->prev_fd, r->rbuf + got, r->size - got, MSG_DONTWAIT);
			if (n > 0)
				got += (size_t)n;
			else if (n == 0)
				ring_io_fail(r, "recv", r->prev, 0);
			else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				ring_io_fail(r, "recv", r->prev, errno);
		}
	}
}

static void sem_wait_intr(sem_t *s)
{
	while (sem_wait(s) < 0 && errno == EINTR)
		;
}

/*
 * In a ring every rank sends before it receives; with blocking sockets and steps bigger than the
 * socket buffers, doing both on one thread would deadlock the whole ring.  So a second thread
 * sends while the main one receives, and the two meet at the end of every step: that keeps the
 * step boundaries, and with them the stop agreement, the same as in the spinning mode.
 */
static void *ring_sender_main(void *arg)
{
	struct ring *r = arg;

	for (;;) {
		sem_wait_intr(&r->go);
		if (r->quit)
			return NULL;
		fd_send_all(r, r->next_fd, r->sbuf, r->size);
		sem_post(&r->done);
	}
}

static void ring_step_blocking(struct ring *r)
{
	size_t got;
	int err;

	sem_post(&r->go);
	got = fd_recv_all(r->prev_fd, r->rbuf, r->size, &err);
	if (got < r->size)
		ring_io_fail(r, "recv", r->prev, err);
	sem_wait_intr(&r->done);
}

static uint64_t ring_run(struct ring *r, double *elapsed)
{
	const struct opts *o = r->o;
	bool stalled = false;
	double t0 = clock_mono();
	uint64_t k;

	r->last = o->steps ? o->steps - 1 : LAST_UNKNOWN;
	for (k = 0;; k++) {
		/* the fault comes first, so that a stalled rank 0 still ends the job on time */
		if (!stalled && r->rank == o->stall_rank && clock_mono() - t0 >= o->stall_after) {
			stall_inject(r);
			stalled = true;
		}
		if (r->rank == 0 && r->last == LAST_UNKNOWN && clock_mono() - t0 >= o->duration)
			r->last = k + (uint64_t)r->world - 1;
		ring_pack(r, k);
		if (o->blocking)
			ring_step_blocking(r);
		else
			ring_step_spin(r);
		ring_check(r, k);
		if (k == r->last)
			break;
	}
	*elapsed = clock_mono() - t0;
	return k + 1;
}

/*
 * Half-close and wait for the neighbour's EOF before closing: a close() with unread data would
 * send an RST, and the next rank would report a lost connection in a perfectly healthy run.
 */
static void ring_close(struct ring *r)
{
	if (shutdown(r->next_fd, SHUT_WR) < 0)
		ring_io_fail(r, "shutdown", r->next, errno);
	if (!r->o->blocking)
		fd_nonblock(r->prev_fd, false);
	for (;;) {
		ssize_t n = recv(r->prev_fd, r->rbuf, r->size, 0);

		if (n == 0)
			break;
		if (n > 0)
			job_fail(EXIT_CORRUPT,
				 "rank %d: rank %d sent %zd bytes after the last step", r->rank,
				 r->prev, n);
		if (errno != EINTR)
			ring_io_fail(r, "recv", r->prev, errno);
	}
	close(r->next_fd);
	close(r->prev_fd);
}

static int worker_main(const struct opts *o)
{
	int ports[MAX_RANKS], lfd, err, yes = 0;
	socklen_t len;
	struct sockaddr_in sa;
	struct ring r;
	uint64_t steps;
	double elapsed;

	memset(&r, 0, sizeof(r));
	r.o = o;
	r.size = o->size;
	r.world = (int)env_long("WORLD_SIZE", 1, MAX_RANKS);
	r.rank = (int)env_long("RANK", 0, r.world - 1);
	r.next = (r.rank + 1) % r.world;
	r.prev = (r.rank + r.world - 1) % r.world;
	ports_parse(ports, r.world);
	lfd = (int)env_long("RINGJOB_LISTEN_FD", 0, INT_MAX);
	if (o->stall_rank >= r.world)
		job_fail(EXIT_USAGE, "--stall-rank %d is out of range for WORLD_SIZE %d",
			 o->stall_rank, r.world);
	/* a wrong fd would make us accept someone else's connections */
	memset(&sa, 0, sizeof(sa));
	len = sizeof(yes);
	if (getsockopt(lfd, SOL_SOCKET, SO_ACCEPTCONN, &yes, &len) < 0 || !yes)
		job_fail(EXIT_USAGE, "RINGJOB_LISTEN_FD=%d is not a listening socket", lfd);
	len = sizeof(sa);
	if (getsockname(lfd, (struct sockaddr *)&sa, &len) < 0 ||
	    ntohs(sa.sin_port) != ports[r.rank])
		job_fail(EXIT_USAGE, "RINGJOB_LISTEN_FD=%d does not listen on port %d", lfd,
			 ports[r.rank]);

	signal(SIGPIPE, SIG_IGN);

	/* connect first: every listener is up already, so the connects cannot wait on accepts */
	r.next_fd = ring_connect(&r, ports[r.next]);
	r.prev_fd = ring_accept(&r, lfd);
	close(lfd);
	sock_tune(&r, r.next_fd);
	sock_tune(&r, r.prev_fd);

	r.sbuf = malloc(r.size);
	r.rbuf = malloc(r.size);
	if (!r.sbuf || !r.rbuf)
		job_fail(EXIT_FAIL, "rank %d: out of memory for 2 x %zu bytes", r.rank, r.size);
	memset(r.sbuf, 'a' + r.rank % 26, r.size);

	if (o->blocking) {
		if (sem_init(&r.go, 0, 0) < 0 || sem_init(&r.done, 0, 0) < 0)
			job_fail(EXIT_FAIL, "sem_init: %s", strerror(errno));
		err = pthread_create(&r.sender, NULL, ring_sender_main, &r);
		if (err)
			job_fail(EXIT_FAIL, "pthread_create: %s", strerror(err));
	}

	steps = ring_run(&r, &elapsed);

	if (o->blocking) {
		r.quit = true;
		sem_post(&r.go);
		pthread_join(r.sender, NULL);
	}
	ring_close(&r);

	if (r.rank == 0) {
		double bytes = (double)steps * (double)r.size;

		/* always printed: benchmarks parse it */
		printf(PROG ": rank 0 done: %" PRIu64
			    " steps, %.0f bytes sent, %.1f MB/s, %.2f s\n",
		       steps, bytes, elapsed > 0 ? bytes / 1e6 / elapsed : 0.0, elapsed);
		fflush(stdout);
	}
	free(r.sbuf);
	free(r.rbuf);
	return 0;
}

/* --- launcher --- */

struct worker {
	pid_t pid;
	bool alive;
	bool stopped;
	double cont_at; /* when a stopped worker gets its SIGCONT */
};

struct launcher {
	const struct opts *o;
	struct worker w[MAX_RANKS];
	int n, live;
	int status;	/* the job's exit status; -1 until a failure decides it */
	bool stopping;	/* SIGTERM or a forwarded signal went out: further deaths are expected */
	bool by_signal; /* the job is ending because the launcher was told to end it */
	int pend;	/* a rank whose "lost connection" exit awaits its cause, or -1 */
	int pend_wstatus;
	double pend_at;
};

static int listener_open(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);

	if (fd < 0)
		job_fail(EXIT_FAIL, "socket: %s", strerror(errno));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		job_fail(EXIT_FAIL, "listening socket on 127.0.0.1: %s", strerror(errno));
	*port = ntohs(sa.sin_port);
	return fd;
}

static void env_set(const char *name, long v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%ld", v);
	setenv(name, buf, 1);
}

__attribute__((noreturn)) static void worker_exec(int rank, int n, char **argv, const int *lfd,
						  const int *ports, const char *port_list,
						  pid_t launcher, const sigset_t *mask)
{
	char self[PATH_MAX];
	ssize_t plen;
	int i, fl;

	/* each worker holds exactly its own listener, as if it had opened it itself */
	for (i = 0; i < n; i++)
		if (i != rank)
			close(lfd[i]);
	fl = fcntl(lfd[rank], F_GETFD);
	if (fl < 0 || fcntl(lfd[rank], F_SETFD, fl & ~FD_CLOEXEC) < 0)
		job_fail(EXIT_FAIL, "rank %d: fcntl(FD_CLOEXEC): %s", rank, strerror(errno));
	env_set("RANK", rank);
	env_set("LOCAL_RANK", rank);
	env_set("WORLD_SIZE", n);
	setenv("MASTER_ADDR", "127.0.0.1", 1);
	env_set("MASTER_PORT", ports[0]);
	setenv("RINGJOB_PORTS", port_list, 1);
	env_set("RINGJOB_LISTEN_FD", lfd[rank]);
	/* a launcher killed by SIGKILL must not leave a ring of orphans spinning forever */
	prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
	if (getppid() != launcher)
		_exit(EXIT_FAIL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	/*
	 * The binary /proc/self/exe points to, not argv[0] (relative or on PATH), and not the link
	 * itself, which would name every worker "exe" in ps and in the tracer's exec events.
	 */
	plen = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (plen <= 0)
		job_fail(EXIT_FAIL, "rank %d: readlink /proc/self/exe: %s", rank, strerror(errno));
	self[plen] = '\0';
	execv(self, argv);
	job_fail(127, "rank %d: exec %s: %s", rank, self, strerror(errno));
}

static struct worker *launcher_find(struct launcher *l, pid_t pid)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (l->w[i].pid == pid && l->w[i].alive)
			return &l->w[i];
	return NULL;
}

static void launcher_signal(struct launcher *l, int sig)
{
	int i;

	for (i = 0; i < l->n; i++) {
		struct worker *w = &l->w[i];

		if (!w->alive)
			continue;
		kill(w->pid, sig);
		/* a stopped worker would sit on the signal until continued */
		kill(w->pid, SIGCONT);
		w->stopped = false;
	}
}

static int wstatus_code(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void wstatus_describe(int st, char *buf, size_t len)
{
	if (WIFEXITED(st))
		snprintf(buf, len, "exit %d", WEXITSTATUS(st));
	else
		snprintf(buf, len, "signal %d", WTERMSIG(st));
}

static void launcher_blame(struct launcher *l, int rank, int st)
{
	char what[32];

	wstatus_describe(st, what, sizeof(what));
	msg_err("rank %d (pid %d) failed (%s); stopping the job", rank, (int)l->w[rank].pid, what);
	l->status = wstatus_code(st);
	l->pend = -1;
	l->stopping = true;
	launcher_signal(l, SIGTERM);
}

static void launcher_failed(struct launcher *l, int rank, int st)
{
	char what[32];

	if (l->by_signal) {
		/*
		 * The job's status is what the forwarded signal did to the workers; a rank that
		 * merely lost its neighbour first tells less about that.
		 */
		if (l->status < 0 || l->status == EXIT_LOST)
			l->status = wstatus_code(st);
		return;
	}
	if (l->status >= 0) {
		wstatus_describe(st, what, sizeof(what));
		msg_info("rank %d (pid %d) ended (%s)", rank, (int)l->w[rank].pid, what);
		return;
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == EXIT_LOST) {
		if (l->pend < 0) {
			l->pend = rank;
			l->pend_wstatus = st;
			l->pend_at = clock_mono() + SYMPTOM_GRACE_S;
		}
		return;
	}
	launcher_blame(l, rank, st);
}

static void launcher_reap(struct launcher *l)
{
	for (;;) {
		struct worker *w;
		int st, rank;
		pid_t pid = waitpid(-1, &st, WNOHANG | WUNTRACED);

		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0 && errno == ECHILD && l->live) {
			msg_err("lost track of %d workers", l->live);
			l->live = 0;
		}
		if (pid <= 0)
			return;
		w = launcher_find(l, pid);
		if (!w)
			continue;
		rank = (int)(w - l->w);
		if (WIFSTOPPED(st)) {
			if (l->stopping) {
				kill(pid, SIGCONT);
				continue;
			}
			w->stopped = true;
			w->cont_at = clock_mono() + l->o->stall_for;
			msg_info("rank %d (pid %d) stopped; SIGCONT in %.1f s", rank, (int)pid,
				 l->o->stall_for);
			continue;
		}
		if (!WIFEXITED(st) && !WIFSIGNALED(st))
			continue;
		w->alive = false;
		w->stopped = false;
		l->live--;
		if (wstatus_code(st) != 0)
			launcher_failed(l, rank, st);
	}
}

/* returns the next deadline, or a negative number if there is none */
static double launcher_tick(struct launcher *l)
{
	double now = clock_mono(), next = -1;
	int i;

	if (l->pend >= 0 && now >= l->pend_at)
		launcher_blame(l, l->pend, l->pend_wstatus);
	if (l->pend >= 0)
		next = l->pend_at;
	for (i = 0; i < l->n; i++) {
		struct worker *w = &l->w[i];

		if (!w->alive || !w->stopped)
			continue;
		if (now >= w->cont_at) {
			kill(w->pid, SIGCONT);
			w->stopped = false;
			msg_info("sent SIGCONT to rank %d (pid %d)", i, (int)w->pid);
			continue;
		}
		if (next < 0 || w->cont_at < next)
			next = w->cont_at;
	}
	return next;
}

static int launcher_main(const struct opts *o, char **argv)
{
	static const int fwd_sigs[] = {SIGINT, SIGTERM, SIGHUP};
	struct launcher l;
	int lfd[MAX_RANKS], ports[MAX_RANKS], i;
	char port_list[MAX_RANKS * 6 + 1];
	sigset_t set, old;
	size_t off = 0;
	pid_t self = getpid();

	memset(&l, 0, sizeof(l));
	l.o = o;
	l.n = o->ranks;
	l.status = -1;
	l.pend = -1;
	/* listening before forking means the ports are ours and no connect can be refused */
	for (i = 0; i < l.n; i++) {
		lfd[i] = listener_open(&ports[i]);
		off += (size_t)snprintf(port_list + off, sizeof(port_list) - off, "%s%d",
					i ? "," : "", ports[i]);
	}

	/*
	 * Signals are taken synchronously with sigtimedwait(): no handler can then interrupt
	 * waitpid() half-way, and the SIGCONT timers share the same wait.  Blocked before fork()
	 * so that none slips through before the loop runs.
	 */
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	for (i = 0; i < (int)(sizeof(fwd_sigs) / sizeof(fwd_sigs[0])); i++) {
		struct sigaction sa;

		/*
		 * An inherited SIG_IGN (nohup, "cmd &" in a script) is honoured, not forwarded:
		 * the workers inherit it too and would shrug the signal off anyway.
		 */
		if (sigaction(fwd_sigs[i], NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
			continue;
		sigaddset(&set, fwd_sigs[i]);
	}
	sigprocmask(SIG_BLOCK, &set, &old);

	msg_info("launching %d rank%s on 127.0.0.1 ports %s (launcher pid %d)", l.n,
		 l.n == 1 ? "" : "s", port_list, (int)self);
	for (i = 0; i < l.n; i++) {
		pid_t pid = fork();

		if (pid == 0)
			worker_exec(i, l.n, argv, lfd, ports, port_list, self, &old);
		if (pid < 0) {
			msg_err("fork: %s; stopping the job", strerror(errno));
			l.status = EXIT_FAIL;
			l.stopping = true;
			launcher_signal(&l, SIGTERM);
			break;
		}
		l.w[i].pid = pid;
		l.w[i].alive = true;
		l.live++;
	}
	for (i = 0; i < l.n; i++)
		close(lfd[i]);

	for (;;) {
		struct timespec ts;
		siginfo_t si;
		double next;
		int sig;

		launcher_reap(&l);
		if (!l.live)
			break;
		next = launcher_tick(&l);
		if (next < 0) {
			sig = sigwaitinfo(&set, &si);
		} else {
			ts = ts_from_sec(next - clock_mono());
			sig = sigtimedwait(&set, &si, &ts);
		}
		if (sig < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			job_fail(EXIT_FAIL, "sigtimedwait: %s", strerror(errno));
		}
		if (sig == SIGCHLD)
			continue;
		msg_info("got %s; passing it on to the workers", strsignal(sig));
		if (l.pend >= 0)
			launcher_blame(&l, l.pend, l.pend_wstatus);
		if (l.status < 0)
			l.by_signal = true;
		l.stopping = true;
		launcher_signal(&l, sig);
	}
	if (l.pend >= 0)
		launcher_blame(&l, l.pend, l.pend_wstatus);
	if (l.status < 0)
		msg_info("all %d rank%s finished", l.n, l.n == 1 ? "" : "s");
	return l.status < 0 ? 0 : l.status;
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
