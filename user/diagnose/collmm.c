// SPDX-License-Identifier: MIT
/*
 * The profiler plugin's verdict on a communicator's collectives: the first one its ranks
 * launched with different arguments, latched, whether the job hangs on it or goes on.
 */
#include <stdio.h>
#include "diagnose/rules.h"
#include "util/fmt.h"

/* The summary's end: what the ranks did after the divergence (hung: for how long, else 0) */
static void mismatch_tail(uint64_t hung, uint64_t from, uint64_t ord, uint64_t more, char *tail,
			  size_t len)
{
	if (from != ord)
		snprintf(tail, len,
			 "their signatures differ from collective %llu on (records lost before "
			 "nccltrace read them)",
			 (unsigned long long)from);
	else if (hung)
		snprintf(
			tail, len,
			"collective %llu of the communicator; none has launched anything for %.1fs",
			(unsigned long long)ord, (double)hung / NT_NSEC_PER_SEC);
	else
		snprintf(tail, len,
			 "collective %llu of the communicator; the job went on (%llu collectives "
			 "since): its data is likely corrupt",
			 (unsigned long long)ord, (unsigned long long)more);
}

/*
 * One line for the signature of member k, at its first member: its ranks (as ranges) and what
 * they launched
 */
static void signature_evidence(const struct snapshot *s, struct finding *f, const int *mem, int nm,
			       const int *sig, int k, uint64_t from, uint64_t ord)
{
	const struct snap_comm *c = &s->comms[mem[k]];
	char who[128], rl[112], a[COLL_DESC_LEN];
	int ranks[nm], nr = 0, unranked = 0;

	for (int j = 0; j < k; j++)
		if (sig[j] == sig[k])
			return;
	for (int j = k; j < nm; j++) {
		const struct snap_proc *p = snapshot_proc(s, s->comms[mem[j]].pid);

		if (sig[j] != sig[k])
			continue;
		if (p && p->rank >= 0)
			ranks[nr++] = p->rank;
		else
			unranked = s->comms[mem[j]].pid;
	}
	fmt_ranges(ranks, nr, rl, sizeof(rl));
	if (unranked)
		snprintf(who, sizeof(who), "%s%s%s? (pid %d)", nr ? "ranks " : "rank ", rl,
			 nr ? "," : "", unranked);
	else
		snprintf(who, sizeof(who), "%s%s", nr > 1 ? "ranks " : "rank ", rl);
	coll_args(c->mm_coll, c->mm_count, c->mm_dtype, c->mm_root, a, sizeof(a));
	if (c->mm_coll < 0)
		add_evidence(f,
			     "%s: collectives %llu-%llu of comm %016llx launched with other "
			     "arguments than their peers' (NCCL profiler plugin)",
			     who, (unsigned long long)from, (unsigned long long)ord,
			     (unsigned long long)c->hash);
	else
		add_evidence(f,
			     "%s launched %s #%llu, %s, as collective %llu of comm %016llx%s "
			     "(NCCL profiler plugin)",
			     who, snap_coll_name(c->mm_coll), (unsigned long long)c->mm_seq + 1, a,
			     (unsigned long long)ord, (unsigned long long)c->hash,
			     c->mm_changed ? ", other arguments than in its previous one" : "");
}

/*
 * The profiler plugin compared every collective of the communicator across its ranks and
 * latched the first whose function, count, datatype or root differ (mm_*): a mismatch whether
 * the job hangs on it or goes on with corrupt data. Point-to-point operations are not among
 * them (their peers differ by design); for the collectives NCCL has, every rank passes the
 * same count. The odd ranks are the fewest with one signature; between as many of each (two
 * ranks), the ranks whose arguments changed from their previous launch of that function.
 */
bool latched_mismatch(const struct snapshot *s, const struct diag_config *cfg, const int *all,
		      int nall, struct finding *out, int *n, int max)
{
	int mem[nall], nm = 0, sig[nall];
	uint64_t weight[nall], since = 0, moved, ord = 0, from = 0, more = 0;
	char desc[nall][COLL_DESC_LEN], tail[128];
	bool funcs_differ = false;
	struct finding *f;

	for (int k = 0; k < nall; k++)
		if (s->comms[all[k]].mm_ord) {
			mem[nm++] = all[k];
			ord = s->comms[all[k]].mm_ord;
			from = s->comms[all[k]].mm_from;
		}
	if (nm < 2)
		return false;
	for (int k = 0; k < nm; k++) {
		const struct snap_comm *c = &s->comms[mem[k]];

		sig[k] = k;
		for (int j = 0; j < k; j++) {
			const struct snap_comm *o = &s->comms[mem[j]];

			if (c->mm_coll == o->mm_coll && c->mm_count == o->mm_count &&
			    c->mm_dtype == o->mm_dtype && c->mm_root == o->mm_root) {
				sig[k] = sig[j];
				break;
			}
		}
		funcs_differ |= c->mm_coll != s->comms[mem[0]].mm_coll;
		/* the odd one broke its own pattern; else, its function is the rarer in the comm */
		weight[k] = c->mm_changed ? 0 : 1ULL << 40;
		for (int j = 0; j < nall && c->mm_coll >= 0 && c->mm_coll < SNAP_NSEQ; j++)
			weight[k] += s->comms[all[j]].seq[c->mm_coll];
		since = c->mm_ns > since ? c->mm_ns : since;
		more = c->launched > ord && c->launched - ord > more ? c->launched - ord : more;
	}
	for (int k = 0; k < nm; k++) {
		const struct snap_comm *c = &s->comms[mem[k]];
		char a[COLL_DESC_LEN - 32];

		coll_args(c->mm_coll, c->mm_count, c->mm_dtype, c->mm_root, a, sizeof(a));
		/* another function says it all; the same one: its arguments */
		if (c->mm_coll < 0)
			snprintf(desc[k], COLL_DESC_LEN, "collectives %llu-%llu",
				 (unsigned long long)from, (unsigned long long)ord);
		else if (funcs_differ)
			snprintf(desc[k], COLL_DESC_LEN, "%s #%llu", snap_coll_name(c->mm_coll),
				 (unsigned long long)c->mm_seq + 1);
		else
			snprintf(desc[k], COLL_DESC_LEN, "%s #%llu (%s)",
				 snap_coll_name(c->mm_coll), (unsigned long long)c->mm_seq + 1, a);
	}
	moved = members_moved(s, mem, nm);
	mismatch_tail(s->now_ns - moved > cfg->stall_threshold_ns ? s->now_ns - moved : 0, from,
		      ord, more, tail, sizeof(tail));
	f = mismatch_finding(s, mem, nm, sig, odd_signature(sig, weight, nm), desc, since, tail,
			     out, n, max);
	for (int k = 0; f && k < nm; k++)
		signature_evidence(s, f, mem, nm, sig, k, from, ord);
	/* where each rank stands now */
	if (f)
		comm_evidence(s, f, mem, nm, f->pid);
	return true;
}
