// SPDX-License-Identifier: MIT
/*
 * NCCL setup blocking, which NCCL never reports: ranks inside communicator init or transport
 * setup while a rank of the job is not in it, and a rank whose connects NCCL retries silently.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/fmt.h"
#include "diagnose/rules.h"

/* d before t, 0 if t is not that late */
static uint64_t earlier(uint64_t t, uint64_t d)
{
	return t > d ? t - d : 0;
}

/* When p last entered setup cls (its outermost call's entry), 0: never */
static uint64_t entered(const struct snap_proc *p, int cls)
{
	return cls == SNAP_SETUP_INIT ? p->nccl_init_entered_ns : p->nccl_transport_entered_ns;
}

/* p entered setup cls with the waiters of the round from round_from on */
static bool entered_with(const struct snap_proc *p, int cls, uint64_t round_from)
{
	return entered(p, cls) && entered(p, cls) >= round_from;
}

/*
 * Attached to a first collective's setup under way (at_attach), p's stack then showed it
 * waiting on its GPU: its first collective launched, the setup behind it (the entries of the
 * ranks through it before the attach were never seen)
 */
static bool launched_at_attach(const struct snap_proc *p, int cls, uint64_t round_from,
			       bool at_attach)
{
	return cls == SNAP_SETUP_TRANSPORT && at_attach && p->gpu_wait_at_attach_ns &&
	       p->gpu_wait_at_attach_ns >= round_from;
}

/* The fewest collectives any member of each communicator launched (hashes as they come) */
struct least {
	uint64_t *hash, *total;
	int n;
};

static void least_build(const struct snapshot *s, struct least *l)
{
	l->n = 0;
	l->hash = malloc((s->ncomms + 1) * sizeof(*l->hash));
	l->total = malloc((s->ncomms + 1) * sizeof(*l->total));
	for (int i = 0; i < s->ncomms && l->hash && l->total; i++) {
		const struct snap_comm *c = &s->comms[i];
		int k = 0;

		if (!c->seq_ok || !c->hash)
			continue;
		while (k < l->n && l->hash[k] != c->hash)
			k++;
		if (k == l->n) {
			l->hash[l->n] = c->hash;
			l->total[l->n++] = snap_comm_total(c);
		} else if (snap_comm_total(c) < l->total[k]) {
			l->total[k] = snap_comm_total(c);
		}
	}
}

/*
 * Has p launched more collectives on a communicator than another member of it? Then it got
 * through that one's setup, whether its entry was seen or not (NCCL's counters, read from its
 * memory): it took part. The culprit of a first collective's setup has launched the fewest.
 */
static bool launched_ahead(const struct snapshot *s, const struct least *l,
			   const struct snap_proc *p)
{
	for (int i = 0; i < s->ncomms && l->hash && l->total; i++) {
		const struct snap_comm *c = &s->comms[i];

		if (c->pid != p->pid || !c->seq_ok)
			continue;
		for (int k = 0; k < l->n; k++)
			if (l->hash[k] == c->hash && snap_comm_total(c) > l->total[k])
				return true;
	}
	return false;
}

/*
 * The rank of the job (of WORLD_SIZE world, if known) that is not in setup cls, unnamed so far:
 * outside NCCL, stopped or exited (a live one first). A rank busy in another NCCL phase may be
 * progressing, perhaps slowly: never it; nor one that was inside a setup within the threshold
 * (left_after): it has just got through, ahead of the others (their setups end a moment
 * later), and is outside NCCL between its first collectives. Nor one that entered this setup
 * with the waiters (round_from: no earlier than a threshold before the first of them) and got
 * through alive: it took part. At scale most ranks do, their peers being there, and then wait for
 * their first collective outside NCCL (real NCCL's kernels run without the calling thread:
 * cudaStreamSynchronize), out of the setup for longer than the threshold like the rank that
 * never came; only that one has not entered it. The ranks of the others like it go into
 * others[].
 */
static const struct snap_proc *setup_culprit(const struct snapshot *s, const bool *named, int cls,
					     int world, uint64_t left_after, uint64_t round_from,
					     bool at_attach, const struct least *l, int *others,
					     int *nothers)
{
	const struct snap_proc *cul = NULL;

	*nothers = 0;
	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_proc *p = &s->procs[i];
		bool stopped = p->state == 'T' || p->state == 't';

		if (p->rank < 0 || (world > 0 && p->world_size != world) || p->nccl_setup == cls ||
		    (named && named[i]))
			continue;
		if (!p->exited && !stopped && p->nccl_phase[0])
			continue;
		if (!p->exited && p->nccl_setup_seen_ns > left_after)
			continue;
		if (!p->exited && (entered_with(p, cls, round_from) ||
				   launched_at_attach(p, cls, round_from, at_attach)))
			continue;
		/* attached to, its main thread not seen yet: maybe in it, maybe through it */
		if (snap_proc_unseen(p))
			continue;
		if (!p->exited && launched_ahead(s, l, p))
			continue;
		if (cul && (!cul->exited || p->exited)) {
			others[(*nothers)++] = p->rank;
			continue;
		}
		if (cul)
			others[(*nothers)++] = cul->rank;
		cul = p;
	}
	return cul;
}

