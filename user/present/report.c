// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include "present/dump.h"
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
	int rc = dump_read_events(path, collect, &c, err, errlen);

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
		if (json_object_get(c.footer, "budget"))
			json_object_set(out, "budget", json_object_get(c.footer, "budget"));
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

static void print_rank(json_t *r)
{
	char sb[16], rb[16];
	size_t j;
	json_t *p;

	printf("  rank %lld (pid %lld%s%s): %lld connections, %s sent, %s received, %lld "
	       "retransmits%s%s\n",
	       (long long)json_integer_value(json_object_get(r, "rank")),
	       (long long)json_integer_value(json_object_get(r, "pid")),
	       json_object_get(r, "host") ? ", " : "",
	       json_string_value(json_object_get(r, "host")) ?: "",
	       (long long)json_integer_value(json_object_get(r, "connections")),
	       fmt_bytes(json_integer_value(json_object_get(r, "bytes_sent")), sb, sizeof(sb)),
	       fmt_bytes(json_integer_value(json_object_get(r, "bytes_recv")), rb, sizeof(rb)),
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
		printf("      %8.3fs  %s\n", json_number_value(json_object_get(r, "ended_s")),
		       json_string_value(json_object_get(r, "ended")));
}

/* more ranks than a person reads one by one: the culprits', then the others in groups */
#define RANKS_IN_FULL 64

/* a rank some finding names as its culprit (on its host, in a merged report) */
static bool named(json_t *findings, json_t *r)
{
	const char *h = json_string_value(json_object_get(r, "host"));
	json_t *f;
	size_t i;

	json_array_foreach(findings, i, f)
	{
		const char *fh = json_string_value(json_object_get(f, "host"));

		if (json_is_integer(json_object_get(f, "rank")) &&
		    json_equal(json_object_get(f, "rank"), json_object_get(r, "rank")) &&
		    (!h || !fh || !strcmp(h, fh)))
			return true;
	}
	return false;
}

static const char *last_phase(json_t *r)
{
	json_t *tl = json_object_get(r, "timeline");

	return json_string_value(
		       json_object_get(json_array_get(tl, json_array_size(tl) - 1), "phase"))
		       ?: "no NCCL phase seen";
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/*
 * The ranks of a group: those after i (not yet told) on i's host, in i's last phase, ended as
 * it ended; each marked told, their ranks into list ("40-47", "3,9,12-15")
 */
static size_t take_group(json_t *ranks, size_t i, bool *told, char *list, size_t len)
{
	json_t *a = json_array_get(ranks, i), *b;
	size_t n = 0, off = 0, j;
	long long run_lo = -2, run_hi = -2;

	list[0] = '\0';
	for (j = i; j < json_array_size(ranks); j++) {
		long long rk;

		b = json_array_get(ranks, j);
		if (told[j] ||
		    !same_str(json_string_value(json_object_get(a, "host")),
			      json_string_value(json_object_get(b, "host"))) ||
		    strcmp(last_phase(a), last_phase(b)) ||
		    !same_str(json_string_value(json_object_get(a, "ended")),
			      json_string_value(json_object_get(b, "ended"))))
			continue;
		told[j] = true;
		n++;
		rk = json_integer_value(json_object_get(b, "rank"));
		if (rk == run_hi + 1) {
			run_hi = rk;
			continue;
		}
		if (run_lo >= -1 && off < len)
			off += (size_t)snprintf(list + off, len - off,
						run_hi > run_lo ? "%s%lld-%lld" : "%s%lld",
						off ? "," : "", run_lo, run_hi);
		run_lo = run_hi = rk;
	}
	if (run_lo >= -1 && off < len)
		snprintf(list + off, len - off, run_hi > run_lo ? "%s%lld-%lld" : "%s%lld",
			 off ? "," : "", run_lo, run_hi);
	return n;
}

static void print_ranks(json_t *ranks, json_t *findings)
{
	size_t n = json_array_size(ranks), i, shown = 0;
	bool *told;
	json_t *r;

	if (!n)
		return;
	told = n > RANKS_IN_FULL ? calloc(n, sizeof(*told)) : NULL;
	if (!told) {
		printf("\nranks:\n");
		json_array_foreach(ranks, i, r) print_rank(r);
		return;
	}
	printf("\nranks: %zu, more than %d: each culprit's in full, then the others a line for "
	       "each host, last phase and end:\n",
	       n, RANKS_IN_FULL);
	json_array_foreach(ranks, i, r) if (named(findings, r))
	{
		print_rank(r);
		told[i] = true;
		shown++;
	}
	if (shown)
		printf("\n");
	for (i = 0; i < n; i++) {
		char list[256];
		size_t k;

		if (told[i])
			continue;
		r = json_array_get(ranks, i);
		k = take_group(ranks, i, told, list, sizeof(list));
		printf("  %s: %zu rank%s (%s%s): last %s, %s\n",
		       json_string_value(json_object_get(r, "host")) ?: "this host", k,
		       k == 1 ? "" : "s", list, strlen(list) == sizeof(list) - 1 ? "..." : "",
		       last_phase(r),
		       json_string_value(json_object_get(r, "ended")) ?: "running at the end");
	}
	free(told);
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

/* the strips' grid: from the earliest rank's first column to the latest's last */
struct grid {
	double from_s, col_s;
	int n;
	double max[2]; /* the job's most bytes a second, and collectives a second */
};

/* a rank's columns: bytes a second, or (unit 1) collectives a second where its NCCL uses no socket */
static json_t *prog_vals(json_t *p, int *unit)
{
	json_t *b = json_object_get(p, "bytes_per_s");

	*unit = !b;
	return b ?: json_object_get(p, "collectives_per_s");
}

static struct grid progress_grid(json_t *ranks)
{
	struct grid g = {0};
	double to = 0;
	bool any = false;
	size_t i;
	json_t *r;

	json_array_foreach(ranks, i, r)
	{
		json_t *p = json_object_get(r, "progress"), *b, *x;
		double f = json_number_value(json_object_get(p, "from_s")),
		       c = json_number_value(json_object_get(p, "column_s"));
		int unit, n = (int)json_array_size(b = prog_vals(p, &unit));
		size_t k;

		if (!p || c <= 0 || !n)
			continue;
		json_array_foreach(b, k, x) if (json_number_value(x) > g.max[unit]) g.max[unit] =
			json_number_value(x);
		if (!any || f < g.from_s)
			g.from_s = f;
		if (!any || f + n * c > to)
			to = f + n * c;
		if (n > g.n)
			g.n = n;
		any = true;
	}
	if (!any || to <= g.from_s)
		return (struct grid){0};
	g.n = g.n < REPORT_HEAT_COLS ? g.n : REPORT_HEAT_COLS;
	g.col_s = (to - g.from_s) / g.n;
	return g;
}

/*
 * one row's values on the grid, each against its unit's most (0..1): a rank's, or the least
 * of a group's (a hang shows in its slowest rank); ranks of one dump share its columns, a
 * merged report's are resampled
 */
static void progress_row(json_t *ranks, size_t from, size_t to, const struct grid *g, double *v)
{
	for (size_t i = from; i < to; i++) {
		json_t *p = json_object_get(json_array_get(ranks, i), "progress"), *b;
		double in[REPORT_HEAT_COLS], x[REPORT_HEAT_COLS];
		int unit, n = (int)json_array_size(b = prog_vals(p, &unit));

		n = n < REPORT_HEAT_COLS ? n : REPORT_HEAT_COLS;
		for (int k = 0; k < n; k++)
			in[k] = g->max[unit] > 0 ? json_number_value(json_array_get(b, (size_t)k)) /
							   g->max[unit]
						 : 0;
		heat_resample(in, n, json_number_value(json_object_get(p, "from_s")),
			      json_number_value(json_object_get(p, "column_s")), x, g->n, g->from_s,
			      g->col_s);
		for (int k = 0; k < g->n; k++)
			v[k] = i == from || x[k] < v[k] ? x[k] : v[k];
	}
}

static const char *host_of(json_t *ranks, size_t i)
{
	return json_string_value(json_object_get(json_array_get(ranks, i), "host")) ?: "";
}

/* the runs of ranks of one host (a merged report lists each host's ranks together) */
static size_t host_runs(json_t *ranks)
{
	size_t n = 0;

	for (size_t i = 0; i < json_array_size(ranks); i++)
		n += !i || strcmp(host_of(ranks, i), host_of(ranks, i - 1));
	return n;
}

/* the end of the row from i: its host's last rank + 1, or per ranks on */
static size_t group_end(json_t *ranks, size_t i, size_t per, bool by_host)
{
	size_t nr = json_array_size(ranks), e = i + 1;

	if (!by_host)
		return i + per < nr ? i + per : nr;
	while (e < nr && !strcmp(host_of(ranks, e), host_of(ranks, i)))
		e++;
	return e;
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
	json_t *ranks = json_object_get(r, "ranks"), *f;
	size_t nr = json_array_size(ranks), per = (nr + HEAT_ROWS - 1) / HEAT_ROWS, i;
	/* block elements on a UTF-8 terminal; a file or a pipe gets ASCII, for any reader */
	bool utf8 = isatty(STDOUT_FILENO) &&
		    heat_utf8(getenv("LC_ALL"), getenv("LC_CTYPE"), getenv("LANG"));
	struct grid g = progress_grid(ranks);
	double v[REPORT_HEAT_COLS], col_s = g.col_s, from_s = g.from_s;
	char strip[REPORT_HEAT_COLS * 3 + 1], mb[24], mark[REPORT_HEAT_COLS + 1], colls[32] = "",
										  what[160];
	bool by_host;

	if (!nr || !g.n || (g.max[0] <= 0 && g.max[1] <= 0) || col_s <= 0)
		return;
	/* a merged report's many ranks: a row per host where the hosts fit */
	by_host = per > 1 && host_runs(ranks) > 1 && host_runs(ranks) <= HEAT_ROWS;
	/* the units: bytes, and collectives for the ranks whose NCCL uses no socket */
	if (g.max[0] > 0)
		snprintf(what, sizeof(what), "bytes a second each rank moved (%s %s a second%s",
			 utf8 ? "\u2588" : "@", fmt_bytes((uint64_t)g.max[0], mb, sizeof(mb)),
			 g.max[1] > 0 ? "; a rank whose NCCL uses no socket: collectives a second"
				      : "");
	else
		snprintf(what, sizeof(what),
			 "collectives a second each rank ran (its NCCL uses no "
			 "socket");
	if (g.max[1] > 0)
		snprintf(colls, sizeof(colls), ", %s %.1f", utf8 ? "\u2588" : "@", g.max[1]);
	printf("\nprogress: %s%s; a column %.2fs from %.1fs; blank: nothing; #N: the culprit of "
	       "finding N)%s:\n",
	       what, colls, col_s, from_s,
	       by_host	 ? ", a row a host (its ranks), the least of them"
	       : per > 1 ? ", a row the least of its ranks"
			 : "");
	for (i = 0; i < nr; i = group_end(ranks, i, per, by_host)) {
		char label[32];
		size_t last = group_end(ranks, i, per, by_host);

		progress_row(ranks, i, last, &g, v);
		heat_strip(v, g.n, 1, utf8, strip, sizeof(strip));
		if (by_host)
			snprintf(label, sizeof(label), "%.8s (%zu)", host_of(ranks, i), last - i);
		else if (per > 1)
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
	memset(mark, ' ', sizeof(mark));
	mark[g.n] = '\0';
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

/* what --max-dump-bytes left out of a dump (host: which, in a merged report) */
static void print_budget(json_t *b, const char *host, json_int_t start)
{
	json_int_t met = json_integer_value(json_object_get(b, "met_ns"));
	char sz[32], wr[32];

	if (!b)
		return;
	printf("\ndump budget%s%s (--max-dump-bytes): %s, %s written; %lld calm frames thinned",
	       host ? " of " : "", host ? host : "",
	       fmt_bytes((uint64_t)json_integer_value(json_object_get(b, "bytes")), sz, sizeof(sz)),
	       fmt_bytes((uint64_t)json_integer_value(json_object_get(b, "written")), wr,
			 sizeof(wr)),
	       (long long)json_integer_value(json_object_get(b, "calm_thinned")));
	if (met && start && met > start)
		printf("; met %.0f s into the trace", (double)(met - start) / 1e9);
	else if (met)
		printf("; met");
	if (met)
		printf(": %lld frames and %lld records after that are not in the dump, nor any "
		       "finding they held",
		       (long long)json_integer_value(json_object_get(b, "frames_dropped")),
		       (long long)json_integer_value(json_object_get(b, "records_dropped")));
	printf("\n");
}

static void print_budgets(json_t *r)
{
	json_int_t start = json_integer_value(json_object_get(r, "start_ns"));
	json_t *m, *dumps = json_object_get(json_object_get(r, "merged"), "dumps");
	size_t i;

	print_budget(json_object_get(r, "budget"), NULL, start);
	/* a host's own start is its dump's: the merged start is the first host's */
	json_array_foreach(dumps, i, m) print_budget(
		json_object_get(m, "budget"), json_string_value(json_object_get(m, "host")), 0);
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
	print_ranks(json_object_get(r, "ranks"), json_object_get(r, "findings"));
	if (json_object_get(r, "lost")) {
		json_t *lost = json_object_get(r, "lost");

		printf("\nlost: %lld ring-buffer drops, %lld connections and %lld processes "
		       "untracked\n",
		       (long long)json_integer_value(json_object_get(lost, "ringbuf_drops")),
		       (long long)json_integer_value(json_object_get(lost, "conns_map_full")),
		       (long long)json_integer_value(json_object_get(lost, "traced_map_full")));
	}
	print_suppressed(json_object_get(r, "suppressed"));
	print_budgets(r);
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
