// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include "util/clock.h"
#include "nccl/ibwarn.h"
#include "nccl/nccllib.h"
#include "nccl/ncclstate_priv.h"
#include "util/block.h"
#include "trace/procfs.h"
#include "model/snapshot.h"
#include "util/grow.h"

static const char *const sock_types[] = {"unknown", "bootstrap", "proxy", "net", "ib", "ras"};

const char *nccl_socket_type_name(int type)
{
	return type > 0 && type < 6 ? sock_types[type] : "unknown";
}

struct nccl_state *nccl_state__new(const struct nt_nccl_offsets *(*offs)(void *, int), void *ctx)
{
	struct nccl_state *s = calloc(1, sizeof(*s));

	if (s) {
		s->offs = offs;
		s->ctx = ctx;
	}
	return s;
}

const struct nt_nccl_offsets *nstate_offs(const struct nccl_state *s, int lib)
{
	return s->offs ? s->offs(s->ctx, lib) : NULL;
}

void nccl_state__free(struct nccl_state *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->n; i++)
		for (int k = 0; k < s->p[i].nset; k++) {
			free((char *)s->p[i].set[k].name);
			free((char *)s->p[i].set[k].value);
		}
	free(s->p);
	pidix_free(&s->pids);
	free(s->snap);
	nprof_free(s->prof);
	free(s);
}

struct nproc *nstate_proc(struct nccl_state *s, int pid)
{
	int i = pidix_find(&s->pids, pid);

	if (i >= 0)
		return &s->p[i];
	if (grow(&s->p, &s->cap, s->n, sizeof(*s->p), 8) || pidix_add(&s->pids, pid))
		return NULL;
	memset(&s->p[s->n], 0, sizeof(s->p[0]));
	s->p[s->n].pid = pid;
	return &s->p[s->n++];
}

const struct nproc *nstate_find(const struct nccl_state *s, int pid)
{
	int i = pidix_find(&s->pids, pid);

	return i >= 0 ? &s->p[i] : NULL;
}

struct nthread *nstate_thread(struct nproc *p, int tid)
{
	for (int i = 0; i < p->nth; i++)
		if (p->th[i].tid == tid)
			return &p->th[i];
	if (p->nth == MAX_THREADS)
		return NULL;
	memset(&p->th[p->nth], 0, sizeof(p->th[0]));
	p->th[p->nth].tid = tid;
	return &p->th[p->nth++];
}

const char *nstate_probe_label(int probe)
{
	const struct nccl_probe_def *d = nccl_probe(probe);

	return d ? (d->phase ? d->phase : d->name) : "?";
}

json_t *nstate_record(const struct nt_ev_nccl *e, const char *type)
{
	json_t *o = json_object();
	const struct nccl_probe_def *d = nccl_probe(e->probe);

	json_object_set_new(o, "type", json_string(type));
	json_object_set_new(o, "ts_ns", json_integer((json_int_t)e->h.ts_ns));
	json_object_set_new(o, "pid", json_integer(e->pid));
	json_object_set_new(o, "tid", json_integer(e->tid));
	json_object_set_new(o, "probe", json_string(d ? d->name : "?"));
	return o;
}

/* "p2p setup (ring)" */
static void probe_detail_label(int probe, const char *detail, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s", nstate_probe_label(probe), detail[0] ? " (" : "", detail,
		 detail[0] ? ")" : "");
}

void nstate_frame_label(const struct nthread *t, int d, char *buf, size_t len)
{
	probe_detail_label(t->probe[d], t->detail[d], buf, len);
}

/*
 * Record a setting; NCCL's own read wins over the environment. Returns false if it adds
 * nothing (NCCL read it already).
 */
bool nstate_set_setting(struct nproc *p, const char *name, const char *value, bool read)
{
	struct snap_setting *st = NULL;

	for (int i = 0; i < p->nset && !st; i++)
		if (!strcmp(p->set[i].name, name))
			st = &p->set[i];
	if (st && (st->read || !read))
		return false;
	if (!st) {
		if (p->nset == MAX_SETTINGS)
			return false;
		st = &p->set[p->nset];
		st->name = strdup(name);
		if (!st->name)
			return false;
		st->value = NULL;
		p->nset++;
	}
	free((char *)st->value);
	st->value = value ? strdup(value) : NULL;
	st->read = read;
	return true;
}

