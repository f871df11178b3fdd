// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "present/dumpconns.h"
#include "util/grow.h"

static struct dump_conn *get(struct dump_conns *d, const char *id)
{
	/* each snapshot lists its connections in the same order: the one after the last first */
	if (d->hint < d->n && !strcmp(d->v[d->hint].id, id))
		return &d->v[d->hint++];
	for (int k = 0; k < d->n; k++)
		if (!strcmp(d->v[k].id, id)) {
			d->hint = k + 1;
			return &d->v[k];
		}
	if (grow(&d->v, &d->cap, d->n, sizeof(*d->v), 64))
		return NULL;
	memset(&d->v[d->n], 0, sizeof(d->v[0]));
	snprintf(d->v[d->n].id, sizeof(d->v[0].id), "%s", id);
	d->v[d->n].mi = -1;
	d->hint = d->n + 1;
	return &d->v[d->n++];
}

/* pid's tally; c keeps its index, so a connection finds it at once the next time */
static struct dump_moved *moved(struct dump_conns *d, struct dump_conn *c)
{
	if (c->mi >= 0 && c->mi < d->nm && d->m[c->mi].pid == c->pid)
		return &d->m[c->mi];
	for (int k = 0; k < d->nm; k++)
		if (d->m[k].pid == c->pid) {
			c->mi = k;
			return &d->m[k];
		}
	if (grow(&d->m, &d->capm, d->nm, sizeof(*d->m), 16))
		return NULL;
	d->m[d->nm] = (struct dump_moved){.pid = c->pid};
	c->mi = d->nm;
	return &d->m[d->nm++];
}

/* the columns hold ts: each pair summed (for every connection) until they do */
static void widen_to(struct dump_conns *d, uint64_t ts)
{
	while ((double)(ts - d->t0_ns) / 1e9 >= d->col_s * DUMP_CONN_COLS) {
		for (int k = 0; k < d->n; k++) {
			double *c = d->v[k].col;

			for (int i = 0; c && i < DUMP_CONN_COLS; i++)
				c[i] = i < DUMP_CONN_COLS / 2 ? c[2 * i] + c[2 * i + 1] : 0;
		}
		d->col_s *= 2;
	}
}

/* rise spread evenly over [from, to] (seconds from t0), each column its share */
static void spread(const struct dump_conns *d, double *col, double rise, double from, double to)
{
	int i = (int)(from / d->col_s);

	if (to <= from) {
		col[i < DUMP_CONN_COLS ? i : DUMP_CONN_COLS - 1] += rise;
		return;
	}
	for (; i < DUMP_CONN_COLS && i * d->col_s < to; i++) {
		double a = i * d->col_s > from ? i * d->col_s : from,
		       b = (i + 1) * d->col_s < to ? (i + 1) * d->col_s : to;

		if (b > a)
			col[i] += rise * (b - a) / (to - from);
	}
}

/* a connection's addresses and peer, and with columns on, its rise in them */
static int take_cols(struct dump_conns *d, struct dump_conn *c, json_t *v, long long rise,
		     uint64_t ts)
{
	if (!c->src[0]) {
		snprintf(c->src, sizeof(c->src), "%s",
			 json_string_value(json_object_get(v, "src")) ?: "");
		snprintf(c->dst, sizeof(c->dst), "%s",
			 json_string_value(json_object_get(v, "dst")) ?: "");
	}
	if (!strcmp(json_string_value(json_object_get(v, "nccl")) ?: "", "net"))
		c->net = true;
	if (json_is_integer(json_object_get(v, "peer_pid")))
		c->peer_pid = (int)json_integer_value(json_object_get(v, "peer_pid"));
	/* what the first snapshot counts moved before it, at times it does not say */
	if (!d->cols || rise <= 0 || ts <= d->t0_ns)
		return 0;
	if (!c->col && !(c->col = calloc(DUMP_CONN_COLS, sizeof(*c->col))))
		return -ENOMEM;
	/* times from t0; a snapshot out of order (a clock gone back) is at its predecessor's */
	double to = ts > d->t0_ns ? (double)(ts - d->t0_ns) / 1e9 : 0,
	       from = d->last_ns > d->t0_ns ? (double)(d->last_ns - d->t0_ns) / 1e9 : 0;

	spread(d, c->col, (double)rise, from < to ? from : to, to);
	return 0;
}

int dump_conns_ncols(const struct dump_conns *d)
{
	int n;

	if (!d->last_ns)
		return 0;
	n = (int)((double)(d->last_ns - d->t0_ns) / 1e9 / d->col_s) + 1;
	return n < DUMP_CONN_COLS ? n : DUMP_CONN_COLS;
}

int dump_conns_update(struct dump_conns *d, json_t *snapshot)
{
	size_t i;
	json_t *v;
	uint64_t ts = (uint64_t)json_integer_value(json_object_get(snapshot, "ts_ns"));

	for (int k = 0; k < d->nm; k++)
		d->m[k].changed = false;
	if (d->cols) {
		if (!d->t0_ns)
			d->t0_ns = d->last_ns = ts;
		if (!d->col_s)
			d->col_s = 1;
		if (ts > d->t0_ns)
			widen_to(d, ts);
	}
	json_array_foreach(json_object_get(snapshot, "conns"), i, v)
	{
		const char *id = json_string_value(json_object_get(v, "id"));
		long long sent = json_integer_value(json_object_get(v, "bytes_sent")),
			  recv = json_integer_value(json_object_get(v, "bytes_recv")), rise;
		struct dump_conn *c;
		struct dump_moved *m;

		if (!id || json_is_true(json_object_get(v, "listener")))
			continue;
		c = get(d, id);
		if (!c)
			return -ENOMEM;
		c->pid = (int)json_integer_value(json_object_get(v, "pid"));
		rise = (sent >= c->sent ? sent - c->sent : sent) +
		       (recv >= c->recv ? recv - c->recv : recv);
		c->sent = sent;
		c->recv = recv;
		c->retrans = json_integer_value(json_object_get(v, "retrans"));
		if (take_cols(d, c, v, rise, ts))
			return -ENOMEM;
		if (rise > 0) {
			if (!(m = moved(d, c)))
				return -ENOMEM;
			m->bytes += rise;
			m->changed = true;
		}
	}
	if (ts > d->last_ns)
		d->last_ns = ts;
	return 0;
}

struct dump_conn_sum dump_conns_of(const struct dump_conns *d, int pid)
{
	struct dump_conn_sum s = {0};

	for (int k = 0; k < d->n; k++)
		if (d->v[k].pid == pid) {
			s.conns++;
			s.net |= d->v[k].net;
			s.sent += d->v[k].sent;
			s.recv += d->v[k].recv;
			s.retrans += d->v[k].retrans;
		}
	return s;
}

void dump_conns_free(struct dump_conns *d)
{
	for (int k = 0; k < d->n; k++)
		free(d->v[k].col);
	free(d->v);
	free(d->m);
	memset(d, 0, sizeof(*d));
}
