// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "nccl/dwoff.h"
#include "util/elfsym.h"
#include "nccl/nccllib.h"
#include "nccl/verbsoffs.h"

/*
 * Mangled names by NCCL version, compiled from each version's signature (NVIDIA/nccl at the
 * v2.18.6-1 ... v2.30.7-1 tags; reference/nccl-versions.md §1): tests/unit/nccl_sigs.cc declares
 * the same signatures and test_nccllib checks that g++ mangles them to exactly these names.
 * 2.28.9's were checked against .symtab of the real libnccl.so.2.
 */
#define V(maj, min, pat) ((maj)*10000 + (min)*100 + (pat))
#define ANY		 0, 99999
#define ALL(s)		 ((const struct nccl_sym_alt[]){{s, ANY, -1}, {NULL}})

static const struct nccl_sym_alt sym_bootstrap_init[] = {
	{"_Z13bootstrapInitiPvP8ncclCommS1_", V(2, 29, 0), V(2, 99, 99), 2},
	{"_Z13bootstrapInitiPvP8ncclComm", V(2, 23, 0), V(2, 28, 99), 2},
	{"_Z13bootstrapInitP19ncclBootstrapHandleP8ncclComm", V(2, 18, 0), V(2, 22, 99), 1},
	{NULL},
};
static const struct nccl_sym_alt sym_bootstrap_split[] = {
	{"_Z14bootstrapSplitmP8ncclCommS0_iiPi", V(2, 23, 0), V(2, 99, 99), 1},
	{"_Z14bootstrapSplitP19ncclBootstrapHandleP8ncclCommS2_iiPi", V(2, 18, 0), V(2, 22, 99), 1},
	{NULL},
};
static const struct nccl_sym_alt sym_init_transports[] = {
	{"_ZL18initTransportsRankP8ncclCommS0_Pm", V(2, 22, 0), V(2, 99, 99), -1},
	{"_ZL18initTransportsRankP8ncclCommS0_", V(2, 18, 0), V(2, 21, 99), -1},
	{NULL},
};
static const struct nccl_sym_alt sym_topo_get[] = {
	{"_Z17ncclTopoGetSystemP8ncclCommPP14ncclTopoSystemPKc", V(2, 24, 0), V(2, 99, 99), -1},
	{"_Z17ncclTopoGetSystemP8ncclCommPP14ncclTopoSystem", V(2, 18, 0), V(2, 23, 99), -1},
	{NULL},
};
static const struct nccl_sym_alt sym_p2p_setup[] = {
	{"_Z21ncclTransportP2pSetupP8ncclCommP13ncclTopoGraphi", V(2, 24, 0), V(2, 99, 99), -1},
	{"_Z21ncclTransportP2pSetupP8ncclCommP13ncclTopoGraphiPi", V(2, 18, 0), V(2, 23, 99), -1},
	{NULL},
};
static const struct nccl_sym_alt sym_socket_accept[] = {
	{"_Z16ncclSocketAcceptP10ncclSocketS0_b", V(2, 30, 0), V(2, 99, 99), -1},
	{"_Z16ncclSocketAcceptP10ncclSocketS0_", V(2, 18, 0), V(2, 29, 99), -1},
	{NULL},
};
/* arg: the index of sendComm** (its handle is the argument before it) */
static const struct nccl_sym_alt sym_net_connect[] = {
	{"_Z20ncclNetSocketConnectPviS_PS_PP24ncclNetDeviceHandle_v7_t", V(2, 28, 0), V(2, 99, 99),
	 3},
	{"_Z20ncclNetSocketConnectiP23ncclNetCommConfig_v10_tPvPS1_PP24ncclNetDeviceHandle_v7_t",
	 V(2, 26, 0), V(2, 27, 99), 3},
	{"_Z20ncclNetSocketConnectiPvPS_PP24ncclNetDeviceHandle_v7_t", V(2, 19, 0), V(2, 25, 99),
	 2},
	{"_Z20ncclNetSocketConnectiPvPS_", V(2, 18, 0), V(2, 18, 99), 2},
	{NULL},
};
static const struct nccl_sym_alt sym_net_accept[] = {
	{"_Z19ncclNetSocketAcceptPvPS_PP24ncclNetDeviceHandle_v7_t", V(2, 19, 0), V(2, 99, 99), -1},
	{"_Z19ncclNetSocketAcceptPvPS_", V(2, 18, 0), V(2, 18, 99), -1},
	{NULL},
};
static const struct nccl_sym_alt sym_ib_connect[] = {
	{"_Z13ncclIbConnectPviS_PS_PP24ncclNetDeviceHandle_v7_t", V(2, 28, 0), V(2, 99, 99), 3},
	{"_Z13ncclIbConnectiP23ncclNetCommConfig_v10_tPvPS1_PP24ncclNetDeviceHandle_v7_t",
	 V(2, 26, 0), V(2, 27, 99), 3},
	{"_Z13ncclIbConnectiPvPS_PP24ncclNetDeviceHandle_v7_t", V(2, 19, 0), V(2, 25, 99), 2},
	{"_Z13ncclIbConnectiPvPS_", V(2, 18, 0), V(2, 18, 99), 2},
	{NULL},
};
static const struct nccl_sym_alt sym_ib_accept[] = {
	{"_Z12ncclIbAcceptPvPS_PP24ncclNetDeviceHandle_v7_t", V(2, 19, 0), V(2, 99, 99), -1},
	{"_Z12ncclIbAcceptPvPS_", V(2, 18, 0), V(2, 18, 99), -1},
	{NULL},
};
/*
 * Every setting NCCL reads: through ncclEnvPluginGetEnv from 2.28.7 (ncclLoadParam calls it
 * directly); before, ncclGetEnv (2.19+), which ncclLoadParam may inline: integer parameters can
 * be missed there, and 2.18 calls getenv() directly
 */
