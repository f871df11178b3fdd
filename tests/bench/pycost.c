// SPDX-License-Identifier: MIT
/*
 * The cost of Python stacks read from outside (user/trace/pystack.c), and of the native stack
 * taken with them, for scripts/bench-pystacks.sh: takes the stacks of each PID at RATE per
 * second for SECONDS, the way the session does for a waiting process (once a second) or faster
 * to make the job's slowdown measurable, and prints how long each read took.
 *
 *   pycost [--native] [--print] RATE SECONDS PID...   (--print: each process's stacks once)
 *   pycost: takes=N py_us_p50=A py_us_max=B native_stopped_us_p50=C native_stopped_us_max=D
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "trace/pystack.h"
#include "trace/stacks.h"
#include "util/clock.h"

#define MAX_TAKES 100000

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double pct(uint64_t *v, int n, int p)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp);
	return v[(n - 1) * p / 100] / 1e3;
}

/* each thread's Python frames, and the main thread's merged with its native stack */
static void show(const struct py_stacks *out, const struct thread_stack *nat)
{
	char buf[2048];

	printf("pid %d: CPython %s, %d threads, read in %.0f us\n", out->pid, out->version,
	       out->nthreads, out->read_ns / 1e3);
	for (int i = 0; i < out->nthreads; i++) {
		const struct py_thread *t = &out->threads[i];

		printf("  thread %d%s:\n", t->tid, t->main ? " (main)" : "");
		for (int k = 0; k < t->nframes; k++)
			printf("    %s:%d %s\n", t->frames[k].file, t->frames[k].line,
			       t->frames[k].func);
	}
	if (nat && out->nthreads && out->threads[0].main) {
		bool m = py_merge_text(nat, &out->threads[0], buf, sizeof(buf));

		printf("  main thread %s: %s\n", m ? "merged" : "not merged", buf);
	}
}

int main(int argc, char **argv)
{
	static uint64_t py_ns[MAX_TAKES], nat_ns[MAX_TAKES];
	static struct py_stacks out;
	struct thread_stack nat;
	struct pystacks *ps = pystacks__new();
	struct stacks *st = stacks__new(NULL, NULL);
	bool native = false, print = false;
	int a = 1, n = 0, nn = 0;
	double rate, secs;
	uint64_t end, next;
	char why[160];

	for (; a < argc && argv[a][0] == '-'; a++) {
		native = native || !strcmp(argv[a], "--native");
		print = print || !strcmp(argv[a], "--print");
	}
	if (argc - a < 3 || !ps || !st) {
		fprintf(stderr, "usage: pycost [--native] [--print] RATE SECONDS PID...\n");
		return 64;
	}
	rate = atof(argv[a]);
	secs = atof(argv[a + 1]);
	if (rate <= 0 || secs <= 0) {
		fprintf(stderr, "pycost: RATE and SECONDS must be positive\n");
		return 64;
	}
	next = clock_mono_ns();
	end = next + (uint64_t)(secs * 1e9);
	while (clock_mono_ns() < end && n < MAX_TAKES) {
		for (int i = a + 2; i < argc && n < MAX_TAKES; i++) {
			int pid = atoi(argv[i]), rc;

			if (native && stacks__take(st, pid, &pid, 1, &nat, why, sizeof(why)) == 0 &&
			    nat.stopped_ns)
				nat_ns[nn++] = nat.stopped_ns;
			rc = pystacks__take(ps, pid, &out);
			if (rc) {
				fprintf(stderr, "pycost: pid %d: %s\n", pid,
					out.error[0] ? out.error : strerror(-rc));
				return 69;
			}
			py_ns[n++] = out.read_ns;
			if (print && n <= argc - a - 2)
				show(&out, native ? &nat : NULL);
		}
		next += (uint64_t)(1e9 / rate);
		while (clock_mono_ns() < next) {
			struct timespec t = {.tv_nsec = 200000};

			nanosleep(&t, NULL);
		}
	}
	printf("pycost: takes=%d py_us_p50=%.0f py_us_p90=%.0f py_us_max=%.0f "
	       "native_stopped_us_p50=%.0f native_stopped_us_max=%.0f\n",
	       n, pct(py_ns, n, 50), pct(py_ns, n, 90), pct(py_ns, n, 100), pct(nat_ns, nn, 50),
	       pct(nat_ns, nn, 100));
	pystacks__free(ps);
	stacks__free(st);
	return 0;
}
