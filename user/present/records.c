// SPDX-License-Identifier: MIT
/*
 * The records of a live trace dump (docs/usage.md, "The trace dump"): the header, process and
 * connection events, rank identities, NCCL libraries and attachments, snapshots, quiet-mode
 * switches and the footer. Each builder returns a new JSON object for dump__write().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "model/snapjson.h"
#include "nccl/nccllib.h"
#include "model/snapfields.h"
#include "present/dumpdelta.h"
#include "present/records.h"
#include "util/block.h"
#include "util/fmt.h"

static void set_count(json_t *o, const char *k, uint64_t v)
{
	if (v)
		json_object_set_new(o, k, json_integer((json_int_t)v));
}

json_t *record_conn(const struct snap_conn *sc, uint64_t now, const char *label)
{
	const struct nt_conn *c = &sc->c;
	char a[64];
	json_t *o = json_object();

#define AGE(t) ((t) ? json_real((double)(now - (t)) / 1e9) : json_null())
	snprintf(a, sizeof(a), "%llx", (unsigned long long)sc->id);
	json_object_set_new(o, "id", json_string(a));
	json_object_set_new(o, "pid", json_integer(sc->pid));
	json_object_set_new(o, "tid", json_integer(c->tid));
	json_object_set_new(o, "peer_pid",
			    sc->peer_pid > 0 ? json_integer(sc->peer_pid) : json_null());
	json_object_set_new(o, "src", json_string(fmt_endpoint(&c->t, 1, a, sizeof(a))));
	json_object_set_new(o, "dst", json_string(fmt_endpoint(&c->t, 0, a, sizeof(a))));
	json_object_set_new(o, "state", json_string(fmt_tcp_state(c->state)));
	if (c->flags & NT_CONN_LISTENER)
		json_object_set_new(o, "listener", json_true());
	json_object_set_new(o, "bytes_sent", json_integer(c->bytes_sent));
	json_object_set_new(o, "bytes_recv", json_integer(c->bytes_recv));
	json_object_set_new(o, "send_calls", json_integer(c->send_calls));
	json_object_set_new(o, "recv_calls", json_integer(c->recv_calls));
	/* the counts that stay 0 on a healthy connection are left out there (format 2) */
	set_count(o, "send_eagain", c->send_eagain);
	set_count(o, "recv_eagain", c->recv_eagain);
	set_count(o, "recv_eof", c->recv_eof);
	set_count(o, "errors", (uint64_t)c->send_err + c->recv_err);
	set_count(o, "retrans", c->retrans);
	set_count(o, "syn_retrans", c->syn_retrans);
	set_count(o, "resets", c->resets);
	json_object_set_new(o, "srtt_us", json_integer(c->srtt_us));
	json_object_set_new(o, "snd_cwnd", json_integer(c->snd_cwnd));
	set_count(o, "send_q", c->send_q);
	set_count(o, "recv_q", c->recv_q);
	json_object_set_new(o, "last_send_age_s", AGE(c->last_send_ns));
	json_object_set_new(o, "last_recv_age_s", AGE(c->last_recv_ns));
	if (sc->blocked == SNAP_BLOCK_RECV || sc->blocked == SNAP_BLOCK_SEND)
		json_object_set_new(o, "blocked",
				    json_string(sc->blocked == SNAP_BLOCK_RECV ? "recv" : "send"));
	if (sc->closed)
		json_object_set_new(o, "closed", json_true());
	if (label)
		json_object_set_new(o, "nccl", json_string(label));
	if (c->nccl_phase && nccl_probe(c->nccl_phase))
		json_object_set_new(o, "nccl_phase", json_string(nccl_probe(c->nccl_phase)->name));
#undef AGE
	return o;
}

