/* SPDX-License-Identifier: MIT */
/*
 * Compressed dumps: a dump whose name ends in ".zst" is written as zstd frames, each holding the
 * records of about a second (the tracer flushes one a tick, DUMPZST_EVERY_NS apart, and one
 * when the records pass DUMPZST_MAX_BYTES), written with one write(2) each: a tracer killed by
 * SIGKILL loses at most its last second, and a reader reads every frame before a cut one. Any
 * dump, compressed or not, is opened for reading with dumpzst_open(): the zstd magic at its
 * start says which.
 */
#ifndef NT_DUMPZST_H
#define NT_DUMPZST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define DUMPZST_EVERY_NS  1000000000ull
#define DUMPZST_MAX_BYTES (1u << 20)
#define DUMPZST_LEVEL	  3

/* does path name a compressed dump (ends in ".zst")? */
bool dumpzst_name(const char *path);

struct zst_out;
struct zst_out *zst_out_new(void);
void zst_out_free(struct zst_out *z);
/* a record's text for the next frame; 1 when the frame should go now (over its bytes), 0, or -ENOMEM */
int zst_out_add(struct zst_out *z, const char *text, size_t len);
/*
 * the records added so far, as one frame written to fd, its bytes added to *written (NULL: not
 * counted); 0 (nothing to write too) or -errno
 */
int zst_out_flush(struct zst_out *z, int fd, uint64_t *written);
/*
 * The same in two steps, to see a frame's size before it is written: the records added so far
 * compressed into one frame (its bytes, 0 if none, or -errno; the records are gone either way),
 * then written (0 or -errno) or dropped
 */
ssize_t zst_out_seal(struct zst_out *z);
int zst_out_write(struct zst_out *z, int fd, uint64_t *written);
void zst_out_drop(struct zst_out *z);
/* the most the next frame can take on disk with len more bytes of records in it */
size_t zst_out_bound(const struct zst_out *z, size_t len);
/* the bytes of records added since the last frame */
size_t zst_out_pending(const struct zst_out *z);

/* what reading a compressed dump met */
struct zst_in_status {
	bool compressed;
	bool cut;	 /* its last frame ends before its end: a tracer killed while writing it */
	char error[128]; /* not empty: corrupt data (zstd's reason) */
};

/*
 * path for reading, decompressed as it is read if it is compressed (st->compressed); NULL with
 * errno as fopen. A corrupt frame is a read error (ferror) with st->error set.
 */
FILE *dumpzst_open(const char *path, struct zst_in_status *st);

#endif /* NT_DUMPZST_H */
