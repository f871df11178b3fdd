// SPDX-License-Identifier: MIT
/*
 * What NCCL's log lines (nccllog.c parses them) make of a process: its summary for the
 * snapshot (snap_nccl_log), the facts as dump records, and the settings that turn the log on
 * (the file name's %h and %p, the levels and subsystems that log at init only).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <jansson.h>
#include "nccl/nccllog.h"

/* ---------------------------------------------------------------- a process's summary */

static int init_fact(struct snap_nccl_log *l, const struct nccllog_init *in, uint64_t now)
{
	struct snap_log_comm *c = NULL;

	/* COMPLETE closes the newest START of that pointer (NCCL may reuse a freed one) */
	for (int i = l->ncomm - 1; i >= 0 && in->complete && !c; i--)
		if (l->comm[i].ptr == in->comm && !l->comm[i].complete)
			c = &l->comm[i];
	if (!c) {
		if (l->ncomm == SNAP_LOG_MAX_COMMS) {
			l->dropped++;
			return -1;
		}
		c = &l->comm[l->ncomm++];
		memset(c, 0, sizeof(*c));
		c->pxn = c->gdr = -1;
		c->start_ns = now;
	}
	c->ptr = in->comm;
	c->id = in->has_id ? in->id : 0;
	c->parent = in->parent;
	c->bus_id = in->bus_id;
	c->rank = in->rank;
	c->nranks = in->nranks;
	c->cuda_dev = in->cuda_dev;
	c->nvml_dev = in->nvml_dev;
	c->color = in->color;
	c->key = in->key;
	c->split_count = in->split_count;
	snprintf(c->api, sizeof(c->api), "%s", in->api);
	/* from 2.26 commId is comm->commHash (reference/nccl-versions.md §4) */
	if (c->id && !c->hash) {
		int maj = 0, min = 0;

		if (sscanf(l->version, "%d.%d", &maj, &min) == 2 && (maj > 2 || min >= 26))
			c->hash = c->id;
	}
	if (in->complete) {
		c->complete = true;
		c->complete_ns = now;
	}
	return (int)(c - l->comm);
}

/* The newest communicator in which the logging rank has rank me and both ranks fit. */
static int comm_for(const struct snap_nccl_log *l, int me, int other)
{
	int any = -1;

	for (int i = l->ncomm - 1; i >= 0; i--) {
		const struct snap_log_comm *c = &l->comm[i];

		if (c->rank != me || other >= c->nranks)
			continue;
		if (!c->rings)
			return i;
		if (any < 0)
			any = i;
	}
	return any;
}

static int chan_fact(struct snap_nccl_log *l, const struct nccllog_chan *ch)
{
	int ci = ch->side == SNAP_LOG_RECV ? comm_for(l, ch->to, ch->from)
					   : comm_for(l, ch->from, ch->to);
	struct snap_log_path *p = NULL;

	for (int i = 0; i < l->npath && !p; i++) {
		struct snap_log_path *q = &l->path[i];

		if (q->comm == ci && q->from == ch->from && q->to == ch->to &&
		    q->side == ch->side && !strcmp(q->transport, ch->transport))
			p = q;
	}
	if (!p) {
		if (l->npath == SNAP_LOG_MAX_PATHS) {
			l->dropped++;
			return ci;
		}
		p = &l->path[l->npath++];
		memset(p, 0, sizeof(*p));
		p->comm = ci;
		p->from = ch->from;
		p->to = ch->to;
		p->from_dev = ch->from_dev;
		p->to_dev = ch->to_dev;
		p->side = ch->side;
		p->conn_index = ch->conn_index;
		snprintf(p->transport, sizeof(p->transport), "%s", ch->transport);
		p->net = ch->net;
		p->p2p = ch->p2p;
		p->shm = ch->shm;
		p->gdrdma = ch->gdrdma;
		p->proxy_rank = ch->proxy_rank;
	}
	if (ch->channel < 64)
		p->channels |= 1ULL << ch->channel;
	return ci;
}

