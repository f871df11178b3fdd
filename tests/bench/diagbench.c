// SPDX-License-Identifier: MIT
/*
 * The diagnosis at scale, timed: diagnose() on synthetic snapshots (tests/unit/synth.h) of
 * rings, trees and all-to-all patterns of 512 to 4096 ranks with 16 to 64 connections each,
 * one rank hung. Prints one line per case: ranks, connections, pattern, median and worst ms of
 * REPS runs, and the snapshot's and findings' MB.
 *   diagbench [REPS [RANKS PER_RANK]]   (RANKS and PER_RANK: that size only)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "synth.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const struct diag_config cfg = {
		.stall_threshold_ns = 5 * SYNTH_SEC,
		.active_window_ns = SYNTH_SEC,
	};
	static const struct {
		enum synth_pattern p;
		const char *name;
	} pats[] = {{SYNTH_RING, "ring"}, {SYNTH_TREE, "tree"}, {SYNTH_ALL2ALL, "all-to-all"}};
	int reps = argc > 1 ? atoi(argv[1]) : 11, sizes[] = {512, 1024, 4096}, per[] = {16, 64};
	size_t ns = 3, nk = 2;
	struct finding *out = calloc(8, sizeof(*out));

	if (!out || reps < 1)
		return 1;
	if (argc > 3) {
		sizes[0] = atoi(argv[2]);
		per[0] = atoi(argv[3]);
		ns = nk = 1;
		if (sizes[0] < 16 || per[0] < 2)
			return 1;
	}
	printf("%6s %8s %-10s %9s %9s %8s %8s\n", "ranks", "conns", "pattern", "median_ms",
	       "max_ms", "snap_MB", "out_MB");
	for (size_t s = 0; s < ns; s++)
		for (size_t k = 0; k < nk; k++)
			for (size_t p = 0; p < sizeof(pats) / sizeof(pats[0]); p++) {
				struct synth *y = synth_new(sizes[s], per[k], pats[p].p, 7);
				double t[reps];
				int n = 0;

				if (!y)
					return 1;
				for (int r = 0; r < reps; r++) {
					double t0 = now_ms();

					n = diagnose(&y->s, &cfg, out, 8);
					t[r] = now_ms() - t0;
				}
				qsort(t, reps, sizeof(t[0]), dbl_cmp);
				/* the answer must be right for the time to mean anything */
				if (n != 1 || out[0].rank != 7 || out[0].nwaiters != sizes[s] - 1) {
					fprintf(stderr,
						"diagbench: %s %d x %d: %d findings, wrong\n",
						pats[p].name, sizes[s], per[k], n);
					return 1;
				}
				printf("%6d %8d %-10s %9.2f %9.2f %8.1f %8.1f\n", sizes[s],
				       y->s.nconns, pats[p].name, t[reps / 2], t[reps - 1],
				       (double)(y->s.nprocs * sizeof(*y->procs) +
						y->s.nconns * sizeof(*y->conns)) /
					       (1 << 20),
				       8.0 * sizeof(*out) / (1 << 20));
				synth_free(y);
			}
	free(out);
	return 0;
}
