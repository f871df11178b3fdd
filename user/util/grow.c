// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include "util/grow.h"

int grow(void *vp, int *cap, int n, size_t size, int first)
{
	void **v = vp, *nv;
	int nc;

	if (n < *cap)
		return 0;
	nc = *cap ? *cap * 2 : first;
	nv = realloc(*v, (size_t)nc * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = nc;
	return 0;
}
