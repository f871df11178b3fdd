// SPDX-License-Identifier: MIT
/* `run --listen`: the session's pages, /metrics and /state, from its latest snapshot. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/session.h"
#include "model/snapjson.h"
#include "present/metrics.h"
#include "present/statedelta.h"
#include "util/clock.h"
#include "util/fmt.h"
#include "util/log.h"

/* the open findings, as `report --json` has them */
static json_t *open_findings(struct session *s)
{
	json_t *a = json_array();

	for (int i = 0; i < s->findings.n; i++) {
		const struct tracked_finding *t = &s->findings.v[i];
		char conn[128] = "";
		json_t *f;

		if (!t->open)
			continue;
		if (t->f.conn >= 0 && t->f.conn < s->snap.nconns)
			fmt_tuple(&s->snap.conns[t->f.conn].c.t, conn, sizeof(conn));
		f = finding_to_json(t, FINDING_UPDATE, s->snap.now_ns, conn[0] ? conn : NULL);
		json_object_del(f, "type");
		json_array_append_new(a, f);
	}
	return a;
}

static json_t *state_page(struct session *s, uint64_t seq)
{
	uint64_t mono = clock_mono_ns(), real = clock_real_ns();

	return json_pack("{s:i,s:I,s:s,s:s,s:s,s:I,s:I,s:f,s:s,s:b,s:o,s:o}", "nccltrace_state", 1,
			 "seq", (json_int_t)seq, "version", NT_VERSION, "host", s->host, "loopback",
			 s->loopback, "boot_to_realtime_ns", (json_int_t)(real - mono),
			 "realtime_ns", (json_int_t)real, "stall_threshold_s",
			 s->opts.stall_threshold_s, "cmd", s->cmdline, "job_over", s->job_exited,
			 "findings", open_findings(s), "state", snapjson_from_snapshot(&s->snap));
}

/* ?since=: what changed since the client's page (present/statedelta.h) */
static char *since_answer(struct session *s, struct page_cache *pc, const char *since)
{
	if (!pc->json)
		return NULL;
	if (!s->deltas && !(s->deltas = state_deltas_new()))
		return NULL;
	return state_deltas_answer(s->deltas, pc->json, state_since(since));
}

/*
 * A page is made once for each snapshot (each tick) and copied for every answer until the
 * next: a hundred clients cost the loop what one does, and its tick stays on time.
 */
static char *page(void *ctx, const char *url, const char *since, const char **type)
{
	struct session *s = ctx;
	struct page_cache *pc;
	uint64_t t0, took;
	bool metrics = !strcmp(url, "/metrics");

	if (!metrics && strcmp(url, "/state"))
		return NULL;
	*type = metrics ? "text/plain; version=0.0.4; charset=utf-8" : "application/json";
	pc = &s->page[metrics];
	if (pc->body && pc->snap_ns == s->snap.now_ns && pc->job_over == s->job_exited)
		return since && !metrics ? since_answer(s, pc, since) : strdup(pc->body);
	t0 = clock_mono_ns();
	free(pc->body);
	json_decref(pc->json);
	pc->json = NULL;
	if (metrics) {
		pc->body = metrics_text(&s->snap, &s->findings, s->host);
	} else {
		pc->json = state_page(s, ++pc->seq);
		pc->body = pc->json ? json_dumps(pc->json, JSON_COMPACT) : NULL;
	}
	pc->snap_ns = s->snap.now_ns;
	pc->job_over = s->job_exited;
	took = clock_mono_ns() - t0;
	s->pages++;
	s->page_ns += took;
	if (took > s->page_max_ns)
		s->page_max_ns = took;
	if (since && !metrics)
		return since_answer(s, pc, since);
	return pc->body ? strdup(pc->body) : NULL;
}

void session_listen_free(struct session *s)
{
	for (size_t i = 0; i < sizeof(s->page) / sizeof(s->page[0]); i++) {
		free(s->page[i].body);
		s->page[i].body = NULL;
		json_decref(s->page[i].json);
		s->page[i].json = NULL;
	}
	state_deltas_free(s->deltas);
	s->deltas = NULL;
}

int session_listen_open(struct session *s)
{
	char err[512];
	int rc;

	if (!s->opts.listen)
		return 0;
	rc = listener__open(&s->listen, s->opts.listen, s->opts.token_file, page, s, err,
			    sizeof(err));
	if (rc) {
		fprintf(stderr, "nccltrace: %s\n", err);
		return rc;
	}
	fprintf(stderr, "nccltrace: serving %s/metrics and %s/state%s\n", listener__url(s->listen),
		listener__url(s->listen), s->opts.token_file ? " (bearer token required)" : "");
	return 0;
}
