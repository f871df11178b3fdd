// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/fmt.h"
#include "present/tuilayout.h"
#include "present/heat.h"

int tui_frame_alloc(struct tui_frame *f, int w, int h)
{
	if (w < 1)
		w = 1;
	if (h < 1)
		h = 1;
	f->text = malloc((size_t)w * h);
	f->attr = malloc((size_t)w * h);
	if (!f->text || !f->attr) {
		tui_frame_free(f);
		return -ENOMEM;
	}
	f->w = w;
	f->h = h;
	return 0;
}

void tui_frame_free(struct tui_frame *f)
{
	free(f->text);
	free(f->attr);
	f->text = NULL;
	f->attr = NULL;
	f->w = f->h = 0;
}

const char *tui_frame_row(const struct tui_frame *f, int y, char *buf, int len)
{
	int n = f->w < len - 1 ? f->w : len - 1;

	memcpy(buf, f->text + (size_t)y * f->w, n);
	buf[n] = '\0';
	return buf;
}

/* Text at (x, y), clipped to the frame and to at most max columns; returns the new x. */
__attribute__((format(printf, 6, 7))) static int put(struct tui_frame *f, int x, int y, int max,
						     enum tui_attr a, const char *fmt_, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	if (y < 0 || y >= f->h || x >= f->w)
		return x;
	va_start(ap, fmt_);
	n = vsnprintf(buf, sizeof(buf), fmt_, ap);
	va_end(ap);
	if (n < 0)
		return x;
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	if (max >= 0 && n > max)
		n = max;
	for (int i = 0; i < n && x < f->w; i++, x++) {
		unsigned char c = buf[i];

		/* ASCII only: one byte, one cell */
		f->text[(size_t)y * f->w + x] = c >= 32 && c < 127 ? c : '?';
		f->attr[(size_t)y * f->w + x] = a;
	}
	return x;
}

static void paint(struct tui_frame *f, int y, enum tui_attr a)
{
	if (y < 0 || y >= f->h)
		return;
	memset(f->attr + (size_t)y * f->w, a, f->w);
}

static const char *age(double s, char *buf, size_t len)
{
	if (s < 0)
		snprintf(buf, len, "-");
	else if (s < 100)
		snprintf(buf, len, "%.1fs", s);
	else if (s < 6000)
		snprintf(buf, len, "%.0fm", s / 60);
	else
		snprintf(buf, len, "%.0fh", s / 3600);
	return buf;
}

static const char *rate(double bps, char *buf, size_t len)
{
	char b[16];

	if (bps < 0.5)
		snprintf(buf, len, "0");
	else
		snprintf(buf, len, "%s/s", fmt_bytes((uint64_t)bps, b, sizeof(b)));
	return buf;
}

/* A pane title: " Ranks (4) ", focused panes marked. */
static void title(struct tui_frame *f, int y, bool focus, const char *text)
{
	paint(f, y, TA_TITLE);
	put(f, 0, y, -1, TA_TITLE, "%s %s", focus ? ">" : " ", text);
}

static void header(const struct tui_model *m, const struct tui_state *st, struct tui_frame *f)
{
	char el[16], ranks[32], supp[40] = "";
	int x;

	paint(f, 0, TA_BAR);
	if (m->ranks_expected > 0)
		snprintf(ranks, sizeof(ranks), "%d/%d", m->ranks_seen, m->ranks_expected);
	else
		snprintf(ranks, sizeof(ranks), "%d", m->ranks_seen);
	if (m->suppressed)
		snprintf(supp, sizeof(supp), "  suppressed %llu",
			 (unsigned long long)m->suppressed);
	x = put(f, 0, 0, -1, TA_BAR, " nccltrace  %s  ranks %s  %s  lost %llu%s%s%s  ",
		age(m->elapsed_s, el, sizeof(el)), ranks, m->mode, (unsigned long long)m->lost,
		supp, m->job_done ? "  job ended" : "", st->paused ? "  PAUSED" : "");
	x = put(f, x, 0, -1, TA_BAR, "%s", m->cmd);
	if (x + 8 < f->w)
		put(f, x, 0, -1, TA_BAR, "  dump %s", m->dump);
}

