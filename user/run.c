// SPDX-License-Identifier: MIT
/*
 * `nccltrace run`: load the BPF side, start the job, and loop on one epoll set (ring buffer,
 * signalfd, a 200 ms timer) until the job exits. Each tick turns the kernel's counters and /proc
 * into a snapshot, runs diagnose() on it and tells what it found on stderr and in the dump.
 */
#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "dashboard.h"
#include "diagnose.h"
#include "doctor.h"
#include "dump.h"
#include "findings.h"
#include "fmt.h"
#include "nccllib.h"
#include "launcher.h"
#include "log.h"
#include "logtail.h"
#include "model.h"
#include "ncclattach.h"
#include "ncclstate.h"
#include "run.h"
#include "tracer.h"
#include "tui.h"

#define TICK_NS		  (200 * 1000000ULL)
#define DRAW_EVERY_NS	  (500 * 1000000ULL) /* the dashboard at 2 Hz */
#define SNAPSHOT_EVERY_NS NT_NSEC_PER_SEC
#define MAX_FINDINGS	  64
/* quiet mode: every communicator moving for 2 s; back on after 0.5 s without a collective */
#define QUIET_HOLD_NS	(2 * NT_NSEC_PER_SEC)
#define QUIET_RECENT_NS (NT_NSEC_PER_SEC / 2)
/* of the last 64 ticks (12.8 s) in which a communicator moved: a quarter behind is a straggler */
#define STRAGGLER_SAMPLES 16

struct session {
	struct run_opts opts;
	struct tracer *tracer;
	struct model *model;
	struct nccl_attach *nccl;
	struct nccl_state *nstate;
	struct dump *dump;
	struct findings findings;
	struct diag_config diag;
	struct job job;
	bool job_exited;
	int job_status;
	uint64_t last_snapshot_ns;
	uint64_t stats[NT_STAT_MAX];
	uint64_t told_drops;
	bool dump_failed;
	uint64_t nfindings;
	struct snapshot snap; /* the latest, for the finding callback */
	/* the dashboard, when stdout is a terminal */
	struct tui *tui;
	struct dashboard *dash;
	const struct tui_model *shown;
	struct logtail log;
	char log_path[PATH_MAX + 8];
	int log_fd;
	int saved_stderr;
	uint64_t start_ns, last_draw_ns;
	struct quiet quiet;	 /* quiet mode: the per-call TCP hooks off while NCCL moves */
	uint64_t tcp_resumed_ns; /* when they last came back on */
	bool detached;
	char cmdline[256];
	char host[256];
	char dump_path[PATH_MAX];
};

static uint64_t now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NT_NSEC_PER_SEC + ts.tv_nsec;
}

static uint64_t now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * NT_NSEC_PER_SEC + ts.tv_nsec;
}

static void dump_put(struct session *s, json_t *rec)
{
	int err;

	if (!rec)
		return;
	if (s->dump && !s->dump_failed) {
		err = dump__write(s->dump, rec);
		if (err) {
			/* the trace goes on; only the file stops growing */
			pr_warn("cannot write the trace dump %s: %s; tracing continues without "
				"it\n",
				dump__path(s->dump), strerror(-err));
			s->dump_failed = true;
		}
	}
	json_decref(rec);
}

/* CAP_BPF and CAP_PERFMON (Linux >= 5.8) are enough for everything nccltrace loads. */
static bool have_privileges(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {};

	if (geteuid() == 0)
		return true;
	if (syscall(SYS_capget, &hdr, data))
		return false;
#ifndef CAP_BPF
#define CAP_PERFMON 38
#define CAP_BPF	    39
#endif
	return (data[1].effective & (1u << (CAP_BPF - 32))) &&
	       (data[1].effective & (1u << (CAP_PERFMON - 32)));
}

static void kind_label(enum finding_kind k, char *buf, size_t len)
{
	const char *n = finding_kind_name(k);
	size_t i;

	for (i = 0; n[i] && i + 1 < len; i++)
		buf[i] = n[i] == '_' ? '-' : (n[i] >= 'a' && n[i] <= 'z' ? n[i] - 32 : n[i]);
	buf[i] = '\0';
}

static void on_finding(void *ctx, enum finding_event ev, const struct tracked_finding *t)
{
	struct session *s = ctx;
	const struct finding *f = &t->f;
	uint64_t now = s->snap.now_ns;
	char conn[128] = "", label[32];
	json_t *rec;

	if (f->conn >= 0 && f->conn < s->snap.nconns)
		fmt_tuple(&s->snap.conns[f->conn].c.t, conn, sizeof(conn));
	rec = finding_to_json(t, ev, now, conn[0] ? conn : NULL);
	json_object_set_new(rec, "realtime_ns", json_integer((json_int_t)now_real()));
	dump_put(s, rec);
	kind_label(f->kind, label, sizeof(label));
	if (ev == FINDING_OPEN) {
		s->nfindings++;
		fprintf(stderr, "nccltrace: %s %.1fs  %s\n", label,
			(double)(now - f->since_ns) / NT_NSEC_PER_SEC, f->summary);
		for (int i = 0; i < f->nevidence; i++)
			fprintf(stderr, "    %s\n", f->evidence[i]);
		for (int i = 0; i < f->nhyp; i++)
			fprintf(stderr, "    %s %s\n", i ? "or:" : "likely:", f->hypotheses[i]);
	} else if (ev == FINDING_CLOSE) {
		fprintf(stderr, "nccltrace: %s over after %.1fs: %s\n", label,
			(double)(t->last_seen_ns - f->since_ns) / NT_NSEC_PER_SEC, f->summary);
	}
}

