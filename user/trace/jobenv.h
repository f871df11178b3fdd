/* SPDX-License-Identifier: MIT */
/*
 * What nccltrace adds to the job's environment (NCCL's profiler plugin, NCCL's own log to a
 * file, ...): only names the job does not set itself, so the user's own settings always win.
 * The job gets them by inheritance; the dump header lists them.
 */
#ifndef NT_JOBENV_H
#define NT_JOBENV_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define JOBENV_MAX 8

struct jobenv_var {
	char name[64];
	char value[PATH_MAX + 64];
	char why[128]; /* what nccltrace needs it for */
};

struct jobenv {
	struct jobenv_var v[JOBENV_MAX];
	int n;
	/* what nccltrace did not add, and why: one line each ("NCCL_PROFILER_PLUGIN=x is ...") */
	char notes[4][256];
	int nnotes;
};

/*
 * name=value for the job, unless the job sets name itself (in nccltrace's environment, which
 * it inherits, or in the command's `env` prefix: cmd may be NULL). True if it will be added.
 */
bool jobenv_default(struct jobenv *e, char *const *cmd, const char *name, const char *value,
		    const char *why);
/* The job's own value of name (its `env` prefix first, then this environment), NULL if unset. */
const char *jobenv_job_value(char *const *cmd, const char *name);
/*
 * Where the libraries nccltrace puts into the job are: $NCCLTRACE_LIBDIR, else the directory of
 * the running nccltrace (they are built next to it), else, installed, its ../lib/nccltrace
 * (PREFIX/sbin/nccltrace, PREFIX/lib/nccltrace/). 0 or -errno.
 */
int jobenv_libdir(char *buf, size_t len);
/* $DIR/name of jobenv_libdir(), if it exists: 0, else -errno. */
int jobenv_lib(const char *name, char *buf, size_t len);
/*
 * May user uid (group gid) read path, every directory above it searchable? The job runs as the
 * invoking user: a library only root can read would not load.
 */
bool jobenv_readable_by(const char *path, unsigned uid, unsigned gid);
/* A note for the dump header and stderr (dropped past the fourth) */
__attribute__((format(printf, 2, 3))) void jobenv_note(struct jobenv *e, const char *fmt, ...);
/* Into this process's environment, for the job to inherit at fork. 0 or -errno. */
int jobenv_apply(const struct jobenv *e);

#endif /* NT_JOBENV_H */
