// SPDX-License-Identifier: MIT
/*
 * The signatures of the NCCL functions nccltrace probes, as each NCCL version declares them
 * (NVIDIA/nccl at the v2.18.6-1 ... v2.30.7-1 tags, src/): g++ mangles them, and test_nccllib
 * checks that the probe table (user/nccl/nccllib.c) holds exactly these names. The types are
 * empty stand-ins: only their names enter a mangled name. Compiled twice (PART 1 and 2), for
 * the one function that changed linkage (ncclIbAsyncThreadMain, static until 2.28).
 */
#include <stddef.h>
#include <stdint.h>

struct ncclComm;
struct ncclAsyncJob;
struct ncclBootstrapHandle;
struct ncclTopoSystem;
struct ncclTopoGraph;
struct ncclProxyConnector;
struct ncclSocket;
struct ncclInfo;
struct ibv_context;
struct ibv_device;
struct ibv_qp;
struct ibv_pd;
struct ibv_qp_init_attr;
struct ibv_qp_attr;
struct ibv_mr;
struct ibv_async_event;
typedef struct {
	int unused;
} ncclNetDeviceHandle_v7_t;
typedef struct {
	int unused;
} ncclNetCommConfig_v10_t;
typedef enum { ncclLevel } ncclDebugLogLevel;
typedef int ncclResult_t;

#define BODY                                                                                       \
	{                                                                                          \
		return 0;                                                                          \
	}

#if PART == 1
/* init.cc: 2.18-2.30 */
static ncclResult_t ncclCommInitRankFunc(struct ncclAsyncJob *) BODY
/* init.cc: 2.18-2.21, then + uint64_t timers[] */
static ncclResult_t initTransportsRank(struct ncclComm *, struct ncclComm *) BODY
static ncclResult_t initTransportsRank(struct ncclComm *, struct ncclComm *, uint64_t *) BODY
/* bootstrap.cc */
ncclResult_t bootstrapInit(struct ncclBootstrapHandle *, struct ncclComm *) BODY /* 2.18-2.22 */
ncclResult_t bootstrapInit(int, void *, struct ncclComm *) BODY			 /* 2.23-2.28 */
ncclResult_t bootstrapInit(int, void *, struct ncclComm *, struct ncclComm *) BODY /* 2.29+ */
ncclResult_t bootstrapSplit(struct ncclBootstrapHandle *, struct ncclComm *, struct ncclComm *,
			    int, int, int *) BODY /* 2.18-2.22 */
ncclResult_t bootstrapSplit(uint64_t, struct ncclComm *, struct ncclComm *, int, int,
			    int *) BODY /* 2.23+ */
ncclResult_t bootstrapAllGather(void *, void *, int) BODY
ncclResult_t bootstrapSend(void *, int, int, void *, int) BODY
ncclResult_t bootstrapRecv(void *, int, int, void *, int) BODY
static void *bootstrapRoot(void *) BODY
/* graph/topo.cc, graph/search.cc */
ncclResult_t ncclTopoGetSystem(struct ncclComm *, struct ncclTopoSystem **) BODY /* -2.23 */
ncclResult_t ncclTopoGetSystem(struct ncclComm *, struct ncclTopoSystem **, const char *) BODY
ncclResult_t ncclTopoCompute(struct ncclTopoSystem *, struct ncclTopoGraph *) BODY
/* transport/generic.cc (2.22+), transport.cc */
ncclResult_t ncclTransportRingConnect(struct ncclComm *) BODY
ncclResult_t ncclTransportTreeConnect(struct ncclComm *) BODY
ncclResult_t ncclTransportP2pSetup(struct ncclComm *, struct ncclTopoGraph *, int, int *) BODY
ncclResult_t ncclTransportP2pSetup(struct ncclComm *, struct ncclTopoGraph *, int) BODY /* 2.24+ */
/* proxy.cc */
ncclResult_t ncclProxyConnect(struct ncclComm *, int, int, int, struct ncclProxyConnector *) BODY
ncclResult_t ncclProxyCallBlocking(struct ncclComm *, struct ncclProxyConnector *, int, void *,
				   int, void *, int) BODY
