// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "trace/jobenv.h"

const char *jobenv_job_value(char *const *cmd, const char *name)
{
	size_t l = strlen(name);
	const char *b;

	/* `env [-i] [-u NAME] NAME=VALUE ... CMD`: what env(1) will set or drop */
	if (cmd && cmd[0]) {
		b = strrchr(cmd[0], '/') ? strrchr(cmd[0], '/') + 1 : cmd[0];
		for (int i = 1; !strcmp(b, "env") && cmd[i]; i++) {
			const char *a = cmd[i];

			if (!strcmp(a, "-u") && cmd[i + 1]) {
				if (!strcmp(cmd[++i], name))
					return NULL;
			} else if (!strncmp(a, "--unset=", 8)) {
				if (!strcmp(a + 8, name))
					return NULL;
			} else if (!strcmp(a, "-i") || !strcmp(a, "--ignore-environment") ||
				   !strcmp(a, "-")) {
				/* a fresh environment: only what follows counts */
				for (int k = i + 1; cmd[k] && strchr(cmd[k], '='); k++)
					if (!strncmp(cmd[k], name, l) && cmd[k][l] == '=')
						return cmd[k] + l + 1;
				return NULL;
			} else if (strchr(a, '=') && a[0] != '-') {
				if (!strncmp(a, name, l) && a[l] == '=')
					return a + l + 1;
			} else {
				break;
			}
		}
	}
	return getenv(name);
}

/* `env -i ... CMD`: the job starts from an empty environment and inherits nothing of ours */
static bool env_ignored(char *const *cmd)
{
	const char *b;

	if (!cmd || !cmd[0])
		return false;
	b = strrchr(cmd[0], '/') ? strrchr(cmd[0], '/') + 1 : cmd[0];
	for (int i = 1; !strcmp(b, "env") && cmd[i] && (cmd[i][0] == '-' || strchr(cmd[i], '='));
	     i++)
		if (!strcmp(cmd[i], "-i") || !strcmp(cmd[i], "--ignore-environment") ||
		    !strcmp(cmd[i], "-"))
			return true;
	return false;
}

bool jobenv_default(struct jobenv *e, char *const *cmd, const char *name, const char *value,
		    const char *why)
{
	struct jobenv_var *v;

	if (jobenv_job_value(cmd, name) || env_ignored(cmd) || e->n == JOBENV_MAX)
		return false;
	v = &e->v[e->n++];
	snprintf(v->name, sizeof(v->name), "%s", name);
	snprintf(v->value, sizeof(v->value), "%s", value);
	snprintf(v->why, sizeof(v->why), "%s", why);
	return true;
}

void jobenv_note(struct jobenv *e, const char *fmt, ...)
{
	va_list ap;

	if (e->nnotes == (int)(sizeof(e->notes) / sizeof(e->notes[0])))
		return;
	va_start(ap, fmt);
	vsnprintf(e->notes[e->nnotes++], sizeof(e->notes[0]), fmt, ap);
	va_end(ap);
}

int jobenv_apply(const struct jobenv *e)
{
	for (int i = 0; i < e->n; i++)
		if (setenv(e->v[i].name, e->v[i].value, 0))
			return -errno;
	return 0;
}

int jobenv_libdir(char *buf, size_t len)
{
	const char *d = getenv("NCCLTRACE_LIBDIR");
	char exe[PATH_MAX], lib[PATH_MAX + 64];
	ssize_t n;

	if (d && *d) {
		snprintf(buf, len, "%s", d);
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -errno;
	exe[n] = '\0';
	if (!strrchr(exe, '/'))
		return -ENOENT;
	*strrchr(exe, '/') = '\0';
	snprintf(buf, len, "%s", exe);
	/* installed (make install, the .deb): PREFIX/sbin/nccltrace, PREFIX/lib/nccltrace/ */
	if (snprintf(lib, sizeof(lib), "%s/libnccl-profiler-nccltrace.so", exe) <
		    (int)sizeof(lib) &&
	    access(lib, F_OK) &&
	    snprintf(lib, sizeof(lib), "%s/../lib/nccltrace/libnccl-profiler-nccltrace.so", exe) <
		    (int)sizeof(lib) &&
	    !access(lib, F_OK))
		snprintf(buf, len, "%s/../lib/nccltrace", exe);
	return 0;
}

int jobenv_lib(const char *name, char *buf, size_t len)
{
	char dir[PATH_MAX];
	int rc = jobenv_libdir(dir, sizeof(dir));

	if (rc)
		return rc;
	snprintf(buf, len, "%s/%s", dir, name);
	return access(buf, F_OK) ? -errno : 0;
}

/* May uid (group gid) do bits (4 read, 1 search) on st, as the kernel would decide it? */
static bool may(const struct stat *st, unsigned uid, unsigned gid, unsigned bits)
{
	if (uid == 0)
		return bits != 1 || (st->st_mode & 0111);
	if (st->st_uid == uid)
		return (st->st_mode >> 6 & bits) == bits;
	if (st->st_gid == gid)
		return (st->st_mode >> 3 & bits) == bits;
	return (st->st_mode & bits) == bits;
}

bool jobenv_readable_by(const char *path, unsigned uid, unsigned gid)
{
	char p[PATH_MAX];
	struct stat st;

	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p) || stat(p, &st) ||
	    !may(&st, uid, gid, 4))
		return false;
	/* each directory above it: searchable (x) */
	for (char *s = strrchr(p, '/'); s && s > p; s = strrchr(p, '/')) {
		*s = '\0';
		if (stat(p, &st) || !may(&st, uid, gid, 1))
			return false;
	}
	return true;
}