/*
 * The launch environment's problems (nccltrace doctor's checks), as config findings: in the
 * dump and on stderr before the job starts. They stay open for the whole run.
 */
static void config_findings(struct session *s)
{
	struct lint_problem p[64];
	char from[PATH_MAX + 64];
	int n = doctor_launch_check(s->opts.cmd, s->opts.ncmd, s->opts.nccl_lib, p, 64, from,
				    sizeof(from));

	for (int i = 0; i < n; i++) {
		struct tracked_finding t = {0};
		struct finding *f = &t.f;
		uint64_t now = now_mono();
		json_t *rec;

		if (p[i].sev == LINT_INFO)
			continue;
		t.id = s->findings.next_id++;
		t.open = true;
		t.opened_ns = t.last_seen_ns = now;
		f->kind = FINDING_CONFIG;
		f->rank = f->peer_rank = -1;
		f->conn = -1;
		f->since_ns = now;
		snprintf(f->phase, sizeof(f->phase), "before launch");
		snprintf(f->key, sizeof(f->key), "config:%s", p[i].var);
		snprintf(f->summary, sizeof(f->summary), "%s: %s", p[i].var[0] ? p[i].var : "job",
			 p[i].what);
		if (p[i].var[0])
			snprintf(f->evidence[f->nevidence++], sizeof(f->evidence[0]),
				 "%s=%s in the job's environment (%s)", p[i].var, p[i].value,
				 lint_sev_name(p[i].sev));
		snprintf(f->evidence[f->nevidence++], sizeof(f->evidence[0]),
			 "NCCL's names from %.160s", from);
		if (p[i].fix[0])
			snprintf(f->hypotheses[f->nhyp++], sizeof(f->hypotheses[0]), "%s",
				 p[i].fix);
		if (p[i].var[0]) {
			snprintf(f->settings[0].name, sizeof(f->settings[0].name), "%s", p[i].var);
			snprintf(f->settings[0].value, sizeof(f->settings[0].value), "%s",
				 p[i].value);
			snprintf(f->settings[0].source, sizeof(f->settings[0].source), "environ");
			f->nsettings = 1;
		}
		rec = finding_to_json(&t, FINDING_OPEN, now, NULL);
		json_object_set_new(rec, "realtime_ns", json_integer((json_int_t)now_real()));
		json_object_set_new(rec, "severity", json_string(lint_sev_name(p[i].sev)));
		dump_put(s, rec);
		s->nfindings++;
		fprintf(stderr, "nccltrace: CONFIG %s %s%s%s: %s%s%s\n", lint_sev_name(p[i].sev),
			p[i].var[0] ? p[i].var : "job", p[i].var[0] ? "=" : "", p[i].value,
			p[i].what, p[i].fix[0] ? " -> " : "", p[i].fix);
	}
}

static void on_identity(void *ctx, int pid, const struct model_proc_info *pi)
{
	struct session *s = ctx;
	json_t *rec = json_object(), *env = json_object();

	for (int i = 0; i < pi->nenv; i++) {
		json_object_set_new(env, pi->env[i].key, json_string(pi->env[i].val));
		if (!strncmp(pi->env[i].key, "NCCL_", 5))
			nccl_state__env(s->nstate, pid, pi->env[i].key, pi->env[i].val);
	}
	json_object_set_new(rec, "type", json_string("rank"));
	json_object_set_new(rec, "ts_ns", json_integer((json_int_t)now_mono()));
	json_object_set_new(rec, "pid", json_integer(pid));
	json_object_set_new(rec, "rank", json_integer(pi->ri.rank));
	json_object_set_new(rec, "rank_source", json_string(pi->ri.source));
	json_object_set_new(rec, "local_rank",
			    pi->ri.local_rank >= 0 ? json_integer(pi->ri.local_rank) : json_null());
	json_object_set_new(rec, "world_size",
			    pi->ri.world_size >= 0 ? json_integer(pi->ri.world_size) : json_null());
	json_object_set_new(rec, "master_addr",
			    pi->ri.master_addr[0] ? json_string(pi->ri.master_addr) : json_null());
	json_object_set_new(rec, "master_port",
			    pi->ri.master_port >= 0 ? json_integer(pi->ri.master_port)
						    : json_null());
	json_object_set_new(rec, "env", env);
	dump_put(s, rec);
	pr_info("pid %d is rank %d of %d (from %s)\n", pid, pi->ri.rank, pi->ri.world_size,
		pi->ri.source);
}

