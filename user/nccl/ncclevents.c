// SPDX-License-Identifier: MIT
/*
 * Decoding the NCCL probes' events into the NCCL state (phase stacks, communicators, settings,
 * warnings, sockets, connect retries), each with the dump record it is worth.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include "nccl/ibwarn.h"
#include "nccl/ncclstate_priv.h"
#include "trace/procfs.h"

void nstate_addr_string(const uint8_t *raw, char *buf, size_t len)
{
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	char a[INET6_ADDRSTRLEN] = "?";

	memcpy(&sin, raw, sizeof(sin));
	if (sin.sin_family == AF_INET) {
		inet_ntop(AF_INET, &sin.sin_addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(sin.sin_port));
	} else if (sin.sin_family == AF_INET6) {
		memcpy(&sin6, raw, sizeof(sin6));
		inet_ntop(AF_INET6, &sin6.sin6_addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, ntohs(sin6.sin6_port));
	} else {
		snprintf(buf, len, "unknown");
	}
}

/* The socket's inode, for joining with the kernel's connection table. */
static void label_socket(struct nproc *p, const struct nt_ev_nccl *e, const struct nthread *t)
{
	uint64_t ino;
	struct nsock *ns = NULL;

	if (e->d.sock.fd < 0 || procfs_fd_socket_inode(p->pid, e->d.sock.fd, &ino))
		return;
	for (int i = 0; i < p->nsock; i++)
		if (p->sock[i].ino == ino)
			ns = &p->sock[i];
	if (!ns) {
		if (p->nsock == MAX_SOCKS)
			memmove(&p->sock[0], &p->sock[1], (MAX_SOCKS - 1) * sizeof(p->sock[0]));
		else
			p->nsock++;
		ns = &p->sock[p->nsock - 1];
	}
	ns->ino = ino;
	/* the phase that made it: the socket call's own frame is popped already */
	if (t && t->depth >= 1 && t->depth - 1 < NT_PHASE_DEPTH)
		snprintf(ns->label, sizeof(ns->label), "%s (%s)",
			 nccl_socket_type_name(e->d.sock.type),
			 nstate_probe_label(t->probe[t->depth - 1]));
	else
		snprintf(ns->label, sizeof(ns->label), "%s", nccl_socket_type_name(e->d.sock.type));
}

/* What a phase is about, where its arguments say: the graph, the peer, the proxy's rank. */
static void phase_detail(const struct nt_ev_nccl *e, char *buf, size_t len)
{
	static const char *const graphs[] = {"ring", "tree", "collnet chain", "nvls",
					     "collnet direct"};
	int64_t g = (int64_t)e->args[3];

	buf[0] = '\0';
	switch (e->probe) {
	case NT_P_P2P_SETUP:
		if (g >= 0 && g < 5)
			snprintf(buf, len, "%s", graphs[g]);
		break;
	case NT_P_BOOTSTRAP_SEND:
	case NT_P_BOOTSTRAP_RECV:
		snprintf(buf, len, "peer %d tag %d", (int)e->args[1], (int)e->args[2]);
		break;
	case NT_P_PROXY_CONNECT:
		snprintf(buf, len, "proxy rank %d", (int)e->args[3]);
		break;
	default:
		break;
	}
}

/* NCCL's IB completion-error WARN: the first one is kept, the others counted. */
static void ib_warning(struct nproc *p, const struct nt_ev_nccl *e, const char *text)
{
	struct ib_completion c;

	if (!ib_parse_completion(text, &c))
		return;
	if (!p->ib.count++) {
		p->ib.ts_ns = e->h.ts_ns;
		snprintf(p->ib.text, sizeof(p->ib.text), "%.255s", text);
		snprintf(p->ib.peer, sizeof(p->ib.peer), "%s", c.peer);
		snprintf(p->ib.hca, sizeof(p->ib.hca), "%s", c.hca);
		p->ib.status = c.status;
		p->ib.opcode = c.opcode;
		p->ib.vendor_err = c.vendor_err;
		p->ib.roce = c.roce;
		for (int i = 0; i < p->ncomm; i++)
			p->ib.colls_before += snap_comm_total(&p->comm[i].sc);
	}
}