static void keybar(const struct tui_state *st, struct tui_frame *f)
{
	int y = f->h - 1;

	paint(f, y, TA_BAR);
	if (st->confirm_quit)
		put(f, 0, y, -1, TA_BAR,
		    " Stop the job too?  y: stop it and wait for it   n: leave it running, stop "
		    "tracing   Esc: cancel");
	else if (st->status[0])
		put(f, 0, y, -1, TA_BAR, " %s", st->status);
	else if (st->view != VIEW_MAIN)
		put(f, 0, y, -1, TA_BAR, " Esc/Enter back   q quit   ? help");
	else
		put(f, 0, y, -1, TA_BAR,
		    " q quit  p pause  s sort:%s  Tab pane  Up/Down/PgUp/PgDn scroll  Enter "
		    "details  "
		    "d snapshot  ? help",
		    tui_sort_name(st->sort));
}

static int clamp_scroll(int scroll, int n, int rows)
{
	if (scroll > n - rows)
		scroll = n - rows;
	return scroll < 0 ? 0 : scroll;
}

/*
 * A rank's or a connection's progress history from x to the frame's edge: the latest seconds that fit, one
 * column each, the newest at the right (ASCII heights: the frame is one byte a cell)
 */
static void sparkline(struct tui_frame *f, int x, int y, enum tui_attr a, const float *spark,
		      int nspark, double max)
{
	int n = nspark < f->w - x ? nspark : f->w - x;
	double v[TUI_SPARK];
	char s[TUI_SPARK + 1];

	if (n <= 0 || max <= 0)
		return;
	for (int i = 0; i < n; i++)
		v[i] = spark[nspark - n + i];
	heat_strip(v, n, max, false, s, sizeof(s));
	put(f, x, y, n, a, "%s", s);
}

static void ranks_pane(const struct tui_model *m, const struct tui_state *st, struct tui_frame *f,
		       int y, int rows)
{
	int wide = f->w >= 140, phase_w = wide ? 48 : 22, host_w = wide ? 20 : 10;
	int sc = clamp_scroll(st->scroll[PANE_RANKS], m->nranks, rows - 2), x;
	char t[64];

	snprintf(t, sizeof(t), "Ranks (%d)", m->nranks);
	title(f, y, st->focus == PANE_RANKS, t);
	x = put(f, 0, y + 1, -1, TA_TITLE, "  %-5s %-*s %-7s %-3s %-2s %-*s %7s  %-*s %-8s", "RANK",
		host_w, "HOST", "PID", "GPU", "ST", phase_w, "NCCL PHASE", "IN", wide ? 36 : 18,
		"COLLECTIVES", "PROGRESS");
	if (f->w - x > 13)
		put(f, x + 1, y + 1, f->w - x - 1, TA_TITLE,
		    "BYTES/S, A SECOND EACH, NOW AT THE RIGHT");
	for (int i = 0; i + 2 < rows && sc + i < m->nranks; i++) {
		const struct tui_rank *r = &m->ranks[sc + i];
		enum tui_attr a = r->culprit ? TA_CULPRIT : r->waiting ? TA_WAITING : TA_NORMAL;
		char rk[16], in[16], pr[16], gpu[12] = "-";

		if (r->group) {
			/* "~ 31 ranks wait on rank 20 (0-19,21-31), longest 8.0s": Enter opens it */
			paint(f, y + 2 + i, TA_WAITING);
			put(f, 0, y + 2 + i, -1, TA_WAITING,
			    "%s %d ranks %s (%s), longest %s without progress%s",
			    sc + i == sc && st->focus == PANE_RANKS ? ">" : "~", r->group, r->phase,
			    r->members, age(r->progress_age_s, pr, sizeof(pr)),
			    sc + i == sc && st->focus == PANE_RANKS ? "  [Enter: one by one]" : "");
			continue;
		}
		if (r->rank >= 0)
			snprintf(rk, sizeof(rk), "%d", r->rank);
		else
			snprintf(rk, sizeof(rk), "-");
		if (r->gpu >= 0)
			snprintf(gpu, sizeof(gpu), "%d", r->gpu);
		paint(f, y + 2 + i, a);
		x = put(f, 0, y + 2 + i, -1, a,
			"%s %-5s %-*.*s %-7d %-3s %-2c %-*.*s %7s  %-*.*s %-8s",
			r->culprit   ? "!"
			: r->waiting ? "~"
				     : " ",
			rk, host_w, host_w, r->host, r->pid, gpu, r->state, phase_w, phase_w,
			r->phase[0] ? r->phase : "-",
			r->in_phase_s >= 0 ? age(r->in_phase_s, in, sizeof(in)) : "",
			wide ? 36 : 18, wide ? 36 : 18, r->colls[0] ? r->colls : "-",
			age(r->progress_age_s, pr, sizeof(pr)));
		sparkline(f, x + 1, y + 2 + i, a, r->spark, r->nspark, m->spark_max);
	}
}