/* "Connected all rings" names no communicator: the newest one with channels and rings to go */
static int rings_fact(struct snap_nccl_log *l, int pxn, int gdr, uint64_t now)
{
	int ci = -1;

	for (int i = l->ncomm - 1; i >= 0 && ci < 0; i--)
		for (int k = 0; k < l->npath && ci < 0; k++)
			if (l->path[k].comm == i && !l->comm[i].rings)
				ci = i;
	for (int i = l->ncomm - 1; i >= 0 && ci < 0; i--)
		if (!l->comm[i].rings)
			ci = i;
	if (ci >= 0) {
		l->comm[ci].rings = true;
		l->comm[ci].pxn = pxn;
		l->comm[ci].gdr = gdr;
		l->comm[ci].rings_ns = now;
	}
	return ci;
}

static void env_fact(struct snap_nccl_log *l, const struct snap_log_env *e)
{
	for (int i = 0; i < l->nenv; i++)
		if (!strcmp(l->env[i].name, e->name)) {
			l->env[i] = *e;
			return;
		}
	if (l->nenv == SNAP_LOG_MAX_ENV)
		l->dropped++;
	else
		l->env[l->nenv++] = *e;
}

static void if_fact(struct snap_nccl_log *l, const struct snap_log_if *v)
{
	for (int i = 0; i < l->nifs; i++)
		if (!memcmp(&l->ifs[i], v, sizeof(*v)))
			return;
	if (l->nifs == SNAP_LOG_MAX_IFS)
		l->dropped++;
	else
		l->ifs[l->nifs++] = *v;
}

static void gdr_fact(struct snap_nccl_log *l, const struct snap_log_gdr *g)
{
	for (int i = 0; i < l->ngdr; i++)
		if (!memcmp(&l->gdr[i], g, sizeof(*g)))
			return;
	if (l->ngdr == SNAP_LOG_MAX_GDR)
		l->dropped++;
	else
		l->gdr[l->ngdr++] = *g;
}

int nccllog_apply(struct snap_nccl_log *l, const struct nccllog_fact *f, uint64_t now)
{
	int ci = -1;

	if (f->kind == NLOG_NONE)
		return -1;
	l->facts++;
	switch (f->kind) {
	case NLOG_VERSION:
		snprintf(l->version, sizeof(l->version), "%s", f->u.name);
		break;
	case NLOG_INIT:
		ci = init_fact(l, &f->u.init, now);
		break;
	case NLOG_CHANNEL:
		ci = chan_fact(l, &f->u.chan);
		break;
	case NLOG_RINGS:
		ci = rings_fact(l, f->u.rings.pxn, f->u.rings.gdr, now);
		break;
	case NLOG_GDR:
		gdr_fact(l, &f->u.gdr);
		break;
	case NLOG_ENV:
		env_fact(l, &f->u.env);
		break;
	case NLOG_IFACE:
		for (int i = 0; i < f->u.iface.n; i++)
			if_fact(l, &f->u.iface.v[i]);
		break;
	case NLOG_NETWORK:
		snprintf(l->network, sizeof(l->network), "%s", f->u.name);
		break;
	case NLOG_NO_IB:
		l->no_ib = true;
		break;
	case NLOG_WARN:
		snprintf(l->last_warn, sizeof(l->last_warn), "%s", f->u.warn.text);
		l->nwarn++;
		break;
	default:
		break;
	}
	return ci;
}

/* ---------------------------------------------------------------- dump records */

static json_t *hex(uint64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "0x%llx", (unsigned long long)v);
	return json_string(b);
}

static json_t *opt_int(int v)
{
	return v >= 0 ? json_integer(v) : json_null();
}