static const struct nccl_sym_alt sym_env[] = {
	{"_Z19ncclEnvPluginGetEnvPKc", V(2, 28, 7), V(2, 99, 99), -1},
	{"_Z10ncclGetEnvPKc", V(2, 19, 0), V(2, 28, 6), -1},
	{NULL},
};
/* WARN: ncclDebugLog until 2.29, ncclDebugLogInternal from 2.30 (level first in both) */
static const struct nccl_sym_alt sym_debug_log[] = {
	{"_Z20ncclDebugLogInternal17ncclDebugLogLevelmPKcS1_iS1_z", V(2, 30, 0), V(2, 99, 99), -1},
	{"_Z12ncclDebugLog17ncclDebugLogLevelmPKciS1_z", V(2, 18, 0), V(2, 29, 99), -1},
	{NULL},
};
static const struct nccl_sym_alt sym_ib_async[] = {
	{"_Z21ncclIbAsyncThreadMainPv", V(2, 29, 0), V(2, 99, 99), -1},
	{"_ZL21ncclIbAsyncThreadMainPv", V(2, 18, 0), V(2, 28, 99), -1},
	{NULL},
};
/* ring and tree connect are 2.22's lazy connect: before, rings connect inside init */
static const struct nccl_sym_alt sym_ring_connect[] = {
	{"_Z24ncclTransportRingConnectP8ncclComm", V(2, 22, 0), V(2, 99, 99), -1},
	{NULL},
};
static const struct nccl_sym_alt sym_tree_connect[] = {
	{"_Z24ncclTransportTreeConnectP8ncclComm", V(2, 22, 0), V(2, 99, 99), -1},
	{NULL},
};
/* 2.24+: the retry check is a static function, called once per retry (a clone in -O3 builds) */
static const struct nccl_sym_alt sym_connect_retry[] = {
	{"_ZL18socketConnectCheckP10ncclSocketiPKc", V(2, 24, 0), V(2, 99, 99), -1},
	{NULL},
};

