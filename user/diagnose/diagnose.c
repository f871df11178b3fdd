// SPDX-License-Identifier: MIT
/*
 * The driver: the rule families in order, then each finding's identity and explanation. The
 * order matters: a later family may drop or take over an earlier one's finding about the same
 * process (the counters outrank the sockets, an IB error explains a death, setup blocking is
 * named only where nothing else named the rank, a wait on another host's rank joins the
 * culprit here whose stop it is).
 */
#include <stdio.h>
#include <string.h>
#include "diagnose/explain.h"
#include "diagnose/rules.h"
#include "util/fmt.h"

/* Identity across snapshots: the kind and the culprit (pid, missing rank or address). */
static void finding_key(const struct snapshot *s, struct finding *f)
{
	char ep[64];

	if (f->pid > 0)
		snprintf(f->key, sizeof(f->key), "%s:pid:%d", finding_kind_name(f->kind), f->pid);
	else if (f->rank < 0 && f->conn < 0 && f->comm_hash)
		/* no culprit (which rank of a mismatch is odd cannot be told): its communicator */
		snprintf(f->key, sizeof(f->key), "%s:comm:%016llx", finding_kind_name(f->kind),
			 (unsigned long long)f->comm_hash);
	else if (f->conn < 0)
		snprintf(f->key, sizeof(f->key), "%s:rank:%d", finding_kind_name(f->kind), f->rank);
	else
		snprintf(f->key, sizeof(f->key), "%s:addr:%s", finding_kind_name(f->kind),
			 fmt_endpoint(&s->conns[f->conn].c.t, 0, ep, sizeof(ep)));
}

/*
 * Records the tracer never got are never silent: what the finding rests on is said. Phases,
 * polling, socket progress and collective counters are state, read at each tick from the
 * kernel's maps and the ranks' memory; settings, warnings, connect retries and the dump's
 * history come from records.
 */
static void lost_evidence(const struct snapshot *s, struct finding *f)
{
	if (!s->records_lost && !s->records_suppressed)
		return;
	/* the last line, whatever else had to give way to it */
	if (f->nevidence == DIAG_MAX_EVIDENCE)
		f->nevidence--;
	add_evidence(
		f,
		"records not received: %llu lost (ring buffer full), %llu over budget; phases "
		"and counters are read each tick from the kernel's maps and the ranks' memory; "
		"settings and warnings may be missing",
		(unsigned long long)s->records_lost, (unsigned long long)s->records_suppressed);
}

int diagnose(const struct snapshot *snap, const struct diag_config *cfg, struct finding *out,
	     int max)
{
	struct snapshot local = *snap, *s = &local;
	struct snap_index ix = {0};
	int n = 0;

	/* lookups by pid and per process, once: the rules never scan per process */
	if (!snap->ix) {
		if (snapshot_index(snap, &ix))
			return 0;
		local.ix = &ix;
	}
	wait_findings(s, cfg, out, &n, max);
	exit_findings(s, out, &n, max);
	counters_outrank(s, out, &n);
	cycles_moving(s, cfg, out, &n);
	coll_findings(s, cfg, out, &n, max);
	ib_findings(s, out, &n, max);
	ib_handshake_findings(s, cfg, out, &n, max);
	retry_findings(s, cfg, out, &n, max);
	setup_findings(s, cfg, out, &n, max);
	straggler_findings(s, cfg, out, &n, max);
	gpu_findings(s, out, &n, max);
	/* last: whichever finding names a culprit here once the others had their say */
	untraced_findings(s, cfg, out, &n);
	for (int i = 0; i < n; i++) {
		finding_key(s, &out[i]);
		threshold_evidence(s, cfg, &out[i]);
		stack_evidence(s, &out[i]);
		log_evidence(s, &out[i]);
		explain_finding(s, &out[i]);
		py_evidence(s, &out[i]);
		lost_evidence(s, &out[i]);
	}
	snapshot_index_free(&ix);
	return n;
}

void diag_config_init(struct diag_config *cfg, double stall_threshold_s)
{
	memset(cfg, 0, sizeof(*cfg));
	if (!(stall_threshold_s > 0))
		stall_threshold_s = 1;
	if (stall_threshold_s > DIAG_MAX_THRESHOLD_S)
		stall_threshold_s = DIAG_MAX_THRESHOLD_S;
	cfg->stall_threshold_ns = (uint64_t)(stall_threshold_s * 1e9);
	cfg->min_threshold_ns = NT_NSEC_PER_SEC;
	cfg->adapt_k = 10;
	cfg->active_window_ns = NT_NSEC_PER_SEC;
	/* of the last 64 samples (12.8 s of ticks) in which a communicator moved: a quarter */
	cfg->straggler_samples = 16;
	cfg->quiet_hold_ns = 2 * NT_NSEC_PER_SEC;
	cfg->quiet_recent_ns = NT_NSEC_PER_SEC / 2;
}
