// SPDX-License-Identifier: MIT
/*
 * The profiler plugin's records compared across the ranks of a communicator. Every new record
 * of every rank is read at each tick (the plugin's ring holds NTPROF_RING of them: 5000
 * collectives a second at 200 ms ticks) and kept until all the communicator's ranks have
 * launched that collective; then their signatures (function, count, datatype, root, op) are
 * compared, collective by collective, so none is skipped however far the ranks are apart and
 * however late the tick comes, within the ring. Records overwritten before a tick read them are
 * counted as lost; each record also carries the cumulative signature of all collectives before
 * it, so the first collective compared after a loss also says whether the ranks diverged among
 * the lost ones. The first divergence of a communicator is latched and stays in its snapshot: a
 * mismatched collective that completes corrupts data silently, and the job moving on says
 * nothing about it.
 */
#include <string.h>
#include "nccl/ncclprof_priv.h"
#include "util/grow.h"

static struct pgroup *group_get(struct nprof *pf, uint64_t hash)
{
	for (int i = 0; i < pf->ng; i++)
		if (pf->g[i].hash == hash)
			return &pf->g[i];
	if (grow(&pf->g, &pf->gcap, pf->ng, sizeof(*pf->g), 8))
		return NULL;
	memset(&pf->g[pf->ng], 0, sizeof(pf->g[0]));
	pf->g[pf->ng].hash = hash;
	return &pf->g[pf->ng++];
}

static const struct ntprof_rec *pend_find(const struct pcomm *m, uint64_t ord)
{
	uint64_t i;

	if (!m->npend || ord < m->pend[0].ord)
		return NULL;
	/* consecutive ordinals, unless some were lost: there, or searched for */
	i = ord - m->pend[0].ord;
	if (i < (uint64_t)m->npend && m->pend[i].ord == ord)
		return &m->pend[i];
	for (int k = 0; k < m->npend && m->pend[k].ord <= ord; k++)
		if (m->pend[k].ord == ord)
			return &m->pend[k];
	return NULL;
}

/*
 * Does r break this rank's own pattern? Read as the rank's launches go: after the launch before
 * r, the rank last did what followed the same launch the time before (AllReduce x10 predicts an
 * eleventh; AllReduce, Broadcast alternating predicts the other). Where the launch before r never
 * came earlier: has r's function been launched with other arguments just before?
 */
static bool changed_from_before(const struct pcomm *m, const struct ntprof_rec *r)
{
	uint64_t seq[HIST + 1];
	int n = 0, total = m->nhist + (int)(r - m->pend);

	/* the compared launches, then the pending ones before r: the newest HIST + 1 of them */
	for (int i = total > HIST + 1 ? total - (HIST + 1) : 0; i < total; i++)
		seq[n++] = i < m->nhist ? m->hist[i] : ntprof_rec_sig(&m->pend[i - m->nhist]);
	for (int j = n - 2; j >= 0; j--)
		if (seq[j] == seq[n - 1])
			return seq[j + 1] != ntprof_rec_sig(r);
	for (const struct ntprof_rec *q = r; q > m->pend; q--)
		if (q[-1].func == r->func)
			return ntprof_rec_sig(&q[-1]) != ntprof_rec_sig(r);
	return r->func < NTPROF_NFUNC && m->prev_sig[r->func] &&
	       m->prev_sig[r->func] != ntprof_rec_sig(r);
}

/* The group's first divergence, ordinals from..ord: each rank's launch at ord kept */
static void latch(struct pgroup *g, struct pcomm **mem, const struct ntprof_rec **r, int nm,
		  uint64_t from, uint64_t ord)
{
	g->latched = true;
	g->ord = ord;
	g->from = from;
	for (int k = 0; k < nm; k++) {
		mem[k]->mm_ok = from == ord && r[k];
		if (mem[k]->mm_ok) {
			mem[k]->mm = *r[k];
			mem[k]->mm_changed = changed_from_before(mem[k], r[k]);
		}
	}
}

