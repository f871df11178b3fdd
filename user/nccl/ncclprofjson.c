// SPDX-License-Identifier: MIT
/*
 * The profiler plugin's part of a process's dump record (ncclstate_priv.h nprof_copy): what the
 * tracer read of each communicator (counts, the last collectives), copied out of the state for
 * a calm second held in the dump's ring, and its JSON.
 */
#include <stdio.h>
#include <string.h>
#include "nccl/ncclprof_priv.h"
#include "nccl/ncclstate_priv.h"
#include "util/block.h"

/* pid's, where the plugin was found in it */
static const struct pproc *prof_proc(const struct nccl_state *s, int pid)
{
	const struct pproc *pp = nprof_find(s, pid);

	return pp && pp->addr ? pp : NULL;
}

/* the communicators whose identity was read: those written */
static int ids_read(const struct pproc *pp)
{
	int n = 0;

	for (int k = 0; k < pp->ncomm; k++)
		n += pp->comm[k].id_ok;
	return n;
}

/* what a process's dump record writes of one of its collectives */
struct held_rec {
	uint64_t ord, ts_ns, count, seq, user_tag;
	int32_t root;
	uint8_t func, dtype, op;
};

/* and of a communicator */
struct held_pcomm {
	uint64_t hash, ncoll, np2p, graph, coll_api, lost, group_start_ns, read_upto;
	int rank;
	uint32_t state;
	struct held_rec recent[RECENT];
};

static void pcomm_hold(const struct pcomm *m, struct held_pcomm *h)
{
	h->hash = m->hash;
	h->ncoll = m->ncoll;
	h->np2p = m->np2p;
	h->graph = m->graph;
	h->coll_api = m->coll_api;
	h->lost = m->lost;
	h->group_start_ns = m->group_start_ns;
	h->read_upto = m->read_upto;
	h->rank = m->rank;
	h->state = m->state;
	for (int i = 0; i < RECENT; i++) {
		const struct ntprof_rec *r = &m->recent[i];

		h->recent[i] = (struct held_rec){.ord = r->ord,
						 .ts_ns = r->ts_ns,
						 .count = r->count,
						 .seq = r->seq,
						 .root = r->root,
						 .func = r->func,
						 .dtype = r->dtype,
						 .op = r->op,
						 .user_tag = r->user_tag};
	}
}

size_t nprof_proc_copy_size(const struct nccl_state *s, int pid)
{
	const struct pproc *pp = prof_proc(s, pid);

	if (!pp)
		return 0;
	return block_part(strlen(pp->path) + 1) +
	       block_part((size_t)ids_read(pp) * sizeof(struct held_pcomm));
}

void nprof_proc_copy(const struct nccl_state *s, int pid, struct nprof_copy *out, char **cur)
{
	const struct pproc *pp = prof_proc(s, pid);
	size_t len;

	memset(out, 0, sizeof(*out));
	if (!pp)
		return;
	len = strlen(pp->path) + 1;
	out->path = memcpy(block_take(cur, len), pp->path, len);
	out->comm = block_take(cur, (size_t)ids_read(pp) * sizeof(*out->comm));
	out->api_max = pp->api_max;
	out->overflow = pp->overflow;
	for (int k = 0; k < pp->ncomm; k++)
		if (pp->comm[k].id_ok)
			pcomm_hold(&pp->comm[k], &out->comm[out->ncomm++]);
}

json_t *nprof_copy_json(const struct nprof_copy *c, uint64_t now)
{
	json_t *o, *cm;

	if (!c->path)
		return NULL;
	o = json_object();
	cm = json_array();
	json_object_set_new(o, "path", json_string(c->path));
	json_object_set_new(o, "api", c->api_max ? json_integer(c->api_max) : json_null());
	json_object_set_new(o, "overflow", json_integer((json_int_t)c->overflow));
	for (int k = 0; k < c->ncomm; k++) {
		const struct held_pcomm *m = &c->comm[k];
		json_t *co = json_object(), *rec = json_array();
		char h[24];

		snprintf(h, sizeof(h), "%016llx", (unsigned long long)m->hash);
		json_object_set_new(co, "comm_hash", json_string(h));
		json_object_set_new(co, "rank", json_integer(m->rank));
		json_object_set_new(
			co, "state",
			json_string(m->state == NTPROF_FINALIZED ? "finalized" : "active"));
		json_object_set_new(co, "collectives", json_integer((json_int_t)m->ncoll));
		json_object_set_new(co, "p2p", json_integer((json_int_t)m->np2p));
		json_object_set_new(co, "graph_captured", json_integer((json_int_t)m->graph));
		json_object_set_new(co, "coll_api_calls", json_integer((json_int_t)m->coll_api));
		json_object_set_new(co, "lost", json_integer((json_int_t)m->lost));
		if (m->group_start_ns)
			json_object_set_new(co, "api_call_s",
					    json_real((double)(now - m->group_start_ns) / 1e9));
		for (uint64_t o2 = m->read_upto > RECENT ? m->read_upto - RECENT + 1 : 1;
		     o2 && o2 <= m->read_upto; o2++) {
			const struct held_rec *r = &m->recent[(o2 - 1) % RECENT];
			json_t *ro;

			if (r->ord != o2)
				continue;
			ro = json_object();
			json_object_set_new(ro, "n", json_integer((json_int_t)r->ord));
			json_object_set_new(ro, "coll", json_string(snap_coll_name(r->func)));
			/* the job's memory: a seq at the top of the range is not one to add to */
			json_object_set_new(ro, "seq", json_integer((json_int_t)(r->seq + 1)));
			json_object_set_new(ro, "count", json_integer((json_int_t)r->count));
			json_object_set_new(ro, "datatype", json_integer(r->dtype));
			json_object_set_new(ro, "root", json_integer(r->root));
			/* the reduction operator: v1 only (ncclRedOp_t; 254 a custom one) */
			if (r->op != 0xff)
				json_object_set_new(ro, "op", json_integer(r->op));
			json_object_set_new(ro, "ts_ns", json_integer((json_int_t)r->ts_ns));
			/* v7: the userTag the framework gave the call (NCCL 2.31.2+) */
			if (r->user_tag)
				json_object_set_new(ro, "user_tag",
						    json_integer((json_int_t)r->user_tag));
			json_array_append_new(rec, ro);
		}
		json_object_set_new(co, "recent", rec);
		json_array_append_new(cm, co);
	}
	json_object_set_new(o, "comms", cm);
	return o;
}