/* ncclEnqueueCheck (--collectives): one collective launched; no phase (it has no return probe) */
static json_t *collective_record(struct nproc *p, const struct nt_ev_nccl *e)
{
	json_t *o = nstate_record(e, "nccl");
	char h[24];

	json_object_set_new(o, "event", json_string("enter"));
	json_object_set_new(o, "phase", json_string("enqueue"));
	json_object_set_new(o, "coll", json_string(snap_coll_name(e->d.info.coll)));
	json_object_set_new(o, "count", json_integer((json_int_t)e->d.info.count));
	json_object_set_new(o, "datatype", json_integer(e->d.info.datatype));
	json_object_set_new(o, "root", json_integer(e->d.info.root));
	for (int i = 0; i < p->ncomm; i++) {
		struct snap_comm *c = &p->comm[i].sc;

		if (p->comm[i].addr != e->d.info.comm || p->comm[i].gone)
			continue;
		c->last_coll = e->d.info.coll;
		c->last_count = e->d.info.count;
		c->last_dtype = e->d.info.datatype;
		c->last_root = e->d.info.root;
		c->args_src = SNAP_SRC_ENQUEUE;
		snprintf(h, sizeof(h), "%016llx", (unsigned long long)c->hash);
		json_object_set_new(o, "comm_hash", json_string(h));
		/* its place in the communicator's sequence of this function, as seqNumber */
		if (e->d.info.coll >= 0 && e->d.info.coll < NSEQ)
			json_object_set_new(
				o, "seq",
				json_integer((json_int_t)++p->comm[i].enq[e->d.info.coll]));
	}
	return o;
}

/* A thread start routine: the thread's role (proxy service, proxy progress, ...). */
static json_t *role_event(struct nthread *t, const struct nt_ev_nccl *e)
{
	json_t *o;

	if (t)
		t->role = e->probe;
	o = nstate_record(e, "nccl_thread");
	json_object_set_new(o, "role", json_string(nccl_probe(e->probe)->name + strlen("role_")));
	return o;
}

/* ncclEnvPluginGetEnv's return: a setting as NCCL read it (NULL when unset). */
static json_t *env_event(struct nproc *p, const struct nt_ev_nccl *e)
{
	char name[65], val[193];
	json_t *o;

	snprintf(name, sizeof(name), "%s", e->d.env.name);
	snprintf(val, sizeof(val), "%s", e->d.env.value);
	/* NCCL reads a parameter once; later reads add nothing */
	if (!nstate_set_setting(p, name, e->retval ? val : NULL, true))
		return NULL;
	o = nstate_record(e, "nccl_setting");
	json_object_set_new(o, "name", json_string(name));
	json_object_set_new(o, "value", e->retval ? json_string(val) : json_null());
	return o;
}

/*
 * A failure WARNs in a burst: where it starts first ("socketStartConnect: Connect to ... failed
 * : Software caused connection abort"), then the callers it goes up through, the last of them
 * often the least telling. WARNs within WARN_BURST_NS of the one before are one failure: its
 * first is kept along with the last, and how many it had.
 */
#define WARN_BURST_NS (NT_NSEC_PER_SEC)

static void note_warning(struct nproc *p, const struct nt_ev_nccl *e, const char *text)
{
	if (!p->warnings || e->h.ts_ns - p->last_warning_ns > WARN_BURST_NS) {
		snprintf(p->first_warning, sizeof(p->first_warning), "%.255s", text);
		p->burst_warnings = 0;
	}
	p->burst_warnings++;
	p->warnings++;
	p->last_warning_ns = e->h.ts_ns;
	snprintf(p->last_warning, sizeof(p->last_warning), "%.255s", text);
	ib_warning(p, e, text);
}

/* ncclDebugLog at level WARN: the text NCCL formatted into ncclLastError. */
static json_t *warn_event(struct nproc *p, const struct nt_ev_nccl *e)
{
	char text[257];
	json_t *o;

	snprintf(text, sizeof(text), "%s", e->d.text);
	/*
	 * NCCL downgrades some WARNs to INFO (ncclDebugNoWarn, e.g. while probing NVLS): those
	 * never reach ncclLastError. Seen on the GPU machine as empty texts.
	 */
	if (!text[0]) {
		p->suppressed++;
		return NULL;
	}
	note_warning(p, e, text);
	o = nstate_record(e, "nccl_warning");
	json_object_set_new(o, "text", json_string(text));
	return o;
}

