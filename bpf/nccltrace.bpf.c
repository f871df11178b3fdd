// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel side of nccltrace: follows the traced process tree and accounts every TCP connection
 * those processes use. Hot data (bytes, calls, EAGAIN spins, progress times, queues, RTT) stays
 * in the conns map; only rare events (fork/exec/exit, TCP state changes, retransmits, resets)
 * go through the ring buffer.
 *
 * Send/receive calls are seen through one of three program groups with one body: fexit on
 * tcp_sendmsg/tcp_recvmsg, kprobe+kretprobe on the same, or the sock:sock_{send,recv}_length
 * tracepoints as raw tracepoints (which need no tracefs). Userspace enables exactly one group.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "nccltrace.h"

#define AF_INET		2
#define AF_INET6	10
#define SOCK_STREAM	1
#define IPPROTO_TCP	6
#define EAGAIN		11
#define TCP_ESTABLISHED 1
#define TCP_SYN_SENT	2
#define TCP_CLOSE	7
#define TCP_LISTEN	10

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, NT_MAX_TRACED);
	__type(key, __u32);   /* tgid */
	__type(value, __u32); /* parent tgid */
} traced SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, NT_MAX_CONNS);
	__type(key, __u64); /* struct sock * */
	__type(value, struct nt_conn);
} conns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NT_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* kprobe mode: the sock argument of an in-flight tcp_sendmsg/tcp_recvmsg, by thread. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* pid_tgid */
	__type(value, __u64);
} inflight SEC(".maps");

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += 1; /* per-CPU slot: no other writer */
}

static __always_inline bool tgid_traced(__u32 tgid)
{
	return bpf_map_lookup_elem(&traced, &tgid) != NULL;
}

static __always_inline void read_tuple(const struct sock *sk, struct nt_tuple *t)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);

	t->family = family;
	t->sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	t->dport = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (family == AF_INET) {
		__u32 s = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		__u32 d = BPF_CORE_READ(sk, __sk_common.skc_daddr);

		__builtin_memcpy(t->saddr, &s, 4);
		__builtin_memcpy(t->daddr, &d, 4);
	} else {
		BPF_CORE_READ_INTO(&t->saddr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
		BPF_CORE_READ_INTO(&t->daddr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
	}
}

static __always_inline bool sk_is_tcp(const struct sock *sk)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);

	if (family != AF_INET && family != AF_INET6)
		return false;
	/* sk_protocol was a bitfield before 5.6; the probed read handles both layouts */
	return BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) == IPPROTO_TCP;
}

static __always_inline __u64 sk_inode(const struct sock *sk)
{
	struct socket *sock = BPF_CORE_READ(sk, sk_socket);
	struct socket_alloc *sa;

	if (!sock)
		return 0;
	/* the socket and its inode are allocated together (SOCK_INODE) */
	sa = container_of(sock, struct socket_alloc, socket);
	return BPF_CORE_READ(sa, vfs_inode.i_ino);
}

/*
 * Userspace samples every 200 ms: reading the TCP figures on every call would only cost (eight
 * kernel reads on each send and receive), so they are refreshed at most every 10 ms.
 */
#define FIGURES_EVERY_NS 10000000ULL

static __always_inline void read_tcp_figures(const struct sock *sk, struct nt_conn *c, __u64 now)
{
	const struct tcp_sock *tp = (const struct tcp_sock *)sk;
	__u32 write_seq, snd_una, rcv_nxt, copied_seq;

	if (now - c->figures_ns < FIGURES_EVERY_NS)
		return;
	c->figures_ns = now;
	write_seq = BPF_CORE_READ(tp, write_seq);
	snd_una = BPF_CORE_READ(tp, snd_una);
	rcv_nxt = BPF_CORE_READ(tp, rcv_nxt);
	copied_seq = BPF_CORE_READ(tp, copied_seq);

	c->srtt_us = BPF_CORE_READ(tp, srtt_us) >> 3;
	c->snd_cwnd = BPF_CORE_READ(tp, snd_cwnd);
	c->snd_wnd = BPF_CORE_READ(tp, snd_wnd);
	c->rcv_wnd = BPF_CORE_READ(tp, rcv_wnd);
	c->send_q = write_seq - snd_una;
	c->recv_q = rcv_nxt - copied_seq;
}

