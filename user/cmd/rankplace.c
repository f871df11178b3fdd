// SPDX-License-Identifier: MIT
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include "cmd/rankplace.h"
#include "model/snaplog.h"
#include "model/snapshot.h"
#include "trace/hostcheck.h"
#include "trace/procfs.h"

/* "0-15,32-47": is cpu in it? */
static bool in_list(const char *list, int cpu)
{
	const char *p = list;

	while (*p) {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (end == p)
			return false;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		if (cpu >= a && cpu <= b)
			return true;
		p = *end == ',' ? end + 1 : end;
		if (*p == '\n' || !*p)
			break;
	}
	return false;
}

int numa_node_of_pid(const struct numa_nodes *nodes, int pid)
{
	char path[64], line[512], allowed[480] = "";
	FILE *f;
	int node = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (!nodes->n || !(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Cpus_allowed_list: %479s", allowed) == 1)
			break;
	fclose(f);
	for (int cpu = 0, ncpu = get_nprocs_conf(); allowed[0] && cpu < ncpu; cpu++) {
		if (!in_list(allowed, cpu))
			continue;
		for (int n = 0; n < nodes->n; n++)
			if (nodes->cpus[n][0] && in_list(nodes->cpus[n], cpu)) {
				if (node >= 0 && node != n)
					return -1;
				node = n;
			}
	}
	return node;
}

void numa_nodes_read(struct numa_nodes *nodes)
{
	const char *sys = getenv("NCCLTRACE_SYSFS");
	char path[PATH_MAX];

	for (int n = 0; n < RANKPLACE_NODES; n++) {
		snprintf(path, sizeof(path), "%s/devices/system/node/node%d/cpulist",
			 sys && *sys ? sys : "/sys", n);
		if (host_read_line(path, nodes->cpus[n], sizeof(nodes->cpus[n])))
			nodes->n = n + 1;
	}
}

const char *pid_cuda_visible(int pid, char *buf, size_t len)
{
	char *env = NULL;
	size_t n = 0;
	const char *found = NULL;

	if (procfs_read_environ(pid, &env, &n) < 0)
		return NULL;
	for (size_t k = 0; k < n; k += strlen(env + k) + 1)
		if (!strncmp(env + k, "CUDA_VISIBLE_DEVICES=", 21)) {
			snprintf(buf, len, "%s", env + k + 21);
			found = buf;
		}
	free(env);
	return found;
}

/*
 * The NIC p's NCCL network uses, from NCCL's log: the device of its first NET channel line
 * ("NET/IB/1": device 1), else device 0, named by the "NET/IB : Using [1]mlx5_1:1/IB" line
 * (port dropped); its NUMA node from sysfs. -1: not known.
 */
int rank_nic(const struct snap_proc *p, char *nic, size_t len)
{
	const struct snap_nccl_log *l = p->nccl_log;
	const char *sys = getenv("NCCLTRACE_SYSFS");
	char what[16] = "", path[PATH_MAX], v[16];
	int dev = 0;

	nic[0] = 0;
	if (!l)
		return -1;
	for (int i = 0; i < l->npath && !what[0]; i++)
		if (l->path[i].net &&
		    sscanf(l->path[i].transport, "NET/%11[^/]/%d", what + 4, &dev) == 2)
			memcpy(what, "NET/", 4);
	if (!what[0])
		snprintf(what, sizeof(what), "%s",
			 !strcmp(l->network, "IB") ? "NET/IB" : "NET/Socket");
	for (int i = 0; i < l->nifs && !nic[0]; i++)
		if (!strcmp(l->ifs[i].what, what) &&
		    (l->ifs[i].index == dev || l->ifs[i].index < 0))
			snprintf(nic, len, "%.*s", (int)strcspn(l->ifs[i].name, ":"),
				 l->ifs[i].name);
	if (!nic[0] || strchr(nic, '/') || nic[0] == '.')
		return nic[0] = 0, -1;
	snprintf(path, sizeof(path), "%s/class/%s/%s/device/numa_node", sys && *sys ? sys : "/sys",
		 !strcmp(what, "NET/IB") ? "infiniband" : "net", nic);
	return host_read_line(path, v, sizeof(v)) ? atoi(v) : -1;
}