static void conns_pane(const struct tui_model *m, const struct tui_state *st, struct tui_frame *f,
		       int y, int rows)
{
	int wide = f->w >= 140, to_w = wide ? 40 : 21, lab_w = wide ? 28 : 12, x;
	int sc = clamp_scroll(st->scroll[PANE_CONNS], m->nconns, rows - 2);
	char t[64];

	snprintf(t, sizeof(t), "Connections (%d), %s first", m->nconns,
		 st->sort == SORT_WORST	 ? "worst"
		 : st->sort == SORT_RATE ? "busiest"
					 : "spinning");
	title(f, y, st->focus == PANE_CONNS, t);
	/* wide: NCCL's label and the transport its log names; narrow: the transport, else the label */
	x = put(f, 0, y + 1, -1, TA_TITLE, "  %-8s %-*s %-*s%s%-*s %10s %10s %6s %8s %4s %7s %-10s",
		"FROM", to_w, "TO", lab_w, "NCCL", wide ? " " : "", wide ? 14 : 0,
		wide ? "VIA" : "", "TX", "RX", "IDLE", "EAGAIN", "RTX", "RTT", "QUEUE");
	if (f->w - x > 13)
		put(f, x + 1, y + 1, f->w - x - 1, TA_TITLE,
		    "BYTES/S, A SECOND EACH, NOW AT THE RIGHT");
	for (int i = 0; i + 2 < rows && sc + i < m->nconns; i++) {
		const struct tui_conn *c = &m->conns[sc + i];
		enum tui_attr a = c->waiting ? TA_WAITING : TA_NORMAL;
		char tx[16], rx[16], id[16], ea[24], q[16], rtt[16], n[16];

		snprintf(ea, sizeof(ea), "%s/s", fmt_count((uint64_t)c->eagain_ps, n, sizeof(n)));
		if (c->rtt_us)
			snprintf(rtt, sizeof(rtt), "%.1fms", c->rtt_us / 1000.0);
		else
			snprintf(rtt, sizeof(rtt), "-");
		paint(f, y + 2 + i, a);
		x = put(f, 0, y + 2 + i, -1, a,
			"%s %-8.8s %-*.*s %-*.*s%s%-*.*s %10s %10s %6s %8s %4u %7s %-10s",
			c->waiting ? "~" : " ", c->from, to_w, to_w, c->to, lab_w, lab_w,
			!wide && c->via[0] ? c->via
			: c->label[0]	   ? c->label
					   : "-",
			wide ? " " : "", wide ? 14 : 0, wide ? 14 : 0,
			wide ? (c->via[0] ? c->via : "-") : "", rate(c->tx_bps, tx, sizeof(tx)),
			rate(c->rx_bps, rx, sizeof(rx)), age(c->age_s, id, sizeof(id)),
			c->eagain_ps >= 0.5 ? ea : "0", c->retrans, rtt,
			fmt_bytes(c->queue, q, sizeof(q)));
		sparkline(f, x + 1, y + 2 + i, a, c->spark, c->nspark, m->conn_spark_max);
	}
}

static void findings_pane(const struct tui_model *m, const struct tui_state *st,
			  struct tui_frame *f, int y, int rows)
{
	int line = 0, open = 0, early = 0, transient = 0;
	char t[96];

