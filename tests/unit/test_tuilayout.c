// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "present/dashboard.h"
#include "testutil.h"
#include "present/tuilayout.h"
#include "synth.h"

static struct tui_rank ranks[4];
static struct tui_conn conns[8];
static struct tui_finding finding;
static const char *const logl[] = {"epoch 1 loss 2.31", "epoch 2 loss 1.97"};

/* 4 ranks, rank 1 the culprit, the others waiting; 8 connections; one open stall. */
static struct tui_model model(void)
{
	struct tui_model m = {.elapsed_s = 12.5, .ranks_seen = 4, .ranks_expected = 4, .lost = 0};

	snprintf(m.cmd, sizeof(m.cmd), "torchrun --nproc_per_node=4 train.py");
	snprintf(m.mode, sizeof(m.mode), "tracepoint");
	snprintf(m.dump, sizeof(m.dump), "/tmp/x.jsonl");
	memset(ranks, 0, sizeof(ranks));
	for (int r = 0; r < 4; r++) {
		ranks[r].rank = r;
		ranks[r].pid = 1000 + r;
		snprintf(ranks[r].host, sizeof(ranks[r].host), "gpu-node-a");
		ranks[r].state = r == 1 ? 'S' : 'R';
		ranks[r].gpu = r == 3 ? -1 : 4 + r; /* rank 3's GPU not known */
		snprintf(ranks[r].phase, sizeof(ranks[r].phase), "%s",
			 r == 1 ? "" : "proxy call in transport setup (ring)");
		ranks[r].in_phase_s = r == 1 ? -1 : 6.2;
		snprintf(ranks[r].colls, sizeof(ranks[r].colls), "AllReduce %d",
			 r == 1 ? 1042 : 1043);
		ranks[r].progress_age_s = 6.1;
		ranks[r].culprit = r == 1;
		ranks[r].waiting = r != 1;
	}
	memset(conns, 0, sizeof(conns));
	for (int i = 0; i < 8; i++) {
		snprintf(conns[i].from, sizeof(conns[i].from), "rank %d", i % 4);
		snprintf(conns[i].to, sizeof(conns[i].to), "rank %d", (i + 1) % 4);
		snprintf(conns[i].label, sizeof(conns[i].label), "net (net connect)");
		conns[i].tx_bps = i * 1e6;
		conns[i].age_s = i;
		conns[i].eagain_ps = i == 3 ? 500000 : 0;
		conns[i].waiting = i == 5;
	}
	memset(&finding, 0, sizeof(finding));
	snprintf(finding.kind, sizeof(finding.kind), "STALL");
	finding.open = true;
	finding.since_s = 6.0;
	snprintf(finding.summary, sizeof(finding.summary),
		 "rank 1 has not launched AllReduce #1043 on comm 9f3c; ranks 0,2,3 wait in it");
	snprintf(finding.evidence[0], sizeof(finding.evidence[0]), "/proc/1001/stat state S");
	snprintf(finding.evidence[1], sizeof(finding.evidence[1]),
		 "rank 0 launched AllReduce 1043");
	finding.nevidence = 2;
	snprintf(finding.hyp[0], sizeof(finding.hyp[0]), "rank 1 is not inside NCCL");
	finding.nhyp = 1;
	snprintf(finding.settings, sizeof(finding.settings), "NCCL_NET unset");
	m.ranks = ranks;
	m.nranks = 4;
	m.conns = conns;
	m.nconns = 8;
	m.findings = &finding;
	m.nfindings = 1;
	m.log = logl;
	m.nlog = 2;
	return m;
}

/* The first row containing s, or -1. */
static int row_with(const struct tui_frame *f, const char *s)
{
	char buf[512];

	for (int y = 0; y < f->h; y++)
		if (strstr(tui_frame_row(f, y, buf, sizeof(buf)), s))
			return y;
	return -1;
}

