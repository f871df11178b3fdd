/* SPDX-License-Identifier: MIT */
/* Arrays that grow by doubling. */
#ifndef NT_GROW_H
#define NT_GROW_H

#include <stddef.h>

/*
 * Room for one more element in the array at *(void **)vp, which holds n of *cap elements of
 * size bytes: doubled when full (first elements the first time). 0, or -ENOMEM with the array
 * as it was.
 */
int grow(void *vp, int *cap, int n, size_t size, int first);

#endif /* NT_GROW_H */
