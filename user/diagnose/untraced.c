// SPDX-License-Identifier: MIT
/*
 * One host's tracer in a job of several: its ranks' waits on an untraced peer (a rank of another
 * host) beside a culprit of its own. A ring carries one stop around every host: rank 1 asleep
 * here holds the other host's ranks, which then hold this host's rank 3 on its socket to them.
 * Measured on two nodes of 4 ranks, node 0's tracer named rank 1 and opened a second finding,
 * "rank 3 waits on ... (untraced peer silent)", for the same stop (issue 51). One finding per
 * root cause: that wait joins the culprit's finding as evidence, where the snapshot shows it is
 * the same stop, and only there:
 *   - it began no earlier than the wait on the culprit (its silence is no older);
 *   - its waiters launched as many collectives on a communicator of the culprit as the
 *     culprit's own waiters there, and the culprit no more (the same collective, held up);
 *   - nothing of its own: no NCCL warning or IB error of its waiters, no setup they are in, no
 *     end the other host closed, no socket NCCL uses for anything but its network transport.
 * Else, or without counters, it stays its own finding, as it was: a duplicate is bad, a wait
 * with another cause folded into the wrong culprit worse.
 * Where no culprit is named here, the wait's own finding says what the counters show of this
 * host's ranks (none behind), never that the other host's ranks wait too: no field tells that;
 * and a wait older than this host's last launch, within the threshold of it, is no finding: the
 * stop it belonged to is ending (stop_ending()).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diagnose/rules.h"
#include "util/fmt.h"

#define NO_COUNT UINT64_MAX

/* A finding with a culprit of its own here, a rank at the end of a chain of waits */
static bool names_culprit(const struct finding *f)
{
	return f->pid > 0 && f->rank >= 0 && !f->cycle &&
	       (f->kind == FINDING_STALL || f->kind == FINDING_PEER_DEAD ||
		f->kind == FINDING_PEER_STOPPED);
}

/* A wait on an address nobody here traced, silent (not a connect nobody answers) */
static bool untraced_wait(const struct finding *f)
{
	return f->pid == 0 && f->conn >= 0 && f->kind == FINDING_STALL && !f->cycle;
}

static bool same_remote(const struct snap_conn *a, const struct snap_conn *b)
{
	return a->c.t.family == b->c.t.family && a->c.t.dport == b->c.t.dport &&
	       !memcmp(a->c.t.daddr, b->c.t.daddr, sizeof(a->c.t.daddr));
}

/*
 * Does the wait on the untraced peer show a cause of its own? Its waiters warned or failed,
 * are in a setup, or the other end closed a socket they wait on there; or it is a socket
 * NCCL labelled as other than its network transport's (bootstrap, a proxy's).
 */
static bool own_cause(const struct snapshot *s, const struct diag_config *cfg,
		      const struct finding *u)
{
	const struct snap_conn *uc = &s->conns[u->conn];

	if (uc->nccl_label && strncmp(uc->nccl_label, "net", 3) && strncmp(uc->nccl_label, "ib", 2))
		return true;
	for (int k = 0; k < u->nwaiters; k++) {
		const struct snap_proc *p = snapshot_proc(s, u->waiters[k].pid);
		int ci = diagnose_waiting_conn(s, cfg, u->waiters[k].pid);
		const struct snap_conn *c = ci >= 0 ? &s->conns[ci] : NULL;

		if (!p || p->exited || p->nccl_warning || p->ib_err ||
		    p->nccl_setup != SNAP_SETUP_NONE)
			return true;
		if (c && same_remote(c, uc) && (c->c.recv_eof || c->closed))
			return true;
	}
	return uc->c.recv_eof || uc->closed;
}

/*
 * Each process's collectives launched on communicator hash (all functions together), by its
 * position in s->procs; NO_COUNT where it is no live member
 */
static void comm_counts(const struct snapshot *s, uint64_t hash, uint64_t *tot)
{
	for (int i = 0; i < s->nprocs; i++)
		tot[i] = NO_COUNT;
	for (int j = 0; j < s->ncomms; j++) {
		const struct snap_comm *c = &s->comms[j];
		int at;

		if (c->hash != hash || !c->seq_ok || c->destroyed ||
		    (at = snapshot_proc_at(s, c->pid)) < 0)
			continue;
		tot[at] = snap_comm_total(c);
	}
}

static uint64_t count_of(const struct snapshot *s, const uint64_t *tot, int pid)
{
	int at = snapshot_proc_at(s, pid);

	return at >= 0 ? tot[at] : NO_COUNT;
}

/*
 * Is every waiter of u in the collective f's waiters wait in, on communicator hash (tot: its
 * counts)? f's waiters that are not u's all launched the same number there, the culprit no
 * more, and each of u's waiters as many. *ref: those waiters' ranks, for the evidence.
 */
