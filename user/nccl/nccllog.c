// SPDX-License-Identifier: MIT
/*
 * NCCL's log lines, as NVIDIA/nccl formats them at v2.18.6-1 ... v2.30.7-1 (each format's source
 * is named where it is parsed). Hostile input is the rule here: the job writes the file, so a
 * line is copied into a bounded buffer first, numbers are read digit by digit with their range
 * checked, and text leaves as printable ASCII only (escape sequences would reach the terminal).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "nccl/nccllog.h"

static const char *const kind_names[NLOG_KIND_MAX] = {
	"none",	 "version", "init",  "channel", "ring", "rings_connected", "gdr", "env",
	"iface", "network", "no_ib", "warn",	"attn",
};

const char *nccllog_kind_name(enum nccllog_kind k)
{
	return k >= 0 && k < NLOG_KIND_MAX ? kind_names[k] : "?";
}

/* ---------------------------------------------------------------- scanning */

/* at most n bytes of s into out (len > 0), printable ASCII only: anything else becomes '?' */
static void copy_text(char *out, size_t len, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n && s[i] && i + 1 < len; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	out[i] = '\0';
}

static bool lit(const char **p, const char *s)
{
	size_t n = strlen(s);

	if (strncmp(*p, s, n))
		return false;
	*p += n;
	return true;
}

/* a decimal integer in [lo, hi]; at most 10 digits, so nothing overflows */
static bool num(const char **p, long lo, long hi, int *out)
{
	const char *s = *p;
	long v = 0;
	bool neg = *s == '-';
	int digits = 0;

	if (neg)
		s++;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (++digits > 10)
			return false;
		v = v * 10 + (*s - '0');
	}
	if (!digits)
		return false;
	v = neg ? -v : v;
	if (v < lo || v > hi)
		return false;
	*out = (int)v;
	*p = s;
	return true;
}