static void init_json(json_t *o, const struct nccllog_init *in)
{
	json_object_set_new(o, "event", json_string(in->complete ? "complete" : "start"));
	if (in->api[0])
		json_object_set_new(o, "api", json_string(in->api));
	json_object_set_new(o, "comm", hex(in->comm));
	json_object_set_new(o, "rank", json_integer(in->rank));
	json_object_set_new(o, "nranks", json_integer(in->nranks));
	json_object_set_new(o, "cuda_dev", opt_int(in->cuda_dev));
	json_object_set_new(o, "nvml_dev", opt_int(in->nvml_dev));
	json_object_set_new(o, "bus_id", hex(in->bus_id));
	if (in->has_id) {
		char b[24];

		/* the same spelling as the uprobes' comm_hash, which it equals from 2.26 */
		snprintf(b, sizeof(b), "%016llx", (unsigned long long)in->id);
		json_object_set_new(o, "comm_id", json_string(b));
	} else {
		json_object_set_new(o, "comm_id", json_null());
	}
	if (in->split) {
		json_object_set_new(o, "parent", hex(in->parent));
		json_object_set_new(o, "color", json_integer(in->color));
		json_object_set_new(o, "key", json_integer(in->key));
		json_object_set_new(o, "split_count", opt_int(in->split_count));
	}
}

static void chan_json(json_t *o, const struct nccllog_chan *c)
{
	static const char *const sides[] = {"sender", "send", "receive"};

	json_object_set_new(o, "channel", json_integer(c->channel));
	json_object_set_new(o, "conn_index", opt_int(c->conn_index));
	json_object_set_new(o, "from", json_integer(c->from));
	json_object_set_new(o, "from_dev", json_integer(c->from_dev));
	json_object_set_new(o, "to", json_integer(c->to));
	json_object_set_new(o, "to_dev", json_integer(c->to_dev));
	json_object_set_new(o, "side", json_string(sides[c->side]));
	json_object_set_new(o, "transport", json_string(c->transport));
	json_object_set_new(o, "kind",
			    json_string(c->net	 ? "NET"
					: c->p2p ? "P2P"
					: c->shm ? "SHM"
						 : "other"));
	json_object_set_new(o, "gdrdma", json_boolean(c->gdrdma));
	json_object_set_new(o, "proxy_rank", opt_int(c->proxy_rank));
}

static void iface_json(json_t *o, const struct nccllog_fact *f)
{
	json_t *a = json_array();

	for (int i = 0; i < f->u.iface.n; i++) {
		const struct snap_log_if *v = &f->u.iface.v[i];

		json_array_append_new(a, json_pack("{s:s,s:o,s:s,s:s}", "what", v->what, "index",
						   opt_int(v->index), "name", v->name, "addr",
						   v->addr));
	}
	json_object_set_new(o, "ifaces", a);
}

json_t *nccllog_fact_json(const struct nccllog_fact *f)
{
	json_t *o = json_object(), *a;

	json_object_set_new(o, "type", json_string("nccl_log"));
	json_object_set_new(o, "what", json_string(nccllog_kind_name(f->kind)));
	switch (f->kind) {
	case NLOG_VERSION:
		json_object_set_new(o, "version", json_string(f->u.name));
		break;
	case NLOG_NETWORK:
		json_object_set_new(o, "network", json_string(f->u.name));
		break;
	case NLOG_INIT:
		init_json(o, &f->u.init);
		break;
	case NLOG_CHANNEL:
		chan_json(o, &f->u.chan);
		break;
	case NLOG_RING:
		a = json_array();
		for (int i = 0; i < f->u.ring.n && i < NLOG_RING_MAX; i++)
			json_array_append_new(a, json_integer(f->u.ring.ranks[i]));
		json_object_set_new(o, "channel", json_integer(f->u.ring.channel));
		json_object_set_new(o, "nrings", json_integer(f->u.ring.nrings));
		json_object_set_new(o, "ranks", a);
		json_object_set_new(o, "truncated", json_boolean(f->u.ring.more));
		break;
	case NLOG_RINGS:
		json_object_set_new(o, "pxn", opt_int(f->u.rings.pxn));
		json_object_set_new(o, "gdr", opt_int(f->u.rings.gdr));
		break;
	case NLOG_GDR:
		json_object_set_new(o, "enabled", json_boolean(f->u.gdr.enabled));
		json_object_set_new(o, "gpu", json_string(f->u.gdr.gpu));
		json_object_set_new(o, "hca", json_string(f->u.gdr.hca));
		json_object_set_new(o, "distance", opt_int(f->u.gdr.distance));
		json_object_set_new(o, "level", opt_int(f->u.gdr.level));
		json_object_set_new(o, "read", opt_int(f->u.gdr.read));
		break;
	case NLOG_ENV:
		json_object_set_new(o, "name", json_string(f->u.env.name));
		json_object_set_new(o, "value", json_string(f->u.env.value));
		break;
	case NLOG_IFACE:
		iface_json(o, f);
		break;
	case NLOG_WARN:
	case NLOG_ATTN:
		json_object_set_new(o, "where", json_string(f->u.warn.where));
		json_object_set_new(o, "text", json_string(f->u.warn.text));
		break;
	default:
		break;
	}
	return o;
}