static bool same_collective(const struct snapshot *s, const struct finding *f,
			    const struct finding *u, const uint64_t *tot, const bool *in_u,
			    char *ref, size_t len)
{
	uint64_t want = NO_COUNT, cul = count_of(s, tot, f->pid);
	int nr = 0, *ranks = malloc((f->nwaiters > 0 ? f->nwaiters : 1) * sizeof(int));
	bool ok = ranks && cul != NO_COUNT;

	for (int k = 0; ok && k < f->nwaiters; k++) {
		int at = snapshot_proc_at(s, f->waiters[k].pid);

		if (at < 0 || in_u[at] || tot[at] == NO_COUNT)
			continue;
		if (want != NO_COUNT && tot[at] != want)
			ok = false;
		want = tot[at];
		if (f->waiters[k].rank >= 0)
			ranks[nr++] = f->waiters[k].rank;
	}
	ok = ok && want != NO_COUNT && cul <= want;
	for (int k = 0; ok && k < u->nwaiters; k++)
		ok = count_of(s, tot, u->waiters[k].pid) == want;
	if (ok && nr) {
		char rs[128];

		fmt_ranges(ranks, nr, rs, sizeof(rs));
		snprintf(ref, len, "rank%s %s", nr > 1 ? "s" : "", rs);
	} else if (ok) {
		snprintf(ref, len, "its waiters");
	}
	free(ranks);
	return ok;
}

/* "rank 3 (pid 103) also waits" or "ranks 3,4 also wait": u's waiters */
static void untraced_waiters(const struct snapshot *s, const struct finding *u, char *buf,
			     size_t len)
{
	char ws[160];

	if (u->nwaiters == 1) {
		snap_proc_name(snapshot_proc(s, u->waiters[0].pid), u->waiters[0].pid, ws,
			       sizeof(ws));
		snprintf(buf, len, "%s also waits", ws);
	} else {
		waiter_list(s, u, ws, sizeof(ws));
		snprintf(buf, len, "%s also wait", ws);
	}
}

/* u's peer: "10.0.0.2:40000", or "rank 4 at 10.0.0.2:40000" where the waiter's log names it */
static void untraced_peer(const struct snapshot *s, const struct finding *u, char *buf, size_t len)
{
	char ep[64];

	fmt_endpoint(&s->conns[u->conn].c.t, 0, ep, sizeof(ep));
	if (u->remote_named)
		snprintf(buf, len, "rank %d at %s", u->remote_rank, ep);
	else
		snprintf(buf, len, "%s", ep);
}

/* f's culprit's communicator on which u's wait is f's: its hash, 0 if none */
static uint64_t joins(const struct snapshot *s, const struct finding *f, const struct finding *u,
		      uint64_t *tot, bool *in_u, char *ref, size_t len)
{
	if (u->since_ns < f->since_ns)
		return 0;
	for (int k = 0; k < u->nwaiters; k++)
		if (u->waiters[k].pid == f->pid)
			return 0; /* the culprit's own wait: another story */
	for (int j = 0; j < s->ncomms; j++) {
		const struct snap_comm *c = &s->comms[j];

		if (c->pid != f->pid || !c->seq_ok)
			continue;
		comm_counts(s, c->hash, tot);
		if (same_collective(s, f, u, tot, in_u, ref, len))
			return c->hash;
	}
	return 0;
}

/* u's waiters into f, and a line of f's evidence saying what u was */
static void join(const struct snapshot *s, struct finding *f, const struct finding *u,
		 uint64_t hash, const char *ref)
{
	char who[200], peer[96], cul[48];

	untraced_waiters(s, u, who, sizeof(who));
	untraced_peer(s, u, peer, sizeof(peer));
	snprintf(cul, sizeof(cul), "rank %d", f->rank);
	add_evidence(f,
		     "%s on %s, a rank of another host (untraced), silent since after the wait on "
		     "%s began; as many collectives launched on comm %016llx as %s",
		     who, peer, cul, (unsigned long long)hash, ref);
	for (int k = 0; k < u->nwaiters; k++)
		add_waiter(s, f, u->waiters[k].pid);
}

/*
 * No culprit here: what the counters show of this host's ranks on the communicator of u's
 * waiters, where they all launched as many collectives. Not that the other host's ranks wait
 * too: nothing here says they launched it (NCCL counts a launch before the GPU has run the
 * previous collective, so bytes after a launch may be the previous one's).
 */
