// SPDX-License-Identifier: MIT
/*
 * NCCL's own collective counters (comm->seqNumber[], sampled from the ranks' memory), the only
 * evidence without sockets (NVLink, SHM): the rank behind while the others wait, and ranks in
 * different collectives (a mismatch). On NCCL 2.18-2.22 only the collectives launched in all
 * are known (comm->sharedRes->collOpCount): they name a rank behind, never a function
 * mismatch. The plugin's latched mismatch is collmm.c's, the rank last at each step
 * straggler.c's.
 *
 * Over 700 lines on purpose: the rank-behind and the mismatch rules read the same per-comm
 * tables (members by state, their counts, sources per build) built here once; split, each would
 * rebuild them or export them as a second header of internals.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "diagnose/rules.h"
#include "util/fmt.h"

/* ncclDataType_t */
static const char *dtype_name(int t)
{
	static const char *const n[] = {"int8",	   "uint8",    "int32",	     "uint32",
					"int64",   "uint64",   "float16",    "float32",
					"float64", "bfloat16", "float8e4m3", "float8e5m2"};

	return t >= 0 && t < (int)(sizeof(n) / sizeof(n[0])) ? n[t] : "?";
}

/* "count 65536 float32", with the root where the collective has one */
void coll_args(int coll, uint64_t count, int dtype, int root, char *buf, size_t len)
{
	int o = snprintf(buf, len, "count %llu %s", (unsigned long long)count, dtype_name(dtype));

	if ((coll == 0 || coll == 1 || coll >= 6) && o > 0 && (size_t)o < len)
		snprintf(buf + o, len - o, " %s %d", coll >= 6 ? "peer" : "root", root);
}

/* ncclFuncSendRecv, Send, Recv: point-to-point, whose peers differ across ranks by design */
static bool is_p2p(int coll)
{
	return coll >= 5 && coll <= 7;
}

static bool same_args(const struct snap_comm *a, const struct snap_comm *b)
{
	return a->last_coll == b->last_coll && a->last_count == b->last_count &&
	       a->last_root == b->last_root && a->last_dtype == b->last_dtype;
}

/* The members of the communicator of comms[i], if i is its first member; returns how many. */
static int comm_members(const struct snapshot *s, int i, int *mem)
{
	int n = 0;

	for (int j = 0; j < s->ncomms; j++) {
		if (!s->comms[j].seq_ok || s->comms[j].hash != s->comms[i].hash)
			continue;
		if (j < i)
			return 0;
		mem[n++] = j;
	}
	return n;
}

/* The collective a member is in: the function it launched the most of beyond the slowest. */
static int member_coll(const struct snap_comm *c, const uint64_t *lo)
{
	int best = -1;
	uint64_t d = 0;

	for (int f = 0; f < SNAP_NSEQ; f++)
		if (c->seq[f] - lo[f] > d) {
			d = c->seq[f] - lo[f];
			best = f;
		}
	return best;
}

/* What a member's counters say, without its name: the part its like-counted peers share */
static void counts_text(const struct snap_comm *c, char *buf, size_t len)
{
	char counts[128] = "";
	size_t off = 0;

	for (int k = 0; k < SNAP_NSEQ && off + 24 < sizeof(counts); k++)
		if (c->seq[k])
			off += snprintf(counts + off, sizeof(counts) - off, "%s%s %llu",
					off ? ", " : "", snap_coll_name(k),
					(unsigned long long)c->seq[k]);
	/* NCCL 2.18-2.22: the collectives in all, whatever their functions */
	if (c->total_only && c->total)
		off = snprintf(counts, sizeof(counts), "%llu collective%s (all functions together)",
			       (unsigned long long)c->total, c->total > 1 ? "s" : "");
	if (c->destroyed)
		snprintf(buf, len, "destroyed comm %016llx (ncclCommDestroy) after launching %s",
			 (unsigned long long)c->hash, off ? counts : "no collective");
	else
		snprintf(buf, len, "launched %s on comm %016llx (%s%s)",
			 off ? counts : "no collective", (unsigned long long)c->hash,
			 snap_src_name(c->seq_src),
			 c->scanned ? "; comm found by a memory scan at attach" : "");
}

static void args_text(const struct snap_comm *c, char *buf, size_t len)
{
	char a[96];

	buf[0] = '\0';
	if (c->last_coll < 0)
		return;
	coll_args(c->last_coll, c->last_count, c->last_dtype, c->last_root, a, sizeof(a));
	snprintf(buf, len, "last launched %s, %s (%s)", snap_coll_name(c->last_coll), a,
		 snap_src_name(c->args_src));
}

