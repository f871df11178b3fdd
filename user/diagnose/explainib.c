// SPDX-License-Identifier: MIT
/* The hypotheses of an InfiniBand finding: a completion error's status, an HCA's event. */
#include <stdio.h>
#include <string.h>
#include "diagnose/explain_priv.h"
#include "nccl/ibwarn.h"

/* What a completion status means, and how long the transport tried, from the settings. */
/* An asynchronous event from the HCA (ibv_get_async_event) */
void explain_ib_async_rules(struct hyps *h, const struct snap_proc *p)
{
	const struct snap_ib *ib = p->ib;
	long to = num_of(p, "NCCL_IB_TIMEOUT", 20), rc = num_of(p, "NCCL_IB_RETRY_CNT", 7);

	switch (ib->async_type) {
	case 1: /* IBV_EVENT_QP_FATAL */
	case 2: /* IBV_EVENT_QP_REQ_ERR */
	case 3: /* IBV_EVENT_QP_ACCESS_ERR */
		hyp(h, 80,
		    "the HCA moved QP 0x%x to the error state by itself (%s): a bad work request "
		    "or memory registration, or a firmware/driver fault; the collectives on it "
		    "fail or hang. dmesg and /sys/class/infiniband/%s/ports/*/hw_counters say "
		    "which",
		    ib->async_qp, ib_event_name(ib->async_type), ib->async_dev);
		break;
	case 10: /* IBV_EVENT_PORT_ERR */
		hyp(h, 85,
		    "port %d of %s went down: a cable, a switch port or the link partner; every QP "
		    "on it fails after its retries, (%ld+1) x 4.096 us x 2^%ld = %.1f s "
		    "(NCCL_IB_RETRY_CNT=%ld, NCCL_IB_TIMEOUT=%ld)",
		    ib->async_port, ib->async_dev, rc, to, ib_retry_window_s((int)to, (int)rc), rc,
		    to);
		break;
	case 8: /* IBV_EVENT_DEVICE_FATAL */
		hyp(h, 90,
		    "%s failed as a whole (catastrophic error): a firmware or hardware fault; the "
		    "device must be reset, and every process on it restarted",
		    ib->async_dev);
		break;
	default:
		hyp(h, 50, "the HCA %s reported %s: see dmesg and the port's counters",
		    ib->async_dev, ib_event_name(ib->async_type));
		break;
	}
}

void explain_ib_rules(struct hyps *h, const struct snap_proc *p)
{
	const struct snap_ib_error *ib = p->ib_err;
	long to = num_of(p, "NCCL_IB_TIMEOUT", 20), rc = num_of(p, "NCCL_IB_RETRY_CNT", 7);
	double win = ib_retry_window_s((int)to, (int)rc);

	switch (ib->status) {
	case 12: /* IBV_WC_RETRY_EXC_ERR */
		if (ib->colls_before <= 1)
			hyp(h, 85,
			    "no ACK ever came back at the first transfer: the QPs were set up (the "
			    "handshake runs over TCP) but RDMA packets do not reach %s: a wrong "
			    "GID "
			    "index or RoCE version (NCCL_IB_GID_INDEX, NCCL_IB_ROCE_VERSION_NUM), "
			    "routing "
			    "or a VLAN/PFC setting; the transport tried for %.1f s (%ld+1 tries of "
			    "4.096 us x 2^%ld: NCCL_IB_TIMEOUT=%ld, NCCL_IB_RETRY_CNT=%ld)",
			    ib->peer, win, rc, to, to, rc);
		else
			hyp(h, 85,
			    "ACKs stopped in the middle of the run: the peer %s (its process, host "
			    "or "
			    "HCA) or a link on the way went down; the transport tried for %.1f s "
			    "(NCCL_IB_TIMEOUT=%ld, NCCL_IB_RETRY_CNT=%ld) before it gave up",
			    ib->peer, win, to, rc);
		hyp(h, 40,
		    "a raised NCCL_IB_TIMEOUT only waits longer for a peer that is gone; it helps "
		    "only on a congested fabric that drops ACKs now and then");
		break;
	case 13: /* IBV_WC_RNR_RETRY_EXC_ERR */
		hyp(h, 80,
		    "the receiver at %s posted no receive in time and the RNR retries ran out: it "
		    "is stuck, gone, or far behind",
		    ib->peer);
		break;
	case 5: /* IBV_WC_WR_FLUSH_ERR */
		hyp(h, 70,
		    "the queue pair was already in the error state: this completion follows "
		    "another error on the same QP (look for the first one, on this rank or its "
		    "peer)");
		break;
	case 4:	 /* IBV_WC_LOC_PROT_ERR */
	case 8:	 /* IBV_WC_LOC_ACCESS_ERR */
	case 10: /* IBV_WC_REM_ACCESS_ERR */
		hyp(h, 75,
		    "a memory registration or key was refused (%s): GPU Direct RDMA to a buffer "
		    "the NIC cannot reach (nvidia-peermem / dmabuf, NCCL_NET_GDR_LEVEL), or a "
		    "buffer freed while in flight",
		    ib_wc_status_name(ib->status));
		break;
	default:
		hyp(h, 50, "the transport reported %s(%d) for peer %s (vendor_err 0x%x on %s)",
		    ib_wc_status_name(ib->status), ib->status, ib->peer, ib->vendor_err, ib->hca);
		break;
	}
}

/*
 * The hypotheses of each kind of wait, one case per finding kind, each citing the NCCL code it
 * rests on: long, but splitting it would scatter one table over many functions.
 */
/* A ring setup blocked: a rank stuck inside one IB handshake call, or one not in setup at all */
