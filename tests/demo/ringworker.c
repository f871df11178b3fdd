// SPDX-License-Identifier: MIT
/*
 * ringjob's worker (RANK set): one rank of the ring over TCP on 127.0.0.1, busy-polling
 * non-blocking sockets as NCCL's proxy thread does (or blocking ones and a sender thread with
 * --blocking), the stop agreement, and the fault it injects when it is --stall-rank.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ringjob.h"

static const char *const stall_mode_names[] = {"sleep", "stop", "exit"};

/*
 * When this rank last handed bytes to its successor (realtime ns): the successor waits on it
 * from then, which can be a ring step before a fault, so the marker gives it too
 */
static uint64_t last_send_real_ns;

static void note_send(void)
{
	__atomic_store_n(&last_send_real_ns, clock_real_ns(), __ATOMIC_RELAXED);
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
	uint64_t pauses; /* --pause-every: how many this rank made */
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

/* after a round that moved nothing: sched_yield(), or FIXTURE_IDLE_US microseconds of sleep */
static void idle(void)
{
	static long us = -1; /* the ring loop's thread only */

	if (us < 0) {
		const char *e = getenv("FIXTURE_IDLE_US");

		us = e ? strtol(e, NULL, 10) : 0;
		if (us < 0 || us > 100000)
			us = 0;
	}
	if (us) {
		struct timespec ts = {0, us * 1000};

		nanosleep(&ts, NULL);
	} else {
		sched_yield();
	}
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
	sa.sin_addr.s_addr = r->o->addr[r->next];
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
		if ((err != ECONNREFUSED && err != EINTR) || clock_mono() >= give_up) {
			char ip[INET_ADDRSTRLEN] = "?";

			inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
			job_fail(EXIT_FAIL, "rank %d: connect to rank %d at %s:%d: %s", r->rank,
				 r->next, ip, port, strerror(err));
		}
		sleep_for(CONNECT_RETRY_S);
	}
}

static int ring_accept(const struct ring *r, int lfd)
{
	double give_up = clock_mono() + ACCEPT_GIVEUP_S;

	for (;;) {
		struct pollfd p = {.fd = lfd, .events = POLLIN};
		double left = give_up - clock_mono();
		struct hello h;
		int fd, err;

		if (left <= 0)
			job_fail(EXIT_LOST, "rank %d: rank %d did not connect within %.0f s",
				 r->rank, r->prev, ACCEPT_GIVEUP_S);
		if (poll(&p, 1, (int)(left * 1000) + 1) <= 0)
			continue;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN)
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
	/* printed even with --quiet: it is the ground truth the tracer is graded against */
	msg_err("STALL rank %d pid %d mode %s at_realtime_ns %llu last_send_realtime_ns %llu",
		r->rank, (int)getpid(), stall_mode_names[o->stall_mode],
		(unsigned long long)clock_real_ns(),
		(unsigned long long)__atomic_load_n(&last_send_real_ns, __ATOMIC_RELAXED));
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
		size_t before = sent + got;
		ssize_t n;

		if (sent < r->size) {
			n = send(r->next_fd, r->sbuf + sent, r->size - sent,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n > 0) {
				sent += (size_t)n;
				note_send();
			} else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
				   errno != EINTR)
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
		/* a round that moved nothing gives the CPU to whoever wants it (the tracer, the
		 * peer it waits for) and spins on: still a storm of EAGAIN, no longer one that
		 * starves a loaded machine. FIXTURE_IDLE_US=N sleeps N microseconds instead (the
		 * test suite: its jobs wait with the CPUs free) */
		if (sent + got == before)
			idle();
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
		note_send();
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

/*
 * The rhythm after step k (--step-every, --pause-every, --slow-rank): the step's compute, and an
 * evaluation on every rank after the same step, as a training loop's "every N steps" does, so
 * that the ranks pause together and nobody waits on anybody. (A pause by the clock would not
 * do: a rank that finished its step just before the moment would go on into the next and wait
 * there, for the whole pause, on one that finished just after it.)
 */
static void ring_pace(struct ring *r, uint64_t k)
{
	const struct opts *o = r->o;

	/* the step's compute: the slow rank's takes longer, and the others then wait on it */
	if (o->step_every > 0)
		sleep_for(o->step_every * (r->rank == o->slow_rank ? 1 + o->slow_by : 1));
	if (o->pause_every > 0) {
		uint64_t n = (uint64_t)(o->pause_every / o->step_every + 0.5);

		if ((k + 1) % (n ? n : 1) == 0) {
			sleep_for(o->pause_for);
			r->pauses++;
		}
	}
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
		ring_pace(r, k);
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

int worker_main(const struct opts *o)
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
			    " steps, %.0f bytes sent, %.1f MB/s, %.2f s, %" PRIu64 " pauses\n",
		       steps, bytes, elapsed > 0 ? bytes / 1e6 / elapsed : 0.0, elapsed, r.pauses);
		fflush(stdout);
	}
	free(r.sbuf);
	free(r.rbuf);
	return 0;
}