static const struct nccl_probe_def defs[] = {
	{NT_P_COMM_INIT, "comm_init", ALL("_ZL20ncclCommInitRankFuncP12ncclAsyncJob"), "init",
	 NP_RET | NP_CORE},
	{NT_P_BOOTSTRAP_INIT, "bootstrap_init", sym_bootstrap_init, "bootstrap", NP_RET | NP_CORE},
	{NT_P_BOOTSTRAP_SPLIT, "bootstrap_split", sym_bootstrap_split, "bootstrap (split)", NP_RET},
	{NT_P_ALLGATHER, "bootstrap_allgather", ALL("_Z18bootstrapAllGatherPvS_i"),
	 "bootstrap allgather", NP_RET},
	{NT_P_BOOTSTRAP_SEND, "bootstrap_send", ALL("_Z13bootstrapSendPviiS_i"), "bootstrap send",
	 NP_RET},
	{NT_P_BOOTSTRAP_RECV, "bootstrap_recv", ALL("_Z13bootstrapRecvPviiS_i"), "bootstrap recv",
	 NP_RET},
	{NT_P_INIT_TRANSPORTS, "init_transports", sym_init_transports, "transport init", NP_RET},
	{NT_P_TOPO_GET, "topo_get_system", sym_topo_get, "topology", NP_RET},
	{NT_P_TOPO_COMPUTE, "topo_compute",
	 ALL("_Z15ncclTopoComputeP14ncclTopoSystemP13ncclTopoGraph"), "topology search", NP_RET},
	/* core only where the version has it (2.22+): see probe_required() */
	{NT_P_RING_CONNECT, "ring_connect", sym_ring_connect, "ring setup", NP_RET | NP_CORE},
	{NT_P_TREE_CONNECT, "tree_connect", sym_tree_connect, "tree setup", NP_RET},
	{NT_P_P2P_SETUP, "p2p_setup", sym_p2p_setup, "transport setup", NP_RET | NP_CORE},
	{NT_P_PROXY_CONNECT, "proxy_connect",
	 ALL("_Z16ncclProxyConnectP8ncclCommiiiP18ncclProxyConnector"), "proxy connect", NP_RET},
	{NT_P_PROXY_CALL, "proxy_call",
	 ALL("_Z21ncclProxyCallBlockingP8ncclCommP18ncclProxyConnectoriPviS3_i"), "proxy call",
	 NP_RET},
	{NT_P_SOCKET_CONNECT, "socket_connect", ALL("_Z17ncclSocketConnectP10ncclSocket"),
	 "socket connect", NP_RET | NP_CORE},
	{NT_P_SOCKET_ACCEPT, "socket_accept", sym_socket_accept, "socket accept", NP_RET | NP_CORE},
	{NT_P_CONNECT_RETRY, "connect_retry", sym_connect_retry, NULL, NP_CLONE},
	/*
	 * Polled: the socket net's connect and accept are re-entrant state machines the proxy
	 * calls without sleeping until the peer is there (net_socket.cc, 2.18-2.30; ~10^5 calls a
	 * second per proxy thread on a GPU host)
	 */
	{NT_P_NET_CONNECT, "net_socket_connect", sym_net_connect, "net connect",
	 NP_RET | NP_POLLED},
	{NT_P_NET_ACCEPT, "net_socket_accept", sym_net_accept, "net accept", NP_RET | NP_POLLED},
	{NT_P_ENV, "env", sym_env, NULL, NP_RET | NP_CORE},
	{NT_P_DEBUG_LOG, "debug_log", sym_debug_log, NULL, NP_RET | NP_CORE},
	{NT_P_ENQUEUE, "enqueue", ALL("_Z16ncclEnqueueCheckP8ncclInfo"), NULL, NP_OPTIN},
	/* public C API (weak aliases of pnccl*, in .dynsym of every build) */
	{NT_P_COMM_DESTROY, "comm_destroy", ALL("ncclCommDestroy"), NULL, NP_PUBLIC},
	{NT_P_COMM_ABORT, "comm_abort", ALL("ncclCommAbort"), NULL, NP_PUBLIC},
	{NT_P_API_INIT_RANK, "api_comm_init_rank", ALL("ncclCommInitRank"),
	 "init (ncclCommInitRank)", NP_RET | NP_PUBLIC},
	{NT_P_API_INIT_CONFIG, "api_comm_init_rank_config", ALL("ncclCommInitRankConfig"),
	 "init (ncclCommInitRankConfig)", NP_RET | NP_PUBLIC},
	{NT_P_API_INIT_SCALABLE, "api_comm_init_rank_scalable",
	 (const struct nccl_sym_alt[]){{"ncclCommInitRankScalable", V(2, 23, 0), V(2, 99, 99), -1},
				       {NULL}},
	 "init (ncclCommInitRankScalable)", NP_RET | NP_PUBLIC},
	{NT_P_API_INIT_ALL, "api_comm_init_all", ALL("ncclCommInitAll"), "init (ncclCommInitAll)",
	 NP_RET | NP_PUBLIC},
	{NT_P_API_SPLIT, "api_comm_split", ALL("ncclCommSplit"), "init (ncclCommSplit)",
	 NP_RET | NP_PUBLIC},
	{NT_P_API_LAST_ERROR, "api_get_last_error", ALL("ncclGetLastError"), NULL,
	 NP_RET | NP_PUBLIC},
	/*
	 * The collective calls, where the library has no internal transport symbols (a stripped
	 * build): attached until the first collectives of a process are done, since the lazy ring
	 * connect runs inside the first one; a trap per call, so no longer than that
	 */
	{NT_P_API_ALLREDUCE, "api_all_reduce", ALL("ncclAllReduce"), "collective (ncclAllReduce)",
	 NP_RET | NP_PUBLIC | NP_FIRST},
	{NT_P_API_BROADCAST, "api_broadcast", ALL("ncclBroadcast"), "collective (ncclBroadcast)",
	 NP_RET | NP_PUBLIC | NP_FIRST},
	{NT_P_API_REDUCE, "api_reduce", ALL("ncclReduce"), "collective (ncclReduce)",
	 NP_RET | NP_PUBLIC | NP_FIRST},
	{NT_P_API_ALLGATHER, "api_all_gather", ALL("ncclAllGather"), "collective (ncclAllGather)",
	 NP_RET | NP_PUBLIC | NP_FIRST},
	{NT_P_API_REDUCE_SCATTER, "api_reduce_scatter", ALL("ncclReduceScatter"),
	 "collective (ncclReduceScatter)", NP_RET | NP_PUBLIC | NP_FIRST},
	{NT_P_API_ALLTOALL, "api_all_to_all",
	 (const struct nccl_sym_alt[]){{"ncclAlltoAll", V(2, 28, 0), V(2, 99, 99), -1}, {NULL}},
	 "collective (ncclAlltoAll)", NP_RET | NP_PUBLIC | NP_FIRST},
	{NT_P_API_SEND, "api_send", ALL("ncclSend"), "collective (ncclSend)",
	 NP_RET | NP_PUBLIC | NP_FIRST},
	{NT_P_API_RECV, "api_recv", ALL("ncclRecv"), "collective (ncclRecv)",
	 NP_RET | NP_PUBLIC | NP_FIRST},
	{NT_P_API_GROUP_END, "api_group_end", ALL("ncclGroupEnd"), "collective (ncclGroupEnd)",
	 NP_RET | NP_PUBLIC | NP_FIRST},
	{NT_P_API_GROUP_START, "api_group_start", ALL("ncclGroupStart"), NULL,
	 NP_PUBLIC | NP_FIRST},
	/* the IB transport: re-entrant state machines the proxy polls until the QPs are up */
	{NT_P_IB_CONNECT, "ib_connect", sym_ib_connect, "ib connect", NP_RET | NP_POLLED},
	{NT_P_IB_ACCEPT, "ib_accept", sym_ib_accept, "ib accept", NP_RET | NP_POLLED},
	/* verbs through NCCL's wrappers (ibvwrap.cc): attached with the library, never late */
	{NT_P_IBV_OPEN_DEVICE, "ibv_open_device",
	 ALL("_Z20wrap_ibv_open_devicePP11ibv_contextP10ibv_device"), NULL, NP_RET},
	{NT_P_IBV_CREATE_QP, "ibv_create_qp",
	 ALL("_Z18wrap_ibv_create_qpPP6ibv_qpP6ibv_pdP16ibv_qp_init_attr"), NULL, NP_RET},
	{NT_P_IBV_MODIFY_QP, "ibv_modify_qp", ALL("_Z18wrap_ibv_modify_qpP6ibv_qpP11ibv_qp_attri"),
	 NULL, NP_RET},
	{NT_P_IBV_DESTROY_QP, "ibv_destroy_qp", ALL("_Z19wrap_ibv_destroy_qpP6ibv_qp"), NULL,
	 NP_RET},
	{NT_P_IBV_REG_MR, "ibv_reg_mr", ALL("_Z15wrap_ibv_reg_mrPP6ibv_mrP6ibv_pdPvmi"), NULL,
	 NP_RET},
	{NT_P_IBV_ASYNC_EVENT, "ibv_get_async_event",
	 ALL("_Z24wrap_ibv_get_async_eventP11ibv_contextP15ibv_async_event"), NULL, NP_RET},
	{NT_P_ROLE_PROXY_SERVICE, "role_proxy_service", ALL("_Z16ncclProxyServicePv"), NULL, 0},
	{NT_P_ROLE_PROXY_PROGRESS, "role_proxy_progress", ALL("_Z17ncclProxyProgressPv"), NULL, 0},
	{NT_P_ROLE_BOOTSTRAP_ROOT, "role_bootstrap_root", ALL("_ZL13bootstrapRootPv"), NULL, 0},
	{NT_P_ROLE_IB_ASYNC, "role_ib_async", sym_ib_async, NULL, 0},
	{NT_P_ROLE_NET_SOCKET, "role_net_socket", ALL("_Z22persistentSocketThreadPv"), NULL, 0},
};

