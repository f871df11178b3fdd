// SPDX-License-Identifier: MIT
/*
 * nccltrace's NCCL profiler plugin (build/libnccl-profiler-nccltrace.so), loaded into the job
 * with NCCL_PROFILER_PLUGIN by `nccltrace run`. It works on every NCCL build from 2.23 on,
 * stripped ones included: per communicator it counts the collectives launched per function (at
 * the Coll event, where NCCL counts comm->seqNumber), keeps the last NTPROF_RING of them with
 * their arguments, and on v5+ the API calls and whether one is in progress. All of it lives in
 * its own memory (include/ntprof.h), which the tracer copies each tick.
 *
 * Only cheap events are enabled: Coll and P2p, and on v5+ GroupApi, CollApi and P2pApi.
 * They add no CUDA host callback and no proxy op (NCCL v2.28.9-1):
 *  - the profiler's proxy op is added only for KernelCh: addProfilerProxyOpIfNeeded() in
 *    src/enqueue.cc goes through ncclProxySaveOp()'s ncclPatternProfiler case in src/proxy.cc,
 *    which asks ncclProfilerNeedsProxy() in src/plugin/profiler.cc: eActivationMask &
 *    ncclProfileKernelCh;
 *  - the host callback (cudaLaunchHostFunc in ncclLaunchPrepare(), src/enqueue.cc) is added
 *    only for plans with proxy ops (plan->hasProxyOps), which the profiler does not add;
 *    otherwise hostStreamPlanTask(), where Group and Coll events start and stop, runs on the
 *    caller's thread after the kernel launch (ncclLaunchKernelAfter_NoCuda);
 *  - devWork.profilerEnabled (a kernel-side timestamp per channel) is KernelCh only;
 *  - the API events start and stop inside collTaskAppend()/p2pTaskAppend() (from
 *    ncclEnqueueCheck) and ncclGroupEndInternal() (src/group.cc): calls into this file.
 * ProxyOp, ProxyStep, ProxyCtrl, KernelCh and NetPlugin fire per network step: never enabled.
 *
 * Per event: no lock, no syscall (clock_gettime is the vDSO's), no allocation. The job must never
 * be harmed: any descriptor, context or handle that is not what it should be is counted and
 * ignored, every call returns ncclSuccess (2.23-2.27 drop the plugin when init fails), and
 * nothing is printed (one INFO line through NCCL's own logger, where init gives one).
 */
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "nccl_profiler_abi.h"
#include "ntprof.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT struct ntprof_state nccltrace_profiler_state;
_Static_assert(sizeof(NTPROF_SYMBOL) == sizeof("nccltrace_profiler_state"), "NTPROF_SYMBOL");
#define ST nccltrace_profiler_state

/* The events asked for (eActivationMask): v1-v4, and v5+ with the API events */
#define MASK_V1 (NCCLP_COLL | NCCLP_P2P)
#define MASK_V5 (MASK_V1 | NCCLP_GROUP_API | NCCLP_COLL_API | NCCLP_P2P_API)

/*
 * Handles given to NCCL: addresses in this table, one per communicator and kind, so a stop or
 * a state record finds its communicator without a lookup, and a Coll event tells from its
 * parent (the CollApi handle, v5+) whether the call was graph-captured. NCCL keeps them in
 * persistent plans for ever: they are never freed.
 */
enum hkind { H_GROUP_API, H_COLL_API, H_COLL_API_GRAPH, H_P2P_API, H_NKINDS };
static char handles[NTPROF_MAX_COMMS][H_NKINDS];

/* a slot is FREE, taken, or reusable after finalize (claimed with a CAS: inits may race) */
enum { SLOT_FREE, SLOT_TAKEN, SLOT_DONE };
static int slot_state[NTPROF_MAX_COMMS];
static int logged;

__attribute__((constructor)) static void ntprof_load(void)
{
	ST.layout = NTPROF_LAYOUT;
	ST.comm_size = sizeof(struct ntprof_comm);
	ST.max_comms = NTPROF_MAX_COMMS;
	ST.ring = NTPROF_RING;
	ST.pid = getpid();
	/* last: a reader that sees the magic sees the rest */
	__atomic_store_n(&ST.magic, NTPROF_MAGIC, __ATOMIC_RELEASE);
}

/*
 * The tracer's clock (CLOCK_MONOTONIC), at the kernel tick's resolution (1-10 ms): the vDSO
 * reads it in 5 ns where the precise one takes 25-30 ns here, and every time kept is compared
 * with thresholds of seconds.
 */
