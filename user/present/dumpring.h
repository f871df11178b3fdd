/* SPDX-License-Identifier: MIT */
/*
 * The dump's pre-trigger ring: while the job is calm, each second's snapshot waits here for
 * DUMP_RING_SPAN_S seconds (at most DUMP_RING_MAX_BYTES in all, as the holder counts them), and
 * then goes to the file only if it was to be kept (one every 30 s, or one that says
 * what closed); when something happens, the whole ring goes to the file first, so the minute
 * before it is there at full resolution. Flight recorders keep their last minutes the same way.
 */
#ifndef NT_DUMPRING_H
#define NT_DUMPRING_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DUMP_RING_SPAN_S    60
#define DUMP_RING_MAX_BYTES (32u << 20)

struct dump_ring;

struct dump_ring *dump_ring_new(uint64_t span_ns, size_t max_bytes);
void dump_ring_free(struct dump_ring *r);
/*
 * hold a frame at ts, counted as bytes (the reference is taken: the ring drops it); 0 or
 * -ENOMEM (the reference dropped)
 */
int dump_ring_push(struct dump_ring *r, json_t *frame, size_t bytes, uint64_t ts, bool keep);
/*
 * The oldest frame, if it is older than now - span, the ring is over its bytes, or all is set:
 * the frame (the caller's reference) and whether it was to be kept. NULL: none due.
 */
json_t *dump_ring_pop(struct dump_ring *r, uint64_t now, bool all, bool *keep);
size_t dump_ring_count(const struct dump_ring *r);

#endif /* NT_DUMPRING_H */