/*
 * libibverbs' own exported functions (default versions, IBVERBS_1.1: what dlvsym gives NCCL),
 * for verbs users other than NCCL; calls made through NCCL's wrappers are told once. Not
 * ibv_post_send or ibv_poll_cq: inline calls into the provider (libmlx5), millions a second.
 */
static const struct nccl_probe_def verbs_defs[] = {
	{NT_P_IBV_OPEN_DEVICE, "ibv_open_device", ALL("ibv_open_device"), NULL, NP_RET | NP_CORE},
	{NT_P_IBV_CREATE_QP, "ibv_create_qp", ALL("ibv_create_qp"), NULL, NP_RET | NP_CORE},
	{NT_P_IBV_MODIFY_QP, "ibv_modify_qp", ALL("ibv_modify_qp"), NULL, NP_RET | NP_CORE},
	{NT_P_IBV_DESTROY_QP, "ibv_destroy_qp", ALL("ibv_destroy_qp"), NULL, NP_RET | NP_CORE},
	{NT_P_IBV_REG_MR, "ibv_reg_mr", ALL("ibv_reg_mr"), NULL, NP_RET},
	{NT_P_IBV_ASYNC_EVENT, "ibv_get_async_event", ALL("ibv_get_async_event"), NULL,
	 NP_RET | NP_CORE},
};

