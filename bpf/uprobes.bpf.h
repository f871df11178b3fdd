/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The NCCL uprobes: the per-thread phase stack, the libraries' offsets, the events, and the
 * one uprobe and uretprobe body every NCCL and verbs probe shares (perf-event and
 * uprobe_multi programs).
 *
 * Part of nccltrace.bpf.c (one BPF object): included there, after the maps and helpers
 * all parts share.
 */

/* --- NCCL uprobes --- */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NT_MAX_LIBS);
	__type(key, __u32);
	__type(value, struct nt_nccl_offsets);
} nccl_offs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32); /* tid */
	__type(value, struct nt_phase_stack);
} phases SEC(".maps");

/* a zeroed stack to insert from (too large for the BPF stack) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nt_phase_stack);
} phase_zero SEC(".maps");

static __always_inline __u32 thread_phase(__u32 tid)
{
	struct nt_phase_stack *st = bpf_map_lookup_elem(&phases, &tid);
	__u32 d;

	if (!st || st->depth == 0)
		return 0;
	d = st->depth - 1;
	return d < NT_PHASE_DEPTH ? st->f[d].probe : 0;
}

static __always_inline struct nt_ev_nccl *nccl_event(__u64 id, __u16 probe, __u32 lib, bool ret)
{
	struct nt_ev_nccl *e =
		record_reserve(sizeof(*e), NT_EV_NCCL, id >> 32, NT_BUDGET_NCCL, probe);

	if (!e)
		return NULL;
	__builtin_memset(&e->pid, 0, sizeof(*e) - sizeof(e->h));
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->probe = probe;
	e->lib = lib;
	e->ret = ret;
	return e;
}

static __always_inline void read_socket(struct nt_ev_nccl *e, __u64 sock,
					const struct nt_nccl_offsets *o)
{
	if (!sock)
		return;
	/* each field alone (a version may rename one: 2.29's fd); fd -1 where it is unknown */
	e->d.sock.fd = -1;
	if (o->sock_fd >= 0)
		bpf_probe_read_user(&e->d.sock.fd, 4, (void *)(sock + o->sock_fd));
	if (o->sock_state >= 0)
		bpf_probe_read_user(&e->d.sock.state, 4, (void *)(sock + o->sock_state));
	if (o->sock_type >= 0)
		bpf_probe_read_user(&e->d.sock.type, 4, (void *)(sock + o->sock_type));
	if (o->sock_addr >= 0)
		bpf_probe_read_user(e->d.sock.addr, sizeof(e->d.sock.addr),
				    (void *)(sock + o->sock_addr));
}

static __always_inline void read_comm(struct nt_ev_nccl *e, __u64 comm,
				      const struct nt_nccl_offsets *o)
{
	if (!comm || o->comm_rank < 0)
		return;
	e->d.comm.comm = comm;
	bpf_probe_read_user(&e->d.comm.rank, 4, (void *)(comm + o->comm_rank));
	if (o->comm_nranks >= 0)
		bpf_probe_read_user(&e->d.comm.nranks, 4, (void *)(comm + o->comm_nranks));
	if (o->comm_hash >= 0)
		bpf_probe_read_user(&e->d.comm.hash, 8, (void *)(comm + o->comm_hash));
}

/*
 * NCCL 2.18-2.22 count collectives in comm->sharedRes->collOpCount: at ncclCommDestroy, its
 * final value and what says whether it is this comm's alone (userspace decides), before the free
 */
static __always_inline void read_shared_res(struct nt_ev_nccl *e, __u64 comm,
					    const struct nt_nccl_offsets *o)
{
	__u64 sr = 0;

	if (o->comm_shres < 0 || o->shres_collops < 0 || o->shres_refcount < 0 ||
	    o->shres_owner < 0)
		return;
	if (bpf_probe_read_user(&sr, 8, (void *)(comm + o->comm_shres)) || !sr)
		return;
	e->d.fin.shres = sr;
	bpf_probe_read_user(&e->d.fin.collops, 8, (void *)(sr + o->shres_collops));
	bpf_probe_read_user(&e->d.fin.refcount, 4, (void *)(sr + o->shres_refcount));
	bpf_probe_read_user(&e->d.fin.owner, 8, (void *)(sr + o->shres_owner));
	if (o->comm_persistent >= 0)
		bpf_probe_read_user(&e->d.fin.persistent, 4, (void *)(comm + o->comm_persistent));
}