static json_t *conn_json(const struct snap_conn *sc, uint64_t now, const char *label)
{
	const struct nt_conn *c = &sc->c;
	char a[64];
	json_t *o = json_object();

#define AGE(t) ((t) ? json_real((double)(now - (t)) / 1e9) : json_null())
	snprintf(a, sizeof(a), "%llx", (unsigned long long)sc->id);
	json_object_set_new(o, "id", json_string(a));
	json_object_set_new(o, "pid", json_integer(sc->pid));
	json_object_set_new(o, "tid", json_integer(c->tid));
	json_object_set_new(o, "peer_pid",
			    sc->peer_pid > 0 ? json_integer(sc->peer_pid) : json_null());
	json_object_set_new(o, "src", json_string(fmt_endpoint(&c->t, 1, a, sizeof(a))));
	json_object_set_new(o, "dst", json_string(fmt_endpoint(&c->t, 0, a, sizeof(a))));
	json_object_set_new(o, "state", json_string(fmt_tcp_state(c->state)));
	json_object_set_new(o, "listener", json_boolean(c->flags & NT_CONN_LISTENER));
	json_object_set_new(o, "bytes_sent", json_integer(c->bytes_sent));
	json_object_set_new(o, "bytes_recv", json_integer(c->bytes_recv));
	json_object_set_new(o, "send_calls", json_integer(c->send_calls));
	json_object_set_new(o, "recv_calls", json_integer(c->recv_calls));
	json_object_set_new(o, "send_eagain", json_integer(c->send_eagain));
	json_object_set_new(o, "recv_eagain", json_integer(c->recv_eagain));
	json_object_set_new(o, "recv_eof", json_integer(c->recv_eof));
	json_object_set_new(o, "errors", json_integer(c->send_err + c->recv_err));
	json_object_set_new(o, "retrans", json_integer(c->retrans));
	json_object_set_new(o, "syn_retrans", json_integer(c->syn_retrans));
	json_object_set_new(o, "resets", json_integer(c->resets));
	json_object_set_new(o, "srtt_us", json_integer(c->srtt_us));
	json_object_set_new(o, "snd_cwnd", json_integer(c->snd_cwnd));
	json_object_set_new(o, "send_q", json_integer(c->send_q));
	json_object_set_new(o, "recv_q", json_integer(c->recv_q));
	json_object_set_new(o, "last_send_age_s", AGE(c->last_send_ns));
	json_object_set_new(o, "last_recv_age_s", AGE(c->last_recv_ns));
	json_object_set_new(o, "blocked",
			    sc->blocked == SNAP_BLOCK_RECV   ? json_string("recv")
			    : sc->blocked == SNAP_BLOCK_SEND ? json_string("send")
							     : json_null());
	json_object_set_new(o, "closed", json_boolean(sc->closed));
	if (label)
		json_object_set_new(o, "nccl", json_string(label));
	if (c->nccl_phase && nccl_probe(c->nccl_phase))
		json_object_set_new(o, "nccl_phase", json_string(nccl_probe(c->nccl_phase)->name));
#undef AGE
	return o;
}

static void dump_snapshot(struct session *s, const struct snapshot *snap)
{
	json_t *rec = json_object(), *procs = json_array(), *conns = json_array();

	for (int i = 0; i < snap->nprocs; i++) {
		const struct snap_proc *p = &snap->procs[i];
		json_t *o = json_object();
		char st[2] = {p->state, 0};

		json_object_set_new(o, "pid", json_integer(p->pid));
		json_object_set_new(o, "rank", p->rank >= 0 ? json_integer(p->rank) : json_null());
		json_object_set_new(o, "comm", json_string(p->comm));
		json_object_set_new(o, "state", json_string(st));
		json_object_set_new(o, "where", json_string(p->where));
		json_object_set_new(o, "cpu_busy", json_real((double)p->cpu_busy_ns / 1e9));
		if (s->nstate) {
			json_t *n = nccl_state__proc_json(s->nstate, p->pid, snap->now_ns);

			if (n)
				json_object_set_new(o, "nccl", n);
		}
		json_array_append_new(procs, o);
	}
	for (int i = 0; i < snap->nconns; i++)
		if (!snap->conns[i].closed || snap->conns[i].closed_ns > s->last_snapshot_ns)
			json_array_append_new(
				conns,
				conn_json(&snap->conns[i], snap->now_ns,
					  nccl_state__socket_label(s->nstate, snap->conns[i].pid,
								   snap->conns[i].c.ino)));
	json_object_set_new(rec, "type", json_string("snapshot"));
	json_object_set_new(rec, "ts_ns", json_integer((json_int_t)snap->now_ns));
	json_object_set_new(rec, "procs", procs);
	json_object_set_new(rec, "conns", conns);
	dump_put(s, rec);
}

static void on_nccl_lib(void *ctx, int slot, const struct nccl_lib *lib, const char *err)
{
	struct session *s = ctx;
	json_t *o;

	if (slot < 0) {
		pr_warn("%s; NCCL phases are not traced, socket-level tracing continues\n", err);
		return;
	}
	o = json_object();
	json_object_set_new(o, "type", json_string("nccl_lib"));
	json_object_set_new(o, "ts_ns", json_integer((json_int_t)now_mono()));
	json_object_set_new(o, "slot", json_integer(slot));
	json_object_set_new(
		o, "kind", json_string(lib->offs.lib_kind == NT_LIB_VERBS ? "libibverbs" : "nccl"));
	json_object_set_new(o, "path", json_string(lib->path));
	json_object_set_new(o, "version", json_string(lib->version));
	json_object_set_new(o, "build_id", json_string(lib->build_id));
	json_object_set_new(o, "offsets", json_string(nccl_offsets_source_name(lib->offs_src)));
	json_object_set_new(o, "probes_resolved", json_integer(lib->resolved));
	json_object_set_new(o, "core_missing", json_integer(lib->missing_core));
	dump_put(s, o);
	if (lib->offs.lib_kind == NT_LIB_VERBS) {
		pr_info("libibverbs at %s: %d probes\n", lib->path, lib->resolved);
		return;
	}
	pr_info("NCCL %s at %s: %d probes, offsets from %s\n",
		lib->version[0] ? lib->version : "(version unknown)", lib->path, lib->resolved,
		nccl_offsets_source_name(lib->offs_src));
	if (lib->missing_core)
		pr_warn("%s: %d core NCCL probe%s missing (stripped library?); those phases are "
			"not "
			"traced ('nccltrace probes %s' lists them)\n",
			lib->path, lib->missing_core, lib->missing_core == 1 ? "" : "s", lib->path);
	if (lib->offs_src == OFFS_NONE)
		pr_warn("%s: no DWARF and an unknown build: struct fields are not read "
			"(arguments only)\n",
			lib->path);
}

