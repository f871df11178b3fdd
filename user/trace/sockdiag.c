// SPDX-License-Identifier: MIT
/*
 * inet_diag (NETLINK_SOCK_DIAG) for TCP: one dump per family, each socket with INET_DIAG_INFO
 * (struct tcp_info). The kernel fills tcp_info for every state but LISTEN's figures, and cuts
 * it to the size it knows: a shorter one leaves the newer fields 0.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <sys/socket.h>
#include "trace/sockdiag.h"

#define SD_TCP_LISTEN	 10
#define SD_TCP_TIME_WAIT 6
#define SD_TCP_CLOSE	 7

static void sock_from_msg(const struct inet_diag_msg *m, unsigned int attrlen,
			  struct sockdiag_sock *s)
{
	struct rtattr *a = (struct rtattr *)(m + 1);

	memset(s, 0, sizeof(*s));
	s->t.family = m->idiag_family;
	s->t.sport = ntohs(m->id.idiag_sport);
	s->t.dport = ntohs(m->id.idiag_dport);
	memcpy(s->t.saddr, m->id.idiag_src, m->idiag_family == AF_INET ? 4 : 16);
	memcpy(s->t.daddr, m->id.idiag_dst, m->idiag_family == AF_INET ? 4 : 16);
	s->ino = m->idiag_inode;
	s->state = m->idiag_state;
	s->rqueue = m->idiag_rqueue;
	s->wqueue = m->idiag_wqueue;
	for (; RTA_OK(a, attrlen); a = RTA_NEXT(a, attrlen)) {
		struct tcp_info ti = {0};
		size_t n = RTA_PAYLOAD(a);

		if (a->rta_type != INET_DIAG_INFO)
			continue;
		memcpy(&ti, RTA_DATA(a), n < sizeof(ti) ? n : sizeof(ti));
		s->have_info = true;
		s->last_data_sent_ms = ti.tcpi_last_data_sent;
		s->last_data_recv_ms = ti.tcpi_last_data_recv;
		s->unacked = ti.tcpi_unacked;
		s->retrans = ti.tcpi_retransmits;
		s->total_retrans = ti.tcpi_total_retrans;
		s->rtt_us = ti.tcpi_rtt;
		s->snd_cwnd = ti.tcpi_snd_cwnd;
		s->bytes_acked = ti.tcpi_bytes_acked;
		s->bytes_received = ti.tcpi_bytes_received;
	}
}

/* NLMSG_OK, without its comparison of the u32 length with a signed one (clang warns of it) */
static bool msg_ok(const struct nlmsghdr *h, int n)
{
	return n >= (int)sizeof(*h) && h->nlmsg_len >= sizeof(*h) &&
	       h->nlmsg_len <= (unsigned int)n;
}

int sockdiag_parse(const void *buf, size_t len, int (*cb)(void *, const struct sockdiag_sock *),
		   void *ctx)
{
	const struct nlmsghdr *h = buf;
	int n = (int)len;

	for (; msg_ok(h, n); h = NLMSG_NEXT(h, n)) {
		const struct inet_diag_msg *m = NLMSG_DATA(h);
		struct sockdiag_sock s;

		if (h->nlmsg_type == NLMSG_DONE)
			return 1;
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);

			return h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error ? e->error
										    : -EPROTO;
		}
		if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
			continue;
		if (m->idiag_state == SD_TCP_TIME_WAIT || m->idiag_state == SD_TCP_CLOSE ||
		    !m->idiag_inode)
			continue;
		sock_from_msg(m, h->nlmsg_len - NLMSG_LENGTH(sizeof(*m)), &s);
		if (cb(ctx, &s))
			return 1;
	}
	return 0;
}

static int dump_family(int fd, int family, int (*cb)(void *, const struct sockdiag_sock *),
		       void *ctx)
{
	struct {
		struct nlmsghdr h;
		struct inet_diag_req_v2 r;
	} req = {
		.h = {.nlmsg_len = sizeof(req),
		      .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		      .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
		.r = {.sdiag_family = family,
		      .sdiag_protocol = IPPROTO_TCP,
		      .idiag_ext = 1 << (INET_DIAG_INFO - 1),
		      .idiag_states = ~(1u << SD_TCP_TIME_WAIT)},
	};
	static char buf[32768] __attribute__((aligned(NLMSG_ALIGNTO)));
	int rc = 0;

	if (send(fd, &req, sizeof(req), 0) != (ssize_t)sizeof(req))
		return -errno;
	while (rc == 0) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPROTO;
		rc = sockdiag_parse(buf, n, cb, ctx);
	}
	return rc < 0 ? rc : 0;
}

int sockdiag_each(int (*cb)(void *, const struct sockdiag_sock *), void *ctx)
{
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG), rc;

	if (fd < 0)
		return -errno;
	rc = dump_family(fd, AF_INET, cb, ctx);
	/* a host without IPv6 answers ENOENT or EAFNOSUPPORT for the second family: none */
	if (!rc) {
		rc = dump_family(fd, AF_INET6, cb, ctx);
		if (rc == -ENOENT || rc == -EAFNOSUPPORT)
			rc = 0;
	}
	close(fd);
	return rc;
}

static uint64_t age_to_ns(uint64_t now, uint32_t ms)
{
	uint64_t d = (uint64_t)ms * 1000000ULL;

	return d < now ? now - d : 1;
}

void sockdiag_to_conn(const struct sockdiag_sock *s, int tgid, uint64_t now, struct nt_conn *c)
{
	uint32_t oldest;

	memset(c, 0, sizeof(*c));
	c->t = s->t;
	c->tgid = tgid;
	c->tid = tgid;
	c->ino = s->ino;
	c->state = s->state;
	c->recv_q = s->rqueue;
	c->send_q = s->wqueue;
	c->figures_ns = now;
	if (s->state == SD_TCP_LISTEN) {
		c->flags = NT_CONN_LISTENER;
		c->first_ns = c->state_ns = now;
		return;
	}
	if (!s->have_info) {
		c->first_ns = c->state_ns = now;
		return;
	}
	/*
	 * tcp_info's ages run from the last data segment each way (lsndtime, and lrcvtime, which
	 * the connection's establishment sets first): the connection is at least as old as the
	 * older, and its last byte progress each way is its own age
	 */
	oldest = s->last_data_sent_ms > s->last_data_recv_ms ? s->last_data_sent_ms
							     : s->last_data_recv_ms;
	c->first_ns = c->state_ns = age_to_ns(now, oldest);
	if (s->bytes_acked > 1 || s->wqueue)
		c->last_send_ns = age_to_ns(now, s->last_data_sent_ms);
	if (s->bytes_received > 0 || s->rqueue)
		c->last_recv_ns = age_to_ns(now, s->last_data_recv_ms);
	/* bytes_acked counts the SYN's sequence number too (RFC 4898 tcpEStatsAppHCThruOctetsAcked) */
	c->bytes_sent = s->bytes_acked > 0 ? s->bytes_acked - 1 : 0;
	c->bytes_recv = s->bytes_received;
	c->retrans = s->total_retrans;
	c->srtt_us = s->rtt_us;
	c->snd_cwnd = s->snd_cwnd;
}