static uint64_t now_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * A communicator's counters have one writer each: its records and counts the launching thread
 * (holding c->h.writing), its API counts the thread that calls it (NCCL: one at a time per
 * communicator). So a plain load and store, no locked instruction; each word is whole.
 */
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define BUMP(p)	    STORE((p), __atomic_load_n((p), __ATOMIC_RELAXED) + 1)
/* process-wide counters, written from any thread */
#define ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_RELAXED)

/* The communicator behind a context NCCL hands back: ours, or NULL */
static struct ntprof_comm *ctx_comm(void *ctx)
{
	uintptr_t p = (uintptr_t)ctx, b = (uintptr_t)&ST.comm[0];

	if (p < b || p >= b + sizeof(ST.comm) || (p - b) % sizeof(ST.comm[0]))
		return NULL;
	return ctx;
}

static int comm_slot(const struct ntprof_comm *c)
{
	return (int)(c - ST.comm);
}

/* A handle of ours: its communicator and kind; NULL if it is not one */
static struct ntprof_comm *handle_comm(void *h, enum hkind *kind)
{
	uintptr_t p = (uintptr_t)h, b = (uintptr_t)&handles[0][0];

	if (p < b || p >= b + sizeof(handles))
		return NULL;
	*kind = (enum hkind)((p - b) % H_NKINDS);
	return &ST.comm[(p - b) / H_NKINDS];
}

static void *handle(const struct ntprof_comm *c, enum hkind k)
{
	return &handles[comm_slot(c)][k];
}

/* ---------------------------------------------------------------- names to numbers */

/*
 * NCCL passes the same string literals every time: a small direct-mapped cache of pointer ->
 * value, each entry one word (pointer << 8 | value) so that threads never see half an entry.
 */
#define NCACHE 32
static uint64_t name_cache[2][NCACHE];

static int name_value(int which, const char *s, const char *const *names, int n)
{
	uint64_t key = (uint64_t)(uintptr_t)s, *slot, e;
	int v = 0xff;

	if (!s || key >> 56)
		return 0xff;
	slot = &name_cache[which][(key >> 3) % NCACHE];
	e = __atomic_load_n(slot, __ATOMIC_RELAXED);
	if (e && e >> 8 == key)
		return (int)(e & 0xff);
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i])) {
			v = i;
			break;
		}
	__atomic_store_n(slot, key << 8 | (uint64_t)v, __ATOMIC_RELAXED);
	return v;
}

static int func_value(const char *s)
{
	return name_value(0, s, ncclp_func_names, NCCLP_NFUNCS);
}

static int dtype_value(const char *s)
{
	return name_value(1, s, ncclp_dtype_names, NCCLP_NDTYPES);
}

/* ---------------------------------------------------------------- events */

/* One descriptor, whatever its version */
struct pev {
	uint64_t type;
	void *parent;
	int rank;
	bool has_hash; /* v1-v3: the descriptor names its communicator */
	uint64_t hash;
	uint64_t seq;
	uint64_t count;
	int func, dtype, op, root;
	bool graph;	   /* API events (v5+): graph-captured */
	uint64_t user_tag; /* v7: the call's userTag (Coll) */
};

/* v1-v3: the identity comes with the first event (init had none) */
static void late_identity(struct ntprof_comm *c, const struct pev *e)
{
	if (!(c->h.flags & NTPROF_CF_ID_LATE) || !e->has_hash || c->h.hash)
		return;
	STORE(&c->h.id_check, 0);
	STORE(&c->h.hash, e->hash);
	STORE(&c->h.rank, e->rank);
	STORE(&c->h.id_check, ntprof_id_check(&c->h));
}

