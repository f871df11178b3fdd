/* SPDX-License-Identifier: MIT */
/*
 * NCCL's profiler plugin ABI, versions 1 to 7, as nccltrace's plugin (user/plugin/), the fake
 * NCCL's loader (tests/fixtures/fakeprof.c) and the unit tests see it. Our own declarations of
 * what NCCL passes: field names follow NCCL's so that they can be checked against its headers
 * (src/include/plugin/profiler/profiler_v*.h, ext-profiler/example/nccl/ at v2.23.4-1 ... v2.30.7-1).
 *
 * Every offset the plugin reads is pinned below. v1 to v5 were checked against the DWARF of the
 * real NCCL 2.28.9 (CUDA 13.0 toolkit, `gdb -batch -ex 'ptype /o ncclProfilerEventDescr_v5_t'`:
 * 2.28 carries all five for its compatibility shims); v6 (2.29, 2.30) from its header, whose
 * coll, p2p and API members are v5's; v7 (2.31.2) from its header (NVIDIA/nccl
 * src/include/plugin/profiler/profiler_v7.h), which appends a userTag to the API, coll and p2p
 * members and adds the kernelPhase sub-event (not built here: no NCCL 2.31.2 source tag yet).
 *
 *   version  NCCL       init arguments                                  type field
 *   v1       2.23       (ctx, mask)                                     uint8_t
 *   v2       2.24-2.25  (ctx, mask)                                     uint8_t
 *   v3       2.26       (ctx, mask)                                     uint8_t
 *   v4       2.27       (ctx, mask, name, commHash, nNodes, nranks, rank, logfn)  uint8_t
 *   v5       2.28       (ctx, commId, mask, name, nNodes, nranks, rank, logfn)    uint64_t
 *   v6       2.29-2.30  as v5                                           uint64_t
 *   v7       2.31.2-    as v5                                           uint64_t
 */
#ifndef NT_NCCL_PROFILER_ABI_H
#define NT_NCCL_PROFILER_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef int ncclpResult_t; /* ncclResult_t: 0 is ncclSuccess */
typedef void (*ncclpLogger_t)(int level, unsigned long flags, const char *file, int line,
			      const char *fmt, ...);

/* event types (eDescr->type) and activation mask bits (src/include/plugin/nccl_profiler.h) */
enum {
	NCCLP_GROUP = 1 << 0,
	NCCLP_COLL = 1 << 1,
	NCCLP_P2P = 1 << 2,
	NCCLP_PROXY_OP = 1 << 3,
	NCCLP_PROXY_STEP = 1 << 4,
	NCCLP_PROXY_CTRL = 1 << 5,
	NCCLP_KERNEL_CH = 1 << 6,  /* v3+ */
	NCCLP_NET_PLUGIN = 1 << 7, /* v3+ */
	NCCLP_GROUP_API = 1 << 8,  /* v5+ */
	NCCLP_COLL_API = 1 << 9,   /* v5+ */
	NCCLP_P2P_API = 1 << 10,   /* v5+ */
	NCCLP_KERNEL_LAUNCH = 1 << 11,
	NCCLP_CE_COLL = 1 << 12,      /* v6+: copy-engine collectives */
	NCCLP_CE_SYNC = 1 << 13,      /* v6+ */
	NCCLP_CE_BATCH = 1 << 14,     /* v6+ */
	NCCLP_KERNEL_PHASE = 1 << 15, /* v7+: a kernel's barrier phases, GPU timestamps */
};

/*
 * The strings of v2+ descriptors: ncclFuncToString() and ncclDatatypeToString() of NCCL's
 * src/collectives.cc (v2.28.9-1), indexed by ncclFunc_t and ncclDataType_t. NCCL has no case
 * for ncclUint8 there: it passes "Unknown" for it.
 */
static const char *const ncclp_func_names[] = {
	"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce", "SendRecv",
	"Send",	     "Recv",   "AlltoAll",  "Scatter",	     "Gather"};