json_t *record_proc_event(const struct nt_ev_proc *e, const char *what)
{
	json_t *o = json_object();

	json_object_set_new(o, "type", json_string("proc"));
	json_object_set_new(o, "event", json_string(what));
	json_object_set_new(o, "ts_ns", json_integer((json_int_t)e->h.ts_ns));
	json_object_set_new(o, "pid", json_integer(e->pid));
	json_object_set_new(o, "ppid", json_integer(e->ppid));
	json_object_set_new(o, "comm", json_stringn(e->comm, strnlen(e->comm, NT_COMM_LEN)));
	if (e->h.type == NT_EV_EXIT) {
		json_object_set_new(o, "exit_code",
				    WIFEXITED(e->exit_code)
					    ? json_integer(WEXITSTATUS(e->exit_code))
					    : json_null());
		json_object_set_new(o, "signal",
				    WIFSIGNALED(e->exit_code) ? json_integer(WTERMSIG(e->exit_code))
							      : json_null());
	}
	return o;
}

json_t *record_conn_event(const struct nt_ev_conn *e, const char *label)
{
	const struct nt_ev_hdr *h = &e->h;
	struct snap_conn sc = {.id = e->sk, .c = e->c, .pid = e->c.tgid, .peer_pid = -1};
	json_t *o = record_conn(&sc, h->ts_ns, label);

	json_object_set_new(o, "type",
			    json_string(h->type == NT_EV_CONN_STATE ? "conn_state"
					: h->type == NT_EV_RETRANS  ? "retrans"
								    : "reset"));
	json_object_set_new(o, "ts_ns", json_integer((json_int_t)h->ts_ns));
	json_object_set_new(o, "old", json_string(fmt_tcp_state(e->oldstate)));
	json_object_set_new(o, "new", json_string(fmt_tcp_state(e->newstate)));
	return o;
}

/*
 * What record_conn writes of a connection, its ages as the moments they count from (the same
 * while nothing moves): its identity for the delta frames is a hash of it, and a held second
 * shares a connection's copy with the one before while it is the same
 */
struct conn_fields {
	uint64_t id, sent, recv, scalls, rcalls, seagain, reagain, eof, errors, last_send,
		last_recv;
	uint32_t tid, state, flags, retrans, syn_retrans, resets, srtt, cwnd, send_q, recv_q, phase;
	int32_t pid, peer_pid, blocked, closed;
	uint8_t saddr[16], daddr[16];
	uint16_t sport, dport, family, pad;
	char label[48]; /* NCCL's name for it, "" none */
};

static void conn_fields(const struct snap_conn *sc, const char *label, struct conn_fields *f)
{
	const struct nt_conn *c = &sc->c;

	memset(f, 0, sizeof(*f));
	f->id = sc->id;
	f->sent = c->bytes_sent;
	f->recv = c->bytes_recv;
	f->scalls = c->send_calls;
	f->rcalls = c->recv_calls;
	f->seagain = c->send_eagain;
	f->reagain = c->recv_eagain;
	f->eof = c->recv_eof;
	f->errors = (uint64_t)c->send_err + c->recv_err;
	f->last_send = c->last_send_ns;
	f->last_recv = c->last_recv_ns;
	f->tid = c->tid;
	f->state = c->state;
	f->flags = c->flags & NT_CONN_LISTENER;
	f->retrans = c->retrans;
	f->syn_retrans = c->syn_retrans;
	f->resets = c->resets;
	f->srtt = c->srtt_us;
	f->cwnd = c->snd_cwnd;
	f->send_q = c->send_q;
	f->recv_q = c->recv_q;
	f->phase = c->nccl_phase;
	f->pid = sc->pid;
	f->peer_pid = sc->peer_pid;
	f->blocked = (int32_t)sc->blocked;
	f->closed = sc->closed;
	memcpy(f->saddr, c->t.saddr, sizeof(f->saddr));
	memcpy(f->daddr, c->t.daddr, sizeof(f->daddr));
	f->sport = c->t.sport;
	f->dport = c->t.dport;
	f->family = c->t.family;
	/* zeroed above: what follows the name too, as the comparison reads it */
	if (label)
		memcpy(f->label, label, strnlen(label, sizeof(f->label) - 1));
}

struct held_snapshot;

/* a connection's copy: in the block of the held second that made it, shared by those after */
struct held_conn {
	struct held_snapshot *owner;
	struct snap_conn sc;
	struct conn_fields f;
};

