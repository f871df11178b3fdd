// SPDX-License-Identifier: MIT
/*
 * `nccltrace agent`: always on, one per node. It finds each NCCL job as it starts (a process
 * that maps libnccl, from the kernel's mmap records: trace/mmapwatch.c), takes its launcher's
 * process tree as the job, names it (trace/jobkey.c: TORCHELASTIC_RUN_ID, SLURM_JOB_ID,
 * MASTER_ADDR:MASTER_PORT with WORLD_SIZE, else the launcher) and traces it as attach does: with
 * an attach of its own, a child process, so that a job's tracer is what attach is, tested alone,
 * and a job's end (or its tracer's crash) leaves nothing of it in the agent. Each job's dump goes
 * to the dump directory; the directory is kept within --max-dump-bytes, the oldest job's dump
 * evicted first. --listen serves every job's /metrics (a job label added) and /state at once,
 * fetched from the jobs' tracers when asked. One line a finding on stderr, with its syslog
 * priority under systemd (the journal). SIGTERM ends it: every job's tracer detaches first.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cmd/cli.h"
#include "cmd/listen.h"
#include "cmd/session.h"
#include "cmd/subcmds.h"
#include "diagnose/diagnose.h"
#include "present/dump.h"
#include "trace/jobkey.h"
#include "trace/jobtree.h"
#include "trace/mmapwatch.h"
#include "trace/procfs.h"
#include "util/exits.h"
#include "util/grow.h"

#define AGENT_TICK_MS	     250
#define AGENT_DEFAULT_DIR    "/var/lib/nccltrace"
#define AGENT_DEFAULT_BUDGET (1ULL << 30)

static const char agent_help[] =
	"Usage: nccltrace agent [--dump-dir DIR] [--max-dump-bytes SIZE] [-t SEC]\n"
	"                       [--listen ADDR:PORT [--token-file FILE]]\n"
	"\n"
	"Watch this whole node until stopped, and trace every NCCL job on it: a process that maps\n"
	"libnccl is found within a second (from the kernel's mmap records, no scan of /proc),\n"
	"its launcher's process tree is one job, named by the first of TORCHELASTIC_RUN_ID,\n"
	"SLURM_JOB_ID and SLURM_STEP_ID, MASTER_ADDR:MASTER_PORT with WORLD_SIZE, else the\n"
	"launcher (each job says which), and the job is traced as 'nccltrace attach' traces it, "
	"by\n"
	"an attach of its own that ends with the job. Findings are printed one a line (with their\n"
	"syslog priority under systemd).\n"
	"\n"
	"Options:\n"
	"  --dump-dir DIR          each job's dump, "
	"DIR/nccltrace-HOST-JOB-DATE-TIME-pPID.jsonl.zst\n"
	"                          (default " AGENT_DEFAULT_DIR ")\n"
	"  --max-dump-bytes SIZE   DIR kept within SIZE (K, M, G, T; default 1G): the oldest\n"
	"                          finished job's dump is evicted first, each eviction logged;\n"
	"                          no job's dump grows past it\n"
	"  -t, --stall-threshold SEC  as for attach (default 5)\n"
	"  --listen ADDR:PORT      serve /metrics (every job's, with a job label) and /state\n"
	"                          ({\"jobs\":[...]}, each with its tracer's /state); loopback\n"
	"                          unless an address is given\n"
	"  --token-file FILE       the bearer token --listen needs off loopback\n"
	"  -h, --help              this help\n"
	"\n"
	"Exit status: 0 when stopped (SIGTERM, SIGINT); 64-78 for nccltrace's own errors.\n"
	"\n"
	"Examples:\n"
	"  sudo nccltrace agent\n"
	"  sudo nccltrace agent --dump-dir /var/lib/nccltrace --listen 127.0.0.1:9464\n";

#include "cmd/agent.h"

int agent_parse_opts(struct agent_opts *o, int argc, char **argv, char *err, size_t errlen)
{
	enum { OPT_DIR = 256, OPT_BUDGET, OPT_LISTEN, OPT_TOKEN };
	static const struct option longopts[] = {
		{"dump-dir", required_argument, NULL, OPT_DIR},
		{"max-dump-bytes", required_argument, NULL, OPT_BUDGET},
		{"stall-threshold", required_argument, NULL, 't'},
		{"listen", required_argument, NULL, OPT_LISTEN},
		{"token-file", required_argument, NULL, OPT_TOKEN},
		{"help", no_argument, NULL, 'h'},
		{},
	};
	double sec;
	int c;

	*o = (struct agent_opts){.dump_dir = AGENT_DEFAULT_DIR, .budget = AGENT_DEFAULT_BUDGET};
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":t:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_DIR:
			o->dump_dir = optarg;
			break;
		case OPT_BUDGET:
			if (cli_parse_bytes(optarg, DUMP_BUDGET_MIN, &o->budget)) {
				snprintf(err, errlen,
					 "--max-dump-bytes '%s': expected a size of at least 256K "
					 "(K, "
					 "M, G or T)",
					 optarg);
				return -1;
			}
			break;
		case 't':
			if (cli_parse_seconds(optarg, DIAG_MAX_THRESHOLD_S, &sec)) {
				snprintf(err, errlen, "--stall-threshold '%s': expected seconds",
					 optarg);
				return -1;
			}
			o->threshold = optarg;
			break;
		case OPT_LISTEN:
			o->listen = optarg;
			break;
		case OPT_TOKEN:
			o->token_file = optarg;
			break;
		case 'h':
			o->help = true;
			return 0;
		case ':':
			snprintf(err, errlen, "option '%s' needs a value", argv[optind - 1]);
			return -1;
		default:
			snprintf(err, errlen, "unknown option '%s'", argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		snprintf(err, errlen, "unexpected argument '%s' (the agent watches the whole node)",
			 argv[optind]);
		return -1;
	}
	return 0;
}

/* one line of the agent's log; prio as syslog's (3 error, 4 warning, 6 info) */
__attribute__((format(printf, 3, 4))) static void alog(const struct agent *a, int prio,
						       const char *fmt, ...)
{
	va_list ap;

	if (a->journal)
		fprintf(stderr, "<%d>", prio);
	fputs("nccltrace agent: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static bool seen(struct agent *a, int pid)
{
	for (int i = 0; i < a->nseen && i < AGENT_SEEN; i++)
		if (a->seen[i] == pid)
			return true;
	a->seen[a->nseen++ % AGENT_SEEN] = pid;
	if (a->nseen >= 2 * AGENT_SEEN)
		a->nseen = AGENT_SEEN;
	return false;
}

/*
 * pid's job: its launcher (the root of its process tree, found in /proc once per new process)
 * and its key: a variable's, else the launcher's. 0 or -errno.
 */
static int key_of(int pid, struct jobkey *k, int *root)
{
	struct jobtree_proc *p = NULL;
	const struct jobtree_proc *r;
	char *env = NULL, why[160];
	size_t len = 0;
	int n;

	n = jobtree_scan(&p);
	if (n < 0)
		return n;
	*root = jobtree_root(p, n, pid, why, sizeof(why));
	r = *root >= 0 ? jobtree_find(p, n, *root) : NULL;
	if (r && (procfs_read_environ(pid, &env, &len) || jobkey_from_env(env, len, k)))
		jobkey_launcher(r->pid, (unsigned long long)r->start_ticks, k);
	free(env);
	free(p);
	return r ? 0 : -ESRCH;
}

/*
 * The live job pid belongs to: the one of its launcher (a launcher that maps libnccl itself,
 * torchrun, has none of its workers' variables). A key alone does not join two launchers' trees:
 * a MASTER_ADDR:MASTER_PORT is taken again by the next job while the last one winds down.
 */
static struct agent_job *job_of(struct agent *a, int root)
{
	for (int i = 0; i < a->n; i++)
		if (a->j[i].child && a->j[i].root == root)
			return &a->j[i];
	return NULL;
}

/* the attach of job j: its argv, then fork and exec with its output into a pipe */
static int start_attach(struct agent *a, struct agent_job *j)
{
	char pid[16], budget[32], part[64], when[32];
	const char *argv[20];
	int n = 0, fds[2];
	struct tm tm;

	localtime_r(&j->started, &tm);
	strftime(when, sizeof(when), "%Y%m%d-%H%M%S", &tm);
	jobkey_file_part(&j->key, part, sizeof(part));
	snprintf(j->dump, sizeof(j->dump), "%s/nccltrace-%s-%s-%s-p%d.jsonl.zst", a->o.dump_dir,
		 a->host, part, when, j->pid);
	snprintf(pid, sizeof(pid), "%d", j->pid);
	snprintf(budget, sizeof(budget), "%llu", (unsigned long long)a->o.budget);
	argv[n++] = a->self;
	argv[n++] = "attach";
	argv[n++] = "--no-tui";
	argv[n++] = "--dump";
	argv[n++] = j->dump;
	argv[n++] = "--max-dump-bytes";
	argv[n++] = budget;
	if (a->o.threshold) {
		argv[n++] = "-t";
		argv[n++] = a->o.threshold;
	}
	if (a->o.listen) {
		argv[n++] = "--listen";
		argv[n++] = "127.0.0.1:0";
	}
	argv[n++] = pid;
	argv[n] = NULL;
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	j->child = fork();
	if (j->child < 0) {
		close(fds[0]);
		close(fds[1]);
		j->child = 0;
		return -errno;
	}
	if (!j->child) {
		sigset_t none;

		/* the agent gone (even SIGKILLed), its attaches detach */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		execv(a->self, (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	j->out = fds[0];
	fcntl(j->out, F_SETFL, O_NONBLOCK);
	return 0;
}

/*
 * nccltrace's own processes (its tracers read libnccl for their probes, and /proc shows it in
 * their maps): never a job. Every nccltrace names itself so (main.c, PR_SET_NAME).
 */
static bool is_nccltrace(int pid)
{
	struct proc_stat st;

	return procfs_read_stat(pid, &st) == 0 && !strcmp(st.comm, "nccltrace");
}

/* a process mapped libnccl: its job traced, unless it is already */
static void on_nccl(void *ctx, int pid, const char *path)
{
	struct agent *a = ctx;
	struct agent_job *j;
	struct jobkey k;
	int rc, root;

	if (seen(a, pid) || is_nccltrace(pid) || key_of(pid, &k, &root))
		return;
	if ((j = job_of(a, root))) {
		/* its launcher found first: the workers' variable names the job better */
		if (!strcmp(j->key.rule, "launcher") && strcmp(k.rule, "launcher")) {
			alog(a, 6, "job %s=%s is %s=%s (pid %d)", j->key.rule, j->key.id, k.rule,
			     k.id, pid);
			j->key = k;
		}
		return;
	}
	if (grow(&a->j, &a->cap, a->n, sizeof(*a->j), 8))
		return;
	j = &a->j[a->n];
	*j = (struct agent_job){
		.key = k, .pid = pid, .root = root, .out = -1, .started = time(NULL)};
	rc = start_attach(a, j);
	if (rc) {
		alog(a, 3, "job %s=%s (pid %d maps %s): cannot start its tracer: %s", k.rule, k.id,
		     pid, path, strerror(-rc));
		return;
	}
	a->n++;
	alog(a, 6, "job %s=%s: pid %d maps %s; traced by pid %d, dump %s", k.rule, k.id, pid, path,
	     j->child, j->dump);
}

/* every process that has libnccl mapped now: at the start, and after records were lost */
static void scan_proc(struct agent *a)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	static char maps[1 << 20];

	if (!d)
		return;
	while ((e = readdir(d))) {
		int pid = atoi(e->d_name);
		char *hit;

		if (pid <= 0 || pid == getpid() || procfs_read_maps(pid, maps, sizeof(maps)))
			continue;
		for (hit = strstr(maps, "/libnccl.so"); hit; hit = strstr(hit + 1, "/libnccl.so")) {
			char *start = hit, *end = strchr(hit, '\n');

			while (start > maps && start[-1] != ' ')
				start--;
			if (end)
				*end = '\0';
			on_nccl(a, pid, start);
			break;
		}
	}
	closedir(d);
}

/* a line of an attach: findings as warnings, its listen address kept, the rest as info */
static void job_line(struct agent *a, struct agent_job *j, char *line)
{
	const char *s = strncmp(line, "nccltrace: ", 11) ? line : line + 11;
	const char *url = strstr(s, "serving http://");
	int prio = 6;

	if (url && strstr(url, "/metrics")) {
		snprintf(j->url, sizeof(j->url), "%.*s", (int)(strstr(url, "/metrics") - url - 8),
			 url + 8);
	}
	/* a finding's line: "STALL 3.2s ...", "RING_SETUP_BLOCKED ...", "closed: ..." */
	if (s[0] >= 'A' && s[0] <= 'Z' && s[1] >= 'A' && s[1] <= 'Z')
		prio = 4;
	alog(a, prio, "job %s=%s: %s", j->key.rule, j->key.id, s);
}

static void drain(struct agent *a, struct agent_job *j)
{
	for (;;) {
		ssize_t r = read(j->out, j->line + j->ll, sizeof(j->line) - 1 - j->ll);
		char *nl;

		if (r <= 0) {
			if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
				if (j->ll) {
					j->line[j->ll] = '\0';
					job_line(a, j, j->line);
					j->ll = 0;
				}
				close(j->out);
				j->out = -1;
			}
			return;
		}
		j->ll += (size_t)r;
		j->line[j->ll] = '\0';
		while ((nl = strchr(j->line, '\n'))) {
			*nl = '\0';
			job_line(a, j, j->line);
			j->ll -= (size_t)(nl + 1 - j->line);
			memmove(j->line, nl + 1, j->ll + 1);
		}
		if (j->ll == sizeof(j->line) - 1) { /* a line longer than the buffer: as it is */
			job_line(a, j, j->line);
			j->ll = 0;
		}
	}
}

struct dumpfile {
	char path[PATH_MAX];
	time_t mtime;
	off_t size;
};

static int by_mtime(const void *x, const void *y)
{
	const struct dumpfile *a = x, *b = y;

	return (a->mtime > b->mtime) - (a->mtime < b->mtime);
}

static bool live_dump(const struct agent *a, const char *path)
{
	for (int i = 0; i < a->n; i++)
		if (a->j[i].child && !strcmp(a->j[i].dump, path))
			return true;
	return false;
}

/* the dump directory within the budget: the oldest finished job's dump out first */
static void evict(struct agent *a)
{
	DIR *d = opendir(a->o.dump_dir);
	struct dumpfile *f = NULL;
	int n = 0, cap = 0;
	unsigned long long total = 0;
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		struct stat st;
		char p[PATH_MAX];

		if (strncmp(e->d_name, "nccltrace-", 10) ||
		    snprintf(p, sizeof(p), "%s/%s", a->o.dump_dir, e->d_name) >= (int)sizeof(p) ||
		    lstat(p, &st) || !S_ISREG(st.st_mode))
			continue;
		total += (unsigned long long)st.st_size;
		if (live_dump(a, p) || grow(&f, &cap, n, sizeof(*f), 16))
			continue;
		snprintf(f[n].path, sizeof(f[n].path), "%s", p);
		f[n].mtime = st.st_mtime;
		f[n++].size = st.st_size;
	}
	closedir(d);
	if (n)
		qsort(f, (size_t)n, sizeof(*f), by_mtime);
	for (int i = 0; i < n && total > a->o.budget; i++) {
		if (unlink(f[i].path))
			continue;
		total -= (unsigned long long)f[i].size;
		alog(a, 5, "evicted %s (%lld bytes, the oldest): %s kept within %llu bytes",
		     f[i].path, (long long)f[i].size, a->o.dump_dir,
		     (unsigned long long)a->o.budget);
	}
	free(f);
}

static void reap(struct agent *a)
{
	int status;
	pid_t p;

	while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
		for (int i = 0; i < a->n; i++) {
			struct agent_job *j = &a->j[i];
			struct stat st;

			if (j->child != p)
				continue;
			if (j->out >= 0)
				drain(a, j);
			j->child = 0;
			alog(a, 6, "job %s=%s ended (its tracer %s %d): dump %s, %lld bytes",
			     j->key.rule, j->key.id,
			     WIFSIGNALED(status) ? "killed by signal" : "exit",
			     WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), j->dump,
			     stat(j->dump, &st) ? 0LL : (long long)st.st_size);
		}
	}
	/* the finished jobs' entries go (their memory with them); a pid seen may be reused */
	for (int i = 0; i < a->n;) {
		if (!a->j[i].child && a->j[i].out < 0) {
			a->j[i] = a->j[--a->n];
			continue;
		}
		i++;
	}
	evict(a);
}