/* hexadecimal, with or without 0x; at most 16 digits */
static bool hexnum(const char **p, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (;; s++) {
		int d = *s >= '0' && *s <= '9'	 ? *s - '0'
			: *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
			: *s >= 'A' && *s <= 'F' ? *s - 'A' + 10
						 : -1;

		if (d < 0)
			break;
		if (++digits > 16)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	if (!digits)
		return false;
	*out = v;
	*p = s;
	return true;
}

/* "%p": 0x... or glibc's "(nil)" */
static bool ptrval(const char **p, uint64_t *out)
{
	if (lit(p, "(nil)")) {
		*out = 0;
		return true;
	}
	return (*p)[0] == '0' && (*p)[1] == 'x' && hexnum(p, out);
}

/* a whole token (up to a space or the end) as a number */
static bool tok_num(const char *t, long lo, long hi, int *out)
{
	return num(&t, lo, hi, out) && !*t;
}

static bool tok_hex(const char *t, uint64_t *out)
{
	return hexnum(&t, out) && !*t;
}

static bool tok_ptr(const char *t, uint64_t *out)
{
	return ptrval(&t, out) && !*t;
}

/* the word at *p up to one of stop (or the end), into out; advances past it */
static size_t word(const char **p, const char *stop, char *out, size_t len)
{
	size_t n = strcspn(*p, stop);

	if (out)
		copy_text(out, len, *p, n);
	*p += n;
	return n;
}

#define MAX_RANK   (1 << 24)
#define MAX_DEV	   65535
#define MAX_TOKENS 48

/* split s (modified) at spaces: up to max tokens; false if there are more */
static bool tokens(char *s, char **t, int max, int *n)
{
	*n = 0;
	for (char *save = NULL, *w = strtok_r(s, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		if (*n == max)
			return false;
		t[(*n)++] = w;
	}
	return true;
}

/* ---------------------------------------------------------------- the prefix */

/*
 * "host:pid:tid" (src/debug.cc: "%s:%d:%d "): pid and tid from the right, as the host name
 * could hold anything.
 */
static bool host_pid_tid(char *t, struct nccllog_fact *f)
{
	char *c2 = strrchr(t, ':'), *c1;

	if (!c2)
		return false;
	*c2 = '\0';
	c1 = strrchr(t, ':');
	if (!c1 || c1 == t || !tok_num(c2 + 1, 1, 1 << 30, &f->tid))
		return false;
	*c1 = '\0';
	if (!tok_num(c1 + 1, 1, 1 << 30, &f->pid))
		return false;
	copy_text(f->host, sizeof(f->host), t, strlen(t));
	return true;
}

/* "[%d]" */
static bool dev_tok(const char *t, int *dev)
{
	size_t n = strlen(t);
	char b[16];

	if (n < 3 || n >= sizeof(b) || t[0] != '[' || t[n - 1] != ']')
		return false;
	memcpy(b, t + 1, n - 2);
	b[n - 2] = '\0';
	return tok_num(b, -1, MAX_DEV, dev);
}

/*
 * What comes before " NCCL INFO ", " NCCL WARN " or " NCCL ATTN ": [timestamp] host:pid:tid
 * [dev] (and for a WARN or ATTN, file:line, and from 2.30 the function: "file:line (func)",
 * debug.cc at v2.30.7-1, where it has one). The timestamp's format is the user's
 * (NCCL_DEBUG_TIMESTAMP_FORMAT), so the tokens are taken from the right and whatever precedes
 * them is ignored.
 */
static bool prefix(char *left, bool warn, struct nccllog_fact *f, char *where, size_t wlen)
{
	char *t[MAX_TOKENS];
	int n, i;

	if (!tokens(left, t, MAX_TOKENS, &n))
		return false;
	i = n - 1;
	if (warn && i >= 0 && t[i][0] == '(') {
		/* __func__: a name, never empty (NCCL leaves "()" out then) */
		if (strlen(t[i]) < 3 || t[i][strlen(t[i]) - 1] != ')')
			return false;
		i--;
	}
	if (warn) {
		if (i < 0 || !strchr(t[i], ':'))
			return false;
		copy_text(where, wlen, t[i], strlen(t[i]));
		i--;
	}
	return i >= 1 && dev_tok(t[i], &f->dev) && host_pid_tid(t[i - 1], f);
}

/* ---------------------------------------------------------------- Init START / COMPLETE */

static bool ident(const char *t)
{
	if (!((*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z') || *t == '_'))
		return false;
	for (; *t; t++)
		if (!((*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z') ||
		      (*t >= '0' && *t <= '9') || *t == '_'))
			return false;
	return true;
}

/*
 * src/init.cc: "comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init
 * START" (2.18-2.20); "ncclCommInitRank comm ..." and "ncclCommSplit comm ... parent %p color %d
 * key %d commId ..." (2.21-2.22); "%s comm ..." with the API's name, a split's "parent %p
 * [splitCount|childCount %d] color %d key %d- Init START" without a commId (2.23+); "[Rank %d]
 * %s comm ..." (2.29+). Read as key-value pairs, so an added pair does not break it.
 */
static bool parse_init(char *m, struct nccllog_init *in)
{
	char *t[MAX_TOKENS];
	int n, i = 0, last, dummy;
	bool has_comm = false, has_rank = false, has_nranks = false;

	memset(in, 0, sizeof(*in));
	in->cuda_dev = in->nvml_dev = in->color = in->key = in->split_count = -1;
	if (!tokens(m, t, MAX_TOKENS, &n) || n < 8)
		return false;
	if (strcmp(t[n - 2], "Init") || (strcmp(t[n - 1], "START") && strcmp(t[n - 1], "COMPLETE")))
		return false;
	in->complete = !strcmp(t[n - 1], "COMPLETE");
	last = n - 2;
	/* "key %d- Init START" glues the dash to the number; "... - Init COMPLETE" does not */
	if (!strcmp(t[last - 1], "-"))
		last--;
	else if (t[last - 1][strlen(t[last - 1]) - 1] == '-')
		t[last - 1][strlen(t[last - 1]) - 1] = '\0';
	else
		return false;
	if (!strcmp(t[0], "[Rank") && n > 2 && strlen(t[1]) > 1 && t[1][strlen(t[1]) - 1] == ']') {
		t[1][strlen(t[1]) - 1] = '\0';
		if (!tok_num(t[1], 0, MAX_RANK, &dummy))
			return false;
		i = 2;
	}
	if (i < last && strcmp(t[i], "comm")) {
		if (!ident(t[i]))
			return false;
		copy_text(in->api, sizeof(in->api), t[i], strlen(t[i]));
		i++;
	}
	for (; i + 1 < last; i += 2) {
		const char *k = t[i], *v = t[i + 1];
		bool ok = true;

		if (!strcmp(k, "comm"))
			ok = has_comm = tok_ptr(v, &in->comm);
		else if (!strcmp(k, "rank"))
			ok = has_rank = tok_num(v, 0, MAX_RANK - 1, &in->rank);
		else if (!strcmp(k, "nranks"))
			ok = has_nranks = tok_num(v, 1, MAX_RANK, &in->nranks);
		else if (!strcmp(k, "cudaDev"))
			ok = tok_num(v, -1, MAX_DEV, &in->cuda_dev);
		else if (!strcmp(k, "nvmlDev"))
			ok = tok_num(v, -1, MAX_DEV, &in->nvml_dev);
		else if (!strcmp(k, "busId"))
			ok = tok_hex(v, &in->bus_id);
		else if (!strcmp(k, "parent"))
			ok = in->split = tok_ptr(v, &in->parent);
		else if (!strcmp(k, "color"))
			ok = tok_num(v, -2147483647L - 1, 2147483647L, &in->color);
		else if (!strcmp(k, "key"))
			ok = tok_num(v, -2147483647L - 1, 2147483647L, &in->key);
		else if (!strcmp(k, "splitCount") || !strcmp(k, "childCount"))
			ok = tok_num(v, 0, 2147483647L, &in->split_count);
		else if (!strcmp(k, "commId"))
			ok = in->has_id = !strncmp(v, "0x", 2) && tok_hex(v, &in->id);
		if (!ok)
			return false;
	}
	return i == last && has_comm && has_rank && has_nranks && in->rank < in->nranks;
}

/* ---------------------------------------------------------------- Channel lines */

/* "%d[%d]" */
static bool rank_dev(const char **p, int *rank, int *dev)
{
	return num(p, 0, MAX_RANK - 1, rank) && lit(p, "[") && num(p, -1, MAX_DEV, dev) &&
	       lit(p, "]");
}

/*
 * The transport after " via " (transport/p2p.cc, shm.cc, net.cc): "P2P/direct pointer[/read]",
 * "P2P/IPC[/read][/CE]", "P2P/CUMEM..." (2.18-2.19) or "P2P/CUMEM|MNNVL..." (2.20+),
 * "P2P/indirect/%d[%d][/read]"; "SHM/%s/%s" (SHM/direct in 2.30); "NET/%s/%d[(%d)][/GDRDMA]
 * [(PCI)][/Shared]", the net's name being the plugin's.
 */
static void transport(const char *v, struct nccllog_chan *c)
{
	copy_text(c->transport, sizeof(c->transport), v, strlen(v));
	c->p2p = !strncmp(v, "P2P/", 4);
	c->shm = !strncmp(v, "SHM/", 4);
	c->net = !strncmp(v, "NET/", 4);
	c->proxy_rank = -1;
	if (c->net) {
		const char *p = v + 4;
		int dev, proxy;

		word(&p, "/", NULL, 0);
		if (lit(&p, "/") && num(&p, 0, MAX_DEV, &dev) && lit(&p, "(") &&
		    num(&p, 0, MAX_RANK - 1, &proxy) && lit(&p, ")"))
			c->proxy_rank = proxy;
		c->gdrdma = strstr(p, "/GDRDMA") != NULL;
	}
}

/* After "Channel %02d[/%d] : ": "%d[%d] -> %d[%d] [[send]|[receive]] via TRANSPORT". */
static bool parse_conn(const char *p, struct nccllog_chan *c)
{
	if (!rank_dev(&p, &c->from, &c->from_dev) || !lit(&p, " -> ") ||
	    !rank_dev(&p, &c->to, &c->to_dev))
		return false;
	c->side = lit(&p, " [send]")	  ? SNAP_LOG_SEND
		  : lit(&p, " [receive]") ? SNAP_LOG_RECV
					  : SNAP_LOG_SENDER;
	if (!lit(&p, " via ") || !*p)
		return false;
	transport(p, c);
	return true;
}

/*
 * graph/rings.cc, rank 0 only: "Channel %02d/%02d :" and the ranks, " %d" each (2.23+) or " %3d"
 * padded (2.18-2.22), cut with "..." past 128 characters.
 */
static bool parse_ring(char *p, struct nccllog_ring *r)
{
	char *t[MAX_TOKENS];
	int n;

	if (!tokens(p, t, MAX_TOKENS, &n)) {
		n = MAX_TOKENS;
		r->more = true;
	}
	for (int i = 0; i < n; i++) {
		int v;

		if (i == n - 1 && !strcmp(t[i], "...")) {
			r->more = true;
			break;
		}
		if (!tok_num(t[i], 0, MAX_RANK - 1, &v))
			return false;
		if (r->n < NLOG_RING_MAX)
			r->ranks[r->n] = v;
		else
			r->more = true;
		r->n++;
	}
	return r->n > 0;
}

static enum nccllog_kind parse_channel(char *m, struct nccllog_fact *f)
{
	const char *p = m + strlen("Channel ");
	int ch, sub = -1;
	bool slash;

	if (!num(&p, 0, 1023, &ch))
		return NLOG_NONE;
	slash = lit(&p, "/");
	if (slash && !num(&p, 0, 1023, &sub))
		return NLOG_NONE;
	if (!lit(&p, " :"))
		return NLOG_NONE;
	memset(&f->u.chan, 0, sizeof(f->u.chan));
	f->u.chan.channel = ch;
	f->u.chan.conn_index = sub;
	if (*p == ' ' && parse_conn(p + 1, &f->u.chan))
		return NLOG_CHANNEL;
	if (!slash)
		return NLOG_NONE;
	memset(&f->u.ring, 0, sizeof(f->u.ring));
	f->u.ring.channel = ch;
	f->u.ring.nrings = sub;
	return parse_ring((char *)p, &f->u.ring) ? NLOG_RING : NLOG_NONE;
}

/* ---------------------------------------------------------------- GDR, settings, interfaces */

/*
 * graph/paths.cc: "GPU Direct RDMA Disabled for GPU %lx / HCA %d (distance %d > %d)" and
 * "... Enabled for GPU ... (distance %d <= %d), read %d" (2.18; from 2.21 HCA %lx, from 2.24
 * GPU %d, its rank; " mode %s" from 2.26; TRACE only from 2.30).
 */
static bool parse_gdr(const char *p, struct snap_log_gdr *g)
{
	memset(g, 0, sizeof(*g));
	g->read = -1;
	if (lit(&p, "Enabled"))
		g->enabled = true;
	else if (!lit(&p, "Disabled"))
		return false;
	if (!lit(&p, " for GPU ") || !word(&p, " ", g->gpu, sizeof(g->gpu)) ||
	    !lit(&p, " / HCA ") || !word(&p, " ", g->hca, sizeof(g->hca)) ||
	    !lit(&p, " (distance ") || !num(&p, 0, 64, &g->distance))
		return false;
	if (!(g->enabled ? lit(&p, " <= ") : lit(&p, " > ")) || !num(&p, -2, 64, &g->level) ||
	    !lit(&p, ")"))
		return false;
	if (g->enabled && lit(&p, ", read "))
		num(&p, 0, 1, &g->read);
	return true;
}

/* graph/topo.cc: "NET/%s : GPU Direct RDMA %s for HCA %d '%s'": the HCA supports it or not */
static bool parse_gdr_hca(const char *p, struct snap_log_gdr *g)
{
	int idx;

	memset(g, 0, sizeof(*g));
	g->distance = g->level = g->read = -1;
	p = strstr(p, " : GPU Direct RDMA ");
	if (!p)
		return false;
	p += strlen(" : GPU Direct RDMA ");
	if (lit(&p, "Enabled"))
		g->enabled = true;
	else if (!lit(&p, "Disabled"))
		return false;
	if (!lit(&p, " for HCA ") || !num(&p, 0, MAX_DEV, &idx) || !lit(&p, " '"))
		return false;
	word(&p, "'", g->hca, sizeof(g->hca));
	return lit(&p, "'");
}

static bool all_digits(const char *s, size_t n)
{
	size_t i = s[0] == '-';

	if (i >= n)
		return false;
	for (; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/*
 * "%s set by environment to %s" (ncclGetLevel in graph/paths.cc, socket.cc, bootstrap.cc...),
 * "%s set by environment to %lld." (integer parameters, misc/param.cc: the '.' is not part of
 * the value), and "NCCL_SOCKET_IFNAME set to %s" and alike (socket.cc, net_ib.cc).
 */
static bool parse_env(const char *m, struct snap_log_env *e)
{
	const char *p = m, *v;
	size_t vn;

	if (strncmp(p, "NCCL_", 5))
		return false;
	if (strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") >= sizeof(e->name))
		return false;
	word(&p, " ", e->name, sizeof(e->name));
	if (strspn(e->name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != strlen(e->name))
		return false;
	if (!lit(&p, " set by environment to ") && !lit(&p, " set to "))
		return false;
	v = p;
	vn = strlen(v);
	if (vn > 1 && v[vn - 1] == '.' && all_digits(v, vn - 1))
		vn--;
	copy_text(e->value, sizeof(e->value), v, vn);
	return true;
}

/*
 * "name:addr" of ncclSocketToString ("10.0.0.1<0>", "fe80::1%eth0<0>"): at the first ':' whose
 * rest is an address, as names may hold ':' (eth0:1) and IPv6 addresses do; else at the first.
 */
static void name_addr(const char *item, size_t n, struct snap_log_if *v)
{
	char b[128];
	size_t at = 0;

	copy_text(b, sizeof(b), item, n);
	for (char *c = strchr(b, ':'); c && !at; c = strchr(c + 1, ':')) {
		char a[INET6_ADDRSTRLEN + 1], bin[16];
		size_t an = strcspn(c + 1, "<%");

		if (an >= sizeof(a))
			continue;
		memcpy(a, c + 1, an);
		a[an] = '\0';
		if (inet_pton(AF_INET, a, bin) == 1 || inet_pton(AF_INET6, a, bin) == 1)
			at = (size_t)(c - b);
	}
	if (!at)
		at = strcspn(b, ":");
	copy_text(v->name, sizeof(v->name), b, at);
	copy_text(v->addr, sizeof(v->addr), b[at] ? b + at + 1 : "", sizeof(v->addr));
}

static struct snap_log_if *new_if(struct nccllog_fact *f, const char *what, int index)
{
	struct snap_log_if *v;

	if (f->u.iface.n == NLOG_MAX_IFS)
		return NULL;
	v = &f->u.iface.v[f->u.iface.n++];
	memset(v, 0, sizeof(*v));
	snprintf(v->what, sizeof(v->what), "%s", what);
	v->index = index;
	return v;
}

/*
 * " [%d]name:addr" items (net_socket.cc "NET/Socket : Using%s"; net_ib.cc "NET/IB : Using%s %s;
 * OOB %s:%s" with " [%d]%s:%d/%s" items: device, port, link layer; an optional "[RO]").
 */
static bool parse_items(const char *p, struct nccllog_fact *f, const char *what)
{
	while (lit(&p, " [")) {
		struct snap_log_if *v;
		int idx;
		size_t n;

		if (!num(&p, 0, 1023, &idx) || !lit(&p, "]"))
			break;
		n = strcspn(p, " ;");
		if (!n)
			return false;
		v = new_if(f, what, idx);
		if (v)
			name_addr(p, n, v);
		p += n;
	}
	if (!strcmp(what, "NET/IB")) {
		const char *oob = strstr(p, "; OOB ");
		struct snap_log_if *v;

		if (!oob)
			return false;
		v = new_if(f, "IB OOB", -1);
		if (v)
			name_addr(oob + 6, strcspn(oob + 6, " "), v);
	}
	return f->u.iface.n > 0;
}

static enum nccllog_kind parse_iface(const char *m, struct nccllog_fact *f)
{
	const char *p = m;

	memset(&f->u.iface, 0, sizeof(f->u.iface));
	if (lit(&p, "NET/Socket : Using"))
		return parse_items(p, f, "NET/Socket") ? NLOG_IFACE : NLOG_NONE;
	if (lit(&p, "NET/IB : Using"))
		return parse_items(p, f, "NET/IB") ? NLOG_IFACE : NLOG_NONE;
	/* bootstrap.cc: "Bootstrap : Using %s:%s" (2.18-2.23), "Bootstrap: Using %s:%s" (2.24+) */
	if (lit(&p, "Bootstrap : Using ") || lit(&p, "Bootstrap: Using ")) {
		struct snap_log_if *v = new_if(f, "Bootstrap", -1);

		if (!*p || strchr(p, ' '))
			return NLOG_NONE;
		name_addr(p, strlen(p), v);
		return NLOG_IFACE;
	}
	return NLOG_NONE;
}

/* ---------------------------------------------------------------- the message */

static enum nccllog_kind message(char *m, struct nccllog_fact *f)
{
	const char *p = m;

	if (lit(&p, "NCCL version ")) {
		if (!word(&p, " ", f->u.name, sizeof(f->u.name)))
			return NLOG_NONE;
		return NLOG_VERSION;
	}
	if (!strncmp(m, "Channel ", 8))
		return parse_channel(m, f);
	if (lit(&p, "Connected all rings")) {
		f->u.rings.pxn = f->u.rings.gdr = -1;
		if (lit(&p, ", use ring PXN ") && num(&p, 0, 1, &f->u.rings.pxn) &&
		    lit(&p, " GDR "))
			num(&p, 0, 1, &f->u.rings.gdr);
		return NLOG_RINGS;
	}
	if (lit(&p, "GPU Direct RDMA "))
		return parse_gdr(p, &f->u.gdr) ? NLOG_GDR : NLOG_NONE;
	if (!strncmp(m, "NET/", 4) && strstr(m, " : GPU Direct RDMA "))
		return parse_gdr_hca(m, &f->u.gdr) ? NLOG_GDR : NLOG_NONE;
	if (!strncmp(m, "NET/IB : No device found", 24))
		return NLOG_NO_IB;
	if (lit(&p, "Using network ")) {
		if (!*p || strchr(p, ' '))
			return NLOG_NONE;
		copy_text(f->u.name, sizeof(f->u.name), p, strlen(p));
		return NLOG_NETWORK;
	}
	if (parse_env(m, &f->u.env))
		return NLOG_ENV;
	if (strstr(m, "Init START") || strstr(m, "Init COMPLETE"))
		return parse_init(m, &f->u.init) ? NLOG_INIT : NLOG_NONE;
	return parse_iface(m, f);
}

enum nccllog_kind nccllog_parse(const char *line, size_t len, struct nccllog_fact *out)
{
	char buf[NLOG_LINE_MAX + 1], *info, *warn, *attn, *mark, *bare;
	bool located;

	memset(out, 0, sizeof(*out));
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	/* NCCL never writes a NUL, nor lines this long: not its */
	if (!len || len > NLOG_LINE_MAX || memchr(line, '\0', len))
		return NLOG_NONE;
	memcpy(buf, line, len);
	buf[len] = '\0';
	info = strstr(buf, " NCCL INFO ");
	warn = strstr(buf, " NCCL WARN ");
	/*
	 * 2.32's level between WARN and INFO, with a WARN's location (its src/debug.cc, read in a
	 * copy: reference/nccl-versions.md §6; no 2.32 tag in reach)
	 */
	attn = strstr(buf, " NCCL ATTN ");
	mark = info;
	if (warn && (!mark || warn < mark))
		mark = warn;
	if (attn && (!mark || attn < mark))
		mark = attn;
	located = mark && mark != info;
	if (!mark) {
		/* NCCL_DEBUG=VERSION or WARN: "NCCL version ..." alone (maybe after a timestamp) */
		bare = !strncmp(buf, "NCCL version ", 13) ? buf : strstr(buf, "] NCCL version ");
		if (!bare)
			return NLOG_NONE;
		if (bare != buf)
			bare += 2;
		out->kind = message(bare, out) == NLOG_VERSION ? NLOG_VERSION : NLOG_NONE;
		return out->kind;
	}
	*mark = '\0';
	if (!prefix(buf, located, out, out->u.warn.where, sizeof(out->u.warn.where))) {
		memset(out, 0, sizeof(*out));
		return NLOG_NONE;
	}
	out->kind = mark == warn ? NLOG_WARN : mark == attn ? NLOG_ATTN : NLOG_NONE;
	mark += strlen(" NCCL INFO ");
	if (located) {
		copy_text(out->u.warn.text, sizeof(out->u.warn.text), mark, strlen(mark));
	} else {
		out->kind = message(mark, out);
	}
	if (out->kind == NLOG_NONE)
		memset(out, 0, sizeof(*out));
	return out->kind;
}
