/* SPDX-License-Identifier: MIT */
/*
 * New mappings of a library by any process of this machine, as they happen: a perf software
 * event (PERF_COUNT_SW_DUMMY) on every CPU with mmap2 records, perf record's way to learn each
 * process's executable mappings, read at each tick. How `nccltrace agent` finds NCCL jobs: a
 * process that maps libnccl is seen within a tick, with no scan of /proc. The kernel's buffers
 * are bounded (MMAPWATCH_PAGES a CPU); what did not fit is counted as lost, and the caller
 * then looks once in /proc for what it may have missed.
 */
#ifndef NT_MMAPWATCH_H
#define NT_MMAPWATCH_H

#include <stddef.h>
#include <stdint.h>

#define MMAPWATCH_PAGES 32 /* a CPU's buffer, in pages (a power of 2) */

struct mmapwatch;

/* 0, or an exit status (sysexits) with a one-line reason in err */
int mmapwatch_open(struct mmapwatch **out, char *err, size_t errlen);
/*
 * Every executable mapping since the last call whose file's name (its last component) starts
 * with prefix, to fn(ctx, pid, path), in each CPU's order. The records read.
 */
int mmapwatch_poll(struct mmapwatch *w, const char *prefix,
		   void (*fn)(void *ctx, int pid, const char *path), void *ctx);
/* the records the kernel could not keep since the last call (and forgets them) */
uint64_t mmapwatch_take_lost(struct mmapwatch *w);
void mmapwatch_close(struct mmapwatch *w);

#endif /* NT_MMAPWATCH_H */