/*
 * "rank 7 (pid 4711)" for one member, "ranks 0-6,8-15 (15)" for several: members mem[k] for
 * which same[k] is set
 */
static void members_text(const struct snapshot *s, const int *mem, const bool *same, int nm,
			 char *buf, size_t len)
{
	int ranks[nm], nr = 0, one = -1;
	char rl[160];

	for (int k = 0; k < nm; k++) {
		const struct snap_proc *p = snapshot_proc(s, s->comms[mem[k]].pid);

		if (!same[k])
			continue;
		one = one < 0 ? k : one;
		if (p && p->rank >= 0)
			ranks[nr++] = p->rank;
	}
	if (one < 0) {
		buf[0] = '\0';
	} else if (nr <= 1) {
		snap_proc_name(snapshot_proc(s, s->comms[mem[one]].pid), s->comms[mem[one]].pid,
			       buf, len);
	} else {
		fmt_ranges(ranks, nr, rl, sizeof(rl));
		snprintf(buf, len, "ranks %s (%d)", rl, nr);
	}
}

/*
 * Where each member's counters stand, one line per state shared: the culprit's (pid first)
 * first, then the others as ranges, so that thousands of ranks fit in a few lines.
 */
void comm_evidence(const struct snapshot *s, struct finding *f, const int *mem, int nm,
		   int first_pid)
{
	bool done[nm > 0 ? nm : 1], same[nm > 0 ? nm : 1];
	char key[nm > 0 ? nm : 1][224], args[160], who[200];
	int order[nm > 0 ? nm : 1], no = 0;

	for (int k = 0; k < nm; k++) {
		counts_text(&s->comms[mem[k]], key[k], sizeof(key[k]));
		done[k] = false;
		if (s->comms[mem[k]].pid == first_pid)
			order[no++] = k;
	}
	for (int k = 0; k < nm; k++)
		if (s->comms[mem[k]].pid != first_pid)
			order[no++] = k;
	for (int o = 0; o < no; o++) {
		int k = order[o];
		uint64_t oldest = s->comms[mem[k]].changed_ns;

		if (done[k])
			continue;
		for (int j = 0; j < nm; j++) {
			same[j] = !done[j] && !strcmp(key[j], key[k]);
			if (same[j] && s->comms[mem[j]].changed_ns < oldest)
				oldest = s->comms[mem[j]].changed_ns;
			done[j] = done[j] || same[j];
		}
		members_text(s, mem, same, nm, who, sizeof(who));
		if (s->comms[mem[k]].destroyed)
			add_evidence(f, "%s %s, %.1fs ago", who, key[k],
				     (double)(s->now_ns - oldest) / NT_NSEC_PER_SEC);
		else
			/* found at attach: first read then, its counts before unknown */
			add_evidence(f, "%s %s, unchanged for %.1fs%s", who, key[k],
				     (double)(s->now_ns - oldest) / NT_NSEC_PER_SEC,
				     s->comms[mem[k]].scanned ? " at least (since the attach)"
							      : "");
		args_text(&s->comms[mem[k]], args, sizeof(args));
		if (args[0])
			add_evidence(f, "%s %s", who, args);
	}
}

/* "rank 1" or "pid 4711": a member by its process */
void comm_member_name(const struct snapshot *s, const struct snap_comm *c, char *buf, size_t len)
{
	const struct snap_proc *p = snapshot_proc(s, c->pid);

	if (p && p->rank >= 0)
		snprintf(buf, len, "rank %d", p->rank);
	else
		snprintf(buf, len, "comm rank %d (pid %d)", c->rank, c->pid);
}

/*
 * Members whose signature (sig[k]) is the rarest: the odd ones out. Ties go to the signature
 * with the smallest weight (the function launched least over the whole communicator).
 */
int odd_signature(const int *sig, const uint64_t *weight, int nm)
{
	int best = -1, best_n = 0;
	bool tie = false;

	for (int k = 0; k < nm; k++) {
		int cnt = 0;

		for (int j = 0; j < nm; j++)
			cnt += sig[j] == sig[k];
		if (best < 0 || cnt < best_n || (cnt == best_n && weight[k] < weight[best])) {
			tie = best >= 0 && cnt == best_n && weight[k] == weight[best] &&
			      sig[k] != sig[best];
			best = k;
			best_n = cnt;
		} else if (cnt == best_n && weight[k] == weight[best] && sig[k] != sig[best]) {
			tie = true;
		}
	}
	/* two signatures as rare and as likely (two ranks, say): which is odd cannot be told */
	return tie ? -1 : sig[best];
}

