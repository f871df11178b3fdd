// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "present/dashboard.h"
#include "util/fmt.h"

#define TCP_LISTEN 10

/* A process's or a connection's progress history: bytes moved, a sample a second */
struct hist {
	uint64_t total, ts; /* at the last sample */
	float v[TUI_SPARK]; /* bytes a second, oldest first */
	int n;
};

/*
 * A connection's counters at the previous snapshot, for rates, and its history (carried from
 * snapshot to snapshot while it is open, freed when it is gone; none past DASH_HIST_CONNS
 * connections, whose rows a pane cannot show anyway)
 */
struct prev {
	uint64_t id;
	uint64_t ts, sent, recv, eagain;
	struct hist *h;
};

#define DASH_HIST_CONNS 4096

/* a process's history */
struct phist {
	int pid;
	struct hist h;
};

struct dashboard {
	struct tui_model m;
	struct phist *hist;
	int nhist, cap_h, hint;
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
	for (int k = 0; k < d->nprev; k++)
		free(d->prev[k].h);
	free(d->prev);
	free(d->next);
	free(d->hist);
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

/*
 * A sample of total bytes moved at now: the rate since the last sample joins the history once
 * a second has passed, the oldest leaving past TUI_SPARK. The first only sets where it starts;
 * a total that went down (closed connections gone from the snapshot) starts again from there.
 */
static void hist_sample(struct hist *h, uint64_t total, uint64_t now)
{
	if (!h->ts) {
		h->total = total;
		h->ts = now;
		return;
	}
	if (now - h->ts < NT_NSEC_PER_SEC)
		return;
	if (h->n == TUI_SPARK)
		memmove(h->v, h->v + 1, (TUI_SPARK - 1) * sizeof(h->v[0]));
	else
		h->n++;
	h->v[h->n - 1] = total > h->total
				 ? (float)((double)(total - h->total) * 1e9 / (double)(now - h->ts))
				 : 0;
	h->total = total;
	h->ts = now;
}

static double hist_max(const struct hist *h, double max)
{
	for (int j = 0; j < h->n; j++)
		max = h->v[j] > max ? h->v[j] : max;
	return max;
}

/*
 * Who is what, once per snapshot: by position in s->procs, the culprit of an open finding, and
 * the open finding it waits in (its index in fs->v, -1 if none). O(findings x waiters).
 */
static void roles(const struct snapshot *s, const struct findings *fs, bool *culprit, int *waits)
{
	for (int i = 0; i < s->nprocs; i++) {
		culprit[i] = false;
		waits[i] = -1;
	}
	for (int k = 0; fs && k < fs->n; k++) {
		const struct tracked_finding *t = &fs->v[k];
		int at;

		if (!t->open || t->f.kind == FINDING_CONFIG)
			continue;
		if (t->f.pid > 0 && (at = snapshot_proc_at(s, t->f.pid)) >= 0)
			culprit[at] = true;
		for (int w = 0; w < t->f.nwaiters; w++)
			if ((at = snapshot_proc_at(s, t->f.waiters[w].pid)) >= 0 && waits[at] < 0)
				waits[at] = k;
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
		/* NCCL 2.18-2.22: no function known, the collectives in all */
		if (c->total_only)
			off += snprintf(buf + off, len - off, "%sall %llu", off ? "; " : "",
					(unsigned long long)c->total);
		else
			off += snprintf(buf + off, len - off, "%s%s %llu", off ? "; " : "",
					best >= 0 ? snap_coll_name(best) : "none",
					best >= 0 ? (unsigned long long)c->seq[best] : 0ULL);
	}
}

static int rank_cmp(const void *a, const void *b)
{
	const struct tui_rank *x = a, *y = b;

	/* ranks in order, the processes without one after them */
	if ((x->rank < 0) != (y->rank < 0))
		return x->rank < 0 ? 1 : -1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static void rank_row(const struct snapshot *s, int i, struct tui_rank *r)
{
	const struct snap_proc *p = &s->procs[i];
	uint64_t last = 0;
	int n;
	const int *ci = snapshot_conns_of(s, i, &n);

	for (int k = 0; k < n; k++)
		if (!(s->conns[ci[k]].c.flags & NT_CONN_LISTENER) &&
		    last_byte(&s->conns[ci[k]].c) > last)
			last = last_byte(&s->conns[ci[k]].c);
	memset(r, 0, sizeof(*r));
	r->rank = p->rank;
	r->pid = p->pid;
	r->state = p->state ? p->state : '?';
	r->gpu = p->gpu ? p->gpu->index : -1;
	snprintf(r->phase, sizeof(r->phase), "%s",
		 p->nccl_phase[0] ? p->nccl_phase
		 : p->exited	  ? "exited"
				  : "");
	r->in_phase_s = p->nccl_phase[0] ? (double)(s->now_ns - p->nccl_since_ns) / 1e9 : -1;
	colls(s, p->pid, r->colls, sizeof(r->colls));
	r->progress_age_s = last ? (double)(s->now_ns - last) / 1e9 : -1;
}

/* The rank a row is worth a line of its own for, in a big job: a culprit, or not well */
static bool stands_out(const struct snap_proc *p, bool culprit)
{
	return culprit || p->exited || p->state == 'T' || p->state == 't' || p->state == 'Z';
}

/*
 * Ranks first, in rank order; then other processes with connections or NCCL. From
 * DASH_GROUP_RANKS ranks on: the culprits and the ranks not well on top, then one row per
 * finding for the ranks that wait in it (unless it is the expanded one), then the others.
 */
static void build_ranks(struct dashboard *d, const struct snapshot *s, const struct findings *fs,
			int expanded, bool *culprit, int *waits)
{
	int n = 0, nranked = 0, top = 0;

	for (int i = 0; i < s->nprocs; i++)
		nranked += s->procs[i].rank >= 0;
	roles(s, fs, culprit, waits);
	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_proc *p = &s->procs[i];
		const int *ci;
		bool conns = false;
		int nc;

		/* a process without a rank: shown for its connections (listeners are none) or NCCL */
		ci = snapshot_conns_of(s, i, &nc);
		for (int k = 0; k < nc && !conns; k++)
			conns = !(s->conns[ci[k]].c.flags & NT_CONN_LISTENER);
		if (p->rank < 0 && !conns && !p->nccl)
			continue;
		rank_row(s, i, &d->ranks[n]);
		d->ranks[n].culprit = culprit[i];
		d->ranks[n].waiting = waits[i] >= 0;
		n++;
	}
	if (n > 1)
		qsort(d->ranks, n, sizeof(d->ranks[0]), rank_cmp);
	if (nranked < DASH_GROUP_RANKS) {
		d->m.nranks = n;
		return;
	}
	/* the ones that stand out, to the top (stable: they stay in rank order) */
	for (int i = 0; i < n; i++) {
		const struct snap_proc *p = snapshot_proc(s, d->ranks[i].pid);

		if (p && stands_out(p, d->ranks[i].culprit)) {
			struct tui_rank v = d->ranks[i];

			memmove(&d->ranks[top + 1], &d->ranks[top], (i - top) * sizeof(v));
			d->ranks[top++] = v;
		}
	}
	/* the waiters of each finding (but the expanded one) become one row, after them */
	for (int k = 0; fs && k < fs->n; k++) {
		const struct tracked_finding *t = &fs->v[k];
		struct tui_rank g = {.rank = -1, .state = '~', .waiting = true};
		int ranks[DIAG_MAX_WAITERS], nr = 0, w = top;

		if (!t->open || t->id == expanded)
			continue;
		for (int i = top; i < n; i++) {
			int at = snapshot_proc_at(s, d->ranks[i].pid);

			nr += at >= 0 && waits[at] == k && !d->ranks[i].culprit;
		}
		if (nr < 2)
			continue; /* not worth a group */
		nr = 0;
		for (int i = top; i < n; i++) {
			int at = snapshot_proc_at(s, d->ranks[i].pid);

			if (at >= 0 && waits[at] == k && !d->ranks[i].culprit) {
				if (nr < DIAG_MAX_WAITERS)
					ranks[nr] = d->ranks[i].rank;
				nr++;
				if (d->ranks[i].progress_age_s > g.progress_age_s)
					g.progress_age_s = d->ranks[i].progress_age_s;
				continue;
			}
			d->ranks[w++] = d->ranks[i];
		}
		g.group = nr;
		g.group_id = t->id;
		fmt_ranges(ranks, nr < DIAG_MAX_WAITERS ? nr : DIAG_MAX_WAITERS, g.members,
			   sizeof(g.members));
		snprintf(g.phase, sizeof(g.phase), "wait on %s %d", t->f.rank >= 0 ? "rank" : "pid",
			 t->f.rank >= 0 ? t->f.rank : t->f.pid);
		memmove(&d->ranks[top + 1], &d->ranks[top], (w - top) * sizeof(g));
		d->ranks[top++] = g;
		n = w + 1;
	}
	d->m.nranks = n;
}

static int prev_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct prev *)a)->id, y = ((const struct prev *)b)->id;

	return x < y ? -1 : x > y;
}