void nccl_state__env(struct nccl_state *s, int pid, const char *name, const char *value)
{
	struct nproc *p = nstate_proc(s, pid);

	if (p && value)
		nstate_set_setting(p, name, value, false);
}

void nccl_state__proc_snap(const struct nccl_state *s, struct snap_proc *sp)
{
	const struct nproc *p = nstate_find(s, sp->pid);

	sp->set = p ? p->set : NULL;
	sp->nset = p ? p->nset : 0;
	sp->nccl_retries = p ? p->retries : 0;
	sp->nccl_last_retry_ns = p ? p->last_retry_ns : 0;
	sp->nccl_retry_addr = p && p->retry_addr[0] ? p->retry_addr : NULL;
	sp->nccl_warning = p && p->last_warning[0] ? p->last_warning : NULL;
	sp->nccl_first_warning = p && p->burst_warnings > 1 ? p->first_warning : NULL;
	sp->nccl_burst_warnings = p ? p->burst_warnings : 0;
	sp->ib_err = p && p->ib.count ? &p->ib : NULL;
	sp->ib = p && p->has_ibv ? &p->ibv : NULL;
	if (p) {
		sp->ib_hs = p->ib_hs;
		sp->net_poll = p->net_poll;
	}
	sp->nccl_init_entered_ns = p ? p->setup_entered_ns[SNAP_SETUP_INIT] : 0;
	sp->nccl_transport_entered_ns = p ? p->setup_entered_ns[SNAP_SETUP_TRANSPORT] : 0;
	sp->attached_ns = p ? p->attached_ns : 0;
	sp->stack_at_attach_ns = p ? p->stack_at_attach_ns : 0;
	sp->gpu_wait_at_attach_ns = p ? p->gpu_wait_at_attach_ns : 0;
	nprof_proc_snap(s, sp);
}

/* The threads in a phase or with a role: tid, role, phase and how long it has been in it. */
/* what a process's dump record writes of a thread in a phase or with a role */
struct held_thread {
	int tid, role; /* role: enum nt_probe of its start routine, 0 none */
	bool in_phase; /* its innermost phase: */
	uint16_t probe;
	char detail[sizeof(((struct nthread *)0)->detail[0])];
	uint64_t since;
};

static void thread_hold(const struct nthread *t, struct held_thread *h)
{
	h->tid = t->tid;
	h->role = t->role;
	h->in_phase = t->depth > 0 && t->depth <= NT_PHASE_DEPTH;
	if (!h->in_phase)
		return;
	h->probe = t->probe[t->depth - 1];
	memcpy(h->detail, t->detail[t->depth - 1], sizeof(h->detail));
	h->detail[sizeof(h->detail) - 1] = '\0';
	h->since = t->since[t->depth - 1];
}

static json_t *threads_json(const struct held_thread *th, int nth, uint64_t now)
{
	json_t *a = json_array();

	for (int i = 0; i < nth; i++) {
		const struct held_thread *t = &th[i];
		json_t *to = json_object();

		json_object_set_new(to, "tid", json_integer(t->tid));
		if (t->role)
			json_object_set_new(
				to, "role",
				json_string(nccl_probe(t->role)->name + strlen("role_")));
		if (t->in_phase) {
			char l[64];

			probe_detail_label(t->probe, t->detail, l, sizeof(l));
			json_object_set_new(to, "phase", json_string(l));
			json_object_set_new(to, "in_phase_s", json_real((now - t->since) / 1e9));
		}
		json_array_append_new(a, to);
	}
	return a;
}

/*
 * The communicators: hash, rank, nranks, and the collectives launched per function and in all,
 * or why its counts are not used.
 */