/* Drop socket findings that name a process as culprit that the counters show waiting. */
static void drop_explained(const struct snapshot *s, struct finding *out, int *n, int pid,
			   struct finding *keep)
{
	for (int i = 0; i < *n; i++)
		if (&out[i] != keep && out[i].pid == pid && !out[i].comm_hash) {
			if (keep)
				for (int k = 0; k < out[i].nwaiters; k++)
					if (out[i].waiters[k].pid != keep->pid)
						add_waiter(s, keep, out[i].waiters[k].pid);
			remove_finding(out, n, i);
			return;
		}
}

/*
 * One finding per communicator: the odd members (signature odd) against the others, since
 * since; tail ends the summary. The counts of each member follow as evidence.
 */
/*
 * A mismatch without a culprit: as many ranks on each side, and none broke its own pattern more
 * than the other (two ranks, say). Naming one would be a guess: every member is listed, none
 * named.
 */
static struct finding *undecided_mismatch(const struct snapshot *s, const int *mem, int nm,
					  char (*desc)[COLL_DESC_LEN], uint64_t since,
					  const char *tail, struct finding *out, int *n, int max)
{
	struct finding *f = new_finding(out, n, max);
	char who[160] = "";
	size_t off = 0;

	if (!f)
		return NULL;
	f->kind = FINDING_COLLECTIVE_MISMATCH;
	f->rank = -1;
	f->comm_hash = s->comms[mem[0]].hash;
	f->since_ns = since;
	for (int k = 0; k < nm; k++) {
		char mn[48];

		add_waiter(s, f, s->comms[mem[k]].pid);
		comm_member_name(s, &s->comms[mem[k]], mn, sizeof(mn));
		if (off + 8 < sizeof(who))
			off += snprintf(who + off, sizeof(who) - off, "%s%s in %s", k ? ", " : "",
					mn, desc[k]);
	}
	snprintf(f->phase, sizeof(f->phase), "which rank is odd cannot be told");
	snprintf(f->summary, sizeof(f->summary),
		 "collective mismatch on comm %016llx: %s; %s; which of them is wrong cannot be "
		 "told (as many on each side, neither broke its own pattern)",
		 (unsigned long long)f->comm_hash, who, tail);
	return f;
}

struct finding *mismatch_finding(const struct snapshot *s, const int *mem, int nm, const int *sig,
				 int odd, char (*desc)[COLL_DESC_LEN], uint64_t since,
				 const char *tail, struct finding *out, int *n, int max)
{
	const struct snap_comm *cul = NULL;
	struct finding *f;
	char ws[112], odds[112] = "";
	const char *theirs = "";
	size_t off = 0;

	for (int k = 0; k < nm; k++) {
		if (sig[k] == odd && !cul)
			cul = &s->comms[mem[k]];
		if (sig[k] != odd && !theirs[0])
			theirs = desc[k];
	}
	/* every member waits on the others: socket findings among them say nothing more */
	for (int k = 0; k < nm; k++)
		drop_explained(s, out, n, s->comms[mem[k]].pid, NULL);
	if (odd < 0)
		return undecided_mismatch(s, mem, nm, desc, since, tail, out, n, max);
	f = new_finding(out, n, max);
	if (!f)
		return NULL;
	f->kind = FINDING_COLLECTIVE_MISMATCH;
	f->pid = cul->pid;
	f->rank = snapshot_proc(s, cul->pid) ? snapshot_proc(s, cul->pid)->rank : -1;
	f->comm_hash = cul->hash;
	f->since_ns = since;
	for (int k = 0; k < nm; k++) {
		const struct snap_comm *c = &s->comms[mem[k]];
		char mn[48];

		if (sig[k] == odd) {
			if (off + 40 < sizeof(odds)) {
				comm_member_name(s, c, mn, sizeof(mn));
				off += snprintf(odds + off, sizeof(odds) - off, "%s%s",
						off ? "," : "", mn);
			}
			continue;
		}
		add_waiter(s, f, c->pid);
		if (!f->peer_pid) {
			f->peer_pid = c->pid;
			f->peer_rank =
				snapshot_proc(s, c->pid) ? snapshot_proc(s, c->pid)->rank : -1;
		}
	}
	waiter_list(s, f, ws, sizeof(ws));
	for (int k = 0; k < nm; k++)
		if (&s->comms[mem[k]] == cul)
			snprintf(f->phase, sizeof(f->phase), "%s", desc[k]);
	snprintf(f->summary, sizeof(f->summary),
		 "collective mismatch on comm %016llx: %s in %s, %s in %s; %s",
		 (unsigned long long)cul->hash, odds, f->phase, ws, theirs, tail);
	return f;
}

