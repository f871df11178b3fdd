// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include "present/convert.h"
#include "present/dump.h"
#include "present/dumpconns.h"
#include "present/heat.h"
#include "present/stackrec.h"
#include "util/fmt.h"
#include "present/report.h"
#include "present/reportlog.h"

struct collect {
	json_t *findings; /* array, index = id - 1 where possible */
	json_t *header;
	json_t *footer;
	json_t *stacks; /* the latest `stack` record of each thread (stackrec) */
	char *err;
	size_t errlen;
	const char *path;
};

static const char *const required[] = {"kind", "phase", "since_s", "summary", "evidence"};

static int collect(void *ctx, json_t *rec, int line)
{
	struct collect *c = ctx;
	const char *type = json_string_value(json_object_get(rec, "type"));
	json_t *id;
	size_t i;
	json_t *v;

	if (line == 1) {
		c->header = json_incref(rec);
		return 0;
	}
	if (!type) {
		snprintf(c->err, c->errlen, "%s:%d: record without a \"type\"", c->path, line);
		return -1;
	}
	if (strcmp(type, "footer") == 0) {
		/* a dump with two footers (cut and appended to): the last one */
		json_decref(c->footer);
		c->footer = json_incref(rec);
		return 0;
	}
	if (strcmp(type, "stack") == 0)
		stackrec_note(c->stacks, rec);
	if (strcmp(type, "finding") != 0)
		return 0;
	id = json_object_get(rec, "id");
	if (!json_is_integer(id)) {
		snprintf(c->err, c->errlen, "%s:%d: finding without an integer \"id\"", c->path,
			 line);
		return -1;
	}
	for (i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		if (!json_object_get(rec, required[i])) {
			snprintf(c->err, c->errlen, "%s:%d: finding without \"%s\"", c->path, line,
				 required[i]);
			return -1;
		}
	}
	json_array_foreach(c->findings, i, v)
	{
		if (json_integer_value(json_object_get(v, "id")) == json_integer_value(id)) {
			json_t *copy = json_deep_copy(rec);

			json_object_del(copy, "type");
			stackrec_attach(c->stacks, copy);
			json_array_set_new(c->findings, i, copy);
			return 0;
		}
	}
	v = json_deep_copy(rec);
	json_object_del(v, "type");
	stackrec_attach(c->stacks, v);
	json_array_append_new(c->findings, v);
	return 0;
}

json_t *report_findings(const char *path, char *err, size_t errlen)
{
	struct collect c = {.findings = json_array(),
			    .stacks = stackrec_new(),
			    .err = err,
			    .errlen = errlen,
			    .path = path};
	json_t *out;
	int rc = dump_read(path, collect, &c, err, errlen);

	json_decref(c.stacks);
	if (rc) {
		json_decref(c.findings);
		json_decref(c.header);
		json_decref(c.footer);
		return NULL;
	}
	out = json_object();
	json_object_set_new(out, "findings", c.findings);
	json_object_set_new(out, "complete", json_boolean(c.footer != NULL));
	if (c.header) {
		json_object_set(out, "cmd", json_object_get(c.header, "cmd"));
		json_object_set(out, "host", json_object_get(c.header, "host"));
		json_object_set(out, "start_ns", json_object_get(c.header, "start_ns"));
	}
	if (c.footer) {
		json_object_set(out, "exit_status", json_object_get(c.footer, "exit_status"));
		json_object_set(out, "lost", json_object_get(c.footer, "lost"));
		json_object_set(out, "suppressed", json_object_get(c.footer, "suppressed"));
	}
	json_decref(c.header);
	json_decref(c.footer);
	return out;
}

/* "settings: NCCL_X=1 (read), NCCL_Y unset": the ranks' values where they disagree */
static void print_settings(json_t *set)
{
	const char *name;
	json_t *v;
	int n = 0;

	json_object_foreach(set, name, v)
	{
		const char *val = json_string_value(json_object_get(v, "value"));
		const char *ranks = json_string_value(json_object_get(v, "ranks"));

		const char *src = json_string_value(json_object_get(v, "source"));

		printf("%s%s", n++ ? ", " : "    settings: ", name);
		if (val)
			printf("=%s (%s)", val, src ? src : "?");
		else
			printf(" unset");
		if (ranks)
			printf(" [%s]", ranks);
	}
	if (n)
		printf("\n");
}

