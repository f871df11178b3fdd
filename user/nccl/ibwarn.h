/* SPDX-License-Identifier: MIT */
/*
 * InfiniBand/RoCE completion errors as NCCL reports them: every one goes through WARN
 * ("NET/IB: Got completion from peer 10.0.0.2<43517> with status=IBV_WC_RETRY_EXC_ERR(12)
 * opcode=IBV_WC_SEND(0) vendor_err=129 ... hca mlx5_0"; older releases print numbers only),
 * which nccltrace captures even with NCCL_DEBUG unset. Pure.
 */
#ifndef NT_IBWARN_H
#define NT_IBWARN_H

#include <stdbool.h>
#include <stddef.h>

struct ib_completion {
	char peer[64]; /* "10.0.0.2<43517>" as NCCL prints it */
	int status;    /* enum ibv_wc_status */
	int opcode;
	unsigned vendor_err;
	char hca[32];
	bool roce; /* GIDs printed: an Ethernet link layer */
};

/* Is text NCCL's completion-error WARN? Then out holds what it says. */
bool ib_parse_completion(const char *text, struct ib_completion *out);
/* "IBV_WC_RETRY_EXC_ERR", from <infiniband/verbs.h>'s enum ibv_wc_status */
const char *ib_wc_status_name(int status);
/*
 * How long the transport retries before IBV_WC_RETRY_EXC_ERR: each try waits for an ACK
 * 4.096 us x 2^timeout, and retry_cnt retries follow the first try.
 */
double ib_retry_window_s(int timeout, int retry_cnt);
/* "RTS", from enum ibv_qp_state */
const char *ib_qp_state_name(int state);
/* "IBV_EVENT_QP_FATAL", from enum ibv_event_type */
const char *ib_event_name(int type);
/* An asynchronous event that breaks the QP, port or device (not COMM_EST, PORT_ACTIVE, ...) */
bool ib_event_is_error(int type);
/* Its element is a QP (else a port, a CQ or an SRQ) */
bool ib_event_has_qp(int type);
/* NCCL's enum ncclIbCommState (net_ib.cc): "Connecting" for 6, "unknown" */
const char *ib_stage_name(int stage);
/* 256 .. 4096 for enum ibv_mtu 1..5, 0 if unknown */
int ib_mtu_bytes(int mtu);

#endif /* NT_IBWARN_H */