/* The latest change of the members' counts: when the communicator last moved */
uint64_t members_moved(const struct snapshot *s, const int *mem, int nm)
{
	uint64_t since = 0;

	for (int k = 0; k < nm; k++)
		if (s->comms[mem[k]].changed_ns > since)
			since = s->comms[mem[k]].changed_ns;
	return since;
}

/* The stop-time mismatches: the finding, its "none has launched" and the members' counts */
static void stopped_mismatch(const struct snapshot *s, const int *mem, int nm, const int *sig,
			     int odd, char (*desc)[COLL_DESC_LEN], struct finding *out, int *n,
			     int max)
{
	uint64_t since = members_moved(s, mem, nm);
	char tail[64];
	struct finding *f;

	snprintf(tail, sizeof(tail), "none has launched anything for %.1fs",
		 (double)(s->now_ns - since) / NT_NSEC_PER_SEC);
	f = mismatch_finding(s, mem, nm, sig, odd, desc, since, tail, out, n, max);
	if (f)
		comm_evidence(s, f, mem, nm, f->pid);
}

/*
 * Has pid launched a collective that another member of one of its communicators has not? Then
 * it waits inside it, whatever its sockets say: the counters decide who is behind.
 */
static bool counters_say_waiting(const struct snapshot *s, int pid)
{
	for (int i = 0; i < s->ncomms; i++) {
		const struct snap_comm *c = &s->comms[i];

		if (c->pid != pid || !c->seq_ok)
			continue;
		for (int j = 0; j < s->ncomms; j++) {
			const struct snap_comm *m = &s->comms[j];
			bool totals;

			if (j == i || !m->seq_ok || m->hash != c->hash)
				continue;
			/* only the totals known: further along, it launched one m has not */
			totals = c->total_only || m->total_only;
			if (totals && snap_comm_total(m) < snap_comm_total(c))
				return true;
			for (int f = 0; f < SNAP_NSEQ && !totals; f++)
				if (m->seq[f] < c->seq[f])
					return true;
			/* as far along, but launched with other arguments (--collectives) */
			if ((totals || !memcmp(m->seq, c->seq, sizeof(c->seq))) &&
			    snap_comm_total(m) == snap_comm_total(c) && m->last_coll >= 0 &&
			    c->last_coll >= 0 && !is_p2p(m->last_coll) && !is_p2p(c->last_coll) &&
			    !same_args(m, c))
				return true;
		}
	}
	return false;
}

/* One communicator as its members' counters show it. */
struct comm_view {
	int *mem; /* indices in s->comms of its members */
	int nm;
	uint64_t lo[SNAP_NSEQ], hi[SNAP_NSEQ]; /* per function, the fewest and most launched */
	uint64_t moved;			       /* the last time any member's counts moved */
	uint64_t least, most; /* the fewest and most launched, all functions together */
	bool known;	      /* every member's last collective is known */
	bool totals;	      /* a member's counts are its total only (NCCL 2.18-2.22) */
};

/* The view of the communicator of comms[i], if i is its first member and it is live. */
static bool comm_view(const struct snapshot *s, int i, struct comm_view *v)
{
	bool live = false;

	v->nm = comm_members(s, i, v->mem);
	for (int k = 0; k < v->nm; k++)
		live |= !s->comms[v->mem[k]].destroyed;
	/* every rank destroyed it: the job is done with it */
	if (v->nm < 2 || !live)
		return false;
	v->moved = v->most = 0;
	v->least = UINT64_MAX;
	v->known = true;
	v->totals = false;
	for (int f = 0; f < SNAP_NSEQ; f++) {
		v->lo[f] = UINT64_MAX;
		v->hi[f] = 0;
	}
	for (int k = 0; k < v->nm; k++) {
		const struct snap_comm *c = &s->comms[v->mem[k]];

		v->moved = c->changed_ns > v->moved ? c->changed_ns : v->moved;
		v->least = snap_comm_total(c) < v->least ? snap_comm_total(c) : v->least;
		v->most = snap_comm_total(c) > v->most ? snap_comm_total(c) : v->most;
		v->known &= c->last_coll >= 0;
		v->totals |= c->total_only;
		for (int f = 0; f < SNAP_NSEQ; f++) {
			v->lo[f] = c->seq[f] < v->lo[f] ? c->seq[f] : v->lo[f];
			v->hi[f] = c->seq[f] > v->hi[f] ? c->seq[f] : v->hi[f];
		}
	}
	return true;
}