	for (int i = 0; i < m->nfindings; i++) {
		open += m->findings[i].open && !m->findings[i].early;
		early += m->findings[i].early;
		transient += m->findings[i].transient;
	}
	/* early and transient ones apart: a wait seen fast is not yet an alarm */
	if (early || transient)
		snprintf(t, sizeof(t), "Findings (%d open, %d early, %d transient, %d in all)",
			 open, early, transient, m->nfindings);
	else
		snprintf(t, sizeof(t), "Findings (%d open, %d in all)", open, m->nfindings);
	title(f, y, st->focus == PANE_FINDINGS, t);
	if (!m->nfindings)
		put(f, 2, y + 1, -1, TA_GOOD, "none: every rank is making progress");
	/* each finding: its line, then its first evidence while room is left */
	for (int i = clamp_scroll(st->scroll[PANE_FINDINGS], m->nfindings, 1);
	     i < m->nfindings && line + 1 < rows; i++) {
		const struct tui_finding *fd = &m->findings[i];
		enum tui_attr a = !fd->open					    ? TA_DIM
				  : i == st->selected && st->focus == PANE_FINDINGS ? TA_SELECT
										    : TA_CULPRIT;
		char s[16];

		paint(f, y + 1 + line, a);
		put(f, 0, y + 1 + line, -1, a, "%c %s %s%s  %s",
		    i == st->selected && st->focus == PANE_FINDINGS ? '>' : ' ', fd->kind,
		    age(fd->since_s, s, sizeof(s)),
		    fd->early	    ? " early"
		    : fd->transient ? " transient"
				    : "",
		    fd->summary);
		line++;
		for (int k = 0; k < fd->nevidence && k < 2 && fd->open && line + 1 < rows; k++)
			put(f, 4, y + 1 + line++, -1, TA_NORMAL, "%s", fd->evidence[k]);
		if (fd->nhyp && fd->open && line + 1 < rows)
			put(f, 4, y + 1 + line++, -1, TA_NORMAL, "likely: %s", fd->hyp[0]);
	}
}

static void log_pane(const struct tui_model *m, const struct tui_state *st, struct tui_frame *f,
		     int y, int rows)
{
	int n = rows - 1, first = m->nlog - n - st->scroll[PANE_LOG];

	title(f, y, st->focus == PANE_LOG, "Job output (the log file next to the dump has it all)");
	if (first < 0)
		first = 0;
	for (int i = 0; i < n && first + i < m->nlog; i++)
		put(f, 1, y + 1 + i, -1, TA_DIM, "%s", m->log[first + i]);
}

/* Word-wrapped text from row y, indented; returns the next row. */
static int wrap(struct tui_frame *f, int y, int indent, enum tui_attr a, const char *s)
{
	int w = f->w - indent - 1;
	size_t len = strlen(s);

	if (w < 10)
		w = 10;
	while (len && y < f->h - 1) {
		int n = (int)len > w ? w : (int)len;

		if ((int)len > w)
			for (int k = n; k > w / 2; k--)
				if (s[k] == ' ') {
					n = k;
					break;
				}
		put(f, indent, y++, n, a, "%s", s);
		s += n;
		len -= n;
		while (*s == ' ') {
			s++;
			len--;
		}
	}
	return y;
}

static void detail_view(const struct tui_model *m, const struct tui_state *st, struct tui_frame *f)
{
	const struct tui_finding *fd;
	char s[16];
	int y = 1;

	if (st->selected < 0 || st->selected >= m->nfindings) {
		put(f, 2, 2, -1, TA_NORMAL, "no finding selected");
		return;
	}
	fd = &m->findings[st->selected];
	paint(f, y, TA_TITLE);
	put(f, 0, y++, -1, TA_TITLE, "  %s, %s for %s", fd->kind, fd->open ? "open" : "closed",
	    age(fd->since_s, s, sizeof(s)));
	y = wrap(f, y + 1, 2, TA_CULPRIT, fd->summary);
	if (fd->nevidence && y < f->h - 2) {
		put(f, 2, ++y, -1, TA_TITLE, "Evidence");
		y++;
		for (int k = 0; k < fd->nevidence; k++)
			y = wrap(f, y, 4, TA_NORMAL, fd->evidence[k]);
	}
	if (fd->nhyp && y < f->h - 2) {
		put(f, 2, ++y, -1, TA_TITLE, "Likely causes, most likely first");
		y++;
		for (int k = 0; k < fd->nhyp; k++)
			y = wrap(f, y, 4, TA_NORMAL, fd->hyp[k]);
	}
	if (fd->settings[0] && y < f->h - 2) {
		put(f, 2, ++y, -1, TA_TITLE, "Settings");
		wrap(f, y + 1, 4, TA_NORMAL, fd->settings);
	}
}