/* ---------------------------------------------------------------- turning it on */

bool nccllog_expand_path(const char *pattern, const char *host, int pid, char *out, size_t len)
{
	size_t o = 0, hl = strcspn(host, ".");

	for (const char *c = pattern; *c; c++) {
		char b[16];
		const char *add = b;
		size_t n;

		if (*c != '%' || !c[1]) {
			b[0] = *c;
			n = 1;
		} else if (*++c == '%') {
			b[0] = '%';
			n = 1;
		} else if (*c == 'h') {
			add = host;
			n = hl;
		} else if (*c == 'p') {
			n = (size_t)snprintf(b, sizeof(b), "%d", pid);
		} else {
			b[0] = '%';
			b[1] = *c;
			n = 2;
		}
		if (o + n >= len)
			return false;
		memcpy(out + o, add, n);
		o += n;
	}
	if (!len)
		return false;
	out[o] = '\0';
	return true;
}

/*
 * ATTN: 2.32's level (WARN and notices) opens it too; NCCL before 2.32 knows no ATTN, logs
 * nothing and opens no file, which is then never found
 */
bool nccllog_level_writes_file(const char *d)
{
	return d && (!strcasecmp(d, "WARN") || !strcasecmp(d, "ATTN") || !strcasecmp(d, "INFO") ||
		     !strcasecmp(d, "ABORT") || !strcasecmp(d, "TRACE"));
}

/*
 * What INIT, ENV, BOOTSTRAP and NET log at INFO, read in NVIDIA/nccl at v2.28.9-1 (and the same
 * files at v2.18.6-1, v2.21.5-1, v2.24.3-1, v2.30.7-1): INFO(NCCL_NET...) in transport/net.cc
 * is the Channel line of each new connection's setup, in net_ib.cc the devices at init and each
 * QP at connect, in net_socket.cc the interfaces at init, in misc/socket.cc connect and accept
 * retries, in proxy.cc a proxy connection's setup, in graph/paths.cc the GDR decision at each
 * connection's setup; INIT in enqueue.cc (kernels skipped, at init), group.cc and proxy.cc
 * (errors and thread starts); ENV each setting's first read (cached); BOOTSTRAP bootstrap's
 * init. None of it is on the per-collective path (ncclEnqueueCheck, ncclGroupEnd, the proxy's
 * progress): that is COLL, CALL, PROXY, TUNING and REG at INFO, and TRACE. A new peer of a
 * send/recv connects lazily, once, at run time. A list naming anything else, or inverting with
 * '^', may log per collective.
 */
bool nccllog_subsys_init_only(const char *subsys)
{
	static const char *const ok[] = {"INIT", "ENV", "BOOTSTRAP", "NET"};
	const char *p = subsys;

	if (!p || !*p || *p == '^')
		return false;
	while (*p) {
		size_t n = strcspn(p, ",");
		bool known = false;

		for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]) && !known; i++)
			known = n == strlen(ok[i]) && !strncasecmp(p, ok[i], n);
		if (!known && n)
			return false;
		p += n + (p[n] == ',');
	}
	return true;
}
