// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "model/snapfields.h"
#include "model/snapjson.h"

/* "198.18.0.1:45410" / "[fd00::1]:45410" */
static json_t *addr_json(const uint8_t *a, uint16_t port, int family)
{
	char ip[INET6_ADDRSTRLEN] = "?", buf[INET6_ADDRSTRLEN + 10];

	inet_ntop(family == AF_INET6 ? AF_INET6 : AF_INET, a, ip, sizeof(ip));
	snprintf(buf, sizeof(buf), family == AF_INET6 ? "[%s]:%u" : "%s:%u", ip, port);
	return json_string(buf);
}

static void addr_parse(const char *s, uint8_t *a, uint16_t *port, int family)
{
	char ip[INET6_ADDRSTRLEN + 2];
	const char *colon = s ? strrchr(s, ':') : NULL;
	size_t n;

	if (!colon)
		return;
	n = (size_t)(colon - s);
	if (family == AF_INET6 && n >= 2 && s[0] == '[')
		s++, n -= 2;
	if (n >= sizeof(ip))
		return;
	memcpy(ip, s, n);
	ip[n] = '\0';
	inet_pton(family == AF_INET6 ? AF_INET6 : AF_INET, ip, a);
	*port = (uint16_t)atoi(colon + 1);
}

static json_t *conn_json(const struct snap_conn *c)
{
	json_t *o = json_object();

	sf_put(o, c, sf_sconn, sf_sconn_n);
	sf_put(o, &c->c, sf_conn, sf_conn_n);
	json_object_set_new(o, "family", json_integer(c->c.t.family));
	json_object_set_new(o, "src", addr_json(c->c.t.saddr, c->c.t.sport, c->c.t.family));
	json_object_set_new(o, "dst", addr_json(c->c.t.daddr, c->c.t.dport, c->c.t.family));
	if (c->nccl_label)
		json_object_set_new(o, "nccl_label", json_string(c->nccl_label));
	return o;
}

