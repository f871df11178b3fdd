/* SPDX-License-Identifier: MIT */
/*
 * The pids of an array of large per-process structs, kept beside it in the same order: a search
 * reads these, not the structs, each tens of KB from the next (a cache and TLB miss apiece; a
 * calm second's copy looked up every connection's process that way, 56 times 17)
 */
#ifndef NT_PIDIX_H
#define NT_PIDIX_H

struct pidix {
	int *pid;
	int n, cap;
};

/* its index, or -1 */
static inline int pidix_find(const struct pidix *x, int pid)
{
	for (int i = 0; i < x->n; i++)
		if (x->pid[i] == pid)
			return i;
	return -1;
}

/* pid as the next index (the struct array's n before it grows); 0, or -ENOMEM */
int pidix_add(struct pidix *x, int pid);
void pidix_free(struct pidix *x);

#endif /* NT_PIDIX_H */