/* The NCCL phase the thread is in (innermost probe on its stack), 0 outside NCCL */
static __always_inline __u32 thread_phase(__u32 tid);

static __always_inline struct nt_conn *conn_create(const struct sock *sk, __u64 pid_tgid, __u64 now,
						   __u32 flags)
{
	__u64 key = (__u64)sk;
	struct nt_conn c = {};
	struct nt_conn *cp;

	read_tuple(sk, &c.t);
	c.tgid = pid_tgid >> 32;
	c.tid = (__u32)pid_tgid;
	c.ino = sk_inode(sk);
	c.first_ns = now;
	c.state_ns = now;
	c.state = BPF_CORE_READ(sk, __sk_common.skc_state);
	c.flags = flags;
	c.nccl_phase = thread_phase((__u32)pid_tgid);
	if (bpf_map_update_elem(&conns, &key, &c, BPF_NOEXIST) &&
	    bpf_map_lookup_elem(&conns, &key) == NULL) {
		stat_inc(NT_STAT_CONN_FULL);
		return NULL;
	}
	cp = bpf_map_lookup_elem(&conns, &key);
	return cp;
}

/* One body for every attach mode: a send or receive call on sk returned ret. */
static __always_inline void on_xfer(const struct sock *sk, int ret, bool send)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u64 key = (__u64)sk;
	struct nt_conn *c = bpf_map_lookup_elem(&conns, &key);
	__u64 now;

	/*
	 * Every connection in the map belongs to a traced process, so the traced-process lookup
	 * (the dearest step here) is only needed for a socket not seen yet, or for a call from
	 * another process on a known one (a socket handed over). The usual call is the same
	 * thread on the same socket again.
	 */
	if (!c) {
		if (!tgid_traced(pid_tgid >> 32) || !sk_is_tcp(sk))
			return;
		now = bpf_ktime_get_ns();
		c = conn_create(sk, pid_tgid, now, 0);
		if (!c)
			return;
	} else {
		if (c->tid != (__u32)pid_tgid) {
			if (c->tgid != pid_tgid >> 32 && !tgid_traced(pid_tgid >> 32))
				return;
			c->tgid = pid_tgid >> 32;
			c->tid = (__u32)pid_tgid;
		}
		now = bpf_ktime_get_ns();
	}
	/* the spin path (NCCL's proxy waiting for data) stays minimal: one atomic, three stores */
	if (ret == -EAGAIN) {
		if (send) {
			__sync_fetch_and_add(&c->send_eagain, 1);
			c->last_send_try_ns = now;
		} else {
			__sync_fetch_and_add(&c->recv_eagain, 1);
			c->last_recv_try_ns = now;
		}
		c->last_eagain_ns = now;
		return;
	}
	if (send) {
		stat_inc(NT_STAT_SEND_EVENTS);
		__sync_fetch_and_add(&c->send_calls, 1);
		c->last_send_try_ns = now;
		if (ret > 0) {
			__sync_fetch_and_add(&c->bytes_sent, ret);
			c->last_send_ns = now;
		} else if (ret < 0) {
			__sync_fetch_and_add(&c->send_err, 1);
			c->last_err = ret;
		}
	} else {
		stat_inc(NT_STAT_RECV_EVENTS);
		__sync_fetch_and_add(&c->recv_calls, 1);
		c->last_recv_try_ns = now;
		if (ret > 0) {
			__sync_fetch_and_add(&c->bytes_recv, ret);
			c->last_recv_ns = now;
		} else if (ret == 0) {
			__sync_fetch_and_add(&c->recv_eof, 1);
		} else {
			__sync_fetch_and_add(&c->recv_err, 1);
			c->last_err = ret;
		}
	}
	if (c->t.sport == 0 || c->t.dport == 0)
		read_tuple(sk, &c->t);
	if (!c->ino)
		c->ino = sk_inode(sk);
	if (now - c->figures_ns >= FIGURES_EVERY_NS) {
		/* the NCCL phase of the thread moving bytes, as often as the figures */
		__u32 phase = thread_phase((__u32)pid_tgid);

		if (phase)
			c->nccl_phase = phase;
	}
	read_tcp_figures(sk, c, now);
}

