/* SPDX-License-Identifier: MIT */
/*
 * Which processes a job already running is made of (`nccltrace attach PID...`): the launcher's
 * process tree. Given a rank (a process with a rank variable in its environment: RANK,
 * OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID), climb to the first ancestor without one, and
 * past an MPI daemon to its mpirun; the job is that launcher and all its descendants.
 */
#ifndef NT_JOBTREE_H
#define NT_JOBTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jobtree_proc {
	int pid, ppid;
	char comm[16];
	int rank;	      /* from its environment, -1: none (or not readable) */
	uint64_t start_ticks; /* /proc/PID/stat starttime (clock ticks since boot) */
};

/* Every process of this machine, from /proc; *out malloc'ed. Their count or -errno. */
int jobtree_scan(struct jobtree_proc **out);
/*
 * Pure: the launcher of the job pid belongs to, with why in one line ("pid 11 (torchrun) is the
 * parent of rank 0 (pid 12)"). -1 when pid is not in p[0..n).
 */
int jobtree_root(const struct jobtree_proc *p, int n, int pid, char *why, size_t len);
/* Pure: root and its descendants, root first, into out[0..max); their count. */
int jobtree_members(const struct jobtree_proc *p, int n, int root, int *out, int max);
/* Pure: the entry of pid, NULL if none */
const struct jobtree_proc *jobtree_find(const struct jobtree_proc *p, int n, int pid);

#endif /* NT_JOBTREE_H */