/* the agent's own start: privileges, the dump directory, the node's mmap records, --listen */
static int agent_open(struct agent *a, char *err, size_t errlen)
{
	struct stat st;
	int rc;

	if (!session_privileged()) {
		snprintf(err, errlen,
			 "the agent needs root or CAP_BPF+CAP_PERFMON (try: sudo "
			 "nccltrace agent)");
		return EXIT_NOPERM;
	}
	if (mkdir(a->o.dump_dir, 0750) && errno != EEXIST) {
		snprintf(err, errlen, "--dump-dir %s: %s", a->o.dump_dir, strerror(errno));
		return EXIT_CANTCREAT;
	}
	if (lstat(a->o.dump_dir, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "--dump-dir %s: not a directory (a symlink is not followed)",
			 a->o.dump_dir);
		return EXIT_CANTCREAT;
	}
	rc = mmapwatch_open(&a->mw, err, errlen);
	if (rc)
		return rc;
	if (a->o.listen &&
	    (rc = listener__open(&a->l, a->o.listen, a->o.token_file, agent_page, a, err, errlen)))
		return rc;
	return 0;
}

static void agent_stop(struct agent *a)
{
	struct timespec t0, now;

	for (int i = 0; i < a->n; i++)
		if (a->j[i].child)
			kill(a->j[i].child, SIGTERM);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* each attach detaches (probes and BPF programs off), within 10 s or killed */
	for (;;) {
		int live = 0;

		reap(a);
		for (int i = 0; i < a->n; i++)
			live += a->j[i].child != 0;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!live)
			break;
		if (now.tv_sec - t0.tv_sec >= 10)
			for (int i = 0; i < a->n; i++)
				if (a->j[i].child)
					kill(a->j[i].child, SIGKILL);
		usleep(50000);
	}
}

