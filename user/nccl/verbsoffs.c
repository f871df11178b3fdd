// SPDX-License-Identifier: MIT
/*
 * The verbs structs' offsets, from the real <infiniband/verbs.h> (rdma-core's stable ABI): what
 * the BPF programs read behind ibv_create_qp, ibv_modify_qp and ibv_get_async_event.
 */
#include <stddef.h>
#include <infiniband/verbs.h>
#include "nccl/verbsoffs.h"

void verbs_offsets_fill(struct nt_verbs_offsets *o)
{
	o->qp_num = offsetof(struct ibv_qp, qp_num);
	o->qp_context = offsetof(struct ibv_qp, context);
	o->ctx_device = offsetof(struct ibv_context, device);
	o->dev_name = offsetof(struct ibv_device, name);
	o->attr_state = offsetof(struct ibv_qp_attr, qp_state);
	o->attr_mtu = offsetof(struct ibv_qp_attr, path_mtu);
	o->attr_dest_qp_num = offsetof(struct ibv_qp_attr, dest_qp_num);
	o->attr_timeout = offsetof(struct ibv_qp_attr, timeout);
	o->attr_retry_cnt = offsetof(struct ibv_qp_attr, retry_cnt);
	o->attr_rnr_retry = offsetof(struct ibv_qp_attr, rnr_retry);
	o->attr_min_rnr_timer = offsetof(struct ibv_qp_attr, min_rnr_timer);
	o->attr_sgid_index = offsetof(struct ibv_qp_attr, ah_attr.grh.sgid_index);
	o->attr_port_num = offsetof(struct ibv_qp_attr, ah_attr.port_num);
	o->attr_dlid = offsetof(struct ibv_qp_attr, ah_attr.dlid);
	o->attr_dgid = offsetof(struct ibv_qp_attr, ah_attr.grh.dgid);
	o->ev_element = offsetof(struct ibv_async_event, element);
	o->ev_type = offsetof(struct ibv_async_event, event_type);
	o->pad = 0;
}