/* n structs of size sz at base, each its fields */
static json_t *array_json(const void *base, size_t sz, int n, const struct sf *tab, int ntab)
{
	json_t *a = json_array();

	for (int i = 0; i < n; i++) {
		json_t *o = json_object();

		sf_put(o, (const char *)base + i * sz, tab, ntab);
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *log_json(const struct snap_nccl_log *l)
{
	json_t *o = json_object();

	sf_put(o, l, sf_log, sf_log_n);
	json_object_set_new(
		o, "comms",
		array_json(l->comm, sizeof(l->comm[0]), l->ncomm, sf_log_comm, sf_log_comm_n));
	json_object_set_new(
		o, "paths",
		array_json(l->path, sizeof(l->path[0]), l->npath, sf_log_path, sf_log_path_n));
	json_object_set_new(
		o, "gdr", array_json(l->gdr, sizeof(l->gdr[0]), l->ngdr, sf_log_gdr, sf_log_gdr_n));
	json_object_set_new(
		o, "env", array_json(l->env, sizeof(l->env[0]), l->nenv, sf_log_env, sf_log_env_n));
	json_object_set_new(o, "ifs",
			    array_json(l->ifs, sizeof(l->ifs[0]), l->nifs, sf_log_if, sf_log_if_n));
	return o;
}

static json_t *stacks_json(const struct snap_stack *st, int n)
{
	json_t *a = json_array();

	for (int i = 0; i < n; i++) {
		json_t *o = json_object(), *nf = json_array();

		sf_put(o, &st[i], sf_stack, sf_stack_n);
		json_object_set_new(o, "frames",
				    array_json(st[i].st.frames, sizeof(st[i].st.frames[0]),
					       st[i].st.nframes, sf_frame, sf_frame_n));
		for (int k = 0; k < st[i].nnccl; k++)
			json_array_append_new(nf, json_integer(st[i].nccl_frames[k]));
		json_object_set_new(o, "nccl_frames", nf);
		json_array_append_new(a, o);
	}
	return a;
}

static void opt_str(json_t *o, const char *key, const char *v)
{
	if (v)
		json_object_set_new(o, key, json_string(v));
}

static json_t *proc_json(const struct snap_proc *p)
{
	json_t *o = json_object(), *set = json_array();

	sf_put(o, p, sf_proc, sf_proc_n);
	opt_str(o, "host", p->host);
	if (p->host_pid)
		json_object_set_new(o, "host_pid", json_integer(p->host_pid));
	for (int i = 0; i < p->nset; i++)
		json_array_append_new(set,
				      json_pack("{s:s,s:s?,s:b}", "name", p->set[i].name, "value",
						p->set[i].value, "read", p->set[i].read));
	json_object_set_new(o, "settings", set);
	opt_str(o, "nccl_retry_addr", p->nccl_retry_addr);
	opt_str(o, "nccl_warning", p->nccl_warning);
	opt_str(o, "nccl_first_warning", p->nccl_first_warning);
	if (p->ib_err) {
		json_t *e = json_object();

		sf_put(e, p->ib_err, sf_ib_err, sf_ib_err_n);
		json_object_set_new(o, "ib_error", e);
	}
	if (p->gpu) {
		json_t *g = json_object();

		sf_put(g, p->gpu, sf_gpu, sf_gpu_n);
		json_object_set_new(o, "gpu", g);
	}
	if (p->ib) {
		json_t *ib = json_object();

		sf_put(ib, p->ib, sf_ib, sf_ib_n);
		json_object_set_new(
			ib, "qps",
			array_json(p->ib->qp, sizeof(p->ib->qp[0]), p->ib->nqp, sf_qp, sf_qp_n));
		json_object_set_new(o, "ib", ib);
	}
	if (p->nstacks)
		json_object_set_new(o, "stacks", stacks_json(p->stacks, p->nstacks));
	if (p->nccl_log)
		json_object_set_new(o, "nccl_log", log_json(p->nccl_log));
	return o;
}

json_t *snapjson_from_snapshot(const struct snapshot *s)
{
	json_t *o = json_object(), *procs = json_array(), *conns = json_array(),
	       *comms = json_array();

	sf_put(o, s, sf_snap, sf_snap_n);
	for (int i = 0; i < s->nprocs; i++)
		json_array_append_new(procs, proc_json(&s->procs[i]));
	for (int i = 0; i < s->nconns; i++)
		json_array_append_new(conns, conn_json(&s->conns[i]));
	for (int i = 0; i < s->ncomms; i++) {
		json_t *c = json_object(), *seq = json_array();

		sf_put(c, &s->comms[i], sf_comm, sf_comm_n);
		for (int f = 0; f < SNAP_NSEQ; f++)
			json_array_append_new(seq, json_integer((json_int_t)s->comms[i].seq[f]));
		json_object_set_new(c, "seq", seq);
		json_array_append_new(comms, c);
	}
	json_object_set_new(o, "procs", procs);
	json_object_set_new(o, "conns", conns);
	json_object_set_new(o, "comms", comms);
	return o;
}

/* --- reading back --- */

static int push(void ***v, int *n, int *cap, void *p)
{
	if (*n == *cap) {
		int nc = *cap ? *cap * 2 : 64;
		void **nv = realloc(*v, nc * sizeof(*nv));

		if (!nv)
			return -1;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = p;
	return 0;
}

void *snapstore_alloc(struct snapstore *st, size_t size)
{
	void *p = calloc(1, size ? size : 1);

	if (p && push(&st->blocks, &st->nblocks, &st->capblocks, p)) {
		free(p);
		return NULL;
	}
	return p;
}

const char *snapstore_str(struct snapstore *st, const char *s)
{
	char *c;

	if (!s)
		return NULL;
	c = strdup(s);
	if (c && push((void ***)&st->strs, &st->nstrs, &st->capstrs, c)) {
		free(c);
		return NULL;
	}
	return c;
}

void snapstore_free(struct snapstore *st)
{
	if (!st)
		return;
	if (st->indexed)
		snapshot_index_free(&st->ix);
	for (int i = 0; i < st->nstrs; i++)
		free(st->strs[i]);
	for (int i = 0; i < st->nblocks; i++)
		free(st->blocks[i]);
	free(st->strs);
	free(st->blocks);
	free(st);
}

/* an array member's elements (at most max) into base, each its fields; their count */
static int array_get(json_t *a, void *base, size_t sz, int max, const struct sf *tab, int ntab,
		     int64_t shift)
{
	int n = 0;
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v)
	{
		if (n == max)
			break;
		if (json_is_object(v))
			sf_get(v, (char *)base + n++ * sz, tab, ntab, shift);
	}
	return n;
}

static const char *get_str(struct snapstore *st, json_t *o, const char *key)
{
	return snapstore_str(st, json_string_value(json_object_get(o, key)));
}

static int proc_settings(struct snapstore *st, struct snap_proc *p, json_t *set)
{
	struct snap_setting *v;
	size_t i;
	json_t *e;

	p->nset = 0;
	if (!json_array_size(set))
		return 0;
	v = snapstore_alloc(st, json_array_size(set) * sizeof(*v));
	if (!v)
		return -1;
	json_array_foreach(set, i, e)
	{
		v[p->nset].name = get_str(st, e, "name");
		v[p->nset].value = get_str(st, e, "value");
		v[p->nset].read = json_is_true(json_object_get(e, "read"));
		if (v[p->nset].name)
			p->nset++;
	}
	p->set = v;
	return 0;
}

static int proc_stacks(struct snapstore *st, struct snap_proc *p, json_t *a, int64_t shift)
{
	struct snap_stack *v;
	size_t i;
	json_t *e;

	if (!json_array_size(a))
		return 0;
	v = snapstore_alloc(st, json_array_size(a) * sizeof(*v));
	if (!v)
		return -1;
	json_array_foreach(a, i, e)
	{
		struct snap_stack *s = &v[p->nstacks++];
		size_t k;
		json_t *f;

		sf_get(e, s, sf_stack, sf_stack_n, shift);
		s->st.nframes = array_get(json_object_get(e, "frames"), s->st.frames,
					  sizeof(s->st.frames[0]), STACK_MAX_FRAMES, sf_frame,
					  sf_frame_n, shift);
		json_array_foreach(json_object_get(e, "nccl_frames"), k, f)
		{
			if (s->nnccl < SNAP_MAX_NCCL_FRAMES)
				s->nccl_frames[s->nnccl++] = (int)json_integer_value(f);
		}
	}
	p->stacks = v;
	return 0;
}

static int proc_log(struct snapstore *st, struct snap_proc *p, json_t *o, int64_t shift)
{
	struct snap_nccl_log *l;

	if (!json_is_object(o))
		return 0;
	l = snapstore_alloc(st, sizeof(*l));
	if (!l)
		return -1;
	sf_get(o, l, sf_log, sf_log_n, shift);
	l->ncomm = array_get(json_object_get(o, "comms"), l->comm, sizeof(l->comm[0]),
			     SNAP_LOG_MAX_COMMS, sf_log_comm, sf_log_comm_n, shift);
	l->npath = array_get(json_object_get(o, "paths"), l->path, sizeof(l->path[0]),
			     SNAP_LOG_MAX_PATHS, sf_log_path, sf_log_path_n, shift);
	l->ngdr = array_get(json_object_get(o, "gdr"), l->gdr, sizeof(l->gdr[0]), SNAP_LOG_MAX_GDR,
			    sf_log_gdr, sf_log_gdr_n, shift);
	l->nenv = array_get(json_object_get(o, "env"), l->env, sizeof(l->env[0]), SNAP_LOG_MAX_ENV,
			    sf_log_env, sf_log_env_n, shift);
	l->nifs = array_get(json_object_get(o, "ifs"), l->ifs, sizeof(l->ifs[0]), SNAP_LOG_MAX_IFS,
			    sf_log_if, sf_log_if_n, shift);
	p->nccl_log = l;
	return 0;
}

static int proc_ib(struct snapstore *st, struct snap_proc *p, json_t *o, int64_t shift)
{
	json_t *e = json_object_get(o, "ib_error"), *ib = json_object_get(o, "ib"),
	       *g = json_object_get(o, "gpu");

	if (json_is_object(g)) {
		struct snap_gpu *v = snapstore_alloc(st, sizeof(*v));

		if (!v)
			return -1;
		memset(v, 0, sizeof(*v));
		v->index = v->numa = v->util = v->sm_mhz = v->sm_max_mhz = v->persistence = -1;
		sf_get(g, v, sf_gpu, sf_gpu_n, shift);
		p->gpu = v;
	}

	if (json_is_object(e)) {
		struct snap_ib_error *v = snapstore_alloc(st, sizeof(*v));

		if (!v)
			return -1;
		sf_get(e, v, sf_ib_err, sf_ib_err_n, shift);
		p->ib_err = v;
	}
	if (json_is_object(ib)) {
		struct snap_ib *v = snapstore_alloc(st, sizeof(*v));

		if (!v)
			return -1;
		sf_get(ib, v, sf_ib, sf_ib_n, shift);
		v->nqp = array_get(json_object_get(ib, "qps"), v->qp, sizeof(v->qp[0]),
				   SNAP_MAX_QPS, sf_qp, sf_qp_n, shift);
		p->ib = v;
	}
	return 0;
}

static int proc_parse(struct snapstore *st, struct snap_proc *p, json_t *o, int64_t shift)
{
	sf_get(o, p, sf_proc, sf_proc_n, shift);
	p->host = get_str(st, o, "host");
	p->host_pid = (int)json_integer_value(json_object_get(o, "host_pid"));
	p->nccl_retry_addr = get_str(st, o, "nccl_retry_addr");
	p->nccl_warning = get_str(st, o, "nccl_warning");
	p->nccl_first_warning = get_str(st, o, "nccl_first_warning");
	if (proc_settings(st, p, json_object_get(o, "settings")) ||
	    proc_stacks(st, p, json_object_get(o, "stacks"), shift) || proc_ib(st, p, o, shift) ||
	    proc_log(st, p, json_object_get(o, "nccl_log"), shift))
		return -1;
	return 0;
}

static void conn_parse(struct snapstore *st, struct snap_conn *c, json_t *o, int64_t shift)
{
	sf_get(o, c, sf_sconn, sf_sconn_n, shift);
	sf_get(o, &c->c, sf_conn, sf_conn_n, shift);
	c->c.t.family = (uint16_t)json_integer_value(json_object_get(o, "family"));
	addr_parse(json_string_value(json_object_get(o, "src")), c->c.t.saddr, &c->c.t.sport,
		   c->c.t.family);
	addr_parse(json_string_value(json_object_get(o, "dst")), c->c.t.daddr, &c->c.t.dport,
		   c->c.t.family);
	c->nccl_label = get_str(st, o, "nccl_label");
}

static void comm_parse(struct snap_comm *c, json_t *o, int64_t shift)
{
	size_t f;
	json_t *v;

	sf_get(o, c, sf_comm, sf_comm_n, shift);
	json_array_foreach(json_object_get(o, "seq"), f, v)
	{
		if (f < SNAP_NSEQ)
			c->seq[f] = (uint64_t)json_integer_value(v);
	}
}

static size_t ptr_hash(const void *p, size_t cap)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 32) & (cap - 1);
}

