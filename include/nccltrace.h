/* SPDX-License-Identifier: MIT */
/*
 * The one header shared by the BPF programs and userspace: ring-buffer records, map keys and
 * values, enums. Fixed-width fields and explicit padding only, so that both sides agree on the
 * layout without relying on the compilers' padding rules.
 */
#ifndef NCCLTRACE_H
#define NCCLTRACE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Version of the trace dump format (first field of the header line). */
#define NT_DUMP_FORMAT 1

#define NT_COMM_LEN   16
#define NT_MAX_TRACED 16384
#define NT_MAX_CONNS  65536

enum nt_event_type {
	NT_EV_FORK = 1,
	NT_EV_EXEC = 2,
	NT_EV_EXIT = 3,
	NT_EV_CONN_STATE = 4, /* TCP state change of a traced connection (carries its counters) */
	NT_EV_RETRANS = 5,
	NT_EV_RESET = 6, /* RST received */
};

/* Indices of the per-CPU stats array: drops and full maps are counted, never silent. */
enum nt_stat {
	NT_STAT_RB_DROP = 0,  /* bpf_ringbuf_reserve failed */
	NT_STAT_CONN_FULL,    /* conns map full: a connection went untracked */
	NT_STAT_TRACED_FULL,  /* traced map full: a process went untracked */
	NT_STAT_SEND_EVENTS,  /* send calls seen on traced connections */
	NT_STAT_RECV_EVENTS,  /* receive calls seen on traced connections */
	NT_STAT_STATE_EVENTS, /* TCP state changes of traced connections */
	NT_STAT_PROBE_EVENTS, /* tcp_probe hits on traced connections */
	NT_STAT_MAX,
};

/* How send/receive calls are observed; the first one that loads and attaches wins. */
enum nt_attach_mode {
	NT_MODE_AUTO = 0,
	NT_MODE_FENTRY = 1,
	NT_MODE_KPROBE = 2,
	NT_MODE_TRACEPOINT = 3,
};

enum nt_conn_flags {
	NT_CONN_ACTIVE = 1 << 0,   /* we saw the connect (SYN_SENT) */
	NT_CONN_LISTENER = 1 << 1, /* a listening socket */
};

struct nt_tuple {
	__u8 saddr[16]; /* IPv4 in the first 4 bytes, network order */
	__u8 daddr[16];
	__u16 sport; /* host order */
	__u16 dport; /* host order */
	__u16 family;
	__u16 pad;
};
_Static_assert(sizeof(struct nt_tuple) == 40, "nt_tuple layout");

/*
 * Per-connection accounting, keyed by the kernel's struct sock address. Counters are updated
 * with atomic adds (several threads may use one socket); timestamps are bpf_ktime_get_ns()
 * (CLOCK_MONOTONIC) and written plainly: the last writer wins, which is what "last" means.
 */
struct nt_conn {
	struct nt_tuple t;
	__u32 tgid; /* process that last used it (the connecting one until then) */
	__u32 tid;
	__u64 ino; /* socket inode: joins /proc/PID/fd and /proc/PID/task/TID/syscall */
	__u64 bytes_sent;
	__u64 bytes_recv;
	__u64 send_calls; /* calls that did not return EAGAIN */
	__u64 recv_calls;
	__u64 send_eagain;
	__u64 recv_eagain;
	__u64 recv_eof; /* receive returned 0: the peer closed */
	__u64 send_err; /* other errors */
	__u64 recv_err;
	__u64 first_ns;
	__u64 state_ns;
	__u64 last_send_ns; /* last byte progress, each way */
	__u64 last_recv_ns;
	__u64 last_send_try_ns; /* last call, successful or not */
	__u64 last_recv_try_ns;
	__u64 last_eagain_ns;
	__u64 figures_ns; /* when RTT/cwnd/windows/queues were last read */
	__u32 state;	  /* TCP_* */
	__s32 last_err;
	__u32 retrans;
	__u32 syn_retrans;
	__u32 srtt_us;
	__u32 snd_cwnd;
	__u32 snd_wnd;
	__u32 rcv_wnd;
	__u32 send_q; /* write_seq - snd_una: bytes the peer has not acknowledged */
	__u32 recv_q; /* rcv_nxt - copied_seq: bytes the owner has not read */
	__u32 flags;
	__u32 resets;
};
_Static_assert(sizeof(struct nt_conn) == 240, "nt_conn layout");

/* Every ring-buffer record starts with this. */
struct nt_ev_hdr {
	__u16 type;
	__u16 size;
	__u32 cpu;
	__u64 ts_ns;
};
_Static_assert(sizeof(struct nt_ev_hdr) == 16, "nt_ev_hdr layout");

struct nt_ev_proc {
	struct nt_ev_hdr h;
	__u32 pid; /* tgid */
	__u32 ppid;
	__u32 tid;
	__s32 exit_code; /* wait(2) status for NT_EV_EXIT */
	char comm[NT_COMM_LEN];
};
_Static_assert(sizeof(struct nt_ev_proc) == 48, "nt_ev_proc layout");

struct nt_ev_conn {
	struct nt_ev_hdr h;
	__u64 sk;
	__u32 oldstate;
	__u32 newstate;
	__u32 retrans_state; /* TCP state at a retransmit */
	__u32 pad;
	struct nt_conn c; /* counters at the time of the event */
};
_Static_assert(sizeof(struct nt_ev_conn) == 16 + 24 + 240, "nt_ev_conn layout");

#endif /* NCCLTRACE_H */