static __always_inline bool probe_has_return(__u16 p)
{
	return p != NT_P_CONNECT_RETRY && p != NT_P_ENQUEUE && p != NT_P_COMM_DESTROY &&
	       p != NT_P_COMM_ABORT && p != NT_P_API_GROUP_START && p < NT_P_ROLE_PROXY_SERVICE;
}

/*
 * The n-th argument (0-based, of the first five: Debian's libbpf has no PT_REGS_PARM6). All are
 * read first and the value chosen after: a switch of loads compiles to a load at a computed
 * offset into ctx, which the verifier refuses.
 */
static __always_inline __u64 reg_arg(struct pt_regs *ctx, __u8 n)
{
	__u64 a0 = PT_REGS_PARM1(ctx), a1 = PT_REGS_PARM2(ctx), a2 = PT_REGS_PARM3(ctx),
	      a3 = PT_REGS_PARM4(ctx), a4 = PT_REGS_PARM5(ctx);

	barrier_var(n);
	return n == 0 ? a0 : n == 1 ? a1 : n == 2 ? a2 : n == 3 ? a3 : a4;
}

/* libibverbs' own function called by NCCL's wrapper: the wrapper told it already */
static __always_inline bool told_by_wrapper(__u32 tid, __u16 probe, __u32 lib)
{
	struct nt_phase_stack *st = bpf_map_lookup_elem(&phases, &tid);

	if (st && st->depth > 0 && st->depth <= NT_PHASE_DEPTH) {
		__u32 d = st->depth - 1;

		if (d < NT_PHASE_DEPTH && st->f[d].probe == probe && st->f[d].lib != lib)
			return true;
	}
	return false;
}

/* The entry of a probe with a return: a frame on the thread's phase stack; NULL if none */
static __always_inline struct nt_phase_stack *phase_push(struct pt_regs *ctx, __u32 tid,
							 __u16 probe, __u32 lib,
							 const struct nt_nccl_offsets *o, __u64 a0,
							 __u64 a1, __u64 a2)
{
	struct nt_phase_stack *st = bpf_map_lookup_elem(&phases, &tid);
	__u32 zero = 0;

	if (!st) {
		struct nt_phase_stack *z = bpf_map_lookup_elem(&phase_zero, &zero);

		if (!z)
			return NULL;
		bpf_map_update_elem(&phases, &tid, z, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&phases, &tid);
		if (!st)
			return NULL;
	}
	st->tgid = bpf_get_current_pid_tgid() >> 32; /* a tid may be reused by another process */
	if (st->depth < NT_PHASE_DEPTH) {
		__u32 d = st->depth;

		if (d < NT_PHASE_DEPTH) {
			st->f[d].probe = probe;
			st->f[d].lib = lib;
			/* the return address, before the uretprobe takes its place: on the
			 * stack, or in lr */
#if defined(__TARGET_ARCH_x86)
			st->f[d].ret = 0;
			bpf_probe_read_user(&st->f[d].ret, 8, (void *)PT_REGS_SP(ctx));
#else
			st->f[d].ret = PT_REGS_RET(ctx);
#endif
			st->f[d].since_ns = bpf_ktime_get_ns();
			st->f[d].ip = PT_REGS_IP(ctx);
			st->f[d].args[0] = a0;
			st->f[d].args[1] = a1;
			/*
			 * ncclNetSocketConnect's, ncclIbConnect's sendComm** (the 3rd or 4th,
			 * by version), ncclCommSplit's newcomm* (the 4th): read at the return
			 */
			st->f[d].args[2] = probe == NT_P_NET_CONNECT || probe == NT_P_IB_CONNECT
						   ? reg_arg(ctx, o->connect_sendcomm_arg)
					   : probe == NT_P_API_SPLIT ? PT_REGS_PARM4(ctx)
								     : a2;
		}
	}
	if (st->depth == 0) {
		__u32 cls = nt_probe_setup_class(probe);

		if (cls && cls < NT_SETUP_CLASSES)
			st->entered_ns[cls] = bpf_ktime_get_ns();
	}
	st->depth++; /* counts past the frames kept, so returns still pair up */
	return st;
}