static void coll_start(struct ntprof_comm *c, const struct pev *e)
{
	struct ntprof_rec r;
	struct ntprof_rec *slot;
	uint64_t ord;
	bool chained;

	/*
	 * A graph-captured launch (v5+: its CollApi said so): NCCL leaves it out of seqNumber
	 * (ncclProfilerStartTaskEvents, src/plugin/profiler.cc) because its events may run on
	 * some ranks only (at replay, through a host callback): so do the counts here
	 */
	if (e->parent && e->parent == handle(c, H_COLL_API_GRAPH)) {
		BUMP(&c->h.graph);
		return;
	}
	/* one writer per communicator: NCCL launches a communicator's plans in order */
	chained = !__atomic_exchange_n(&c->h.writing, 1, __ATOMIC_ACQUIRE);
	if (chained)
		late_identity(c, e);
	if (chained && c->h.api <= 4 && e->func < NTPROF_NFUNC) {
		/* v3/v4 do not say what was captured: a seqNumber that did not advance does */
		if (c->h.last_seq[e->func] && e->seq < c->h.last_seq[e->func])
			__atomic_or_fetch(&c->h.flags, NTPROF_CF_UNALIGNED, __ATOMIC_RELAXED);
		c->h.last_seq[e->func] = e->seq + 1;
	}
	/* unchained (a second writer): the ordinal still one each, so the locked add */
	ord = chained ? c->h.ncoll + 1 : ADD(&c->h.ncoll, 1);
	if (chained)
		STORE(&c->h.ncoll, ord);
	memset(&r, 0, sizeof(r));
	r.ord = ord;
	r.ts_ns = now_ns();
	r.count = e->count;
	r.seq = e->seq;
	r.root = e->root;
	r.func = (uint8_t)e->func;
	r.dtype = (uint8_t)e->dtype;
	r.op = (uint8_t)e->op;
	r.user_tag = e->user_tag;
	if (chained) {
		r.sig = ntprof_mix(c->h.last_sig, ntprof_rec_sig(&r));
		c->h.last_sig = r.sig;
	} else {
		r.flags = NTPROF_RF_UNCHAINED;
		__atomic_or_fetch(&c->h.flags, NTPROF_CF_UNCHAINED, __ATOMIC_RELAXED);
	}
	r.check = ntprof_rec_check(&r, c->h.gen);
	slot = &c->ring[(ord - 1) % NTPROF_RING];
	/* word by word; the check says whether a copy caught all of them */
	STORE(&slot->ord, r.ord);
	STORE(&slot->ts_ns, r.ts_ns);
	STORE(&slot->count, r.count);
	STORE(&slot->seq, r.seq);
	STORE(&slot->sig, r.sig);
	STORE(&slot->root, r.root);
	STORE(&slot->func, r.func);
	STORE(&slot->dtype, r.dtype);
	STORE(&slot->op, r.op);
	STORE(&slot->flags, r.flags);
	STORE(&slot->user_tag, r.user_tag);
	__atomic_store_n(&slot->check, r.check, __ATOMIC_RELEASE);
	if (e->func >= 0 && e->func < NTPROF_NFUNC) {
		if (chained)
			BUMP(&c->h.fcount[e->func]);
		else
			ADD(&c->h.fcount[e->func], 1);
	}
	STORE(&c->h.last_launch_ns, r.ts_ns);
	if (chained)
		__atomic_store_n(&c->h.writing, 0, __ATOMIC_RELEASE);
}

static void start(void *ctx, void **eHandle, const struct pev *e)
{
	struct ntprof_comm *c = ctx_comm(ctx);

	if (!c || __atomic_load_n(&c->h.state, __ATOMIC_RELAXED) != NTPROF_ACTIVE)
		return;
	switch (e->type) {
	case NCCLP_COLL:
		coll_start(c, e);
		break;
	case NCCLP_P2P:
		if (!__atomic_exchange_n(&c->h.writing, 1, __ATOMIC_ACQUIRE)) {
			late_identity(c, e);
			__atomic_store_n(&c->h.writing, 0, __ATOMIC_RELEASE);
		}
		ADD(&c->h.np2p, 1);
		STORE(&c->h.last_launch_ns, now_ns());
		break;
	case NCCLP_COLL_API:
		BUMP(&c->h.coll_api);
		*eHandle = handle(c, e->graph ? H_COLL_API_GRAPH : H_COLL_API);
		break;
	case NCCLP_P2P_API:
		BUMP(&c->h.p2p_api);
		*eHandle = handle(c, H_P2P_API);
		break;
	case NCCLP_GROUP_API:
		/* NCCL starts it once per outermost group (ncclProfilerStartGroupApiEvent) */
		BUMP(&c->h.group_api);
		STORE(&c->h.group_end_ns, 0);
		STORE(&c->h.group_start_ns, now_ns());
		*eHandle = handle(c, H_GROUP_API);
		break;
	default:
		/* Group (started for Coll too), KernelLaunch...: not needed */
		break;
	}
}