static json_t *comms_json(const struct ncomm *comm, int ncomm)
{
	json_t *cm = json_array();

	for (int i = 0; i < ncomm; i++) {
		const struct snap_comm *c = &comm[i].sc;
		json_t *co = json_object(), *seq = json_object();
		char h[24];

		snprintf(h, sizeof(h), "%016llx", (unsigned long long)c->hash);
		json_object_set_new(co, "comm_hash", json_string(h));
		json_object_set_new(co, "rank", json_integer(c->rank));
		json_object_set_new(co, "nranks", json_integer(c->nranks));
		if (c->scanned)
			json_object_set_new(co, "found", json_string("memory scan at attach"));
		if (c->seq_ok) {
			json_object_set_new(co, "source", json_string(snap_src_name(c->seq_src)));
			for (int k = 0; k < NSEQ; k++)
				if (c->seq[k])
					json_object_set_new(seq, snap_coll_name(k),
							    json_integer(c->seq[k]));
			json_object_set_new(co, "total", json_integer(snap_comm_total(c)));
		}
		if (comm[i].unusable)
			json_object_set_new(co, "counts_unusable", json_string(comm[i].unusable));
		json_object_set_new(co, "collectives", seq);
		json_array_append_new(cm, co);
	}
	return cm;
}

/* Verbs: the live QPs, memory registrations, async events, the handshake in progress. */
static json_t *ib_json(const struct snap_ib *ibv, const struct snap_ib_handshake *hs, uint64_t now)
{
	json_t *ib = json_object(), *qa = json_array();

	for (int i = 0; i < ibv->nqp; i++) {
		const struct snap_qp *q = &ibv->qp[i];
		json_t *qo = json_object();

		if (q->destroyed) {
			json_decref(qo);
			continue;
		}
		nstate_qp_json(qo, q);
		json_object_set_new(qo, "dest_qp_num", json_integer(q->dest_qp_num));
		json_object_set_new(qo, "timeout", json_integer(q->timeout));
		json_object_set_new(qo, "retry_cnt", json_integer(q->retry_cnt));
		json_object_set_new(qo, "sgid_index", json_integer(q->sgid_index));
		json_object_set_new(qo, "age_s",
				    json_real((double)(now - q->changed_ns) / NT_NSEC_PER_SEC));
		json_array_append_new(qa, qo);
	}
	json_object_set_new(ib, "qps", qa);
	json_object_set_new(ib, "mrs", json_integer(ibv->nmr));
	json_object_set_new(ib, "mr_bytes", json_integer((json_int_t)ibv->mr_bytes));
	json_object_set_new(ib, "async_events", json_integer(ibv->nasync));
	if (hs->probe) {
		json_t *h = json_object();

		json_object_set_new(h, "call", json_string(nccl_probe(hs->probe)->name));
		json_object_set_new(h, "inside", json_boolean(hs->inside));
		json_object_set_new(h, "stage", json_string(ib_stage_name(hs->stage)));
		json_object_set_new(h, "for_s",
				    json_real((double)(now - hs->since_ns) / NT_NSEC_PER_SEC));
		json_object_set_new(h, "tid", json_integer(hs->tid));
		json_object_set_new(ib, "handshake", h);
	}
	return ib;
}

/* what nccl_proc_json writes of a process (ncclstate.h), copied out of the state */
struct nccl_proc_copy {
	struct held_thread *th; /* those in a phase or with a role */
	int nth;
	struct ncomm *comm;
	int ncomm;
	uint64_t warnings, suppressed, retries, phase_fixes;
	int nset;
	struct snap_ib *ibv; /* NULL: no verbs */
	struct snap_ib_handshake ib_hs;
	struct snap_net_poll net_poll;
	struct nprof_copy prof;
};

/* its threads in a phase or with a role: those written */
static int threads_written(const struct nproc *p)
{
	int n = 0;

	for (int i = 0; i < p->nth; i++)
		n += p->th[i].depth || p->th[i].role;
	return n;
}

size_t nccl_state__proc_copy_size(const struct nccl_state *s, int pid)
{
	const struct nproc *p = nstate_find(s, pid);

	if (!p)
		return 0;
	return block_part(sizeof(struct nccl_proc_copy)) +
	       block_part((size_t)threads_written(p) * sizeof(struct held_thread)) +
	       block_part((size_t)p->ncomm * sizeof(struct ncomm)) +
	       (p->has_ibv ? block_part(sizeof(struct snap_ib)) : 0) + nprof_proc_copy_size(s, pid);
}

struct nccl_proc_copy *nccl_state__proc_copy(const struct nccl_state *s, int pid, char **cur)
{
	const struct nproc *p = nstate_find(s, pid);
	struct nccl_proc_copy *c;