/* --- tracepoint mode: raw tracepoints need no tracefs mount --- */

SEC("raw_tp/sock_send_length")
int BPF_PROG(nt_tp_send, struct sock *sk, int ret, int flags)
{
	on_xfer(sk, ret, true);
	return 0;
}

SEC("raw_tp/sock_recv_length")
int BPF_PROG(nt_tp_recv, struct sock *sk, int ret, int flags)
{
	on_xfer(sk, ret, false);
	return 0;
}

/* --- fentry mode --- */

SEC("fexit/tcp_sendmsg")
int BPF_PROG(nt_fexit_send, struct sock *sk, struct msghdr *msg, size_t size, int ret)
{
	on_xfer(sk, ret, true);
	return 0;
}

SEC("fexit/tcp_recvmsg")
int BPF_PROG(nt_fexit_recv, struct sock *sk, struct msghdr *msg, size_t len, int flags,
	     int *addr_len, int ret)
{
	on_xfer(sk, ret, false);
	return 0;
}

/* --- kprobe mode --- */

static __always_inline void inflight_save(struct sock *sk)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 v = (__u64)sk;

	if (!tgid_traced(id >> 32))
		return;
	bpf_map_update_elem(&inflight, &id, &v, BPF_ANY);
}

static __always_inline void inflight_done(int ret, bool send)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 *skp = bpf_map_lookup_elem(&inflight, &id);

	if (!skp)
		return;
	on_xfer((const struct sock *)*skp, ret, send);
	bpf_map_delete_elem(&inflight, &id);
}

SEC("kprobe/tcp_sendmsg")
int BPF_KPROBE(nt_kp_send, struct sock *sk)
{
	inflight_save(sk);
	return 0;
}

SEC("kretprobe/tcp_sendmsg")
int BPF_KRETPROBE(nt_krp_send, int ret)
{
	inflight_done(ret, true);
	return 0;
}

SEC("kprobe/tcp_recvmsg")
int BPF_KPROBE(nt_kp_recv, struct sock *sk)
{
	inflight_save(sk);
	return 0;
}

SEC("kretprobe/tcp_recvmsg")
int BPF_KRETPROBE(nt_krp_recv, int ret)
{
	inflight_done(ret, false);
	return 0;
}

/* --- connection state, retransmits, resets, ACK-driven figures (all modes) --- */

/* A ring-buffer record with its common header filled in; a failed reservation is counted. */
static __always_inline void *record_reserve(__u32 size, __u16 type)
{
	struct nt_ev_hdr *h = bpf_ringbuf_reserve(&events, size, 0);

	if (!h) {
		stat_inc(NT_STAT_RB_DROP);
		return NULL;
	}
	h->type = type;
	h->size = size;
	h->cpu = bpf_get_smp_processor_id();
	h->ts_ns = bpf_ktime_get_ns();
	return h;
}

static __always_inline void emit_conn(__u16 type, __u64 sk, __u32 oldstate, __u32 newstate,
				      const struct nt_conn *c)
{
	struct nt_ev_conn *e = record_reserve(sizeof(*e), type);

	if (!e)
		return;
	e->sk = sk;
	e->oldstate = oldstate;
	e->newstate = newstate;
	e->retrans_state = c->state;
	e->pad = 0;
	__builtin_memcpy(&e->c, c, sizeof(*c));
	bpf_ringbuf_submit(e, 0);
}