static void layout(const struct tui_model *m, const struct tui_state *st, struct tui_frame *f,
		   int w, int h)
{
	assert_int_equal(tui_frame_alloc(f, w, h), 0);
	tui_layout(m, st, f);
}

static void check_main(int w, int h)
{
	struct tui_model m = model();
	struct tui_state st = {0};
	struct tui_frame f;
	char buf[512];
	int y, ranks, conns, finds, out;

	layout(&m, &st, &f, w, h);
	assert_true(row_with(&f, " nccltrace  12.5s  ranks 4/4  tracepoint") == 0);
	assert_true(strstr(tui_frame_row(&f, h - 1, buf, sizeof(buf)), "q quit  p pause") != NULL);
	/* the culprit's row: marked, and highlighted across the frame */
	y = row_with(&f, "! 1 ");
	assert_true(y > 0);
	assert_int_equal(f.attr[(size_t)y * w], TA_CULPRIT);
	assert_int_equal(f.attr[(size_t)y * w + w - 1], TA_CULPRIT);
	y = row_with(&f, "~ 0 ");
	assert_true(y > 0);
	assert_int_equal(f.attr[(size_t)y * w + 2], TA_WAITING);
	assert_true(row_with(&f, "AllReduce 1042") > 0);
	assert_true(row_with(&f, "Connections (8), worst first") > 0);
	/* the finding, not selected while its pane has no focus */
	assert_true(row_with(&f, "  STALL 6.0s  rank 1 has not launched") > 0);
	assert_true(row_with(&f, "likely: rank 1 is not inside NCCL") > 0);
	assert_true(row_with(&f, "epoch 2 loss 1.97") > 0);
	/* panes in order, none past the key bar (each there: a missing one's -1 orders first) */
	ranks = row_with(&f, "Ranks (4)");
	conns = row_with(&f, "Connections (8)");
	finds = row_with(&f, "Findings (1 open");
	out = row_with(&f, "Job output");
	assert_true(ranks > 0);
	assert_true(conns > 0);
	assert_true(finds > 0);
	assert_true(out > 0);
	assert_true(ranks < conns);
	assert_true(conns < finds);
	assert_true(finds < out);
	assert_true(out < h - 1);
	tui_frame_free(&f);
}

static void test_main_80x24(void **state)
{
	(void)state;
	check_main(80, 24);
}

static void test_main_200x60(void **state)
{
	struct tui_model m = model();
	struct tui_state st = {0};
	struct tui_frame f;

	(void)state;
	check_main(200, 60);
	/* wide: the whole phase, every connection */
	layout(&m, &st, &f, 200, 60);
	assert_true(row_with(&f, "proxy call in transport setup (ring)") > 0);
	assert_true(row_with(&f, "rank 3   rank 0") > 0);
	/* each rank's GPU beside its pid */
	assert_true(row_with(&f, "PID     GPU ST") > 0);
	assert_true(row_with(&f, "1001    5   S ") > 0);
	assert_true(row_with(&f, "1003    -   R ") > 0);
	/* nothing over the budget: the header says nothing of it */
	assert_true(row_with(&f, "suppressed") < 0);
	tui_frame_free(&f);
	/* records over the budget: in the header, beside the lost ones */
	m.suppressed = 123456;
	m.lost = 7;
	layout(&m, &st, &f, 200, 60);
	assert_int_equal(row_with(&f, "lost 7  suppressed 123456"), 0);
	tui_frame_free(&f);
}

