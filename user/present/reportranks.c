// SPDX-License-Identifier: MIT
/*
 * The ranks of a dump for `report`: who each is, its connections' totals, its QPs and HCA events,
 * its NCCL phase timeline, its progress columns and how it ended, in rank order
 */
#include <stdlib.h>
#include <string.h>
#include "present/convert.h"
#include "present/dump.h"
#include "present/dumpconns.h"
#include "present/heat.h"
#include "present/report.h"
#include "present/reportlog.h"

/* Per rank: its connections and bytes (last counts per connection), how it ended. */
struct rank_ctx {
	json_t *ranks; /* [{rank, pid, ...}] */
	struct dump_conns conns;
	json_t *logs;			      /* pid -> what NCCL's log told */
	struct heat heat;		      /* each process's bytes moved, at each snapshot */
	struct heat colls;		      /* and its collectives (every communicator's) */
	uint64_t start_ns, first_ns, last_ns; /* the dump's; the snapshots' */
	int nsnap;
	bool nomem;
};

static json_t *rank_entry(json_t *ranks, int pid)
{
	size_t i;
	json_t *v;

	json_array_foreach(ranks, i,
			   v) if (json_integer_value(json_object_get(v, "pid")) == pid) return v;
	return NULL;
}

/* each rank's GPU as the latest snapshot that had it tells */
static void gpu_latest(json_t *ranks, json_t *rec)
{
	json_t *p, *g, *r;
	size_t i;

	json_array_foreach(json_object_get(rec, "procs"), i, p)
	{
		if (!json_is_object(g = json_object_get(p, "gpu")) ||
		    !(r = rank_entry(ranks, (int)json_integer_value(json_object_get(p, "pid")))))
			continue;
		json_object_set(r, "gpu", g);
	}
}

/* A rank's verbs: QPs created, at RTS, destroyed, failed changes, and the HCA's events. */
static void ib_tally(json_t *ranks, json_t *rec, const char *type)
{
	json_t *r = rank_entry(ranks, (int)json_integer_value(json_object_get(rec, "pid")));
	json_t *ib;
	const char *ev = json_string_value(json_object_get(rec, "event")) ?: "";

	if (!r)
		return;
	ib = json_object_get(r, "ib");
	if (!ib) {
		ib = json_pack("{s:i,s:i,s:i,s:i,s:[]}", "qps", 0, "rts", 0, "destroyed", 0,
			       "failed", 0, "events");
		json_object_set_new(r, "ib", ib);
	}
#define BUMP(k)                                                                                    \
	json_object_set_new(ib, k, json_integer(json_integer_value(json_object_get(ib, k)) + 1))
	if (!strcmp(type, "ib_qp") && json_object_get(rec, "error"))
		BUMP("failed");
	else if (!strcmp(type, "ib_qp") && !strcmp(ev, "create"))
		BUMP("qps");
	else if (!strcmp(type, "ib_qp") && !strcmp(ev, "destroy"))
		BUMP("destroyed");
	else if (!strcmp(type, "ib_qp") &&
		 !strcmp(json_string_value(json_object_get(rec, "to")) ?: "", "RTS")) {
		BUMP("rts");
		json_object_set(ib, "timeout", json_object_get(rec, "timeout"));
		json_object_set(ib, "retry_cnt", json_object_get(rec, "retry_cnt"));
	} else if (!strcmp(type, "ib_event")) {
		json_array_append_new(json_object_get(ib, "events"),
				      json_pack("{s:s,s:O}", "event", ev, "qp_num",
						json_object_get(rec, "qp_num") ?: json_null()));
	}
#undef BUMP
}

/* each process's collectives so far, its communicators' counts summed, where it has any */
static int add_colls(struct heat *h, json_t *snapshot, uint64_t ts)
{
	size_t i, k;
	json_t *p, *cm;

	json_array_foreach(json_object_get(snapshot, "procs"), i, p)
	{
		json_t *comms = json_object_get(json_object_get(p, "nccl"), "comms");
		long long n = 0;

		if (!json_array_size(comms))
			continue;
		json_array_foreach(comms, k, cm) n +=
			json_integer_value(json_object_get(cm, "total"));
		if (heat_add(h, (int)json_integer_value(json_object_get(p, "pid")), ts, n))
			return -1;
	}
	return 0;
}

