// SPDX-License-Identifier: MIT
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "model/snapmerge.h"
#include "model/snapskew.h"
#include "present/convertmerge.h"
#include "present/dump.h"
#include "present/jobview.h"
#include "present/report.h"
#include "present/reportmerge.h"

/* one dump: its header and its state records (ts_ns on its own clock) */
struct mdump {
	const char *path;
	char host[80];
	json_t *header, *footer;
	/*
	 * its state records' times (a first reading), and the last of them whole (the skew);
	 * then read again as the merge goes: the one in force (at), from reader r
	 */
	int64_t *ts;
	size_t nts, capts;
	json_t *last, *rec;
	struct dump_reader *r;
	int64_t cur_t; /* the step cur was made for */
	int64_t b2r;   /* boot_to_realtime_ns */
	int64_t shift; /* onto the first dump's clock */
	/*
	 * what the connection pairs with host skew_from (-1: none) say of its clock, after the
	 * realtime anchors: bounds (ns, INT64_MIN/MAX: open) and the correction taken from shift
	 */
	int skew_from;
	int64_t skew_lo, skew_hi, skew;
	size_t at;	       /* the state in use */
	struct snapstore *cur; /* it, as of the step's time */
};

static bool is_state(json_t *rec)
{
	const char *type = json_string_value(json_object_get(rec, "type"));

	return type && !strcmp(type, "state") && json_is_integer(json_object_get(rec, "ts_ns"));
}

static int collect_states(void *ctx, json_t *rec, int line)
{
	struct mdump *d = ctx;
	const char *type = json_string_value(json_object_get(rec, "type"));

	if (line == 1 || !d->header) {
		d->header = json_incref(rec);
		return 0;
	}
	if (type && !strcmp(type, "footer")) {
		json_decref(d->footer); /* two footers: the last one */
		d->footer = json_incref(rec);
	}
	if (is_state(rec)) {
		if (d->nts == d->capts) {
			size_t cap = d->capts ? 2 * d->capts : 256;
			int64_t *v = realloc(d->ts, cap * sizeof(*v));

			if (!v)
				return -1;
			d->ts = v;
			d->capts = cap;
		}
		d->ts[d->nts++] = json_integer_value(json_object_get(rec, "ts_ns"));
		json_decref(d->last);
		d->last = json_incref(rec);
	}
	return 0;
}

static int64_t state_ts(const struct mdump *d, size_t i)
{
	return d->ts[i] + d->shift;
}

/* the next state record of d's second reading, NULL at its end (or on an error, in err) */
static json_t *next_state(struct mdump *d, char *err, size_t errlen)
{
	json_t *rec;
	int line;

	if (!d->r && !(d->r = dump_reader_open(d->path, DUMP_READ_ONLY_STATES, err, errlen)))
		return NULL;
	while (dump_reader_next(d->r, &rec, &line, err, errlen) == 1) {
		if (is_state(rec))
			return rec;
		json_decref(rec);
	}
	return NULL;
}

/* d's header, state records and footer, every other record passed over unread */
static int read_states_only(struct mdump *d, char *err, size_t errlen)
{
	struct dump_reader *r = dump_reader_open(d->path, DUMP_READ_ONLY_STATES, err, errlen);
	json_t *rec;
	int line, rc;

	if (!r)
		return -1;
	while ((rc = dump_reader_next(r, &rec, &line, err, errlen)) == 1) {
		rc = collect_states(d, rec, line);
		json_decref(rec);
		if (rc) {
			snprintf(err, errlen, "%s: out of memory", d->path);
			rc = -1;
			break;
		}
	}
	dump_reader_close(r);
	return rc;
}

/* the dumps read, hosts named (a host twice gets "#2"), clocks put on the first's */
/*
 * fn(ctx, i) for i in [0, n), on as many threads as there are CPUs (each dump read by one of
 * them: the readings are most of a merged report's time); in order on this one where threads
 * cannot start
 */
struct each_dump {
	void (*fn)(void *ctx, int i);
	void *ctx;
	int n, next;
};

static void *each_dump_thread(void *arg)
{
	struct each_dump *e = arg;
	int i;

	while ((i = __atomic_fetch_add(&e->next, 1, __ATOMIC_RELAXED)) < e->n)
		e->fn(e->ctx, i);
	return NULL;
}

static void for_each_dump(int n, void (*fn)(void *ctx, int i), void *ctx)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int nt = cpus > 1 ? (int)(cpus < 16 ? cpus : 16) : 1, started = 0;
	struct each_dump e = {fn, ctx, n, 0};
	pthread_t t[16];

	if (nt > n)
		nt = n;
	for (int k = 1; k < nt; k++)
		if (!pthread_create(&t[started], NULL, each_dump_thread, &e))
			started++;
	each_dump_thread(&e);
	for (int k = 0; k < started; k++)
		pthread_join(t[k], NULL);
}

