// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "util/grow.h"
#include "present/heat.h"

static struct heat_series *series(const struct heat *h, int pid)
{
	for (int i = 0; i < h->n; i++)
		if (h->s[i].pid == pid)
			return &h->s[i];
	return NULL;
}

/* as series(), the one after the last added first: each snapshot adds them in one order */
static struct heat_series *series_next(struct heat *h, int pid)
{
	struct heat_series *s;

	if (h->hint < h->n && h->s[h->hint].pid == pid)
		return &h->s[h->hint++];
	s = series(h, pid);
	if (s)
		h->hint = (int)(s - h->s) + 1;
	return s;
}

int heat_add(struct heat *h, int pid, uint64_t ts_ns, long long total)
{
	struct heat_series *s = series_next(h, pid);

	if (!s) {
		if (grow(&h->s, &h->cap, h->n, sizeof(*h->s), 16))
			return -1;
		s = &h->s[h->n++];
		memset(s, 0, sizeof(*s));
		s->pid = pid;
		h->hint = h->n;
	}
	if (s->n && s->pts[s->n - 1].ts_ns > ts_ns)
		return 0; /* out of order: the dump's clock never goes back */
	if (grow(&s->pts, &s->cap, s->n, sizeof(*s->pts), 64))
		return -1;
	s->pts[s->n++] = (struct heat_pt){ts_ns, total};
	return 0;
}

/*
 * The total at t: 0 before the first point, the last after the last, and in between the line
 * from the point before to the point after (the bytes of a snapshot's interval moved through
 * it, not at its end). *k: where the last call left off (t only grows).
 */
static double total_at(const struct heat_series *s, uint64_t t, int *k)
{
	const struct heat_pt *a, *b;

	while (*k < s->n && s->pts[*k].ts_ns <= t)
		(*k)++;
	if (!*k)
		return 0;
	a = &s->pts[*k - 1];
	if (*k == s->n)
		return (double)a->total;
	b = &s->pts[*k];
	return (double)a->total + (double)(b->total - a->total) * (double)(t - a->ts_ns) /
					  (double)(b->ts_ns - a->ts_ns);
}

bool heat_columns(const struct heat *h, int pid, uint64_t t0, uint64_t t1, int ncols, double *out)
{
	const struct heat_series *s = series(h, pid);
	double col_s, prev;
	int k = 0;

	if (t1 <= t0 || ncols < 1)
		return false;
	col_s = (double)(t1 - t0) / 1e9 / ncols;
	prev = s ? total_at(s, t0, &k) : 0;
	for (int c = 0; c < ncols; c++) {
		uint64_t end =
			c == ncols - 1 ? t1 : t0 + (uint64_t)((double)(t1 - t0) * (c + 1) / ncols);
		double now = s ? total_at(s, end, &k) : 0;

		out[c] = now > prev ? (now - prev) / col_s : 0;
		prev = now > prev ? now : prev;
	}
	return true;
}

void heat_resample(const double *v, int n, double from_s, double col_s, double *out, int nout,
		   double ofrom_s, double ocol_s)
{
	for (int o = 0; o < nout; o++) {
		double a = ofrom_s + o * ocol_s, b = a + ocol_s, sum = 0;
		int i = col_s > 0 ? (int)((a - from_s) / col_s) : n;

		for (i = i > 0 ? i : 0; i < n && from_s + i * col_s < b; i++) {
			double lo = from_s + i * col_s > a ? from_s + i * col_s : a,
			       hi = from_s + (i + 1) * col_s < b ? from_s + (i + 1) * col_s : b;

			if (hi > lo)
				sum += v[i] * (hi - lo);
		}
		out[o] = ocol_s > 0 ? sum / ocol_s : 0;
	}
}

void heat_strip(const double *v, int n, double max, bool utf8, char *out, size_t len)
{
	static const char *const blocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
	static const char ascii[] = ".:-=+*#@";
	size_t o = 0;

	for (int i = 0; i < n; i++) {
		int lvl = v[i] > 0 && max > 0 ? (int)(v[i] / max * 8) : -1;
		char a[2] = {' ', 0};
		const char *c = a;
		size_t cl;

		if (v[i] > 0 && max > 0 && lvl < 0)
			lvl = 0;
		if (lvl > 7)
			lvl = 7;
		if (lvl >= 0 && utf8)
			c = blocks[lvl];
		else if (lvl >= 0)
			a[0] = ascii[lvl];
		cl = strlen(c);
		if (o + cl >= len)
			break;
		memcpy(out + o, c, cl);
		o += cl;
	}
	if (len)
		out[o < len ? o : len - 1] = '\0';
}

bool heat_utf8(const char *lc_all, const char *lc_ctype, const char *lang)
{
	const char *v = lc_all && *lc_all ? lc_all : lc_ctype && *lc_ctype ? lc_ctype : lang;
	const char *dot = v ? strchr(v, '.') : NULL;

	if (!dot)
		return false;
	dot++;
	return !strncasecmp(dot, "utf-8", 5) || !strncasecmp(dot, "utf8", 4);
}

void heat_free(struct heat *h)
{
	for (int i = 0; i < h->n; i++)
		free(h->s[i].pts);
	free(h->s);
	memset(h, 0, sizeof(*h));
}
