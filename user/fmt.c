// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include "fmt.h"

const char *fmt_count(uint64_t n, char *buf, size_t len)
{
	if (n < 10000)
		snprintf(buf, len, "%llu", (unsigned long long)n);
	else if (n < 1000000)
		snprintf(buf, len, "%lluk", (unsigned long long)(n / 1000));
	else if (n < 999950000ULL) /* what %.1f would round up to "1000.0M" is "1.0G" */
		snprintf(buf, len, "%.1fM", n / 1e6);
	else
		snprintf(buf, len, "%.1fG", n / 1e9);
	return buf;
}

const char *fmt_bytes(uint64_t n, char *buf, size_t len)
{
	static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = n;
	int i = 0;

	/* 1023.95 and up would print as "1024.0": that is the next unit's "1.0" */
	while (v >= 1023.95 && i < 4) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)n);
	else
		snprintf(buf, len, "%.1f %s", v, unit[i]);
	return buf;
}

const char *fmt_endpoint(const struct nt_tuple *t, int src, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	const void *addr = src ? t->saddr : t->daddr;
	unsigned int port = src ? t->sport : t->dport;

	if (t->family == AF_INET6) {
		inet_ntop(AF_INET6, addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, port);
	} else {
		inet_ntop(AF_INET, addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, port);
	}
	return buf;
}

const char *fmt_tuple(const struct nt_tuple *t, char *buf, size_t len)
{
	char s[64], d[64];

	snprintf(buf, len, "%s->%s", fmt_endpoint(t, 1, s, sizeof(s)),
		 fmt_endpoint(t, 0, d, sizeof(d)));
	return buf;
}

const char *fmt_tcp_state(unsigned int state)
{
	static const char *names[] = {
		"?",	     "ESTABLISHED", "SYN_SENT",	    "SYN_RECV",	     "FIN_WAIT1",
		"FIN_WAIT2", "TIME_WAIT",   "CLOSE",	    "CLOSE_WAIT",    "LAST_ACK",
		"LISTEN",    "CLOSING",	    "NEW_SYN_RECV", "BOUND_INACTIVE"};

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "?";
}

const char *fmt_syscall(long nr)
{
#ifdef __x86_64__
	switch (nr) {
	case 0:
		return "read";
	case 1:
		return "write";
	case 7:
		return "poll";
	case 19:
		return "readv";
	case 20:
		return "writev";
	case 23:
		return "select";
	case 24:
		return "sched_yield";
	case 34:
		return "pause";
	case 35:
		return "nanosleep";
	case 42:
		return "connect";
	case 43:
		return "accept";
	case 44:
		return "sendto";
	case 45:
		return "recvfrom";
	case 46:
		return "sendmsg";
	case 47:
		return "recvmsg";
	case 61:
		return "wait4";
	case 62:
		return "kill";
	case 128:
		return "rt_sigtimedwait";
	case 130:
		return "rt_sigsuspend";
	case 200:
		return "tkill";
	case 202:
		return "futex";
	case 230:
		return "clock_nanosleep";
	case 232:
		return "epoll_wait";
	case 234:
		return "tgkill";
	case 247:
		return "waitid";
	case 270:
		return "pselect6";
	case 271:
		return "ppoll";
	case 281:
		return "epoll_pwait";
	case 288:
		return "accept4";
	case 299:
		return "recvmmsg";
	case 307:
		return "sendmmsg";
	case 441:
		return "epoll_pwait2";
	}
#else
	(void)nr;
#endif
	return NULL;
}