/* The decoders: each version's descriptor into a struct pev */
static bool decode_head(const void *d, uint64_t type, void *parent, int rank, struct pev *e)
{
	if (!d)
		return false;
	memset(e, 0, sizeof(*e));
	e->type = type;
	e->parent = parent;
	e->rank = rank;
	e->func = e->dtype = e->op = 0xff;
	return true;
}

static ncclpResult_t start_v1(void *ctx, void **eHandle, void *descr)
{
	const struct ncclp_descr_v1 *d = descr;
	struct pev e;

	if (eHandle)
		*eHandle = NULL;
	if (!eHandle ||
	    !decode_head(d, d ? d->type : 0, d ? d->parentObj : NULL, d ? d->rank : -1, &e))
		return 0;
	if (e.type == NCCLP_COLL) {
		e.has_hash = true;
		e.hash = d->coll.commHash;
		e.seq = d->coll.seqNumber;
		e.func = d->coll.func;
		e.count = d->coll.count;
		e.root = d->coll.root;
		e.dtype = d->coll.datatype;
		/* a ncclRedOpCreatePreMulSum op is numbered per rank: only the built-in ones */
		e.op = d->coll.op < 5 ? (int)d->coll.op : 0xfe;
	} else if (e.type == NCCLP_P2P) {
		e.has_hash = true;
		e.hash = d->p2p.commHash;
	}
	start(ctx, eHandle, &e);
	return 0;
}

/* v2 and v3 differ only after the members read here */
#define DECODE_V2(d, e)                                                                            \
	do {                                                                                       \
		if ((e).type == NCCLP_COLL) {                                                      \
			(e).has_hash = true;                                                       \
			(e).hash = (d)->coll.commHash;                                             \
			(e).seq = (d)->coll.seqNumber;                                             \
			(e).func = func_value((d)->coll.func);                                     \
			(e).count = (d)->coll.count;                                               \
			(e).root = (d)->coll.root;                                                 \
			(e).dtype = dtype_value((d)->coll.datatype);                               \
		} else if ((e).type == NCCLP_P2P) {                                                \
			(e).has_hash = true;                                                       \
			(e).hash = (d)->p2p.commHash;                                              \
		}                                                                                  \
	} while (0)

static ncclpResult_t start_v2(void *ctx, void **eHandle, void *descr)
{
	const struct ncclp_descr_v2 *d = descr;
	struct pev e;

	if (eHandle)
		*eHandle = NULL;
	if (!eHandle ||
	    !decode_head(d, d ? d->type : 0, d ? d->parentObj : NULL, d ? d->rank : -1, &e))
		return 0;
	DECODE_V2(d, e);
	start(ctx, eHandle, &e);
	return 0;
}

static ncclpResult_t start_v3(void *ctx, void **eHandle, void *descr)
{
	const struct ncclp_descr_v3 *d = descr;
	struct pev e;

	if (eHandle)
		*eHandle = NULL;
	if (!eHandle ||
	    !decode_head(d, d ? d->type : 0, d ? d->parentObj : NULL, d ? d->rank : -1, &e))
		return 0;
	DECODE_V2(d, e);
	start(ctx, eHandle, &e);
	return 0;
}

static ncclpResult_t start_v4(void *ctx, void **eHandle, void *descr)
{
	const struct ncclp_descr_v4 *d = descr;
	struct pev e;

	if (eHandle)
		*eHandle = NULL;
	if (!eHandle ||
	    !decode_head(d, d ? d->type : 0, d ? d->parentObj : NULL, d ? d->rank : -1, &e))
		return 0;
	if (e.type == NCCLP_COLL) {
		e.seq = d->coll.seqNumber;
		e.func = func_value(d->coll.func);
		e.count = d->coll.count;
		e.root = d->coll.root;
		e.dtype = dtype_value(d->coll.datatype);
	}
	start(ctx, eHandle, &e);
	return 0;
}

/*
 * v5, v6 and v7, whose descriptors are laid out as v5's where read; v7 adds the call's
 * userTag (v7: the KernelPhase events, and KernelCh their parent, stay off: an event per
 * channel and phase of every collective, read back from the GPU by NCCL's proxy thread, to tell
 * a kernel that never started or never finished; not asked for until its cost on a real 2.31
 * is measured)
 */
