// SPDX-License-Identifier: MIT
/*
 * nccltrace's NCCL profiler plugin and the tracer's reader of it, together: the real plugin
 * (build/libnccl-profiler-nccltrace.so, dlopened) is driven with descriptors laid out byte by
 * byte as NCCL lays them out for each API version (offsets from NCCL 2.28.9's DWARF, v6 and v7
 * from their headers), and the tracer's code reads the state back from this process's memory with
 * process_vm_readv, as it reads a rank's. Then torn, corrupt and random memory.
 *
 * Over 700 lines on purpose: every test drives the one dlopened plugin and reads it back with
 * the same reader fixtures; a second file would have to share them through a header as long.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ntprof.h"
#include "nccl/ncclprof.h"
#include "nccl/ncclstate.h"
#include "testutil.h"

#define AR    4 /* ncclFuncAllReduce */
#define BCAST 0
#define RS    3 /* ReduceScatter */

/* the plugin's exported structs: init differs by version, the rest is at the same place */
struct plugin {
	const char *name;
	void *init;
	int (*startEvent)(void *ctx, void **eHandle, void *eDescr);
	int (*stopEvent)(void *eHandle);
	int (*recordEventState)(void *eHandle, int eState, void *args);
	int (*finalize)(void *ctx);
};

static void *lib;
static const struct plugin *plug[8];
static struct ntprof_state *st;