/*
 * Are the members' counts ordered (each member at or past another in every function) and are
 * they equal? Unordered counts are different collectives on different ranks.
 */
struct member_sum {
	uint64_t sum;
	int mem;
};

static int by_sum(const void *a, const void *b)
{
	const struct member_sum *x = a, *y = b;

	return x->sum < y->sum ? -1 : x->sum > y->sum;
}

/* a's counts each at most b's (equal: each the same) */
static bool counts_le(const struct snap_comm *a, const struct snap_comm *b, bool eq)
{
	for (int f = 0; f < SNAP_NSEQ; f++)
		if (eq ? a->seq[f] != b->seq[f] : a->seq[f] > b->seq[f])
			return false;
	return true;
}

/*
 * ordered: no two members each ahead of the other in some function (their counts a chain);
 * equal: every member's counts the same. Members sorted by their total, each at most the next
 * (the same where their totals are): a chain exactly when every pair is ordered, in n log n
 * for the 4,096 members of a world communicator where every pair took 16 million steps.
 */
static void comm_order(const struct snapshot *s, const struct comm_view *v, bool *ordered,
		       bool *equal)
{
	struct member_sum *m;

	*ordered = *equal = true;
	for (int f = 0; f < SNAP_NSEQ; f++)
		*equal &= v->lo[f] == v->hi[f];
	/* totals are always ordered: they cannot tell a function mismatch */
	if (v->totals) {
		*equal = v->least == v->most;
		return;
	}
	if (*equal || !(m = malloc(sizeof(*m) * (size_t)v->nm))) {
		for (int a = 0; !*equal && a < v->nm; a++)
			for (int b = 0; b < v->nm; b++)
				*ordered &= counts_le(&s->comms[v->mem[a]], &s->comms[v->mem[b]],
						      false) ||
					    counts_le(&s->comms[v->mem[b]], &s->comms[v->mem[a]],
						      false);
		return;
	}
	for (int k = 0; k < v->nm; k++) {
		m[k].mem = v->mem[k];
		m[k].sum = 0;
		for (int f = 0; f < SNAP_NSEQ; f++)
			m[k].sum += s->comms[v->mem[k]].seq[f];
	}
	qsort(m, (size_t)v->nm, sizeof(*m), by_sum);
	for (int k = 1; k < v->nm && *ordered; k++)
		*ordered = counts_le(&s->comms[m[k - 1].mem], &s->comms[m[k].mem],
				     m[k - 1].sum == m[k].sum);
	free(m);
}

/* Each member ahead in a different function: the odd ones launched another collective. */
static void func_mismatch(const struct snapshot *s, const struct comm_view *v, struct finding *out,
			  int *n, int max)
{
	int nm = v->nm, sig[nm];
	uint64_t weight[nm], col[SNAP_NSEQ] = {0};
	char desc[nm][COLL_DESC_LEN];

	/* a function's weight: what every member launched of it */
	for (int j = 0; j < nm; j++)
		for (int f = 0; f < SNAP_NSEQ; f++)
			col[f] += s->comms[v->mem[j]].seq[f];
	for (int k = 0; k < nm; k++) {
		sig[k] = member_coll(&s->comms[v->mem[k]], v->lo);
		weight[k] = sig[k] >= 0 ? col[sig[k]] : UINT64_MAX;
	}
	for (int k = 0; k < nm; k++)
		snprintf(desc[k], COLL_DESC_LEN, "%s #%llu", snap_coll_name(sig[k]),
			 (unsigned long long)(sig[k] >= 0 ? s->comms[v->mem[k]].seq[sig[k]] : 0));
	stopped_mismatch(s, v->mem, nm, sig, odd_signature(sig, weight, nm), desc, out, n, max);
}