static int cache_find(const struct snapjson_cache *c, const json_t *el)
{
	if (!c || !c->cap)
		return -1;
	for (size_t h = ptr_hash(el, c->cap); c->tab[h]; h = (h + 1) & (c->cap - 1))
		if (c->el[c->tab[h] - 1] == el)
			return c->tab[h] - 1;
	return -1;
}

void snapjson_cache_free(struct snapjson_cache *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->n; i++)
		json_decref(c->el[i]);
	free(c->el);
	free(c->c);
	free(c->tab);
	memset(c, 0, sizeof(*c));
}

/* the cache made this page's: its connections' elements and what was read of them */
static void cache_take(struct snapjson_cache *c, json_t *conns, const struct snap_conn *read, int n,
		       int64_t shift)
{
	struct snapjson_cache nc = {.shift = shift};
	size_t i;
	json_t *v;
	int k = 0;

	for (nc.cap = 16; nc.cap < 2 * (size_t)n; nc.cap *= 2)
		;
	nc.el = calloc(n ? n : 1, sizeof(*nc.el));
	nc.c = malloc(sizeof(*nc.c) * (n ? n : 1));
	nc.tab = calloc(nc.cap, sizeof(*nc.tab));
	snapjson_cache_free(c);
	if (!nc.el || !nc.c || !nc.tab) {
		free(nc.el);
		free(nc.c);
		free(nc.tab);
		return;
	}
	json_array_foreach(conns, i, v)
	{
		size_t h;

		if (!json_is_object(v) || k >= n)
			continue;
		nc.el[k] = json_incref(v);
		nc.c[k] = read[k];
		for (h = ptr_hash(v, nc.cap); nc.tab[h]; h = (h + 1) & (nc.cap - 1))
			;
		nc.tab[h] = k + 1;
		k++;
	}
	nc.n = k;
	*c = nc;
}