/* Per rank: its connections and bytes (last counts per connection), how it ended. */
struct rank_ctx {
	json_t *ranks; /* [{rank, pid, ...}] */
	struct dump_conns conns;
	json_t *logs;			      /* pid -> what NCCL's log told */
	struct heat heat;		      /* each process's bytes moved, at each snapshot */
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

#define HEAT_COLS 60

/*
 * A rank's bytes a second from the first snapshot to the last, in up to HEAT_COLS columns of
 * at least half a snapshot's interval (about a second)
 */
static void add_progress(json_t *r, const struct rank_ctx *c)
{
	int ncols = 2 * (c->nsnap - 1) < HEAT_COLS ? 2 * (c->nsnap - 1) : HEAT_COLS;
	double v[HEAT_COLS];
	json_t *a;

	if (!heat_columns(&c->heat, (int)json_integer_value(json_object_get(r, "pid")), c->first_ns,
			  c->last_ns, ncols, v))
		return;
	a = json_array();
	for (int i = 0; i < ncols; i++)
		json_array_append_new(a, json_real(v[i]));
	json_object_set_new(r, "progress",
			    json_pack("{s:f,s:f,s:o}", "from_s",
				      (double)(c->first_ns - c->start_ns) / 1e9, "column_s",
				      (double)(c->last_ns - c->first_ns) / 1e9 / ncols,
				      "bytes_per_s", a));
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
	};
	json_t *trace, *r;
	size_t i;

