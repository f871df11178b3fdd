// SPDX-License-Identifier: MIT
/*
 * NCCL's own log as an evidence source of the session. NCCL writes it on every build, stripped
 * ones too, and tells at init what no probe can on such builds: each communicator, the transport
 * of each peer and channel, GPU Direct RDMA, the settings it read, its interfaces. nccltrace
 * turns it on (init-time subsystems only, to a file per process in a directory of its own) only
 * where the job sets none of NCCL_DEBUG, NCCL_DEBUG_FILE and a per-collective NCCL_DEBUG_SUBSYS;
 * the user's own NCCL_DEBUG_FILE is read where it is set.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cmd/session.h"
#include "nccl/nccllog.h"
#include "util/log.h"

/*
 * DUMP with ".nccl" for ".jsonl" (seq > 1: "-SEQ.nccl"), absolute: the job may change its
 * directory
 */
static int log_dir_path(const struct session *s, int seq, char *buf, size_t len)
{
	char cwd[PATH_MAX] = "";
	size_t l = strlen(s->dump_path);
	int n;

	if (s->dump_path[0] != '/' && !getcwd(cwd, sizeof(cwd)))
		return -errno;
	if (l > 6 && !strcmp(s->dump_path + l - 6, ".jsonl"))
		l -= 6;
	n = snprintf(buf, len, "%s%s%.*s", cwd, cwd[0] ? "/" : "", (int)l, s->dump_path);
	if (n < (int)len && seq > 1)
		n += snprintf(buf + n, len - n, "-%d", seq);
	if (n < (int)len)
		n += snprintf(buf + n, len - n, ".nccl");
	return n < (int)len ? 0 : -ENAMETOOLONG;
}

/* NCCL expands '%' in NCCL_DEBUG_FILE: the directory's own are doubled */
static bool debug_file_value(const char *dir, char *buf, size_t len)
{
	size_t o = 0;

	for (const char *c = dir; *c; c++) {
		if (o + 3 >= len)
			return false;
		if (*c == '%')
			buf[o++] = '%';
		buf[o++] = *c;
	}
	return snprintf(buf + o, len - o, "/nccl.%%h.%%p.log") < (int)(len - o);
}

static void on_record(void *ctx, json_t *rec)
{
	session_dump(ctx, rec);
}

static void open_reader(struct session *s, const char *pattern)
{
	struct nccl_logs_opts o = {
		.dirfd = s->nccl_log_dirfd,
		.pattern = pattern,
		.host = s->host,
		.as_user = s->cr.drop,
		.uid = s->cr.uid,
		.gid = s->cr.gid,
		.record = on_record,
		.ctx = s,
	};

	s->logs = nccl_logs__new(&o);
	if (!s->logs)
		pr_warn("out of memory: NCCL's log is not read\n");
}

/* Did the job set its own? Then nothing is added; its own file, if NCCL writes one, is read. */
static bool job_has_own(struct session *s)
{
	const char *dbg = jobenv_job_value(s->opts.cmd, "NCCL_DEBUG");
	const char *file = jobenv_job_value(s->opts.cmd, "NCCL_DEBUG_FILE");
	const char *sub = jobenv_job_value(s->opts.cmd, "NCCL_DEBUG_SUBSYS");

	if (dbg && file && nccllog_level_writes_file(dbg) &&
	    (!strncmp(file, "/dev/", 5) || !strncmp(file, "/proc/", 6)))
		pr_info("NCCL's log: the job sets NCCL_DEBUG=%s and NCCL_DEBUG_FILE=%s, its own "
			"stream, which nccltrace does not parse\n",
			dbg, file);
	else if (dbg && file && nccllog_level_writes_file(dbg))
		pr_info("NCCL's log: the job sets NCCL_DEBUG=%s and NCCL_DEBUG_FILE=%s: nccltrace "
			"reads those files\n",
			dbg, file);
	else if (dbg)
		pr_info("NCCL's log: the job sets NCCL_DEBUG=%s%s: it goes to the job's stdout, "
			"which nccltrace does not parse\n",
			dbg, file ? " (no file at that level)" : "");
	else if (file)
		pr_info("NCCL's log: the job sets NCCL_DEBUG_FILE=%s without NCCL_DEBUG: NCCL logs "
			"nothing, and nccltrace leaves it so\n",
			file);
	else if (sub && !nccllog_subsys_init_only(sub))
		/* INFO with the user's own mask could log per collective: not ours to turn on */
		pr_info("NCCL's log: the job sets NCCL_DEBUG_SUBSYS=%s, which is not init-time "
			"only "
			"(INIT, ENV, BOOTSTRAP, NET): nccltrace does not turn NCCL's log on\n",
			sub);
	else
		return false;
	return true;
}

/*
 * NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,ENV,BOOTSTRAP,NET (nccllog_subsys_init_only() says
 * why these log nothing per collective), NCCL_DEBUG_FILE in a directory made for this run and
 * owned by the job's user, created like the dump. The job's stdout and stderr stay as they are.
 */
