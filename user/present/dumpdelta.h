/* SPDX-License-Identifier: MIT */
/*
 * Snapshots written as what changed (dump format 2). A `snapshot` record's "procs" and "conns"
 * and a `state` record's "state"."procs", "conns" and "comms" are arrays of objects, most of
 * them the same from one second to the next. A delta frame ("delta": true) writes each element
 * that changed whole, and each one that did not as its index in the same array of the last
 * frame of its type: an integer i (element i of the last frame) or a pair [i, n] (elements
 * i..i+n-1). A key frame ("key": true) writes every element whole: the first frame of each type,
 * then one at least every DELTA_KEY_EVERY_S seconds, so that a reader can start at any key frame.
 *
 * Ages grow while nothing changes: in a snapshot record, a number named age_s, *_age_s,
 * for_s, in_phase_s or api_call_s is the time since something, as of the record's ts_ns. An
 * element whose ages differ only by the time between two frames is the same element; a reader
 * that takes it from the last frame adds that time to each of them.
 */
#ifndef NT_DUMPDELTA_H
#define NT_DUMPDELTA_H

#include <jansson.h>
#include <stddef.h>

#define DELTA_KEY_EVERY_S 300

/*
 * An element may carry its identity as a string member named DELTA_ID (no member of a record
 * begins with a control character): the same string exactly when the element is the same,
 * ages as moments, made from what the element was built from. The encoder takes it in place of
 * the element's canonical text, which it need not then make, and takes it out of the element:
 * it is never written.
 */
#define DELTA_ID "\001id"
/* an identity of n bytes at p (their 128-bit hash, as 32 hex digits), for DELTA_ID */
#define DELTA_ID_LEN 33
void delta_id(const void *p, size_t n, char out[DELTA_ID_LEN]);

struct delta_enc;
struct delta_dec;

struct delta_enc *delta_enc_new(void);
void delta_enc_free(struct delta_enc *e);
/*
 * A record about to be written: a snapshot or state record becomes a key or a delta frame (in
 * place); any other record is left alone. 0, or -ENOMEM (the record is then left whole, a key
 * frame, and the next frame of its type is one too).
 */
int delta_encode(struct delta_enc *e, json_t *rec);
/* the next frame of every type is a key frame (the writer lost what it wrote last) */
void delta_enc_reset(struct delta_enc *e);

struct delta_dec *delta_dec_new(void);
void delta_dec_free(struct delta_dec *d);
/*
 * A record as read: a delta frame is made whole again (in place, "delta" taken out), a key
 * frame remembered ("key" taken out). 0, or -1 with what is wrong in err (a delta frame before
 * any key frame, an index past the last frame's elements, an element that is not an object).
 */
int delta_decode(struct delta_dec *d, json_t *rec, char *err, size_t errlen);

#endif /* NT_DUMPDELTA_H */
