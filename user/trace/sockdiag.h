/* SPDX-License-Identifier: MIT */
/*
 * The kernel's view of TCP sockets that existed before nccltrace: NETLINK_SOCK_DIAG's inet_diag
 * dump with tcp_info (ages of the last data sent and received, unacknowledged bytes,
 * retransmits, RTT, queues). `attach` gives every connection of the job its true age from it,
 * so a receive that has waited 1200 s reads 1200 s at once, not the time since attach.
 */
#ifndef NT_SOCKDIAG_H
#define NT_SOCKDIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nccltrace.h"

struct sockdiag_sock {
	struct nt_tuple t;
	uint64_t ino;
	uint32_t state;	 /* TCP_* */
	uint32_t rqueue; /* bytes received, not read by the owner (idiag_rqueue) */
	uint32_t wqueue; /* bytes sent, not acknowledged (idiag_wqueue) */
	bool have_info;	 /* tcp_info came with it */
	uint32_t last_data_sent_ms, last_data_recv_ms; /* ages, as tcp_info has them */
	uint32_t unacked;			       /* segments */
	uint32_t retrans, total_retrans;
	uint32_t rtt_us, snd_cwnd;
	uint64_t bytes_acked, bytes_received; /* 0 where the kernel's tcp_info is older */
};

/*
 * Every TCP socket of both families (TIME_WAIT and closed ones left out), through cb; a
 * nonzero return of cb stops the walk. 0 or -errno.
 */
int sockdiag_each(int (*cb)(void *ctx, const struct sockdiag_sock *s), void *ctx);

/*
 * Pure: the inet_diag messages in buf[0..len) (one recv of a dump) through cb. Returns 1 when
 * the dump's end (NLMSG_DONE) is in it, 0 when more follow, -errno on NLMSG_ERROR.
 */
int sockdiag_parse(const void *buf, size_t len, int (*cb)(void *ctx, const struct sockdiag_sock *s),
		   void *ctx);

/*
 * Pure: s as a connection of process tgid at now (CLOCK_MONOTONIC ns): its last data each way
 * dated by tcp_info's ages, its start no later than either, its figures; flags NT_CONN_*.
 */
void sockdiag_to_conn(const struct sockdiag_sock *s, int tgid, uint64_t now, struct nt_conn *c);

#endif /* NT_SOCKDIAG_H */