/* a table's fields of n structs of size sz at base, each time moved by by */
static void shift_each(const void *base, size_t sz, int n, const struct sf *tab, int ntab,
		       int64_t by)
{
	for (int i = 0; i < n; i++)
		sf_shift((char *)base + (size_t)i * sz, tab, ntab, by);
}

void snapstore_shift(struct snapstore *st, int64_t by)
{
	struct snapshot *s = &st->s;

	/* what the store owns is the store's: its const is for the snapshot's readers */
	sf_shift(s, sf_snap, sf_snap_n, by);
	for (int i = 0; i < s->nprocs; i++) {
		struct snap_proc *p = &s->procs[i];
		struct snap_nccl_log *l = (struct snap_nccl_log *)p->nccl_log;
		struct snap_ib *ib = (struct snap_ib *)p->ib;

		sf_shift(p, sf_proc, sf_proc_n, by);
		for (int k = 0; k < p->nstacks; k++) {
			struct snap_stack *x = (struct snap_stack *)&p->stacks[k];

			sf_shift(x, sf_stack, sf_stack_n, by);
			shift_each(x->st.frames, sizeof(x->st.frames[0]), x->st.nframes, sf_frame,
				   sf_frame_n, by);
		}
		if (p->gpu)
			sf_shift((void *)p->gpu, sf_gpu, sf_gpu_n, by);
		if (p->ib_err)
			sf_shift((void *)p->ib_err, sf_ib_err, sf_ib_err_n, by);
		if (ib) {
			sf_shift(ib, sf_ib, sf_ib_n, by);
			shift_each(ib->qp, sizeof(ib->qp[0]), ib->nqp, sf_qp, sf_qp_n, by);
		}
		if (l) {
			sf_shift(l, sf_log, sf_log_n, by);
			shift_each(l->comm, sizeof(l->comm[0]), l->ncomm, sf_log_comm,
				   sf_log_comm_n, by);
			shift_each(l->path, sizeof(l->path[0]), l->npath, sf_log_path,
				   sf_log_path_n, by);
			shift_each(l->gdr, sizeof(l->gdr[0]), l->ngdr, sf_log_gdr, sf_log_gdr_n,
				   by);
			shift_each(l->env, sizeof(l->env[0]), l->nenv, sf_log_env, sf_log_env_n,
				   by);
			shift_each(l->ifs, sizeof(l->ifs[0]), l->nifs, sf_log_if, sf_log_if_n, by);
		}
	}
	for (int i = 0; i < s->nconns; i++) {
		sf_shift(&s->conns[i], sf_sconn, sf_sconn_n, by);
		sf_shift(&s->conns[i].c, sf_conn, sf_conn_n, by);
	}
	shift_each(s->comms, sizeof(s->comms[0]), s->ncomms, sf_comm, sf_comm_n, by);
}