void session_log_env(struct session *s)
{
	char dir[PATH_MAX], value[PATH_MAX + 32];
	int rc;

	if (job_has_own(s)) {
		open_reader(s, NULL);
		return;
	}
	/* never an existing one (a run before left it): the next free DIR-2, DIR-3... */
	for (int seq = 1; seq <= 1000; seq++) {
		rc = log_dir_path(s, seq, dir, sizeof(dir));
		if (!rc && !debug_file_value(dir, value, sizeof(value)))
			rc = -ENAMETOOLONG;
		if (!rc) {
			s->nccl_log_dirfd = dump_create_dir(dir, s->cr.drop, s->cr.uid, s->cr.gid);
			rc = s->nccl_log_dirfd < 0 ? s->nccl_log_dirfd : 0;
		}
		if (rc != -EEXIST)
			break;
	}
	if (rc) {
		pr_warn("cannot create %s for NCCL's log: %s; tracing goes on without it\n", dir,
			strerror(-rc));
		return;
	}
	/* `env -i` gives the job nothing of ours */
	if (!jobenv_default(&s->env, s->opts.cmd, "NCCL_DEBUG", "INFO",
			    "NCCL's own log, init-time lines only (evidence of transports)")) {
		close(s->nccl_log_dirfd);
		s->nccl_log_dirfd = -1;
		rmdir(dir);
		return;
	}
	snprintf(s->nccl_log_dir, sizeof(s->nccl_log_dir), "%s", dir);
	jobenv_default(&s->env, s->opts.cmd, "NCCL_DEBUG_SUBSYS", "INIT,ENV,BOOTSTRAP,NET",
		       "NCCL's subsystems that log at init and setup only, never per collective");
	jobenv_default(&s->env, s->opts.cmd, "NCCL_DEBUG_FILE", value,
		       "NCCL's log to a file per process, not to the job's stdout");
	open_reader(s, value);
}

void session_log_own(struct session *s)
{
	open_reader(s, NULL);
}

void session_log_tick(struct session *s, uint64_t now)
{
	if (!s->logs)
		return;
	for (int i = 0; i < s->snap.nprocs; i++) {
		const struct snap_proc *p = &s->snap.procs[i];
		const struct model_proc_info *pi;
		const char *dbg = NULL, *file = NULL;
		char link[32], cwd[PATH_MAX];
		ssize_t n;

		if (nccl_logs__known(s->logs, p->pid))
			continue;
		pi = model__proc_info(s->model, p->pid);
		if (!pi)
			continue;
		for (int k = 0; k < pi->nenv; k++) {
			if (!strcmp(pi->env[k].key, "NCCL_DEBUG"))
				dbg = pi->env[k].val;
			else if (!strcmp(pi->env[k].key, "NCCL_DEBUG_FILE"))
				file = pi->env[k].val;
		}
		/* a relative NCCL_DEBUG_FILE is the process's own directory's */
		snprintf(link, sizeof(link), "/proc/%d/cwd", p->pid);
		n = file && file[0] != '/' ? readlink(link, cwd, sizeof(cwd) - 1) : -1;
		if (n >= 0)
			cwd[n] = '\0';
		nccl_logs__proc(s->logs, p->pid, dbg, file, n >= 0 ? cwd : NULL);
	}
	nccl_logs__poll(s->logs, now);
	nccl_logs__match(s->logs, s->snap.comms, s->snap.ncomms);
	for (int i = 0; i < s->snap.nprocs; i++) {
		struct snap_proc *p = &s->snap.procs[i];
		int rank, nranks;
		bool first;

		p->nccl_log = nccl_logs__of(s->logs, p->pid);
		/* no RANK in its environment: NCCL's own word for it */
		if (p->rank >= 0 || !nccl_logs__rank(s->logs, p->pid, &rank, &nranks, &first))
			continue;
		p->rank = rank;
		p->world_size = nranks;
		if (first)
			pr_info("pid %d is rank %d of %d (from NCCL's log: its first "
				"communicator)\n",
				p->pid, rank, nranks);
	}
}

void session_log_close(struct session *s)
{
	int files;
	uint64_t lines, facts;

	if (s->logs) {
		nccl_logs__totals(s->logs, &files, &lines, &facts);
		pr_info("NCCL's log: %d file%s, %llu lines, %llu facts\n", files,
			files == 1 ? "" : "s", (unsigned long long)lines,
			(unsigned long long)facts);
	}
	nccl_logs__free(s->logs);
	s->logs = NULL;
	if (s->nccl_log_dirfd >= 0)
		close(s->nccl_log_dirfd);
	s->nccl_log_dirfd = -1;
	/*
	 * A job that never wrote there leaves no empty directory behind (rmdir: only if empty),
	 * once none of its processes is left to open a file in it: NCCL would fall back to stdout
	 */
	if (s->nccl_log_dir[0] && s->job_exited && s->model && !model__live_procs(s->model) &&
	    !rmdir(s->nccl_log_dir))
		pr_info("NCCL's log: nothing written, %s removed\n", s->nccl_log_dir);
}