const struct nccl_probe_def *nccl_lib_probe(const struct nccl_lib *lib, enum nt_probe id)
{
	if (lib->offs.lib_kind != NT_LIB_VERBS)
		return nccl_probe(id);
	for (size_t i = 0; i < sizeof(verbs_defs) / sizeof(verbs_defs[0]); i++)
		if (verbs_defs[i].id == id)
			return &verbs_defs[i];
	return NULL;
}

const struct nccl_probe_def *nccl_probe(enum nt_probe id)
{
	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
		if (defs[i].id == id)
			return &defs[i];
	return NULL;
}

const char *nccl_offsets_source_name(enum nccl_offsets_source s)
{
	switch (s) {
	case OFFS_DWARF:
		return "DWARF";
	case OFFS_CACHE:
		return "DWARF (cached)";
	case OFFS_TABLE:
		return "built-in table";
	case OFFS_HEADER:
		return "<infiniband/verbs.h>";
	default:
		return "none";
	}
}

/*
 * What a field's DWARF type may be. FV: a value; where DWARF says pointer, the layout is not the
 * one the probes know, and the offset is left unknown rather than read as a value. FP: a
 * pointer, read as one. FD: a value, or in some versions a pointer to it, read through
 * (nt_nccl_offsets' *_ptr flag).
 */
enum { FV, FP, FD };

/*
 * The struct fields the probes read, in the order of struct nt_nccl_offsets' s32 members:
 * member[0] is the name in the cache and in `nccltrace probes`, the others what other NCCL
 * versions call it. Each resolves alone: one a version lacks stays -1, and so do only the
 * reads that need it. Checked against include/socket.h, comm.h, info.h, graph.h, bootstrap.cc
 * and transport/net_ib/{connect.cc,common.h} at v2.29.7-1 and v2.30.7-1: only the two noted
 * changed since 2.28.9.
 */
static const struct {
	const char *type, *member[2];
	int kind;
} fields[] = {
	/* 2.29: socketDescriptor, an int on Linux (include/socket.h and os.h at v2.29.7-1) */
	{"ncclSocket", {"fd", "socketDescriptor"}, FV},
	{"ncclSocket", {"addr"}, FV},
	{"ncclSocket", {"state"}, FV},
	{"ncclSocket", {"type"}, FV},
	{"ncclComm", {"commHash"}, FV},
	{"ncclComm", {"rank"}, FV},
	{"ncclComm", {"nRanks"}, FV},
	{"ncclComm", {"seqNumber"}, FV},
	{"ncclInfo", {"coll"}, FV},
	{"ncclInfo", {"count"}, FV},
	{"ncclInfo", {"datatype"}, FV},
	{"ncclInfo", {"root"}, FV},
	{"ncclInfo", {"comm"}, FP},
	{"bootstrapState", {"rank"}, FV},
	{"bootstrapState", {"nranks"}, FV},
	{"ncclTopoGraph", {"id"}, FV},
	{"ncclIbHandle", {"stage"}, FV},
	/*
	 * 2.29: struct ncclIbCommStage *, calloc'ed by ncclIbAccept's first call of a handshake
	 * and freed, NULL again, at its end (transport/net_ib/common.h:474 and connect.cc:950 at
	 * v2.29.7-1; common.h:539, connect.cc:1360 at v2.30.7-1)
	 */
	{"ncclIbListenComm", {"stage"}, FD},
	{"ncclComm", {"sharedRes"}, FP},
	{"ncclComm", {"persistentRefs"}, FV},
	{"ncclSharedResources", {"refCount"}, FV},
	{"ncclSharedResources", {"owner"}, FP},
	{"ncclSharedResources", {"collOpCount"}, FV},
	{"ncclComm", {"endMagic"}, FV},
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))
#define NALTS	(sizeof(fields[0].member) / sizeof(fields[0].member[0]))
_Static_assert(NFIELDS * 4 == offsetof(struct nt_nccl_offsets, lasterr_delta),
	       "fields[] follows struct nt_nccl_offsets");