static int load(void **state)
{
	char self[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	(void)state;
	assert_true(n > 0);
	self[n] = '\0';
	/* build/tests/test_ncclprof -> build/libnccl-profiler-nccltrace.so */
	snprintf(path, sizeof(path), "%s/../%s", dirname(self), NTPROF_LIB);
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		fail_msg("dlopen %s: %s", path, dlerror());
	for (int v = 1; v <= 7; v++) {
		char sym[32];

		snprintf(sym, sizeof(sym), "ncclProfiler_v%d", v);
		plug[v] = dlsym(lib, sym);
		assert_non_null(plug[v]);
		assert_string_equal(plug[v]->name, "nccltrace");
	}
	st = dlsym(lib, NTPROF_SYMBOL);
	assert_non_null(st);
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* ---- descriptors, byte by byte ---- */

struct descr {
	_Alignas(8) unsigned char b[144];
};

#define PUT(d, off, type, v)                                                                       \
	do {                                                                                       \
		type v_ = (type)(v);                                                               \
		memcpy((d)->b + (off), &v_, sizeof(v_));                                           \
	} while (0)

static const char *const fname[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
				    "AllReduce"};
static const char *const tname[] = {"ncclInt8",	   "ncclUint8",	  "ncclInt32",
				    "ncclUint32",  "ncclInt64",	  "ncclUint64",
				    "ncclFloat16", "ncclFloat32", "ncclFloat64"};

/* A Coll descriptor of version v: type at 0 (uint8_t before v5, uint64_t from v5), rank at 16 */
static void coll_descr(struct descr *d, int v, uint64_t hash, uint64_t seq, int func,
		       uint64_t count, int root, int dtype, int rank, void *parent)
{
	memset(d, 0, sizeof(*d));
	if (v >= 5)
		PUT(d, 0, uint64_t, 1 << 1);
	else
		PUT(d, 0, uint8_t, 1 << 1);
	PUT(d, 8, void *, parent);
	PUT(d, 16, int, rank);
	switch (v) {
	case 1: /* name, commHash 32, seqNumber 40, func u8 48, count 72, root 80, dtype u8 84 */
		PUT(d, 32, uint64_t, hash);
		PUT(d, 40, uint64_t, seq);
		PUT(d, 48, uint8_t, func);
		PUT(d, 72, size_t, count);
		PUT(d, 80, int, root);
		PUT(d, 84, uint8_t, dtype);
		PUT(d, 88, uint32_t, 0); /* ncclSum */
		break;
	case 2:
	case 3: /* strings: func 48, datatype 88 */
		PUT(d, 32, uint64_t, hash);
		PUT(d, 40, uint64_t, seq);
		PUT(d, 48, const char *, fname[func]);
		PUT(d, 72, size_t, count);
		PUT(d, 80, int, root);
		PUT(d, 88, const char *, tname[dtype]);
		break;
	case 4: /* no name nor commHash: seqNumber 24, func 32, count 56, root 64, datatype 72 */
	default:
		PUT(d, 24, uint64_t, seq);
		PUT(d, 32, const char *, fname[func]);
		PUT(d, 56, size_t, count);
		PUT(d, 64, int, root);
		PUT(d, 72, const char *, tname[dtype]);
		PUT(d, 80, uint8_t, 1);
		PUT(d, 88, const char *, "RING");
		PUT(d, 96, const char *, "SIMPLE");
		/* v7: kernelVariant 112, isSymColl 120, the call's userTag 128 */
		if (v >= 7) {
			PUT(d, 112, const char *, "AllReduce_Sum_f32_RING_SIMPLE");
			PUT(d, 128, uint64_t, 0x7a60000 + seq);
		}
		break;
	}
}

/* A P2p descriptor: commHash at 32 (v1-v3) */
static void p2p_descr(struct descr *d, int v, uint64_t hash, int peer)
{
	memset(d, 0, sizeof(*d));
	if (v >= 5)
		PUT(d, 0, uint64_t, 1 << 2);
	else
		PUT(d, 0, uint8_t, 1 << 2);
	if (v <= 3) {
		PUT(d, 32, uint64_t, hash);
		PUT(d, 72, int, peer);
	} else {
		PUT(d, 56, int, peer);
	}
}

/* v5+ API events: GroupApi (graphCaptured 24, depth 28), CollApi (func 24 ... graphCaptured 64) */
static void api_descr(struct descr *d, int type, bool graph)
{
	memset(d, 0, sizeof(*d));
	PUT(d, 0, uint64_t, type);
	if (type == 1 << 8) {
		PUT(d, 24, bool, graph);
		PUT(d, 28, int, 1);
	} else {
		PUT(d, 24, const char *, "AllReduce");
		PUT(d, 32, size_t, 1024);
		PUT(d, 40, const char *, "ncclFloat32");
		PUT(d, 64, bool, graph);
	}
}

/* init of version v: a context for communicator hash, rank of nranks */
static void *ctx_init(int v, uint64_t hash, int rank, int nranks, int *mask)
{
	void *ctx = NULL;
	int m = 0;

	if (v <= 3)
		assert_int_equal(((int (*)(void **, int *))plug[v]->init)(&ctx, &m), 0);
	else if (v == 4)
		assert_int_equal(((int (*)(void **, int *, const char *, uint64_t, int, int, int,
					   void *))plug[v]
					  ->init)(&ctx, &m, "tp", hash, 1, nranks, rank, NULL),
				 0);
	else
		assert_int_equal(((int (*)(void **, uint64_t, int *, const char *, int, int, int,
					   void *))plug[v]
					  ->init)(&ctx, hash, &m, "tp", 1, nranks, rank, NULL),
				 0);
	if (mask)
		*mask = m;
	return ctx;
}

/* one Coll event: launch #seq of func */
static void launch(int v, void *ctx, uint64_t hash, int rank, uint64_t seq, int func,
		   uint64_t count, int dtype, void *parent)
{
	struct descr d;
	void *h = (void *)1;

	coll_descr(&d, v, hash, seq, func, count, func == BCAST ? 1 : 0, dtype, rank, parent);
	assert_int_equal(plug[v]->startEvent(ctx, &h, &d), 0);
	assert_null(h); /* no stop needed: no handle */
}

/* ---- the tracer's side ---- */

struct reader {
	struct nccl_state *ns;
	json_t *recs;
	struct snap_comm *comms;
	int ncomms;
};

static void emit(void *ctx, json_t *rec)
{
	json_array_append_new(((struct reader *)ctx)->recs, rec);
}

static void reader_open(struct reader *r, const void *addr)
{
	r->ns = nccl_state__new(NULL, NULL);
	assert_non_null(r->ns);
	r->recs = json_array();
	assert_int_equal(nccl_state__prof_at(r->ns, getpid(), (uint64_t)(uintptr_t)addr), 0);
}

static void sample(struct reader *r)
{
	struct snap_proc sp = {.pid = getpid(), .rank = -1, .nccl = true};
	uint64_t now = now_ns();

	nccl_state__sample_prof(r->ns, &sp, 1, now, emit, r);
	nccl_state__sample(r->ns, now);
	r->ncomms = nccl_state__comms(r->ns, &r->comms);
}

static const struct snap_comm *comm_of(const struct reader *r, uint64_t hash, int rank)
{
	for (int i = 0; i < r->ncomms; i++)
		if (r->comms[i].hash == hash && r->comms[i].rank == rank)
			return &r->comms[i];
	return NULL;
}

static void reader_close(struct reader *r)
{
	json_decref(r->recs);
	nccl_state__free(r->ns);
}

/* the "profiler" part of the process's dump record, communicator hash */
static json_t *prof_comm_json(struct reader *r, uint64_t hash, json_t **whole)
{
	json_t *o = nccl_state__proc_json(r->ns, getpid(), now_ns()), *cm, *c;
	char h[24];
	size_t i;

	*whole = o;
	assert_non_null(o);
	cm = json_object_get(json_object_get(o, "profiler"), "comms");
	snprintf(h, sizeof(h), "%016llx", (unsigned long long)hash);
	json_array_foreach(cm, i, c) if (!strcmp(json_string_value(json_object_get(c, "comm_hash")),
						 h)) return c;
	fail_msg("no profiler comm %s", h);
	return NULL;
}

/* ---- tests ---- */

/* Every version's descriptors decoded: counts per function, arguments, the communicator. */
static void test_decode_each_version(void **state)
{
	(void)state;
	for (int v = 1; v <= 7; v++) {
		uint64_t hash = 0x1000 + v;
		struct reader r;
		struct descr d;
		void *h = NULL, *ctx;
		int mask;
		json_t *whole, *c, *recent;

		ctx = ctx_init(v, hash, 3, 4, &mask);
		assert_non_null(ctx);
		/* Coll and P2p; v5+ also GroupApi, CollApi, P2pApi; never proxy or kernel events */
		assert_int_equal(mask, v >= 5 ? 0x706 : 0x6);
		launch(v, ctx, hash, 3, 0, BCAST, 400, 0, NULL);
		launch(v, ctx, hash, 3, 0, AR, 4096, 7, NULL);
		launch(v, ctx, hash, 3, 1, AR, 4096, 7, NULL);
		launch(v, ctx, hash, 3, 0, RS, 512, 8, NULL);
		p2p_descr(&d, v, hash, 2);
		assert_int_equal(plug[v]->startEvent(ctx, &h, &d), 0);
		reader_open(&r, st);
		sample(&r);
		/* v1-v3 learnt the communicator and rank from the descriptors */
		const struct snap_comm *sc = comm_of(&r, hash, 3);

		if (!sc)
			fail_msg("v%d: communicator %llx rank 3 not read", v,
				 (unsigned long long)hash);
		assert_true(sc->seq_ok);
		assert_int_equal(sc->seq_src, SNAP_SRC_PROFILER);
		assert_int_equal(sc->seq[BCAST], 1);
		assert_int_equal(sc->seq[AR], 2);
		assert_int_equal(sc->seq[RS], 1);
		assert_int_equal(sc->launched, 4);
		assert_int_equal(sc->nranks, v >= 4 ? 4 : -1);
		assert_int_equal(sc->last_coll, RS);
		assert_int_equal(sc->last_count, 512);
		assert_int_equal(sc->last_dtype, 8);
		assert_int_equal(sc->args_src, SNAP_SRC_PROFILER);
		c = prof_comm_json(&r, hash, &whole);
		assert_int_equal(json_integer_value(json_object_get(c, "p2p")), 1);
		recent = json_object_get(c, "recent");
		assert_int_equal(json_array_size(recent), 4);
		/* the Broadcast: its root, and seqNumber as NCCL counts it (1-based in the dump) */
		assert_string_equal(
			json_string_value(json_object_get(json_array_get(recent, 0), "coll")),
			"Broadcast");
		assert_int_equal(
			json_integer_value(json_object_get(json_array_get(recent, 0), "root")), 1);
		assert_int_equal(
			json_integer_value(json_object_get(json_array_get(recent, 2), "seq")), 2);
		assert_int_equal(
			json_integer_value(json_object_get(json_array_get(recent, 3), "datatype")),
			8);
		/* v7: each call's userTag (AllReduce #2 is seqNumber 1), none before */
		if (v >= 7)
			assert_int_equal(json_integer_value(json_object_get(
						 json_array_get(recent, 2), "user_tag")),
					 0x7a60001);
		else
			assert_null(json_object_get(json_array_get(recent, 2), "user_tag"));
		json_decref(whole);
		/* a record of the communicator in the dump, with the version NCCL drove */
		{
			json_t *rec;
			size_t i;
			bool seen = false;

			json_array_foreach(
				r.recs, i,
				rec) if (!strcmp(json_string_value(json_object_get(rec, "type")),
						 "nccl_profiler_comm") &&
					 json_integer_value(json_object_get(rec, "api")) == v &&
					 json_integer_value(json_object_get(rec, "rank")) == 3)
				seen = true;
			assert_true(seen);
		}
		assert_int_equal(plug[v]->finalize(ctx), 0);
		sample(&r);
		assert_true(comm_of(&r, hash, 3)->destroyed);
		reader_close(&r);
	}
}

/*
 * A process's part of the dump in two steps (a calm second held in the dump's ring): the copy
 * taken at one moment writes what the state held then, the same JSON as the state itself gave
 * then, though more collectives were read since; the copy is one block of the size it said
 */
static void test_copy_keeps_its_moment(void **state)
{
	uint64_t hash = 0x2005, now;
	struct nccl_proc_copy *cp;
	char *block, *cur;
	size_t size;
	struct reader r;
	json_t *then, *held, *live, *c;
	void *ctx;
	int mask;

	(void)state;
	ctx = ctx_init(5, hash, 1, 2, &mask);
	assert_non_null(ctx);
	launch(5, ctx, hash, 1, 0, AR, 4096, 7, NULL);
	reader_open(&r, st);
	sample(&r);
	now = now_ns();
	/* one block, its size exactly what the copy takes */
	size = nccl_state__proc_copy_size(r.ns, getpid());
	assert_true(size > 0);
	block = malloc(size);
	assert_non_null(block);
	cur = block;
	cp = nccl_state__proc_copy(r.ns, getpid(), &cur);
	assert_non_null(cp);
	assert_ptr_equal(cur, block + size);
	then = nccl_state__proc_json(r.ns, getpid(), now);
	launch(5, ctx, hash, 1, 1, AR, 4096, 7, NULL);
	launch(5, ctx, hash, 1, 2, AR, 4096, 7, NULL);
	sample(&r);
	held = nccl_proc_json(cp, now);
	assert_true(json_equal(held, then));
	c = json_array_get(json_object_get(json_object_get(held, "profiler"), "comms"), 0);
	assert_int_equal(json_integer_value(json_object_get(c, "collectives")), 1);
	assert_int_equal(json_array_size(json_object_get(c, "recent")), 1);
	c = prof_comm_json(&r, hash, &live);
	assert_int_equal(json_integer_value(json_object_get(c, "collectives")), 3);
	assert_false(json_equal(live, held));
	json_decref(live);
	json_decref(held);
	json_decref(then);
	free(block);
	/* nothing of a process the state does not know */
	assert_int_equal(nccl_state__proc_copy_size(r.ns, getpid() + 1), 0);
	cur = NULL;
	assert_null(nccl_state__proc_copy(r.ns, getpid() + 1, &cur));
	assert_int_equal(plug[5]->finalize(ctx), 0);
	reader_close(&r);
}

/* A uprobe's entry on this process's main thread */
static void enter(struct nccl_state *ns, int probe)
{
	struct nt_ev_nccl e;

	memset(&e, 0, sizeof(e));
	e.h.ts_ns = now_ns();
	e.pid = e.tid = (__u32)getpid();
	e.probe = (__u16)probe;
	json_decref(nccl_state__event(ns, &e));
}

/* The process as a tick sees it: the uprobes' phase and setup, then the plugin's word */
static void uprobe_snap(struct nccl_state *ns, struct snap_proc *sp)
{
	sp->nccl_phase[0] = '\0';
	nccl_state__phase(ns, sp->pid, &sp->nccl_since_ns, sp->nccl_phase, sizeof(sp->nccl_phase));
	sp->nccl_setup = nccl_state__setup(ns, sp->pid, &sp->nccl_setup_since_ns);
	nccl_state__proc_snap(ns, sp);
}

/* v5+: API calls; a group in ncclGroupEnd with nothing launched is transport setup */
static void test_api_in_progress(void **state)
{
	uint64_t hash = 0x2001;
	void *ctx = ctx_init(5, hash, 0, 2, NULL), *g = NULL, *capi = NULL;
	struct snap_proc sp = {.pid = getpid(), .rank = 0};
	struct reader r;
	struct descr d;
	json_t *whole, *c;

	(void)state;
	api_descr(&d, 1 << 8, false);
	assert_int_equal(plug[5]->startEvent(ctx, &g, &d), 0);
	assert_non_null(g);
	assert_int_equal(plug[5]->recordEventState(g, 23 /* GroupStartApiStop */, NULL), 0);
	api_descr(&d, 1 << 9, false);
	assert_int_equal(plug[5]->startEvent(ctx, &capi, &d), 0);
	assert_non_null(capi);
	assert_int_equal(plug[5]->stopEvent(capi), 0);
	reader_open(&r, st);
	sample(&r);
	/* not in ncclGroupEnd yet: nothing to say */
	nccl_state__proc_snap(r.ns, &sp);
	assert_int_equal(sp.nccl_setup, SNAP_SETUP_NONE);
	assert_int_equal(plug[5]->recordEventState(g, 24 /* GroupEndApiStart */, NULL), 0);
	sample(&r);
	/* the public call's probe saw ncclAllReduce: the plugin's place is the one told */
	snprintf(sp.nccl_phase, sizeof(sp.nccl_phase), "collective (ncclAllReduce)");
	nccl_state__proc_snap(r.ns, &sp);
	assert_int_equal(sp.nccl_setup, SNAP_SETUP_TRANSPORT);
	assert_true(sp.nccl_setup_since_ns > 0 && sp.nccl_setup_since_ns <= now_ns());
	assert_string_equal(sp.nccl_phase,
			    "ncclGroupEnd before its first launch (NCCL profiler plugin)");
	/* the uprobes' setup from the public call alone: the plugin says where in it */
	enter(r.ns, NT_P_API_ALLREDUCE);
	uprobe_snap(r.ns, &sp);
	assert_int_equal(sp.nccl_setup, SNAP_SETUP_TRANSPORT);
	assert_string_equal(sp.nccl_phase,
			    "ncclGroupEnd before its first launch (NCCL profiler plugin)");
	/* an internal frame inside it says more: the uprobes' place stays */
	enter(r.ns, NT_P_RING_CONNECT);
	uprobe_snap(r.ns, &sp);
	assert_int_equal(sp.nccl_setup, SNAP_SETUP_TRANSPORT);
	assert_null(strstr(sp.nccl_phase, "profiler"));
	c = prof_comm_json(&r, hash, &whole);
	assert_int_equal(json_integer_value(json_object_get(c, "coll_api_calls")), 1);
	assert_non_null(json_object_get(c, "api_call_s"));
	json_decref(whole);
	/* launched: no longer setup, even before the group ends */
	launch(5, ctx, hash, 0, 0, AR, 1024, 7, capi);
	sample(&r);
	memset(&sp, 0, sizeof(sp));
	sp.pid = getpid();
	nccl_state__proc_snap(r.ns, &sp);
	assert_int_equal(sp.nccl_setup, SNAP_SETUP_NONE);
	assert_int_equal(plug[5]->stopEvent(g), 0);
	/* a graph-captured call's launches are left out, as NCCL leaves them out of seqNumber */
	api_descr(&d, 1 << 9, true);
	assert_int_equal(plug[5]->startEvent(ctx, &capi, &d), 0);
	launch(5, ctx, hash, 0, 1, AR, 1024, 7, capi);
	sample(&r);
	assert_int_equal(comm_of(&r, hash, 0)->seq[AR], 1);
	c = prof_comm_json(&r, hash, &whole);
	assert_int_equal(json_integer_value(json_object_get(c, "graph_captured")), 1);
	json_decref(whole);
	plug[5]->finalize(ctx);
	reader_close(&r);
}

/* Two ranks in this process, one communicator: collectives with their arguments */
struct pair {
	int v;
	uint64_t hash;
	void *ctx[2];
	uint64_t seq[2];
};

static void pair_open(struct pair *p, int v, uint64_t hash)
{
	p->v = v;
	p->hash = hash;
	for (int k = 0; k < 2; k++) {
		p->ctx[k] = ctx_init(v, hash, k, 2, NULL);
		assert_non_null(p->ctx[k]);
		p->seq[k] = 0;
	}
}

/* n all-reduces on both ranks; rank 1's ordinal odd_at (1-based, 0: none) has count odd_count */
static void pair_run(struct pair *p, int n, uint64_t odd_at, uint64_t odd_count)
{
	for (int i = 0; i < n; i++)
		for (int k = 0; k < 2; k++) {
			uint64_t ord = p->seq[k] + 1;

			launch(p->v, p->ctx[k], p->hash, k, p->seq[k]++, AR,
			       k == 1 && ord == odd_at ? odd_count : 4194304, 7, NULL);
		}
}

/* Each rank's launches as letters, A an all-reduce, B a broadcast: f[k][i] for rank k */
static void pair_funcs(struct pair *p, const char *f0, const char *f1)
{
	const char *f[2] = {f0, f1};
	uint64_t nb[2] = {0, 0};

	for (int i = 0; f0[i] && f1[i]; i++)
		for (int k = 0; k < 2; k++) {
			bool b = f[k][i] == 'B';

			launch(p->v, p->ctx[k], p->hash, k, b ? nb[k]++ : p->seq[k]++,
			       b ? BCAST : AR, b ? 400 : 4194304, 7, NULL);
		}
}

static void pair_close(struct pair *p)
{
	for (int k = 0; k < 2; k++)
		plug[p->v]->finalize(p->ctx[k]);
}

/* A size mismatch at #21 that completes: latched on both ranks, and it stays */
static void test_mismatch_latched(void **state)
{
	struct pair p;
	struct reader r;
	const struct snap_comm *c0, *c1;

	(void)state;
	pair_open(&p, 5, 0x3001);
	reader_open(&r, st);
	pair_run(&p, 10, 0, 0);
	sample(&r);
	assert_int_equal(comm_of(&r, p.hash, 0)->mm_ord, 0);
	/* rank 1 passes 2109497 instead of 4194304 at collective 21; the job goes on */
	pair_run(&p, 15, 21, 2109497);
	sample(&r);
	c0 = comm_of(&r, p.hash, 0);
	c1 = comm_of(&r, p.hash, 1);
	assert_int_equal(c0->mm_ord, 21);
	assert_int_equal(c1->mm_ord, 21);
	assert_int_equal(c0->mm_from, 21);
	assert_int_equal(c0->mm_coll, AR);
	assert_int_equal(c0->mm_count, 4194304);
	assert_int_equal(c1->mm_count, 2109497);
	assert_int_equal(c1->mm_seq, 20);
	assert_int_equal(c1->mm_dtype, 7);
	/* rank 1 changed its arguments, rank 0 did not: the tie-break between two ranks */
	assert_true(c1->mm_changed);
	assert_false(c0->mm_changed);
	assert_int_equal(c0->seq[AR], 25);
	/* the job goes on, all equal again: the first divergence stays */
	pair_run(&p, 30, 0, 0);
	sample(&r);
	assert_int_equal(comm_of(&r, p.hash, 1)->mm_ord, 21);
	assert_int_equal(comm_of(&r, p.hash, 1)->seq[AR], 55);
	pair_close(&p);
	reader_close(&r);

	/* equal arguments throughout: nothing latched */
	pair_open(&p, 5, 0x3002);
	reader_open(&r, st);
	pair_run(&p, 40, 0, 0);
	sample(&r);
	assert_int_equal(comm_of(&r, p.hash, 0)->mm_ord, 0);
	assert_int_equal(comm_of(&r, p.hash, 1)->mm_ord, 0);
	pair_close(&p);
	reader_close(&r);
}

/*
 * Which of two ranks broke its own pattern: after ten all-reduces, a broadcast where the other
 * all-reduces; and in a job that alternates the two, the rank that repeats one.
 */
static void test_mismatch_own_pattern(void **state)
{
	static const char *const runs[][2] = {
		{"AAAAAAAAAAA", "AAAAAAAAAAB"},
		{"ABABABABABA", "ABABABABABB"},
		{"ABABABABABB", "ABABABABABA"},
	};

	(void)state;
	for (int t = 0; t < 3; t++) {
		struct pair p;
		struct reader r;
		int odd = t == 2 ? 0 : 1;

		pair_open(&p, 5, 0x3100 + t);
		reader_open(&r, st);
		pair_funcs(&p, runs[t][0], runs[t][1]);
		sample(&r);
		assert_int_equal(comm_of(&r, p.hash, 0)->mm_ord, 11);
		assert_true(comm_of(&r, p.hash, odd)->mm_changed);
		assert_false(comm_of(&r, p.hash, !odd)->mm_changed);
		pair_close(&p);
		reader_close(&r);
	}
}

/*
 * The tracer lags: 3000 collectives between two reads, more than the ring holds. The ranks'
 * records before the last 1024 are lost, but their cumulative signatures still tell.
 */
static void test_mismatch_among_lost_records(void **state)
{
	struct pair p;
	struct reader r;
	const struct snap_comm *c;

	(void)state;
	pair_open(&p, 6, 0x4001);
	reader_open(&r, st);
	pair_run(&p, 3000, 500, 1);
	sample(&r);
	c = comm_of(&r, p.hash, 0);
	assert_int_equal(c->seq[AR], 3000);
	assert_int_equal(c->mm_ord, 3000 - NTPROF_RING + 1);
	assert_int_equal(c->mm_from, 1);
	assert_int_equal(c->mm_coll, -1);
	pair_close(&p);
	reader_close(&r);

	/* the same lag, no mismatch: nothing */
	pair_open(&p, 6, 0x4002);
	reader_open(&r, st);
	pair_run(&p, 3000, 0, 0);
	sample(&r);
	assert_int_equal(comm_of(&r, p.hash, 0)->mm_ord, 0);
	assert_int_equal(comm_of(&r, p.hash, 0)->seq[AR], 3000);
	pair_close(&p);
	reader_close(&r);
}

/* v3/v4: a seqNumber that did not advance (a CUDA graph): the ordinals are not compared */
static void test_unaligned_not_compared(void **state)
{
	struct pair p;
	struct reader r;

	(void)state;
	pair_open(&p, 4, 0x5001);
	reader_open(&r, st);
	pair_run(&p, 5, 0, 0);
	/* rank 0 replays a captured all-reduce: NCCL did not count it */
	launch(4, p.ctx[0], p.hash, 0, p.seq[0] - 1, AR, 4194304, 7, NULL);
	pair_run(&p, 5, 8, 1);
	sample(&r);
	assert_int_equal(comm_of(&r, p.hash, 0)->mm_ord, 0);
	pair_close(&p);
	reader_close(&r);
}

/* A copy caught half-way through a record: that record and the ones after wait */
static void test_torn_record(void **state)
{
	struct ntprof_state *copy = malloc(sizeof(*st));
	struct pair p;
	struct reader r;
	json_t *whole, *c, *recent;
	int slot = -1;

	(void)state;
	assert_non_null(copy);
	pair_open(&p, 5, 0x6001);
	pair_run(&p, 10, 0, 0);
	memcpy(copy, st, sizeof(*st));
	for (int i = 0; i < NTPROF_MAX_COMMS && slot < 0; i++)
		if (copy->comm[i].h.hash == p.hash && copy->comm[i].h.rank == 0)
			slot = i;
	assert_true(slot >= 0);
	/* record 8 of rank 0: its count rewritten, its check not yet */
	copy->comm[slot].ring[7].count = 12345;
	reader_open(&r, copy);
	sample(&r);
	/* the counters are whole: the count is there; the records stop before 8 */
	assert_int_equal(comm_of(&r, p.hash, 0)->seq[AR], 10);
	c = prof_comm_json(&r, p.hash, &whole);
	recent = json_object_get(c, "recent");
	assert_int_equal(json_integer_value(json_object_get(
				 json_array_get(recent, json_array_size(recent) - 1), "n")),
			 7);
	json_decref(whole);
	/* no divergence made up of it */
	assert_int_equal(comm_of(&r, p.hash, 1)->mm_ord, 0);
	/* never whole, with newer ones there: after a second of ticks it is lost, not a wall */
	for (int t = 0; t < 6; t++)
		sample(&r);
	c = prof_comm_json(&r, p.hash, &whole);
	recent = json_object_get(c, "recent");
	assert_int_equal(json_integer_value(json_object_get(
				 json_array_get(recent, json_array_size(recent) - 1), "n")),
			 10);
	assert_int_equal(json_integer_value(json_object_get(c, "lost")), 1);
	json_decref(whole);
	/* the identity torn: the communicator waits too */
	copy->comm[slot].h.rank = 5;
	reader_close(&r);
	reader_open(&r, copy);
	sample(&r);
	assert_null(comm_of(&r, p.hash, 5));
	assert_null(comm_of(&r, p.hash, 0));
	reader_close(&r);
	pair_close(&p);
	free(copy);
}

/* Memory that is not the plugin's, or not of this layout, or a fork's copy: nothing read */
static void test_foreign_and_random_memory(void **state)
{
	size_t len = sizeof(*st);
	unsigned char *buf = malloc(len);
	struct ntprof_state *h = (struct ntprof_state *)buf;
	struct reader r;

	(void)state;
	assert_non_null(buf);
	srandom(42);
	for (int round = 0; round < 40; round++) {
		for (size_t i = 0; i < len; i++)
			buf[i] = (unsigned char)random();
		/* half the rounds: a valid head over random communicators and records */
		if (round & 1) {
			h->magic = NTPROF_MAGIC;
			h->layout = NTPROF_LAYOUT;
			h->comm_size = sizeof(struct ntprof_comm);
			h->max_comms = NTPROF_MAX_COMMS;
			h->ring = NTPROF_RING;
			h->pid = getpid();
		}
		reader_open(&r, buf);
		sample(&r);
		sample(&r);
		assert_int_equal(r.ncomms, 0);
		reader_close(&r);
	}
	/* the real state, copied, with a wrong layout, size or pid (a fork's copy) */
	for (int k = 0; k < 3; k++) {
		struct pair p;

		pair_open(&p, 5, 0x7001 + k);
		pair_run(&p, 3, 0, 0);
		memcpy(buf, st, len);
		if (k == 0)
			h->layout++;
		else if (k == 1)
			h->ring /= 2;
		else
			h->pid = getpid() + 1;
		reader_open(&r, buf);
		sample(&r);
		assert_null(comm_of(&r, p.hash, 0));
		reader_close(&r);
		pair_close(&p);
	}
	/* an address that is not mapped at all */
	reader_open(&r, (void *)(uintptr_t)0x10);
	sample(&r);
	assert_int_equal(r.ncomms, 0);
	reader_close(&r);
	free(buf);
}

/* NCCL passes what it passes: nothing of it may crash the job */
static void test_bad_calls_are_harmless(void **state)
{
	struct descr d;
	void *h = (void *)1, *ctx;
	uint64_t bad = st->bad_handle;

	(void)state;
	memset(&d, 0, sizeof(d));
	assert_int_equal(plug[5]->startEvent(NULL, &h, &d), 0);
	assert_null(h);
	assert_int_equal(plug[5]->startEvent((void *)&d, &h, &d), 0); /* not a context of ours */
	assert_int_equal(plug[5]->startEvent((void *)&d, NULL, &d), 0);
	ctx = ctx_init(5, 0x8001, 0, 1, NULL);
	assert_int_equal(plug[5]->startEvent(ctx, &h, NULL), 0);
	PUT(&d, 0, uint64_t, 1 << 3); /* ProxyOp: never enabled, ignored */
	assert_int_equal(plug[5]->startEvent(ctx, &h, &d), 0);
	PUT(&d, 0, uint64_t, 1ULL << 40); /* unknown */
	assert_int_equal(plug[5]->startEvent(ctx, &h, &d), 0);
	/* unknown strings */
	coll_descr(&d, 5, 0, 0, AR, 1, 0, 7, 0, NULL);
	PUT(&d, 32, const char *, "NoSuchFunc");
	PUT(&d, 72, const char *, NULL);
	assert_int_equal(plug[5]->startEvent(ctx, &h, &d), 0);
	assert_int_equal(plug[5]->stopEvent(&d), 0);
	assert_int_equal(plug[5]->recordEventState(&d, 24, NULL), 0);
	assert_int_equal(plug[5]->stopEvent(NULL), 0);
	assert_int_equal(st->bad_handle, bad + 2);
	assert_int_equal(plug[5]->finalize(NULL), 0);
	assert_int_equal(plug[5]->finalize(&d), 0);
	assert_int_equal(plug[5]->finalize(ctx), 0);
}

/* More communicators than the table holds: counted, and the rest just go without */
static void test_table_full(void **state)
{
	void *ctx[NTPROF_MAX_COMMS + 8];
	uint64_t over = st->overflow;
	int got = 0;

	(void)state;
	for (int i = 0; i < NTPROF_MAX_COMMS + 8; i++) {
		ctx[i] = ctx_init(5, 0x9000 + i, 0, 1, NULL);
		got += ctx[i] != NULL;
		launch(5, ctx[i], 0x9000 + i, 0, 0, AR, 1, 7, NULL);
	}
	assert_int_equal(got, NTPROF_MAX_COMMS);
	assert_int_equal(st->overflow, over + 8);
	for (int i = 0; i < NTPROF_MAX_COMMS + 8; i++)
		assert_int_equal(plug[5]->finalize(ctx[i]), 0);
	/* finalized slots are taken again */
	ctx[0] = ctx_init(5, 0x9999, 0, 1, NULL);
	assert_non_null(ctx[0]);
	plug[5]->finalize(ctx[0]);
}

static void test_find_in_maps(void **state)
{
	const char *maps = "55d0c0000000-55d0c0001000 r--p 00000000 08:01 123 /usr/bin/python3.11\n"
			   "7f0000000000-7f0000004000 r--p 00000000 08:01 77 "
			   "/opt/x/libnccl-profiler-nccltrace.so.bak\n"
			   "7f1000000000-7f1000004000 r--p 00004000 08:01 78 "
			   "/opt/nt/libnccl-profiler-nccltrace.so\n"
			   "7f1000010000-7f1000014000 r--p 00000000 08:01 78 "
			   "/opt/nt/libnccl-profiler-nccltrace.so (deleted)\n";
	char path[256];
	uint64_t base = 0;

	(void)state;
	assert_int_equal(ncclprof_find_in_maps(maps, path, sizeof(path), &base), 0);
	assert_string_equal(path, "/opt/nt/libnccl-profiler-nccltrace.so");
	assert_int_equal(base, 0x7f1000010000ULL);
	assert_int_equal(ncclprof_find_in_maps("7f00-7f01 r-xp 00000000 0:0 1 /lib/libc.so.6\n",
					       path, sizeof(path), &base),
			 -ENOENT);
	assert_int_equal(ncclprof_find_in_maps("", path, sizeof(path), &base), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_each_version),
		cmocka_unit_test(test_api_in_progress),
		cmocka_unit_test(test_mismatch_latched),
		cmocka_unit_test(test_mismatch_own_pattern),
		cmocka_unit_test(test_mismatch_among_lost_records),
		cmocka_unit_test(test_unaligned_not_compared),
		cmocka_unit_test(test_torn_record),
		cmocka_unit_test(test_foreign_and_random_memory),
		cmocka_unit_test(test_bad_calls_are_harmless),
		cmocka_unit_test(test_find_in_maps),
		cmocka_unit_test(test_table_full),
		cmocka_unit_test(test_copy_keeps_its_moment),
	};

	return cmocka_run_group_tests(tests, load, NULL);
}