/* what a snapshot record writes of a process */
struct held_proc {
	int pid, rank;
	char comm[NT_COMM_LEN];
	char state;
	char where[32];
	uint64_t cpu_busy_ns;
	bool has_gpu;
	struct snap_gpu gpu;
	struct nccl_proc_copy *nccl; /* NULL: none */
};

struct held_snapshot {
	/*
	 * its holder's, and one for each later held second that shares a connection copied
	 * here; the block is freed at 0
	 */
	int refs;
	uint64_t ts;
	struct held_proc *procs;
	int nprocs;
	const struct held_conn **conns;
	int nconns;
};

/* the connections a snapshot after last_ns writes: the model keeps every one closed long ago too */
static bool conn_written(const struct snap_conn *c, uint64_t last_ns)
{
	return !c->closed || c->closed_ns > last_ns;
}

/* a connection's copy in prev is shared for so long (the ring's span): no block outlives it long */
static uint64_t share_ns = 60 * NT_NSEC_PER_SEC;

/*
 * The copy of c in prev (the held second before), if what is written of it is the same and the
 * copy is not older than the ring's span. *k walks prev's connections, which are in c's order
 * (the model's, by id): a miss only means a copy.
 */
static const struct held_conn *conn_shared(const struct held_snapshot *prev, int *k,
					   const struct snap_conn *c, const char *label,
					   uint64_t now)
{
	const struct held_conn *hc;
	struct conn_fields f;

	if (!prev)
		return NULL;
	while (*k < prev->nconns && prev->conns[*k]->sc.id < c->id)
		(*k)++;
	if (*k >= prev->nconns || (hc = prev->conns[*k])->sc.id != c->id ||
	    now - hc->owner->ts > share_ns)
		return NULL;
	conn_fields(c, label, &f);
	return memcmp(&f, &hc->f, sizeof(f)) ? NULL : hc;
}

/*
 * One block (util/block.h): what is copied out of the state each calm second is freed whole a
 * minute later, and a heap cut into many small copies a second slows every other allocation
 * (the state record's JSON took twice as long beside them). A connection the same as in the
 * held second before is not copied again (most of a calm job's do not move in a second): its
 * copy there is shared, and that block lives on while it is.
 */
struct held_snapshot *record_snapshot_hold(const struct snapshot *snap, const struct nccl_state *ns,
					   uint64_t last_ns, struct held_snapshot **last,
					   size_t *bytes)
{
	struct held_snapshot *h, *prev = *last;
	const struct held_conn **shared;
	size_t size;
	int n = 0, ncopy = 0, k = 0;
	char *cur;

	for (int i = 0; i < snap->nconns; i++)
		n += conn_written(&snap->conns[i], last_ns);
	/* which are shared, found first: the block's size counts only the copies */
	if (!(shared = calloc(n ? (size_t)n : 1, sizeof(*shared))))
		return NULL;
	for (int i = 0, j = 0; i < snap->nconns; i++) {
		const struct snap_conn *c = &snap->conns[i];
		const char *l;

		if (!conn_written(c, last_ns))
			continue;
		l = ns ? nccl_state__socket_label(ns, c->pid, c->c.ino) : NULL;
		shared[j] = conn_shared(prev, &k, c, l, snap->now_ns);
		ncopy += !shared[j++];
	}
	size = block_part(sizeof(*h)) + block_part((size_t)snap->nprocs * sizeof(*h->procs)) +
	       block_part((size_t)n * sizeof(*h->conns)) +
	       (size_t)ncopy * block_part(sizeof(struct held_conn));
	for (int i = 0; ns && i < snap->nprocs; i++)
		size += nccl_state__proc_copy_size(ns, snap->procs[i].pid);
	if (!(cur = malloc(size))) {
		free(shared);
		return NULL;
	}
	h = block_take(&cur, sizeof(*h));
	h->refs = 1;
	h->ts = snap->now_ns;
	h->procs = block_take(&cur, (size_t)snap->nprocs * sizeof(*h->procs));
	h->nprocs = snap->nprocs;
	h->conns = block_take(&cur, (size_t)n * sizeof(*h->conns));
	h->nconns = n;
	for (int i = 0; i < snap->nprocs; i++) {
		const struct snap_proc *p = &snap->procs[i];
		struct held_proc *hp = &h->procs[i];

		hp->pid = p->pid;
		hp->rank = p->rank;
		memcpy(hp->comm, p->comm, sizeof(hp->comm));
		hp->comm[sizeof(hp->comm) - 1] = '\0';
		hp->state = p->state;
		snprintf(hp->where, sizeof(hp->where), "%s", p->where);
		hp->cpu_busy_ns = p->cpu_busy_ns;
		hp->has_gpu = p->gpu != NULL;
		if (p->gpu)
			hp->gpu = *p->gpu;
		/* its NCCL threads, communicators and last collectives */
		hp->nccl = ns ? nccl_state__proc_copy(ns, p->pid, &cur) : NULL;
	}
	for (int i = 0, j = 0; i < snap->nconns; i++) {
		const struct snap_conn *c = &snap->conns[i];
		struct held_conn *hc;

		if (!conn_written(c, last_ns))
			continue;
		if (shared[j]) {
			shared[j]->owner->refs++;
			h->conns[j] = shared[j];
			j++;
			continue;
		}
		hc = block_take(&cur, sizeof(*hc));
		hc->owner = h;
		hc->sc = *c;
		conn_fields(c, ns ? nccl_state__socket_label(ns, c->pid, c->c.ino) : NULL, &hc->f);
		h->conns[j++] = hc;
	}
	free(shared);
	/* the next held second compares with this one */
	h->refs++;
	held_snapshot_free(prev);
	*last = h;
	*bytes = size;
	return h;
}

