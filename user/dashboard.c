// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dashboard.h"
#include "fmt.h"

#define TCP_LISTEN 10

/* A connection's counters at the previous snapshot, for rates. */
struct prev {
	uint64_t id;
	uint64_t ts, sent, recv, eagain;
};

struct dashboard {
	struct tui_model m;
	struct tui_rank *ranks;
	struct tui_conn *conns;
	struct tui_finding *findings;
	int cap_r, cap_c, cap_f;
	struct prev *prev, *next;
	int nprev, cap_p;
};

struct dashboard *dashboard__new(void)
{
	return calloc(1, sizeof(struct dashboard));
}

void dashboard__free(struct dashboard *d)
{
	if (!d)
		return;
	free(d->ranks);
	free(d->conns);
	free(d->findings);
	free(d->prev);
	free(d->next);
	free(d);
}

static bool grow(void **v, int *cap, int want, size_t sz)
{
	void *nv;

	if (want <= *cap)
		return true;
	nv = realloc(*v, (size_t)want * sz);
	if (!nv)
		return false;
	*v = nv;
	*cap = want;
	return true;
}

static bool is_waiter(const struct finding *f, int pid)
{
	for (int k = 0; k < f->nwaiters; k++)
		if (f->waiters[k] == pid)
			return true;
	return false;
}

/* Is pid the culprit, or a waiter, of an open finding? */
static void roles(const struct findings *fs, int pid, bool *culprit, bool *waiting)
{
	*culprit = *waiting = false;
	for (int i = 0; fs && i < fs->n; i++) {
		const struct tracked_finding *t = &fs->v[i];

		if (!t->open || t->f.kind == FINDING_CONFIG)
			continue;
		*culprit |= t->f.pid == pid;
		*waiting |= is_waiter(&t->f, pid);
	}
}

static uint64_t last_byte(const struct nt_conn *c)
{
	uint64_t t = c->last_send_ns > c->last_recv_ns ? c->last_send_ns : c->last_recv_ns;

	return t ? t : c->first_ns;
}

static void proc_name(const struct snapshot *s, int pid, char *buf, size_t len)
{
	const struct snap_proc *p = snapshot_proc(s, pid);

	if (p && p->rank >= 0)
		snprintf(buf, len, "rank %d", p->rank);
	else
		snprintf(buf, len, "pid %d", pid);
}

static void colls(const struct snapshot *s, int pid, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < s->ncomms && off + 16 < len; i++) {
		const struct snap_comm *c = &s->comms[i];
		int best = -1;

		if (c->pid != pid || !c->seq_ok || c->destroyed)
			continue;
		for (int f = 0; f < SNAP_NSEQ; f++)
			if (c->seq[f] && (best < 0 || c->seq[f] > c->seq[best]))
				best = f;
		off += snprintf(buf + off, len - off, "%s%s %llu", off ? "; " : "",
				best >= 0 ? snap_coll_name(best) : "none",
				best >= 0 ? (unsigned long long)c->seq[best] : 0ULL);
	}
}

static void build_ranks(struct dashboard *d, const struct snapshot *s, const struct findings *fs)
{
	int n = 0;

	/* ranks first, in rank order; then other processes with connections or NCCL */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < s->nprocs; i++) {
			const struct snap_proc *p = &s->procs[i];
			struct tui_rank *r;
			bool conns = false;
			uint64_t last = 0;

			for (int k = 0; k < s->nconns; k++)
				if (s->conns[k].pid == p->pid &&
				    !(s->conns[k].c.flags & NT_CONN_LISTENER)) {
					conns = true;
					if (last_byte(&s->conns[k].c) > last)
						last = last_byte(&s->conns[k].c);
				}
			if ((pass == 0) != (p->rank >= 0) || (pass == 1 && !conns && !p->nccl))
				continue;
			r = &d->ranks[n++];
			memset(r, 0, sizeof(*r));
			r->rank = p->rank;
			r->pid = p->pid;
			r->state = p->state ? p->state : '?';
			snprintf(r->phase, sizeof(r->phase), "%s",
				 p->nccl_phase[0] ? p->nccl_phase
				 : p->exited	  ? "exited"
						  : "");
			r->in_phase_s = p->nccl_phase[0]
						? (double)(s->now_ns - p->nccl_since_ns) / 1e9
						: -1;
			colls(s, p->pid, r->colls, sizeof(r->colls));
			r->progress_age_s = last ? (double)(s->now_ns - last) / 1e9 : -1;
			roles(fs, p->pid, &r->culprit, &r->waiting);
		}
	/* by rank within the ranked ones */
	for (int i = 1; i < n; i++) {
		struct tui_rank v = d->ranks[i];
		int j = i;

		if (v.rank < 0)
			continue;
		while (j > 0 && d->ranks[j - 1].rank > v.rank) {
			d->ranks[j] = d->ranks[j - 1];
			j--;
		}
		d->ranks[j] = v;
	}
	d->m.nranks = n;
}

