/* SPDX-License-Identifier: MIT */
/* What the benchmarks share: the clock they time with, and the order of their medians. */
#ifndef NT_BENCH_H
#define NT_BENCH_H

#include <time.h>

static inline double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

#endif /* NT_BENCH_H */