/* each dump's first reading, and what it says is wrong */
struct first_reading {
	struct mdump *d;
	char (*err)[256];
};

static void first_reading(void *ctx, int i)
{
	struct first_reading *fr = ctx;
	struct mdump *d = &fr->d[i];

	if (read_states_only(d, fr->err[i], sizeof(fr->err[i])))
		return;
	if (!d->nts)
		snprintf(fr->err[i], sizeof(fr->err[i]),
			 "%s: no state records (a dump of nccltrace before multi-host reports, or "
			 "one that ran less than a second): it cannot be merged",
			 d->path);
}

static int read_dumps(struct mdump *d, char **paths, int n, char *err, size_t errlen)
{
	struct first_reading fr = {d, calloc(n, sizeof(*fr.err))};

	if (!fr.err) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (int i = 0; i < n; i++)
		d[i].path = paths[i];
	for_each_dump(n, first_reading, &fr);
	for (int i = 0; i < n; i++) {
		const char *h;

		if (fr.err[i][0]) {
			snprintf(err, errlen, "%s", fr.err[i]);
			free(fr.err);
			return -1;
		}
		h = json_string_value(json_object_get(d[i].header, "host"));
		snprintf(d[i].host, sizeof(d[i].host), "%s", h ? h : "?");
		for (int k = 0; k < i; k++)
			if (!strcmp(d[k].host, d[i].host)) {
				snprintf(d[i].host, sizeof(d[i].host), "%s#%d", h ? h : "?", i + 1);
				break;
			}
		d[i].b2r = json_integer_value(json_object_get(d[i].header, "boot_to_realtime_ns"));
		d[i].shift = d[i].b2r - d[0].b2r;
	}
	free(fr.err);
	return 0;
}

/* each dump's last state, on the first's clock by the anchors alone; NULL on a bad one */
static struct snapstore *last_state(const struct mdump *d)
{
	char err[128];

	return snapjson_parse(json_object_get(d->last, "state"), d->shift, err, sizeof(err));
}

/*
 * Skew the anchors leave, where the connections between two hosts show it (a byte received
 * before it was sent): from the first dump outwards, each host's clock is corrected against
 * one already placed that it has connections with, by the least that makes every pair
 * possible. Hosts with no such connections keep their anchors.
 */
static void correct_skew(struct mdump *d, int n)
{
	struct snapstore **last = calloc(n, sizeof(*last));
	bool *placed = calloc(n, sizeof(*placed)), more = true;

	for (int i = 0; last && placed && i < n; i++) {
		last[i] = last_state(&d[i]);
		d[i].skew_from = -1;
	}
	if (!last || !placed || !last[0])
		goto out;
	placed[0] = true;
	while (more) {
		more = false;
		for (int i = 0; i < n; i++)
			for (int j = 0; placed[i] && j < n; j++) {
				int64_t lo, hi;

				if (placed[j] || !last[j] ||
				    !snapskew_bounds(&last[i]->s, &last[j]->s, &lo, &hi))
					continue;
				d[j].skew_from = i;
				d[j].skew_lo = lo;
				d[j].skew_hi = hi;
				d[j].skew = d[i].skew + snapskew_correction(lo, hi);
				placed[j] = more = true;
			}
	}
	for (int i = 0; i < n; i++)
		d[i].shift -= d[i].skew;
out:
	for (int i = 0; last && i < n; i++)
		snapstore_free(last[i]);
	free(last);
	free(placed);
}

/* a finding absent from the merged states closes after 1 s more than their age, at most this */
#define MERGE_STALE_MAX_NS (5 * NT_NSEC_PER_SEC)

/*
 * Each dump's latest state at t, taken as of t: its times moved by what separates it from t
 * (up to the second between two state records), so that every host's snapshot has the same
 * now. Its ages then read short by at most that, never long: a wait is named up to a second
 * later than the tracer on its host would have, never sooner. How many hosts have one; *stale:
 * the most that separates one from t.
 */
/* a dump that ended before its first reading's count (written to while read): -1 */
static int cut(const struct mdump *d, char *err, size_t errlen)
{
	if (!err[0])
		snprintf(err, errlen,
			 "%s: fewer state records than at its first reading (written to while "
			 "read?)",
			 d->path);
	return -1;
}