struct snapstore *snapjson_parse(json_t *o, int64_t shift, char *err, size_t errlen)
{
	return snapjson_parse_cached(o, shift, NULL, err, errlen);
}

struct snapstore *snapjson_parse_cached(json_t *o, int64_t shift, struct snapjson_cache *cache,
					char *err, size_t errlen)
{
	json_t *procs = json_object_get(o, "procs"), *conns = json_object_get(o, "conns"),
	       *comms = json_object_get(o, "comms"), *v;
	struct snap_conn *read = NULL;
	struct snapstore *st;
	struct snapshot *s;
	size_t i;

	if (!json_is_object(o) || !json_is_array(procs) || !json_is_array(conns) ||
	    !json_is_array(comms) || !json_is_integer(json_object_get(o, "now_ns"))) {
		snprintf(err, errlen, "not a snapshot (no now_ns, procs, conns and comms)");
		return NULL;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		goto nomem;
	s = &st->s;
	sf_get(o, s, sf_snap, sf_snap_n, shift);
	s->procs = snapstore_alloc(st, json_array_size(procs) * sizeof(*s->procs));
	s->conns = snapstore_alloc(st, json_array_size(conns) * sizeof(*s->conns));
	s->comms = snapstore_alloc(st, json_array_size(comms) * sizeof(*s->comms));
	if (!s->procs || !s->conns || !s->comms)
		goto nomem;
	json_array_foreach(procs, i, v)
	{
		if (!json_is_object(v))
			continue;
		s->procs[s->nprocs].rank = s->procs[s->nprocs].cpu_numa =
			s->procs[s->nprocs].gpu_env = s->procs[s->nprocs].nic_numa = -1;
		if (proc_parse(st, &s->procs[s->nprocs++], v, shift))
			goto nomem;
	}
	json_array_foreach(conns, i, v)
	{
		struct snap_conn *c = &s->conns[s->nconns];
		int k;

		if (!json_is_object(v))
			continue;
		s->nconns++;
		if ((k = cache_find(cache, v)) >= 0) {
			/* the same element as the last page's: what was read of it, moved */
			*c = cache->c[k];
			sf_shift(c, sf_sconn, sf_sconn_n, shift - cache->shift);
			sf_shift(&c->c, sf_conn, sf_conn_n, shift - cache->shift);
			c->nccl_label = snapstore_str(st, cache->c[k].nccl_label);
		} else {
			conn_parse(st, c, v, shift);
		}
	}
	json_array_foreach(comms, i, v)
	{
		if (json_is_object(v))
			comm_parse(&s->comms[s->ncomms++], v, shift);
	}
	if (cache) {
		read = malloc(sizeof(*read) * (s->nconns ? s->nconns : 1));
		if (read)
			memcpy(read, s->conns, sizeof(*read) * s->nconns);
		if (read)
			cache_take(cache, conns, read, s->nconns, shift);
		else
			snapjson_cache_free(cache);
		free(read);
	}
	/* another host's times, or a hostile document's, after its own now: none is */
	snapshot_clamp(s);
	return st;
nomem:
	snapstore_free(st);
	snprintf(err, errlen, "out of memory reading a snapshot");
	return NULL;
}