/* The first RANK of world that no traced process has, -1 if none (or world unknown). */
static int missing_rank(const struct snapshot *s, int world)
{
	for (int r = 0; world > 0 && r < world; r++) {
		bool seen = false;

		for (int i = 0; i < s->nprocs && !seen; i++)
			seen = s->procs[i].rank == r && s->procs[i].world_size == world;
		if (!seen)
			return r;
	}
	return -1;
}

/*
 * A rank inside NCCL setup whose connects are refused: NCCL retries them silently for
 * NCCL_SOCKET_RETRY_CNT rounds (about a minute by default), and everyone waits meanwhile.
 */
void retry_findings(const struct snapshot *s, const struct diag_config *cfg, struct finding *out,
		    int *n, int max)
{
	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_proc *p = &s->procs[i];
		struct finding *f;
		char pn[48], ws[112];

		if (p->exited || p->nccl_setup == SNAP_SETUP_NONE || !p->nccl_retries ||
		    p->nccl_last_retry_ns < p->nccl_setup_since_ns ||
		    s->now_ns - p->nccl_setup_since_ns <= cfg->stall_threshold_ns ||
		    named_in(out, *n, p->pid) || *n >= max)
			continue;
		f = proc_finding(out, n, max,
				 p->nccl_setup == SNAP_SETUP_INIT ? FINDING_INIT_BLOCKED
								  : FINDING_RING_SETUP_BLOCKED,
				 p, p->nccl_setup_since_ns);
		/* the others in the same setup wait for it */
		for (int k = 0; k < s->nprocs; k++) {
			const struct snap_proc *w = &s->procs[k];

			if (w == p || w->exited || w->nccl_setup != p->nccl_setup)
				continue;
			push_waiter(s, f, w->pid);
			if (!f->peer_pid) {
				f->peer_pid = w->pid;
				f->peer_rank = w->rank;
			}
		}
		snap_proc_name(p, p->pid, pn, sizeof(pn));
		snprintf(f->phase, sizeof(f->phase), "%s (%s), connecting",
			 setup_name(p->nccl_setup), p->nccl_phase[0] ? p->nccl_phase : "?");
		waiter_list(s, f, ws, sizeof(ws));
		snprintf(f->summary, sizeof(f->summary),
			 "%s is blocked in NCCL %s for %.1fs: its connects to %s fail and NCCL "
			 "retries them silently (%llu so far)%s%s",
			 pn, setup_name(p->nccl_setup),
			 (double)(s->now_ns - f->since_ns) / NT_NSEC_PER_SEC,
			 p->nccl_retry_addr ? p->nccl_retry_addr : "?",
			 (unsigned long long)p->nccl_retries,
			 f->nwaiters ? "; waiting for it: " : "", f->nwaiters ? ws : "");
		add_evidence(f,
			     "%llu connect retries (socketConnectCheck), the last to %s %.1fs ago",
			     (unsigned long long)p->nccl_retries,
			     p->nccl_retry_addr ? p->nccl_retry_addr : "?",
			     (double)(s->now_ns - p->nccl_last_retry_ns) / NT_NSEC_PER_SEC);
		add_evidence(f, "%s in NCCL %s for %.1fs, now in %s", pn, setup_name(p->nccl_setup),
			     (double)(s->now_ns - p->nccl_setup_since_ns) / NT_NSEC_PER_SEC,
			     p->nccl_phase[0] ? p->nccl_phase : "?");
	}
}

/*
 * NCCL setup blocking, which NCCL never reports: ranks inside communicator init (bootstrap)
 * or transport setup (the lazy ring connect of the first collective) for longer than the
 * threshold, while a rank of the same job is not in it: outside NCCL, stopped, exited, or
 * never started. A rank busy in another NCCL phase may just be slow: no finding for it.
 */
/* "WHAT: ranks 0-3,7 (PRE each one's main thread POST)", if any */
static void ranks_evidence(struct finding *f, const char *what, int *ranks, int n, const char *pre,
			   const char *post)
{
	char rs[96];

	if (n)
		add_evidence(f, "%s: rank%s %s (%s %s main thread %s)", what, n > 1 ? "s" : "",
			     fmt_ranges(ranks, n, rs, sizeof(rs)), pre,
			     n > 1 ? "each one's" : "its", post);
}