/* A polling run started or ended: one record, with the run as the stack holds it */
static __always_inline void emit_poll(__u64 id, const struct nt_phase_stack *st, __u32 lib,
				      bool end, bool done)
{
	struct nt_ev_poll *e =
		record_reserve(sizeof(*e), NT_EV_POLL, id >> 32, NT_BUDGET_NCCL, st->poll_probe);

	if (!e)
		return;
	__builtin_memset(&e->pid, 0, sizeof(*e) - sizeof(e->h));
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->probe = st->poll_probe;
	e->end = end;
	e->done = done;
	e->lib = lib;
	e->obj = st->poll_obj;
	e->calls = st->poll_calls;
	e->first_ns = st->poll_first_ns;
	e->result = st->poll_result;
	e->stage = st->poll_stage;
	/* a connect handle starts with the address it connects to (socket and IB nets alike) */
	if (!end && e->obj && (e->probe == NT_P_NET_CONNECT || e->probe == NT_P_IB_CONNECT))
		bpf_probe_read_user(e->addr, sizeof(e->addr), (void *)e->obj);
	bpf_ringbuf_submit(e, 0);
}

/*
 * A call of a polled function (the net plugins' connect and accept): counted in the thread's
 * polling run; a new run (another function, after the last one ended, or after a second without
 * a call) is told once. Another object of the same function is the same run: NCCL's proxy
 * progresses every pending connection each pass, one per channel (accept on each channel's
 * listen comm in turn), and a run per object told every call (8 ranks of the wheel's 2.28.9:
 * 1.5 M records over the budget in 8 s of a setup hang). poll_obj is the latest call's.
 */
static __always_inline void poll_note(struct pt_regs *ctx, __u64 id, struct nt_phase_stack *st,
				      __u16 probe, __u32 lib, const struct nt_nccl_offsets *o,
				      __u64 a0)
{
	__u64 now = bpf_ktime_get_ns();
	bool connect = probe == NT_P_NET_CONNECT || probe == NT_P_IB_CONNECT;
	__s32 stage = -1, off = probe == NT_P_IB_CONNECT  ? o->ibh_stage
				: probe == NT_P_IB_ACCEPT ? o->iblc_stage
							  : -1;
	/* the handle is the argument before sendComm; the listen comm is accept's first */
	__u64 obj = connect ? reg_arg(ctx, o->connect_sendcomm_arg - 1) : a0;

	if (obj && off >= 0 && probe == NT_P_IB_ACCEPT && o->iblc_stage_ptr) {
		/*
		 * 2.29+: the listen comm points to its stage, NULL until this handshake's first
		 * call makes it and again once one ends: NULL is Start, as the reset stage was
		 */
		__u64 sp = 0;
		__s32 v = -1;

		if (!bpf_probe_read_user(&sp, 8, (void *)(obj + off)))
			stage = sp ? -1 : 0;
		if (sp && !bpf_probe_read_user(&v, 4, (void *)sp))
			stage = v;
	} else if (obj && off >= 0) {
		bpf_probe_read_user(&stage, 4, (void *)(obj + off));
	}
	stat_inc(NT_STAT_POLL_CALLS);
	st->poll_stage = stage;
	if (st->poll_probe == probe && !st->poll_done && now - st->poll_last_ns <= 1000000000ULL) {
		st->poll_last_ns = now;
		st->poll_calls++;
		st->poll_obj = obj;
		return;
	}
	st->poll_probe = probe;
	st->poll_obj = obj;
	st->poll_first_ns = st->poll_last_ns = now;
	st->poll_calls = 1;
	st->poll_done = 0;
	st->poll_result = 0;
	emit_poll(id, st, lib, false, false);
}

/* A polled call returned: the run ends when the out-pointer is set or the call failed */
static __always_inline void poll_return(struct pt_regs *ctx, __u64 id, struct nt_phase_stack *st,
					const struct nt_phase_frame *fr, __u32 lib)
{
	/* sendComm** (kept in args[2] at the entry), recvComm** (accept's 2nd) */
	__u64 where = fr->probe == NT_P_NET_CONNECT || fr->probe == NT_P_IB_CONNECT ? fr->args[2]
										    : fr->args[1];
	__u64 out = 0;
	__s32 rc = (__s32)PT_REGS_RC(ctx);

	if (where)
		bpf_probe_read_user(&out, 8, (void *)where);
	st->poll_result = rc;
	if ((out || rc) && !st->poll_done && st->poll_probe == fr->probe) {
		st->poll_done = 1;
		emit_poll(id, st, lib, true, out != 0);
	}
}

