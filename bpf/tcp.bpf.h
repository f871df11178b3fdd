/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The TCP hooks: each send and receive call accounted in the conns map (one body, attached
 * as fexit, kprobe/kretprobe or raw tracepoint), and the connection's state changes,
 * retransmits, resets and ACK-driven figures.
 *
 * Part of nccltrace.bpf.c (one BPF object): included there, after the maps and helpers
 * all parts share.
 */

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
	/*
	 * the spin path (NCCL's proxy waiting for data) stays minimal: one atomic, three stores,
	 * and a fourth on the first EAGAIN after progress
	 */
	if (ret == -EAGAIN) {
		__u64 prog = c->last_send_ns > c->last_recv_ns ? c->last_send_ns : c->last_recv_ns;

		if (send) {
			__sync_fetch_and_add(&c->send_eagain, 1);
			c->last_send_try_ns = now;
		} else {
			__sync_fetch_and_add(&c->recv_eagain, 1);
			c->last_recv_try_ns = now;
		}
		/*
		 * only after a byte this program saw move: on a connection found at an attach, no
		 * byte seen yet, the owner may have tried since long before
		 */
		if (prog && c->eagain_since_ns <= prog)
			c->eagain_since_ns = now;
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

static __always_inline void emit_conn(__u16 type, __u64 sk, __u32 oldstate, __u32 newstate,
				      const struct nt_conn *c)
{
	struct nt_ev_conn *e = record_reserve(sizeof(*e), type, c->tgid, NT_BUDGET_CONN, 0);

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