static int agent_loop(struct agent *a, int sfd)
{
	for (;;) {
		struct pollfd p[2 + 256];
		int np = 0, lfd = a->l ? listener__fd(a->l) : -1;

		p[np++] = (struct pollfd){.fd = sfd, .events = POLLIN};
		if (lfd >= 0)
			p[np++] = (struct pollfd){.fd = lfd, .events = POLLIN};
		for (int i = 0; i < a->n && np < (int)(sizeof(p) / sizeof(p[0])); i++)
			if (a->j[i].out >= 0)
				p[np++] = (struct pollfd){.fd = a->j[i].out, .events = POLLIN};
		if (poll(p, (nfds_t)np, AGENT_TICK_MS) < 0 && errno != EINTR)
			return EXIT_OSERR;
		if (p[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT ||
				    si.ssi_signo == SIGHUP) {
					alog(a, 6,
					     "stopping (signal %u): every job's tracer detaches",
					     si.ssi_signo);
					agent_stop(a);
					return 0;
				}
			}
		}
		for (int i = 0; i < a->n; i++)
			if (a->j[i].out >= 0)
				drain(a, &a->j[i]);
		reap(a);
		mmapwatch_poll(a->mw, "libnccl.so", on_nccl, a);
		if (mmapwatch_take_lost(a->mw)) {
			alog(a, 4, "the kernel lost mmap records: looking in /proc once");
			scan_proc(a);
		}
		if (a->l)
			listener__serve(a->l);
	}
}

