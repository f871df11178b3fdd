/* SPDX-License-Identifier: MIT */
/*
 * The dump's pre-trigger ring: while the job is calm, each second's snapshot waits here, as
 * what its record is built from (records.h record_snapshot_hold), for DUMP_RING_SPAN_S seconds (at most DUMP_RING_MAX_BYTES in
 * all), and then goes to the file only if it was to be kept (one every 30 s, or one that says
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

/* what a held frame is: how its record is built (NULL: out of memory), and how it is freed */
struct dump_held_ops {
	json_t *(*record)(const void *item);
	void (*free)(void *item);
};

struct dump_ring *dump_ring_new(uint64_t span_ns, size_t max_bytes);
void dump_ring_free(struct dump_ring *r);
/*
 * hold item of ops (taken: freed by the ring), a frame at ts that takes bytes of memory; 0 or
 * -ENOMEM (item not taken: still the caller's)
 */
int dump_ring_push(struct dump_ring *r, void *item, const struct dump_held_ops *ops, size_t bytes,
		   uint64_t ts, bool keep);
/*
 * The oldest frame, if it is older than now - span, the ring is over its bytes, or all is set:
 * its item (the caller's to free), its ops and whether it was to be kept. NULL: none due.
 */
void *dump_ring_pop(struct dump_ring *r, uint64_t now, bool all, const struct dump_held_ops **ops,
		    bool *keep);
size_t dump_ring_count(const struct dump_ring *r);

#endif /* NT_DUMPRING_H */