/* The communicator an entry event names (and, for ncclTransportP2pSetup, the graph's id) */
static __always_inline void entry_comm(struct pt_regs *ctx, struct nt_ev_nccl *e, __u16 probe,
				       const struct nt_nccl_offsets *o, __u64 a0, __u64 a1)
{
	__s32 graph = -1;

	read_comm(e,
		  probe == NT_P_BOOTSTRAP_INIT	  ? reg_arg(ctx, o->bsinit_comm_arg)
		  : probe == NT_P_BOOTSTRAP_SPLIT ? a1
						  : a0,
		  o);
	/* the graph's id (0 ring, 1 tree, 2 CollNet chain, 3 NVLS, 4 CollNet direct) */
	if (probe == NT_P_P2P_SETUP && a1 && o->graph_id >= 0)
		bpf_probe_read_user(&graph, 4, (void *)(a1 + o->graph_id));
	e->args[3] = (__s64)graph;
}

/* What each probe's entry event carries besides its arguments */
static __always_inline void entry_data(struct pt_regs *ctx, struct nt_ev_nccl *e, __u16 probe,
				       const struct nt_nccl_offsets *o, __u32 tid, __u64 a0,
				       __u64 a1, __u64 a2)
{
	struct nt_phase_stack *st;

	switch (probe) {
	case NT_P_API_INIT_RANK:
	case NT_P_API_INIT_CONFIG:
		/* (comm*, nranks, ncclUniqueId by value: in memory, not a register, rank, ...) */
		e->d.comm.nranks = (__s32)a1;
		e->d.comm.rank = (__s32)a2;
		break;
	case NT_P_API_INIT_SCALABLE:
		e->d.comm.nranks = (__s32)a1;
		e->d.comm.rank = (__s32)a2;
		break;
	case NT_P_API_INIT_ALL:
		e->d.comm.nranks = (__s32)a1;
		e->d.comm.rank = -1; /* one process, every rank */
		break;
	case NT_P_API_SPLIT:
		/* the parent; the new one comes back through newcomm* */
		e->d.comm.rank = -1;
		read_comm(e, a0, o);
		break;
	case NT_P_ALLGATHER:
	case NT_P_BOOTSTRAP_SEND:
	case NT_P_BOOTSTRAP_RECV:
		/* each offset alone: a version may lack one (-1 is never an offset) */
		if (a0 && o->bstate_rank >= 0)
			bpf_probe_read_user(&e->d.comm.rank, 4, (void *)(a0 + o->bstate_rank));
		if (a0 && o->bstate_nranks >= 0)
			bpf_probe_read_user(&e->d.comm.nranks, 4, (void *)(a0 + o->bstate_nranks));
		break;
	case NT_P_SOCKET_CONNECT:
		read_socket(e, a0, o);
		break;
	case NT_P_CONNECT_RETRY:
		/*
		 * a .part clone: its arguments are not trusted; the socket is ncclSocketConnect's,
		 * or, for a net plugin's asynchronous connect (retried from ncclSocketReady, which
		 * is not probed), the address its handle starts with
		 */
		st = bpf_map_lookup_elem(&phases, &tid);
		if (st && st->depth > 0 && st->depth <= NT_PHASE_DEPTH) {
			__u32 d = st->depth - 1;

			if (d < NT_PHASE_DEPTH && st->f[d].probe == NT_P_SOCKET_CONNECT) {
				read_socket(e, st->f[d].args[0], o);
			} else if (d < NT_PHASE_DEPTH &&
				   (st->f[d].probe == NT_P_NET_CONNECT ||
				    st->f[d].probe == NT_P_IB_CONNECT) &&
				   st->poll_obj) {
				e->d.sock.fd = -1;
				bpf_probe_read_user(e->d.sock.addr, sizeof(e->d.sock.addr),
						    (void *)st->poll_obj);
			}
		}
		break;
	case NT_P_IBV_MODIFY_QP:
		e->d.ib.obj = a0;
		read_qp(e, a0, false);
		read_qp_attr(e, a1);
		e->d.ib.mask = (__u32)a2;
		break;
	case NT_P_IBV_DESTROY_QP:
		e->d.ib.obj = a0;
		read_qp(e, a0, true);
		break;
	case NT_P_IBV_REG_MR:
		/* the length: NCCL's wrapper takes the MR's address first */
		e->d.ib.obj = o->lib_kind == NT_LIB_NCCL ? PT_REGS_PARM4(ctx) : a2;
		break;
	case NT_P_COMM_DESTROY:
	case NT_P_COMM_ABORT:
		e->d.fin.comm = a0;
		if (a0 && o->comm_seq >= 0)
			bpf_probe_read_user(e->d.fin.seq, sizeof(e->d.fin.seq),
					    (void *)(a0 + o->comm_seq));
		else if (a0)
			read_shared_res(e, a0, o);
		break;
	case NT_P_ENQUEUE:
		/* ncclInfo's coll says the rest is there; each other offset checked alone */
		if (a0 && o->info_coll >= 0) {
			bpf_probe_read_user(&e->d.info.coll, 4, (void *)(a0 + o->info_coll));
			if (o->info_count >= 0)
				bpf_probe_read_user(&e->d.info.count, 8,
						    (void *)(a0 + o->info_count));
			if (o->info_datatype >= 0)
				bpf_probe_read_user(&e->d.info.datatype, 4,
						    (void *)(a0 + o->info_datatype));
			if (o->info_root >= 0)
				bpf_probe_read_user(&e->d.info.root, 4,
						    (void *)(a0 + o->info_root));
			if (o->info_comm >= 0)
				bpf_probe_read_user(&e->d.info.comm, 8,
						    (void *)(a0 + o->info_comm));
		}
		break;
	}
}