static const char *const ncclp_dtype_names[] = {"ncclInt8",	"ncclUint8",	  "ncclInt32",
						"ncclUint32",	"ncclInt64",	  "ncclUint64",
						"ncclFloat16",	"ncclFloat32",	  "ncclFloat64",
						"ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
#define NCCLP_NFUNCS  ((int)(sizeof(ncclp_func_names) / sizeof(ncclp_func_names[0])))
#define NCCLP_NDTYPES ((int)(sizeof(ncclp_dtype_names) / sizeof(ncclp_dtype_names[0])))

/* recordEventState states of a GroupApi event (ncclProfilerEventState_t, v5+) */
enum {
	NCCLP_STATE_GROUP_START_API_STOP = 23,
	NCCLP_STATE_GROUP_END_API_START = 24,
};

/* v1 (2.23): func and datatype are ncclFunc_t and ncclDataType_t numbers */
struct ncclp_descr_v1 {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name;
			uint64_t commHash;
			uint64_t seqNumber;
			uint8_t func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			uint8_t datatype;
			uint32_t op;
			size_t trafficBytes;
			uint8_t nMaxChannels, nWarps, algo, proto;
			int isCollnet, isNvls;
		} coll;
		struct {
			const char *name;
			uint64_t commHash;
			uint8_t func;
			void *buff;
			uint8_t datatype;
			size_t count;
			int peer;
		} p2p;
	};
};

/* v2 (2.24, 2.25): strings for func, datatype, algo, proto; op, isCollnet, isNvls dropped */
struct ncclp_descr_v2 {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name;
			uint64_t commHash;
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			size_t trafficBytes;
			uint8_t nMaxChannels, nWarps;
			const char *algo, *proto;
		} coll;
		struct {
			const char *name;
			uint64_t commHash;
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
		} p2p;
	};
};

/* v3 (2.26): v2 without trafficBytes (KernelCh and NetPlugin members are not read) */
struct ncclp_descr_v3 {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name;
			uint64_t commHash;
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nMaxChannels, nWarps;
			const char *algo, *proto;
		} coll;
		struct {
			const char *name;
			uint64_t commHash;
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
		} p2p;
		uint8_t pad[96]; /* the union's size in v3 */
	};
};

/* v4 (2.27): no name or commHash in the descriptors (init has them) */
struct ncclp_descr_v4 {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nChannels, nWarps;
			const char *algo, *proto;
		} coll;
		struct {
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
			uint8_t nChannels;
		} p2p;
	};
};

/* v5 (2.28) and v6 (2.29, 2.30): a 64-bit type, the API events, coll.parentGroup */
struct ncclp_descr_v5 {
	uint64_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			bool graphCaptured;
			int groupDepth;
		} groupApi;
		struct {
			const char *func;
			size_t count;
			const char *datatype;
			int root;
			void *stream;
			bool graphCaptured;
		} collApi;
		struct {
			const char *func;
			size_t count;
			const char *datatype;
			void *stream;
			bool graphCaptured;
		} p2pApi;
		struct {
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nChannels, nWarps;
			const char *algo, *proto;
			void *parentGroup;
		} coll;
		struct {
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
			uint8_t nChannels;
			void *parentGroup;
		} p2p;
	};
};

/*
 * v6 adds the copy-engine collectives (ceColl, ceCollSync, ceCollBatch) to the union; the
 * members before them are v5's, at the same offsets, and the largest new one (ceColl, 88 bytes
 * from offset 24) is as large as coll: a v6 descriptor is laid out as a v5 one. Those events
 * are never enabled here.
 */
#define ncclp_descr_v6 ncclp_descr_v5

/*
 * v7 (2.31.2): v6's members, each call's userTag (0: untagged) appended to collApi, p2pApi,
 * coll and p2p (and ceColl), coll's kernelVariant and isSymColl before it, and kernelPhase
 * (channelId, phaseId 0 initial sync, 1 compute, 2 final sync, phaseName, pTimer). What
 * nccltrace reads is at v5's offsets; the userTags are new.
 */
struct ncclp_descr_v7 {
	uint64_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			bool graphCaptured;
			int groupDepth;
		} groupApi;
		struct {
			const char *func;
			size_t count;
			const char *datatype;
			int root;
			void *stream;
			bool graphCaptured;
			uint64_t userTag;
		} collApi;
		struct {
			const char *func;
			size_t count;
			const char *datatype;
			void *stream;
			bool graphCaptured;
			uint64_t userTag;
		} p2pApi;
		struct {
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nChannels, nWarps;
			const char *algo, *proto;
			void *parentGroup;
			const char *kernelVariant;
			bool isSymColl;
			uint64_t userTag;
		} coll;
		struct {
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
			uint8_t nChannels;
			void *parentGroup;
			uint64_t userTag;
		} p2p;
		struct {
			uint8_t channelId, phaseId;
			const char *phaseName;
			uint64_t pTimer;
		} kernelPhase;
	};
};