/* The rank of the traced process listening on addr ("10.0.0.5:43517"), -1 if none */
static int rank_listening_on(const struct snapshot *s, const char *addr)
{
	char ep[64];

	for (int i = 0; i < s->nconns && addr[0]; i++) {
		const struct snap_conn *c = &s->conns[i];
		const struct snap_proc *p;

		if (!(c->c.flags & NT_CONN_LISTENER) || c->closed ||
		    strcmp(fmt_endpoint(&c->c.t, 1, ep, sizeof(ep)), addr))
			continue;
		p = snapshot_proc(s, c->pid);
		return p ? p->rank : -1;
	}
	return -1;
}

/*
 * "; its thread 12 polls ncclNetSocketConnect to 10.0.0.5:43517 (rank 5) for 7.8s, 391k
 * tries": the socket net's connect or accept it polls (counted in the kernel), "" if none
 */
static void net_poll_text(const struct snapshot *s, const struct snap_proc *w, char *buf,
			  size_t len)
{
	const struct snap_net_poll *np = &w->net_poll;
	int peer = np->probe == NT_P_NET_CONNECT ? rank_listening_on(s, np->addr) : -1;
	char n[24], to[80] = "";

	buf[0] = '\0';
	if (!np->probe)
		return;
	if (np->addr[0] && peer >= 0)
		snprintf(to, sizeof(to), " to %s (rank %d)", np->addr, peer);
	else if (np->addr[0])
		snprintf(to, sizeof(to), " to %s", np->addr);
	snprintf(buf, len, "; its thread %d polls %s%s for %.1fs, %s tries", np->tid,
		 np->probe == NT_P_NET_CONNECT ? "ncclNetSocketConnect" : "ncclNetSocketAccept", to,
		 (double)(s->now_ns > np->since_ns ? s->now_ns - np->since_ns : 0) /
			 NT_NSEC_PER_SEC,
		 fmt_count(np->calls, n, sizeof(n)));
}

/* The summary and evidence of a setup finding, its culprit (or missing rank) set. */
static void describe_setup(const struct snapshot *s, struct finding *f, int cls,
			   const struct snap_proc *cul, int missing, int world, int *others,
			   int nothers, uint64_t round_from, bool at_attach)
{
	char cn[64], ws[160], os[96];
	int nlaunched = 0;

	waiter_list(s, f, ws, sizeof(ws));
	if (cul) {
		describe_culprit(cul, f);
		snap_proc_name(cul, cul->pid, cn, sizeof(cn));
		if (cul->exited)
			add_evidence(f, "pid %d %s", cul->pid, f->phase);
		else
			add_evidence(f, "/proc/%d/stat state %c%s%s, not in NCCL %s", cul->pid,
				     cul->state, cul->where[0] ? ", main thread in " : "",
				     cul->where, setup_name(cls));
	} else {
		snprintf(f->phase, sizeof(f->phase), "never started");
		snprintf(cn, sizeof(cn), "rank %d", missing);
		add_evidence(f, "no traced process has RANK=%d (WORLD_SIZE=%d)", missing, world);
	}
	snprintf(f->summary, sizeof(f->summary),
		 "%s wait%s in NCCL %s for %.1fs for %s, which is not in it: %s", ws,
		 f->nwaiters > 1 ? "" : "s", setup_name(cls),
		 (double)(s->now_ns - f->since_ns) / NT_NSEC_PER_SEC, cn, f->phase);
	if (nothers)
		add_evidence(f, "not in it either: rank%s %s", nothers > 1 ? "s" : "",
			     fmt_ranges(others, nothers, os, sizeof(os)));
	/* why the ranks outside it that the probes never saw enter it are not named */
	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_proc *p = &s->procs[i];

		if (p->rank >= 0 && !p->exited && p->nccl_setup != cls &&
		    !entered_with(p, cls, round_from) &&
		    launched_at_attach(p, cls, round_from, at_attach))
			others[nlaunched++] = p->rank;
	}
	ranks_evidence(f, "through it before the attach", others, nlaunched, "the attach found",
		       "waiting on the GPU, outside NCCL: a CUDA synchronize");
	nlaunched = 0;
	for (int i = 0; i < s->nprocs; i++)
		if (s->procs[i].rank >= 0 && s->procs[i].nccl_setup != cls &&
		    snap_proc_unseen(&s->procs[i]))
			others[nlaunched++] = s->procs[i].rank;
	ranks_evidence(f, "not known", others, nlaunched, "attached to,",
		       "did not stop for its stack yet");
	for (int k = 0; k < f->nwaiters && f->nevidence < DIAG_MAX_EVIDENCE - 1; k++) {
		const struct snap_proc *w = snapshot_proc(s, f->waiters[k].pid);
		char wn[48], poll[128];

		snap_proc_name(w, w->pid, wn, sizeof(wn));
		net_poll_text(s, w, poll, sizeof(poll));
		add_evidence(f, "%s in NCCL %s for %.1fs%s, now in %s%s", wn, setup_name(cls),
			     (double)(s->now_ns - w->nccl_setup_since_ns) / NT_NSEC_PER_SEC,
			     w->nccl_setup_at_attach ? " at least (since the attach: its stack "
						       "showed it inside already)"
						     : "",
			     w->nccl_phase[0] ? w->nccl_phase : "?", poll);
	}
}

