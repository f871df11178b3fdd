/* SPDX-License-Identifier: MIT */
/*
 * How far one host's clock runs ahead of another's, from the two ends of the connections
 * between them: a byte is received no sooner than it was sent. Where both ends have counted
 * the same bytes one way, the receiver's last receive is at or after the sender's last send;
 * each such pair bounds the skew on one side. Pure.
 */
#ifndef NT_SNAPSKEW_H
#define NT_SNAPSKEW_H

#include <stdbool.h>
#include <stdint.h>
#include "model/snapshot.h"

/*
 * Bounds lo..hi (ns) on delta, how far b's times run ahead of a's (both already on one clock by
 * their realtime anchors). False if no connection between them has both ends with equal
 * counts; lo > hi when the pairs disagree (then nothing can be said).
 */
bool snapskew_bounds(const struct snapshot *a, const struct snapshot *b, int64_t *lo, int64_t *hi);
/*
 * The correction those bounds call for: 0 when 0 is within them give or take the tolerance,
 * else the nearer bound. The hooks stamp a send and a receive at different points of their
 * calls: the same clock shows inversions of tens of microseconds, which are no skew.
 */
#define SNAPSKEW_TOLERANCE_NS 1000000
int64_t snapskew_correction(int64_t lo, int64_t hi);

#endif /* NT_SNAPSKEW_H */
