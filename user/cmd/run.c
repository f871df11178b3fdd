// SPDX-License-Identifier: MIT
/*
 * `nccltrace run`: open a session, lint the launch environment, start the job as the invoking
 * user (before its exec the tracer follows its pid and probes a known NCCL), trace it until it
 * exits, and exit with its status.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cmd/doctor.h"
#include "cmd/session.h"
#include "cmd/subcmds.h"
#include "util/clock.h"
#include "util/log.h"

/* The tracer's nice value while it traces (tracer_priority) */
#define TRACER_NICE (-10)

/* One problem of the launch environment as a config finding, open for the whole run. */
static void config_finding(struct session *s, const struct lint_problem *p, const char *from)
{
	struct tracked_finding t = {0};
	struct finding *f = &t.f;
	uint64_t now = clock_mono_ns();
	json_t *rec;

	t.id = s->findings.next_id++;
	t.open = true;
	t.sure = true; /* no threshold: what the environment says is known at once */
	t.opened_ns = t.last_seen_ns = now;
	f->kind = FINDING_CONFIG;
	f->rank = f->peer_rank = -1;
	f->conn = -1;
	f->since_ns = now;
	snprintf(f->phase, sizeof(f->phase), "before launch");
	snprintf(f->key, sizeof(f->key), "config:%s%s%s", p->host ? "host:" : "", p->var,
		 p->host ? p->value : "");
	if (p->host) /* the host's PCI tree: "ACS 0000:42:08.0 RR,CR: ACS redirect is on ..." */
		snprintf(f->summary, sizeof(f->summary), "%s %s: %s", p->var, p->value, p->what);
	else
		snprintf(f->summary, sizeof(f->summary), "%s: %s", p->var[0] ? p->var : "job",
			 p->what);
	if (p->host)
		snprintf(f->evidence[f->nevidence++], sizeof(f->evidence[0]),
			 "this host's PCI tree (/sys/bus/pci, /sys/class/iommu, /proc/cmdline): "
			 "%s %s (%s)",
			 p->var, p->value, lint_sev_name(p->sev));
	else if (p->var[0])
		snprintf(f->evidence[f->nevidence++], sizeof(f->evidence[0]),
			 "%s=%s in the job's environment (%s)", p->var, p->value,
			 lint_sev_name(p->sev));
	if (!p->host)
		snprintf(f->evidence[f->nevidence++], sizeof(f->evidence[0]),
			 "NCCL's names from %.160s", from);
	if (p->fix[0])
		snprintf(f->hypotheses[f->nhyp++], sizeof(f->hypotheses[0]), "%s", p->fix);
	if (p->var[0] && !p->host) {
		snprintf(f->settings[0].name, sizeof(f->settings[0].name), "%s", p->var);
		snprintf(f->settings[0].value, sizeof(f->settings[0].value), "%s", p->value);
		snprintf(f->settings[0].source, sizeof(f->settings[0].source), "environ");
		f->nsettings = 1;
	}
	rec = finding_to_json(&t, FINDING_OPEN, now, NULL);
	json_object_set_new(rec, "realtime_ns", json_integer((json_int_t)clock_real_ns()));
	json_object_set_new(rec, "severity", json_string(lint_sev_name(p->sev)));
	session_dump(s, rec);
	s->nfindings++;
	fprintf(stderr, "nccltrace: CONFIG %s %s%s%s: %s%s%s\n", lint_sev_name(p->sev),
		p->var[0] ? p->var : "job",
		p->host	    ? " "
		: p->var[0] ? "="
			    : "",
		p->value, p->what, p->fix[0] ? " -> " : "", p->fix);
}

/*
 * The launch environment's problems (nccltrace doctor's checks), as config findings: in the
 * dump and on stderr before the job starts.
 */
static void config_findings(struct session *s)
{
	struct lint_problem p[64];
	char from[PATH_MAX + 64];
	int n = doctor_launch_check(s->opts.cmd, s->opts.ncmd, s->opts.nccl_lib, p, 64, from,
				    sizeof(from));

	for (int i = 0; i < n; i++)
		if (p[i].sev != LINT_INFO)
			config_finding(s, &p[i], from);
}

/*
 * Start the job: forked, followed by the tracer and probed before its exec, then exec'd as the
 * invoking user. 0, or an exit status with the reason printed (the dump gets its footer).
 */
/*
 * The tracer keeps its 200 ms tick on a node whose CPUs the job oversubscribes (32 spinning
 * ranks on 2 cores starved it for 1.8 s): nice -10 gives its thread ten times a job thread's
 * weight with the fair scheduler, for the few percent of a CPU it uses. Set after the fork, so
 * the job keeps its own; refused (no CAP_SYS_NICE) it only says so with -v.
 */
static void tracer_priority(void)
{
	if (setpriority(PRIO_PROCESS, 0, TRACER_NICE) < 0)
		pr_info("cannot raise the tracer's priority (nice %d): %s\n", TRACER_NICE,
			strerror(errno));
}

