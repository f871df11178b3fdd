// SPDX-License-Identifier: MIT
/*
 * The verbs probes' events in the NCCL state: each QP's life (create, the modify that sets its
 * attributes, destroy), memory registrations, the HCA's asynchronous events. (The IB
 * handshakes of the proxy threads are read from the BPF side's phase stacks: ncclpoll.c.)
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include "nccl/ibwarn.h"
#include "nccl/ncclstate_priv.h"

/* ibv_qp_attr_mask bits, as <infiniband/verbs.h> has them */
enum {
	QPM_STATE = 1 << 0,
	QPM_PORT = 1 << 5,
	QPM_AV = 1 << 7,
	QPM_PATH_MTU = 1 << 8,
	QPM_TIMEOUT = 1 << 9,
	QPM_RETRY_CNT = 1 << 10,
	QPM_RNR_RETRY = 1 << 11,
	QPM_MIN_RNR_TIMER = 1 << 15,
	QPM_DEST_QPN = 1 << 20,
};

static struct snap_qp *qp_find(struct snap_ib *ib, uint64_t obj, uint32_t qpn)
{
	for (int i = ib->nqp - 1; i >= 0; i--)
		if (!ib->qp[i].destroyed && ib->qp[i].obj == obj && ib->qp[i].qp_num == qpn)
			return &ib->qp[i];
	return NULL;
}

static struct snap_qp *qp_new(struct snap_ib *ib)
{
	/* full: the oldest destroyed one makes room, else the oldest */
	if (ib->nqp == SNAP_MAX_QPS) {
		int k = 0;

		for (int i = 0; i < ib->nqp; i++)
			if (ib->qp[i].destroyed) {
				k = i;
				break;
			}
		memmove(&ib->qp[k], &ib->qp[k + 1], (ib->nqp - k - 1) * sizeof(ib->qp[0]));
		ib->nqp--;
	}
	memset(&ib->qp[ib->nqp], 0, sizeof(ib->qp[0]));
	return &ib->qp[ib->nqp++];
}

void nstate_qp_json(json_t *o, const struct snap_qp *q)
{
	json_object_set_new(o, "qp_num", json_integer(q->qp_num));
	json_object_set_new(o, "state", json_string(ib_qp_state_name(q->state)));
	if (q->dev[0])
		json_object_set_new(o, "dev", json_string(q->dev));
}

/* The attributes of a modify that took, onto the QP; a failed one is its error. */
static void qp_apply(struct snap_qp *q, const struct nthread *t, const struct nt_ev_nccl *e)
{
	if (q && e->retval == 0) {
		uint32_t m = t->modify_mask;

		if (m & QPM_STATE)
			q->state = t->modify.state;
		if (m & QPM_PATH_MTU)
			q->mtu = t->modify.mtu;
		if (m & QPM_DEST_QPN)
			q->dest_qp_num = t->modify.dest_qp_num;
		if (m & QPM_TIMEOUT)
			q->timeout = t->modify.timeout;
		if (m & QPM_RETRY_CNT)
			q->retry_cnt = t->modify.retry_cnt;
		if (m & QPM_RNR_RETRY)
			q->rnr_retry = t->modify.rnr_retry;
		if (m & QPM_AV) {
			q->sgid_index = t->modify.sgid_index;
			q->port = t->modify.port;
		}
		if (m & QPM_PORT)
			q->port = t->modify.port;
		q->err = 0;
		q->changed_ns = e->h.ts_ns;
	} else if (q) {
		q->err = (int)(e->retval < 0 ? -e->retval : e->retval);
	}
}

/* The attributes the mask of a modify sets, into its record. */
static void modify_attrs_json(json_t *o, const struct nthread *t)
{
	if (t->modify_mask & QPM_STATE)
		json_object_set_new(o, "to", json_string(ib_qp_state_name(t->modify.state)));
	if (t->modify_mask & QPM_PATH_MTU)
		json_object_set_new(o, "path_mtu", json_integer(ib_mtu_bytes(t->modify.mtu)));
	if (t->modify_mask & QPM_DEST_QPN)
		json_object_set_new(o, "dest_qp_num", json_integer(t->modify.dest_qp_num));
	if (t->modify_mask & QPM_AV) {
		char g[INET6_ADDRSTRLEN];

		json_object_set_new(o, "sgid_index", json_integer(t->modify.sgid_index));
		json_object_set_new(o, "dlid", json_integer(t->modify.dlid));
		if (inet_ntop(AF_INET6, t->modify.dgid, g, sizeof(g)))
			json_object_set_new(o, "dgid", json_string(g));
	}
	if (t->modify_mask & (QPM_AV | QPM_PORT))
		json_object_set_new(o, "port", json_integer(t->modify.port));
	if (t->modify_mask & QPM_TIMEOUT)
		json_object_set_new(o, "timeout", json_integer(t->modify.timeout));
	if (t->modify_mask & QPM_RETRY_CNT)
		json_object_set_new(o, "retry_cnt", json_integer(t->modify.retry_cnt));
	if (t->modify_mask & QPM_RNR_RETRY)
		json_object_set_new(o, "rnr_retry", json_integer(t->modify.rnr_retry));
	if (t->modify_mask & QPM_MIN_RNR_TIMER)
		json_object_set_new(o, "min_rnr_timer", json_integer(t->modify.min_rnr_timer));
}