static void local_counts(const struct snapshot *s, struct finding *u, uint64_t *tot)
{
	const struct snap_proc *w0 = snapshot_proc(s, u->waiters[0].pid);

	for (int j = 0; w0 && j < s->ncomms; j++) {
		const struct snap_comm *c = &s->comms[j];
		uint64_t want = snap_comm_total(c), moved = 0;
		int nr = 0, nm = 0, ranks[64];
		bool ok = true;
		char rs[160] = "";

		if (c->pid != w0->pid || !c->seq_ok || c->destroyed || !want)
			continue;
		for (int i = 0; ok && i < s->ncomms; i++) {
			const struct snap_comm *m = &s->comms[i];
			const struct snap_proc *p = snapshot_proc(s, m->pid);

			if (m->hash != c->hash || !m->seq_ok || m->destroyed)
				continue;
			ok = snap_comm_total(m) == want;
			moved = m->changed_ns > moved ? m->changed_ns : moved;
			nm++;
			if (p && p->rank >= 0 && nr < (int)(sizeof(ranks) / sizeof(ranks[0])))
				ranks[nr++] = p->rank;
		}
		comm_counts(s, c->hash, tot);
		for (int k = 0; ok && k < u->nwaiters; k++)
			ok = count_of(s, tot, u->waiters[k].pid) == want;
		if (!ok || nm < 2)
			continue;
		/* the ranks where each member has one, else their number */
		if (nr == nm)
			fmt_ranges(ranks, nr, rs, sizeof(rs));
		add_evidence(u,
			     "the %d ranks of comm %016llx traced here%s%s%s launched %llu "
			     "collectives each, unchanged for %.1fs: none here is behind on NCCL's "
			     "counters",
			     nm, (unsigned long long)c->hash, rs[0] ? " (ranks " : "", rs,
			     rs[0] ? ")" : "", (unsigned long long)want,
			     (double)(s->now_ns - moved) / NT_NSEC_PER_SEC);
		return;
	}
}

/*
 * The end of a stop: a communicator of u's first waiter whose members here all launched as many
 * collectives, one of them over a second after u's silence began and within their threshold. The rank that
 * held them all has just launched; the other host's ranks get their data a moment later, and
 * the wait on them is the stop's last tick, not a hang of its own (real NCCL, two nodes of 4:
 * node 0's tracer opened it for one tick as rank 1 woke, its culprit's finding closing). A wait
 * that outlasts the threshold after that launch is its own finding again.
 */
static bool stop_ending(const struct snapshot *s, const struct diag_config *cfg,
			const struct finding *u)
{
	const struct snap_proc *w0 = snapshot_proc(s, u->waiters[0].pid);
	int mem[s->ncomms > 0 ? s->ncomms : 1];

	for (int j = 0; w0 && j < s->ncomms; j++) {
		const struct snap_comm *c = &s->comms[j];
		uint64_t want = snap_comm_total(c), moved = 0;
		int nm = 0;
		bool equal = true;

		if (c->pid != w0->pid || !c->seq_ok || c->destroyed || !want)
			continue;
		for (int i = 0; i < s->ncomms; i++) {
			const struct snap_comm *m = &s->comms[i];

			if (m->hash != c->hash || !m->seq_ok || m->destroyed)
				continue;
			equal &= snap_comm_total(m) == want;
			moved = m->changed_ns > moved ? m->changed_ns : moved;
			mem[nm++] = i;
		}
		/* over a second after: counts are read at ticks, a launch seen up to one late */
		if (equal && nm >= 2 && moved > u->since_ns + NT_NSEC_PER_SEC &&
		    s->now_ns - moved <= members_threshold(s, cfg, mem, nm))
			return true;
	}
	return false;
}

void untraced_findings(const struct snapshot *s, const struct diag_config *cfg, struct finding *out,
		       int *n)
{
	int np = s->nprocs > 0 ? s->nprocs : 1;
	uint64_t *tot = malloc(np * sizeof(*tot));
	bool *in_u = malloc(np * sizeof(*in_u));

	bool culprit = false;

	for (int i = 0; i < *n; i++)
		culprit |= names_culprit(&out[i]);
	for (int i = 0; tot && in_u && i < *n; i++) {
		struct finding *u = &out[i];
		uint64_t hash = 0;
		char ref[160];
		int fi = -1;
		bool mine;

		if (!untraced_wait(u) || !u->nwaiters)
			continue;
		mine = own_cause(s, cfg, u);
		memset(in_u, 0, np * sizeof(*in_u));
		for (int k = 0; k < u->nwaiters; k++) {
			int at = snapshot_proc_at(s, u->waiters[k].pid);

			if (at >= 0)
				in_u[at] = true;
		}
		for (int j = 0; j < *n && !hash && !mine; j++)
			if (j != i && names_culprit(&out[j]) &&
			    (hash = joins(s, &out[j], u, tot, in_u, ref, sizeof(ref))))
				fi = j;
		if (!hash && !mine && !culprit && stop_ending(s, cfg, u)) {
			remove_finding(out, n, i--);
			continue;
		}
		if (!hash) {
			if (!culprit)
				local_counts(s, u, tot);
			continue;
		}
		join(s, &out[fi], u, hash, ref);
		remove_finding(out, n, i--);
	}
	free(tot);
	free(in_u);
}