/* The previous snapshot's counters of connection id (d->prev is sorted by id) */
static const struct prev *prev_of(const struct dashboard *d, uint64_t id)
{
	struct prev key = {.id = id};

	return d->nprev ? bsearch(&key, d->prev, d->nprev, sizeof(key), prev_cmp) : NULL;
}

/* The connection procs[i] waits on, computed once per process and kept in wait (-2: not yet) */
static int waiting_of(const struct snapshot *s, const struct diag_config *cfg, int *wait, int i)
{
	if (i < 0)
		return -1;
	if (wait[i] == -2)
		wait[i] = cfg ? diagnose_waiting_conn(s, cfg, s->procs[i].pid) : -1;
	return wait[i];
}

/*
 * The transport NCCL's log names between a connection's two ranks, for its net connections (or
 * any, where no probe labelled them): not for bootstrap, proxy or RAS sockets.
 */
static void conn_via(const struct snapshot *s, const struct snap_conn *sc, char *buf, size_t len)
{
	struct snap_log_link k;

	buf[0] = '\0';
	if (sc->peer_pid <= 0 || (sc->nccl_label && strncmp(sc->nccl_label, "net", 3) &&
				  strncmp(sc->nccl_label, "ib", 2)))
		return;
	if (snap_log_link(s, sc->pid, sc->peer_pid, 0, &k))
		snap_log_link_transports(&k, buf, len);
}

