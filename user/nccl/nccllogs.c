// SPDX-License-Identifier: MIT
/*
 * The traced processes' NCCL log files, followed as they grow. nccltrace runs as root and the
 * files are the job's, so: its own directory's files are opened without following a link and
 * read only if they are regular files of the job's user; a path the user named is opened with
 * the user's rights (fsuid/fsgid and groups switched around the open). Each tick reads at most
 * NCCL_LOGS_FILE_TICK of a file and NCCL_LOGS_TOTAL_TICK in all, from where the last tick
 * stopped; a partial last line waits for its end; a file that shrank was truncated (NCCL opens
 * it with "w", again after an exec) and is read from its start.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>
#include "nccl/nccllog.h"
#include "nccl/nccllogs.h"
#include "util/grow.h"
#include "util/log.h"

struct lfile {
	int pid;   /* whose name it bears */
	bool ours; /* in nccltrace's directory: name is relative to dirfd */
	char *path;
	size_t name; /* where its last component starts in path */
	int fd;	     /* -1 until it exists */
	bool done;   /* read no more: not a regular file of the job's, too big, its process gone
		      * without it, or gone and its file read to the end */
	bool exited; /* its process exited: what is there is read, then done */
	off_t off;
	char *part; /* the last line so far, without its end (NLOG_LINE_MAX + 1 bytes) */
	size_t npart;
	bool skip; /* inside a line too long to be NCCL's: up to its end */
	uint64_t lines, records;
};

struct lproc {
	int pid;
	int file; /* index in files, -1: it writes no log */
	bool rank_told;
	bool exec; /* exec'd since: its new environment may name a log */
	struct snap_nccl_log *log;
};

struct nccl_logs {
	struct nccl_logs_opts o;
	char host[256], pattern[PATH_MAX];
	struct lfile *f;
	int nf, capf;
	struct lproc *p;
	int np, capp;
	char *buf; /* NCCL_LOGS_FILE_TICK bytes */
	int first; /* the file each poll starts with: in turn, so none waits behind a big one */
	uint64_t next_scan_ns;
};

struct nccl_logs *nccl_logs__new(const struct nccl_logs_opts *o)
{
	struct nccl_logs *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->buf = malloc(NCCL_LOGS_FILE_TICK);
	if (!l->buf) {
		free(l);
		return NULL;
	}
	l->o = *o;
	snprintf(l->host, sizeof(l->host), "%s", o->host ? o->host : "");
	snprintf(l->pattern, sizeof(l->pattern), "%s", o->pattern ? o->pattern : "");
	l->o.host = l->host;
	l->o.pattern = l->pattern;
	return l;
}

void nccl_logs__free(struct nccl_logs *l)
{
	if (!l)
		return;
	for (int i = 0; i < l->nf; i++) {
		if (l->f[i].fd >= 0)
			close(l->f[i].fd);
		free(l->f[i].path);
		free(l->f[i].part);
	}
	for (int i = 0; i < l->np; i++)
		free(l->p[i].log);
	free(l->f);
	free(l->p);
	free(l->buf);
	free(l);
}

static struct lproc *proc_of(const struct nccl_logs *l, int pid)
{
	for (int i = 0; i < l->np; i++)
		if (l->p[i].pid == pid)
			return &l->p[i];
	return NULL;
}

bool nccl_logs__known(const struct nccl_logs *l, int pid)
{
	const struct lproc *p = proc_of(l, pid);

	return p && !p->exec;
}

void nccl_logs__exec(struct nccl_logs *l, int pid)
{
	struct lproc *p = proc_of(l, pid);

	if (p)
		p->exec = true;
}

const struct snap_nccl_log *nccl_logs__of(const struct nccl_logs *l, int pid)
{
	const struct lproc *p = proc_of(l, pid);

	return p ? p->log : NULL;
}