/* A probe's attach cookie: its probe id in the low 16 bits, its library's slot above */
static __always_inline __u16 cookie_probe(__u64 cookie)
{
	return cookie & 0xffff;
}

static __always_inline __u32 cookie_lib(__u64 cookie)
{
	return (cookie >> 16) & (NT_MAX_LIBS - 1);
}

static __always_inline int on_uprobe(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), cookie = bpf_get_attach_cookie(ctx);
	__u16 probe = cookie_probe(cookie);
	__u32 lib = cookie_lib(cookie), tid = (__u32)id;
	const struct nt_nccl_offsets *o;
	struct nt_phase_stack *st;
	struct nt_ev_nccl *e;
	__u64 a0 = PT_REGS_PARM1(ctx), a1 = PT_REGS_PARM2(ctx), a2 = PT_REGS_PARM3(ctx);

	if (!tgid_traced(id >> 32))
		return 0;
	o = bpf_map_lookup_elem(&nccl_offs, &lib);
	if (!o)
		return 0;
	if (is_verbs_probe(probe) && o->lib_kind == NT_LIB_VERBS &&
	    told_by_wrapper(tid, probe, lib))
		return 0;
	if (probe_has_return(probe)) {
		st = phase_push(ctx, tid, probe, lib, o, a0, a1, a2);
		if (!st)
			return 0;
		if (nt_probe_polled(probe)) {
			poll_note(ctx, id, st, probe, lib, o, a0);
			return 0; /* no event a call: userspace reads the stack */
		}
	}
	/* settings, log calls and verbs that return an object are told at their return */
	if (probe == NT_P_ENV || probe == NT_P_DEBUG_LOG || probe == NT_P_IBV_OPEN_DEVICE ||
	    probe == NT_P_IBV_CREATE_QP || probe == NT_P_IBV_ASYNC_EVENT ||
	    probe == NT_P_API_LAST_ERROR)
		return 0;
	e = nccl_event(id, probe, lib, false);
	if (!e)
		return 0;
	e->args[0] = a0;
	e->args[1] = a1;
	e->args[2] = a2;
	e->args[3] = PT_REGS_PARM4(ctx);
	e->args[4] = PT_REGS_PARM5(ctx);
	if (nt_probe_has_comm(probe))
		entry_comm(ctx, e, probe, o, a0, a1);
	entry_data(ctx, e, probe, o, tid, a0, a1, a2);
	if (probe_has_return(probe)) {
		st = bpf_map_lookup_elem(&phases, &tid);
		e->depth = st ? st->depth : 0;
		/* the frame's own time: what userspace matches it by with the stack it reads */
		if (st && st->depth > 0 && st->depth <= NT_PHASE_DEPTH) {
			__u32 d = st->depth - 1;

			if (d < NT_PHASE_DEPTH)
				e->since_ns = st->f[d].since_ns;
		}
	}
	/*
	 * One event per collective (--collectives): waking the tracer for each would cost the job
	 * tens of microseconds per collective; the 200 ms tick reads them, unless the buffer fills.
	 */
	if (probe == NT_P_ENQUEUE)
		bpf_ringbuf_submit(e, bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > (1 << 18)
					      ? BPF_RB_FORCE_WAKEUP
					      : BPF_RB_NO_WAKEUP);
	else
		bpf_ringbuf_submit(e, 0);
	return 0;
}

