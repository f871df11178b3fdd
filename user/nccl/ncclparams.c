// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nccl/ncclparams.h"

/*
 * Every NCCL_* name in the .rodata of NCCL 2.28.9's libnccl.so.2 (CUDA 13.0 toolkit), and of
 * 2.29.7's and 2.30.7's built from NCCL's source (scripts/build-nccl.sh), less NCCL's debug
 * subsystem names; the ones diagnosis reasons about carry type, default and range. A name a
 * later version dropped stays: the table answers for a dump whose library is not at hand.
 */
static const struct nccl_param params[] = {
	{"NCCL_ALGO", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_ALLGATHERV_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_ALLOC_P2P_NET_LL_BUFFERS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_BUFFSIZE", PARAM_INT, NULL, 1, 1099511627776LL, "buffer per connection, bytes"},
	{"NCCL_CGA_CLUSTER_SIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_CHECK_MODE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_CHECK_POINTERS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_CHUNK_SIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_COLLNET_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_COLLNET_NODE_THRESHOLD", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_COMM_BLOCKING", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_COMM_ID", PARAM_STRING, NULL, 0, 0LL,
	 "ip:port of the bootstrap root, instead of the unique ID"},
	{"NCCL_COMM_SHRINK_SHARE_RESOURCES", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_COMM_SPLIT_SHARE_RESOURCES", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_CONF_FILE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_CONNECT_ROUND_MAX_PEERS", PARAM_INT, NULL, 1, 1048576LL,
	 "peers connected per round of setup"},
	{"NCCL_CREATE_THREAD_CONTEXT", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_CROSS_NIC", PARAM_INT, "2", 0, 2LL,
	 "rings may use different NICs on different nodes"},
	{"NCCL_CTA_POLICY", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_CUMEM_ENABLE", PARAM_INT, NULL, -1, 1LL, "cuMem allocations"},
	{"NCCL_CUMEM_HOST_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_DEBUG", PARAM_STRING, NULL, 0, 0LL,
	 "log level: VERSION, WARN, ATTN (2.32+), INFO, TRACE"},
	{"NCCL_DEBUG_FILE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_DEBUG_SUBSYS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_DEBUG_TIMESTAMP_FORMAT", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_DEBUG_TIMESTAMP_LEVELS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_DEV_API_JIT", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_DISABLE_MEM_MANAGER", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_DMABUF_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_ELASTIC_BUFFER_REGISTER", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_ENABLE_VERSION_CHECK", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_ENV_PLUGIN", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GDAKI_USE_RELIABLE_DB", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GDRCOPY_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GDRCOPY_FIFO_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GDRCOPY_FLUSH_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GDRCOPY_SYNC_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GDR_FLUSH_DISABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GIN_COUNTER_POOL_SIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GIN_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GIN_ERROR_QUERY_SEC", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GIN_EXCLUSIVE_CONTEXTS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GIN_GDAKI_MAX_DEST_RD_ATOMIC", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GIN_GDAKI_MAX_QP_RD_ATOMIC", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GIN_GDAKI_NIC_HANDLER", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GIN_GDAKI_QP_DEPTH", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GIN_IB_ALLGATHER_TAG", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GIN_IB_ALLTOALL_TAG", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GIN_IB_TC", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GIN_NCONNECTIONS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GIN_NCONTEXTS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GIN_PLUGIN", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GIN_PLUGIN_REF_COUNT", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GIN_PROXY_QUEUE_SIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GIN_SIGNAL_POOL_SIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GIN_TYPE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GRAPH_DUMP_FILE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GRAPH_DUMP_FILE_RANK", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GRAPH_FILE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GRAPH_HELPER_DISABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GRAPH_MIXING_SUPPORT", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GRAPH_REGISTER", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GRAPH_STREAM_ORDERING", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_GROUP_CUDA_STREAM", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_HOSTID", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IBVERBS_LIB", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_ADAPTIVE_ROUTING", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_ADDR_FAMILY", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_ADDR_RANGE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_AR_THRESHOLD", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_DATA_DIRECT", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_DEVICE_PCI_ORDER", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_DISABLE", PARAM_BOOL, "0", 0, 1LL, "1: no InfiniBand/RoCE, sockets instead"},
	{"NCCL_IB_ECE_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_FIFO_TC", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_GID_INDEX", PARAM_INT, "-1", -1, 255LL, "RoCE GID index (-1: chosen by NCCL)"},
	{"NCCL_IB_HCA", PARAM_STRING, NULL, 0, 0LL, "which HCAs and ports NCCL uses"},
	{"NCCL_IB_MERGE_NICS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_MERGE_VFS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_MQP_RETRY_ALL", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_MQP_RETRY_CNT", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_MQP_RETRY_SLEEP_MSEC", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_OOO_RQ", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_PCI_RELAXED_ORDERING", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_PKEY", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_PREPOST_RECEIVE_WORK_REQUESTS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_QPS_PER_CONNECTION", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_QUERY_PORT_SPEED", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_RECEIVER_SIDE_MATCHING_SCHEME", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_RESILIENCY_PORT_FAILOVER", PARAM_INT, "0", 0, 2147483647LL,
	 "2.30+: non-zero, a retry-exceeded or flushed IB completion fails over to another HCA "
	 "port of the connection instead of failing the job"},
	{"NCCL_IB_RESILIENCY_PORT_FAILOVER_MAX_ATTEMPTS", PARAM_INT, "1", 0, 2147483647LL,
	 "2.30+: port failovers tried per connection"},
	{"NCCL_IB_RESILIENCY_PORT_FAILOVER_PROBE_DELAY", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_RESILIENCY_PORT_RECOVERY", PARAM_INT, "0", 0, 2147483647LL,
	 "2.30+: non-zero, a failed-over IB port is probed and taken back once alive"},
	{"NCCL_IB_RESILIENCY_PORT_RECOVERY_ACK_TIMEOUT", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_BATCH_INTERVAL", PARAM_STRING, NULL, 0, 0,
	 NULL},
	{"NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_BATCH_SIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_SEQUENCE_SIZE", PARAM_STRING, NULL, 0, 0,
	 NULL},
	{"NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_TIMEOUT", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_RESILIENCY_PORT_RECOVERY_ATTEMPTS_MAX", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_RESILIENCY_PORT_RECOVERY_START_DELAY", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_RETRY_CNT", PARAM_INT, "7", 0, 7LL,
	 "IB transport retries before IBV_WC_RETRY_EXC_ERR"},
	{"NCCL_IB_RETURN_ASYNC_EVENTS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_ROCE_VERSION_NUM", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_ROUTABLE_FLID_GID_INDEX", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_SL", PARAM_INT, "0", 0, 15LL, "IB service level"},
	{"NCCL_IB_SL_DEFAULT", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_SPLIT_DATA_ON_QPS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_SUBNET_AWARE_ROUTING", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_SUBNET_PREFIX_LEN", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_TC", PARAM_INT, "0", 0, 255LL, "IB traffic class"},
	{"NCCL_IB_TC_DEFAULT", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_TIMEOUT", PARAM_INT, "20", 0, 31LL,
	 "IB ACK timeout exponent: 4.096 us x 2^value per try (20: about 4.3 s)"},
	{"NCCL_IB_USE_INLINE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IB_WARN_RAIL_LOCAL", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IGNORE_COLLNET_MISMATCH", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IGNORE_CPU_AFFINITY", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IGNORE_DISABLED_P2P", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IGNORE_NET_MISMATCH", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IPC_COLLECTIVE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IPC_SENDRECV", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_IPC_USE_ABSTRACT_SOCKET", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_L1_SHARED_MEMORY_CARVEOUT", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_LAUNCH_MODE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_LAUNCH_ORDER_IMPLICIT", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_LAUNCH_RACE_FATAL", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_LEGACY_CUDA_REGISTER", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_LL128_BUFFSIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_LL128_C2C", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_LL128_NTHREADS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_LL_BUFFSIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_LOCAL_REGISTER", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_LSA_TEAM_SIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_MAX_CTAS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_MAX_NCHANNELS", PARAM_INT, NULL, 1, 64LL, "channels, at most"},
	{"NCCL_MAX_NRINGS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_MAX_P2P_NCHANNELS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_MEM_SYNC_DOMAIN", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_MIN_CTAS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_MIN_NCHANNELS", PARAM_INT, NULL, 0, 64LL, "channels, at least"},
	{"NCCL_MIN_NRINGS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_MIN_P2P_NCHANNELS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_MLOPART_RDMA_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_MNNVL_CLIQUE_ID", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_MNNVL_CROSS_CLIQUE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_MNNVL_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_MNNVL_RAIL_PER_HOST", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_MNNVL_SCATTER_NETS_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_MNNVL_UUID", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_MULTI_RANK_GPU_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_MULTI_SEGMENT_REGISTER", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NCHANNELS_PER_NET_PEER", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NET", PARAM_STRING, NULL, 0, 0LL, "network plugin by name (IB, Socket, ...)"},
	{"NCCL_NETDEVS_POLICY", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NET_DEVICE_GIN_GDAKI", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NET_DEVICE_GIN_PROXY", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NET_DEVICE_HOST", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NET_DEVICE_UNPACK", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NET_DISABLE_INTRA", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NET_FORCE_FLUSH", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NET_FORCE_MERGE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NET_GDR_C2C", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NET_GDR_LEVEL", PARAM_LEVEL, NULL, 0, 5LL,
	 "how close NIC and GPU must be for GPU Direct RDMA"},
	{"NCCL_NET_GDR_MLOPART", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NET_GDR_READ", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NET_MERGE_LEVEL", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NET_MERGE_POLICY", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NET_OPTIONAL_RECV_COMPLETION", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NET_OVERHEAD", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NET_PLUGIN", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NET_PLUGIN_REF_COUNT", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NET_SHARED_BUFFERS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NET_SHARED_COMMS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NO_CACHE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NSOCKS_PERTHREAD", PARAM_INT, NULL, 1, 64LL, "sockets per helper thread"},
	{"NCCL_NTHREADS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NUM_RMA_CTX", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NVB_DISABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NVB_PRECONNECT", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NVLSTREE_MAX_CHUNKSIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NVLS_CHUNKSIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NVLS_ENABLE", PARAM_INT, "2", 0, 2LL, "NVLink SHARP (2: auto)"},
	{"NCCL_NVLS_NCHANNELS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_NVTX_DISABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_OOB_NET_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_OOB_NET_IFNAME", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_P2P_DIRECT_DISABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_P2P_DISABLE", PARAM_BOOL, "0", 0, 1LL,
	 "1: no CUDA P2P between GPUs (SHM or NET instead)"},
	{"NCCL_P2P_EPOCH_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_P2P_LEVEL", PARAM_LEVEL, NULL, 0, 5LL, "how close GPUs must be for CUDA P2P"},
	{"NCCL_P2P_LL_THRESHOLD", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_P2P_MAX_PEERS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_P2P_NET_CHUNKSIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_P2P_NVL_CHUNKSIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_P2P_PCI_CHUNKSIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_P2P_PER_CHANNEL_NET_BW", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_P2P_PXN_LEVEL", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_P2P_READ_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_P2P_SCHEDULE_GROUP_SIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_P2P_USE_CUDA_MEMCPY", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_PARAM_DUMP_ALL", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_PAT_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_PROFILER_PLUGIN", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_PROGRESS_APPENDOP_FREQ", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_PROTO", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_PROXY_APPEND_BATCH_SIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_PROXY_CPUSET", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_PROXY_DUMP_SIGNAL", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_PXN_C2C", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_PXN_DISABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_RAS_ADDR", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_RAS_ENABLE", PARAM_BOOL, "1", 0, 1LL,
	 "the RAS subsystem and its keep-alive sockets"},
	{"NCCL_RAS_TIMEOUT_FACTOR", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_REPORT_CONNECT_PROGRESS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_RMA_DISABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_RMA_PLUGIN", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_RMA_PLUGIN_REF_COUNT", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_RMA_PROXY_DUMP_SIGNAL", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_RMA_PROXY_QUEUE_SIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_RUNTIME_CONNECT", PARAM_BOOL, "1", 0, 1LL,
	 "1: rings and trees connect at the first collective, not in init"},
	{"NCCL_SET_CPU_STACK_SIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_SET_STACK_SIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_SET_THREAD_NAME", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_SHADOW_MEMPOOL_MAX_SIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_SHM_DISABLE", PARAM_BOOL, "0", 0, 1LL,
	 "1: no shared-memory transport (needs /dev/shm)"},
	{"NCCL_SHM_LOCALITY", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_SHM_MEMCPY_MODE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_SHM_USE_CUDA_MEMCPY", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_SINGLE_PROC_MEM_REG_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_SOCKET_FAMILY", PARAM_STRING, NULL, 0, 0LL,
	 "AF_INET or AF_INET6 for the interface choice"},
	{"NCCL_SOCKET_IFNAME", PARAM_STRING, NULL, 0, 0LL,
	 "interfaces for bootstrap and the socket transport; unset: the first one not matching "
	 "^docker,lo,virbr"},
	{"NCCL_SOCKET_INLINE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_SOCKET_MAGIC", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_SOCKET_MIN_TASKSIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_SOCKET_NTHREADS", PARAM_INT, NULL, 1, 16LL,
	 "socket transport helper threads per connection"},
	{"NCCL_SOCKET_POLL_TIMEOUT_MSEC", PARAM_INT, "0", 0, 2147483647LL,
	 "2.29+: non-zero, NCCL's blocking socket waits (bootstrap, setup) sleep in poll() "
	 "between tries instead of spinning; no failure timeout: a silent peer is still waited "
	 "on for ever"},
	{"NCCL_SOCKET_RCVBUF", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_SOCKET_RETRY_CNT", PARAM_INT, "34", 0, 1000000LL,
	 "connect retries before NCCL gives up (retry n sleeps n x NCCL_SOCKET_RETRY_SLEEP_MSEC)"},
	{"NCCL_SOCKET_RETRY_SLEEP_MSEC", PARAM_INT, "100", 0, 3600000LL,
	 "sleep unit between connect retries"},
	{"NCCL_SOCKET_SNDBUF", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_SYM_CE_THRESHOLD", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_SYM_CTAS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_SYM_GIN_KERNELS_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_SYM_KERNEL", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_SYM_NOWIN_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_SYM_REUSE_SYSMEM_HANDLES", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_SYM_RS_GIN_CHUNK_SIZE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_SYM_TMA_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_THREAD_THRESHOLDS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_TOPO_DUMP_FILE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_TOPO_DUMP_FILE_RANK", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_TOPO_FILE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_TOPO_SPLIT_MLOPART", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_TUNER_PLUGIN", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_UID_STAGGER_RATE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_UID_STAGGER_THRESHOLD", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_UNPACK_DOUBLE_NCHANNELS", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_WARN_ENABLE_DEBUG_INFO", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_WIN_ENABLE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_WIN_STRIDE", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_WORK_ARGS_BYTES", PARAM_STRING, NULL, 0, 0, NULL},
	{"NCCL_WORK_FIFO_BYTES", PARAM_STRING, NULL, 0, 0, NULL},
};

#define NPARAMS ((int)(sizeof(params) / sizeof(params[0])))

static const struct nccl_fake fakes[] = {
	{"NCCL_SOCKET_TIMEOUT",
	 "NCCL has no socket or connect timeout: a refused or unreachable connect is retried "
	 "NCCL_SOCKET_RETRY_CNT times, retry n sleeping n x NCCL_SOCKET_RETRY_SLEEP_MSEC (about "
	 "59.5 s by default); accept, send and receive never time out",
	 "remove it; connect retries are bounded by NCCL_SOCKET_RETRY_CNT and "
	 "NCCL_SOCKET_RETRY_SLEEP_MSEC",
	 false},
	{"NCCL_TIMEOUT",
	 "NCCL has no init or collective timeout; PyTorch's is init_process_group(timeout=...) "
	 "(10 min by default for NCCL)",
	 "remove it; pass timeout= to init_process_group", false},
	{"NCCL_IB_DISABLE_THRESHOLD", "NCCL does not read it (not in its source nor its binary)",
	 "remove it; NCCL_IB_DISABLE=1 turns InfiniBand off", false},
	{"NCCL_IF_LIST", "NCCL does not read it; interfaces are chosen with NCCL_SOCKET_IFNAME",
	 "use NCCL_SOCKET_IFNAME", false},
	{"NCCL_IB_IFNAME",
	 "NCCL does not read it: the bootstrap interface is NCCL_SOCKET_IFNAME, the HCAs "
	 "NCCL_IB_HCA",
	 "use NCCL_SOCKET_IFNAME for the interface, NCCL_IB_HCA for the HCAs", false},
	{"NCCL_ASYNC_ERROR_POLLING_PERIOD_MS", "neither NCCL nor PyTorch reads it",
	 "remove it: it changes nothing", false},
	{"NCCL_ASYNC_ERROR_HANDLING",
	 "NCCL does not read it; PyTorch does, as a deprecated alias of "
	 "TORCH_NCCL_ASYNC_ERROR_HANDLING",
	 "use TORCH_NCCL_ASYNC_ERROR_HANDLING", true},
	{"NCCL_BLOCKING_WAIT",
	 "NCCL does not read it; PyTorch does, as a deprecated alias of TORCH_NCCL_BLOCKING_WAIT",
	 "use TORCH_NCCL_BLOCKING_WAIT", true},
	{"NCCL_DESYNC_DEBUG",
	 "NCCL does not read it; PyTorch does, as a deprecated alias of TORCH_NCCL_DESYNC_DEBUG",
	 "use TORCH_NCCL_DESYNC_DEBUG", true},
	{"NCCL_ENABLE_TIMING",
	 "NCCL does not read it; PyTorch does, as a deprecated alias of TORCH_NCCL_ENABLE_TIMING",
	 "use TORCH_NCCL_ENABLE_TIMING", true},
};

#define NFAKES ((int)(sizeof(fakes) / sizeof(fakes[0])))

/* NCCL_* variables that are labels, not settings: NVIDIA's CUDA container images set these */
static const char *const labels[] = {"NCCL_VERSION"};

bool nccl_label_var(const char *name)
{
	for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++)
		if (!strcmp(labels[i], name))
			return true;
	return false;
}

const struct nccl_param *nccl_param_find(const char *name)
{
	for (int i = 0; i < NPARAMS; i++)
		if (!strcmp(params[i].name, name))
			return &params[i];
	return NULL;
}

const struct nccl_param *nccl_param_at(int i)
{
	return i >= 0 && i < NPARAMS ? &params[i] : NULL;
}

const struct nccl_fake *nccl_fake_find(const char *name)
{
	for (int i = 0; i < NFAKES; i++)
		if (!strcmp(fakes[i].name, name))
			return &fakes[i];
	return NULL;
}

int nccl_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int row[lb + 1];

	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int diag = row[0];

		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int up = row[j], best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

const char *nccl_param_closest(const char *name, const char *const *names, int n)
{
	const char *best = NULL;
	int bd = 0, limit = (int)strlen(name) / 4;

	if (limit < 3)
		limit = 3;
	for (int i = 0; i < n; i++) {
		int d = nccl_edit_distance(name, names[i]);

		if (d <= limit && (!best || d < bd)) {
			best = names[i];
			bd = d;
		}
	}
	return best;
}

static const char *const levels[] = {"LOC", "PIX", "PXB", "PHB", "SYS"};

bool nccl_param_valid(const struct nccl_param *p, const char *value, char *why, size_t len)
{
	char *end;
	long long v;

	switch (p->type) {
	case PARAM_STRING:
		return true;
	case PARAM_LEVEL:
		for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
			if (!strcasecmp(value, levels[i]))
				return true;
		if (!strcasecmp(value, "NVL"))
			return true;
		errno = 0;
		v = strtoll(value, &end, 0);
		if (!errno && end != value && !*end && v >= 0 && v <= 5)
			return true;
		snprintf(why, len, "is not a level (LOC, NVL, PIX, PXB, PHB, SYS, or 0-5)");
		return false;
	case PARAM_INT:
	case PARAM_BOOL:
		errno = 0;
		v = strtoll(value, &end, 0);
		while (end && isspace((unsigned char)*end))
			end++;
		if (errno || end == value || *end) {
			snprintf(why, len,
				 "is not %s: NCCL reads it with strtoll, which makes it %lld",
				 p->type == PARAM_BOOL ? "0 or 1" : "an integer", v);
			return false;
		}
		if (v < p->min || v > p->max) {
			snprintf(why, len, "is out of range [%lld, %lld]", p->min, p->max);
			return false;
		}
		return true;
	}
	return true;
}

double nccl_retry_window_s(long cnt, long sleep_ms)
{
	if (cnt < 0 || sleep_ms < 0)
		return 0;
	return (double)sleep_ms * (double)cnt * (double)(cnt + 1) / 2.0 / 1000.0;
}