static void test_small_and_views(void **state)
{
	struct tui_model m = model();
	struct tui_state st = {0};
	struct tui_frame f;

	(void)state;
	layout(&m, &st, &f, 40, 8);
	assert_true(row_with(&f, "terminal too small (40x8)") == 1);
	tui_frame_free(&f);
	st.view = VIEW_DETAIL;
	layout(&m, &st, &f, 80, 24);
	assert_true(row_with(&f, "STALL, open for 6.0s") > 0);
	assert_true(row_with(&f, "Evidence") > 0);
	assert_true(row_with(&f, "rank 0 launched AllReduce 1043") > 0);
	assert_true(row_with(&f, "Likely causes") > 0);
	assert_true(row_with(&f, "NCCL_NET unset") > 0);
	assert_true(row_with(&f, "Esc/Enter back") == 23);
	tui_frame_free(&f);
	st.view = VIEW_HELP;
	layout(&m, &st, &f, 80, 24);
	assert_true(row_with(&f, "Keys") == 1);
	assert_true(row_with(&f, "d          write a snapshot") > 0);
	tui_frame_free(&f);
	st.view = VIEW_MAIN;
	st.confirm_quit = true;
	st.paused = true;
	layout(&m, &st, &f, 120, 30);
	assert_true(row_with(&f, "Stop the job too?  y: stop it") == 29);
	assert_true(row_with(&f, "PAUSED") == 0);
	tui_frame_free(&f);
}

static void test_scroll_and_sort(void **state)
{
	struct tui_model m = model();
	struct tui_state st = {.focus = PANE_CONNS};
	struct tui_frame f;

	(void)state;
	/* scrolled past the end: the last rows stay in view */
	st.scroll[PANE_CONNS] = 100;
	layout(&m, &st, &f, 80, 24);
	assert_true(row_with(&f, "> Connections") > 0);
	st.focus = PANE_FINDINGS;
	tui_layout(&m, &st, &f);
	assert_true(row_with(&f, "> STALL 6.0s") > 0);
	assert_true(row_with(&f, "rank 3   rank 0") > 0);
	tui_frame_free(&f);
	tui_sort_conns(conns, 8, SORT_RATE);
	assert_true(conns[0].tx_bps == 7e6 && conns[7].tx_bps == 0);
	tui_sort_conns(conns, 8, SORT_EAGAIN);
	assert_true(conns[0].eagain_ps == 500000);
	tui_sort_conns(conns, 8, SORT_WORST);
	assert_true(conns[0].waiting);
	assert_true(conns[1].age_s == 7);
	assert_string_equal(tui_sort_name(SORT_RATE), "busiest");
}

/* The dashboard's model from an engine snapshot: order, roles, rates between snapshots. */
static void no_event(void *ctx, enum finding_event ev, const struct tracked_finding *t)
{
	(void)ctx;
	(void)ev;
	(void)t;
}

/*
 * Each rank's progress history as a sparkline at the end of its row: the newest second at the
 * right edge, as many seconds as fit; none where there is no room
 */
static void test_sparkline(void **state)
{
	struct tui_model m = model();
	struct tui_state st = {0};
	struct tui_frame f;
	char buf[512];
	const float v[] = {100, 50, 0, 100};
	int y;

	(void)state;
	memcpy(ranks[0].spark, v, sizeof(v));
	ranks[0].nspark = 4;
	m.spark_max = 100;
	layout(&m, &st, &f, 200, 60);
	assert_true(row_with(&f, "BYTES/S, A SECOND EACH") > 0);
	y = row_with(&f, "~ 0 ");
	assert_true(y > 0);
	assert_non_null(strstr(tui_frame_row(&f, y, buf, sizeof(buf)), "@+ @"));
	tui_frame_free(&f);
	/* a connection's, in its pane (each the same: the rows are sorted) */
	for (int i = 0; i < 8; i++) {
		memcpy(conns[i].spark, v, sizeof(v));
		conns[i].nspark = 4;
	}
	m.conn_spark_max = 200;
	layout(&m, &st, &f, 200, 60);
	y = row_with(&f, "rank 2   rank 3");
	assert_true(y > 0);
	assert_non_null(strstr(tui_frame_row(&f, y, buf, sizeof(buf)), "+- +"));
	tui_frame_free(&f);
	/* two columns left: the two newest seconds */
	layout(&m, &st, &f, 150, 60);
	y = row_with(&f, "~ 0 ");
	tui_frame_row(&f, y, buf, sizeof(buf));
	assert_string_equal(buf + 147, "  @");
	tui_frame_free(&f);
	layout(&m, &st, &f, 80, 24);
	assert_true(row_with(&f, "@+ @") < 0);
	tui_frame_free(&f);
}