void held_snapshot_free(void *p)
{
	struct held_snapshot *h = p;

	if (!h || --h->refs)
		return;
	for (int i = 0; i < h->nconns; i++)
		if (h->conns[i]->owner != h)
			held_snapshot_free(h->conns[i]->owner);
	free(h);
}

/* a connection's identity for the delta frames: a hash over all that record_conn writes of it */
static json_t *conn_identity(const struct held_conn *hc)
{
	char id[DELTA_ID_LEN];

	delta_id(&hc->f, sizeof(hc->f), id);
	return json_string(id);
}

json_t *record_snapshot_held(const struct held_snapshot *h)
{
	json_t *rec = json_object(), *procs = json_array(), *conns = json_array();

	for (int i = 0; i < h->nprocs; i++) {
		const struct held_proc *p = &h->procs[i];
		json_t *o = json_object();
		char st[2] = {p->state, 0};

		json_object_set_new(o, "pid", json_integer(p->pid));
		json_object_set_new(o, "rank", p->rank >= 0 ? json_integer(p->rank) : json_null());
		json_object_set_new(o, "comm", json_string(p->comm));
		json_object_set_new(o, "state", json_string(st));
		json_object_set_new(o, "where", json_string(p->where));
		json_object_set_new(o, "cpu_busy", json_real((double)p->cpu_busy_ns / 1e9));
		if (p->has_gpu) {
			json_t *g = json_object();

			sf_put(g, &p->gpu, sf_gpu, sf_gpu_n);
			json_object_del(g, "sampled_ns"); /* not a change of its own */
			json_object_set_new(o, "gpu", g);
		}
		if (p->nccl)
			json_object_set_new(o, "nccl", nccl_proc_json(p->nccl, h->ts));
		json_array_append_new(procs, o);
	}

	for (int i = 0; i < h->nconns; i++) {
		const struct held_conn *hc = h->conns[i];
		json_t *o = record_conn(&hc->sc, h->ts, hc->f.label[0] ? hc->f.label : NULL);

		json_object_set_new(o, DELTA_ID, conn_identity(hc));
		json_array_append_new(conns, o);
	}
	json_object_set_new(rec, "type", json_string("snapshot"));
	json_object_set_new(rec, "ts_ns", json_integer((json_int_t)h->ts));
	json_object_set_new(rec, "procs", procs);
	json_object_set_new(rec, "conns", conns);
	return rec;
}

