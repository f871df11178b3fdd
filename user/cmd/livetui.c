// SPDX-License-Identifier: MIT
/*
 * The live dashboard's wiring to the session: it takes the terminal (the job's output and
 * nccltrace's own messages go to a log file next to the dump, shown in its tail pane), draws the
 * latest snapshot at 2 Hz, and turns keys into actions on the session.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cmd/session.h"
#include "present/console.h"
#include "util/clock.h"
#include "util/log.h"

void livetui_draw(struct session *s, bool fresh)
{
	char mode[64];
	struct dash_info in = {
		.cmd = s->cmdline,
		.start_ns = s->start_ns,
		.mode = mode,
		.lost = s->stats[NT_STAT_RB_DROP] + s->stats[NT_STAT_CONN_FULL] +
			s->stats[NT_STAT_TRACED_FULL],
		.suppressed = s->stats[NT_STAT_SUPP_PROC] + s->stats[NT_STAT_SUPP_CONN] +
			      s->stats[NT_STAT_SUPP_NCCL],
		.dump = s->dump_path,
		.host = s->host,
		.job_done = s->job_exited,
		.cfg = &s->diag,
	};

	if (!s->tui)
		return;
	snprintf(mode, sizeof(mode), "%s%s", tracer_mode_name(tracer__mode(s->tracer)),
		 s->snap.tcp_quiet ? ", quiet: TCP hooks off" : "");
	logtail_poll(&s->log);
	in.expanded = tui__state(s->tui)->expanded;
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
	s->last_draw_ns = clock_mono_ns();
}

/*
 * The dashboard takes the terminal: the job's output (and nccltrace's own messages) go to a
 * log file next to the dump, shown in the dashboard's tail pane. Plain mode if it cannot.
 */
void livetui_start(struct session *s, const struct launch_creds *cr)
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
	livetui_draw(s, true);
}

/* Give the terminal back; what went to the log stays there. */
void livetui_stop(struct session *s)
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
	console_summary(stderr, &s->findings);
	logtail_close(&s->log);
	dashboard__free(s->dash);
	s->dash = NULL;
	s->shown = NULL;
	if (s->log_fd >= 0)
		close(s->log_fd);
	s->log_fd = -1;
}

/* Keys on the dashboard; false once tracing should stop. */
bool livetui_keys(struct session *s)
{
	/* attach: q only detaches, the job is not nccltrace's to stop */
	switch (tui__keys(s->tui, s->shown, s->job_exited || s->attached)) {
	case TUI_REDRAW:
		/* a new sort order needs new rows; anything else redraws what is shown */
		livetui_draw(s, true);
		break;
	case TUI_SNAPSHOT:
		session_tick(s, true);
		livetui_draw(s, false);
		break;
	case TUI_QUIT_STOP_JOB:
		snprintf(tui__state(s->tui)->status, sizeof(tui__state(s->tui)->status),
			 "stopping the job (SIGTERM to its process group); tracing until it exits");
		tui__state(s->tui)->confirm_quit = false;
		pr_info("stopping the job on request (q, y)\n");
		launcher_signal(&s->job, SIGTERM);
		livetui_draw(s, false);
		break;
	case TUI_QUIT_DETACH:
		s->detached = true;
		return false;
	default:
		break;
	}
	return true;
}