static void on_nccl_attached(void *ctx, int pid, int slot, int nprobes, int nfailed)
{
	struct session *s = ctx;
	json_t *o = json_object();

	json_object_set_new(o, "type", json_string("nccl_attach"));
	json_object_set_new(o, "ts_ns", json_integer((json_int_t)now_mono()));
	json_object_set_new(o, "pid", json_integer(pid));
	json_object_set_new(o, "slot", json_integer(slot));
	json_object_set_new(o, "probes", json_integer(nprobes));
	json_object_set_new(o, "failed", json_integer(nfailed));
	dump_put(s, o);
	if (nfailed)
		pr_warn("pid %d: %d NCCL probe%s could not be attached (-vv says why)\n", pid,
			nfailed, nfailed == 1 ? "" : "s");
}

static int seq_offset(void *ctx, int slot)
{
	const struct nccl_lib *lib = nccl_attach__lib(((struct session *)ctx)->nccl, slot);

	return lib ? lib->offs.comm_seq : -1;
}

static int conn_from_map(void *ctx, uint64_t sk, const struct nt_conn *c)
{
	model__conn_update(ctx, sk, c, false);
	return 0;
}

static void check_losses(struct session *s)
{
	uint64_t lost;

	if (tracer__stats(s->tracer, s->stats))
		return;
	lost = s->stats[NT_STAT_RB_DROP] + s->stats[NT_STAT_CONN_FULL] +
	       s->stats[NT_STAT_TRACED_FULL];
	if (lost > s->told_drops) {
		pr_warn("lost events so far: %llu ring-buffer drops, %llu connections and %llu "
			"processes not tracked (maps full)\n",
			(unsigned long long)s->stats[NT_STAT_RB_DROP],
			(unsigned long long)s->stats[NT_STAT_CONN_FULL],
			(unsigned long long)s->stats[NT_STAT_TRACED_FULL]);
		s->told_drops = lost;
	}
}

static void draw(struct session *s, bool fresh)
{
	char mode[64];
	struct dash_info in = {
		.cmd = s->cmdline,
		.start_ns = s->start_ns,
		.mode = mode,
		.lost = s->stats[NT_STAT_RB_DROP] + s->stats[NT_STAT_CONN_FULL] +
			s->stats[NT_STAT_TRACED_FULL],
		.dump = s->dump_path,
		.host = s->host,
		.job_done = s->job_exited,
		.cfg = &s->diag,
	};

	if (!s->tui)
		return;
	snprintf(mode, sizeof(mode), "%s%s", cli_mode_name(tracer__mode(s->tracer)),
		 s->snap.tcp_quiet ? ", quiet: TCP hooks off" : "");
	logtail_poll(&s->log);
	in.log = (const char *const *)s->log.line;
	in.nlog = s->log.n;
	/* paused: the picture stays, the tracing goes on */
	if (fresh && (!tui__state(s->tui)->paused || !s->shown)) {
		const struct tui_model *m = dashboard__update(s->dash, &s->snap, &s->findings, &in,
							      tui__state(s->tui)->sort);

		if (m)
			s->shown = m;
	}
	if (s->shown)
		tui__draw(s->tui, s->shown);
	s->last_draw_ns = now_mono();
}

/*
 * The dashboard takes the terminal: the job's output (and nccltrace's own messages) go to a
 * log file next to the dump, shown in the dashboard's tail pane. Plain mode if it cannot.
 */
static void start_dashboard(struct session *s, const struct launch_creds *cr)
{
	char err[128];
	size_t l = strlen(s->dump_path);

	if (l > 6 && !strcmp(s->dump_path + l - 6, ".jsonl"))
		snprintf(s->log_path, sizeof(s->log_path), "%.*s.log", (int)(l - 6), s->dump_path);
	else
		snprintf(s->log_path, sizeof(s->log_path), "%s.log", s->dump_path);
	s->log_fd = dump_create_file(s->log_path, cr->drop, cr->uid, cr->gid);
	if (s->log_fd < 0) {
		pr_warn("no dashboard: cannot create %s for the job's output: %s; plain output\n",
			s->log_path, strerror(-s->log_fd));
		s->log_path[0] = '\0';
		return;
	}
	s->dash = dashboard__new();
	if (!s->dash || logtail_open(&s->log, s->log_path) ||
	    tui__open(&s->tui, err, sizeof(err))) {
		if (s->dash)
			pr_warn("no dashboard: %s; plain output\n", s->tui ? "" : err);
		dashboard__free(s->dash);
		s->dash = NULL;
		logtail_close(&s->log);
		close(s->log_fd);
		s->log_fd = -1;
		unlink(s->log_path);
		s->log_path[0] = '\0';
		return;
	}
	fflush(stderr);
	s->saved_stderr = dup(STDERR_FILENO);
	if (s->saved_stderr >= 0)
		dup2(s->log_fd, STDERR_FILENO);
	draw(s, true);
}

/* Give the terminal back; what went to the log stays there. */
static void stop_dashboard(struct session *s)
{
	if (!s->tui)
		return;
	tui__close(s->tui);
	s->tui = NULL;
	fflush(stderr);
	if (s->saved_stderr >= 0) {
		dup2(s->saved_stderr, STDERR_FILENO);
		close(s->saved_stderr);
		s->saved_stderr = -1;
	}
	/* the findings again, on the terminal the dashboard had */
	for (int i = 0; i < s->findings.n; i++) {
		char label[32];

		kind_label(s->findings.v[i].f.kind, label, sizeof(label));
		fprintf(stderr, "nccltrace: %s  %s\n", label, s->findings.v[i].f.summary);
	}
	logtail_close(&s->log);
	dashboard__free(s->dash);
	s->dash = NULL;
	s->shown = NULL;
	if (s->log_fd >= 0)
		close(s->log_fd);
	s->log_fd = -1;
}