/*
 * The ranks that entered the setup with the waiters and got through (their neighbours were
 * there): they wait too, through the others, for what those wait for (the collective they
 * connected for cannot run without the culprit). Listed as waiters after the summary, which
 * names those inside the setup.
 */
static void through_waiters(const struct snapshot *s, struct finding *f, int cls,
			    uint64_t round_from, const struct least *l, int *ranks)
{
	int nr = 0;

	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_proc *p = &s->procs[i];

		if (p->rank < 0 || p->exited || p->pid == f->pid || p->nccl_setup == cls ||
		    !(entered_with(p, cls, round_from) || launched_ahead(s, l, p)))
			continue;
		add_waiter(s, f, p->pid);
		ranks[nr++] = p->rank;
	}
	ranks_evidence(f, "waiting through them", ranks, nr, "through the setup with them,",
		       "since outside it");
}

void setup_findings(const struct snapshot *s, const struct diag_config *cfg, struct finding *out,
		    int *n, int max)
{
	int np = s->nprocs > 0 ? s->nprocs : 1, *others = malloc(np * sizeof(int));
	struct least l;

	/* the communicators' fewest launches, once for both setups' culprits and waiters */
	least_build(s, &l);
	for (int cls = SNAP_SETUP_INIT; cls <= SNAP_SETUP_TRANSPORT && others; cls++) {
		const struct snap_proc *longest = NULL, *cul;
		int world = -1, missing = -1, nothers = 0, nw = 0;
		uint64_t round_from;
		bool *named = named_set(s, out, *n);
		struct finding *f;

		for (int i = 0; i < s->nprocs; i++) {
			const struct snap_proc *p = &s->procs[i];

			if (p->rank < 0 || p->exited || p->nccl_setup != cls ||
			    s->now_ns - p->nccl_setup_since_ns <= cfg->stall_threshold_ns ||
			    (named && named[i]))
				continue;
			nw++;
			if (!longest || p->nccl_setup_since_ns < longest->nccl_setup_since_ns)
				longest = p;
			if (p->world_size > 0)
				world = p->world_size;
		}
		round_from =
			nw ? earlier(longest->nccl_setup_since_ns, cfg->stall_threshold_ns) : 0;
		cul = nw ? setup_culprit(s, named, cls, world,
					 earlier(s->now_ns, cfg->stall_threshold_ns), round_from,
					 longest->nccl_setup_at_attach, &l, others, &nothers)
			 : NULL;
		if (nw && !cul)
			missing = missing_rank(s, world);
		if (!nw || (!cul && missing < 0) || !(f = new_finding(out, n, max))) {
			free(named);
			continue;
		}
		f->since_ns = longest->nccl_setup_since_ns;
		f->peer_pid = longest->pid;
		f->peer_rank = longest->rank;
		for (int i = 0; i < s->nprocs; i++) {
			const struct snap_proc *p = &s->procs[i];

			if (p->rank >= 0 && !p->exited && p->nccl_setup == cls &&
			    s->now_ns - p->nccl_setup_since_ns > cfg->stall_threshold_ns &&
			    !(named && named[i]))
				push_waiter(s, f, p->pid);
		}
		free(named);
		f->pid = cul ? cul->pid : 0;
		f->rank = cul ? cul->rank : missing;
		f->kind = !cul					   ? FINDING_PEER_DEAD
			  : cul->exited				   ? FINDING_PEER_DEAD
			  : cul->state == 'T' || cul->state == 't' ? FINDING_PEER_STOPPED
			  : cls == SNAP_SETUP_INIT		   ? FINDING_INIT_BLOCKED
								   : FINDING_RING_SETUP_BLOCKED;
		describe_setup(s, f, cls, cul, missing, world, others, nothers, round_from,
			       longest->nccl_setup_at_attach);
		through_waiters(s, f, cls, round_from, &l, others);
	}
	free(others);
	free(l.hash);
	free(l.total);
}