static ncclpResult_t start_v5_or_v7(void *ctx, void **eHandle, void *descr, bool v7)
{
	const struct ncclp_descr_v5 *d = descr;
	struct pev e;

	if (eHandle)
		*eHandle = NULL;
	if (!eHandle ||
	    !decode_head(d, d ? d->type : 0, d ? d->parentObj : NULL, d ? d->rank : -1, &e))
		return 0;
	if (e.type == NCCLP_COLL) {
		e.seq = d->coll.seqNumber;
		e.func = func_value(d->coll.func);
		e.count = d->coll.count;
		e.root = d->coll.root;
		e.dtype = dtype_value(d->coll.datatype);
		if (v7)
			e.user_tag = ((const struct ncclp_descr_v7 *)descr)->coll.userTag;
	} else if (e.type == NCCLP_COLL_API) {
		e.graph = d->collApi.graphCaptured;
	}
	start(ctx, eHandle, &e);
	return 0;
}

static ncclpResult_t start_v5(void *ctx, void **eHandle, void *descr)
{
	return start_v5_or_v7(ctx, eHandle, descr, false);
}

static ncclpResult_t start_v7(void *ctx, void **eHandle, void *descr)
{
	return start_v5_or_v7(ctx, eHandle, descr, true);
}

static ncclpResult_t stop_event(void *eHandle)
{
	enum hkind k;
	struct ntprof_comm *c = eHandle ? handle_comm(eHandle, &k) : NULL;

	if (!eHandle)
		return 0;
	if (!c) {
		ADD(&ST.bad_handle, 1);
		return 0;
	}
	/* ncclGroupEndInternal's exit (src/group.cc): the group is launched, or failed */
	if (k == H_GROUP_API) {
		STORE(&c->h.group_start_ns, 0);
		STORE(&c->h.group_end_ns, 0);
	}
	return 0;
}

static ncclpResult_t record_state(void *eHandle, int eState, void *args)
{
	enum hkind k;
	struct ntprof_comm *c = eHandle ? handle_comm(eHandle, &k) : NULL;

	(void)args;
	if (!eHandle)
		return 0;
	if (!c) {
		ADD(&ST.bad_handle, 1);
		return 0;
	}
	/* ncclGroupEndInternal's entry: what follows is groupLaunch (connects, then launches) */
	if (k == H_GROUP_API && eState == NCCLP_STATE_GROUP_END_API_START) {
		STORE(&c->h.launched_at_end, __atomic_load_n(&c->h.ncoll, __ATOMIC_RELAXED) +
						     __atomic_load_n(&c->h.np2p, __ATOMIC_RELAXED));
		STORE(&c->h.group_end_ns, now_ns());
	}
	return 0;
}

/* ---------------------------------------------------------------- init, finalize */