const char *nccllib_offset_field(int i)
{
	static char names[NFIELDS][48];

	if (i < 0 || (size_t)i >= NFIELDS)
		return NULL;
	if (!names[i][0])
		snprintf(names[i], sizeof(names[i]), "%s.%s", fields[i].type, fields[i].member[0]);
	return names[i];
}

static __s32 *offs_slot(struct nt_nccl_offsets *o, size_t i)
{
	return &((__s32 *)o)[i];
}

/* Where the probes learn that field i (an FD field) is a pointer to what they read; NULL: none */
static __u8 *offs_ptr_flag(struct nt_nccl_offsets *o, size_t i)
{
	return i == offsetof(struct nt_nccl_offsets, iblc_stage) / sizeof(__s32)
		       ? &o->iblc_stage_ptr
		       : NULL;
}

/* Verified against the DWARF of these builds (`nccltrace probes` prints the same values). */
static const struct {
	const char *build_id;
	__s32 v[NFIELDS];
} known[] = {
	/* libnccl.so.2 2.28.9+cuda13.0, CUDA 13.0 toolkit and the nvidia-nccl-cu13 wheel */
	/*
	 * it has seqNumber: the sharedRes fields (2.18-2.22 counters) are left unknown; endMagic
	 * was not checked against this build: a stripped copy of it gets no communicator scan
	 */
	{"9fcf74d93a8c3605bf7718f594d0a24366e38536",
	 {0,  12,  52,	72, 0x1044c8, 0x1044d0, 0x1044d4, 0x106a10, 0,	32, 40, 48,
	  56, 476, 480, 0,  40,	      104,	-1,	  -1,	    -1, -1, -1, -1}},
};

const char *nccllib_cache_dir(void)
{
	const char *d = getenv("NCCLTRACE_CACHE_DIR");

	return d && *d ? d : "/var/cache/nccltrace";
}

static void cache_path(const char *dir, const char *build_id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s.offsets", dir, build_id);
}

static int cache_load(const char *dir, struct nccl_lib *lib)
{
	char path[PATH_MAX + 64], type[64], member[64];
	long v;
	int n = 0;
	FILE *f;

	cache_path(dir, lib->build_id, path, sizeof(path));
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fscanf(f, "%63[^.].%63s %ld\n", type, member, &v) == 3) {
		for (size_t i = 0; i < NFIELDS; i++) {
			if (strcmp(fields[i].type, type))
				continue;
			if (!strcmp(fields[i].member[0], member)) {
				*offs_slot(&lib->offs, i) = (__s32)v;
				n++;
			}
			/* "ncclIbListenComm.stage.ptr 1" (absent from older caches: 2.28 and before) */
			if (fields[i].kind == FD && offs_ptr_flag(&lib->offs, i) &&
			    !strncmp(member, fields[i].member[0], strlen(fields[i].member[0])) &&
			    !strcmp(member + strlen(fields[i].member[0]), ".ptr"))
				*offs_ptr_flag(&lib->offs, i) = v == 1;
		}
	}
	fclose(f);
	return n == (int)NFIELDS ? 0 : -EINVAL;
}

/* Written to a temporary file and renamed: readers never see half a cache entry. */
static void cache_store(const char *dir, const struct nccl_lib *lib)
{
	struct nt_nccl_offsets o = lib->offs;
	char path[PATH_MAX + 64], tmp[PATH_MAX + 80];
	FILE *f;
	int fd;

	if (mkdir(dir, 0755) && errno != EEXIST)
		return;
	cache_path(dir, lib->build_id, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return;
	}
	for (size_t i = 0; i < NFIELDS; i++)
		fprintf(f, "%s.%s %d\n", fields[i].type, fields[i].member[0],
			((const __s32 *)&lib->offs)[i]);
	for (size_t i = 0; i < NFIELDS; i++)
		if (fields[i].kind == FD && offs_ptr_flag(&o, i))
			fprintf(f, "%s.%s.ptr %d\n", fields[i].type, fields[i].member[0],
				*offs_ptr_flag(&o, i));
	if (fclose(f) || rename(tmp, path))
		unlink(tmp);
}