/* The same number of each everywhere: the arguments may still differ (--collectives). */
static void args_mismatch(const struct snapshot *s, const struct comm_view *v, struct finding *out,
			  int *n, int max)
{
	int nm = v->nm, sig[nm];
	uint64_t weight[nm];
	char desc[nm][COLL_DESC_LEN];
	bool differ = false;

	if (!v->known)
		return;
	/* a send or a receive last: each rank's peer is its own */
	for (int k = 0; k < nm; k++)
		if (is_p2p(s->comms[v->mem[k]].last_coll))
			return;
	for (int k = 0; k < nm; k++) {
		const struct snap_comm *c = &s->comms[v->mem[k]];

		sig[k] = k;
		for (int j = 0; j < k; j++)
			if (same_args(c, &s->comms[v->mem[j]])) {
				sig[k] = sig[j];
				break;
			}
		weight[k] = 0;
	}
	for (int k = 1; k < nm; k++)
		differ |= sig[k] != sig[0];
	if (!differ)
		return; /* the same collective everywhere: a transport matter */
	for (int k = 0; k < nm; k++) {
		const struct snap_comm *c = &s->comms[v->mem[k]];
		char a[COLL_DESC_LEN - 32];

		coll_args(c->last_coll, c->last_count, c->last_dtype, c->last_root, a, sizeof(a));
		if (v->totals)
			snprintf(desc[k], COLL_DESC_LEN, "%s as collective %llu (%s)",
				 snap_coll_name(c->last_coll),
				 (unsigned long long)snap_comm_total(c), a);
		else
			snprintf(desc[k], COLL_DESC_LEN, "%s #%llu (%s)",
				 snap_coll_name(c->last_coll),
				 (unsigned long long)(c->last_coll < SNAP_NSEQ
							      ? c->seq[c->last_coll]
							      : 0),
				 a);
	}
	stopped_mismatch(s, v->mem, nm, sig, odd_signature(sig, weight, nm), desc, out, n, max);
}

/* Does f's longest waiter wait on one of NCCL's network connections: inside a collective? */
static bool waits_in_collective(const struct snapshot *s, const struct finding *f)
{
	const char *l = f->conn >= 0 ? s->conns[f->conn].nccl_label : NULL;

	return l && (!strncmp(l, "net", 3) || !strncmp(l, "ib", 2));
}

/*
 * Only the totals known (NCCL 2.18-2.22), and a socket culprit has launched as many
 * collectives as the rank that waits for it inside one: it launched that collective too, and
 * the totals cannot tell whether with the same function (a mismatch looks just so). No culprit
 * rather than a wrong one.
 */
static bool totals_say_nothing(const struct snapshot *s, const struct finding *f)
{
	if (!waits_in_collective(s, f))
		return false;
	for (int i = 0; i < s->ncomms; i++) {
		const struct snap_comm *c = &s->comms[i];

		if (c->pid != f->pid || !c->seq_ok || !c->hash || !snap_comm_total(c))
			continue;
		for (int j = 0; j < s->ncomms; j++) {
			const struct snap_comm *w = &s->comms[j];

			if (w->pid == f->peer_pid && w->seq_ok && w->hash == c->hash &&
			    (c->total_only || w->total_only) &&
			    snap_comm_total(w) == snap_comm_total(c))
				return true;
		}
	}
	return false;
}

/* The summary and first evidence of a new finding about a member behind the others. */
static void describe_behind(const struct snapshot *s, const struct comm_view *v,
			    const struct snap_comm *c, uint64_t wsince, struct finding *f)
{
	const struct snap_proc *p = snapshot_proc(s, c->pid);
	char cn[48], ws[112], st[64];
	int ahead = -1;

	for (int j = 0; j < v->nm && ahead < 0; j++)
		if (snap_comm_total(&s->comms[v->mem[j]]) != v->least)
			ahead = member_coll(&s->comms[v->mem[j]], v->lo);
	if (p)
		describe_culprit(p, f);
	else
		snprintf(f->phase, sizeof(f->phase), "not traced");
	if (c->destroyed) {
		size_t l = strlen(f->phase);

		snprintf(f->phase + l, sizeof(f->phase) - l, ", communicator destroyed");
	}
	comm_member_name(s, c, cn, sizeof(cn));
	waiter_list(s, f, ws, sizeof(ws));
	if (v->totals)
		snprintf(st, sizeof(st), "collective #%llu", (unsigned long long)v->most);
	else
		snprintf(st, sizeof(st), "%s #%llu", snap_coll_name(ahead),
			 (unsigned long long)(ahead >= 0 ? v->hi[ahead] : 0));
	snprintf(f->summary, sizeof(f->summary),
		 "%s has not launched %s on comm %016llx; %s wait%s in it for %.1fs; %s is %s", cn,
		 st, (unsigned long long)c->hash, ws, f->nwaiters > 1 ? "" : "s",
		 (double)(s->now_ns - wsince) / NT_NSEC_PER_SEC, cn, f->phase);
	if (p)
		state_evidence(p, f);
}

/*
 * Does a member ahead still wait? Not one that exited with status 0: it finished its work. At
 * the end of a job whose ranks exit within a tick of their last collectives, the counts last
 * sampled (the profiler plugin's, on a stripped build) may be older than the last launches.
 */
