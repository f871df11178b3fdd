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
 *
 * One object in parts, included at the end of this file: tcp.bpf.h (the TCP hooks),
 * proc.bpf.h (the process tree), verbs.bpf.h (the verbs probes' readers) and uprobes.bpf.h
 * (the NCCL uprobes). Userspace finds the programs and maps by name.
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

/*
 * The intake's bound: NCCL records a second each traced process may send, a quarter of that
 * for each other class (enum nt_budget_class), and all processes together 16 times that; set
 * before the load. Each is a token bucket: it fills at that rate up to an eighth of a second's
 * worth, so a flood sends at most that burst at once, then the rate. (A window of a second let
 * a flood send its whole second in a few ms: one process's 4096 NCCL records are 1.4 MB, over
 * the 1 MiB ring buffer while the tick ran.) A real job's busiest second, 8 ranks of the
 * wheel's NCCL at init, is about 280 records a rank.
 */
const volatile __u32 budget_per_s = NT_BUDGET_DEFAULT;

struct nt_budget {
	__u64 fill_ns; /* the tokens are counted up to this time */
	__s64 tokens;  /* records it may send now */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4 * NT_MAX_TRACED);
	__type(key, __u64); /* tgid << 8 | class; tgid 0: every process */
	__type(value, struct nt_budget);
} budget SEC(".maps");

/* The records over the budget, per NCCL probe (the classes' totals are in stats) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NT_P_MAX);
	__type(key, __u32);
	__type(value, __u64);
} supp_probe SEC(".maps");

/*
 * One more record of this key's bucket (rate records a second, at most burst at once): false if
 * it is empty. Several CPUs may share a key: the take is atomic; two may both fill it for the
 * same time, which at most doubles one fill, still a bound.
 */
static __always_inline bool budget_take(__u64 key, __u64 rate, __u64 now)
{
	__u64 burst = rate / 8 ? rate / 8 : 1, ns_per = 1000000000ULL / rate, n;
	struct nt_budget *b = bpf_map_lookup_elem(&budget, &key), z = {now, (__s64)burst};

	if (!b) {
		bpf_map_update_elem(&budget, &key, &z, BPF_NOEXIST);
		b = bpf_map_lookup_elem(&budget, &key);
		if (!b)
			return true; /* no room to count: sent, as before there was a bound */
	}
	if (now > b->fill_ns) {
		n = (now - b->fill_ns) / (ns_per ? ns_per : 1);
		if (n >= burst || b->tokens + (__s64)n >= (__s64)burst) {
			b->tokens = burst;
			b->fill_ns = now;
		} else if (n) {
			__sync_fetch_and_add(&b->tokens, n);
			b->fill_ns += n * ns_per; /* the fraction of a token carries on */
		}
	}
	if (b->tokens <= 0)
		return false; /* empty: not taken, or a flood would run it ever further below 0 */
	return __sync_fetch_and_add(&b->tokens, -1) > 0;
}

/* May tgid send one more record of class cls? If not, it is counted as suppressed. */
static __always_inline bool budget_allows(__u32 tgid, __u32 cls, __u16 probe)
{
	__u64 now = bpf_ktime_get_ns(),
	      lim = cls == NT_BUDGET_NCCL ? budget_per_s : budget_per_s / 4;
	__u32 idx = probe;
	__u64 *v;

	if (budget_take(((__u64)tgid << 8) | cls, lim, now) && budget_take(cls, 16 * lim, now))
		return true;
	stat_inc(NT_STAT_SUPP_PROC + cls);
	if (cls == NT_BUDGET_NCCL && (v = bpf_map_lookup_elem(&supp_probe, &idx)))
		*v += 1; /* per-CPU slot: no other writer */
	return false;
}

/*
 * A ring-buffer record with its common header filled in, if the process's budget for its
 * class allows; a suppressed record and a failed reservation are counted.
 */
static __always_inline void *record_reserve(__u32 size, __u16 type, __u32 tgid, __u32 cls,
					    __u16 probe)
{
	struct nt_ev_hdr *h;

	if (!budget_allows(tgid, cls, probe))
		return NULL;
	h = bpf_ringbuf_reserve(&events, size, 0);

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

#include "tcp.bpf.h"
#include "proc.bpf.h"
#include "verbs.bpf.h"
#include "uprobes.bpf.h"