/* An API init or split returned: the new communicator, through comm* (newcomm* for split) */
static __always_inline void ret_new_comm(struct nt_ev_nccl *e, __u16 probe,
					 const struct nt_phase_frame *fr,
					 const struct nt_nccl_offsets *o)
{
	/* its fields if known */
	__u64 comm = 0, where = probe == NT_P_API_SPLIT ? fr->args[2] : fr->args[0];

	if (e->retval == 0 && where)
		bpf_probe_read_user(&comm, 8, (void *)where);
	e->d.comm.comm = comm;
	e->d.comm.rank =
		probe == NT_P_API_INIT_ALL || probe == NT_P_API_SPLIT ? -1 : (__s32)fr->args[2];
	e->d.comm.nranks = (__s32)fr->args[1];
	if (probe == NT_P_API_SPLIT)
		e->d.comm.nranks = 0;
	read_comm(e, comm, o);
}

/* A verbs call that makes an object returned: the device context or the QP */
static __always_inline void ret_verbs_obj(struct nt_ev_nccl *e, __u16 probe,
					  const struct nt_phase_frame *fr,
					  const struct nt_nccl_offsets *o)
{
	/* NCCL's wrappers return ncclResult_t and the object through their 1st argument */
	bool wrapped = o->lib_kind == NT_LIB_NCCL;
	__u64 obj = wrapped ? 0 : (__u64)e->retval;

	if (wrapped && e->retval == 0 && fr->args[0])
		bpf_probe_read_user(&obj, 8, (void *)fr->args[0]);
	e->d.ib.obj = obj;
	if (probe == NT_P_IBV_CREATE_QP)
		read_qp(e, obj, true);
	else
		read_ctx_dev(e, obj);
}

/* ibv_get_async_event returned: the event's type, and its QP or port */
static __always_inline void ret_async_event(struct nt_ev_nccl *e, const struct nt_phase_frame *fr)
{
	__u64 el = 0;
	__s32 type = -1;

	read_ctx_dev(e, fr->args[0]);
	if (e->retval != 0 || !fr->args[1])
		return;
	bpf_probe_read_user(&type, 4, (void *)(fr->args[1] + vo.ev_type));
	bpf_probe_read_user(&el, 8, (void *)(fr->args[1] + vo.ev_element));
	e->d.ib.event_type = type;
	/* QP events carry the QP; port events the port number */
	if ((type >= 1 && type <= 7) || type == 16) {
		e->d.ib.obj = el;
		read_qp(e, el, false);
	} else {
		e->d.ib.port = (__u8)el;
	}
}