static bool someone_waits(const struct snapshot *s, const struct comm_view *v)
{
	for (int k = 0; k < v->nm; k++) {
		const struct snap_comm *c = &s->comms[v->mem[k]];
		const struct snap_proc *p = snapshot_proc(s, c->pid);

		if (snap_comm_total(c) != v->least &&
		    (!p || !p->exited || !WIFEXITED(p->exit_status) || WEXITSTATUS(p->exit_status)))
			return true;
	}
	return false;
}

/*
 * A member behind that is inside its transport setup is launching the collective the others
 * launched (NCCL connects lazily inside the first one's call, before the launch counts): it
 * takes part, and waits like them, on whom its setup waits for.
 */
static bool launching(const struct snapshot *s, const struct snap_comm *c)
{
	const struct snap_proc *p = snapshot_proc(s, c->pid);

	return p && !p->exited && p->nccl_setup == SNAP_SETUP_TRANSPORT;
}

/*
 * A member that exited with status 0 within the last second: its counts, sampled before it
 * exited, may predate its last launches (a rank woken from a pause runs its last collectives
 * and exits within a tick, and the others follow it out). Named once the others still wait a
 * second after its exit.
 */
static bool just_finished(const struct snapshot *s, const struct snap_comm *c)
{
	const struct snap_proc *p = snapshot_proc(s, c->pid);

	return p && p->exited && WIFEXITED(p->exit_status) && !WEXITSTATUS(p->exit_status) &&
	       s->now_ns - p->exit_ns < NT_NSEC_PER_SEC;
}

/*
 * Ordered, not equal: the members with the fewest launches hold the others, those launching
 * (in their setup) excepted: at scale, a rank late to the first collective leaves its ring
 * neighbours in their setup, as few launches behind as it, while the others launched and wait.
 * The ones launching wait too. Where any member behind is launching, the counters name none:
 * the hang is that setup's, and its own rule names the rank it waits for, once, with every
 * waiter (the sockets and the IB handshake say more).
 */
/* Is a member behind launching (in its setup) or just finished: the counters name none then */
static bool behind_moving(const struct snapshot *s, const struct comm_view *v)
{
	for (int k = 0; k < v->nm; k++) {
		const struct snap_comm *c = &s->comms[v->mem[k]];

		if (snap_comm_total(c) == v->least && (launching(s, c) || just_finished(s, c)))
			return true;
	}
	return false;
}

static void behind_findings(const struct snapshot *s, const struct comm_view *v,
			    struct finding *out, int *n, int max)
{
	uint64_t wsince = 0;

	/* a member behind always exists: the fewest launched is some member's count */
	if (!someone_waits(s, v) || behind_moving(s, v))
		return;

	for (int k = 0; k < v->nm; k++) {
		const struct snap_comm *c = &s->comms[v->mem[k]];

		if (snap_comm_total(c) != v->least && (!wsince || c->changed_ns < wsince))
			wsince = c->changed_ns;
	}
	for (int k = 0; k < v->nm; k++) {
		const struct snap_comm *c = &s->comms[v->mem[k]];
		const struct snap_proc *p = snapshot_proc(s, c->pid);
		struct finding *f = NULL;
		bool fresh = false;

		if (snap_comm_total(c) != v->least || launching(s, c))
			continue;
		/* the ranks ahead wait inside the collective: not culprits */
		for (int j = 0; j < v->nm; j++)
			if (snap_comm_total(&s->comms[v->mem[j]]) != v->least)
				drop_explained(s, out, n, s->comms[v->mem[j]].pid, NULL);
		for (int j = 0; j < *n && !f; j++)
			if (out[j].pid == c->pid)
				f = &out[j];
		if (!f) {
			f = new_finding(out, n, max);
			if (!f)
				return;
			fresh = true;
			f->pid = c->pid;
			f->rank = p ? p->rank : -1;
			f->since_ns = wsince;
			f->kind = !p || !p->exited ? FINDING_STALL : FINDING_PEER_DEAD;
			if (p && (p->state == 'T' || p->state == 't'))
				f->kind = FINDING_PEER_STOPPED;
		}
		f->comm_hash = c->hash;
		for (int j = 0; j < v->nm; j++) {
			const struct snap_comm *w = &s->comms[v->mem[j]];

			if (snap_comm_total(w) == v->least && !launching(s, w))
				continue;
			add_waiter(s, f, w->pid);
			if (!f->peer_pid) {
				f->peer_pid = w->pid;
				f->peer_rank = snapshot_proc(s, w->pid)
						       ? snapshot_proc(s, w->pid)->rank
						       : -1;
			}
		}
		if (fresh)
			describe_behind(s, v, c, wsince, f);
		comm_evidence(s, f, v->mem, v->nm, f->pid);
	}
}