SEC("raw_tp/inet_sock_set_state")
int BPF_PROG(nt_set_state, const struct sock *sk, int oldstate, int newstate)
{
	__u64 key = (__u64)sk;
	struct nt_conn *c;
	__u64 now;

	if (BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) != IPPROTO_TCP)
		return 0;
	c = bpf_map_lookup_elem(&conns, &key);
	now = bpf_ktime_get_ns();
	if (!c) {
		/*
		 * connect() and listen() run in the caller's context, so the owner is known.
		 * Accepted sockets become established in softirq: they join at their first
		 * send or receive instead.
		 */
		__u64 id = bpf_get_current_pid_tgid();

		if (newstate != TCP_SYN_SENT && newstate != TCP_LISTEN)
			return 0;
		if (!tgid_traced(id >> 32))
			return 0;
		c = conn_create(sk, id, now,
				newstate == TCP_LISTEN ? NT_CONN_LISTENER : NT_CONN_ACTIVE);
		if (!c)
			return 0;
	} else if (oldstate == TCP_CLOSE && newstate == TCP_SYN_SENT) {
		/* a struct sock reused for a new connection: start afresh */
		__u64 id = bpf_get_current_pid_tgid();
		struct nt_conn fresh = {};

		read_tuple(sk, &fresh.t);
		fresh.tgid = id >> 32;
		fresh.tid = (__u32)id;
		fresh.ino = sk_inode(sk);
		fresh.first_ns = now;
		fresh.flags = NT_CONN_ACTIVE;
		__builtin_memcpy(c, &fresh, sizeof(fresh));
	}
	stat_inc(NT_STAT_STATE_EVENTS);
	c->state = newstate;
	c->state_ns = now;
	/* a closing socket has lost its local port already: keep the tuple it had */
	if (newstate != TCP_CLOSE)
		read_tuple(sk, &c->t);
	emit_conn(NT_EV_CONN_STATE, key, oldstate, newstate, c);
	if (newstate == TCP_CLOSE)
		bpf_map_delete_elem(&conns, &key); /* final counters travelled with the event */
	return 0;
}

SEC("raw_tp/tcp_retransmit_skb")
int BPF_PROG(nt_retrans, const struct sock *sk)
{
	__u64 key = (__u64)sk;
	struct nt_conn *c = bpf_map_lookup_elem(&conns, &key);
	__u32 state;

	if (!c)
		return 0;
	state = BPF_CORE_READ(sk, __sk_common.skc_state);
	__sync_fetch_and_add(&c->retrans, 1);
	if (state == TCP_SYN_SENT)
		__sync_fetch_and_add(&c->syn_retrans, 1);
	/* SYN_SENT is set before connect() picks the local port: it is known by now */
	if (c->t.sport == 0)
		read_tuple(sk, &c->t);
	c->state = state;
	emit_conn(NT_EV_RETRANS, key, state, state, c);
	return 0;
}

SEC("raw_tp/tcp_receive_reset")
int BPF_PROG(nt_reset, const struct sock *sk)
{
	__u64 key = (__u64)sk;
	struct nt_conn *c = bpf_map_lookup_elem(&conns, &key);

	if (!c)
		return 0;
	__sync_fetch_and_add(&c->resets, 1);
	emit_conn(NT_EV_RESET, key, c->state, c->state, c);
	return 0;
}

SEC("raw_tp/tcp_probe")
int BPF_PROG(nt_tcp_probe, const struct sock *sk)
{
	__u64 key = (__u64)sk;
	struct nt_conn *c = bpf_map_lookup_elem(&conns, &key);

	if (!c)
		return 0;
	stat_inc(NT_STAT_PROBE_EVENTS);
	read_tcp_figures(sk, c, bpf_ktime_get_ns());
	return 0;
}

/* --- the traced process tree --- */

static __always_inline void emit_proc(__u16 type, __u32 pid, __u32 ppid, __u32 tid, int code,
				      struct task_struct *task)
{
	struct nt_ev_proc *e = record_reserve(sizeof(*e), type);

