// SPDX-License-Identifier: MIT
/*
 * Quiet mode: should the per-call TCP hooks be off now? Only while NCCL's own counters say every
 * communicator moves.
 */
#include <stdio.h>
#include "diagnose/rules.h"

/* Why the per-call hooks must be on now, or NULL if the job may run quiet. */
static const char *quiet_blocker(const struct snapshot *s, const struct diag_config *cfg,
				 int open_findings, char *buf, size_t len)
{
	const struct snap_comm *stopped = NULL;
	int counted = 0;

	if (open_findings > 0)
		return "a finding is open";
	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_proc *p = &s->procs[i];

		if (p->exited || !p->nccl_setup)
			continue;
		if (p->rank < 0)
			return "a process in NCCL setup";
		snprintf(buf, len, "rank %d in NCCL setup", p->rank);
		return buf;
	}
	for (int i = 0; i < s->nconns; i++)
		if (s->conns[i].c.state == TCP_SYN_SENT && !s->conns[i].closed)
			return "a connect in progress";
	for (int i = 0; i < s->ncomms; i++) {
		const struct snap_comm *c = &s->comms[i];
		const struct snap_proc *p = snapshot_proc(s, c->pid);

		if (c->destroyed || !c->seq_ok || !p || p->exited)
			continue;
		counted++;
		/* the one stopped the longest: where a stall starts, the rank behind stops first */
		/* ties (one tick saw them all stop): the one with fewer collectives is behind */
		if (s->now_ns - c->changed_ns > cfg->quiet_recent_ns &&
		    (!stopped || c->changed_ns < stopped->changed_ns ||
		     (c->changed_ns == stopped->changed_ns &&
		      snap_comm_total(c) < snap_comm_total(stopped))))
			stopped = c;
	}
	if (stopped) {
		snprintf(buf, len, "rank %d's collectives stopped on comm %016llx", stopped->rank,
			 (unsigned long long)stopped->hash);
		return buf;
	}
	return counted ? NULL : "no NCCL communicator progressing";
}

bool diagnose_quiet(const struct snapshot *s, const struct diag_config *cfg, int open_findings,
		    struct quiet *q)
{
	char buf[96];
	const char *why = cfg->quiet_hold_ns
				  ? quiet_blocker(s, cfg, open_findings, buf, sizeof(buf))
				  : "--tcp-hooks always";

	if (why) {
		if (q->off)
			snprintf(q->why_on, sizeof(q->why_on), "%s", why);
		q->off = false;
		q->eligible_ns = 0;
		return false;
	}
	if (!q->eligible_ns)
		q->eligible_ns = s->now_ns;
	if (!q->off && s->now_ns - q->eligible_ns >= cfg->quiet_hold_ns)
		q->off = true;
	return q->off;
}
