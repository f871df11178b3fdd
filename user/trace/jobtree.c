// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "trace/jobtree.h"
#include "trace/procfs.h"
#include "trace/ranks.h"
#include "util/grow.h"

/* The daemons MPI launchers start on each node, between mpirun and the ranks */
static bool mpi_daemon(const char *comm)
{
	return !strcmp(comm, "orted") || !strcmp(comm, "prted") || !strcmp(comm, "hydra_pmi_proxy");
}

static bool mpi_launcher(const char *comm)
{
	return !strcmp(comm, "mpirun") || !strcmp(comm, "mpiexec") || !strcmp(comm, "prterun") ||
	       !strcmp(comm, "orterun") || !strcmp(comm, "mpiexec.hydra");
}

const struct jobtree_proc *jobtree_find(const struct jobtree_proc *p, int n, int pid)
{
	for (int i = 0; i < n; i++)
		if (p[i].pid == pid)
			return &p[i];
	return NULL;
}

int jobtree_root(const struct jobtree_proc *p, int n, int pid, char *why, size_t len)
{
	const struct jobtree_proc *cur = jobtree_find(p, n, pid), *par, *rank = NULL;

	if (!cur)
		return -1;
	/* 64 levels at most: a loop in a broken table ends */
	for (int depth = 0; cur->rank >= 0 && depth < 64; depth++) {
		par = jobtree_find(p, n, cur->ppid);
		if (!par || par->pid <= 1)
			break;
		rank = cur;
		cur = par;
	}
	if (!rank) {
		snprintf(why, len, "pid %d (%s) was given%s", cur->pid, cur->comm,
			 cur->rank >= 0 ? " (a rank whose parent is no launcher)" : "");
		return cur->pid;
	}
	par = jobtree_find(p, n, cur->ppid);
	if (mpi_daemon(cur->comm) && par && mpi_launcher(par->comm)) {
		snprintf(why, len,
			 "pid %d (%s) started %s (pid %d), the parent of rank %d (pid %d)",
			 par->pid, par->comm, cur->comm, cur->pid, rank->rank, rank->pid);
		return par->pid;
	}
	snprintf(why, len,
		 "pid %d (%s), without a rank variable, is the parent of rank %d (pid %d)",
		 cur->pid, cur->comm, rank->rank, rank->pid);
	return cur->pid;
}

int jobtree_members(const struct jobtree_proc *p, int n, int root, int *out, int max)
{
	int k = 0;

	if (max <= 0 || !jobtree_find(p, n, root))
		return 0;
	out[k++] = root;
	/* breadth first: out[0..k) grows as children are found */
	for (int i = 0; i < k; i++)
		for (int j = 0; j < n && k < max; j++)
			if (p[j].ppid == out[i] && p[j].pid != out[i])
				out[k++] = p[j].pid;
	return k;
}

static int read_one(int pid, struct jobtree_proc *jp)
{
	struct proc_stat st;
	struct rank_info ri;
	char path[64], buf[1024];
	char *env = NULL;
	size_t elen = 0;
	FILE *f;

	if (procfs_read_stat(pid, &st))
		return -1;
	memset(jp, 0, sizeof(*jp));
	jp->pid = pid;
	jp->ppid = st.ppid;
	snprintf(jp->comm, sizeof(jp->comm), "%s", st.comm);
	jp->rank = -1;
	if (procfs_read_environ(pid, &env, &elen) == 0) {
		ranks_parse_environ(env, elen, &ri);
		jp->rank = ri.rank;
	}
	free(env);
	/* starttime is field 22; comm (field 2) may hold spaces: count from its closing ')' */
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (f && fgets(buf, sizeof(buf), f)) {
		char *q = strrchr(buf, ')');
		unsigned long long v;

		if (q && sscanf(q + 2,
				"%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
				"%*d %*d %*d %*d %llu",
				&v) == 1)
			jp->start_ticks = v;
	}
	if (f)
		fclose(f);
	return 0;
}

int jobtree_scan(struct jobtree_proc **out)
{
	DIR *d = opendir("/proc");
	struct jobtree_proc *p = NULL;
	struct dirent *de;
	int n = 0, cap = 0;

	*out = NULL;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		if (grow(&p, &cap, n, sizeof(*p), 256)) {
			closedir(d);
			free(p);
			return -ENOMEM;
		}
		if (read_one((int)pid, &p[n]) == 0)
			n++;
	}
	closedir(d);
	*out = p;
	return n;
}
