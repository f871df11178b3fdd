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

#include "tcp.bpf.h"
#include "proc.bpf.h"
#include "verbs.bpf.h"
#include "uprobes.bpf.h"
