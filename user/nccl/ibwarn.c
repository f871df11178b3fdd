// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nccl/ibwarn.h"

/* enum ibv_wc_status, in order */
static const char *const wc_status[] = {
	"IBV_WC_SUCCESS",
	"IBV_WC_LOC_LEN_ERR",
	"IBV_WC_LOC_QP_OP_ERR",
	"IBV_WC_LOC_EEC_OP_ERR",
	"IBV_WC_LOC_PROT_ERR",
	"IBV_WC_WR_FLUSH_ERR",
	"IBV_WC_MW_BIND_ERR",
	"IBV_WC_BAD_RESP_ERR",
	"IBV_WC_LOC_ACCESS_ERR",
	"IBV_WC_REM_INV_REQ_ERR",
	"IBV_WC_REM_ACCESS_ERR",
	"IBV_WC_REM_OP_ERR",
	"IBV_WC_RETRY_EXC_ERR",
	"IBV_WC_RNR_RETRY_EXC_ERR",
	"IBV_WC_LOC_RDD_VIOL_ERR",
	"IBV_WC_REM_INV_RD_REQ_ERR",
	"IBV_WC_REM_ABORT_ERR",
	"IBV_WC_INV_EECN_ERR",
	"IBV_WC_INV_EEC_STATE_ERR",
	"IBV_WC_FATAL_ERR",
	"IBV_WC_RESP_TIMEOUT_ERR",
	"IBV_WC_GENERAL_ERR",
	"IBV_WC_TM_ERR",
	"IBV_WC_TM_RNDV_INCOMPLETE",
};

const char *ib_wc_status_name(int status)
{
	return status >= 0 && status < (int)(sizeof(wc_status) / sizeof(wc_status[0]))
		       ? wc_status[status]
		       : "IBV_WC_(unknown)";
}

/* The number after key: "key=NAME(12)" or "key=12" or "key 12"; -1 if absent. */
static long field(const char *text, const char *key)
{
	const char *p = strstr(text, key), *paren;

	if (!p)
		return -1;
	p += strlen(key);
	paren = strchr(p, '(');
	/* a name first: the number is in the parentheses right after it */
	if (*p >= 'A' && *p <= 'Z' && paren && paren - p < 40)
		p = paren + 1;
	return *p >= '0' && *p <= '9' ? strtol(p, NULL, 10) : -1;
}

bool ib_parse_completion(const char *text, struct ib_completion *out)
{
	const char *p = strstr(text, "Got completion from peer "), *w, *h;
	long v;

	if (!p || strncmp(text, "NET/IB", 6))
		return false;
	memset(out, 0, sizeof(*out));
	p += strlen("Got completion from peer ");
	w = strstr(p, " with ");
	if (!w)
		return false;
	snprintf(out->peer, sizeof(out->peer), "%.*s", (int)(w - p), p);
	v = field(w, "status=");
	if (v < 0)
		return false;
	out->status = (int)v;
	out->opcode = (int)field(w, "opcode=");
	v = field(w, "vendor_err=");
	if (v < 0)
		v = field(w, "vendor err ");
	out->vendor_err = v < 0 ? 0 : (unsigned)v;
	h = strstr(w, " hca ");
	if (h)
		sscanf(h + 5, "%31s", out->hca);
	out->roce = strstr(w, "localGid") != NULL;
	return true;
}

double ib_retry_window_s(int timeout, int retry_cnt)
{
	if (timeout <= 0 || timeout > 31 || retry_cnt < 0)
		return 0;
	return 4.096e-6 * (double)(1ULL << timeout) * (retry_cnt + 1);
}

const char *ib_qp_state_name(int state)
{
	static const char *const n[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};

	return state >= 0 && state < (int)(sizeof(n) / sizeof(n[0])) ? n[state] : "UNKNOWN";
}

/* enum ibv_event_type, in <infiniband/verbs.h>'s order */
static const char *const events[] = {
	"IBV_EVENT_CQ_ERR",
	"IBV_EVENT_QP_FATAL",
	"IBV_EVENT_QP_REQ_ERR",
	"IBV_EVENT_QP_ACCESS_ERR",
	"IBV_EVENT_COMM_EST",
	"IBV_EVENT_SQ_DRAINED",
	"IBV_EVENT_PATH_MIG",
	"IBV_EVENT_PATH_MIG_ERR",
	"IBV_EVENT_DEVICE_FATAL",
	"IBV_EVENT_PORT_ACTIVE",
	"IBV_EVENT_PORT_ERR",
	"IBV_EVENT_LID_CHANGE",
	"IBV_EVENT_PKEY_CHANGE",
	"IBV_EVENT_SM_CHANGE",
	"IBV_EVENT_SRQ_ERR",
	"IBV_EVENT_SRQ_LIMIT_REACHED",
	"IBV_EVENT_QP_LAST_WQE_REACHED",
	"IBV_EVENT_CLIENT_REREGISTER",
	"IBV_EVENT_GID_CHANGE",
	"IBV_EVENT_WQ_FATAL",
};

const char *ib_event_name(int type)
{
	return type >= 0 && type < (int)(sizeof(events) / sizeof(events[0])) ? events[type]
									     : "IBV_EVENT_UNKNOWN";
}

bool ib_event_is_error(int type)
{
	/* CQ_ERR, QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR, PATH_MIG_ERR, DEVICE_FATAL, PORT_ERR,
	 * SRQ_ERR, WQ_FATAL */
	return type == 0 || type == 1 || type == 2 || type == 3 || type == 7 || type == 8 ||
	       type == 10 || type == 14 || type == 19;
}

bool ib_event_has_qp(int type)
{
	return (type >= 1 && type <= 7) || type == 16;
}

int ib_mtu_bytes(int mtu)
{
	return mtu >= 1 && mtu <= 5 ? 128 << mtu : 0;
}

const char *ib_stage_name(int stage)
{
	/* enum ncclIbCommState as NCCL 2.28 numbers it (2 is unused) */
	static const char *const n[] = {
		[0] = "Start",	     [1] = "Connect",	   [3] = "Accept",    [4] = "Send",
		[5] = "Recv",	     [6] = "Connecting",   [7] = "Connected", [8] = "PendingReady",
		[9] = "SendDevList", [10] = "RecvDevList",
	};

	return stage >= 0 && stage < (int)(sizeof(n) / sizeof(n[0])) && n[stage] ? n[stage]
										 : "unknown";
}
