/* SPDX-License-Identifier: MIT */
/*
 * One block for a copy made of parts (a calm second held in the dump's ring): its size counted
 * first, part by part, then the parts taken from it in the same order; freed whole, by one
 * free(). The parts keep malloc's alignment.
 */
#ifndef NT_BLOCK_H
#define NT_BLOCK_H

#include <stddef.h>

/* n bytes as a part of a block takes them: rounded up to malloc's alignment */
static inline size_t block_part(size_t n)
{
	return (n + 15) & ~(size_t)15;
}

/* the next n bytes of the block at *cur */
static inline void *block_take(char **cur, size_t n)
{
	void *p = *cur;

	*cur += block_part(n);
	return p;
}

#endif /* NT_BLOCK_H */