static struct ntprof_comm *take_slot(void)
{
	/* a free slot, else one whose communicator was destroyed (its counts are old news) */
	for (int pass = SLOT_FREE; pass <= SLOT_DONE; pass += SLOT_DONE - SLOT_FREE)
		for (int i = 0; i < NTPROF_MAX_COMMS; i++) {
			int want = pass;

			if (__atomic_compare_exchange_n(&slot_state[i], &want, SLOT_TAKEN, false,
							__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
				if (pass == SLOT_FREE)
					ADD(&ST.ncomms, 1);
				return &ST.comm[i];
			}
		}
	ADD(&ST.overflow, 1);
	return NULL;
}

static void init_comm(void **ctx, int *mask, int api, uint64_t hash, const char *name, int nnodes,
		      int nranks, int rank, ncclpLogger_t logfn)
{
	struct ntprof_comm *c;
	int m = api >= 5 ? MASK_V5 : MASK_V1;

	if (ctx)
		*ctx = NULL;
	/* the mask is one process-wide int: set it even when this communicator has no slot */
	if (mask)
		__atomic_store_n(mask, m, __ATOMIC_RELAXED);
	if (!ctx || !(c = take_slot()))
		return;
	STORE(&c->h.id_check, 0);
	STORE(&c->h.state, NTPROF_FREE);
	/* a reused slot: its old counters and records belong to the old generation */
	memset((char *)&c->h + NTPROF_COUNTERS_OFF, 0, sizeof(c->h) - NTPROF_COUNTERS_OFF);
	c->h.gen++;
	c->h.hash = hash;
	c->h.rank = rank;
	c->h.nranks = nranks;
	c->h.nnodes = nnodes;
	c->h.api = (uint32_t)api;
	memset(c->h.name, 0, sizeof(c->h.name));
	if (name)
		strncpy(c->h.name, name, sizeof(c->h.name) - 1);
	c->h.init_ns = now_ns();
	if (api <= 3)
		c->h.flags = NTPROF_CF_ID_LATE;
	__atomic_store_n(&c->h.state, NTPROF_ACTIVE, __ATOMIC_RELEASE);
	__atomic_store_n(&c->h.id_check, ntprof_id_check(&c->h), __ATOMIC_RELEASE);
	if ((uint32_t)api > ST.api_max)
		STORE(&ST.api_max, (uint32_t)api);
	*ctx = c;
	if (logfn && !__atomic_exchange_n(&logged, 1, __ATOMIC_RELAXED))
		logfn(3 /* NCCL_LOG_INFO */, 0x1 /* NCCL_INIT */, __FILE__, __LINE__,
		      "PROFILER/Plugin: nccltrace v%d: Coll, P2p%s events for nccltrace (no proxy "
		      "or "
		      "kernel events)",
		      api, api >= 5 ? " and API" : "");
}

/* v1-v3: init runs in commAlloc, before bootstrap: nothing is known of the communicator yet */
static ncclpResult_t init_v1(void **ctx, int *mask)
{
	init_comm(ctx, mask, 1, 0, NULL, -1, -1, -1, NULL);
	return 0;
}

static ncclpResult_t init_v2(void **ctx, int *mask)
{
	init_comm(ctx, mask, 2, 0, NULL, -1, -1, -1, NULL);
	return 0;
}

static ncclpResult_t init_v3(void **ctx, int *mask)
{
	init_comm(ctx, mask, 3, 0, NULL, -1, -1, -1, NULL);
	return 0;
}

static ncclpResult_t init_v4(void **ctx, int *mask, const char *name, uint64_t hash, int nnodes,
			     int nranks, int rank, ncclpLogger_t logfn)
{
	init_comm(ctx, mask, 4, hash, name, nnodes, nranks, rank, logfn);
	return 0;
}

static ncclpResult_t init_v5(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
			     int nranks, int rank, ncclpLogger_t logfn)
{
	init_comm(ctx, mask, 5, id, name, nnodes, nranks, rank, logfn);
	return 0;
}

static ncclpResult_t init_v6(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
			     int nranks, int rank, ncclpLogger_t logfn)
{
	init_comm(ctx, mask, 6, id, name, nnodes, nranks, rank, logfn);
	return 0;
}

static ncclpResult_t init_v7(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
			     int nranks, int rank, ncclpLogger_t logfn)
{
	init_comm(ctx, mask, 7, id, name, nnodes, nranks, rank, logfn);
	return 0;
}

static ncclpResult_t finalize(void *ctx)
{
	struct ntprof_comm *c = ctx_comm(ctx);

	if (!c)
		return 0;
	STORE(&c->h.finalize_ns, now_ns());
	__atomic_store_n(&c->h.state, NTPROF_FINALIZED, __ATOMIC_RELEASE);
	__atomic_store_n(&slot_state[comm_slot(c)], SLOT_DONE, __ATOMIC_RELEASE);
	return 0;
}

/* NCCL dlsyms the newest it knows first (src/plugin/profiler.cc) */
EXPORT const struct ncclp_plugin_v1 ncclProfiler_v1 = {"nccltrace", init_v1,	  start_v1,
						       stop_event,  record_state, finalize};
EXPORT const struct ncclp_plugin_v1 ncclProfiler_v2 = {"nccltrace", init_v2,	  start_v2,
						       stop_event,  record_state, finalize};
EXPORT const struct ncclp_plugin_v1 ncclProfiler_v3 = {"nccltrace", init_v3,	  start_v3,
						       stop_event,  record_state, finalize};
EXPORT const struct ncclp_plugin_v4 ncclProfiler_v4 = {"nccltrace", init_v4,	  start_v4,
						       stop_event,  record_state, finalize};
EXPORT const struct ncclp_plugin_v5 ncclProfiler_v5 = {"nccltrace", init_v5,	  start_v5,
						       stop_event,  record_state, finalize};
EXPORT const struct ncclp_plugin_v5 ncclProfiler_v6 = {"nccltrace", init_v6,	  start_v5,
						       stop_event,  record_state, finalize};
EXPORT const struct ncclp_plugin_v5 ncclProfiler_v7 = {"nccltrace", init_v7,	  start_v7,
						       stop_event,  record_state, finalize};