/* What each probe's return event carries besides its entry's arguments and its value */
static __always_inline void ret_data(struct nt_ev_nccl *e, __u16 probe,
				     const struct nt_phase_frame *fr,
				     const struct nt_nccl_offsets *o)
{
	switch (probe) {
	case NT_P_SOCKET_CONNECT:
		read_socket(e, fr->args[0], o);
		break;
	case NT_P_SOCKET_ACCEPT:
		read_socket(e, fr->args[0], o); /* the accepted socket: fd and peer address */
		break;
	case NT_P_ENV:
		if (fr->args[0])
			bpf_probe_read_user_str(e->d.env.name, sizeof(e->d.env.name),
						(void *)fr->args[0]);
		if (e->retval)
			bpf_probe_read_user_str(e->d.env.value, sizeof(e->d.env.value),
						(void *)e->retval);
		break;
	case NT_P_DEBUG_LOG:
		/* WARN formats into the global ncclLastError before checking NCCL_DEBUG */
		bpf_probe_read_user_str(e->d.text, sizeof(e->d.text),
					(void *)(fr->ip + o->lasterr_delta));
		break;
	case NT_P_API_LAST_ERROR:
		/* the job asked NCCL for its last error (PyTorch does, after a failure) */
		if (e->retval)
			bpf_probe_read_user_str(e->d.text, sizeof(e->d.text), (void *)e->retval);
		break;
	case NT_P_API_INIT_RANK:
	case NT_P_API_INIT_CONFIG:
	case NT_P_API_INIT_SCALABLE:
	case NT_P_API_INIT_ALL:
	case NT_P_API_SPLIT:
		ret_new_comm(e, probe, fr, o);
		break;
	case NT_P_IBV_OPEN_DEVICE:
	case NT_P_IBV_CREATE_QP:
		ret_verbs_obj(e, probe, fr, o);
		break;
	case NT_P_IBV_MODIFY_QP:
		e->d.ib.obj = fr->args[0];
		read_qp(e, fr->args[0], true);
		break;
	case NT_P_IBV_ASYNC_EVENT:
		ret_async_event(e, fr);
		break;
	}
}

static __always_inline int on_uretprobe(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), cookie = bpf_get_attach_cookie(ctx);
	__u16 probe = cookie_probe(cookie);
	__u32 lib = cookie_lib(cookie), tid = (__u32)id;
	const struct nt_nccl_offsets *o;
	struct nt_phase_frame fr = {};
	struct nt_phase_stack *st;
	struct nt_ev_nccl *e;
	__u32 d;

	if (!tgid_traced(id >> 32))
		return 0;
	o = bpf_map_lookup_elem(&nccl_offs, &lib);
	st = bpf_map_lookup_elem(&phases, &tid);
	if (!o || !st || st->depth == 0)
		return 0;
	d = st->depth - 1;
	/*
	 * A return whose entry was not seen (attached mid-call) belongs to no frame: the frame
	 * on top is its caller's, which stays. Past the frames kept, returns pair by count.
	 */
	if (d < NT_PHASE_DEPTH && (st->f[d].probe != probe || st->f[d].lib != lib))
		return 0;
	st->depth = d;
	if (d < NT_PHASE_DEPTH)
		__builtin_memcpy(&fr, &st->f[d], sizeof(fr));
	if (probe == NT_P_DEBUG_LOG && (fr.args[0] != 2 || !o->lasterr_delta))
		return 0; /* only warnings are told */
	/* polled (see on_uprobe) */
	if (nt_probe_polled(probe)) {
		if (d < NT_PHASE_DEPTH)
			poll_return(ctx, id, st, &fr, lib);
		return 0;
	}
	/* the verbs calls whose entry says it all */
	if (probe == NT_P_IBV_DESTROY_QP || probe == NT_P_IBV_REG_MR)
		return 0;
	e = nccl_event(id, probe, lib, true);
	if (!e)
		return 0;
	e->depth = d;
	e->retval = PT_REGS_RC(ctx);
	e->since_ns = fr.since_ns;
	e->args[0] = fr.args[0];
	e->args[1] = fr.args[1];
	e->args[2] = fr.args[2];
	ret_data(e, probe, &fr, o);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/*
 * Attached one uprobe at a time (perf events), or all of a library's at once with a
 * uprobe_multi link (Linux >= 6.6): detaching a uprobe waits for an RCU grace period, ~90 ms
 * here, so one link per process and library instead of dozens keeps exits fast. Userspace gives
 * the _multi pair the BPF_TRACE_UPROBE_MULTI attach type, or does not load it where the kernel
 * does not know it.
 */
SEC("uprobe")
int nt_uprobe(struct pt_regs *ctx)
{
	return on_uprobe(ctx);
}

SEC("uretprobe")
int nt_uretprobe(struct pt_regs *ctx)
{
	return on_uretprobe(ctx);
}

SEC("uprobe")
int nt_uprobe_m(struct pt_regs *ctx)
{
	return on_uprobe(ctx);
}

SEC("uretprobe")
int nt_uretprobe_m(struct pt_regs *ctx)
{
	return on_uretprobe(ctx);
}