static int states_at(struct mdump *d, int n, int64_t t, struct snapmerge_in *in, uint64_t *stale,
		     char *err, size_t errlen)
{
	int k = 0;

	*stale = 0;

	for (int i = 0; i < n; i++) {
		size_t ns = d[i].nts;
		bool moved = false;

		if (!d[i].rec) {
			if (!(d[i].rec = next_state(&d[i], err, errlen)))
				return cut(&d[i], err, errlen);
			moved = true;
		}
		while (d[i].at + 1 < ns && state_ts(&d[i], d[i].at + 1) <= t) {
			json_decref(d[i].rec);
			if (!(d[i].rec = next_state(&d[i], err, errlen)))
				return cut(&d[i], err, errlen);
			d[i].at++;
			moved = true;
		}
		/* not started yet, or its tracer ended more than 2 s ago: the host is absent */
		if (state_ts(&d[i], d[i].at) > t ||
		    (d[i].at + 1 == ns && t - state_ts(&d[i], d[i].at) > 2 * (int64_t)1000000000))
			continue;
		if (moved || !d[i].cur) {
			snapstore_free(d[i].cur);
			d[i].cur = snapjson_parse(json_object_get(d[i].rec, "state"),
						  d[i].shift + (t - state_ts(&d[i], d[i].at)), err,
						  errlen);
			if (!d[i].cur)
				return -1;
		} else {
			/* the same state a second later: moved, not read again */
			snapstore_shift(d[i].cur, t - d[i].cur_t);
		}
		d[i].cur_t = t;
		if ((uint64_t)(t - state_ts(&d[i], d[i].at)) > *stale)
			*stale = (uint64_t)(t - state_ts(&d[i], d[i].at));
		in[k++] = (struct snapmerge_in){
			&d[i].cur->s, d[i].host,
			json_string_value(json_object_get(d[i].header, "loopback"))};
	}
	return k;
}

/* step through the job second by second from its first state to its last */
static int replay(struct mdump *d, int n, struct jobview *v, char *err, size_t errlen)
{
	struct snapmerge_in *in = calloc(n, sizeof(*in));
	struct snapstore *last = NULL;
	int64_t t0 = INT64_MAX, t1 = INT64_MIN;
	int rc = 0;

	if (!in)
		return -1;
	for (int i = 0; i < n; i++) {
		if (state_ts(&d[i], 0) < t0)
			t0 = state_ts(&d[i], 0);
		if (state_ts(&d[i], d[i].nts - 1) > t1)
			t1 = state_ts(&d[i], d[i].nts - 1);
	}
	for (int64_t t = t0;; t += 1000000000) {
		uint64_t stale;
		int k;

		if (t > t1)
			t = t1;
		k = states_at(d, n, t, in, &stale, err, errlen);
		if (k < 0) {
			rc = -1;
			break;
		}
		if (k) {
			snapstore_free(last);
			last = snapmerge(in, k);
			if (!last) {
				snprintf(err, errlen, "out of memory merging the dumps");
				rc = -1;
				break;
			}
			/*
			 * a host whose tick slipped closes nothing: its state reads short. A
			 * calm host writes one each 30 s: what is older than a few seconds is
			 * not waited for
			 */
			jobview_step(v, last, d[0].b2r,
				     stale < MERGE_STALE_MAX_NS ? stale : MERGE_STALE_MAX_NS);
		}
		if (t == t1)
			break;
	}
	if (last)
		jobview_close(v, last, last->s.now_ns);
	snapstore_free(last);
	free(in);
	return rc;
}

static json_t *bound(int64_t v)
{
	return v == INT64_MIN || v == INT64_MAX ? json_null() : json_real((double)v / 1e9);
}

static json_t *merged_info(struct mdump *d, int n)
{
	json_t *dumps = json_array();

	for (int i = 0; i < n; i++) {
		json_t *o = json_pack("{s:s,s:s,s:I,s:f,s:i,s:f}", "path", d[i].path, "host",
				      d[i].host, "boot_to_realtime_ns", (json_int_t)d[i].b2r,
				      "offset_s", (double)d[i].shift / 1e9, "states", (int)d[i].nts,
				      "skew_s", (double)d[i].skew / 1e9);

		/* its --max-dump-bytes, and what that left out */
		if (d[i].footer && json_object_get(d[i].footer, "budget"))
			json_object_set(o, "budget", json_object_get(d[i].footer, "budget"));
		/* what the connections with the host it was placed against allow */
		if (d[i].skew_from >= 0)
			json_object_set_new(o, "skew_measured",
					    json_pack("{s:s,s:o,s:o}", "against",
						      d[d[i].skew_from].host, "min_s",
						      bound(d[i].skew_lo), "max_s",
						      bound(d[i].skew_hi)));
		json_array_append_new(dumps, o);
	}
	return json_pack(
		"{s:o,s:s}", "dumps", dumps, "clock",
		"aligned by each dump's CLOCK_REALTIME anchor (boot_to_realtime_ns), "
		"which assumes the hosts' clocks agree within their NTP skew (typically "
		"under 10 ms, far below the stall threshold); corrected (skew_s) where the "
		"two ends of a connection between hosts show more: a byte received before "
		"it was sent");
}