/* a rank whose connections have moved bytes, none of them within the last second */
static bool rank_silent(const struct snapshot *s, int i)
{
	const struct snap_proc *p = &s->procs[i];
	uint64_t last = 0;
	int n = 0;
	const int *ci = s->ix ? snapshot_conns_of(s, i, &n) : NULL;

	if (p->rank < 0 || p->exited)
		return false;
	/*
	 * NCCL's counters, where read, say it first: a rank asleep between collectives keeps
	 * other sockets busy (PyTorch's TCPStore, RAS keep-alives). None of its communicators
	 * moved (one seldom used is no sign)
	 */
	for (int k = 0; k < s->ncomms; k++) {
		const struct snap_comm *cm = &s->comms[k];

		if (cm->pid == p->pid && cm->seq_ok && !cm->destroyed && cm->changed_ns > last)
			last = cm->changed_ns;
	}
	if (last)
		return s->now_ns - last >= NT_NSEC_PER_SEC;
	for (int k = 0; k < (ci ? n : s->nconns); k++) {
		const struct snap_conn *c = &s->conns[ci ? ci[k] : k];

		/* RAS keep-alives move every second on a rank that waits or sleeps */
		if (c->pid != p->pid || c->closed || !snap_conn_is_data(c))
			continue;
		if (c->c.last_send_ns > last)
			last = c->c.last_send_ns;
		if (c->c.last_recv_ns > last)
			last = c->c.last_recv_ns;
	}
	return last && s->now_ns - last >= NT_NSEC_PER_SEC;
}

bool record_state_due(const struct snapshot *s, int open_findings, uint64_t last_ns)
{
	uint64_t age = s->now_ns - last_ns;

	if (!last_ns || age >= 30 * NT_NSEC_PER_SEC)
		return true;
	if (age < NT_NSEC_PER_SEC)
		return false;
	if (open_findings)
		return true;
	/* a connection new since the last: a merge joins hosts by their connections */
	for (int i = 0; i < s->nconns; i++)
		if (!s->conns[i].closed && s->conns[i].c.first_ns > last_ns &&
		    snap_conn_is_data(&s->conns[i]))
			return true;
	/* quiet mode: connections count nothing, and every communicator moves */
	if (s->tcp_quiet)
		return false;
	for (int i = 0; i < s->nprocs; i++)
		if (rank_silent(s, i))
			return true;
	return false;
}

json_t *record_state(const struct snapshot *snap)
{
	return json_pack("{s:s, s:I, s:o}", "type", "state", "ts_ns", (json_int_t)snap->now_ns,
			 "state", snapjson_from_snapshot(snap));
}

json_t *record_identity(int pid, const struct model_proc_info *pi, uint64_t now)
{
	json_t *rec = json_object(), *env = json_object();

	for (int i = 0; i < pi->nenv; i++)
		json_object_set_new(env, pi->env[i].key, json_string(pi->env[i].val));
	json_object_set_new(rec, "type", json_string("rank"));
	json_object_set_new(rec, "ts_ns", json_integer((json_int_t)now));
	json_object_set_new(rec, "pid", json_integer(pid));
	json_object_set_new(rec, "rank", json_integer(pi->ri.rank));
	json_object_set_new(rec, "rank_source", json_string(pi->ri.source));
	json_object_set_new(rec, "local_rank",
			    pi->ri.local_rank >= 0 ? json_integer(pi->ri.local_rank) : json_null());
	json_object_set_new(rec, "world_size",
			    pi->ri.world_size >= 0 ? json_integer(pi->ri.world_size) : json_null());
	json_object_set_new(rec, "master_addr",
			    pi->ri.master_addr[0] ? json_string(pi->ri.master_addr) : json_null());
	json_object_set_new(rec, "master_port",
			    pi->ri.master_port >= 0 ? json_integer(pi->ri.master_port)
						    : json_null());
	json_object_set_new(rec, "env", env);
	return rec;
}

json_t *record_nccl_lib(int slot, const struct nccl_lib *lib, uint64_t now)
{
	json_t *o = json_object();

	json_object_set_new(o, "type", json_string("nccl_lib"));
	json_object_set_new(o, "ts_ns", json_integer((json_int_t)now));
	json_object_set_new(o, "slot", json_integer(slot));
	json_object_set_new(
		o, "kind", json_string(lib->offs.lib_kind == NT_LIB_VERBS ? "libibverbs" : "nccl"));
	json_object_set_new(o, "path", json_string(lib->path));
	json_object_set_new(o, "version", json_string(lib->version));
	json_object_set_new(o, "build_id", json_string(lib->build_id));
	json_object_set_new(o, "offsets", json_string(nccl_offsets_source_name(lib->offs_src)));
	json_object_set_new(o, "probes_resolved", json_integer(lib->resolved));
	json_object_set_new(o, "core_missing", json_integer(lib->missing_core));
	return o;
}

