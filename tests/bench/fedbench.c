// SPDX-License-Identifier: MIT
/*
 * A job of many hosts, timed: HOSTS hosts x RANKS ranks in one TCP ring (both ends of every
 * connection, each host's pids the same as every other's, as pid namespaces make them), one
 * rank asleep and every other one spinning on its wait.
 *   merge: HOSTS dumps of SECONDS state records each, written to DIR, then report_merged() on
 *          them (what `nccltrace report DUMP...` does), timed;
 *   watch: HOSTS listeners on 127.0.0.1 (libmicrohttpd, as `run --listen`) serving each host's
 *          /state, and watch's rounds (libcurl, parse, merge, diagnose) at 2 Hz for ROUNDS
 *          rounds, each timed.
 *   fedbench DIR [HOSTS RANKS SECONDS ROUNDS]   (default 64 8 60 20)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cmd/listen.h"
#include "cmd/watchjob.h"
#include "model/snapjson.h"
#include "present/dump.h"
#include "present/reportmerge.h"
#include "util/clock.h"

#define SEC    NT_NSEC_PER_SEC
#define NOW0   (1000 * SEC)
#define HUNG   3 /* the rank asleep, on host 0 */
#define STALL0 (NOW0 - 20 * SEC)

static double now_ms(void)
{
	return (double)clock_mono_ns() / 1e6;
}

struct host {
	struct snapshot s;
	struct snap_proc *procs;
	struct snap_conn *conns;
};

static void ip(uint8_t *a, int host)
{
	a[0] = 10, a[1] = 1, a[2] = (uint8_t)(host / 250), a[3] = (uint8_t)(host % 250 + 1);
}

/* rank r's end of its connection with peer: out (it connected) or in (it accepted) */
static void add_conn(struct host *h, int per, int r, int peer, bool out, bool spin, uint64_t now)
{
	struct snap_conn *c = &h->conns[h->s.nconns++];
	bool same = r / per == peer / per;

	memset(c, 0, sizeof(*c));
	c->id = 0x1000 + (uint64_t)h->s.nconns;
	c->pid = 100 + r % per;
	c->peer_pid = same ? 100 + peer % per : -1;
	c->c.tgid = (uint32_t)c->pid;
	c->c.t.family = AF_INET;
	ip(c->c.t.saddr, r / per);
	ip(c->c.t.daddr, peer / per);
	c->c.t.sport = (uint16_t)(out ? 40000 + r % per : 47000 + r % per);
	c->c.t.dport = (uint16_t)(out ? 47000 + peer % per : 40000 + peer % per);
	c->c.state = 1;
	c->c.first_ns = NOW0 - 600 * SEC;
	/* healthy until the hang, STALL_S before the end: then no byte moves */
	c->c.last_send_ns = c->c.last_recv_ns = now < STALL0 ? now - SEC / 10 : STALL0;
	c->c.last_send_try_ns = c->c.last_recv_try_ns = c->c.last_send_ns;
	c->c.bytes_sent = c->c.bytes_recv = 1 << 30;
	if (spin) {
		c->c.recv_eagain = 100000;
		c->c.last_eagain_ns = c->c.last_recv_try_ns = now - SEC / 20;
	}
}

/* host h of the ring at time now: every rank receives from its predecessor, rank HUNG sleeps */
static void host_at(struct host *h, int host, int nh, int per, uint64_t now)
{
	int n = nh * per;

	h->s.now_ns = now;
	h->s.nprocs = h->s.nconns = 0;
	h->s.procs = h->procs;
	h->s.conns = h->conns;
	for (int i = 0; i < per; i++) {
		struct snap_proc *p = &h->procs[h->s.nprocs++];
		int r = host * per + i;

		memset(p, 0, sizeof(*p));
		p->pid = 100 + i;
		p->ppid = 1;
		p->rank = r;
		p->world_size = n;
		memcpy(p->comm, "python3", 8);
		p->state = r == HUNG && now >= STALL0 ? 'S' : 'R';
		p->cpu_busy_ns = r == HUNG && now >= STALL0 ? 0 : SEC;
		if (r == HUNG && now >= STALL0)
			memcpy(p->where, "clock_nanosleep", 16);
		add_conn(h, per, r, (r + 1) % n, true, false, now);
		add_conn(h, per, r, (r + n - 1) % n, false, r != HUNG || now < STALL0, now);
	}
}