/* o's number key, off seconds later (where o has it) */
static void shift_s(json_t *o, const char *key, double off)
{
	if (json_is_number(json_object_get(o, key)))
		json_object_set_new(o, key,
				    json_real(json_number_value(json_object_get(o, key)) + off));
}

/* every dump's ranks, each with its host */
/* each dump's ranks (its events read again: their timelines), read by one of the threads */
struct dump_ranks {
	struct mdump *d;
	json_t **r;
	char (*err)[256];
};

static void dump_ranks(void *ctx, int i)
{
	struct dump_ranks *dr = ctx;

	dr->r[i] = report_ranks(dr->d[i].path, dr->d[i].header, dr->err[i], sizeof(dr->err[i]));
}

static int all_ranks(struct mdump *d, int n, json_t *out, char *err, size_t errlen)
{
	json_t *ranks = json_array();
	struct dump_ranks dr = {d, calloc(n, sizeof(*dr.r)), calloc(n, sizeof(*dr.err))};
	int rc = 0;

	if (!ranks || !dr.r || !dr.err) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
		goto out;
	}
	for_each_dump(n, dump_ranks, &dr);
	for (int i = 0; i < n && !rc; i++) {
		json_t *r = dr.r[i], *e;
		size_t k;

		if (!r) {
			snprintf(err, errlen, "%s", dr.err[i]);
			rc = -1;
			break;
		}
		double off = convert_offset_s(d[0].header, d[i].header);

		/* times from the dump's start: from the first's, as the merged trace has them */
		json_array_foreach(r, k, e)
		{
			json_t *tl = json_object_get(e, "timeline"), *p;
			size_t j;

			json_object_set_new(e, "host", json_string(d[i].host));
			/* its columns as its own dump drew them, from the first's start */
			shift_s(json_object_get(e, "progress"), "from_s", off);
			shift_s(json_object_get(e, "conn_progress"), "from_s", off);
			shift_s(e, "ended_s", off);
			json_array_foreach(tl, j, p) shift_s(p, "start_s", off);
		}
		json_array_extend(ranks, r);
	}
	if (!rc)
		json_object_set_new(out, "ranks", json_incref(ranks));
out:
	for (int i = 0; dr.r && i < n; i++)
		json_decref(dr.r[i]);
	free(dr.r);
	free(dr.err);
	json_decref(ranks);
	return rc;
}

static void mdumps_free(struct mdump *d, int n)
{
	for (int i = 0; i < n; i++) {
		json_decref(d[i].header);
		json_decref(d[i].footer);
		free(d[i].ts);
		json_decref(d[i].last);
		json_decref(d[i].rec);
		dump_reader_close(d[i].r);
		snapstore_free(d[i].cur);
	}
	free(d);
}

json_t *report_merged(char **paths, int n, char *err, size_t errlen)
{
	struct mdump *d = calloc(n, sizeof(*d));
	struct jobview v;
	json_t *out = NULL, *hosts;
	bool complete = true;

	if (!d || jobview_init(&v, 5)) {
		free(d);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (read_dumps(d, paths, n, err, errlen))
		goto done;
	correct_skew(d, n);
	/* the first dump's threshold: one job's tracers are run alike */
	if (json_is_number(json_object_get(d[0].header, "stall_threshold_s")))
		diag_config_init(&v.cfg, json_number_value(json_object_get(d[0].header,
									   "stall_threshold_s")));
	if (replay(d, n, &v, err, errlen))
		goto done;
	hosts = json_array();
	for (int i = 0; i < n; i++) {
		json_array_append_new(hosts, json_string(d[i].host));
		complete &= d[i].footer != NULL;
	}
	out = json_pack("{s:O,s:b,s:O,s:o,s:O,s:o}", "findings", v.latest, "complete", complete,
			"cmd", json_object_get(d[0].header, "cmd") ?: json_null(), "hosts", hosts,
			"start_ns", json_object_get(d[0].header, "start_ns") ?: json_null(),
			"merged", merged_info(d, n));
	if (complete)
		json_object_set(out, "exit_status", json_object_get(d[0].footer, "exit_status"));
	if (all_ranks(d, n, out, err, errlen)) {
		json_decref(out);
		out = NULL;
	}
done:
	jobview_free(&v);
	mdumps_free(d, n);
	return out;
}