	if (!p)
		return NULL;
	c = block_take(cur, sizeof(*c));
	memset(c, 0, sizeof(*c));
	c->th = block_take(cur, (size_t)threads_written(p) * sizeof(*c->th));
	for (int i = 0; i < p->nth; i++)
		if (p->th[i].depth || p->th[i].role)
			thread_hold(&p->th[i], &c->th[c->nth++]);
	c->comm = block_take(cur, (size_t)p->ncomm * sizeof(*c->comm));
	memcpy(c->comm, p->comm, (size_t)p->ncomm * sizeof(*c->comm));
	c->ncomm = p->ncomm;
	c->warnings = p->warnings;
	c->suppressed = p->suppressed;
	c->retries = p->retries;
	c->phase_fixes = p->phase_fixes;
	c->nset = p->nset;
	if (p->has_ibv) {
		c->ibv = block_take(cur, sizeof(*c->ibv));
		*c->ibv = p->ibv;
	}
	c->ib_hs = p->ib_hs;
	c->net_poll = p->net_poll;
	nprof_proc_copy(s, pid, &c->prof, cur);
	return c;
}

json_t *nccl_proc_json(const struct nccl_proc_copy *c, uint64_t now)
{
	json_t *o = json_object(), *pr;

	json_object_set_new(o, "threads", threads_json(c->th, c->nth, now));
	json_object_set_new(o, "comms", comms_json(c->comm, c->ncomm));
	json_object_set_new(o, "warnings", json_integer((json_int_t)c->warnings));
	json_object_set_new(o, "warnings_downgraded", json_integer((json_int_t)c->suppressed));
	json_object_set_new(o, "connect_retries", json_integer((json_int_t)c->retries));
	json_object_set_new(o, "settings_read", json_integer(c->nset));
	if (c->ibv)
		json_object_set_new(o, "ib", ib_json(c->ibv, &c->ib_hs, now));
	if (c->net_poll.probe) {
		json_t *np = json_object();

		json_object_set_new(np, "call", json_string(nccl_probe(c->net_poll.probe)->name));
		json_object_set_new(np, "for_s",
				    json_real((double)clock_age_ns(now, c->net_poll.since_ns) /
					      NT_NSEC_PER_SEC));
		json_object_set_new(np, "calls", json_integer((json_int_t)c->net_poll.calls));
		json_object_set_new(np, "tid", json_integer(c->net_poll.tid));
		if (c->net_poll.addr[0])
			json_object_set_new(np, "addr", json_string(c->net_poll.addr));
		json_object_set_new(o, "net_poll", np);
	}
	if (c->phase_fixes)
		json_object_set_new(o, "phase_fixes", json_integer((json_int_t)c->phase_fixes));
	pr = nprof_copy_json(&c->prof, now);
	if (pr)
		json_object_set_new(o, "profiler", pr);
	return o;
}

json_t *nccl_state__proc_json(const struct nccl_state *s, int pid, uint64_t now)
{
	size_t n = nccl_state__proc_copy_size(s, pid);
	char *buf = n ? malloc(n) : NULL, *cur = buf;
	json_t *o = buf ? nccl_proc_json(nccl_state__proc_copy(s, pid, &cur), now) : NULL;

	free(buf);
	return o;
}

const char *nccl_conn_phase_label(unsigned int probe)
{
	switch (probe) {
	case NT_P_NET_CONNECT:
		return "net (net connect)";
	case NT_P_NET_ACCEPT:
		return "net (net accept)";
	case NT_P_IB_CONNECT:
		return "ib (ib connect)";
	case NT_P_IB_ACCEPT:
		return "ib (ib accept)";
	default:
		return NULL;
	}
}

const char *nccl_state__socket_label(const struct nccl_state *s, int pid, uint64_t ino)
{
	const struct nproc *p = nstate_find(s, pid);

	for (int i = 0; p && i < p->nsock; i++)
		if (p->sock[i].ino == ino)
			return p->sock[i].label;
	return NULL;
}