/* the least ordinal above o that some member still holds a record of; UINT64_MAX if none */
static uint64_t next_pending(struct pcomm **mem, int nm, uint64_t o)
{
	uint64_t best = UINT64_MAX;

	for (int k = 0; k < nm; k++)
		for (int i = 0; i < mem[k]->npend; i++)
			if (mem[k]->pend[i].ord > o) {
				if (mem[k]->pend[i].ord < best)
					best = mem[k]->pend[i].ord;
				break;
			}
	return best;
}

/*
 * Compare the ranks of group g (members mem[0..nm)) at each ordinal all of them have launched;
 * latch the first whose signatures differ.
 */
static void compare_group(struct pgroup *g, struct pcomm **mem, int nm)
{
	uint64_t upto = UINT64_MAX;
	bool chained = true, aligned = true;

	for (int k = 0; k < nm; k++) {
		upto = mem[k]->read_upto < upto ? mem[k]->read_upto : upto;
		chained &= !(mem[k]->flags & NTPROF_CF_UNCHAINED);
		aligned &= !(mem[k]->flags & NTPROF_CF_UNALIGNED);
	}
	/* v3/v4 with CUDA graphs: the ordinals may not align across ranks: nothing to say */
	if (!aligned || g->latched) {
		for (int k = 0; k < nm; k++)
			pend_drop_upto(mem[k], UINT64_MAX);
		return;
	}
	/* o != 0: past UINT64_MAX (counts from a rank's memory) it wraps */
	for (uint64_t o = g->verified + 1; !g->latched && o != 0 && o <= upto; o++) {
		const struct ntprof_rec *r[nm];
		bool all = true, differ = false, cum = false;

		for (int k = 0; k < nm; k++) {
			r[k] = pend_find(mem[k], o);
			all &= r[k] != NULL;
		}
		if (!all) {
			/*
			 * lost on some rank (overwritten before a tick read it), up to the next
			 * ordinal any rank still holds: the counts come from the ranks' memory,
			 * so the span can be anything, and is not walked one by one
			 */
			uint64_t end = next_pending(mem, nm, o);

			end = end - 1 < upto ? end - 1 : upto;
			if (!g->gap)
				g->gap_from = o;
			g->gap = true;
			g->uncompared += end - o + 1;
			g->verified = o = end;
			continue;
		}
		for (int k = 1; k < nm; k++) {
			differ |= ntprof_rec_sig(r[k]) != ntprof_rec_sig(r[0]);
			cum |= r[k]->sig != r[0]->sig;
		}
		if (differ)
			latch(g, mem, r, nm, o, o);
		else if (g->gap && chained && cum)
			/* these match, the collectives before them did not: among the lost ones */
			latch(g, mem, r, nm, g->gap_from, o);
		g->gap = false;
		if (!g->latched)
			g->verified = o;
	}
	for (int k = 0; k < nm; k++)
		pend_drop_upto(mem[k], g->latched ? UINT64_MAX : g->verified);
}

/* The members of each communicator, compared: a group per commHash */
void nprof_compare_all(struct nprof *pf)
{
	int total = 0;

	for (int i = 0; i < pf->n; i++)
		total += pf->p[i].ncomm;
	if (!total)
		return;
	for (int i = 0; i < pf->n; i++)
		for (int c = 0; c < pf->p[i].ncomm; c++) {
			struct pcomm *m = &pf->p[i].comm[c], *mem[total];
			struct pgroup *g;
			int nm = 0;
			bool first = true;

			if (!m->id_ok || !m->hash)
				continue;
			/* once per communicator: at its first member */
			for (int j = 0; j <= i && first; j++)
				for (int d = 0; d < (j == i ? c : pf->p[j].ncomm); d++)
					if (pf->p[j].comm[d].id_ok &&
					    pf->p[j].comm[d].hash == m->hash)
						first = false;
			if (!first)
				continue;
			for (int j = i; j < pf->n; j++)
				for (int d = 0; d < pf->p[j].ncomm; d++)
					if (pf->p[j].comm[d].id_ok &&
					    pf->p[j].comm[d].hash == m->hash)
						mem[nm++] = &pf->p[j].comm[d];
			/*
			 * The ranks traced here: on several hosts, only those of this one. A rank
			 * found late misses the comparisons made before it came; none is wrong.
			 */
			g = group_get(pf, m->hash);
			if (g && nm >= 2)
				compare_group(g, mem, nm);
		}
}