/* The launcher (no rank, no connection), rank 1 and rank 0; rank 0's connection to rank 1, a
 * closed one, and the launcher's listener */
static void dash_world(struct snap_proc *p, struct snap_conn *c)
{
	memset(p, 0, 3 * sizeof(*p));
	memset(c, 0, 3 * sizeof(*c));
	/* the launcher (no rank, no connection), rank 1 and rank 0, in that order */
	p[0] = (struct snap_proc){.pid = 100, .rank = -1, .state = 'S'};
	p[1] = (struct snap_proc){.pid = 102, .rank = 1, .state = 'S', .world_size = 2};
	p[2] = (struct snap_proc){.pid = 101, .rank = 0, .state = 'R', .world_size = 2};
	c[0].id = 1;
	c[0].pid = 101;
	c[0].peer_pid = 102;
	c[0].c.t = test_tuple(AF_INET, "127.0.0.1", 1, "127.0.0.1", 2);
	c[0].c.bytes_sent = 1000;
	c[0].c.last_send_ns = 3 * NT_NSEC_PER_SEC;
	c[0].c.state = 1;
	c[0].nccl_label = "net (net connect)";
	c[1] = c[0];
	c[1].id = 2;
	c[1].closed = true;
	/* the launcher's listening socket (it hands it to a rank): no reason to show it */
	c[2] = c[0];
	c[2].id = 3;
	c[2].pid = 100;
	c[2].peer_pid = -1;
	c[2].c.flags = NT_CONN_LISTENER;
	c[2].c.state = 10; /* TCP_LISTEN */
}

/* dash_world() with rank 1 stalled since 4 s at 10 s: the dashboard's input, one at a time */
struct dash_fixture {
	struct snap_proc p[3];
	struct snap_conn c[3];
	struct snapshot s;
	struct findings fs;
	struct finding f;
	struct diag_config cfg;
	struct dash_info in;
	struct dashboard *d;
};

/* the fixture set, and the dashboard's model of its first snapshot */
static const struct tui_model *dash_fixture_init(struct dash_fixture *x)
{
	memset(x, 0, sizeof(*x));
	dash_world(x->p, x->c);
	x->s = (struct snapshot){.now_ns = 10 * NT_NSEC_PER_SEC,
				 .procs = x->p,
				 .nprocs = 3,
				 .conns = x->c,
				 .nconns = 3};
	x->f = (struct finding){.kind = FINDING_STALL,
				.pid = 102,
				.rank = 1,
				.nwaiters = 1,
				.waiters = {{101, 0}},
				.since_ns = 4 * NT_NSEC_PER_SEC};
	x->cfg = (struct diag_config){.stall_threshold_ns = 5 * NT_NSEC_PER_SEC,
				      .active_window_ns = NT_NSEC_PER_SEC};
	x->in = (struct dash_info){.cmd = "job", .start_ns = 0, .cfg = &x->cfg};
	x->d = dashboard__new();
	findings_init(&x->fs, NT_NSEC_PER_SEC, 5 * NT_NSEC_PER_SEC);
	findings_update(&x->fs, &x->f, 1, x->s.now_ns, no_event, NULL);
	return dashboard__update(x->d, &x->s, &x->fs, &x->in, SORT_WORST);
}

/* DT_NS later, rank 0's connection BYTES more sent: the dashboard's model then */
static const struct tui_model *dash_step(struct dash_fixture *x, uint64_t dt_ns, uint64_t bytes)
{
	x->s.now_ns += dt_ns;
	x->c[0].c.bytes_sent += bytes;
	return dashboard__update(x->d, &x->s, &x->fs, &x->in, SORT_WORST);
}