static void conn_row(const struct dashboard *d, const struct snapshot *s, int i, struct tui_conn *t)
{
	const struct snap_conn *sc = &s->conns[i];
	const struct nt_conn *c = &sc->c;
	const struct prev *p = prev_of(d, sc->id);
	uint64_t eagain = c->send_eagain + c->recv_eagain;
	double dt;

	memset(t, 0, sizeof(*t));
	proc_name(s, sc->pid, t->from, sizeof(t->from));
	if (sc->peer_pid > 0)
		proc_name(s, sc->peer_pid, t->to, sizeof(t->to));
	else
		fmt_endpoint(&c->t, 0, t->to, sizeof(t->to));
	snprintf(t->label, sizeof(t->label), "%s", sc->nccl_label ? sc->nccl_label : "");
	conn_via(s, sc, t->via, sizeof(t->via));
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
}

/*
 * The connection's entry in next: its counters now, and its history moved on from prev (what
 * is left in prev afterwards is gone), sampled; none past DASH_HIST_CONNS connections
 */
static struct prev *next_prev(struct dashboard *d, const struct snapshot *s,
			      const struct snap_conn *sc, int *np)
{
	const struct nt_conn *c = &sc->c;
	struct prev *old = (struct prev *)prev_of(d, sc->id), *nx = &d->next[(*np)++];

	*nx = (struct prev){
		sc->id, s->now_ns, c->bytes_sent, c->bytes_recv, c->send_eagain + c->recv_eagain,
		NULL};
	if (old) {
		nx->h = old->h;
		old->h = NULL;
	}
	if (!nx->h && s->nconns <= DASH_HIST_CONNS)
		nx->h = calloc(1, sizeof(*nx->h));
	if (nx->h) {
		hist_sample(nx->h, c->bytes_sent + c->bytes_recv, s->now_ns);
		d->m.conn_spark_max = hist_max(nx->h, d->m.conn_spark_max);
	}
	return nx;
}

/*
 * Every open connection; from DASH_GROUP_RANKS ranks on, the waiting connections of a
 * finding's waiters (but the expanded finding's) are one row per finding: "31 ranks".
 */