void *ncclProxyService(void *) BODY
void *ncclProxyProgress(void *) BODY
/* misc/socket.cc */
ncclResult_t ncclSocketConnect(struct ncclSocket *) BODY
ncclResult_t ncclSocketAccept(struct ncclSocket *, struct ncclSocket *) BODY /* -2.29 */
ncclResult_t ncclSocketAccept(struct ncclSocket *, struct ncclSocket *, bool) BODY /* 2.30 */
static ncclResult_t socketConnectCheck(struct ncclSocket *, int, const char[]) BODY /* 2.24+ */
/* transport/net_socket.cc: (dev, handle, sendComm) 2.18; + devHandle 2.19-2.25; (dev, config,
 * ...) 2.26-2.27; (ctx, dev, ...) 2.28+ */
ncclResult_t ncclNetSocketConnect(int, void *, void **) BODY
ncclResult_t ncclNetSocketConnect(int, void *, void **, ncclNetDeviceHandle_v7_t **) BODY
ncclResult_t ncclNetSocketConnect(int, ncclNetCommConfig_v10_t *, void *, void **,
				  ncclNetDeviceHandle_v7_t **) BODY
ncclResult_t ncclNetSocketConnect(void *, int, void *, void **, ncclNetDeviceHandle_v7_t **) BODY
ncclResult_t ncclNetSocketAccept(void *, void **) BODY
ncclResult_t ncclNetSocketAccept(void *, void **, ncclNetDeviceHandle_v7_t **) BODY
void *persistentSocketThread(void *) BODY
/* transport/net_ib.cc (net_ib/connect.cc from 2.29): the same four shapes */
ncclResult_t ncclIbConnect(int, void *, void **) BODY
ncclResult_t ncclIbConnect(int, void *, void **, ncclNetDeviceHandle_v7_t **) BODY
ncclResult_t ncclIbConnect(int, ncclNetCommConfig_v10_t *, void *, void **,
			   ncclNetDeviceHandle_v7_t **) BODY
ncclResult_t ncclIbConnect(void *, int, void *, void **, ncclNetDeviceHandle_v7_t **) BODY
ncclResult_t ncclIbAccept(void *, void **) BODY
ncclResult_t ncclIbAccept(void *, void **, ncclNetDeviceHandle_v7_t **) BODY
static void *ncclIbAsyncThreadMain(void *) BODY /* -2.28 */
/* misc/param.cc, plugin/env.cc (2.28.7+) */
const char *ncclGetEnv(const char *) BODY
const char *ncclEnvPluginGetEnv(const char *) BODY
/* debug.cc */
void ncclDebugLog(ncclDebugLogLevel, unsigned long, const char *, int, const char *, ...) {}
void ncclDebugLogInternal(ncclDebugLogLevel, unsigned long, const char *, const char *, int,
			  const char *, ...)
{
}
/* enqueue.cc */
ncclResult_t ncclEnqueueCheck(struct ncclInfo *) BODY
/* misc/ibvwrap.cc */
ncclResult_t wrap_ibv_open_device(struct ibv_context **, struct ibv_device *) BODY
ncclResult_t wrap_ibv_create_qp(struct ibv_qp **, struct ibv_pd *, struct ibv_qp_init_attr *) BODY
ncclResult_t wrap_ibv_modify_qp(struct ibv_qp *, struct ibv_qp_attr *, int) BODY
ncclResult_t wrap_ibv_destroy_qp(struct ibv_qp *) BODY
ncclResult_t wrap_ibv_reg_mr(struct ibv_mr **, struct ibv_pd *, void *, size_t, int) BODY
ncclResult_t wrap_ibv_get_async_event(struct ibv_context *, struct ibv_async_event *) BODY

/* the static ones are emitted only if used */
void *nt_keep[] = {
	(void *)(ncclResult_t (*)(struct ncclAsyncJob *))ncclCommInitRankFunc,
	(void *)(ncclResult_t (*)(struct ncclComm *, struct ncclComm *))initTransportsRank,
	(void *)(ncclResult_t (*)(struct ncclComm *, struct ncclComm *, uint64_t *))
		initTransportsRank,
	(void *)bootstrapRoot,
	(void *)socketConnectCheck,
	(void *)ncclIbAsyncThreadMain,
};
#else
void *ncclIbAsyncThreadMain(void *) BODY /* 2.29+ */
#endif