json_t *record_nccl_attach(int pid, int slot, int nprobes, int nfailed, uint64_t now)
{
	json_t *o = json_object();

	json_object_set_new(o, "type", json_string("nccl_attach"));
	json_object_set_new(o, "ts_ns", json_integer((json_int_t)now));
	json_object_set_new(o, "pid", json_integer(pid));
	json_object_set_new(o, "slot", json_integer(slot));
	json_object_set_new(o, "probes", json_integer(nprobes));
	json_object_set_new(o, "failed", json_integer(nfailed));
	return o;
}

json_t *record_tcp_hooks(uint64_t now, bool on, const char *why)
{
	return json_pack("{s:s, s:I, s:b, s:s}", "type", "tcp_hooks", "ts_ns", (json_int_t)now,
			 "on", on, "why", why);
}

json_t *record_header(const struct record_header *hd)
{
	json_t *h = json_object(), *cmd = json_array();

	for (int i = 0; i < hd->ncmd; i++)
		json_array_append_new(cmd, json_string(hd->cmd[i]));
	json_object_set_new(h, "nccltrace", json_integer(NT_DUMP_FORMAT));
	json_object_set_new(h, "version", json_string(NT_VERSION));
	json_object_set_new(h, "host", json_string(hd->host));
	/* ts_ns fields are CLOCK_MONOTONIC (bpf_ktime_get_ns); add this to get wall-clock time */
	json_object_set_new(h, "boot_to_realtime_ns",
			    json_integer((json_int_t)(hd->realtime_ns - hd->mono_ns)));
	json_object_set_new(h, "clock", json_string("CLOCK_MONOTONIC"));
	json_object_set_new(h, "start_ns", json_integer((json_int_t)hd->mono_ns));
	json_object_set_new(h, "cmd", cmd);
	if (hd->ifaces)
		json_object_set_new(h, "ifaces", json_string(hd->ifaces));
	if (hd->loopback && hd->loopback[0])
		json_object_set_new(h, "loopback", json_string(hd->loopback));
	json_object_set_new(h, "tracer_pid", json_integer(hd->tracer_pid));
	json_object_set_new(h, "attach_mode", json_string(hd->attach_mode));
	json_object_set_new(h, "attach_notes", json_string(hd->attach_notes));
	json_object_set_new(h, "missing_hooks", json_string(hd->missing_hooks));
	json_object_set_new(h, "stall_threshold_s", json_real(hd->stall_threshold_s));
	/* loading (and verifying) the BPF programs; the footer's tracer_cpu_s includes it */
	json_object_set_new(h, "setup_cpu_s", json_real(hd->setup_cpu_s));
	if (hd->env) {
		json_t *env = json_object();

		for (int i = 0; i < hd->env->n; i++)
			json_object_set_new(env, hd->env->v[i].name,
					    json_string(hd->env->v[i].value));
		json_object_set_new(h, "job_env", env);
		if (hd->env->nnotes) {
			json_t *notes = json_array();

			for (int i = 0; i < hd->env->nnotes; i++)
				json_array_append_new(notes, json_string(hd->env->notes[i]));
			json_object_set_new(h, "job_env_notes", notes);
		}
	}
	return h;
}

json_t *record_suppressed(const uint64_t stats[NT_STAT_MAX], const uint64_t *supp)
{
	json_t *o = json_object(), *by = json_object();

	json_object_set_new(o, "total",
			    json_integer(stats[NT_STAT_SUPP_PROC] + stats[NT_STAT_SUPP_CONN] +
					 stats[NT_STAT_SUPP_NCCL]));
	json_object_set_new(o, "proc", json_integer(stats[NT_STAT_SUPP_PROC]));
	json_object_set_new(o, "conn", json_integer(stats[NT_STAT_SUPP_CONN]));
	json_object_set_new(o, "nccl", json_integer(stats[NT_STAT_SUPP_NCCL]));
	for (int i = 1; supp && i < NT_P_MAX; i++)
		if (supp[i] && nccl_probe(i))
			json_object_set_new(by, nccl_probe(i)->name, json_integer(supp[i]));
	json_object_set_new(o, "by_probe", by);
	return o;
}