/*
 * ncclGetLastError's return: NCCL's last error text, where the job asks for it (PyTorch does
 * after a failure). The way to NCCL's words on a stripped build, where ncclDebugLog is hidden.
 */
static json_t *last_error_event(struct nproc *p, const struct nt_ev_nccl *e)
{
	char text[257];
	json_t *o;

	snprintf(text, sizeof(text), "%s", e->d.text);
	/* the job may ask again and again: tell a text once */
	if (!text[0] || !strcmp(text, p->last_warning))
		return NULL;
	note_warning(p, e, text);
	o = nstate_record(e, "nccl_warning");
	json_object_set_new(o, "text", json_string(text));
	json_object_set_new(o, "from", json_string("ncclGetLastError"));
	return o;
}

/* ncclCommDestroy/ncclCommAbort: the communicator's final counts, read before the free. */
static json_t *destroy_event(struct nccl_state *s, struct nproc *p, const struct nt_ev_nccl *e)
{
	json_t *rec;

	for (int i = 0; i < p->ncomm; i++) {
		struct ncomm *c = &p->comm[i];
		const struct nt_nccl_offsets *o;

		if (c->addr != e->d.fin.comm || c->gone)
			continue;
		c->gone = true;
		c->sc.destroyed = true;
		o = nstate_offs(s, c->lib);
		if (o && o->comm_seq < 0) {
			struct nccl_shres r = {.comm = c->addr,
					       .shres = e->d.fin.shres,
					       .owner = e->d.fin.owner,
					       .collops = e->d.fin.collops,
					       .refcount = e->d.fin.refcount,
					       .persistent = e->d.fin.persistent};

			nstate_collops(p, c, &r, e->h.ts_ns);
		} else if (o) {
			if (!c->sc.seq_ok || memcmp(c->sc.seq, e->d.fin.seq, sizeof(c->sc.seq)))
				c->sc.changed_ns = e->h.ts_ns;
			memcpy(c->sc.seq, e->d.fin.seq, sizeof(c->sc.seq));
			c->sc.seq_ok = true;
			c->sc.seq_src = SNAP_SRC_SEQNUMBER;
		}
	}
	/* the plugin's final counts, while the process still lives (stripped builds) */
	nprof_read_now(s, p->pid, e->h.ts_ns);
	rec = nstate_record(e, "nccl");
	json_object_set_new(rec, "event", json_string("enter"));
	json_object_set_new(rec, "phase", json_string(nccl_probe(e->probe)->name));
	return rec;
}

/* socketConnectCheck: NCCL retries a connect (refused, unreachable...). */
static json_t *retry_event(struct nproc *p, const struct nt_ev_nccl *e)
{
	char a[64];
	json_t *o;

	p->retries++;
	p->last_retry_ns = e->h.ts_ns;
	o = nstate_record(e, "nccl_connect_retry");
	nstate_addr_string(e->d.sock.addr, a, sizeof(a));
	snprintf(p->retry_addr, sizeof(p->retry_addr), "%s", a);
	json_object_set_new(o, "addr", json_string(a));
	json_object_set_new(o, "retries", json_integer(p->retries));
	return o;
}

/*
 * A communicator seen for the first time (at bootstrapInit, or at a public init call's return,
 * add): its counters are sampled from now. Before 2.23 NCCL sets its hash after bootstrapInit
 * (init.cc at v2.21.5-1), 0 at its entry: a later probe on it (initTransportsRank) gives it.
 */
static void comm_seen(struct nproc *p, const struct nt_ev_nccl *e, bool add)
{
	nstate_comm_seen(p, e->d.comm.comm, e->lib, e->d.comm.hash, e->d.comm.rank,
			 e->d.comm.nranks, add);
}

/*
 * A public init call (ncclCommInitRank*, ncclCommSplit): the rank and nranks it was given, and
 * at its return the communicator made, with its hash where the library's offsets tell it.
 */