int agent_main(int argc, char **argv)
{
	struct agent a = {0};
	char err[512];
	sigset_t mask;
	int rc, sfd;

	if (agent_parse_opts(&a.o, argc, argv, err, sizeof(err))) {
		fprintf(stderr, "nccltrace: %s\n", err);
		return EXIT_USAGE;
	}
	if (a.o.help) {
		fputs(agent_help, stdout);
		return 0;
	}
	a.self = cli_self;
	a.journal = getenv("JOURNAL_STREAM") != NULL;
	if (gethostname(a.host, sizeof(a.host)))
		snprintf(a.host, sizeof(a.host), "localhost");
	a.host[sizeof(a.host) - 1] = '\0';
	rc = agent_open(&a, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "nccltrace: %s\n", err);
		mmapwatch_close(a.mw);
		return rc;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0) {
		fprintf(stderr, "nccltrace: signalfd: %s\n", strerror(errno));
		mmapwatch_close(a.mw);
		listener__close(a.l);
		return EXIT_OSERR;
	}
	alog(&a, 6, "watching %s for NCCL jobs; dumps in %s (within %llu bytes)%s%s", a.host,
	     a.o.dump_dir, (unsigned long long)a.o.budget, a.l ? "; serving " : "",
	     a.l ? listener__url(a.l) : "");
	scan_proc(&a);
	rc = agent_loop(&a, sfd);
	close(sfd);
	mmapwatch_close(a.mw);
	listener__close(a.l);
	agent_pages_free(&a);
	free(a.j);
	return rc;
}