json_t *record_footer(const uint64_t stats[NT_STAT_MAX], const uint64_t *supp, uint64_t nfindings,
		      double cpu_s, int exit_status, uint64_t now)
{
	json_t *f = json_object(), *lost = json_object(), *tot = json_object();

	json_object_set_new(lost, "ringbuf_drops", json_integer(stats[NT_STAT_RB_DROP]));
	json_object_set_new(lost, "conns_map_full", json_integer(stats[NT_STAT_CONN_FULL]));
	json_object_set_new(lost, "traced_map_full", json_integer(stats[NT_STAT_TRACED_FULL]));
	json_object_set_new(tot, "send_events", json_integer(stats[NT_STAT_SEND_EVENTS]));
	json_object_set_new(tot, "recv_events", json_integer(stats[NT_STAT_RECV_EVENTS]));
	json_object_set_new(tot, "state_events", json_integer(stats[NT_STAT_STATE_EVENTS]));
	json_object_set_new(tot, "tcp_probe_events", json_integer(stats[NT_STAT_PROBE_EVENTS]));
	json_object_set_new(tot, "poll_calls", json_integer(stats[NT_STAT_POLL_CALLS]));
	json_object_set_new(tot, "findings", json_integer(nfindings));
	json_object_set_new(tot, "tracer_cpu_s", json_real(cpu_s));
	json_object_set_new(f, "type", json_string("footer"));
	json_object_set_new(f, "ts_ns", json_integer((json_int_t)now));
	json_object_set_new(f, "exit_status", json_integer(exit_status));
	json_object_set_new(f, "lost", lost);
	json_object_set_new(f, "suppressed", record_suppressed(stats, supp));
	json_object_set_new(f, "totals", tot);
	return f;
}

bool record_conn_event_kept(unsigned int type, const struct nt_ev_conn *e)
{
	return type != NT_EV_RETRANS || e->c.state != 1 /* TCP_ESTABLISHED */ ||
	       e->c.retrans <= 8 || e->c.retrans % 64 == 0;
}

/* the calm rate's times (records.h record_rate_scale): keep one in 30 s, a minute after start */
static uint64_t keep_every_ns = 30 * NT_NSEC_PER_SEC, calm_after_ns = 60 * NT_NSEC_PER_SEC,
		after_change_ns = 30 * NT_NSEC_PER_SEC;

void record_rate_scale(unsigned ring_s)
{
	keep_every_ns = (uint64_t)ring_s * NT_NSEC_PER_SEC / 2;
	calm_after_ns = (uint64_t)ring_s * NT_NSEC_PER_SEC;
	after_change_ns = (uint64_t)ring_s * NT_NSEC_PER_SEC / 2;
	share_ns = (uint64_t)ring_s * NT_NSEC_PER_SEC;
}

bool record_snapshot_busy(uint64_t now, uint64_t start_ns, uint64_t last_change_ns, bool busy)
{
	return busy || now - start_ns < calm_after_ns ||
	       (last_change_ns && now - last_change_ns < after_change_ns);
}

bool record_snapshot_kept(const struct snapshot *s, uint64_t last_kept_ns, uint64_t last_ns)
{
	if (s->now_ns - last_kept_ns >= keep_every_ns)
		return true;
	/* a connection closed since the last: written once, in this one */
	for (int i = 0; i < s->nconns; i++)
		if (s->conns[i].closed && s->conns[i].closed_ns > last_ns)
			return true;
	return false;
}

bool snapshot_in_setup(const struct snapshot *s)
{
	for (int i = 0; i < s->nprocs; i++)
		if (s->procs[i].nccl_setup != SNAP_SETUP_NONE && !s->procs[i].exited)
			return true;
	return false;
}