static void dash_fixture_free(struct dash_fixture *x)
{
	findings_free(&x->fs);
	dashboard__free(x->d);
}

static void test_dashboard_model(void **state)
{
	struct dash_fixture x;
	const struct tui_model *m;

	(void)state;
	m = dash_fixture_init(&x);
	assert_non_null(m);
	assert_int_equal(m->nranks, 2); /* the launcher has nothing to show */
	assert_int_equal(m->ranks[0].rank, 0);
	assert_true(m->ranks[0].waiting && !m->ranks[0].culprit);
	assert_true(m->ranks[1].culprit);
	assert_int_equal(m->ranks_seen, 2);
	assert_int_equal(m->ranks_expected, 2);
	assert_int_equal(m->nconns, 1); /* closed ones are gone */
	assert_string_equal(m->conns[0].to, "rank 1");
	assert_string_equal(m->conns[0].label, "net (net connect)");
	assert_true(m->conns[0].age_s == 7.0);
	assert_true(m->conns[0].tx_bps == 0); /* no previous snapshot yet */
	assert_int_equal(m->nfindings, 1);
	assert_string_equal(m->findings[0].kind, "STALL");
	assert_true(m->findings[0].since_s == 6.0);
	/* one second later, 1 MB more: 1 MB/s */
	m = dash_step(&x, NT_NSEC_PER_SEC, 1000000);
	assert_true(m->conns[0].tx_bps > 999999 && m->conns[0].tx_bps < 1000001);
	dash_fixture_free(&x);
}

/* Each rank's and connection's history: a sample a second, the oldest leaving past 60 */
static void test_dashboard_history(void **state)
{
	struct dash_fixture x;
	const struct tui_model *m;

	(void)state;
	m = dash_fixture_init(&x);
	assert_non_null(m);
	/* one second later, 1 MB more: 1 MB/s */
	m = dash_step(&x, NT_NSEC_PER_SEC, 1000000);
	assert_true(m->conns[0].tx_bps > 999999 && m->conns[0].tx_bps < 1000001);
	/* its history: a second of 1 MB/s (the first snapshot only set where it starts) */
	assert_int_equal(m->ranks[0].nspark, 1);
	assert_true(m->ranks[0].spark[0] > 999999 && m->ranks[0].spark[0] < 1000001);
	assert_int_equal(m->ranks[1].nspark, 0); /* rank 1 has no connection of its own */
	assert_true(m->spark_max > 999999);
	/* and the connection's own */
	assert_int_equal(m->conns[0].nspark, 1);
	assert_true(m->conns[0].spark[0] > 999999 && m->conns[0].spark[0] < 1000001);
	assert_true(m->conn_spark_max > 999999);
	/* half a second on: no sample yet; a second on, nothing moved: a 0 joins */
	m = dash_step(&x, NT_NSEC_PER_SEC / 2, 0);
	assert_int_equal(m->ranks[0].nspark, 1);
	m = dash_step(&x, NT_NSEC_PER_SEC / 2, 0);
	assert_int_equal(m->ranks[0].nspark, 2);
	assert_true(m->ranks[0].spark[1] == 0);
	/* past TUI_SPARK seconds the oldest leave */
	for (int k = 0; k < TUI_SPARK + 5; k++)
		m = dash_step(&x, NT_NSEC_PER_SEC, 2000000);
	assert_int_equal(m->ranks[0].nspark, TUI_SPARK);
	assert_true(m->ranks[0].spark[0] > 1999999 && m->ranks[0].spark[TUI_SPARK - 1] > 1999999);
	assert_int_equal(m->conns[0].nspark, TUI_SPARK);
	/* a connection gone takes its history: back, it starts again */
	x.s.nconns = 0;
	dash_step(&x, 0, 0);
	x.s.nconns = 3;
	m = dash_step(&x, NT_NSEC_PER_SEC, 0);
	assert_int_equal(m->conns[0].nspark, 0);
	dash_fixture_free(&x);
}

