// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ibwarn.h"

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