	if (!e)
		return;
	e->pid = pid;
	e->ppid = ppid;
	e->tid = tid;
	e->exit_code = code;
	BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
	bpf_ringbuf_submit(e, 0);
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(nt_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);

	if (ptgid == ctgid || !tgid_traced(ptgid))
		return 0; /* a new thread, or not ours */
	if (bpf_map_update_elem(&traced, &ctgid, &ptgid, BPF_ANY)) {
		stat_inc(NT_STAT_TRACED_FULL);
		return 0;
	}
	emit_proc(NT_EV_FORK, ctgid, ptgid, BPF_CORE_READ(child, pid), 0, child);
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(nt_exec, struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	__u32 *ppid = bpf_map_lookup_elem(&traced, &tgid);

	if (!ppid)
		return 0;
	emit_proc(NT_EV_EXEC, tgid, *ppid, BPF_CORE_READ(task, pid), 0, task);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(nt_exit, struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	__u32 *ppid = bpf_map_lookup_elem(&traced, &tgid);
	__u32 parent;
	int code;

	if (!ppid)
		return 0;
	/* signal->live is decremented before the tracepoint: 0 means the last thread is going */
	if (BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	parent = *ppid;
	code = BPF_CORE_READ(task, exit_code);
	if (BPF_CORE_READ(task, signal, flags) & 0x4 /* SIGNAL_GROUP_EXIT */)
		code = BPF_CORE_READ(task, signal, group_exit_code);
	bpf_map_delete_elem(&traced, &tgid);
	emit_proc(NT_EV_EXIT, tgid, parent, BPF_CORE_READ(task, pid), code, task);
	return 0;
}

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
	struct nt_ev_nccl *e = record_reserve(sizeof(*e), NT_EV_NCCL);

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
	if (!sock || o->sock_fd < 0)
		return;
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

static __always_inline bool probe_has_return(__u16 p)
{
	return p != NT_P_CONNECT_RETRY && p != NT_P_ENQUEUE && p != NT_P_COMM_DESTROY &&
	       p != NT_P_COMM_ABORT && p < NT_P_ROLE_PROXY_SERVICE;
}

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

static __always_inline int on_uprobe(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u16 probe = cookie & 0xffff;
	__u32 lib = (cookie >> 16) & (NT_MAX_LIBS - 1), tid = (__u32)id, zero = 0;
	const struct nt_nccl_offsets *o;
	struct nt_phase_stack *st;
	struct nt_ev_nccl *e;
	__u64 a0 = PT_REGS_PARM1(ctx), a1 = PT_REGS_PARM2(ctx), a2 = PT_REGS_PARM3(ctx);

	if (!tgid_traced(id >> 32))
		return 0;
	o = bpf_map_lookup_elem(&nccl_offs, &lib);
	if (!o)
		return 0;
	if (is_verbs_probe(probe) && o->lib_kind == NT_LIB_VERBS) {
		/* libibverbs' own function called by NCCL's wrapper: the wrapper told it already */
		st = bpf_map_lookup_elem(&phases, &tid);
		if (st && st->depth > 0 && st->depth <= NT_PHASE_DEPTH) {
			__u32 d = st->depth - 1;

			if (d < NT_PHASE_DEPTH && st->f[d].probe == probe && st->f[d].lib != lib)
				return 0;
		}
	}
	if (probe_has_return(probe)) {
		st = bpf_map_lookup_elem(&phases, &tid);
		if (!st) {
			struct nt_phase_stack *z = bpf_map_lookup_elem(&phase_zero, &zero);

			if (!z)
				return 0;
			bpf_map_update_elem(&phases, &tid, z, BPF_NOEXIST);
			st = bpf_map_lookup_elem(&phases, &tid);
			if (!st)
				return 0;
		}
		if (st->depth < NT_PHASE_DEPTH) {
			__u32 d = st->depth;

			if (d < NT_PHASE_DEPTH) {
				st->f[d].probe = probe;
				st->f[d].lib = lib;
				st->f[d].since_ns = bpf_ktime_get_ns();
				st->f[d].ip = PT_REGS_IP(ctx);
				st->f[d].args[0] = a0;
				st->f[d].args[1] = a1;
				/* ncclNetSocketConnect's, ncclIbConnect's sendComm** is the 4th */
				st->f[d].args[2] =
					probe == NT_P_NET_CONNECT || probe == NT_P_IB_CONNECT
						? PT_REGS_PARM4(ctx)
						: a2;
			}
		}
		st->depth++; /* counts past the frames kept, so returns still pair up */
		if (probe == NT_P_IB_CONNECT || probe == NT_P_IB_ACCEPT) {
			__u64 now = bpf_ktime_get_ns();
			__s32 stage = -1,
			      off = probe == NT_P_IB_CONNECT ? o->ibh_stage : o->iblc_stage;
			__u64 obj = probe == NT_P_IB_CONNECT ? a2 : a0;

			if (obj && off >= 0)
				bpf_probe_read_user(&stage, 4, (void *)(obj + off));
			/* a second without a call ends a polling run */
			if (now - st->poll_last_ns > 1000000000ULL || st->poll_probe != probe)
				st->poll_first_ns = now;
			st->poll_last_ns = now;
			st->poll_probe = probe;
			st->poll_stage = stage;
			return 0; /* no event: userspace reads the stack */
		}
	}
	/* settings, log calls and verbs that return an object are told at their return */
	if (probe == NT_P_ENV || probe == NT_P_DEBUG_LOG || probe == NT_P_IBV_OPEN_DEVICE ||
	    probe == NT_P_IBV_CREATE_QP || probe == NT_P_IBV_ASYNC_EVENT)
		return 0;
	e = nccl_event(id, probe, lib, false);
	if (!e)
		return 0;
	e->args[0] = a0;
	e->args[1] = a1;
	e->args[2] = a2;
	e->args[3] = PT_REGS_PARM4(ctx);
	e->args[4] = PT_REGS_PARM5(ctx);
	if (nt_probe_has_comm(probe)) {
		__s32 graph = -1;

		read_comm(e,
			  probe == NT_P_BOOTSTRAP_INIT	  ? a2
			  : probe == NT_P_BOOTSTRAP_SPLIT ? a1
							  : a0,
			  o);
		/* the graph's id (0 ring, 1 tree, 2 CollNet chain, 3 NVLS, 4 CollNet direct) */
		if (probe == NT_P_P2P_SETUP && a1 && o->graph_id >= 0)
			bpf_probe_read_user(&graph, 4, (void *)(a1 + o->graph_id));
		e->args[3] = (__s64)graph;
	}
	switch (probe) {
	case NT_P_ALLGATHER:
	case NT_P_BOOTSTRAP_SEND:
	case NT_P_BOOTSTRAP_RECV:
		if (a0 && o->bstate_rank >= 0) {
			bpf_probe_read_user(&e->d.comm.rank, 4, (void *)(a0 + o->bstate_rank));
			bpf_probe_read_user(&e->d.comm.nranks, 4, (void *)(a0 + o->bstate_nranks));
		}
		break;
	case NT_P_SOCKET_CONNECT:
		read_socket(e, a0, o);
		break;
	case NT_P_CONNECT_RETRY:
		/* a .part clone: its arguments are not trusted; the socket is ncclSocketConnect's */
		st = bpf_map_lookup_elem(&phases, &tid);
		if (st && st->depth > 0 && st->depth <= NT_PHASE_DEPTH) {
			__u32 d = st->depth - 1;

			if (d < NT_PHASE_DEPTH && st->f[d].probe == NT_P_SOCKET_CONNECT)
				read_socket(e, st->f[d].args[0], o);
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
		break;
	case NT_P_ENQUEUE:
		if (a0 && o->info_coll >= 0) {
			bpf_probe_read_user(&e->d.info.coll, 4, (void *)(a0 + o->info_coll));
			bpf_probe_read_user(&e->d.info.count, 8, (void *)(a0 + o->info_count));
			bpf_probe_read_user(&e->d.info.datatype, 4,
					    (void *)(a0 + o->info_datatype));
			bpf_probe_read_user(&e->d.info.root, 4, (void *)(a0 + o->info_root));
			bpf_probe_read_user(&e->d.info.comm, 8, (void *)(a0 + o->info_comm));
		}
		break;
	}
	if (probe_has_return(probe)) {
		st = bpf_map_lookup_elem(&phases, &tid);
		e->depth = st ? st->depth : 0;
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

static __always_inline int on_uretprobe(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u16 probe = cookie & 0xffff;
	__u32 lib = (cookie >> 16) & (NT_MAX_LIBS - 1), tid = (__u32)id;
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
	/* polled (see on_uprobe); the verbs calls whose entry says it all */
	if (probe == NT_P_IB_CONNECT || probe == NT_P_IB_ACCEPT || probe == NT_P_IBV_DESTROY_QP ||
	    probe == NT_P_IBV_REG_MR)
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
	switch (probe) {
	case NT_P_SOCKET_CONNECT:
		read_socket(e, fr.args[0], o);
		break;
	case NT_P_SOCKET_ACCEPT:
		read_socket(e, fr.args[0], o); /* the accepted socket: fd and peer address */
		break;
	case NT_P_ENV:
		if (fr.args[0])
			bpf_probe_read_user_str(e->d.env.name, sizeof(e->d.env.name),
						(void *)fr.args[0]);
		if (e->retval)
			bpf_probe_read_user_str(e->d.env.value, sizeof(e->d.env.value),
						(void *)e->retval);
		break;
	case NT_P_DEBUG_LOG:
		/* WARN formats into the global ncclLastError before checking NCCL_DEBUG */
		bpf_probe_read_user_str(e->d.text, sizeof(e->d.text),
					(void *)(fr.ip + o->lasterr_delta));
		break;
	case NT_P_NET_CONNECT:
	case NT_P_NET_ACCEPT:
		/* *sendComm / *recvComm stays NULL until the re-entrant connect/accept is done */
		if (fr.args[probe == NT_P_NET_CONNECT ? 2 : 1])
			bpf_probe_read_user(&e->args[3], 8,
					    (void *)fr.args[probe == NT_P_NET_CONNECT ? 2 : 1]);
		break;
	case NT_P_IBV_OPEN_DEVICE:
	case NT_P_IBV_CREATE_QP: {
		/* NCCL's wrappers return ncclResult_t and the object through their 1st argument */
		bool wrapped = o->lib_kind == NT_LIB_NCCL;
		__u64 obj = wrapped ? 0 : (__u64)e->retval;

		if (wrapped && e->retval == 0 && fr.args[0])
			bpf_probe_read_user(&obj, 8, (void *)fr.args[0]);
		e->d.ib.obj = obj;
		if (probe == NT_P_IBV_CREATE_QP)
			read_qp(e, obj, true);
		else
			read_ctx_dev(e, obj);
		break;
	}
	case NT_P_IBV_MODIFY_QP:
		e->d.ib.obj = fr.args[0];
		read_qp(e, fr.args[0], true);
		break;
	case NT_P_IBV_ASYNC_EVENT: {
		__u64 el = 0;
		__s32 type = -1;

		read_ctx_dev(e, fr.args[0]);
		if (e->retval != 0 || !fr.args[1])
			break;
		bpf_probe_read_user(&type, 4, (void *)(fr.args[1] + vo.ev_type));
		bpf_probe_read_user(&el, 8, (void *)(fr.args[1] + vo.ev_element));
		e->d.ib.event_type = type;
		/* QP events carry the QP; port events the port number */
		if ((type >= 1 && type <= 7) || type == 16) {
			e->d.ib.obj = el;
			read_qp(e, el, false);
		} else {
			e->d.ib.port = (__u8)el;
		}
		break;
	}
	}
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
