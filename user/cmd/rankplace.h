/* SPDX-License-Identifier: MIT */
/*
 * Where a rank runs, as the host tells it: the NUMA node all the CPUs it may run on belong to
 * (its Cpus_allowed_list against each node's cpulist), the CUDA_VISIBLE_DEVICES of its
 * environment, and the NIC its NCCL network uses (NCCL's log) with that NIC's NUMA node
 * (sysfs). $NCCLTRACE_SYSFS stands for /sys (tests). gpuwatch.c reads them once a sample.
 */
#ifndef NT_RANKPLACE_H
#define NT_RANKPLACE_H

#include <stddef.h>

struct snap_proc;

#define RANKPLACE_NODES 8

struct numa_nodes {
	char cpus[RANKPLACE_NODES][256]; /* each node's cpulist, "" none */
	int n;
};

void numa_nodes_read(struct numa_nodes *nodes);
/* The node every CPU pid may run on belongs to, -1 if several or unknown */
int numa_node_of_pid(const struct numa_nodes *nodes, int pid);
/* CUDA_VISIBLE_DEVICES of pid, into buf; NULL if unset or unreadable */
const char *pid_cuda_visible(int pid, char *buf, size_t len);
/*
 * The NIC p's NCCL network uses, from NCCL's log, into nic ("" not known); its NUMA node, -1
 * not known
 */
int rank_nic(const struct snap_proc *p, char *nic, size_t len);

#endif /* NT_RANKPLACE_H */