static char *host_name(int h)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "node%03d", h);
	return buf;
}

static int write_dumps(const char *dir, int nh, int per, int secs, char **paths, double *mb)
{
	struct host h = {.procs = calloc(per, sizeof(struct snap_proc)),
			 .conns = calloc(2 * per, sizeof(struct snap_conn))};
	struct stat st;

	*mb = 0;
	for (int i = 0; i < nh; i++) {
		struct dump *d;
		char path[512];

		snprintf(path, sizeof(path), "%s/nccltrace-%s-bench.jsonl", dir, host_name(i));
		unlink(path);
		if (dump__create(path, false, 0, 0, &d))
			return -1;
		paths[i] = strdup(path);
		dump__write(d, json_pack("{s:i,s:s,s:s,s:I,s:I,s:f,s:[]}", "nccltrace", 1,
					 "version", "bench", "host", host_name(i),
					 "boot_to_realtime_ns", (json_int_t)1700000000 * SEC,
					 "start_ns", (json_int_t)(NOW0 - (uint64_t)secs * SEC),
					 "stall_threshold_s", 5.0, "cmd"));
		for (int t = secs; t >= 0; t--) {
			host_at(&h, i, nh, per, NOW0 - (uint64_t)t * SEC);
			dump__write(d, json_pack("{s:s,s:I,s:o}", "type", "state", "ts_ns",
						 (json_int_t)h.s.now_ns, "state",
						 snapjson_from_snapshot(&h.s)));
		}
		dump__close(d);
		if (!stat(path, &st))
			*mb += (double)st.st_size / 1e6;
	}
	free(h.procs);
	free(h.conns);
	return 0;
}

/* --- watch: the listeners, served from a thread --- */

struct server {
	struct listener **l;
	char **doc; /* each host's /state */
	int n;
	volatile bool stop;
};

static char *page(void *ctx, const char *url, const char *since, const char **type)
{
	char **doc = ctx;

	(void)since;
	*type = "application/json";
	return strcmp(url, "/state") ? NULL : strdup(*doc);
}

static void *serve(void *arg)
{
	struct server *sv = arg;
	int ep = epoll_create1(EPOLL_CLOEXEC);

	for (int i = 0; i < sv->n; i++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};

		epoll_ctl(ep, EPOLL_CTL_ADD, listener__fd(sv->l[i]), &ev);
	}
	while (!sv->stop) {
		struct epoll_event evs[64];
		int k = epoll_wait(ep, evs, 64, 50);

		for (int j = 0; j < k; j++)
			listener__serve(sv->l[evs[j].data.u32]);
	}
	close(ep);
	return NULL;
}