static void api_init_fields(struct nproc *p, const struct nt_ev_nccl *e, json_t *o)
{
	char h[24];

	if (e->d.comm.rank >= 0)
		json_object_set_new(o, "rank", json_integer(e->d.comm.rank));
	if (e->d.comm.nranks > 0)
		json_object_set_new(o, "nranks", json_integer(e->d.comm.nranks));
	if (!e->ret || !e->d.comm.comm)
		return;
	snprintf(h, sizeof(h), "%llx", (unsigned long long)e->d.comm.comm);
	json_object_set_new(o, "comm", json_string(h));
	if (!e->d.comm.hash)
		return;
	snprintf(h, sizeof(h), "%016llx", (unsigned long long)e->d.comm.hash);
	json_object_set_new(o, "comm_hash", json_string(h));
	/* where bootstrapInit is not probed (a stripped build with verified offsets) */
	comm_seen(p, e, true);
}

/* What a phase's entry or return says beyond the phase: comm, peer, socket, done or not. */
static void phase_fields(struct nproc *p, struct nthread *t, const struct nt_ev_nccl *e, json_t *o)
{
	if (nt_probe_api_init(e->probe)) {
		api_init_fields(p, e, o);
		return;
	}
	if (nt_probe_has_comm(e->probe) && !e->ret && e->d.comm.comm) {
		char h[24];

		snprintf(h, sizeof(h), "%016llx", (unsigned long long)e->d.comm.hash);
		json_object_set_new(o, "rank", json_integer(e->d.comm.rank));
		json_object_set_new(o, "nranks", json_integer(e->d.comm.nranks));
		json_object_set_new(o, "comm_hash", json_string(h));
		if (e->probe == NT_P_P2P_SETUP && (int64_t)e->args[3] >= 0)
			json_object_set_new(o, "graph", json_integer((int64_t)e->args[3]));
		comm_seen(p, e, e->probe == NT_P_BOOTSTRAP_INIT);
	}
	switch (e->probe) {
	case NT_P_ALLGATHER:
	case NT_P_BOOTSTRAP_SEND:
	case NT_P_BOOTSTRAP_RECV:
		if (e->ret)
			break;
		json_object_set_new(o, "rank", json_integer(e->d.comm.rank));
		json_object_set_new(o, "nranks", json_integer(e->d.comm.nranks));
		if (e->probe != NT_P_ALLGATHER) {
			json_object_set_new(o, "peer", json_integer((int)e->args[1]));
			json_object_set_new(o, "tag", json_integer((int)e->args[2]));
		}
		break;
	case NT_P_SOCKET_CONNECT:
	case NT_P_SOCKET_ACCEPT: {
		char a[64];

		if (!e->ret && e->probe == NT_P_SOCKET_ACCEPT)
			break;
		nstate_addr_string(e->d.sock.addr, a, sizeof(a));
		json_object_set_new(o, "fd", json_integer(e->d.sock.fd));
		json_object_set_new(o, "addr", json_string(a));
		json_object_set_new(o, "socket_type",
				    json_string(nccl_socket_type_name(e->d.sock.type)));
		json_object_set_new(o, "state", json_integer(e->d.sock.state));
		if (e->ret && e->retval == 0)
			label_socket(p, e, t);
		break;
	}
	case NT_P_NET_CONNECT:
	case NT_P_NET_ACCEPT:
		if (e->ret)
			json_object_set_new(o, "done", json_boolean(e->args[3] != 0));
		break;
	}
}

/*
 * The public collective calls (only while a process's first ones run): a call that returns
 * outside a group, or a group's end, is a collective done; calls inside a group return at once.
 */
static void coll_call(struct nproc *p, struct nthread *t, const struct nt_ev_nccl *e)
{
	if (!e->ret || !t)
		return;
	if (e->probe == NT_P_API_GROUP_END && t->group_depth > 0)
		t->group_depth--;
	if (t->group_depth == 0)
		p->coll_returns++;
}

/* t's top frame is the one e entered (a tick's read of the BPF stack put it there first) */
static bool frame_is(const struct nthread *t, const struct nt_ev_nccl *e)
{
	return e->since_ns && t->depth > 0 && t->depth <= NT_PHASE_DEPTH &&
	       t->probe[t->depth - 1] == e->probe && t->since[t->depth - 1] == e->since_ns;
}

