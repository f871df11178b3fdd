// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <string.h>
#include "diagnose/findings.h"
#include "util/grow.h"

void findings_init(struct findings *fs, uint64_t close_after_ns, uint64_t update_every_ns)
{
	memset(fs, 0, sizeof(*fs));
	fs->next_id = 1;
	fs->close_after_ns = close_after_ns;
	fs->update_every_ns = update_every_ns;
}

void findings_free(struct findings *fs)
{
	free(fs->v);
	memset(fs, 0, sizeof(*fs));
}

const char *finding_event_name(enum finding_event ev)
{
	return ev == FINDING_OPEN ? "open" : ev == FINDING_UPDATE ? "update" : "close";
}

static struct tracked_finding *find_open(struct findings *fs, const char *key)
{
	for (int i = 0; i < fs->n; i++)
		if (fs->v[i].open && strcmp(fs->v[i].f.key, key) == 0)
			return &fs->v[i];
	return NULL;
}

void findings_update(struct findings *fs, const struct finding *cur, int n, uint64_t now,
		     finding_cb cb, void *ctx)
{
	for (int i = 0; i < n; i++) {
		struct tracked_finding *t = find_open(fs, cur[i].key);

		if (t) {
			uint64_t since = t->f.since_ns;

			t->f = cur[i];
			/* the start of a condition does not move while it lasts */
			if (since && since < t->f.since_ns)
				t->f.since_ns = since;
			t->last_seen_ns = now;
			if (!t->sure && !t->f.early) {
				/* it outlived -t: an alarm now, whatever it opened as */
				t->sure = true;
				t->last_told_ns = now;
				cb(ctx, FINDING_UPDATE, t);
			} else if (now - t->last_told_ns >= fs->update_every_ns) {
				t->last_told_ns = now;
				cb(ctx, FINDING_UPDATE, t);
			}
			continue;
		}
		if (grow(&fs->v, &fs->cap, fs->n, sizeof(*fs->v), 16))
			return;
		t = &fs->v[fs->n++];
		memset(t, 0, sizeof(*t));
		t->id = fs->next_id++;
		t->open = true;
		t->opened_ns = now;
		t->last_seen_ns = now;
		t->last_told_ns = now;
		t->f = cur[i];
		t->early_open = cur[i].early;
		t->sure = !cur[i].early;
		cb(ctx, FINDING_OPEN, t);
	}
	for (int i = 0; i < fs->n; i++) {
		struct tracked_finding *t = &fs->v[i];

		if (t->open && now - t->last_seen_ns >= fs->close_after_ns) {
			t->open = false;
			t->transient = !t->sure;
			fs->ntransient += t->transient;
			cb(ctx, FINDING_CLOSE, t);
		}
	}
}

void findings_close_all(struct findings *fs, uint64_t now, finding_cb cb, void *ctx)
{
	(void)now;
	for (int i = 0; i < fs->n; i++) {
		if (fs->v[i].open) {
			fs->v[i].open = false;
			cb(ctx, FINDING_CLOSE, &fs->v[i]);
		}
	}
}

int findings_open_count(const struct findings *fs)
{
	int n = 0;

	for (int i = 0; i < fs->n; i++)
		n += fs->v[i].open;
	return n;
}

static json_t *int_or_null(int v)
{
	return v >= 0 ? json_integer(v) : json_null();
}

/* name -> {value, source[, ranks]}: value null where unset and NCCL decides at run time */
static json_t *settings_json(const struct finding *f)
{
	json_t *o = json_object();

	for (int i = 0; i < f->nsettings; i++) {
		const struct finding_setting *fs = &f->settings[i];
		json_t *v = json_object();

		json_object_set_new(v, "value",
				    strcmp(fs->source, "unset") ? json_string(fs->value)
								: json_null());
		json_object_set_new(v, "source", json_string(fs->source));
		if (fs->ranks[0])
			json_object_set_new(v, "ranks", json_string(fs->ranks));
		json_object_set_new(o, fs->name, v);
	}
	return o;
}

json_t *finding_to_json(const struct tracked_finding *t, enum finding_event ev, uint64_t now,
			const char *conn)
{
	const struct finding *f = &t->f;
	uint64_t end = ev == FINDING_CLOSE ? t->last_seen_ns : now;
	json_t *o = json_object(), *evd = json_array(), *w = json_array(), *wr = json_array();

	for (int i = 0; i < f->nevidence; i++)
		json_array_append_new(evd, json_string(f->evidence[i]));
	/* every one of them: the summary's ranges are for people, this is for programs */
	for (int i = 0; i < f->nwaiters; i++) {
		json_array_append_new(w, json_integer(f->waiters[i].pid));
		if (f->waiters[i].rank >= 0)
			json_array_append_new(wr, json_integer(f->waiters[i].rank));
	}
	json_object_set_new(o, "type", json_string("finding"));
	json_object_set_new(o, "event", json_string(finding_event_name(ev)));
	json_object_set_new(o, "id", json_integer(t->id));
	json_object_set_new(o, "ts_ns", json_integer((json_int_t)now));
	json_object_set_new(o, "kind", json_string(finding_kind_name(f->kind)));
	json_object_set_new(o, "rank", int_or_null(f->rank));
	json_object_set_new(o, "pid", f->pid > 0 ? json_integer(f->pid) : json_null());
	json_object_set_new(o, "peer_rank", int_or_null(f->peer_rank));
	json_object_set_new(o, "remote_rank",
			    f->remote_named ? json_integer(f->remote_rank) : json_null());
	json_object_set_new(o, "peer_pid",
			    f->peer_pid > 0 ? json_integer(f->peer_pid) : json_null());
	json_object_set_new(o, "phase", json_string(f->phase));
	json_object_set_new(o, "since_s",
			    json_real(end > f->since_ns ? (double)(end - f->since_ns) / 1e9 : 0));
	json_object_set_new(o, "opened_ns", json_integer((json_int_t)t->opened_ns));
	json_object_set_new(o, "summary", json_string(f->summary));
	json_object_set_new(o, "evidence", evd);
	json_object_set_new(o, "settings", settings_json(f));
	{
		json_t *h = json_array();

		for (int i = 0; i < f->nhyp; i++)
			json_array_append_new(h, json_string(f->hypotheses[i]));
		json_object_set_new(o, "hypotheses", h);
	}
	json_object_set_new(o, "waiters", w);
	json_object_set_new(o, "waiter_ranks", wr);
	if (f->nwaiters_total > f->nwaiters)
		json_object_set_new(o, "waiters_total", json_integer(f->nwaiters_total));
	json_object_set_new(o, "conn", conn ? json_string(conn) : json_null());
	json_object_set_new(o, "threshold_s", json_real((double)f->threshold_ns / 1e9));
	json_object_set_new(o, "threshold_why", json_string(f->threshold_why));
	json_object_set_new(o, "early", json_boolean(!t->sure));
	if (ev == FINDING_CLOSE)
		json_object_set_new(o, "transient", json_boolean(t->transient));
	if (f->comm_hash) {
		char h[24];

		snprintf(h, sizeof(h), "%016llx", (unsigned long long)f->comm_hash);
		json_object_set_new(o, "comm_hash", json_string(h));
	}
	return o;
}
