/* SPDX-License-Identifier: MIT */
/* The two clocks of a trace: CLOCK_MONOTONIC (bpf_ktime_get_ns, every ts_ns) and wall time. */
#ifndef NT_CLOCK_H
#define NT_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline uint64_t clock_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * How long before now t was, 0 if t is not before it: state read live after a tick took its
 * time (a BPF map) can carry a later stamp, and unsigned now - t would be centuries.
 */
static inline uint64_t clock_age_ns(uint64_t now, uint64_t t)
{
	return t < now ? now - t : 0;
}

#endif /* NT_CLOCK_H */