static void build_conns(struct dashboard *d, const struct snapshot *s, const struct dash_info *in,
			enum tui_sort sort, const struct findings *fs, const int *waits)
{
	int nf = fs ? fs->n : 0, n = 0, np = 0, nranked = 0, wait[s->nprocs > 0 ? s->nprocs : 1];
	int group_at[nf > 0 ? nf : 1];
	bool mixed[nf > 0 ? nf : 1]; /* the group's connections go to more than one peer */
	struct prev *nx;

	for (int i = 0; i < s->nprocs; i++) {
		wait[i] = -2;
		nranked += s->procs[i].rank >= 0;
	}
	for (int k = 0; k < nf; k++) {
		group_at[k] = -1;
		mixed[k] = false;
	}
	d->m.conn_spark_max = 0;
	for (int i = 0; i < s->nconns; i++) {
		const struct snap_conn *sc = &s->conns[i];
		const struct nt_conn *c = &sc->c;
		int at = snapshot_proc_at(s, sc->pid), k;
		bool waiting;

		if ((c->flags & NT_CONN_LISTENER) || c->state == TCP_LISTEN || sc->closed)
			continue;
		nx = next_prev(d, s, sc, &np);
		waiting = waiting_of(s, in->cfg, wait, at) == i;
		k = at >= 0 ? waits[at] : -1;
		if (waiting && nranked >= DASH_GROUP_RANKS && k >= 0 && k < nf &&
		    fs->v[k].id != in->expanded) {
			struct tui_conn row;

			conn_row(d, s, i, &row);
			if (group_at[k] < 0) {
				group_at[k] = n;
				d->conns[n] = row;
				d->conns[n].group_id = fs->v[k].id;
				d->conns[n++].waiting = true;
			} else {
				struct tui_conn *g = &d->conns[group_at[k]];

				g->eagain_ps += row.eagain_ps;
				g->tx_bps += row.tx_bps;
				g->rx_bps += row.rx_bps;
				g->age_s = row.age_s > g->age_s ? row.age_s : g->age_s;
				g->retrans += row.retrans;
				mixed[k] = mixed[k] || strcmp(g->to, row.to);
			}
			d->conns[group_at[k]].group++;
			continue;
		}
		conn_row(d, s, i, &d->conns[n]);
		if (nx->h) {
			d->conns[n].nspark = nx->h->n;
			memcpy(d->conns[n].spark, nx->h->v, (size_t)nx->h->n * sizeof(nx->h->v[0]));
		}
		d->conns[n++].waiting = waiting;
	}
	for (int k = 0; k < nf; k++) {
		struct tui_conn *g = group_at[k] >= 0 ? &d->conns[group_at[k]] : NULL;
		const struct finding *f = &fs->v[k].f;

		if (!g)
			continue;
		snprintf(g->from, sizeof(g->from), "%d ranks", g->group);
		/* a ring's waiters each wait on their neighbour: the chain ends at the culprit */
		if (mixed[k] && f->rank >= 0)
			snprintf(g->to, sizeof(g->to), "chain to rank %d", f->rank);
		else if (mixed[k])
			snprintf(g->to, sizeof(g->to), "chain to pid %d", f->pid);
	}
	/* the counters of this snapshot are the next one's previous, sorted for the lookups */
	{
		struct prev *tmp = d->prev;

		for (int k = 0; k < d->nprev; k++)
			free(d->prev[k].h); /* a connection gone: its history with it */
		d->prev = d->next;
		d->next = tmp;
		d->nprev = np;
		if (np > 1)
			qsort(d->prev, np, sizeof(*d->prev), prev_cmp);
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
			o->early = t->open && !t->sure;
			o->transient = t->transient;
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

/* pid's history, looked for where the last one was found first (one order each snapshot) */
static struct phist *hist_of(struct dashboard *d, int pid, bool add)
{
	if (d->hint < d->nhist && d->hist[d->hint].pid == pid)
		return &d->hist[d->hint++];
	for (int k = 0; k < d->nhist; k++)
		if (d->hist[k].pid == pid) {
			d->hint = k + 1;
			return &d->hist[k];
		}
	if (!add || !grow((void **)&d->hist, &d->cap_h,
			  d->nhist < d->cap_h ? d->cap_h : 2 * d->cap_h + 16, sizeof(*d->hist)))
		return NULL;
	memset(&d->hist[d->nhist], 0, sizeof(*d->hist));
	d->hist[d->nhist].pid = pid;
	d->hint = d->nhist + 1;
	return &d->hist[d->nhist++];
}

/* Each process's bytes moved: its connections' sent and received, listeners apart */
static void sample_history(struct dashboard *d, const struct snapshot *s)
{
	for (int i = 0; i < s->nprocs; i++) {
		uint64_t total = 0;
		int n;
		const int *ci = snapshot_conns_of(s, i, &n);
		struct phist *h;

		if (!n || !(h = hist_of(d, s->procs[i].pid, true)))
			continue;
		for (int k = 0; k < n; k++)
			if (!(s->conns[ci[k]].c.flags & NT_CONN_LISTENER))
				total +=
					s->conns[ci[k]].c.bytes_sent + s->conns[ci[k]].c.bytes_recv;
		hist_sample(&h->h, total, s->now_ns);
	}
}

/* Each rank row's history, and the highest rate of all */
static void put_history(struct dashboard *d)
{
	d->m.spark_max = 0;
	for (int k = 0; k < d->nhist; k++)
		d->m.spark_max = hist_max(&d->hist[k].h, d->m.spark_max);
	for (int i = 0; i < d->m.nranks; i++) {
		struct tui_rank *r = &d->ranks[i];
		const struct phist *h = r->group ? NULL : hist_of(d, r->pid, false);

		r->nspark = h ? h->h.n : 0;
		if (h)
			memcpy(r->spark, h->h.v, (size_t)h->h.n * sizeof(h->h.v[0]));
	}
}

const struct tui_model *dashboard__update(struct dashboard *d, const struct snapshot *snap,
					  const struct findings *fs, const struct dash_info *in,
					  enum tui_sort sort)
{
	int nf = fs ? fs->n : 0, expected = -1, seen = 0, np = snap->nprocs > 0 ? snap->nprocs : 1;
	struct snapshot local = *snap, *s = &local;
	struct snap_index ix = {0};
	bool *culprit = malloc(np * sizeof(bool));
	int *waits = malloc(np * sizeof(int));

	/* lookups by pid and per process: thousands of ranks must not cost P x C per draw */
	if (!culprit || !waits || (!snap->ix && snapshot_index(snap, &ix))) {
		free(culprit);
		free(waits);
		return NULL;
	}
	if (!snap->ix)
		local.ix = &ix;

	if (!grow((void **)&d->ranks, &d->cap_r, s->nprocs + 1, sizeof(*d->ranks)) ||
	    !grow((void **)&d->conns, &d->cap_c, s->nconns + 1, sizeof(*d->conns)) ||
	    !grow((void **)&d->findings, &d->cap_f, nf + 1, sizeof(*d->findings))) {
		snapshot_index_free(&ix);
		free(culprit);
		free(waits);
		return NULL;
	}
	if (s->nconns + 1 > d->cap_p) {
		struct prev *a = realloc(d->prev, (s->nconns + 1) * sizeof(*a));
		struct prev *b;

		if (a)
			d->prev = a;
		b = a ? realloc(d->next, (s->nconns + 1) * sizeof(*b)) : NULL;
		if (!b) {
			snapshot_index_free(&ix);
			free(culprit);
			free(waits);
			return NULL;
		}
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
	d->m.suppressed = in->suppressed;
	d->m.job_done = in->job_done;
	d->m.log = in->log;
	d->m.nlog = in->nlog;
	build_ranks(d, s, fs, in->expanded, culprit, waits);
	sample_history(d, s);
	put_history(d);
	for (int i = 0; i < d->m.nranks; i++) {
		/* a merged job's (watch): each process's own host */
		const struct snap_proc *p =
			d->ranks[i].group ? NULL : snapshot_proc(s, d->ranks[i].pid);
		const char *host = p && p->host ? p->host : in->host;

		snprintf(d->ranks[i].host, sizeof(d->ranks[i].host), "%s",
			 d->ranks[i].group || !host ? "" : host);
	}
	for (int i = 0; i < s->nprocs; i++) {
		seen += s->procs[i].rank >= 0;
		if (s->procs[i].rank >= 0 && s->procs[i].world_size > 0)
			expected = s->procs[i].world_size;
	}
	d->m.ranks_seen = seen;
	d->m.ranks_expected = expected;
	build_conns(d, s, in, sort, fs, waits);
	build_findings(d, s, fs);
	snapshot_index_free(&ix);
	free(culprit);
	free(waits);
	return &d->m;
}
