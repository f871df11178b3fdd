// SPDX-License-Identifier: MIT
/*
 * The adaptive stall threshold: a wait counts once it is adapt_k times longer than the job's own
 * p99 gap between moves (of a communicator's counters, of a connection's bytes), clamped
 * between --min-threshold and -t. A rhythm still being learned, or --fixed-threshold, gets -t.
 */
#include <stdio.h>
#include "diagnose/rules.h"
#include "util/fmt.h"

uint64_t diag_threshold(const struct diag_config *cfg, uint64_t p99_ns)
{
	uint64_t t;

	if (!cfg->adapt_k || !p99_ns || p99_ns >= cfg->stall_threshold_ns / cfg->adapt_k + 1)
		return cfg->stall_threshold_ns;
	t = p99_ns * cfg->adapt_k;
	if (t < cfg->min_threshold_ns)
		t = cfg->min_threshold_ns;
	return t < cfg->stall_threshold_ns ? t : cfg->stall_threshold_ns;
}

uint64_t conn_threshold(const struct diag_config *cfg, const struct snap_conn *c)
{
	return diag_threshold(cfg, c->gap_p99_ns);
}

/* Of the members mem[0..nm) (indices in s->comms), the one whose rhythm gives the longest wait */
static int slowest_of(const struct snapshot *s, const struct diag_config *cfg, const int *mem,
		      int nm, uint64_t *thr)
{
	int at = -1;

	*thr = cfg->stall_threshold_ns;
	for (int k = 0; k < nm; k++) {
		uint64_t t = diag_threshold(cfg, s->comms[mem[k]].gap_p99_ns);

		if (s->comms[mem[k]].destroyed)
			continue;
		if (at < 0 || t > *thr) {
			*thr = t;
			at = mem[k];
		}
	}
	return at;
}

uint64_t members_threshold(const struct snapshot *s, const struct diag_config *cfg, const int *mem,
			   int nm)
{
	uint64_t t;

	slowest_of(s, cfg, mem, nm, &t);
	return t;
}

/* "1.0 s: " and why the ceiling applies, or what rhythm gave less */
static void why(const struct diag_config *cfg, uint64_t thr, uint64_t p99, uint64_t every,
		const char *what, const char *on, char *buf, size_t len)
{
	double ts = (double)thr / 1e9;

	if (!cfg->adapt_k)
		snprintf(buf, len, "%.1f s: -t (--fixed-threshold)", ts);
	else if (!p99)
		snprintf(buf, len, "%.1f s: -t (the rhythm %s%s is still being learned)", ts,
			 on[0] ? "of " : "", on);
	else if (thr >= cfg->stall_threshold_ns)
		snprintf(buf, len, "%.1f s: -t (%u x the p99 gap %.0f ms %s%s is longer)", ts,
			 cfg->adapt_k, (double)p99 / 1e6, on[0] ? "of " : "", on);
	else
		snprintf(buf, len, "%.1f s: %s every %.0f ms (p99 gap %.0f ms) on %s, x %u%s", ts,
			 what, (double)every / 1e6, (double)p99 / 1e6, on, cfg->adapt_k,
			 thr == cfg->min_threshold_ns ? ", at --min-threshold" : "");
}

void threshold_evidence(const struct snapshot *s, const struct diag_config *cfg, struct finding *f)
{
	uint64_t p99 = 0, every = 0, thr = cfg->stall_threshold_ns;
	const char *what = "";
	char on[96] = "";

	/* setup, deaths, errors: no rhythm to learn, -t */
	if (f->kind != FINDING_STALL && f->kind != FINDING_PEER_STOPPED) {
		f->threshold_ns = thr;
		snprintf(f->threshold_why, sizeof(f->threshold_why), "%.1f s: -t",
			 (double)thr / 1e9);
		return;
	}
	if (f->comm_hash) {
		int mem[s->ncomms > 0 ? s->ncomms : 1], nm = 0, at;

		for (int i = 0; i < s->ncomms; i++)
			if (s->comms[i].hash == f->comm_hash)
				mem[nm++] = i;
		at = slowest_of(s, cfg, mem, nm, &thr);

		if (at >= 0) {
			p99 = s->comms[at].gap_p99_ns;
			every = s->comms[at].every_ns;
		}
		what = "collectives";
		snprintf(on, sizeof(on), "comm %016llx", (unsigned long long)f->comm_hash);
	} else if (f->conn >= 0 && f->conn < s->nconns) {
		const struct snap_conn *c = &s->conns[f->conn];
		char t[80];

		thr = conn_threshold(cfg, c);
		p99 = c->gap_p99_ns;
		every = c->every_ns;
		what = "data";
		snprintf(on, sizeof(on), "%s", fmt_tuple(&c->c.t, t, sizeof(t)));
	}
	f->threshold_ns = thr;
	why(cfg, thr, p99, every, what, on, f->threshold_why, sizeof(f->threshold_why));
	f->early = thr < cfg->stall_threshold_ns && s->now_ns > f->since_ns &&
		   s->now_ns - f->since_ns < cfg->stall_threshold_ns;
	if (thr < cfg->stall_threshold_ns && f->nevidence < DIAG_MAX_EVIDENCE)
		snprintf(f->evidence[f->nevidence++], sizeof(f->evidence[0]), "threshold %s%s",
			 f->threshold_why, f->early ? "; early: younger than -t" : "");
}