static const struct prev *prev_of(const struct dashboard *d, uint64_t id)
{
	for (int i = 0; i < d->nprev; i++)
		if (d->prev[i].id == id)
			return &d->prev[i];
	return NULL;
}

/* The connection pid waits on, computed once per process and kept in wait (-2: not yet). */
static int waiting_of(const struct snapshot *s, const struct diag_config *cfg, int *wait, int pid)
{
	for (int i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid) {
			if (wait[i] == -2)
				wait[i] = cfg ? diagnose_waiting_conn(s, cfg, pid) : -1;
			return wait[i];
		}
	return -1;
}

static void build_conns(struct dashboard *d, const struct snapshot *s, const struct dash_info *in,
			enum tui_sort sort)
{
	int n = 0, np = 0, wait[s->nprocs > 0 ? s->nprocs : 1];

	for (int i = 0; i < s->nprocs; i++)
		wait[i] = -2;

	for (int i = 0; i < s->nconns; i++) {
		const struct snap_conn *sc = &s->conns[i];
		const struct nt_conn *c = &sc->c;
		const struct prev *p = prev_of(d, sc->id);
		uint64_t eagain = c->send_eagain + c->recv_eagain;
		struct tui_conn *t;
		double dt;

		if ((c->flags & NT_CONN_LISTENER) || c->state == TCP_LISTEN || sc->closed)
			continue;
		d->next[np++] =
			(struct prev){sc->id, s->now_ns, c->bytes_sent, c->bytes_recv, eagain};
		t = &d->conns[n++];
		memset(t, 0, sizeof(*t));
		proc_name(s, sc->pid, t->from, sizeof(t->from));
		if (sc->peer_pid > 0)
			proc_name(s, sc->peer_pid, t->to, sizeof(t->to));
		else
			fmt_endpoint(&c->t, 0, t->to, sizeof(t->to));
		snprintf(t->label, sizeof(t->label), "%s", sc->nccl_label ? sc->nccl_label : "");
		dt = p && s->now_ns > p->ts ? (double)(s->now_ns - p->ts) / 1e9 : 0;
		if (dt > 0) {
			t->tx_bps = (double)(c->bytes_sent - p->sent) / dt;
			t->rx_bps = (double)(c->bytes_recv - p->recv) / dt;
			t->eagain_ps = (double)(eagain - p->eagain) / dt;
		}
		t->age_s = (double)(s->now_ns - last_byte(c)) / 1e9;
		t->retrans = c->retrans;
		t->rtt_us = c->srtt_us;
		t->queue = c->send_q;
		t->waiting = waiting_of(s, in->cfg, wait, sc->pid) == i;
	}
	/* the counters of this snapshot are the next one's previous */
	{
		struct prev *tmp = d->prev;

		d->prev = d->next;
		d->next = tmp;
		d->nprev = np;
	}
	tui_sort_conns(d->conns, n, sort);
	d->m.nconns = n;
}

static void settings_line(const struct finding *f, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < f->nsettings && off + 8 < len; i++) {
		const struct finding_setting *st = &f->settings[i];

		if (!strcmp(st->source, "unset"))
			off += snprintf(buf + off, len - off, "%s%s unset", off ? ", " : "",
					st->name);
		else
			off += snprintf(buf + off, len - off, "%s%s=%s (%s)", off ? ", " : "",
					st->name, st->value, st->source);
		if (st->ranks[0] && off + 8 < len)
			off += snprintf(buf + off, len - off, " [%s]", st->ranks);
	}
}