	if (dump_read(path, collect_ranks, &c, err, errlen)) {
		json_decref(c.ranks);
		json_decref(c.logs);
		dump_conns_free(&c.conns);
		heat_free(&c.heat);
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
		if (!c.nomem)
			add_progress(r, &c);
	}
	dump_conns_free(&c.conns);
	heat_free(&c.heat);
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

static void print_ib(json_t *ib)
{
	json_t *e;
	size_t i;

	if (!ib)
		return;
	printf("      IB: %lld QPs, %lld reached RTS",
	       (long long)json_integer_value(json_object_get(ib, "qps")),
	       (long long)json_integer_value(json_object_get(ib, "rts")));
	if (json_is_integer(json_object_get(ib, "timeout")))
		printf(" (timeout %lld, retry_cnt %lld)",
		       (long long)json_integer_value(json_object_get(ib, "timeout")),
		       (long long)json_integer_value(json_object_get(ib, "retry_cnt")));
	printf(", %lld destroyed", (long long)json_integer_value(json_object_get(ib, "destroyed")));
	if (json_integer_value(json_object_get(ib, "failed")))
		printf(", %lld failed changes",
		       (long long)json_integer_value(json_object_get(ib, "failed")));
	printf("\n");
	json_array_foreach(json_object_get(ib, "events"), i, e)
	{
		if (json_is_integer(json_object_get(e, "qp_num")))
			printf("      HCA event %s on QP 0x%llx\n",
			       json_string_value(json_object_get(e, "event")),
			       (unsigned long long)json_integer_value(
				       json_object_get(e, "qp_num")));
		else
			printf("      HCA event %s\n",
			       json_string_value(json_object_get(e, "event")));
	}
}

static void print_ranks(json_t *ranks)
{
	size_t i, j;
	json_t *r, *p;

	if (!json_array_size(ranks))
		return;
	printf("\nranks:\n");
	json_array_foreach(ranks, i, r)
	{
		char sb[16], rb[16];

		printf("  rank %lld (pid %lld): %lld connections, %s sent, %s received, %lld "
		       "retransmits%s%s\n",
		       (long long)json_integer_value(json_object_get(r, "rank")),
		       (long long)json_integer_value(json_object_get(r, "pid")),
		       (long long)json_integer_value(json_object_get(r, "connections")),
		       fmt_bytes(json_integer_value(json_object_get(r, "bytes_sent")), sb,
				 sizeof(sb)),
		       fmt_bytes(json_integer_value(json_object_get(r, "bytes_recv")), rb,
				 sizeof(rb)),
		       (long long)json_integer_value(json_object_get(r, "retrans")),
		       json_object_get(r, "ended") ? "; " : "",
		       json_string_value(json_object_get(r, "ended")) ?: "");
		print_ib(json_object_get(r, "ib"));
		reportlog_print(r);
		json_array_foreach(json_object_get(r, "timeline"), j, p)
		{
			if (j == 12) {
				printf("      ... %zu more\n",
				       json_array_size(json_object_get(r, "timeline")) - 12);
				break;
			}
			printf("      %8.3fs  %-44s %.3fs\n",
			       json_number_value(json_object_get(p, "start_s")),
			       json_string_value(json_object_get(p, "phase")),
			       json_number_value(json_object_get(p, "dur_s")));
		}
		if (json_is_number(json_object_get(r, "ended_s")))
			printf("      %8.3fs  %s\n",
			       json_number_value(json_object_get(r, "ended_s")),
			       json_string_value(json_object_get(r, "ended")));
	}
}

/*
 * A copy of v whose every string and key is safe on a terminal (fmt_safe): a dump is read from
 * anywhere, and what the traced processes wrote into it (names, command lines, NCCL's WARN text)
 * must not reach the terminal as escape sequences. NULL when out of memory.
 */
static json_t *safe_copy(json_t *v)
{
	char buf[4096];
	const char *k;
	json_t *c, *e, *out;
	size_t i;

	switch (json_typeof(v)) {
	case JSON_STRING:
		return json_string(fmt_safe(json_string_value(v), buf, sizeof(buf)));
	case JSON_ARRAY:
		out = json_array();
		json_array_foreach(v, i, e)
		{
			if (!out || !(c = safe_copy(e)) || json_array_append_new(out, c)) {
				json_decref(out);
				return NULL;
			}
		}
		return out;
	case JSON_OBJECT:
		out = json_object();
		json_object_foreach(v, k, e)
		{
			if (!out || !(c = safe_copy(e)) ||
			    json_object_set_new(out, fmt_safe(k, buf, sizeof(buf)), c)) {
				json_decref(out);
				return NULL;
			}
		}
		return out;
	default:
		return json_incref(v);
	}
}
/* "suppressed: 1234 records over the budget (1200 NCCL: net_socket_accept 1200; ...)" */
static void print_suppressed(json_t *sup)
{
	const char *k;
	json_t *v;
	int n = 0;

	if (!json_integer_value(json_object_get(sup, "total")))
		return;
	printf("\nsuppressed: %lld records over the tracer's budget, counted and not written "
	       "(%lld NCCL, %lld TCP, %lld process)",
	       (long long)json_integer_value(json_object_get(sup, "total")),
	       (long long)json_integer_value(json_object_get(sup, "nccl")),
	       (long long)json_integer_value(json_object_get(sup, "conn")),
	       (long long)json_integer_value(json_object_get(sup, "proc")));
	json_object_foreach(json_object_get(sup, "by_probe"), k, v) printf(
		"%s%s %lld", n++ ? ", " : "; by probe: ", k, (long long)json_integer_value(v));
	printf("\n");
}

#define HEAT_ROWS 64

/* one row's values: a rank's, or the least of a group's (a hang shows in its slowest rank) */
static int progress_row(json_t *ranks, size_t from, size_t to, double *v)
{
	int n = 0;

	for (size_t i = from; i < to; i++) {
		json_t *b = json_object_get(json_object_get(json_array_get(ranks, i), "progress"),
					    "bytes_per_s");

		if (i == from)
			n = (int)json_array_size(b);
		for (int k = 0; k < n && k < HEAT_COLS; k++) {
			double x = json_number_value(json_array_get(b, (size_t)k));

			v[k] = i == from || x < v[k] ? x : v[k];
		}
	}
	return n < HEAT_COLS ? n : HEAT_COLS;
}

/* "rank 1 #1": a rank, and the findings that name it the culprit */
static void culprit_label(json_t *r, json_t *rank, char *out, size_t len)
{
	json_t *f;
	size_t i;
	int o = snprintf(out, len, "rank %lld",
			 (long long)json_integer_value(json_object_get(rank, "rank")));

	json_array_foreach(json_object_get(r, "findings"), i, f)
	{
		if (json_is_integer(json_object_get(f, "pid")) &&
		    json_integer_value(json_object_get(f, "pid")) ==
			    json_integer_value(json_object_get(rank, "pid")) &&
		    o > 0 && (size_t)o < len)
			o += snprintf(out + o, len - (size_t)o, " #%lld",
				      (long long)json_integer_value(json_object_get(f, "id")));
	}
}

/*
 * Above the findings: a strip per rank of the bytes a second it moved, time across (a row per
 * group of ranks, the least of them, past HEAT_ROWS ranks), and where each finding opened.
 */
static void print_progress(json_t *r)
{
	json_t *ranks = json_object_get(r, "ranks"), *p, *f;
	size_t nr = json_array_size(ranks), per = (nr + HEAT_ROWS - 1) / HEAT_ROWS, i;
	/* block elements on a UTF-8 terminal; a file or a pipe gets ASCII, for any reader */
	bool utf8 = isatty(STDOUT_FILENO) &&
		    heat_utf8(getenv("LC_ALL"), getenv("LC_CTYPE"), getenv("LANG"));
	double v[HEAT_COLS], max = 0, col_s, from_s;
	char strip[HEAT_COLS * 3 + 1], mb[24], mark[HEAT_COLS + 1];
	int ncols;

	if (!nr || !(p = json_object_get(json_array_get(ranks, 0), "progress")))
		return;
	col_s = json_number_value(json_object_get(p, "column_s"));
	from_s = json_number_value(json_object_get(p, "from_s"));
	for (i = 0; i < nr; i++) {
		json_t *b = json_object_get(json_object_get(json_array_get(ranks, i), "progress"),
					    "bytes_per_s"),
		       *x;
		size_t k;

		json_array_foreach(b, k, x) if (json_number_value(x) > max) max =
			json_number_value(x);
	}
	if (max <= 0 || col_s <= 0)
		return;
	printf("\nprogress: bytes a second each rank moved, a column %.2fs from %.1fs (%s %s a "
	       "second; blank: nothing; #N: the culprit of finding N)%s:\n",
	       col_s, from_s, utf8 ? "\u2588" : "@", fmt_bytes((uint64_t)max, mb, sizeof(mb)),
	       per > 1 ? ", a row the least of its ranks" : "");
	for (i = 0; i < nr; i += per) {
		char label[32];
		size_t last = i + per < nr ? i + per : nr;

		ncols = progress_row(ranks, i, last, v);
		heat_strip(v, ncols, max, utf8, strip, sizeof(strip));
		if (per > 1)
			snprintf(label, sizeof(label), "ranks %lld-%lld",
				 (long long)json_integer_value(
					 json_object_get(json_array_get(ranks, i), "rank")),
				 (long long)json_integer_value(
					 json_object_get(json_array_get(ranks, last - 1), "rank")));
		else
			culprit_label(r, json_array_get(ranks, i), label, sizeof(label));
		printf("  %-13s |%s|\n", label, strip);
	}
	/* where each finding opened: its number, in the column of its time */
	ncols = (int)json_array_size(json_object_get(p, "bytes_per_s"));
	memset(mark, ' ', sizeof(mark));
	mark[ncols < HEAT_COLS ? ncols : HEAT_COLS] = '\0';
	json_array_foreach(json_object_get(r, "findings"), i, f)
	{
		double at = (double)(json_integer_value(json_object_get(f, "opened_ns")) -
				     json_integer_value(json_object_get(r, "start_ns"))) /
			    1e9;
		int c = (int)((at - from_s) / col_s);

		if (json_is_integer(json_object_get(f, "opened_ns")) && c >= 0 &&
		    c < (int)strlen(mark))
			mark[c] = i < 9 ? (char)('1' + i) : '+';
	}
	if (strspn(mark, " ") < strlen(mark))
		printf("  %-13s |%s| where each finding opened, by its number\n", "findings", mark);
}

static void print_report(json_t *r)
{
	json_t *fs = json_object_get(r, "findings"), *f, *cmd = json_object_get(r, "cmd"), *e;
	size_t i, j;

	printf("command:");
	json_array_foreach(cmd, i, e) printf(" %s", json_string_value(e));
	printf("\n");
	if (json_is_true(json_object_get(r, "complete")))
		printf("exit status: %lld\n",
		       (long long)json_integer_value(json_object_get(r, "exit_status")));
	else
		printf("the dump has no footer: the tracer did not finish (killed?)\n");
	print_progress(r);
	printf("%s%zu finding%s\n",
	       json_object_get(json_array_get(json_object_get(r, "ranks"), 0), "progress") ? "\n"
											   : "",
	       json_array_size(fs), json_array_size(fs) == 1 ? "" : "s");
	json_array_foreach(fs, i, f)
	{
		/* early: seen at the job's own rhythm, below -t; transient: over before -t */
		printf("\n#%lld %s (%s%s) %.1fs: %s\n",
		       (long long)json_integer_value(json_object_get(f, "id")),
		       json_string_value(json_object_get(f, "kind")),
		       json_string_value(json_object_get(f, "event")),
		       json_is_true(json_object_get(f, "transient")) ? ", transient"
		       : json_is_true(json_object_get(f, "early"))   ? ", early"
								     : "",
		       json_number_value(json_object_get(f, "since_s")),
		       json_string_value(json_object_get(f, "summary")));
		json_array_foreach(json_object_get(f, "evidence"), j, e)
			printf("    %s\n", json_string_value(e));
		stackrec_print(f);
		json_array_foreach(json_object_get(f, "hypotheses"), j, e)
			printf("    %s %s\n", j ? "or:" : "likely:", json_string_value(e));
		print_settings(json_object_get(f, "settings"));
	}
	print_ranks(json_object_get(r, "ranks"));
	if (json_object_get(r, "lost")) {
		json_t *lost = json_object_get(r, "lost");

		printf("\nlost: %lld ring-buffer drops, %lld connections and %lld processes "
		       "untracked\n",
		       (long long)json_integer_value(json_object_get(lost, "ringbuf_drops")),
		       (long long)json_integer_value(json_object_get(lost, "conns_map_full")),
		       (long long)json_integer_value(json_object_get(lost, "traced_map_full")));
	}
	print_suppressed(json_object_get(r, "suppressed"));
}

void report_print(json_t *r)
{
	json_t *safe = safe_copy(r);

	if (!safe) {
		fprintf(stderr, "nccltrace: out of memory\n");
		return;
	}
	print_report(safe);
	json_decref(safe);
}
