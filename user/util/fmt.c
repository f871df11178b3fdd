// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include "util/fmt.h"

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
	case 219:
		return "restart_syscall";
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

static int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return x < y ? -1 : x > y;
}

const char *fmt_ranges(int *v, int n, char *buf, size_t len)
{
	size_t off = 0;

	if (!len)
		return buf;
	buf[0] = '\0';
	if (n > 1)
		qsort(v, n, sizeof(*v), int_cmp);
	for (int i = 0; i < n;) {
		int j = i;
		char part[32];
		size_t pl;

		while (j + 1 < n && v[j + 1] <= v[j] + 1)
			j++; /* a run (duplicates fold in) */
		/* two in a row read better as "0,1" than "0-1" */
		if (v[j] == v[i])
			pl = snprintf(part, sizeof(part), "%s%d", off ? "," : "", v[i]);
		else if (v[j] == v[i] + 1)
			pl = snprintf(part, sizeof(part), "%s%d,%d", off ? "," : "", v[i], v[j]);
		else
			pl = snprintf(part, sizeof(part), "%s%d-%d", off ? "," : "", v[i], v[j]);
		/* room for this part and, if more follow, for ",..." */
		if (off + pl + (j + 1 < n ? 4 : 0) >= len) {
			if (off + 4 < len)
				snprintf(buf + off, len - off, "%s...", off ? "," : "");
			break;
		}
		memcpy(buf + off, part, pl + 1);
		off += pl;
		i = j + 1;
	}
	return buf;
}

/* length of the valid UTF-8 character at s (1-4), negated for a C1 control, 0 if invalid */
static int utf8_len(const unsigned char *s)
{
	int n, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond U+10FFFF, and the C1 controls U+0080..U+009F */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return cp <= 0x9f ? -n : n;
}

const char *fmt_safe(const char *s, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t o = 0;

	if (!len)
		return buf;
	while (*p) {
		int n = utf8_len(p);

		if (n <= 1) {
			unsigned char c = *p;

			if (o + 1 >= len)
				break;
			buf[o++] = c == '\t' ? ' ' : (n == 1 && c >= 0x20 && c != 0x7f ? c : '?');
			/* a C1 control is one character, one '?' */
			p += n < 0 ? -n : 1;
			continue;
		}
		if (o + n >= len)
			break;
		memcpy(buf + o, p, n);
		o += n;
		p += n;
	}
	buf[o] = '\0';
	return buf;
}