void nccl_logs__proc(struct nccl_logs *l, int pid, const char *debug, const char *file,
		     const char *cwd)
{
	char path[PATH_MAX], abs[PATH_MAX];
	struct lproc *p;
	struct lfile *f;
	int fi;

	p = proc_of(l, pid);
	if (p && (!p->exec || p->file >= 0)) {
		p->exec = false; /* the same pid, so the same file: nothing new */
		return;
	}
	if (p) {
		p->exec = false;
	} else {
		if (grow(&l->p, &l->capp, l->np, sizeof(*l->p), 16))
			return;
		p = &l->p[l->np++];
		memset(p, 0, sizeof(*p));
		p->pid = pid;
		p->file = -1;
	}
	/* NCCL opens NCCL_DEBUG_FILE only above NCCL_DEBUG=VERSION (src/debug.cc) */
	if (!nccllog_level_writes_file(debug) || !file || !*file ||
	    !nccllog_expand_path(file, l->host, pid, path, sizeof(path)))
		return;
	if (path[0] != '/') {
		if (!cwd || snprintf(abs, sizeof(abs), "%s/%s", cwd, path) >= (int)sizeof(abs))
			return;
		memcpy(path, abs, sizeof(path));
	}
	/*
	 * /dev/stdout, /proc/self/fd/2...: the job's own streams, which nccltrace would open as
	 * its own; not files it reads
	 */
	if (!strncmp(path, "/dev/", 5) || !strncmp(path, "/proc/", 6)) {
		pr_info("pid %d: NCCL_DEBUG_FILE=%s is a stream of the process, not a file: not "
			"read\n",
			pid, file);
		return;
	}
	/* several processes, one file (no %p in the user's name): read it once */
	for (fi = 0; fi < l->nf; fi++)
		if (!strcmp(l->f[fi].path, path)) {
			p->file = fi;
			return;
		}
	if (grow(&l->f, &l->capf, l->nf, sizeof(*l->f), 8))
		return;
	f = &l->f[l->nf];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	if (!f->path)
		return;
	f->pid = pid;
	f->fd = -1;
	f->ours = l->o.dirfd >= 0 && l->pattern[0] && !strcmp(file, l->pattern);
	f->name = (size_t)(strrchr(f->path, '/') + 1 - f->path);
	p->file = l->nf++;
}

/* The user's own path, opened with the user's rights: root reads nothing the user could not. */
static int open_as_user(const struct nccl_logs *l, const char *path)
{
	gid_t groups[NGROUPS_MAX];
	int ng = -1, fd, err, ouid, ogid;

	if (!l->o.as_user)
		return open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	ng = getgroups(NGROUPS_MAX, groups);
	if (ng < 0 || setgroups(1, &l->o.gid))
		return -EPERM;
	ogid = setfsgid(l->o.gid);
	ouid = setfsuid(l->o.uid);
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	err = errno;
	setfsuid(ouid);
	setfsgid(ogid);
	if (setgroups(ng, groups))
		pr_warn("cannot restore nccltrace's groups: %s\n", strerror(errno));
	errno = err;
	return fd;
}

/* An open file checked (a regular file; in our directory, the job user's), and told. */
static void opened(struct nccl_logs *l, struct lfile *f, uint64_t now)
{
	struct stat st;

	if (fstat(f->fd, &st) || !S_ISREG(st.st_mode) ||
	    (f->ours && l->o.as_user && st.st_uid != l->o.uid)) {
		pr_warn("%s: not a regular file of the job's user: NCCL's log is not read there\n",
			f->path);
		close(f->fd);
		f->fd = -1;
		f->done = true;
		return;
	}
	f->part = malloc(NLOG_LINE_MAX + 1);
	if (!f->part) {
		close(f->fd);
		f->fd = -1;
		f->done = true;
		return;
	}
	pr_info("reading NCCL's log of pid %d: %s\n", f->pid, f->path);
	if (l->o.record)
		l->o.record(l->o.ctx,
			    json_pack("{s:s,s:s,s:I,s:i,s:s}", "type", "nccl_log", "what", "file",
				      "ts_ns", (json_int_t)now, "pid", f->pid, "path", f->path));
}

/*
 * "nccl.<host>.<pid>.log" under another host name (a container's): the files still missing
 * found by their pid, in one pass over the directory at most once a second.
 */