/*
 * Quiet mode: the per-call TCP hooks (a few hundred ns per socket call) come off while NCCL's
 * counters say everything moves, and come back at the first tick that says otherwise.
 */
static void quiet_step(struct session *s, uint64_t now)
{
	bool off = diagnose_quiet(&s->snap, &s->diag, findings_open_count(&s->findings), &s->quiet);
	json_t *rec;

	if (off == !tracer__data_hooks_on(s->tracer))
		return;
	if (tracer__set_data_hooks(s->tracer, !off)) {
		s->quiet.off = !off; /* the hooks stay as they are */
		return;
	}
	if (!off)
		s->tcp_resumed_ns = now;
	pr_info("%s\n", off ? "quiet: every communicator moves; per-call TCP hooks off"
			    : "quiet ends: per-call TCP hooks back on");
	rec = json_pack("{s:s, s:I, s:b, s:s}", "type", "tcp_hooks", "ts_ns", (json_int_t)now, "on",
			!off, "why",
			off ? "every communicator's collectives moving, no rank in setup"
			    : s->quiet.why_on);
	if (rec)
		dump_put(s, rec);
}

static int phase_stack(void *ctx, int tid, struct nt_phase_stack *out)
{
	struct session *s = ctx;

	return tracer__phase_stack(s->tracer, tid, out);
}

static void tick(struct session *s, bool force_snapshot)
{
	struct finding found[MAX_FINDINGS];
	uint64_t now;
	int n;

	tracer__poll(s->tracer);
	tracer__each_conn(s->tracer, conn_from_map, s->model);
	now = now_mono();
	model__refresh(s->model, now, on_identity, s);
	model__snapshot(s->model, now, &s->snap);
	s->snap.tcp_quiet = !tracer__data_hooks_on(s->tracer);
	s->snap.tcp_resumed_ns = s->tcp_resumed_ns;
	nccl_state__sample_ib(s->nstate, now, phase_stack, s);
	for (int i = 0; i < s->snap.nprocs; i++) {
		struct snap_proc *p = &s->snap.procs[i];

		if (!p->exited && !nccl_attach__has(s->nccl, p->pid))
			nccl_attach__scan(s->nccl, p->pid);
		p->nccl = nccl_attach__has(s->nccl, p->pid);
		nccl_state__phase(s->nstate, p->pid, &p->nccl_since_ns, p->nccl_phase,
				  sizeof(p->nccl_phase));
		p->nccl_setup = nccl_state__setup(s->nstate, p->pid, &p->nccl_setup_since_ns);
		nccl_state__proc_snap(s->nstate, p);
	}
	for (int i = 0; i < s->snap.nconns; i++) {
		struct snap_conn *c = &s->snap.conns[i];
		const char *label = nccl_state__socket_label(s->nstate, c->pid, c->c.ino);

		c->ras = label && strncmp(label, "ras", 3) == 0;
		c->nccl_label = label;
	}
	nccl_state__sample(s->nstate, now);
	s->snap.ncomms = nccl_state__comms(s->nstate, &s->snap.comms);
	n = diagnose(&s->snap, &s->diag, found, MAX_FINDINGS);
	findings_update(&s->findings, found, n, now, on_finding, s);
	quiet_step(s, now);
	if (force_snapshot || now - s->last_snapshot_ns >= SNAPSHOT_EVERY_NS) {
		dump_snapshot(s, &s->snap);
		s->last_snapshot_ns = now;
		check_losses(s);
	}
	if (s->tui && now - s->last_draw_ns >= DRAW_EVERY_NS)
		draw(s, true);
}

/* Keys on the dashboard; false once tracing should stop. */
static bool on_keys(struct session *s)
{
	switch (tui__keys(s->tui, s->shown, s->job_exited)) {
	case TUI_REDRAW:
		/* a new sort order needs new rows; anything else redraws what is shown */
		draw(s, true);
		break;
	case TUI_SNAPSHOT:
		tick(s, true);
		draw(s, false);
		break;
	case TUI_QUIT_STOP_JOB:
		snprintf(tui__state(s->tui)->status, sizeof(tui__state(s->tui)->status),
			 "stopping the job (SIGTERM to its process group); tracing until it exits");
		tui__state(s->tui)->confirm_quit = false;
		pr_info("stopping the job on request (q, y)\n");
		launcher_signal(&s->job, SIGTERM);
		draw(s, false);
		break;
	case TUI_QUIT_DETACH:
		s->detached = true;
		return false;
	default:
		break;
	}
	return true;
}

static json_t *proc_event_json(const struct nt_ev_proc *e, const char *what)
{
	json_t *o = json_object();

	json_object_set_new(o, "type", json_string("proc"));
	json_object_set_new(o, "event", json_string(what));
	json_object_set_new(o, "ts_ns", json_integer((json_int_t)e->h.ts_ns));
	json_object_set_new(o, "pid", json_integer(e->pid));
	json_object_set_new(o, "ppid", json_integer(e->ppid));
	json_object_set_new(o, "comm", json_stringn(e->comm, strnlen(e->comm, NT_COMM_LEN)));
	if (e->h.type == NT_EV_EXIT) {
		json_object_set_new(o, "exit_code",
				    WIFEXITED(e->exit_code)
					    ? json_integer(WEXITSTATUS(e->exit_code))
					    : json_null());
		json_object_set_new(o, "signal",
				    WIFSIGNALED(e->exit_code) ? json_integer(WTERMSIG(e->exit_code))
							      : json_null());
	}
	return o;
}