typedef ncclpResult_t (*ncclp_start_fn)(void *ctx, void **eHandle, void *eDescr);
typedef ncclpResult_t (*ncclp_stop_fn)(void *eHandle);
typedef ncclpResult_t (*ncclp_record_fn)(void *eHandle, int eState, void *eStateArgs);
typedef ncclpResult_t (*ncclp_finalize_fn)(void *ctx);

/* ncclProfiler_v1_t ... v3: init(void **ctx, int *eActivationMask) */
struct ncclp_plugin_v1 {
	const char *name;
	ncclpResult_t (*init)(void **ctx, int *eActivationMask);
	ncclp_start_fn startEvent;
	ncclp_stop_fn stopEvent;
	ncclp_record_fn recordEventState;
	ncclp_finalize_fn finalize;
};

/* ncclProfiler_v4_t */
struct ncclp_plugin_v4 {
	const char *name;
	ncclpResult_t (*init)(void **ctx, int *eActivationMask, const char *commName,
			      uint64_t commHash, int nNodes, int nranks, int rank,
			      ncclpLogger_t logfn);
	ncclp_start_fn startEvent;
	ncclp_stop_fn stopEvent;
	ncclp_record_fn recordEventState;
	ncclp_finalize_fn finalize;
};

/* ncclProfiler_v5_t, ncclProfiler_v6_t, ncclProfiler_v7_t */
struct ncclp_plugin_v5 {
	const char *name;
	ncclpResult_t (*init)(void **ctx, uint64_t commId, int *eActivationMask,
			      const char *commName, int nNodes, int nranks, int rank,
			      ncclpLogger_t logfn);
	ncclp_start_fn startEvent;
	ncclp_stop_fn stopEvent;
	ncclp_record_fn recordEventState;
	ncclp_finalize_fn finalize;
};

/* The offsets read, as NCCL 2.28.9's DWARF has them (v6: its header, as v5) */
#define NCCLP_OFF(t, m) __builtin_offsetof(struct t, m)
_Static_assert(NCCLP_OFF(ncclp_descr_v1, rank) == 16 && NCCLP_OFF(ncclp_descr_v1, coll) == 24,
	       "v1 head");
_Static_assert(NCCLP_OFF(ncclp_descr_v1, coll.commHash) == 32 &&
		       NCCLP_OFF(ncclp_descr_v1, coll.seqNumber) == 40 &&
		       NCCLP_OFF(ncclp_descr_v1, coll.func) == 48 &&
		       NCCLP_OFF(ncclp_descr_v1, coll.count) == 72 &&
		       NCCLP_OFF(ncclp_descr_v1, coll.root) == 80 &&
		       NCCLP_OFF(ncclp_descr_v1, coll.datatype) == 84 &&
		       NCCLP_OFF(ncclp_descr_v1, coll.op) == 88 &&
		       NCCLP_OFF(ncclp_descr_v1, p2p.commHash) == 32 &&
		       NCCLP_OFF(ncclp_descr_v1, p2p.peer) == 72 &&
		       sizeof(struct ncclp_descr_v1) == 120,
	       "v1 coll/p2p");
_Static_assert(NCCLP_OFF(ncclp_descr_v2, coll.commHash) == 32 &&
		       NCCLP_OFF(ncclp_descr_v2, coll.seqNumber) == 40 &&
		       NCCLP_OFF(ncclp_descr_v2, coll.func) == 48 &&
		       NCCLP_OFF(ncclp_descr_v2, coll.count) == 72 &&
		       NCCLP_OFF(ncclp_descr_v2, coll.root) == 80 &&
		       NCCLP_OFF(ncclp_descr_v2, coll.datatype) == 88 &&
		       NCCLP_OFF(ncclp_descr_v2, p2p.commHash) == 32 &&
		       NCCLP_OFF(ncclp_descr_v2, p2p.peer) == 72 &&
		       sizeof(struct ncclp_descr_v2) == 128,
	       "v2 coll/p2p");
_Static_assert(NCCLP_OFF(ncclp_descr_v3, coll.commHash) == 32 &&
		       NCCLP_OFF(ncclp_descr_v3, coll.seqNumber) == 40 &&
		       NCCLP_OFF(ncclp_descr_v3, coll.func) == 48 &&
		       NCCLP_OFF(ncclp_descr_v3, coll.count) == 72 &&
		       NCCLP_OFF(ncclp_descr_v3, coll.root) == 80 &&
		       NCCLP_OFF(ncclp_descr_v3, coll.datatype) == 88 &&
		       NCCLP_OFF(ncclp_descr_v3, coll.proto) == 112 &&
		       NCCLP_OFF(ncclp_descr_v3, p2p.commHash) == 32 &&
		       NCCLP_OFF(ncclp_descr_v3, p2p.peer) == 72 &&
		       sizeof(struct ncclp_descr_v3) == 120,
	       "v3 coll/p2p");