static int collect_ranks(void *ctx, json_t *rec, int line)
{
	struct rank_ctx *c = ctx;
	const char *type = json_string_value(json_object_get(rec, "type"));

	(void)line;
	if (!type)
		return 0;
	if (!strcmp(type, "rank") && json_is_integer(json_object_get(rec, "rank"))) {
		json_array_append_new(c->ranks,
				      json_pack("{s:O,s:O}", "rank", json_object_get(rec, "rank"),
						"pid", json_object_get(rec, "pid")));
	} else if (!strcmp(type, "proc") &&
		   !strcmp(json_string_value(json_object_get(rec, "event")) ?: "", "exit")) {
		json_t *r =
			rank_entry(c->ranks, (int)json_integer_value(json_object_get(rec, "pid")));
		char how[48];

		if (!r)
			return 0;
		if (json_is_integer(json_object_get(rec, "signal")))
			snprintf(how, sizeof(how), "killed by signal %lld",
				 (long long)json_integer_value(json_object_get(rec, "signal")));
		else
			snprintf(how, sizeof(how), "exited with status %lld",
				 (long long)json_integer_value(json_object_get(rec, "exit_code")));
		json_object_set_new(r, "ended", json_string(how));
		json_object_set(r, "ended_ns", json_object_get(rec, "ts_ns"));
	} else if (!strcmp(type, "snapshot")) {
		uint64_t ts = (uint64_t)json_integer_value(json_object_get(rec, "ts_ns"));

		if (dump_conns_update(&c->conns, rec))
			c->nomem = true;
		/* every process at every snapshot: a total that stayed is a stretch of nothing */
		for (int k = 0; k < c->conns.nm; k++)
			if (heat_add(&c->heat, c->conns.m[k].pid, ts, c->conns.m[k].bytes))
				c->nomem = true;
		if (add_colls(&c->colls, rec, ts))
			c->nomem = true;
		gpu_latest(c->ranks, rec);
		c->nsnap++;
		if (ts && (!c->first_ns || ts < c->first_ns))
			c->first_ns = ts;
		if (ts > c->last_ns)
			c->last_ns = ts;
	} else if (!strncmp(type, "ib_", 3)) {
		ib_tally(c->ranks, rec, type);
	} else if (!strcmp(type, "nccl_log")) {
		reportlog_add(c->logs, rec);
	}
	return 0;
}

/* The top-level NCCL phases of each rank's main thread, from the converted trace. */
static void add_timelines(json_t *ranks, json_t *trace, uint64_t start)
{
	json_t *ev = json_object_get(trace, "traceEvents"), *e, *r;
	size_t i, k;

	json_array_foreach(ranks, k, r)
	{
		json_t *tl = json_array();
		double end = -1;

		json_array_foreach(ev, i, e)
		{
			double ts = json_number_value(json_object_get(e, "ts"));
			double dur = json_number_value(json_object_get(e, "dur"));

			if (strcmp(json_string_value(json_object_get(e, "ph")), "X") ||
			    json_integer_value(json_object_get(e, "pid")) !=
				    json_integer_value(json_object_get(r, "rank")) ||
			    json_integer_value(json_object_get(e, "tid")) !=
				    json_integer_value(json_object_get(r, "pid")) ||
			    ts < end)
				continue;
			end = ts + dur;
			json_array_append_new(tl, json_pack("{s:O,s:f,s:f}", "phase",
							    json_object_get(e, "name"), "start_s",
							    ts / 1e6, "dur_s", dur / 1e6));
		}
		json_object_set_new(r, "timeline", tl);
		if (json_is_integer(json_object_get(r, "ended_ns"))) {
			json_object_set_new(r, "ended_s",
					    json_real((double)(json_integer_value(json_object_get(
								       r, "ended_ns")) -
							       (json_int_t)start) /
						      1e9));
			json_object_del(r, "ended_ns");
		}
	}
}

/*
 * A rank's bytes a second (its collectives a second where its NCCL uses no socket) from the
 * first snapshot to the last, in up to REPORT_HEAT_COLS columns of
 * at least half a snapshot's interval (about a second)
 */
static void add_progress(json_t *r, const struct rank_ctx *c, bool net)
{
	int ncols = 2 * (c->nsnap - 1) < REPORT_HEAT_COLS ? 2 * (c->nsnap - 1) : REPORT_HEAT_COLS;
	int pid = (int)json_integer_value(json_object_get(r, "pid"));
	double v[REPORT_HEAT_COLS];
	const char *unit = "bytes_per_s";
	json_t *a;

	/* a rank whose NCCL sends nothing over sockets (InfiniBand, NVLink): its collectives */
	if (!net && heat_columns(&c->colls, pid, c->first_ns, c->last_ns, ncols, v)) {
		for (int i = 0; i < ncols; i++)
			if (v[i] > 0)
				unit = "collectives_per_s";
	}
	if (!strcmp(unit, "bytes_per_s") &&
	    !heat_columns(&c->heat, pid, c->first_ns, c->last_ns, ncols, v))
		return;
	a = json_array();
	for (int i = 0; i < ncols; i++)
		json_array_append_new(a, json_real(v[i]));
	json_object_set_new(r, "progress",
			    json_pack("{s:f,s:f,s:o}", "from_s",
				      (double)(c->first_ns - c->start_ns) / 1e9, "column_s",
				      (double)(c->last_ns - c->first_ns) / 1e9 / ncols, unit, a));
}