/*
 * Counters still within their threshold, where another rule (the sockets, the stacks) has
 * already named a member behind: its counts are evidence there from the finding's first
 * record. The counts are read at ticks, so their last change is seen up to a tick after the
 * waiters' sockets fell silent, and the sockets' rule opens first by that much (a loaded
 * machine, a slow tick). Evidence only: no finding opened, none named otherwise.
 */
static void counts_corroborate(const struct snapshot *s, const struct comm_view *v,
			       struct finding *out, int n)
{
	bool ordered, equal;

	comm_order(s, v, &ordered, &equal);
	if (!ordered || equal || !someone_waits(s, v) || behind_moving(s, v))
		return;
	for (int k = 0; k < v->nm; k++) {
		const struct snap_comm *c = &s->comms[v->mem[k]];

		if (snap_comm_total(c) != v->least)
			continue;
		for (int j = 0; j < n; j++) {
			if (out[j].pid != c->pid || out[j].cycle)
				continue;
			if (!out[j].comm_hash)
				out[j].comm_hash = c->hash;
			comm_evidence(s, &out[j], v->mem, v->nm, c->pid);
		}
	}
}

/*
 * Without sockets (NVLink, SHM) a hang shows only in NCCL's counters: the members of a
 * communicator stopped launching, some have launched more than others. The ranks behind are
 * where the others wait; ranks in different collectives (or one collective with different
 * arguments) wait on each other for ever: a mismatch.
 */
void coll_findings(const struct snapshot *s, const struct diag_config *cfg, struct finding *out,
		   int *n, int max)
{
	int mem[s->ncomms > 0 ? s->ncomms : 1];
	struct comm_view v = {.mem = mem};

	for (int i = 0; i < s->ncomms; i++) {
		bool ordered, equal;
		int nm = comm_members(s, i, mem);

		/* latched: it stays, moving or not, until the session ends */
		if (nm >= 2 && latched_mismatch(s, cfg, mem, nm, out, n, max))
			continue;
		if (!comm_view(s, i, &v))
			continue;
		/* still moving: slow perhaps, not stuck (as its slowest member's rhythm goes) */
		if (s->now_ns - v.moved <= members_threshold(s, cfg, v.mem, v.nm)) {
			counts_corroborate(s, &v, out, *n);
			continue;
		}
		comm_order(s, &v, &ordered, &equal);
		if (!ordered)
			func_mismatch(s, &v, out, n, max);
		else if (equal)
			args_mismatch(s, &v, out, n, max);
		else
			behind_findings(s, &v, out, n, max);
	}
}

/*
 * The counters outrank the sockets: a rank that launched the collective waits inside it; one
 * that launched as many as its waiter, where only totals are known, may be in another one.
 */
void counters_outrank(const struct snapshot *s, struct finding *out, int *np)
{
	int n = *np;

	for (int i = 0; i < n; i++)
		if (out[i].pid > 0 && !out[i].cycle && out[i].kind == FINDING_STALL &&
		    (counters_say_waiting(s, out[i].pid) || totals_say_nothing(s, &out[i])))
			remove_finding(out, &n, i--);
	*np = n;
}

/*
 * A wait cycle among members of a communicator whose counters moved within their threshold is
 * a stop ending, not a hang: the rank the members waited on has just launched (the sockets'
 * silence is still the old one, and each member's oldest wait may chain to another member over
 * a ring of another channel). Real NCCL at 8 ranks opened such a cycle the moment the sleeping
 * rank woke, beside its own finding. A cycle that lasts has counters that do not move.
 * It stays here, beside comm_view() (static), which it reads: the file is over 700 lines with
 * it; the communicator view into a file of its own is the split that would mend that.
 */
void cycles_moving(const struct snapshot *s, const struct diag_config *cfg, struct finding *out,
		   int *np)
{
	int mem[s->ncomms > 0 ? s->ncomms : 1];
	struct comm_view v = {.mem = mem};

	for (int i = 0; i < *np; i++) {
		bool moving = false;

		if (!out[i].cycle)
			continue;
		for (int c = 0; c < s->ncomms && !moving; c++) {
			if (!named_in(&out[i], 1, s->comms[c].pid) || !comm_view(s, c, &v))
				continue;
			moving = s->now_ns - v.moved <= members_threshold(s, cfg, v.mem, v.nm);
		}
		if (moving)
			remove_finding(out, np, i--);
	}
}