_Static_assert(NCCLP_OFF(ncclp_descr_v4, coll.seqNumber) == 24 &&
		       NCCLP_OFF(ncclp_descr_v4, coll.func) == 32 &&
		       NCCLP_OFF(ncclp_descr_v4, coll.count) == 56 &&
		       NCCLP_OFF(ncclp_descr_v4, coll.root) == 64 &&
		       NCCLP_OFF(ncclp_descr_v4, coll.datatype) == 72 &&
		       NCCLP_OFF(ncclp_descr_v4, coll.proto) == 96 &&
		       NCCLP_OFF(ncclp_descr_v4, p2p.peer) == 56 &&
		       sizeof(struct ncclp_descr_v4) == 104,
	       "v4 coll/p2p");
_Static_assert(NCCLP_OFF(ncclp_descr_v5, collApi.func) == 24 &&
		       NCCLP_OFF(ncclp_descr_v5, collApi.count) == 32 &&
		       NCCLP_OFF(ncclp_descr_v5, collApi.datatype) == 40 &&
		       NCCLP_OFF(ncclp_descr_v5, collApi.root) == 48 &&
		       NCCLP_OFF(ncclp_descr_v5, collApi.graphCaptured) == 64 &&
		       NCCLP_OFF(ncclp_descr_v5, p2pApi.graphCaptured) == 56 &&
		       NCCLP_OFF(ncclp_descr_v5, groupApi.graphCaptured) == 24 &&
		       NCCLP_OFF(ncclp_descr_v5, coll.seqNumber) == 24 &&
		       NCCLP_OFF(ncclp_descr_v5, coll.func) == 32 &&
		       NCCLP_OFF(ncclp_descr_v5, coll.count) == 56 &&
		       NCCLP_OFF(ncclp_descr_v5, coll.root) == 64 &&
		       NCCLP_OFF(ncclp_descr_v5, coll.datatype) == 72 &&
		       NCCLP_OFF(ncclp_descr_v5, coll.parentGroup) == 104 &&
		       NCCLP_OFF(ncclp_descr_v5, p2p.peer) == 56 &&
		       sizeof(struct ncclp_descr_v5) == 112,
	       "v5 api/coll/p2p");
/* v7: v5's offsets where read, the userTags after them (from profiler_v7.h's layout) */
_Static_assert(NCCLP_OFF(ncclp_descr_v7, collApi.func) == 24 &&
		       NCCLP_OFF(ncclp_descr_v7, collApi.graphCaptured) == 64 &&
		       NCCLP_OFF(ncclp_descr_v7, collApi.userTag) == 72 &&
		       NCCLP_OFF(ncclp_descr_v7, p2pApi.userTag) == 64 &&
		       NCCLP_OFF(ncclp_descr_v7, coll.seqNumber) == 24 &&
		       NCCLP_OFF(ncclp_descr_v7, coll.func) == 32 &&
		       NCCLP_OFF(ncclp_descr_v7, coll.count) == 56 &&
		       NCCLP_OFF(ncclp_descr_v7, coll.root) == 64 &&
		       NCCLP_OFF(ncclp_descr_v7, coll.datatype) == 72 &&
		       NCCLP_OFF(ncclp_descr_v7, coll.parentGroup) == 104 &&
		       NCCLP_OFF(ncclp_descr_v7, coll.kernelVariant) == 112 &&
		       NCCLP_OFF(ncclp_descr_v7, coll.isSymColl) == 120 &&
		       NCCLP_OFF(ncclp_descr_v7, coll.userTag) == 128 &&
		       NCCLP_OFF(ncclp_descr_v7, p2p.peer) == 56 &&
		       NCCLP_OFF(ncclp_descr_v7, p2p.userTag) == 72 &&
		       NCCLP_OFF(ncclp_descr_v7, kernelPhase.pTimer) == 40 &&
		       sizeof(struct ncclp_descr_v7) == 136,
	       "v7 api/coll/p2p");
_Static_assert(sizeof(struct ncclp_plugin_v1) == 48 && sizeof(struct ncclp_plugin_v4) == 48 &&
		       sizeof(struct ncclp_plugin_v5) == 48 &&
		       NCCLP_OFF(ncclp_plugin_v5, finalize) == 40,
	       "ncclProfiler_vN_t");

#endif /* NT_NCCL_PROFILER_ABI_H */
