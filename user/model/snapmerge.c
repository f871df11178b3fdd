// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <string.h>
#include "model/conns.h"
#include "model/snapmerge.h"

/* a pid that several hosts have, and the first host that has it (which keeps it) */
struct dup_pid {
	int pid, first;
};

struct pid_at {
	int pid, host;
};

static int pid_at_cmp(const void *a, const void *b)
{
	const struct pid_at *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->host - y->host;
}

static int dup_cmp(const void *a, const void *b)
{
	const struct dup_pid *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* the merge's state: the pids two hosts share */
struct merge {
	struct dup_pid *dup;
	int ndup;
};

static int map_pid(const struct merge *m, int host, int pid)
{
	struct dup_pid want = {.pid = pid}, *hit;

	if (pid <= 0 || !m->ndup)
		return pid;
	hit = bsearch(&want, m->dup, m->ndup, sizeof(*m->dup), dup_cmp);
	if (!hit || hit->first == host)
		return pid;
	return pid + host * SNAPMERGE_PID_STRIDE;
}

static int find_dups(struct merge *m, const struct snapmerge_in *in, int n, int nprocs)
{
	struct pid_at *all = calloc(nprocs ? nprocs : 1, sizeof(*all));
	int k = 0;

	m->dup = calloc(nprocs ? nprocs : 1, sizeof(*m->dup));
	if (!all || !m->dup) {
		free(all);
		return -1;
	}
	for (int h = 0; h < n; h++)
		for (int i = 0; i < in[h].s->nprocs; i++)
			all[k++] = (struct pid_at){in[h].s->procs[i].pid, h};
	qsort(all, k, sizeof(*all), pid_at_cmp);
	for (int i = 1; i < k; i++)
		if (all[i].pid == all[i - 1].pid && all[i].host != all[i - 1].host &&
		    (!m->ndup || m->dup[m->ndup - 1].pid != all[i].pid))
			m->dup[m->ndup++] = (struct dup_pid){all[i].pid, all[i - 1].host};
	free(all);
	return 0;
}

static bool loopback(const struct nt_tuple *t)
{
	static const uint8_t v6lo[16] = {[15] = 1};

	if (t->family == 10 /* AF_INET6 */)
		return !memcmp(t->daddr, v6lo, 16) ||
		       (!memcmp(t->daddr, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) &&
			t->daddr[12] == 127);
	return t->daddr[0] == 127;
}

/*
 * Join the two ends of the connections between hosts: those that are not loopback (group -1),
 * then the loopback ones of each group of inputs that share one loopback (group g). Other
 * loopback ones stay as their host joined them: 127.0.0.1:x on one host is not 127.0.0.1:x on
 * another. group[i]: conn i's.
 */
static void join_group(struct snap_conn *c, int n, const int *group, int g)
{
	struct snap_conn *v;
	int *at, m = 0;

	for (int i = 0; i < n; i++)
		m += group[i] == g;
	if (m < 2)
		return;
	v = calloc(m, sizeof(*v));
	at = calloc(m, sizeof(*at));
	if (!v || !at)
		goto out;
	m = 0;
	for (int i = 0; i < n; i++)
		if (group[i] == g) {
			v[m] = c[i];
			v[m].peer_pid = -1;
			at[m++] = i;
		}
	conns_map_peers(v, m);
	for (int i = 0; i < m; i++)
		if (v[i].peer_pid > 0)
			c[at[i]].peer_pid = v[i].peer_pid;
out:
	free(v);
	free(at);
}

/*
 * which inputs share a loopback with another: their group (the first such input), else -2;
 * only the groups there are are joined (a job of a thousand hosts, each its own loopback, has
 * none but the one between hosts)
 */
static void join_hosts(struct snapstore *st, const struct snapmerge_in *in, int n)
{
	int *group = calloc(st->s.nconns ? st->s.nconns : 1, sizeof(*group)), k = 0;
	bool *used = calloc(n ? n : 1, sizeof(*used));

	if (!group || !used)
		goto out;
	for (int h = 0; h < n; h++) {
		int g = -2;

		for (int e = 0; in[h].loopback && e < n && g == -2; e++)
			if (e != h && in[e].loopback && !strcmp(in[e].loopback, in[h].loopback))
				g = e < h ? e : h;
		if (g >= 0)
			used[g] = true;
		for (int i = 0; i < in[h].s->nconns; i++, k++)
			group[k] = loopback(&st->s.conns[k].c.t) ? g : -1;
	}
	join_group(st->s.conns, st->s.nconns, group, -1);
	for (int h = 0; h < n; h++)
		if (used[h])
			join_group(st->s.conns, st->s.nconns, group, h);
out:
	free(group);
	free(used);
}

static void add_host(struct snapstore *st, const struct merge *m, const struct snapmerge_in *in,
		     int h)
{
	const struct snapshot *s = in[h].s;
	struct snapshot *o = &st->s;
	const char *host = snapstore_str(st, in[h].host);

	for (int i = 0; i < s->nprocs; i++) {
		struct snap_proc *p = &o->procs[o->nprocs++];

		*p = s->procs[i];
		p->pid = map_pid(m, h, p->pid);
		p->ppid = map_pid(m, h, p->ppid);
		p->host = host;
		p->host_pid = p->pid != s->procs[i].pid ? s->procs[i].pid : s->procs[i].host_pid;
	}
	for (int i = 0; i < s->nconns; i++) {
		struct snap_conn *c = &o->conns[o->nconns++];

		*c = s->conns[i];
		c->pid = map_pid(m, h, c->pid);
		c->peer_pid = map_pid(m, h, c->peer_pid);
		c->c.tgid = (uint32_t)map_pid(m, h, (int)c->c.tgid);
	}
	for (int i = 0; i < s->ncomms; i++) {
		struct snap_comm *c = &o->comms[o->ncomms++];

		*c = s->comms[i];
		c->pid = map_pid(m, h, c->pid);
	}
	if (s->now_ns > o->now_ns)
		o->now_ns = s->now_ns;
	if (s->tcp_resumed_ns > o->tcp_resumed_ns)
		o->tcp_resumed_ns = s->tcp_resumed_ns;
	o->tcp_quiet |= s->tcp_quiet;
	o->job_over &= s->job_over;
	o->records_lost += s->records_lost;
	o->records_suppressed += s->records_suppressed;
}

struct snapstore *snapmerge(const struct snapmerge_in *in, int n)
{
	struct snapstore *st = calloc(1, sizeof(*st));
	struct merge m = {0};
	int np = 0, nc = 0, nm = 0;

	if (!st)
		return NULL;
	for (int h = 0; h < n; h++) {
		np += in[h].s->nprocs;
		nc += in[h].s->nconns;
		nm += in[h].s->ncomms;
	}
	st->s.procs = snapstore_alloc(st, np * sizeof(*st->s.procs));
	st->s.conns = snapstore_alloc(st, nc * sizeof(*st->s.conns));
	st->s.comms = snapstore_alloc(st, nm * sizeof(*st->s.comms));
	if (!st->s.procs || !st->s.conns || !st->s.comms || find_dups(&m, in, n, np))
		goto fail;
	st->s.job_over = n > 0;
	for (int h = 0; h < n; h++)
		add_host(st, &m, in, h);
	join_hosts(st, in, n);
	if (snapshot_index(&st->s, &st->ix))
		goto fail;
	st->indexed = true;
	st->s.ix = &st->ix;
	free(m.dup);
	return st;
fail:
	free(m.dup);
	snapstore_free(st);
	return NULL;
}

int snapmerge_pid(const struct snapstore *m, int host, int pid)
{
	/* the stride is the rule: recover it from the processes themselves */
	for (int i = 0; i < m->s.nprocs; i++)
		if (m->s.procs[i].host_pid == pid &&
		    m->s.procs[i].pid % SNAPMERGE_PID_STRIDE == pid &&
		    m->s.procs[i].pid / SNAPMERGE_PID_STRIDE == host)
			return m->s.procs[i].pid;
	return pid;
}
