// SPDX-License-Identifier: MIT
/*
 * Stragglers, from NCCL's collective counters sampled each tick: nothing hangs, but one rank is
 * the last at each step.
 */
#include <stdio.h>
#include "diagnose/rules.h"

/*
 * A straggler: nothing hangs, but of the samples in which a communicator moved, one rank was
 * alone behind the others in most. It is the rank everyone waits for at each step.
 */
void straggler_findings(const struct snapshot *s, const struct diag_config *cfg,
			struct finding *out, int *n, int max)
{
	if (cfg->straggler_samples <= 0)
		return;
	for (int i = 0; i < s->ncomms; i++) {
		const struct snap_comm *c = &s->comms[i];
		int mem[s->ncomms], nm, behind = __builtin_popcountll(c->behind_bits), next = 0;
		const struct snap_proc *p = snapshot_proc(s, c->pid);
		struct finding *f;
		char cn[48], ws[112];

		if (!c->seq_ok || c->destroyed || behind < cfg->straggler_samples || !p ||
		    p->exited || named_in(out, *n, c->pid))
			continue;
		/* nobody else close: a job whose ranks take turns being last has no straggler */
		nm = 0;
		for (int j = 0; j < s->ncomms; j++)
			if (s->comms[j].seq_ok && s->comms[j].hash == c->hash)
				mem[nm++] = j;
		for (int k = 0; k < nm; k++)
			if (mem[k] != i) {
				int b = __builtin_popcountll(s->comms[mem[k]].behind_bits);

				next = b > next ? b : next;
			}
		if (next * 3 > behind)
			continue;
		f = new_finding(out, n, max);
		if (!f)
			return;
		f->kind = FINDING_STRAGGLER;
		f->pid = c->pid;
		f->rank = p->rank;
		f->comm_hash = c->hash;
		f->since_ns = c->behind_since_ns ? c->behind_since_ns : s->now_ns;
		for (int k = 0; k < nm; k++)
			if (mem[k] != i) {
				add_waiter(s, f, s->comms[mem[k]].pid);
				if (!f->peer_pid) {
					f->peer_pid = s->comms[mem[k]].pid;
					f->peer_rank = snapshot_proc(s, f->peer_pid)
							       ? snapshot_proc(s, f->peer_pid)->rank
							       : -1;
				}
			}
		describe_culprit(p, f);
		comm_member_name(s, c, cn, sizeof(cn));
		waiter_list(s, f, ws, sizeof(ws));
		snprintf(f->summary, sizeof(f->summary),
			 "%s is the last to launch collectives on comm %016llx: alone behind in %d "
			 "of the last %d samples while it moved; %s wait%s for it at each step",
			 cn, (unsigned long long)c->hash, behind, c->nsamples, ws,
			 f->nwaiters > 1 ? "" : "s");
		add_evidence(f,
			     "%s alone behind in %d of %d samples, %d with the ranks apart "
			     "(%s sampled every tick)",
			     cn, behind, c->nsamples, __builtin_popcountll(c->differ_bits),
			     snap_src_name(c->seq_src));
		for (int k = 0; k < nm; k++)
			if (mem[k] != i) {
				char mn[48];

				comm_member_name(s, &s->comms[mem[k]], mn, sizeof(mn));
				add_evidence(f, "%s alone behind in %d samples", mn,
					     __builtin_popcountll(s->comms[mem[k]].behind_bits));
			}
		state_evidence(p, f);
	}
}