static void scan_ours(struct nccl_logs *l, uint64_t now)
{
	int dfd, missing = 0;
	struct dirent *e;
	DIR *d;

	for (int i = 0; i < l->nf; i++)
		missing += l->f[i].ours && l->f[i].fd < 0 && !l->f[i].done;
	if (!missing || now < l->next_scan_ns)
		return;
	l->next_scan_ns = now + 1000000000ULL;
	dfd = openat(l->o.dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	while ((e = readdir(d))) {
		const char *dot = strrchr(e->d_name, '.'), *pd;
		int pid;

		if (strncmp(e->d_name, "nccl.", 5) || !dot || strcmp(dot, ".log"))
			continue;
		for (pd = dot - 1; pd > e->d_name && *pd >= '0' && *pd <= '9'; pd--)
			;
		if (*pd != '.' || pd == dot - 1 || sscanf(pd + 1, "%d", &pid) != 1)
			continue;
		for (int i = 0; i < l->nf; i++) {
			struct lfile *f = &l->f[i];

			if (!f->ours || f->fd >= 0 || f->done || f->pid != pid)
				continue;
			f->fd = openat(l->o.dirfd, e->d_name,
				       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
			if (f->fd >= 0) {
				char *path = NULL;

				/* the name it really has, for what the dump and -v say */
				if (asprintf(&path, "%.*s%s", (int)f->name, f->path, e->d_name) >
				    0) {
					free(f->path);
					f->path = path;
				}
				opened(l, f, now);
			} else if (errno == ELOOP) {
				pr_warn("%s: a symbolic link, not NCCL's file: NCCL's log is not "
					"read there\n",
					e->d_name);
				f->done = true;
			}
		}
	}
	closedir(d);
}

static void open_file(struct nccl_logs *l, struct lfile *f)
{
	if (f->ours) {
		f->fd = openat(l->o.dirfd, f->path + f->name,
			       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		if (f->fd < 0 && errno == ELOOP) {
			pr_warn("%s: a symbolic link, not NCCL's file: NCCL's log is not read "
				"there\n",
				f->path);
			f->done = true;
		}
	} else {
		f->fd = open_as_user(l, f->path);
		if (f->fd < 0 && (errno == EACCES || errno == EPERM)) {
			pr_warn("%s: the job's user cannot read it: NCCL's log is not read there\n",
				f->path);
			f->done = true;
		}
	}
}

/* Whose line it is: the pid in its prefix if that process writes this file too (a shared one) */
static struct lproc *owner(struct nccl_logs *l, const struct lfile *f, int pid)
{
	int fi = (int)(f - l->f);
	struct lproc *p = pid ? proc_of(l, pid) : NULL;

	if (!p || p->file != fi)
		p = proc_of(l, f->pid);
	return p;
}

static void line(struct nccl_logs *l, struct lfile *f, const char *s, size_t n, uint64_t now)
{
	struct nccllog_fact fact;
	struct lproc *p;
	json_t *rec;
	int ci;

	f->lines++;
	if (nccllog_parse(s, n, &fact) == NLOG_NONE)
		return;
	p = owner(l, f, fact.pid);
	if (!p)
		return;
	if (!p->log) {
		p->log = calloc(1, sizeof(*p->log));
		if (!p->log)
			return;
	}
	ci = nccllog_apply(p->log, &fact, now);
	if (!l->o.record || f->records >= NCCL_LOGS_FILE_RECORDS)
		return;
	if (++f->records == NCCL_LOGS_FILE_RECORDS)
		pr_warn("%s: %d facts from NCCL's log in the dump; no more of this file's\n",
			f->path, NCCL_LOGS_FILE_RECORDS);
	rec = nccllog_fact_json(&fact);
	json_object_set_new(rec, "ts_ns", json_integer((json_int_t)now));
	json_object_set_new(rec, "pid", json_integer(p->pid));
	if (ci >= 0 && fact.kind != NLOG_INIT) {
		char h[24];

		snprintf(h, sizeof(h), "0x%llx", (unsigned long long)p->log->comm[ci].ptr);
		json_object_set_new(rec, "comm", json_string(h));
	}
	l->o.record(l->o.ctx, rec);
}

/* Bytes read from f: whole lines parsed, the last partial one kept for the next tick. */
static void bytes(struct nccl_logs *l, struct lfile *f, const char *b, size_t n, uint64_t now)
{
	while (n) {
		const char *nl = memchr(b, '\n', n);
		size_t k = nl ? (size_t)(nl - b) : n;

		if (!f->skip && f->npart + k > NLOG_LINE_MAX) {
			f->skip = true;
			f->npart = 0;
		}
		if (!f->skip) {
			memcpy(f->part + f->npart, b, k);
			f->npart += k;
		}
		if (nl) {
			if (!f->skip)
				line(l, f, f->part, f->npart, now);
			else
				f->lines++;
			f->npart = 0;
			f->skip = false;
			k++;
		}
		b += k;
		n -= k;
	}
}

static size_t read_file(struct nccl_logs *l, struct lfile *f, size_t budget, uint64_t now)
{
	struct stat st;
	size_t want;
	ssize_t got;

	if (f->fd < 0 || fstat(f->fd, &st))
		return 0;
	if (st.st_size < f->off) {
		f->off = 0;
		f->npart = 0;
		f->skip = false;
	}
	if (st.st_size == f->off) {
		/* its process is gone and all it wrote is read: the descriptor goes */
		if (f->exited) {
			close(f->fd);
			f->fd = -1;
			f->done = true;
		}
		return 0;
	}
	want = (size_t)(st.st_size - f->off);
	if (want > NCCL_LOGS_FILE_TICK)
		want = NCCL_LOGS_FILE_TICK;
	if (want > budget)
		want = budget;
	got = pread(f->fd, l->buf, want, f->off);
	if (got <= 0)
		return 0;
	f->off += got;
	bytes(l, f, l->buf, (size_t)got, now);
	if (f->off > NCCL_LOGS_FILE_MAX) {
		pr_warn("%s: NCCL's log passed %d MiB, more than its init-time lines: nccltrace "
			"reads no more of it\n",
			f->path, NCCL_LOGS_FILE_MAX >> 20);
		close(f->fd);
		f->fd = -1;
		f->done = true;
	}
	return (size_t)got;
}

void nccl_logs__poll(struct nccl_logs *l, uint64_t now)
{
	size_t budget = NCCL_LOGS_TOTAL_TICK;

	scan_ours(l, now);
	for (int k = 0; k < l->nf && budget; k++) {
		struct lfile *f = &l->f[(l->first + k) % l->nf];
		struct lproc *p;

		if (f->done)
			continue;
		if (f->fd < 0) {
			open_file(l, f);
			if (f->fd >= 0)
				opened(l, f, now);
			else if (f->exited)
				f->done = true; /* its process exited without it */
			if (f->fd < 0)
				continue;
		}
		budget -= read_file(l, f, budget, now);
		p = proc_of(l, f->pid);
		if (p && p->log)
			p->log->lines = f->lines;
	}
	if (l->nf)
		l->first = (l->first + 1) % l->nf;
}

void nccl_logs__exit(struct nccl_logs *l, int pid)
{
	const struct lproc *p = proc_of(l, pid);

	/* the file of a process gone: what it wrote is read once more (a shared one stays) */
	if (p && p->file >= 0 && l->f[p->file].pid == pid)
		l->f[p->file].exited = true;
}

void nccl_logs__match(struct nccl_logs *l, const struct snap_comm *comms, int n)
{
	for (int i = 0; i < l->np; i++) {
		struct snap_nccl_log *g = l->p[i].log;

		for (int k = 0; g && k < g->ncomm; k++) {
			struct snap_log_comm *c = &g->comm[k];
			const struct snap_comm *m = NULL;
			int hits = 0;

			if (c->hash)
				continue;
			for (int j = 0; j < n; j++)
				if (comms[j].pid == l->p[i].pid && comms[j].rank == c->rank &&
				    comms[j].nranks == c->nranks && !comms[j].destroyed) {
					m = &comms[j];
					hits++;
				}
			if (hits == 1)
				c->hash = m->hash;
		}
	}
}

bool nccl_logs__rank(struct nccl_logs *l, int pid, int *rank, int *nranks, bool *first)
{
	struct lproc *p = proc_of(l, pid);
	const struct snap_log_comm *c;

	if (!p || !p->log || !p->log->ncomm)
		return false;
	c = &p->log->comm[0];
	for (int i = 1; i < p->log->ncomm; i++)
		if (snap_log_same_comm(c, &p->log->comm[i]) && p->log->comm[i].rank != c->rank)
			return false;
	*rank = c->rank;
	*nranks = c->nranks;
	*first = !p->rank_told;
	p->rank_told = true;
	return true;
}

void nccl_logs__totals(const struct nccl_logs *l, int *files, uint64_t *lines, uint64_t *facts)
{
	*files = 0;
	*lines = *facts = 0;
	for (int i = 0; i < l->nf; i++) {
		*files += l->f[i].part != NULL; /* opened at some point */
		*lines += l->f[i].lines;
	}
	for (int i = 0; i < l->np; i++)
		if (l->p[i].log)
			*facts += l->p[i].log->facts;
}