static int launch(struct session *s, const struct launch_creds *cr)
{
	int rc = session_signals(s), exit_code, sig = session_stop_pending();

	/* stopped while the tracer was starting: the job is never started, the dump is whole */
	if (sig) {
		fprintf(stderr, "nccltrace: %s before the job started; it was not started\n",
			strsignal(sig));
		session_footer(s, 128 + sig);
		return 128 + sig;
	}
	if (!rc)
		rc = jobenv_apply(&s->env);
	if (!rc)
		rc = launcher_spawn(s->opts.cmd, cr, s->tui ? s->log_fd : -1, &s->job);
	if (rc) {
		fprintf(stderr, "nccltrace: cannot start '%s': %s\n", s->opts.cmd[0],
			strerror(-rc));
		return EXIT_OSERR;
	}
	tracer_priority();
	model__proc_add(s->model, s->job.pid, getpid(), s->opts.cmd[0], clock_mono_ns());
	rc = tracer__track_pid(s->tracer, s->job.pid);
	if (rc)
		pr_warn("cannot follow pid %d: %s; the job runs untraced\n", s->job.pid,
			strerror(-rc));
	/* before exec: probes on a known library are live before the job can call NCCL */
	nccl_attach__proc(s->nccl, s->job.pid);
	rc = launcher_start(&s->job);
	if (!rc)
		return 0;
	while (waitpid(s->job.pid, &(int){0}, 0) < 0 && errno == EINTR)
		;
	if (rc >= LAUNCH_ERR_DROP) {
		fprintf(stderr, "nccltrace: cannot switch to user '%s' (uid %u): %s\n", cr->user,
			cr->uid, strerror(rc - LAUNCH_ERR_DROP));
		exit_code = EXIT_NOPERM;
	} else {
		fprintf(stderr, "nccltrace: cannot run '%s': %s\n", s->opts.cmd[0], strerror(rc));
		exit_code = rc == ENOENT ? 127 : 126;
	}
	session_footer(s, exit_code);
	return exit_code;
}

/* Trace the running job until it exits or tracing is stopped; the job's exit status. */
static int trace_job(struct session *s)
{
	int exit_code;

	pr_info("tracing pid %d: %s (dump %s)\n", s->job.pid, s->opts.cmd[0], s->dump_path);
	session_loop(s);
	/* what happened between the last tick and the exit still counts: all of it */
	pr_debug("the job's end: %d records read after it\n", tracer__drain(s->tracer));
	session_tick(s, true);
	if (s->detached) {
		exit_code = 0;
		session_footer(s, -1);
	} else {
		findings_close_all(&s->findings, clock_mono_ns(), session_finding, s);
		exit_code = session_exit_code(s->job_status);
		session_footer(s, exit_code);
	}
	livetui_stop(s);
	fprintf(stderr, "nccltrace: %llu finding%s; trace dump: %s%s%s\n",
		(unsigned long long)s->nfindings, s->nfindings == 1 ? "" : "s", s->dump_path,
		s->log_path[0] ? "; job output: " : "", s->log_path);
	if (s->detached)
		fprintf(stderr, "nccltrace: stopped tracing; the job (pid %d) goes on\n",
			s->job.pid);
	return exit_code;
}

int run_main(int argc, char **argv)
{
	struct session s = {0};
	struct launch_creds cr;
	char err[512];
	struct utsname un;
	int rc;

	if (cli_parse_run(argc, argv, &s.opts, err, sizeof(err))) {
		fprintf(stderr, "nccltrace: %s\n", err);
		return EXIT_USAGE;
	}
	if (s.opts.help) {
		fputs(cli_run_help, stdout);
		return 0;
	}
	log_set_level(s.opts.verbose);
	if (!session_privileged()) {
		fprintf(stderr, "nccltrace: loading BPF programs needs root or CAP_BPF+CAP_PERFMON "
				"(try: sudo nccltrace run ...)\n");
		return EXIT_NOPERM;
	}
	if (launcher_resolve_creds(s.opts.user, &cr, err, sizeof(err))) {
		fprintf(stderr, "nccltrace: %s\n", err);
		return EXIT_USAGE;
	}
	signal(SIGPIPE, SIG_IGN);
	session_block_signals();
	snprintf(s.host, sizeof(s.host), "%s", uname(&un) == 0 ? un.nodename : "localhost");
	for (int i = 0, off = 0; i < s.opts.ncmd && off + 2 < (int)sizeof(s.cmdline); i++)
		off += snprintf(s.cmdline + off, sizeof(s.cmdline) - off, "%s%s", i ? " " : "",
				s.opts.cmd[i]);
	rc = session_open(&s, &cr);
	if (!rc) {
		s.start_ns = clock_mono_ns();
		/* before the dashboard takes the terminal: these are worth reading first */
		config_findings(&s);
		if (!s.opts.no_tui && isatty(STDOUT_FILENO))
			livetui_start(&s, &cr);
		rc = launch(&s, &cr);
		if (!rc)
			rc = trace_job(&s);
	}
	session_close(&s);
	return rc;
}
