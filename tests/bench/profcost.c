// SPDX-License-Identifier: MIT
/*
 * Cost of nccltrace's NCCL profiler plugin per collective, for the overhead benchmark: the
 * plugin (dlopened, as NCCL does) gets the calls NCCL 2.28.9 makes for one ncclAllReduce with
 * the plugin's event mask (src/enqueue.cc, src/group.cc, src/plugin/profiler.cc):
 *   GroupApi start, GroupStartApiStop, CollApi start and stop (collTaskAppend),
 *   GroupEndApiStart (ncclGroupEndInternal), Group start (ignored: no handle), Coll start,
 *   GroupApi stop.
 * The same calls on a plugin whose functions do nothing (ARG 2, the userprof fixture) give the
 * floor: an indirect call each, which NCCL pays for any plugin. Prints
 * "coll_ns=X coll_start_ns=Y noop_coll_ns=Z": nanoseconds per collective (all the calls), per
 * Coll startEvent alone, and per collective on the no-op plugin; median of 7 rounds.
 *   build/profcost [PLUGIN [NOOP-PLUGIN [N]]]
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench.h"
#include "nccl_profiler_abi.h"

#define ROUNDS 7

static const struct ncclp_plugin_v5 *load(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	const struct ncclp_plugin_v5 *p = h ? dlsym(h, "ncclProfiler_v5") : NULL;

	if (!p) {
		fprintf(stderr, "profcost: %s: %s\n", path, h ? "no ncclProfiler_v5" : dlerror());
		exit(1);
	}
	return p;
}

/* ns per collective: n rounds of the calls of one ncclAllReduce; coll_only: the Coll start */
static double run(const struct ncclp_plugin_v5 *p, void *ctx, long n, int coll_only)
{
	struct ncclp_descr_v5 g = {.type = NCCLP_GROUP_API}, a = {.type = NCCLP_COLL_API},
			      grp = {.type = NCCLP_GROUP}, c = {.type = NCCLP_COLL};
	double t[ROUNDS];

	a.collApi.func = c.coll.func = "AllReduce";
	a.collApi.datatype = c.coll.datatype = "ncclFloat32";
	a.collApi.count = c.coll.count = 2048;
	c.coll.algo = "RING";
	c.coll.proto = "LL";
	for (int r = 0; r < ROUNDS; r++) {
		double t0 = now_ns();

		for (long i = 0; i < n; i++) {
			void *gh = NULL, *ah = NULL, *ch = NULL, *xh = NULL;

			if (!coll_only) {
				p->startEvent(ctx, &gh, &g);
				if (gh)
					p->recordEventState(gh, NCCLP_STATE_GROUP_START_API_STOP,
							    NULL);
				p->startEvent(ctx, &ah, &a);
				if (ah)
					p->stopEvent(ah);
				if (gh)
					p->recordEventState(gh, NCCLP_STATE_GROUP_END_API_START,
							    NULL);
				p->startEvent(ctx, &xh, &grp);
			}
			c.parentObj = ah;
			c.coll.seqNumber = (uint64_t)i;
			p->startEvent(ctx, &ch, &c);
			if (!coll_only && gh)
				p->stopEvent(gh);
		}
		t[r] = (now_ns() - t0) / n;
	}
	qsort(t, ROUNDS, sizeof(t[0]), cmp_double);
	return t[ROUNDS / 2];
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "build/libnccl-profiler-nccltrace.so";
	const char *noop = argc > 2 ? argv[2] : "build/userprof/libnccl-profiler-userprof.so";
	long n = argc > 3 ? atol(argv[3]) : 2000000;
	const struct ncclp_plugin_v5 *p = load(path), *q = load(noop);
	void *ctx = NULL, *qctx = NULL;
	int mask = 0;
	double coll, start, floor;

	if (n < 1)
		n = 1;
	p->init(&ctx, 0x1234, &mask, "bench", 1, 2, 0, NULL);
	q->init(&qctx, 0x1234, &mask, "bench", 1, 2, 0, NULL);
	coll = run(p, ctx, n, 0);
	start = run(p, ctx, n, 1);
	floor = run(q, qctx, n, 0);
	printf("coll_ns=%.1f coll_start_ns=%.1f noop_coll_ns=%.1f\n", coll, start, floor);
	p->finalize(ctx);
	q->finalize(qctx);
	return 0;
}