/* connection indices into v, the most bytes first */
static int by_bytes(const void *a, const void *b, void *v)
{
	const struct dump_conn *x = (const struct dump_conn *)v + *(const int *)a,
			       *y = (const struct dump_conn *)v + *(const int *)b;
	long long bx = x->sent + x->recv, by = y->sent + y->recv;

	return bx != by ? (bx < by ? 1 : -1) : strcmp(x->id, y->id);
}

/*
 * A rank's connections for the page's panel: the REPORT_CONNS_LISTED that moved the most, each
 * with its bytes a second in the dump's connection columns (whole bytes), and how many more
 */
static void add_conns(json_t *r, const struct rank_ctx *c)
{
	const struct dump_conns *d = &c->conns;
	int pid = (int)json_integer_value(json_object_get(r, "pid")), n = 0,
	    ncols = dump_conns_ncols(d);
	int *idx = d->n ? malloc((size_t)d->n * sizeof(*idx)) : NULL;
	json_t *list;

	if (!idx || !ncols) {
		free(idx);
		return;
	}
	for (int k = 0; k < d->n; k++)
		if (d->v[k].pid == pid)
			idx[n++] = k;
	qsort_r(idx, (size_t)n, sizeof(*idx), by_bytes, d->v);
	list = json_array();
	for (int j = 0; j < n && j < REPORT_CONNS_LISTED; j++) {
		const struct dump_conn *k = &d->v[idx[j]];
		json_t *a = json_array();

		for (int i = 0; i < ncols; i++)
			json_array_append_new(
				a, json_integer(k->col ? (json_int_t)(k->col[i] / d->col_s + 0.5)
						       : 0));
		json_array_append_new(list,
				      json_pack("{s:s,s:s,s:s,s:i,s:I,s:I,s:o}", "id", k->id, "src",
						k->src, "dst", k->dst, "peer_pid", k->peer_pid,
						"bytes_sent", (json_int_t)k->sent, "bytes_recv",
						(json_int_t)k->recv, "bytes_per_s", a));
	}
	json_object_set_new(r, "conn_progress",
			    json_pack("{s:f,s:f,s:o,s:i}", "from_s",
				      (double)(d->t0_ns - c->start_ns) / 1e9, "column_s", d->col_s,
				      "conns", list, "more",
				      n > REPORT_CONNS_LISTED ? n - REPORT_CONNS_LISTED : 0));
	free(idx);
}

static json_int_t int_of(json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

static int by_rank(const void *a, const void *b)
{
	json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	json_int_t rx = int_of(x, "rank"), ry = int_of(y, "rank");

	if (rx != ry)
		return rx < ry ? -1 : 1;
	return int_of(x, "pid") < int_of(y, "pid") ? -1 : int_of(x, "pid") > int_of(y, "pid");
}

/*
 * In rank order, not in the order the ranks were named (ranks that start together come in
 * any order): a page's rows, a report's lines, the same for the same job
 */
static void sort_ranks(json_t *ranks)
{
	size_t n = json_array_size(ranks);
	json_t **v = n ? malloc(n * sizeof(*v)) : NULL;

	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(ranks, i));
	qsort(v, n, sizeof(*v), by_rank);
	json_array_clear(ranks);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(ranks, v[i]);
	free(v);
}

/* Ranks, in rank order, with their timelines and connection totals; NULL with err on a bad dump. */
json_t *report_ranks(const char *path, json_t *header, char *err, size_t errlen)
{
	struct rank_ctx c = {
		.ranks = json_array(),
		.logs = json_object(),
		.start_ns = (uint64_t)json_integer_value(json_object_get(header, "start_ns")),
		.conns = {.cols = true},
	};
	json_t *trace, *r;
	size_t i;

	if (dump_read(path, collect_ranks, &c, err, errlen)) {
		json_decref(c.ranks);
		json_decref(c.logs);
		dump_conns_free(&c.conns);
		heat_free(&c.heat);
		heat_free(&c.colls);
		return NULL;
	}
	reportlog_merge(c.ranks, c.logs);
	json_decref(c.logs);
	sort_ranks(c.ranks);
	json_array_foreach(c.ranks, i, r)
	{
		struct dump_conn_sum sum =
			dump_conns_of(&c.conns, (int)json_integer_value(json_object_get(r, "pid")));

		json_object_set_new(r, "connections", json_integer(sum.conns));
		json_object_set_new(r, "bytes_sent", json_integer(sum.sent));
		json_object_set_new(r, "bytes_recv", json_integer(sum.recv));
		json_object_set_new(r, "retrans", json_integer(sum.retrans));
		if (!c.nomem) {
			add_progress(r, &c, sum.net);
			add_conns(r, &c);
		}
	}
	dump_conns_free(&c.conns);
	heat_free(&c.heat);
	heat_free(&c.colls);
	trace = convert_dump(path, true, err, errlen);
	if (!trace) {
		json_decref(c.ranks);
		return NULL;
	}
	add_timelines(c.ranks, trace,
		      (uint64_t)json_integer_value(json_object_get(header, "start_ns")));
	json_decref(trace);
	return c.ranks;
}
