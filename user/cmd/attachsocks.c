// SPDX-License-Identifier: MIT
/*
 * attach: the job's sockets from before nccltrace, as the kernel's sock_diag shows them. Each
 * is seeded (model/sockseed.h) with the age of its last data each way, so that a connection
 * silent for 1200 s reads 1200 s at the first tick; one no call touches after the attach is in
 * the model from its seed alone, refreshed at each tick until the BPF side has it.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/session.h"
#include "trace/procfs.h"
#include "trace/sockdiag.h"
#include "util/clock.h"
#include "util/grow.h"
#include "util/log.h"

#define SEEDS_EVERY_NS NT_NSEC_PER_SEC

struct owner {
	uint64_t ino;
	int pid;
};

struct owners {
	struct owner *v;
	int n, cap;
	struct session *s;
	uint64_t now;
};

/* Each socket of pid's file table (threads share it) */
static void owned_by(struct owners *o, int pid)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		uint64_t ino;

		if (*end || fd < 0 || procfs_fd_socket_inode(pid, (int)fd, &ino))
			continue;
		if (grow(&o->v, &o->cap, o->n, sizeof(*o->v), 64))
			break;
		o->v[o->n++] = (struct owner){.ino = ino, .pid = pid};
	}
	closedir(d);
}

static int seed_one(void *ctx, const struct sockdiag_sock *sk)
{
	struct owners *o = ctx;
	struct nt_conn c;

	for (int i = 0; i < o->n; i++) {
		if (o->v[i].ino != sk->ino)
			continue;
		sockdiag_to_conn(sk, o->v[i].pid, o->now, &c);
		if (sockseeds_add(&o->s->seeds, o->v[i].pid, &c) == 0)
			model__conn_update(o->s->model, sockseed_id(sk->ino), &c, false);
		break;
	}
	return 0;
}

int session_seed_sockets(struct session *s, const int *pids, int n)
{
	struct owners o = {.s = s, .now = clock_mono_ns()};
	int before = s->seeds.n, rc;

	if (!s->seeds.attach_ns)
		s->seeds.attach_ns = o.now;
	for (int i = 0; i < n; i++)
		owned_by(&o, pids[i]);
	rc = o.n ? sockdiag_each(seed_one, &o) : 0;
	s->seeds.read_ns = o.now;
	free(o.v);
	if (rc) {
		pr_warn("cannot read the job's sockets from the kernel (sock_diag): %s; their ages "
			"count from the attach\n",
			strerror(-rc));
		return rc;
	}
	return s->seeds.n - before;
}

void session_conn_update(struct session *s, uint64_t sk, const struct nt_conn *c, bool closed)
{
	struct nt_conn v = *c;

	if (s->seeds.n && sockseeds_apply(&s->seeds, &v)) {
		struct sockseed *e = sockseeds_find(&s->seeds, v.ino);

		/* the BPF side has it now: the model keeps it under its own id */
		if (e && !e->forgotten) {
			model__conn_forget(s->model, sockseed_id(e->ino));
			e->forgotten = true;
		}
	}
	model__conn_update(s->model, sk, &v, closed);
}

static int refresh_one(void *ctx, const struct sockdiag_sock *sk)
{
	struct owners *o = ctx;
	struct sockseed *e = sockseeds_find(&o->s->seeds, sk->ino);
	struct nt_conn v;

	if (e && !e->in_map && !e->closed) {
		sockdiag_to_conn(sk, e->pid, o->now, &v);
		sockseeds_refresh(e, &v);
	}
	return 0;
}

void session_seeds_tick(struct session *s, uint64_t now)
{
	struct owners o = {.s = s, .now = now};
	int live = 0;

	/* a dump of every TCP socket of the host: once a second is enough for silent ones */
	if (now - s->seeds.read_ns < SEEDS_EVERY_NS)
		return;
	s->seeds.read_ns = now;
	for (int i = 0; i < s->seeds.n; i++) {
		struct sockseed *e = &s->seeds.v[i];

		if (!e->in_map && !e->closed) {
			e->seen = false;
			live++;
		}
	}
	if (!live || sockdiag_each(refresh_one, &o))
		return;
	for (int i = 0; i < s->seeds.n; i++) {
		struct sockseed *e = &s->seeds.v[i];
		struct nt_conn c;

		if (e->in_map || e->closed)
			continue;
		c = e->c;
		/* gone from the kernel's tables without a call the BPF side saw: closed now */
		if (!e->seen) {
			e->closed = true;
			c.state_ns = now;
		}
		model__conn_update(s->model, sockseed_id(e->ino), &c, e->closed);
	}
}