static int on_event(void *ctx, const void *data, size_t size)
{
	struct session *s = ctx;
	const struct nt_ev_hdr *h = data;

	if (h->type == NT_EV_FORK || h->type == NT_EV_EXEC || h->type == NT_EV_EXIT) {
		const struct nt_ev_proc *e = data;
		char comm[NT_COMM_LEN + 1] = "";

		if (size < sizeof(*e))
			return 0;
		memcpy(comm, e->comm, NT_COMM_LEN);
		if (h->type == NT_EV_FORK) {
			model__proc_add(s->model, e->pid, e->ppid, comm, h->ts_ns);
			dump_put(s, proc_event_json(e, "fork"));
			nccl_attach__proc(s->nccl, e->pid);
		} else if (h->type == NT_EV_EXEC) {
			model__proc_exec(s->model, e->pid, comm);
			dump_put(s, proc_event_json(e, "exec"));
		} else {
			model__proc_exit(s->model, e->pid, e->exit_code, h->ts_ns);
			dump_put(s, proc_event_json(e, "exit"));
			nccl_attach__exit(s->nccl, e->pid);
		}
	} else if (h->type == NT_EV_NCCL) {
		if (size >= sizeof(struct nt_ev_nccl))
			dump_put(s, nccl_state__event(s->nstate, data));
	} else if (h->type == NT_EV_CONN_STATE || h->type == NT_EV_RETRANS ||
		   h->type == NT_EV_RESET) {
		const struct nt_ev_conn *e = data;
		struct snap_conn sc = {0};
		json_t *o;

		if (size < sizeof(*e))
			return 0;
		model__conn_update(s->model, e->sk, &e->c,
				   h->type == NT_EV_CONN_STATE && e->newstate == 7 /* CLOSE */);
		sc.id = e->sk;
		sc.c = e->c;
		sc.pid = e->c.tgid;
		sc.peer_pid = -1;
		o = conn_json(&sc, h->ts_ns, nccl_state__socket_label(s->nstate, sc.pid, e->c.ino));
		json_object_set_new(o, "type",
				    json_string(h->type == NT_EV_CONN_STATE ? "conn_state"
						: h->type == NT_EV_RETRANS  ? "retrans"
									    : "reset"));
		json_object_set_new(o, "ts_ns", json_integer((json_int_t)h->ts_ns));
		json_object_set_new(o, "old", json_string(fmt_tcp_state(e->oldstate)));
		json_object_set_new(o, "new", json_string(fmt_tcp_state(e->newstate)));
		dump_put(s, o);
	}
	return 0;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void write_header(struct session *s, const char *host)
{
	json_t *h = json_object(), *cmd = json_array();

	for (int i = 0; i < s->opts.ncmd; i++)
		json_array_append_new(cmd, json_string(s->opts.cmd[i]));
	json_object_set_new(h, "nccltrace", json_integer(NT_DUMP_FORMAT));
	json_object_set_new(h, "version", json_string(NT_VERSION));
	json_object_set_new(h, "host", json_string(host));
	/* ts_ns fields are CLOCK_MONOTONIC (bpf_ktime_get_ns); add this to get wall-clock time */
	json_object_set_new(h, "boot_to_realtime_ns",
			    json_integer((json_int_t)(now_real() - now_mono())));
	json_object_set_new(h, "clock", json_string("CLOCK_MONOTONIC"));
	json_object_set_new(h, "start_ns", json_integer((json_int_t)now_mono()));
	json_object_set_new(h, "cmd", cmd);
	json_object_set_new(h, "tracer_pid", json_integer(getpid()));
	json_object_set_new(h, "attach_mode", json_string(cli_mode_name(tracer__mode(s->tracer))));
	json_object_set_new(h, "attach_notes", json_string(tracer__mode_notes(s->tracer)));
	json_object_set_new(h, "missing_hooks", json_string(tracer__missing_hooks(s->tracer)));
	json_object_set_new(h, "stall_threshold_s", json_real(s->opts.stall_threshold_s));
	/* loading (and verifying) the BPF programs; the footer's tracer_cpu_s includes it */
	json_object_set_new(h, "setup_cpu_s", json_real(cpu_seconds()));
	dump_put(s, h);
}

static void write_footer(struct session *s, int exit_status)
{
	json_t *f = json_object(), *lost = json_object(), *tot = json_object();

	tracer__stats(s->tracer, s->stats);
	json_object_set_new(lost, "ringbuf_drops", json_integer(s->stats[NT_STAT_RB_DROP]));
	json_object_set_new(lost, "conns_map_full", json_integer(s->stats[NT_STAT_CONN_FULL]));
	json_object_set_new(lost, "traced_map_full", json_integer(s->stats[NT_STAT_TRACED_FULL]));
	json_object_set_new(tot, "send_events", json_integer(s->stats[NT_STAT_SEND_EVENTS]));
	json_object_set_new(tot, "recv_events", json_integer(s->stats[NT_STAT_RECV_EVENTS]));
	json_object_set_new(tot, "state_events", json_integer(s->stats[NT_STAT_STATE_EVENTS]));
	json_object_set_new(tot, "tcp_probe_events", json_integer(s->stats[NT_STAT_PROBE_EVENTS]));
	json_object_set_new(tot, "findings", json_integer(s->nfindings));
	json_object_set_new(tot, "tracer_cpu_s", json_real(cpu_seconds()));
	json_object_set_new(f, "type", json_string("footer"));
	json_object_set_new(f, "ts_ns", json_integer((json_int_t)now_mono()));
	json_object_set_new(f, "exit_status", json_integer(exit_status));
	json_object_set_new(f, "lost", lost);
	json_object_set_new(f, "totals", tot);
	dump_put(s, f);
}

static int wait_status_to_exit(int status)
{
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* Reap the job if it is done; true once it is. */
static bool reap_job(struct session *s)
{
	int status;
	pid_t r;

	do {
		r = waitpid(s->job.pid, &status, WNOHANG);
	} while (r < 0 && errno == EINTR);
	if (r == s->job.pid) {
		s->job_exited = true;
		s->job_status = status;
		return true;
	}
	if (r < 0 && errno == ECHILD) {
		s->job_exited = true;
		return true;
	}
	return false;
}

static int event_loop(struct session *s, int sfd, int tfd)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN};

	if (ep < 0)
		return -errno;
	ev.data.fd = sfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
	ev.data.fd = tfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
	ev.data.fd = tracer__ringbuf_fd(s->tracer);
	epoll_ctl(ep, EPOLL_CTL_ADD, ev.data.fd, &ev);
	if (s->tui) {
		ev.data.fd = tui__input_fd(s->tui);
		epoll_ctl(ep, EPOLL_CTL_ADD, ev.data.fd, &ev);
	}

	while (!s->job_exited && !s->detached) {
		struct epoll_event evs[4];
		int n = epoll_wait(ep, evs, 4, 1000);

		if (n < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			if (fd == tfd) {
				uint64_t exp;

				if (read(tfd, &exp, sizeof(exp)) > 0)
					tick(s, false);
			} else if (fd == sfd) {
				struct signalfd_siginfo si;

				if (read(sfd, &si, sizeof(si)) != sizeof(si))
					continue;
				if (si.ssi_signo == SIGCHLD) {
					reap_job(s);
				} else if (si.ssi_signo == SIGWINCH) {
					if (s->tui) {
						tui__resize(s->tui);
						draw(s, false);
					}
				} else if (si.ssi_signo == SIGUSR1)
					tick(s, true);
				else {
					pr_info("forwarding signal %d to the job\n", si.ssi_signo);
					launcher_signal(&s->job, si.ssi_signo);
				}
			} else if (s->tui && fd == tui__input_fd(s->tui)) {
				if (!on_keys(s))
					break;
			} else {
				tracer__poll(s->tracer);
			}
		}
		if (!s->job_exited)
			reap_job(s);
	}
	close(ep);
	return 0;
}

