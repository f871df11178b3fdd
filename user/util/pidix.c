// SPDX-License-Identifier: MIT
/* The pids beside an array of per-process structs (pidix.h) */
#include <stdlib.h>
#include "util/grow.h"
#include "util/pidix.h"

int pidix_add(struct pidix *x, int pid)
{
	int err = grow(&x->pid, &x->cap, x->n, sizeof(*x->pid), 8);

	if (!err)
		x->pid[x->n++] = pid;
	return err;
}

void pidix_free(struct pidix *x)
{
	free(x->pid);
	*x = (struct pidix){0};
}