static int bench_watch(int nh, int per, int rounds)
{
	struct host h = {.procs = calloc(per, sizeof(struct snap_proc)),
			 .conns = calloc(2 * per, sizeof(struct snap_conn))};
	struct server sv = {
		.l = calloc(nh, sizeof(*sv.l)), .doc = calloc(nh, sizeof(char *)), .n = nh};
	char **specs = calloc(nh, sizeof(char *)), err[256];
	struct watch w = {0};
	double t[rounds], kb = 0;
	pthread_t th;
	int ok = 0;

	for (int i = 0; i < nh; i++) {
		char spec[32];
		json_t *o;

		host_at(&h, i, nh, per, NOW0);
		o = json_pack("{s:i,s:s,s:I,s:f,s:o}", "nccltrace_state", 1, "host", host_name(i),
			      "boot_to_realtime_ns", (json_int_t)1700000000 * SEC,
			      "stall_threshold_s", 5.0, "state", snapjson_from_snapshot(&h.s));
		sv.doc[i] = json_dumps(o, JSON_COMPACT);
		kb += (double)strlen(sv.doc[i]) / 1e3;
		json_decref(o);
		snprintf(spec, sizeof(spec), "127.0.0.1:%d", 39100 + i);
		specs[i] = strdup(spec);
		if (listener__open(&sv.l[i], spec, NULL, page, &sv.doc[i], err, sizeof(err))) {
			fprintf(stderr, "fedbench: %s\n", err);
			return 1;
		}
	}
	pthread_create(&th, NULL, serve, &sv);
	if (watch_alloc(&w, specs, nh) || watchpoll_init(w.ep, nh, err, sizeof(err)))
		return 1;
	for (int r = 0; r < rounds; r++) {
		double t0 = now_ms();
		int got = watch_round(&w);
		json_t *f;

		t[r] = now_ms() - t0;
		f = jobview_open_findings(&w.v);
		ok += got == nh && json_array_size(f) == 1 &&
		      json_integer_value(json_object_get(json_array_get(f, 0), "rank")) == HUNG;
		json_decref(f);
		if (t[r] < 500)
			usleep((useconds_t)((500 - t[r]) * 1000));
	}
	sv.stop = true;
	pthread_join(th, NULL);
	for (int i = 1; i < rounds; i++)
		for (int k = i; k > 0 && t[k] < t[k - 1]; k--) {
			double x = t[k];

			t[k] = t[k - 1], t[k - 1] = x;
		}
	printf("watch: %d endpoints x %d ranks (%.0f KB of /state each round): round median %.1f "
	       "ms, max %.1f ms over %d rounds at 2 Hz; %d rounds named rank %d alone\n",
	       nh, per, kb, t[rounds / 2], t[rounds - 1], rounds, ok, HUNG);
	watch_free(&w);
	for (int i = 0; i < nh; i++)
		listener__close(sv.l[i]), free(sv.doc[i]), free(specs[i]);
	free(sv.l), free(sv.doc), free(specs), free(h.procs), free(h.conns);
	return ok == rounds ? 0 : 1;
}

int main(int argc, char **argv)
{
	int nh = argc > 2 ? atoi(argv[2]) : 64, per = argc > 3 ? atoi(argv[3]) : 8;
	int secs = argc > 4 ? atoi(argv[4]) : 60, rounds = argc > 5 ? atoi(argv[5]) : 20;
	char **paths, err[512];
	double mb, t0, ms;
	json_t *r, *f;

	if (argc < 2 || nh < 2 || nh > 250 || per < 1 || per > 64 || secs < 1 || rounds < 1) {
		fprintf(stderr, "usage: fedbench DIR [HOSTS RANKS SECONDS ROUNDS]\n");
		return 64;
	}
	paths = calloc(nh, sizeof(*paths));
	if (write_dumps(argv[1], nh, per, secs, paths, &mb)) {
		fprintf(stderr, "fedbench: cannot write the dumps in %s\n", argv[1]);
		return 73;
	}
	t0 = now_ms();
	r = report_merged(paths, nh, err, sizeof(err));
	ms = now_ms() - t0;
	if (!r) {
		fprintf(stderr, "fedbench: %s\n", err);
		return 65;
	}
	f = json_array_get(json_object_get(r, "findings"), 0);
	printf("merge: %d dumps x %d ranks x %d s (%.1f MB): report %.0f ms; %zu finding(s), the "
	       "first naming rank %lld on %s\n",
	       nh, per, secs, mb, ms, json_array_size(json_object_get(r, "findings")),
	       (long long)json_integer_value(json_object_get(f, "rank")),
	       json_string_value(json_object_get(f, "host")));
	json_decref(r);
	for (int i = 0; i < nh; i++)
		unlink(paths[i]), free(paths[i]);
	free(paths);
	return bench_watch(nh, per, rounds);
}