/*
 * The offsets from the library's DWARF, each field by any of its names; how many resolved. A
 * field whose type is not the kind the probes read it as stays -1.
 */
static int offsets_from_dwarf(struct nccl_lib *lib)
{
	struct dwoff_req req[NFIELDS * NALTS];
	char err[256];
	int n = 0;

	memset(req, 0, sizeof(req));
	for (size_t i = 0; i < NFIELDS; i++)
		for (size_t a = 0; a < NALTS; a++) {
			req[i * NALTS + a].type = fields[i].type;
			/* a field without that many names asks for its first twice */
			req[i * NALTS + a].member =
				fields[i].member[a] ? fields[i].member[a] : fields[i].member[0];
		}
	if (dwoff_resolve(lib->path, req, NFIELDS * NALTS, err, sizeof(err)) <= 0)
		return 0;
	for (size_t i = 0; i < NFIELDS; i++)
		for (size_t a = 0; a < NALTS; a++) {
			const struct dwoff_req *r = &req[i * NALTS + a];

			if (r->offset < 0)
				continue;
			if (r->is_ptr && fields[i].kind == FD) {
				*offs_ptr_flag(&lib->offs, i) = 1;
			} else if (r->is_ptr != (fields[i].kind == FP)) {
				break; /* a changed layout: not read at all */
			}
			*offs_slot(&lib->offs, i) = (__s32)r->offset;
			n++;
			break;
		}
	return n;
}

/*
 * From the cache, else the DWARF (stored in the cache), else the verified table. What the
 * DWARF gives is used field by field (NCCL 2.29 renamed one: a lookup that needed all of them
 * would have lost every offset), -1 for the rest.
 */
static void offsets_unknown(struct nt_nccl_offsets *o)
{
	for (size_t i = 0; i < NFIELDS; i++)
		*offs_slot(o, i) = -1;
	o->iblc_stage_ptr = 0;
}

static void resolve_offsets(struct nccl_lib *lib, const char *cache_dir)
{
	offsets_unknown(&lib->offs);
	if (lib->build_id[0] && cache_dir && cache_load(cache_dir, lib) == 0) {
		lib->offs_src = OFFS_CACHE;
		return;
	}
	/* a cache entry of an older nccltrace (fewer fields) left some: none of them is used */
	offsets_unknown(&lib->offs);
	if (lib->has_dwarf && offsets_from_dwarf(lib) > 0) {
		lib->offs_src = OFFS_DWARF;
		if (lib->build_id[0] && cache_dir)
			cache_store(cache_dir, lib);
		return;
	}
	offsets_unknown(&lib->offs);
	for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++) {
		if (strcmp(known[k].build_id, lib->build_id) == 0) {
			for (size_t i = 0; i < NFIELDS; i++)
				*offs_slot(&lib->offs, i) = known[k].v[i];
			lib->offs_src = OFFS_TABLE;
			return;
		}
	}
	lib->offs_src = OFFS_NONE;
}

int nccl_version_code(const char *version)
{
	int maj, min, pat = 0;

	if (!version || sscanf(version, "%d.%d.%d", &maj, &min, &pat) < 2 || maj < 0 || maj > 9 ||
	    min < 0 || min > 99 || pat < 0 || pat > 99)
		return 0;
	return V(maj, min, pat);
}

static bool alt_fits(const struct nccl_sym_alt *a, int code)
{
	return code >= a->from && code <= a->to;
}

/*
 * Resolve probe id by the names of the library's version (every name when the version is
 * unknown), then by the other versions' names: a build may carry a change before its release
 * number says (the "missing" name is then this version's).
 */
static void resolve_probe(const struct elf_lib *el, struct nccl_lib *lib, int id)
{
	const struct nccl_probe_def *d = nccl_lib_probe(lib, id);
	bool applies = false;
	struct elf_sym syms[4];

	if (!d)
		return;
	for (int pass = 0; pass < 2; pass++)
		for (const struct nccl_sym_alt *a = d->alts; a->sym; a++) {
			bool fits = !lib->version_code || alt_fits(a, lib->version_code);
			int n;

			if (fits != (pass == 0))
				continue;
			applies |= fits;
			if (!lib->probe_sym[id] && fits)
				lib->probe_sym[id] = a->sym;
			n = d->flags & NP_CLONE ? elflib_find_clone(el, a->sym, syms, 4)
						: elflib_find(el, a->sym, syms, 4);
			if (n <= 0)
				continue;
			/* duplicate static names: the lowest address, reported as ambiguous */
			lib->probe_sym[id] = a->sym;
			lib->probe_dups[id] = n;
			lib->probe_off[id] = syms[0].offset;
			lib->resolved++;
			if (a->arg >= 0 && id == NT_P_BOOTSTRAP_INIT)
				lib->offs.bsinit_comm_arg = a->arg;
			if (a->arg >= 0 && (id == NT_P_NET_CONNECT || id == NT_P_IB_CONNECT))
				lib->offs.connect_sendcomm_arg = a->arg;
			return;
		}
	if (!lib->probe_sym[id])
		lib->probe_sym[id] = d->alts[0].sym;
	/* a probe this version does not have (ring connect before 2.22) is not missing */
	if ((d->flags & NP_CORE) && applies)
		lib->missing_core++;
}