/*
 * ibv_modify_qp: the attributes at its entry, applied to the QP at its return if they took (a
 * failed change is kept as the QP's error).
 */
static json_t *modify_event(struct snap_ib *ib, struct nthread *t, const struct nt_ev_nccl *e)
{
	struct snap_qp *q;
	json_t *o;

	if (!t)
		return NULL;
	if (!e->ret) {
		t->modify = e->d.ib;
		t->modify_mask = e->d.ib.mask;
		t->modify_pending = true;
		return NULL;
	}
	if (!t->modify_pending)
		return NULL;
	t->modify_pending = false;
	q = qp_find(ib, e->d.ib.obj, e->d.ib.qp_num);
	o = nstate_record(e, "ib_qp");
	json_object_set_new(o, "event", json_string("modify"));
	json_object_set_new(o, "mask", json_integer(t->modify_mask));
	qp_apply(q, t, e);
	if (q)
		nstate_qp_json(o, q);
	else
		json_object_set_new(o, "qp_num", json_integer(e->d.ib.qp_num));
	if (e->retval)
		json_object_set_new(o, "error", json_integer(e->retval));
	modify_attrs_json(o, t);
	return o;
}

/* The verbs probes: a QP's life, memory registrations, the HCA's asynchronous events. */
json_t *nstate_verbs_event(struct nproc *p, struct nthread *t, const struct nt_ev_nccl *e)
{
	struct snap_ib *ib = &p->ibv;
	struct snap_qp *q;
	json_t *o = NULL;

	p->has_ibv = true;
	switch (e->probe) {
	case NT_P_IBV_OPEN_DEVICE:
		if (!e->ret || !e->d.ib.obj)
			return NULL;
		snprintf(ib->dev, sizeof(ib->dev), "%.23s", e->d.ib.dev);
		o = nstate_record(e, "ib_device");
		json_object_set_new(o, "dev", json_string(ib->dev));
		return o;
	case NT_P_IBV_CREATE_QP:
		if (!e->ret)
			return NULL;
		o = nstate_record(e, "ib_qp");
		json_object_set_new(o, "event", json_string("create"));
		if (!e->d.ib.obj) {
			json_object_set_new(o, "error", json_integer(e->retval));
			return o;
		}
		q = qp_new(ib);
		q->obj = e->d.ib.obj;
		q->qp_num = e->d.ib.qp_num;
		q->created_ns = q->changed_ns = e->h.ts_ns;
		snprintf(q->dev, sizeof(q->dev), "%.23s", e->d.ib.dev);
		nstate_qp_json(o, q);
		return o;
	case NT_P_IBV_MODIFY_QP:
		return modify_event(ib, t, e);
	case NT_P_IBV_DESTROY_QP:
		if (e->ret)
			return NULL;
		q = qp_find(ib, e->d.ib.obj, e->d.ib.qp_num);
		o = nstate_record(e, "ib_qp");
		json_object_set_new(o, "event", json_string("destroy"));
		if (q) {
			q->destroyed = true;
			q->changed_ns = e->h.ts_ns;
			nstate_qp_json(o, q);
		} else {
			json_object_set_new(o, "qp_num", json_integer(e->d.ib.qp_num));
		}
		return o;
	case NT_P_IBV_REG_MR: {
		uint64_t len = e->d.ib.obj; /* the BPF side found it among the arguments */

		if (e->ret)
			return NULL;
		ib->nmr++;
		ib->mr_bytes += len;
		o = nstate_record(e, "ib_mr");
		json_object_set_new(o, "length", json_integer((json_int_t)len));
		return o;
	}
	case NT_P_IBV_ASYNC_EVENT:
		if (!e->ret || e->retval != 0)
			return NULL;
		ib->nasync++;
		ib->async_type = e->d.ib.event_type;
		ib->async_qp = ib_event_has_qp(e->d.ib.event_type) ? e->d.ib.qp_num : 0;
		ib->async_port = ib_event_has_qp(e->d.ib.event_type) ? 0 : e->d.ib.port;
		ib->async_ns = e->h.ts_ns;
		snprintf(ib->async_dev, sizeof(ib->async_dev), "%.23s", e->d.ib.dev);
		o = nstate_record(e, "ib_event");
		json_object_set_new(o, "event", json_string(ib_event_name(ib->async_type)));
		json_object_set_new(o, "dev", json_string(ib->async_dev));
		if (ib->async_qp) {
			json_object_set_new(o, "qp_num", json_integer(ib->async_qp));
			q = qp_find(ib, e->d.ib.obj, ib->async_qp);
			if (q && ib_event_is_error(ib->async_type))
				q->state = 6; /* IBV_QPS_ERR: the HCA moved it */
		} else {
			json_object_set_new(o, "port", json_integer(ib->async_port));
		}
		return o;
	default:
		return NULL;
	}
}