static void help_view(struct tui_frame *f)
{
	static const char *const lines[] = {
		"q          stop tracing; asks whether to stop the job too",
		"p          pause the display (tracing and the dump go on)",
		"s          sort connections: worst (waiting, longest idle), busiest, spinning",
		"Tab        move between panes: ranks, connections, findings, job output",
		"Up/Down    scroll the pane (in findings: select one)",
		"PgUp/PgDn  scroll a page",
		"Enter      the selected finding in full: evidence, causes, settings",
		"d          write a snapshot to the dump now",
		"?          this help; Esc goes back",
		"",
		"! marks the rank the others wait on, ~ a rank or connection that waits.",
		("IDLE is the time since a connection last moved a byte; PROGRESS the same per "
		 "rank."),
	};
	int y = 2;

	paint(f, 1, TA_TITLE);
	put(f, 0, 1, -1, TA_TITLE, "  Keys");
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		put(f, 4, y++, -1, TA_NORMAL, "%s", lines[i]);
}

void tui_layout(const struct tui_model *m, const struct tui_state *st, struct tui_frame *f)
{
	int avail = f->h - 2, rf, rl, rr, rc, need_f, y = 1;

	memset(f->text, ' ', (size_t)f->w * f->h);
	memset(f->attr, TA_NORMAL, (size_t)f->w * f->h);
	header(m, st, f);
	keybar(st, f);
	if (st->view == VIEW_DETAIL) {
		detail_view(m, st, f);
		return;
	}
	if (st->view == VIEW_HELP) {
		help_view(f);
		return;
	}
	if (avail < 8) {
		put(f, 0, 1, -1, TA_NORMAL, "terminal too small (%dx%d)", f->w, f->h);
		return;
	}
	/*
	 * Each pane gets what it needs within its share: findings first (a third at most), then
	 * ranks, then connections; the job's output takes what is left, at least two rows.
	 */
	need_f = 1;
	for (int i = 0; i < m->nfindings; i++)
		need_f += m->findings[i].open
				  ? 2 + (m->findings[i].nevidence > 1) + (m->findings[i].nhyp > 0)
				  : 1;
	rf = need_f < 2 ? 2 : need_f;
	if (rf > avail / 3)
		rf = avail / 3;
	rr = m->nranks + 2;
	if (rr > (avail - rf - 2) / 2)
		rr = (avail - rf - 2) / 2;
	if (rr < 3)
		rr = 3;
	rc = m->nconns + 2;
	if (rc > avail - rf - rr - 2)
		rc = avail - rf - rr - 2;
	if (rc < 3)
		rc = 3;
	rl = avail - rf - rr - rc;
	if (rl < 2) {
		rc -= 2 - rl;
		rl = 2;
	}
	ranks_pane(m, st, f, y, rr);
	y += rr;
	conns_pane(m, st, f, y, rc);
	y += rc;
	findings_pane(m, st, f, y, rf);
	y += rf;
	log_pane(m, st, f, y, rl);
}

static int conn_cmp(const struct tui_conn *a, const struct tui_conn *b, enum tui_sort key)
{
	double ka, kb;

	switch (key) {
	case SORT_RATE:
		ka = a->tx_bps + a->rx_bps;
		kb = b->tx_bps + b->rx_bps;
		break;
	case SORT_EAGAIN:
		ka = a->eagain_ps;
		kb = b->eagain_ps;
		break;
	default:
		if (a->waiting != b->waiting)
			return a->waiting ? -1 : 1;
		ka = a->age_s;
		kb = b->age_s;
		break;
	}
	return ka > kb ? -1 : ka < kb ? 1 : 0;
}

void tui_sort_conns(struct tui_conn *c, int n, enum tui_sort key)
{
	/* insertion sort: stable, and n is small */
	for (int i = 1; i < n; i++) {
		struct tui_conn v = c[i];
		int j = i;

		while (j > 0 && conn_cmp(&v, &c[j - 1], key) < 0) {
			c[j] = c[j - 1];
			j--;
		}
		c[j] = v;
	}
}

const char *tui_sort_name(enum tui_sort key)
{
	return key == SORT_RATE ? "busiest" : key == SORT_EAGAIN ? "spinning" : "worst";
}