int nccllib_open(const char *path, const char *cache_dir, struct nccl_lib *lib, char *err,
		 size_t errlen)
{
	struct elf_lib *el;
	struct elf_sym dbg, last;
	char ver[128];
	int rc;

	memset(lib, 0, sizeof(*lib));
	snprintf(lib->path, sizeof(lib->path), "%s", path);
	rc = elflib_open(path, &el, err, errlen);
	if (rc)
		return rc;
	snprintf(lib->build_id, sizeof(lib->build_id), "%s", elflib_build_id(el));
	lib->has_symtab = elflib_has_symtab(el);
	lib->has_dwarf = elflib_has_dwarf(el);
	if (elflib_find_string(el, "NCCL version ", ver, sizeof(ver)) == 0)
		sscanf(ver + strlen("NCCL version "), "%63[0-9.]", lib->version);
	lib->offs.lib_kind = nccllib_is_verbs(path) ? NT_LIB_VERBS : NT_LIB_NCCL;
	lib->version_code = nccl_version_code(lib->version);
	lib->offs.bsinit_comm_arg = 2;
	lib->offs.connect_sendcomm_arg = 3;
	for (int id = 1; id < NT_P_MAX; id++)
		resolve_probe(el, lib, id);
	if (lib->offs.lib_kind == NT_LIB_VERBS) {
		elflib_close(el);
		if (!lib->resolved) {
			snprintf(err, errlen, "%s: no verbs functions found", path);
			return -ENOENT;
		}
		/* its structs are <infiniband/verbs.h>'s: the programs have them already */
		lib->offs_src = OFFS_HEADER;
		return 0;
	}
	/* WARN text lands in the global ncclLastError: reach it from ncclDebugLog's address */
	if (lib->probe_off[NT_P_DEBUG_LOG] &&
	    elflib_find(el, lib->probe_sym[NT_P_DEBUG_LOG], &dbg, 1) > 0 &&
	    elflib_find_object(el, "ncclLastError", &last) == 0)
		lib->offs.lasterr_delta = (__s64)last.vaddr - (__s64)dbg.vaddr;
	elflib_close(el);
	if (lib->resolved == 0 && !lib->version[0]) {
		snprintf(err, errlen,
			 "%s: no NCCL functions or version string found: not NCCL, or "
			 "stripped of its symbols",
			 path);
		return -ENOENT;
	}
	{
		__s64 delta = lib->offs.lasterr_delta;

		resolve_offsets(lib, cache_dir);
		lib->offs.lasterr_delta = delta;
	}
	return 0;
}

bool nccllib_is_verbs(const char *path)
{
	const char *base = strrchr(path, '/');

	return strncmp(base ? base + 1 : path, "libibverbs.so", 13) == 0;
}

/* The first mapped file whose basename starts with prefix. */
static int find_mapped(const char *maps, const char *prefix, char *path, size_t len)
{
	const char *line = maps;
	size_t plen = strlen(prefix);

	path[0] = '\0';
	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t ll = end ? (size_t)(end - line) : strlen(line);
		const char *p = memchr(line, '/', ll);

		if (p) {
			size_t pl = ll - (p - line);
			const char *base = p;

			for (const char *q = p; q < p + pl; q++)
				if (*q == '/')
					base = q + 1;
			if ((size_t)(p + pl - base) >= plen && strncmp(base, prefix, plen) == 0 &&
			    pl < len) {
				memcpy(path, p, pl);
				path[pl] = '\0';
				/* a library replaced on disk shows as "(deleted)": still usable */
				return 0;
			}
		}
		line = end ? end + 1 : NULL;
	}
	return -ENOENT;
}

int nccllib_find_in_maps(const char *maps, char *path, size_t len)
{
	return find_mapped(maps, "libnccl.so", path, len);
}

int nccllib_find_verbs_in_maps(const char *maps, char *path, size_t len)
{
	return find_mapped(maps, "libibverbs.so", path, len);
}