bool nccl_state__phase(const struct nccl_state *s, int pid, uint64_t *since_ns, char *buf,
		       size_t len)
{
	const struct nproc *p = nstate_find(s, pid);
	const struct nthread *best = NULL;

	for (int i = 0; p && i < p->nth; i++) {
		const struct nthread *t = &p->th[i];

		if (t->depth <= 0 || t->depth > NT_PHASE_DEPTH)
			continue;
		/* the main thread first, else the thread in a phase the longest */
		if (t->tid == pid) {
			best = t;
			break;
		}
		if (!best || t->since[t->depth - 1] < best->since[best->depth - 1])
			best = t;
	}
	buf[0] = '\0';
	if (!best)
		return false;
	if (since_ns)
		*since_ns = best->since[best->depth - 1];
	nstate_frame_label(best, best->depth - 1, buf, len);
	/* and what it is part of, where an outer frame says: "proxy call in p2p setup (ring)" */
	for (int d = best->depth - 2; d >= 0; d--)
		if (best->detail[d][0]) {
			size_t l = strlen(buf);

			snprintf(buf + l, len - l, " in ");
			l = strlen(buf);
			nstate_frame_label(best, d, buf + l, len - l);
			break;
		}
	return true;
}

int nstate_setup_class(const struct nproc *p, int probe)
{
	/* the first collective after a communicator's init: the lazy ring connect is inside */
	if (nt_probe_api_coll(probe))
		return p->coll_returns == p->coll_returns_at_init ? SNAP_SETUP_TRANSPORT
								  : SNAP_SETUP_NONE;
	switch (probe) {
	case NT_P_API_INIT_RANK:
	case NT_P_API_INIT_CONFIG:
	case NT_P_API_INIT_SCALABLE:
	case NT_P_API_INIT_ALL:
	case NT_P_API_SPLIT:
	case NT_P_COMM_INIT:
	case NT_P_BOOTSTRAP_INIT:
	case NT_P_BOOTSTRAP_SPLIT:
	case NT_P_INIT_TRANSPORTS:
		return SNAP_SETUP_INIT;
	case NT_P_RING_CONNECT:
	case NT_P_TREE_CONNECT:
	case NT_P_P2P_SETUP:
	case NT_P_PROXY_CONNECT:
		return SNAP_SETUP_TRANSPORT;
	default:
		return SNAP_SETUP_NONE;
	}
}

/* The thread that puts a process in a setup: its main thread, else the one in it longest */
static const struct nthread *setup_thread(const struct nproc *p)
{
	const struct nthread *best = NULL;

	for (int i = 0; p && i < p->nth; i++) {
		const struct nthread *t = &p->th[i];

		if (t->depth <= 0 || !nstate_setup_class(p, t->probe[0]))
			continue;
		if (t->tid == p->pid)
			return t;
		if (!best || t->since[0] < best->since[0])
			best = t;
	}
	return best;
}

int nccl_state__setup(const struct nccl_state *s, int pid, uint64_t *since_ns)
{
	const struct nproc *p = nstate_find(s, pid);
	const struct nthread *best = setup_thread(p);

	if (!best)
		return SNAP_SETUP_NONE;
	*since_ns = best->since[0];
	return nstate_setup_class(p, best->probe[0]);
}

uint64_t nccl_state__setup_seen(struct nccl_state *s, int pid, bool inside, uint64_t now)
{
	/* the state's own record: const only for the readers */
	struct nproc *p = (struct nproc *)nstate_find(s, pid);

	if (!p)
		return 0;
	if (inside)
		p->setup_seen_ns = now;
	return p->setup_seen_ns;
}

bool nccl_state__setup_at_attach(const struct nccl_state *s, int pid)
{
	const struct nthread *t = setup_thread(nstate_find(s, pid));

	return t && t->seeded > 0;
}

bool nstate_setup_by_api(const struct nccl_state *s, int pid)
{
	const struct nthread *t = setup_thread(nstate_find(s, pid));
	int d = 0;

	while (t && d < t->depth && d < NT_PHASE_DEPTH && nt_probe_api_coll(t->probe[d]))
		d++;
	return t && d == t->depth;
}

bool nccl_state__first_window(const struct nccl_state *s, int pid, int calls)
{
	const struct nproc *p = nstate_find(s, pid);

	return !p || p->coll_returns - p->coll_returns_at_init < (uint64_t)calls;
}