static void build_findings(struct dashboard *d, const struct snapshot *s, const struct findings *fs)
{
	int n = 0;

	/* open ones first, the newest first within each */
	for (int pass = 0; pass < 2 && fs; pass++)
		for (int i = fs->n - 1; i >= 0; i--) {
			const struct tracked_finding *t = &fs->v[i];
			const struct finding *f = &t->f;
			struct tui_finding *o;
			const char *k = finding_kind_name(f->kind);
			uint64_t end = t->open ? s->now_ns : t->last_seen_ns;
			size_t j;

			if ((pass == 0) != t->open)
				continue;
			o = &d->findings[n++];
			memset(o, 0, sizeof(*o));
			for (j = 0; k[j] && j + 1 < sizeof(o->kind); j++)
				o->kind[j] = k[j] == '_'
						     ? '-'
						     : (char)(k[j] >= 'a' && k[j] <= 'z' ? k[j] - 32
											 : k[j]);
			o->open = t->open;
			o->since_s = end > f->since_ns ? (double)(end - f->since_ns) / 1e9 : 0;
			snprintf(o->summary, sizeof(o->summary), "%s", f->summary);
			for (int e = 0; e < f->nevidence && e < TUI_MAX_EVIDENCE; e++)
				snprintf(o->evidence[o->nevidence++], sizeof(o->evidence[0]), "%s",
					 f->evidence[e]);
			for (int h = 0; h < f->nhyp && h < TUI_MAX_HYP; h++)
				snprintf(o->hyp[o->nhyp++], sizeof(o->hyp[0]), "%s",
					 f->hypotheses[h]);
			settings_line(f, o->settings, sizeof(o->settings));
		}
	d->m.nfindings = n;
}

const struct tui_model *dashboard__update(struct dashboard *d, const struct snapshot *s,
					  const struct findings *fs, const struct dash_info *in,
					  enum tui_sort sort)
{
	int nf = fs ? fs->n : 0, expected = -1, seen = 0;

	if (!grow((void **)&d->ranks, &d->cap_r, s->nprocs + 1, sizeof(*d->ranks)) ||
	    !grow((void **)&d->conns, &d->cap_c, s->nconns + 1, sizeof(*d->conns)) ||
	    !grow((void **)&d->findings, &d->cap_f, nf + 1, sizeof(*d->findings)))
		return NULL;
	if (s->nconns + 1 > d->cap_p) {
		struct prev *a = realloc(d->prev, (s->nconns + 1) * sizeof(*a));
		struct prev *b;

		if (!a)
			return NULL;
		d->prev = a;
		b = realloc(d->next, (s->nconns + 1) * sizeof(*b));
		if (!b)
			return NULL;
		d->next = b;
		d->cap_p = s->nconns + 1;
	}
	d->m.ranks = d->ranks;
	d->m.conns = d->conns;
	d->m.findings = d->findings;
	snprintf(d->m.cmd, sizeof(d->m.cmd), "%s", in->cmd ? in->cmd : "");
	snprintf(d->m.mode, sizeof(d->m.mode), "%s", in->mode ? in->mode : "");
	snprintf(d->m.dump, sizeof(d->m.dump), "%s", in->dump ? in->dump : "");
	d->m.elapsed_s = s->now_ns > in->start_ns ? (double)(s->now_ns - in->start_ns) / 1e9 : 0;
	d->m.lost = in->lost;
	d->m.job_done = in->job_done;
	d->m.log = in->log;
	d->m.nlog = in->nlog;
	build_ranks(d, s, fs);
	for (int i = 0; i < d->m.nranks; i++) {
		snprintf(d->ranks[i].host, sizeof(d->ranks[i].host), "%s",
			 in->host ? in->host : "");
		seen += d->ranks[i].rank >= 0;
	}
	for (int i = 0; i < s->nprocs; i++)
		if (s->procs[i].rank >= 0 && s->procs[i].world_size > 0)
			expected = s->procs[i].world_size;
	d->m.ranks_seen = seen;
	d->m.ranks_expected = expected;
	build_conns(d, s, in, sort);
	build_findings(d, s, fs);
	return &d->m;
}