static int setup_fds(sigset_t *mask, int *sfd, int *tfd)
{
	struct itimerspec its = {
		.it_interval = {.tv_nsec = TICK_NS},
		.it_value = {.tv_nsec = TICK_NS},
	};

	sigemptyset(mask);
	sigaddset(mask, SIGCHLD);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGHUP);
	sigaddset(mask, SIGQUIT);
	sigaddset(mask, SIGUSR1);
	sigaddset(mask, SIGWINCH);
	if (sigprocmask(SIG_BLOCK, mask, NULL))
		return -errno;
	*sfd = signalfd(-1, mask, SFD_CLOEXEC);
	if (*sfd < 0)
		return -errno;
	*tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (*tfd < 0 || timerfd_settime(*tfd, 0, &its, NULL))
		return -errno;
	return 0;
}

int run_main(int argc, char **argv)
{
	struct session s = {.log_fd = -1, .saved_stderr = -1, .log = {.fd = -1}};
	struct launch_creds cr;
	struct tracer_opts topts = {0};
	char err[512], host[256] = "localhost", path[512];
	struct utsname un;
	sigset_t mask;
	int rc, sfd = -1, tfd = -1, exit_code;

	if (cli_parse_run(argc, argv, &s.opts, err, sizeof(err))) {
		fprintf(stderr, "nccltrace: %s\n", err);
		return EXIT_USAGE;
	}
	if (s.opts.help) {
		fputs(cli_run_help, stdout);
		return 0;
	}
	log_set_level(s.opts.verbose);
	if (!have_privileges()) {
		fprintf(stderr, "nccltrace: loading BPF programs needs root or CAP_BPF+CAP_PERFMON "
				"(try: sudo nccltrace run ...)\n");
		return EXIT_NOPERM;
	}
	if (launcher_resolve_creds(s.opts.user, &cr, err, sizeof(err))) {
		fprintf(stderr, "nccltrace: %s\n", err);
		return EXIT_USAGE;
	}
	signal(SIGPIPE, SIG_IGN);
	if (uname(&un) == 0)
		snprintf(host, sizeof(host), "%s", un.nodename);
	s.model = model__new();
	if (!s.model)
		return EXIT_OSERR;
	s.diag.stall_threshold_ns = (uint64_t)(s.opts.stall_threshold_s * 1e9);
	s.diag.active_window_ns = NT_NSEC_PER_SEC;
	s.diag.straggler_samples = STRAGGLER_SAMPLES;
	s.diag.quiet_hold_ns = s.opts.tcp_always ? 0 : QUIET_HOLD_NS;
	s.diag.quiet_recent_ns = QUIET_RECENT_NS;
	findings_init(&s.findings, NT_NSEC_PER_SEC, 5 * NT_NSEC_PER_SEC);

	topts.mode = s.opts.mode;
	topts.on_event = on_event;
	topts.ctx = &s;
	rc = tracer__open(&topts, &s.tracer, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "nccltrace: %s\n", err);
		model__free(s.model);
		return rc == -EPERM ? EXIT_NOPERM : EXIT_UNAVAILABLE;
	}
	pr_info("attach mode: %s\n", cli_mode_name(tracer__mode(s.tracer)));
	if (tracer__mode_notes(s.tracer)[0])
		pr_info("modes tried first: %s\n", tracer__mode_notes(s.tracer));
	if (tracer__missing_hooks(s.tracer)[0])
		pr_info("optional hooks not available: %s\n", tracer__missing_hooks(s.tracer));
	{
		struct nccl_attach_cb cb = {
			.lib = on_nccl_lib, .attached = on_nccl_attached, .ctx = &s};

		s.nccl = nccl_attach__new(s.tracer, s.opts.collectives, &cb);
		s.nstate = nccl_state__new(seq_offset, &s);
		if (!s.nccl || !s.nstate) {
			fprintf(stderr, "nccltrace: out of memory\n");
			tracer__close(s.tracer);
			model__free(s.model);
			return EXIT_OSERR;
		}
	}

	if (s.opts.dump_path)
		snprintf(path, sizeof(path), "%s", s.opts.dump_path);
	else
		dump_default_name(path, sizeof(path), host, time(NULL));
	rc = dump__create(path, cr.drop, cr.uid, cr.gid, &s.dump);
	if (rc) {
		fprintf(stderr, "nccltrace: cannot create trace dump %s: %s%s\n", path,
			strerror(-rc),
			rc == -EEXIST ? " (it is never overwritten: choose another --dump)" : "");
		tracer__close(s.tracer);
		model__free(s.model);
		return EXIT_CANTCREAT;
	}
	write_header(&s, host);
	if (s.opts.nccl_lib && nccl_attach__add_lib(s.nccl, s.opts.nccl_lib, err, sizeof(err))) {
		fprintf(stderr, "nccltrace: --nccl-lib: %s\n", err);
		exit_code = EXIT_NOINPUT;
		goto out;
	}

	snprintf(s.dump_path, sizeof(s.dump_path), "%s", path);
	snprintf(s.host, sizeof(s.host), "%s", host);
	for (int i = 0, off = 0; i < s.opts.ncmd && off + 2 < (int)sizeof(s.cmdline); i++)
		off += snprintf(s.cmdline + off, sizeof(s.cmdline) - off, "%s%s", i ? " " : "",
				s.opts.cmd[i]);
	s.start_ns = now_mono();
	/* before the dashboard takes the terminal: these are worth reading first */
	config_findings(&s);
	if (!s.opts.no_tui && isatty(STDOUT_FILENO))
		start_dashboard(&s, &cr);
	rc = setup_fds(&mask, &sfd, &tfd);
	if (!rc)
		rc = launcher_spawn(s.opts.cmd, &cr, s.tui ? s.log_fd : -1, &s.job);
	if (rc) {
		fprintf(stderr, "nccltrace: cannot start '%s': %s\n", s.opts.cmd[0], strerror(-rc));
		exit_code = EXIT_OSERR;
		goto out;
	}
	model__proc_add(s.model, s.job.pid, getpid(), s.opts.cmd[0], now_mono());
	rc = tracer__track_pid(s.tracer, s.job.pid);
	if (rc)
		pr_warn("cannot follow pid %d: %s; the job runs untraced\n", s.job.pid,
			strerror(-rc));
	/* before exec: probes on a known library are live before the job can call NCCL */
	nccl_attach__proc(s.nccl, s.job.pid);
	rc = launcher_start(&s.job);
	if (rc) {
		int status;

		while (waitpid(s.job.pid, &status, 0) < 0 && errno == EINTR)
			;
		if (rc >= LAUNCH_ERR_DROP) {
			fprintf(stderr, "nccltrace: cannot switch to user '%s' (uid %u): %s\n",
				cr.user, cr.uid, strerror(rc - LAUNCH_ERR_DROP));
			exit_code = EXIT_NOPERM;
		} else {
			fprintf(stderr, "nccltrace: cannot run '%s': %s\n", s.opts.cmd[0],
				strerror(rc));
			exit_code = rc == ENOENT ? 127 : 126;
		}
		write_footer(&s, exit_code);
		goto out;
	}
	pr_info("tracing pid %d: %s (dump %s)\n", s.job.pid, s.opts.cmd[0], path);

	event_loop(&s, sfd, tfd);
	/* what happened between the last tick and the exit still counts */
	tick(&s, true);
	if (s.detached) {
		exit_code = 0;
		write_footer(&s, -1);
	} else {
		findings_close_all(&s.findings, now_mono(), on_finding, &s);
		exit_code = wait_status_to_exit(s.job_status);
		write_footer(&s, exit_code);
	}
	stop_dashboard(&s);
	fprintf(stderr, "nccltrace: %llu finding%s; trace dump: %s%s%s\n",
		(unsigned long long)s.nfindings, s.nfindings == 1 ? "" : "s", path,
		s.log_path[0] ? "; job output: " : "", s.log_path);
	if (s.detached)
		fprintf(stderr, "nccltrace: stopped tracing; the job (pid %d) goes on\n",
			s.job.pid);
out:
	stop_dashboard(&s);
	if (sfd >= 0)
		close(sfd);
	if (tfd >= 0)
		close(tfd);
	dump__close(s.dump);
	nccl_attach__free(s.nccl);
	nccl_state__free(s.nstate);
	tracer__close(s.tracer);
	findings_free(&s.findings);
	model__free(s.model);
	return exit_code;
}