/* The row whose rank is r (a rank row, not a group), or -1 */
static int rank_at(const struct tui_model *m, int r)
{
	for (int i = 0; i < m->nranks; i++)
		if (!m->ranks[i].group && m->ranks[i].rank == r)
			return i;
	return -1;
}

/*
 * 70 ranks in a ring, rank 20 hung: the culprit on top, its 69 waiters one row (as ranges),
 * their waiting connections one row; expanded, every rank has its row again.
 */
static void test_dashboard_groups(void **state)
{
	struct synth *y = synth_new(70, 2, SYNTH_RING, 20);
	struct finding *f = calloc(8, sizeof(*f));
	struct diag_config cfg = {.stall_threshold_ns = 5 * SYNTH_SEC,
				  .active_window_ns = SYNTH_SEC};
	struct dash_info in = {.cmd = "job", .start_ns = 0, .cfg = &cfg};
	struct dashboard *d = dashboard__new();
	const struct tui_model *m;
	struct tui_state st = {0};
	struct findings fs;
	struct tui_frame fr;
	int n;

	(void)state;
	assert_non_null(y);
	assert_non_null(f);
	n = diagnose(&y->s, &cfg, f, 8);
	assert_int_equal(n, 1);
	assert_int_equal(f[0].rank, 20);
	findings_init(&fs, SYNTH_SEC, 5 * SYNTH_SEC);
	findings_update(&fs, f, n, y->s.now_ns, no_event, NULL);
	m = dashboard__update(d, &y->s, &fs, &in, SORT_WORST);
	assert_non_null(m);
	assert_true(m->ranks[0].culprit);
	assert_int_equal(m->ranks[0].rank, 20);
	assert_int_equal(m->ranks[1].group, 69);
	assert_int_equal(m->ranks[1].group_id, fs.v[0].id);
	assert_string_equal(m->ranks[1].members, "0-19,21-69");
	assert_int_equal(m->nranks, 2);
	assert_int_equal(rank_at(m, 5), -1);
	assert_int_equal(m->conns[0].group, 69);
	assert_string_equal(m->conns[0].from, "69 ranks");
	assert_string_equal(m->conns[0].to, "chain to rank 20");
	assert_int_equal(m->ranks_seen, 70);
	layout(m, &st, &fr, 120, 40);
	assert_true(row_with(&fr, "69 ranks wait on rank 20 (0-19,21-69)") > 0);
	assert_true(row_with(&fr, "! 20 ") > 0);
	assert_true(row_with(&fr, "69 ranks chain to rank 20") > 0);
	assert_true(row_with(&fr, "ranks 70/70") == 0);
	tui_frame_free(&fr);
	/* Enter on the group: one row per rank, the culprit still first */
	in.expanded = fs.v[0].id;
	m = dashboard__update(d, &y->s, &fs, &in, SORT_WORST);
	assert_int_equal(m->nranks, 70);
	assert_int_equal(m->ranks[0].rank, 20);
	assert_true(rank_at(m, 5) > 0 && m->ranks[rank_at(m, 5)].waiting);
	assert_int_equal(m->conns[0].group, 0);
	findings_free(&fs);
	dashboard__free(d);
	free(f);
	synth_free(y);
}

