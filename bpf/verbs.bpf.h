/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The verbs probes' readers: <infiniband/verbs.h> offsets from userspace (vo), and what
 * a verbs call's QP, attributes and context say.
 *
 * Part of nccltrace.bpf.c (one BPF object): included there, after the maps and helpers
 * all parts share.
 */

/* <infiniband/verbs.h> offsets, set by userspace before load */
const volatile struct nt_verbs_offsets vo = {};

static __always_inline bool is_verbs_probe(__u16 p)
{
	return p >= NT_P_IBV_OPEN_DEVICE && p <= NT_P_IBV_ASYNC_EVENT;
}

/* The HCA's name, through ctx->device->name */
static __always_inline void read_ctx_dev(struct nt_ev_nccl *e, __u64 ctx)
{
	__u64 d = 0;

	if (ctx)
		bpf_probe_read_user(&d, 8, (void *)(ctx + vo.ctx_device));
	if (d)
		bpf_probe_read_user_str(e->d.ib.dev, sizeof(e->d.ib.dev),
					(void *)(d + vo.dev_name));
}

/* The QP's number and, with dev, its HCA's name (qp->context) */
static __always_inline void read_qp(struct nt_ev_nccl *e, __u64 qp, bool dev)
{
	__u64 ctx = 0;

	if (!qp)
		return;
	bpf_probe_read_user(&e->d.ib.qp_num, 4, (void *)(qp + vo.qp_num));
	if (!dev)
		return;
	bpf_probe_read_user(&ctx, 8, (void *)(qp + vo.qp_context));
	read_ctx_dev(e, ctx);
}

/* ibv_modify_qp's attributes (all of them: the mask says which the caller set) */
static __always_inline void read_qp_attr(struct nt_ev_nccl *e, __u64 attr)
{
	if (!attr)
		return;
	bpf_probe_read_user(&e->d.ib.state, 1, (void *)(attr + vo.attr_state));
	bpf_probe_read_user(&e->d.ib.mtu, 1, (void *)(attr + vo.attr_mtu));
	bpf_probe_read_user(&e->d.ib.dest_qp_num, 4, (void *)(attr + vo.attr_dest_qp_num));
	bpf_probe_read_user(&e->d.ib.timeout, 1, (void *)(attr + vo.attr_timeout));
	bpf_probe_read_user(&e->d.ib.retry_cnt, 1, (void *)(attr + vo.attr_retry_cnt));
	bpf_probe_read_user(&e->d.ib.rnr_retry, 1, (void *)(attr + vo.attr_rnr_retry));
	bpf_probe_read_user(&e->d.ib.min_rnr_timer, 1, (void *)(attr + vo.attr_min_rnr_timer));
	bpf_probe_read_user(&e->d.ib.sgid_index, 1, (void *)(attr + vo.attr_sgid_index));
	bpf_probe_read_user(&e->d.ib.port, 1, (void *)(attr + vo.attr_port_num));
	bpf_probe_read_user(&e->d.ib.dlid, 2, (void *)(attr + vo.attr_dlid));
	bpf_probe_read_user(e->d.ib.dgid, 16, (void *)(attr + vo.attr_dgid));
}
