// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <string.h>
#include "present/jobview.h"
#include "util/fmt.h"

#define JOBVIEW_MAX_FINDINGS 64

int jobview_init(struct jobview *v, double stall_threshold_s)
{
	memset(v, 0, sizeof(*v));
	diag_config_init(&v->cfg, stall_threshold_s);
	/* what the tracer does: closed after 1 s absent, re-told every 5 s */
	findings_init(&v->fs, NT_NSEC_PER_SEC, 5 * NT_NSEC_PER_SEC);
	v->found = calloc(JOBVIEW_MAX_FINDINGS, sizeof(*v->found));
	v->latest = json_array();
	return v->found && v->latest ? 0 : -1;
}

void jobview_free(struct jobview *v)
{
	findings_free(&v->fs);
	free(v->found);
	json_decref(v->latest);
	memset(v, 0, sizeof(*v));
}

static void set_host(json_t *o, const char *key, const struct snapshot *s, int pid)
{
	const struct snap_proc *p = pid > 0 ? snapshot_proc(s, pid) : NULL;

	if (p && p->host)
		json_object_set_new(o, key, json_string(p->host));
}

static void on_finding(void *ctx, enum finding_event ev, const struct tracked_finding *t)
{
	struct jobview *v = ctx;
	const struct snapshot *s = v->snap;
	const struct finding *f = &t->f;
	char conn[128] = "";
	json_t *rec, *e;
	size_t i;

	if (f->conn >= 0 && f->conn < s->nconns)
		fmt_tuple(&s->conns[f->conn].c.t, conn, sizeof(conn));
	rec = finding_to_json(t, ev, s->now_ns, conn[0] ? conn : NULL);
	json_object_del(rec, "type");
	json_object_set_new(rec, "realtime_ns",
			    json_integer((json_int_t)(s->now_ns + v->realtime_off)));
	set_host(rec, "host", s, f->pid);
	set_host(rec, "peer_host", s, f->peer_pid);
	if (ev == FINDING_OPEN)
		v->nopen++;
	if (v->tell)
		v->tell(v->tell_ctx, ev, t);
	json_array_foreach(v->latest, i, e)
	{
		if (json_integer_value(json_object_get(e, "id")) == t->id) {
			json_array_set_new(v->latest, i, rec);
			return;
		}
	}
	json_array_append_new(v->latest, rec);
}

void jobview_step(struct jobview *v, const struct snapstore *m, int64_t realtime_off,
		  uint64_t stale_ns)
{
	int n;

	v->fs.close_after_ns = NT_NSEC_PER_SEC + stale_ns;
	v->snap = &m->s;
	v->realtime_off = realtime_off;
	n = diagnose(&m->s, &v->cfg, v->found, JOBVIEW_MAX_FINDINGS);
	findings_update(&v->fs, v->found, n, m->s.now_ns, on_finding, v);
	v->snap = NULL;
}

void jobview_close(struct jobview *v, const struct snapstore *m, uint64_t now)
{
	v->snap = &m->s;
	findings_close_all(&v->fs, now, on_finding, v);
	v->snap = NULL;
}

json_t *jobview_open_findings(const struct jobview *v)
{
	json_t *out = json_array(), *e;
	size_t i;

	json_array_foreach(v->latest, i, e)
	{
		const char *ev = json_string_value(json_object_get(e, "event"));

		if (ev && strcmp(ev, "close"))
			json_array_append(out, e);
	}
	return out;
}