/* The transport NCCL's log names between the two ranks of a net connection, in both widths. */
static void test_via(void **state)
{
	static struct snap_nccl_log l0, l1;
	struct snap_proc p[2];
	struct snap_conn c[2];
	struct snapshot s = {
		.now_ns = 10 * NT_NSEC_PER_SEC, .procs = p, .nprocs = 2, .conns = c, .nconns = 2};
	struct dash_info in = {.cmd = "job"};
	struct dashboard *d = dashboard__new();
	const struct tui_model *m;
	struct tui_state st = {0};
	struct tui_frame f;

	(void)state;
	memset(p, 0, sizeof(p));
	memset(c, 0, sizeof(c));
	memset(&l0, 0, sizeof(l0));
	memset(&l1, 0, sizeof(l1));
	/* rank 0's log: comm 0xabc, rank 0 of 2, [send] to rank 1 over NET/Socket/0 */
	l0.comm[0] = (struct snap_log_comm){.id = 0xabc, .rank = 0, .nranks = 2};
	l0.ncomm = 1;
	l0.path[0] = (struct snap_log_path){
		.comm = 0, .from = 0, .to = 1, .side = SNAP_LOG_SEND, .transport = "NET/Socket/0"};
	l0.path[0].net = true;
	l0.path[0].channels = 1;
	l0.npath = 1;
	l1.comm[0] = (struct snap_log_comm){.id = 0xabc, .rank = 1, .nranks = 2};
	l1.ncomm = 1;
	p[0] = (struct snap_proc){.pid = 101, .rank = 0, .state = 'S', .nccl_log = &l0};
	p[1] = (struct snap_proc){.pid = 102, .rank = 1, .state = 'S', .nccl_log = &l1};
	c[0].id = 1;
	c[0].pid = 101;
	c[0].peer_pid = 102;
	c[0].c.t = test_tuple(AF_INET, "127.0.0.1", 1, "127.0.0.1", 2);
	c[0].c.state = 1;
	c[0].nccl_label = "net (net connect)";
	/* the same pair's bootstrap socket gets no transport */
	c[1] = c[0];
	c[1].id = 2;
	c[1].nccl_label = "bootstrap (bootstrap)";
	m = dashboard__update(d, &s, NULL, &in, SORT_WORST);
	assert_int_equal(m->nconns, 2);
	for (int i = 0; i < 2; i++)
		assert_string_equal(
			m->conns[i].via,
			!strcmp(m->conns[i].label, "bootstrap (bootstrap)") ? "" : "NET/Socket/0");
	layout(m, &st, &f, 200, 60);
	assert_true(row_with(&f, " VIA ") > 0);
	assert_true(row_with(&f, "net (net connect)            NET/Socket/0") > 0);
	tui_frame_free(&f);
	/* narrow: the transport in NCCL's column */
	layout(m, &st, &f, 80, 24);
	assert_true(row_with(&f, "rank 1                NET/Socket/0") > 0);
	tui_frame_free(&f);
	dashboard__free(d);
}

/* What the job controls (its output, a name, NCCL's text) never reaches the terminal raw. */
static void test_hostile_text(void **state)
{
	static const char *const evil[] = {"ok \x1b]0;PWNED\x07 \x1b[2J\x9b"
					   "31m done"};
	struct tui_model m = model();
	struct tui_state st = {0};
	struct tui_frame f;

	(void)state;
	m.log = evil;
	m.nlog = 1;
	snprintf(ranks[2].host, sizeof(ranks[2].host), "h\x1b[31mx");
	snprintf(finding.summary, sizeof(finding.summary), "rank 1 \x1b]8;;http://x\x07link");
	layout(&m, &st, &f, 120, 40);
	for (size_t i = 0; i < (size_t)f.w * f.h; i++)
		assert_true((unsigned char)f.text[i] >= 32 && (unsigned char)f.text[i] < 127);
	assert_true(row_with(&f, "ok ?]0;PWNED? ?[2J?31m done") > 0);
	assert_true(row_with(&f, "rank 1 ?]8;;http://x?link") > 0);
	tui_frame_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_main_80x24),
		cmocka_unit_test(test_main_200x60),
		cmocka_unit_test(test_small_and_views),
		cmocka_unit_test(test_scroll_and_sort),
		cmocka_unit_test(test_sparkline),
		cmocka_unit_test(test_dashboard_model),
		cmocka_unit_test(test_dashboard_history),
		cmocka_unit_test(test_dashboard_groups),
		cmocka_unit_test(test_via),
		cmocka_unit_test(test_hostile_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
