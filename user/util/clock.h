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

#endif /* NT_CLOCK_H */