/* A phase was entered or left: the thread's stack kept as BPF keeps it, and the record. */
static json_t *phase_event(struct nproc *p, struct nthread *t, const struct nt_ev_nccl *e)
{
	/* a frame's entry time is the BPF frame's (the stacks read at the tick match it) */
	uint64_t since = !e->ret && e->since_ns ? e->since_ns : e->h.ts_ns;
	json_t *o;

	if (nt_probe_api_coll(e->probe))
		coll_call(p, t, e);
	/* a new communicator: its first collective connects its rings */
	if (nt_probe_api_init(e->probe) && e->ret)
		p->coll_returns_at_init = p->coll_returns;

	/*
	 * A public call entered with nothing probed under it: the calls seeded from the stack at
	 * attach have returned unseen (their entries were before the probes)
	 */
	if (t && !e->ret && t->seeded && e->depth <= 1 &&
	    (nt_probe_api_coll(e->probe) || nt_probe_api_init(e->probe)))
		t->depth = t->seeded = 0;
	/*
	 * The entry of the call the stack showed innermost, read after the stack though it came
	 * first: that frame is this call's, and its return may pop it now
	 */
	if (t && !e->ret && t->seeded && t->depth == t->seeded && e->h.ts_ns <= t->seed_ns &&
	    t->probe[t->depth - 1] == e->probe) {
		t->since[t->depth - 1] = since;
		phase_detail(e, t->detail[t->depth - 1], sizeof(t->detail[0]));
		t->seeded--;
	} else if (t && !e->ret && frame_is(t, e)) {
		/* read from the BPF stack at a tick before its record came: what it says only */
		phase_detail(e, t->detail[t->depth - 1], sizeof(t->detail[0]));
	} else if (t && !e->ret) {
		int cls = t->depth ? SNAP_SETUP_NONE : nstate_setup_class(p, e->probe);

		if (cls != SNAP_SETUP_NONE)
			p->setup_entered_ns[cls] = since;
		if (t->depth < NT_PHASE_DEPTH) {
			t->probe[t->depth] = e->probe;
			t->since[t->depth] = since;
			phase_detail(e, t->detail[t->depth], sizeof(t->detail[0]));
		}
		t->depth++;
	} else if (t && e->ret && t->depth > 0) {
		/*
		 * the same rule as BPF's: only the frame of this very probe is left; and by its
		 * entry time, when the record has it: another frame of the probe on top is a later
		 * call's, this one's was taken off already by a tick's read of the BPF stack
		 */
		if (t->depth > NT_PHASE_DEPTH ||
		    (t->probe[t->depth - 1] == e->probe &&
		     (!e->since_ns || t->since[t->depth - 1] == e->since_ns || t->seeded)))
			t->depth--;
	}
	o = nstate_record(e, "nccl");
	json_object_set_new(o, "event", json_string(e->ret ? "exit" : "enter"));
	json_object_set_new(o, "phase", json_string(nstate_probe_label(e->probe)));
	if (e->ret) {
		json_object_set_new(o, "result", json_integer(e->retval));
		json_object_set_new(o, "duration_s",
				    json_real(e->since_ns ? (e->h.ts_ns - e->since_ns) / 1e9 : 0));
	}
	phase_fields(p, t, e, o);
	return o;
}

json_t *nccl_state__event(struct nccl_state *s, const struct nt_ev_nccl *e)
{
	struct nproc *p = nstate_proc(s, e->pid);
	struct nthread *t;

	if (!p || !nccl_probe(e->probe))
		return NULL;
	t = nstate_thread(p, e->tid);
	if (e->probe >= NT_P_ROLE_PROXY_SERVICE)
		return role_event(t, e);
	switch (e->probe) {
	case NT_P_ENV:
		return env_event(p, e);
	case NT_P_DEBUG_LOG:
		return warn_event(p, e);
	case NT_P_API_LAST_ERROR:
		return e->ret ? last_error_event(p, e) : NULL;
	case NT_P_API_GROUP_START:
		/* entry only, no phase: the group's collectives return at once */
		if (t)
			t->group_depth++;
		return NULL;
	case NT_P_COMM_DESTROY:
	case NT_P_COMM_ABORT:
		return destroy_event(s, p, e);
	case NT_P_CONNECT_RETRY:
		return retry_event(p, e);
	case NT_P_ENQUEUE:
		return collective_record(p, e);
	default:
		if (e->probe >= NT_P_IBV_OPEN_DEVICE && e->probe <= NT_P_IBV_ASYNC_EVENT)
			return nstate_verbs_event(p, t, e);
		return phase_event(p, t, e);
	}
}
