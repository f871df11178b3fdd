// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include "ibwarn.h"
#include "nccllib.h"
#include "ncclstate.h"
#include "procfs.h"
#include "snapshot.h"

#define MAX_THREADS  64
#define MAX_COMMS    16
#define MAX_SETTINGS 256
#define MAX_SOCKS    256
#define NSEQ	     SNAP_NSEQ
/* a communicator that moved this recently is progressing: its samples count for stragglers */
#define PROGRESS_WINDOW_NS NT_NSEC_PER_SEC

struct nthread {
	int tid;
	int role; /* enum nt_probe of the start routine, 0 if none */
	int depth;
	uint16_t probe[NT_PHASE_DEPTH];
	uint64_t since[NT_PHASE_DEPTH];
	char detail[NT_PHASE_DEPTH][24]; /* "ring", "peer 3 tag 257", "proxy rank 1" */
	/* ibv_modify_qp's attributes, from its entry until its return says whether they took */
	__typeof__(((struct nt_ev_nccl *)0)->d.ib) modify;
	uint32_t modify_mask;
	bool modify_pending;
};

struct ncomm {
	uint64_t addr;
	int lib;
	bool gone;	    /* destroyed: its memory is NCCL's no more, never read again */
	uint64_t enq[NSEQ]; /* collectives seen launched (--collectives) */
	struct snap_comm sc;
};

struct nsock {
	uint64_t ino;
	char label[48];
};

struct nproc {
	int pid;
	struct nthread th[MAX_THREADS];
	int nth;
	struct ncomm comm[MAX_COMMS];
	int ncomm;
	struct snap_setting set[MAX_SETTINGS]; /* name and value strdup'ed */
	int nset;
	struct nsock sock[MAX_SOCKS];
	int nsock;
	uint64_t warnings;
	uint64_t suppressed;	 /* WARN calls NCCL downgraded to INFO */
	struct snap_ib_error ib; /* count 0: none */
	struct snap_ib ibv;	 /* verbs: QPs, MRs, async events */
	bool has_ibv;
	struct snap_ib_handshake ib_hs; /* sampled from the BPF phase stacks */
	uint64_t retries;
	uint64_t last_retry_ns;
	char retry_addr[64];
	char last_warning[256];
};

struct nccl_state {
	struct nproc *p;
	int n, cap;
	struct snap_comm *snap; /* what nccl_state__comms() hands out */
	int snapcap;
	int (*seq_off)(void *, int);
	void *ctx;
};

static const char *const sock_types[] = {"unknown", "bootstrap", "proxy", "net", "ib", "ras"};

const char *nccl_socket_type_name(int type)
{
	return type > 0 && type < 6 ? sock_types[type] : "unknown";
}

struct nccl_state *nccl_state__new(int (*seq_off)(void *, int), void *ctx)
{
	struct nccl_state *s = calloc(1, sizeof(*s));

	if (s) {
		s->seq_off = seq_off;
		s->ctx = ctx;
	}
	return s;
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
	free(s->snap);
	free(s);
}

static struct nproc *proc_get(struct nccl_state *s, int pid)
{
	for (int i = 0; i < s->n; i++)
		if (s->p[i].pid == pid)
			return &s->p[i];
	if (s->n == s->cap) {
		int cap = s->cap ? s->cap * 2 : 8;
		struct nproc *np = realloc(s->p, cap * sizeof(*np));

		if (!np)
			return NULL;
		s->p = np;
		s->cap = cap;
	}
	memset(&s->p[s->n], 0, sizeof(s->p[0]));
	s->p[s->n].pid = pid;
	return &s->p[s->n++];
}

static const struct nproc *proc_find(const struct nccl_state *s, int pid)
{
	for (int i = 0; i < s->n; i++)
		if (s->p[i].pid == pid)
			return &s->p[i];
	return NULL;
}

static struct nthread *thread_get(struct nproc *p, int tid)
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

static const char *probe_label(int probe)
{
	const struct nccl_probe_def *d = nccl_probe(probe);

	return d ? (d->phase ? d->phase : d->name) : "?";
}

static void addr_string(const uint8_t *raw, char *buf, size_t len)
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
			 probe_label(t->probe[t->depth - 1]));
	else
		snprintf(ns->label, sizeof(ns->label), "%s", nccl_socket_type_name(e->d.sock.type));
}

static json_t *base_record(const struct nt_ev_nccl *e, const char *type)
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

/* "p2p setup (ring)" */
static void frame_label(const struct nthread *t, int d, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s", probe_label(t->probe[d]), t->detail[d][0] ? " (" : "",
		 t->detail[d], t->detail[d][0] ? ")" : "");
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
			for (int f = 0; f < NSEQ; f++)
				p->ib.colls_before += p->comm[i].sc.seq[f];
	}
}

/*
 * Record a setting; NCCL's own read wins over the environment. Returns false if it adds
 * nothing (NCCL read it already).
 */
static bool set_setting(struct nproc *p, const char *name, const char *value, bool read)
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
	struct nproc *p = proc_get(s, pid);

	if (p && value)
		set_setting(p, name, value, false);
}

void nccl_state__proc_snap(const struct nccl_state *s, struct snap_proc *sp)
{
	const struct nproc *p = proc_find(s, sp->pid);

	sp->set = p ? p->set : NULL;
	sp->nset = p ? p->nset : 0;
	sp->nccl_retries = p ? p->retries : 0;
	sp->nccl_last_retry_ns = p ? p->last_retry_ns : 0;
	sp->nccl_retry_addr = p && p->retry_addr[0] ? p->retry_addr : NULL;
	sp->nccl_warning = p && p->last_warning[0] ? p->last_warning : NULL;
	sp->ib_err = p && p->ib.count ? &p->ib : NULL;
	sp->ib = p && p->has_ibv ? &p->ibv : NULL;
	if (p)
		sp->ib_hs = p->ib_hs;
}

void nccl_state__sample_ib(struct nccl_state *s, uint64_t now,
			   int (*stack)(void *ctx, int tid, struct nt_phase_stack *out), void *ctx)
{
	for (int i = 0; i < s->n; i++) {
		struct nproc *p = &s->p[i];
		struct snap_ib_handshake hs = {.stage = -1};

		/* the IB handshakes run in a proxy thread (the service one); only IB users have them */
		if (!p->has_ibv)
			continue;
		for (int k = 0; k < p->nth; k++) {
			struct nt_phase_stack st;
			uint32_t d;

			if ((p->th[k].role != NT_P_ROLE_PROXY_SERVICE &&
			     p->th[k].role != NT_P_ROLE_PROXY_PROGRESS) ||
			    stack(ctx, p->th[k].tid, &st))
				continue;
			d = st.depth - 1;
			/*
			 * Inside one call: the frame on top is an IB connect/accept a second old,
			 * and the thread has started no call since (the latest call's entry is that
			 * frame's, within a millisecond): a frame whose return was lost would look
			 * old while the thread goes on polling
			 */
			if (st.depth > 0 && d < NT_PHASE_DEPTH &&
			    (st.f[d].probe == NT_P_IB_CONNECT || st.f[d].probe == NT_P_IB_ACCEPT) &&
			    now - st.f[d].since_ns > NT_NSEC_PER_SEC &&
			    st.poll_last_ns - st.f[d].since_ns < NT_NSEC_PER_SEC / 1000) {
				hs = (struct snap_ib_handshake){st.f[d].probe, true,
								st.f[d].since_ns, st.poll_stage,
								p->th[k].tid};
				break;
			}
			if (st.poll_probe && now - st.poll_last_ns <= NT_NSEC_PER_SEC)
				hs = (struct snap_ib_handshake){st.poll_probe, false,
								st.poll_first_ns, st.poll_stage,
								p->th[k].tid};
		}
		p->ib_hs = hs;
	}
}

/* ncclEnqueueCheck (--collectives): one collective launched; no phase (it has no return probe) */
static json_t *collective_record(struct nproc *p, const struct nt_ev_nccl *e)
{
	json_t *o = base_record(e, "nccl");
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

/* ibv_qp_attr_mask bits, as <infiniband/verbs.h> has them */
enum {
	QPM_STATE = 1 << 0,
	QPM_PORT = 1 << 5,
	QPM_AV = 1 << 7,
	QPM_PATH_MTU = 1 << 8,
	QPM_TIMEOUT = 1 << 9,
	QPM_RETRY_CNT = 1 << 10,
	QPM_RNR_RETRY = 1 << 11,
	QPM_MIN_RNR_TIMER = 1 << 15,
	QPM_DEST_QPN = 1 << 20,
};

static struct snap_qp *qp_find(struct snap_ib *ib, uint64_t obj, uint32_t qpn)
{
	for (int i = ib->nqp - 1; i >= 0; i--)
		if (!ib->qp[i].destroyed && ib->qp[i].obj == obj && ib->qp[i].qp_num == qpn)
			return &ib->qp[i];
	return NULL;
}

static struct snap_qp *qp_new(struct snap_ib *ib)
{
	/* full: the oldest destroyed one makes room, else the oldest */
	if (ib->nqp == SNAP_MAX_QPS) {
		int k = 0;

		for (int i = 0; i < ib->nqp; i++)
			if (ib->qp[i].destroyed) {
				k = i;
				break;
			}
		memmove(&ib->qp[k], &ib->qp[k + 1], (ib->nqp - k - 1) * sizeof(ib->qp[0]));
		ib->nqp--;
	}
	memset(&ib->qp[ib->nqp], 0, sizeof(ib->qp[0]));
	return &ib->qp[ib->nqp++];
}

static void qp_json(json_t *o, const struct snap_qp *q)
{
	json_object_set_new(o, "qp_num", json_integer(q->qp_num));
	json_object_set_new(o, "state", json_string(ib_qp_state_name(q->state)));
	if (q->dev[0])
		json_object_set_new(o, "dev", json_string(q->dev));
}

/* The verbs probes: a QP's life, memory registrations, the HCA's asynchronous events. */
static json_t *verbs_event(struct nproc *p, struct nthread *t, const struct nt_ev_nccl *e)
{
	struct snap_ib *ib = &p->ibv;
	struct snap_qp *q;
	json_t *o = NULL;

	p->has_ibv = true;
	switch (e->probe) {
	case NT_P_IBV_OPEN_DEVICE:
		if (!e->ret || !e->d.ib.obj)
			return NULL;
		snprintf(ib->dev, sizeof(ib->dev), "%.23s", e->d.ib.dev);
		o = base_record(e, "ib_device");
		json_object_set_new(o, "dev", json_string(ib->dev));
		return o;
	case NT_P_IBV_CREATE_QP:
		if (!e->ret)
			return NULL;
		o = base_record(e, "ib_qp");
		json_object_set_new(o, "event", json_string("create"));
		if (!e->d.ib.obj) {
			json_object_set_new(o, "error", json_integer(e->retval));
			return o;
		}
		q = qp_new(ib);
		q->obj = e->d.ib.obj;
		q->qp_num = e->d.ib.qp_num;
		q->created_ns = q->changed_ns = e->h.ts_ns;
		snprintf(q->dev, sizeof(q->dev), "%.23s", e->d.ib.dev);
		qp_json(o, q);
		return o;
	case NT_P_IBV_MODIFY_QP:
		if (!t)
			return NULL;
		if (!e->ret) {
			t->modify = e->d.ib;
			t->modify_mask = e->d.ib.mask;
			t->modify_pending = true;
			return NULL;
		}
		if (!t->modify_pending)
			return NULL;
		t->modify_pending = false;
		q = qp_find(ib, e->d.ib.obj, e->d.ib.qp_num);
		o = base_record(e, "ib_qp");
		json_object_set_new(o, "event", json_string("modify"));
		json_object_set_new(o, "mask", json_integer(t->modify_mask));
		if (q && e->retval == 0) {
			uint32_t m = t->modify_mask;

			if (m & QPM_STATE)
				q->state = t->modify.state;
			if (m & QPM_PATH_MTU)
				q->mtu = t->modify.mtu;
			if (m & QPM_DEST_QPN)
				q->dest_qp_num = t->modify.dest_qp_num;
			if (m & QPM_TIMEOUT)
				q->timeout = t->modify.timeout;
			if (m & QPM_RETRY_CNT)
				q->retry_cnt = t->modify.retry_cnt;
			if (m & QPM_RNR_RETRY)
				q->rnr_retry = t->modify.rnr_retry;
			if (m & QPM_AV) {
				q->sgid_index = t->modify.sgid_index;
				q->port = t->modify.port;
			}
			if (m & QPM_PORT)
				q->port = t->modify.port;
			q->err = 0;
			q->changed_ns = e->h.ts_ns;
		} else if (q) {
			q->err = (int)(e->retval < 0 ? -e->retval : e->retval);
		}
		if (q)
			qp_json(o, q);
		else
			json_object_set_new(o, "qp_num", json_integer(e->d.ib.qp_num));
		if (e->retval)
			json_object_set_new(o, "error", json_integer(e->retval));
		if (t->modify_mask & QPM_STATE)
			json_object_set_new(o, "to",
					    json_string(ib_qp_state_name(t->modify.state)));
		if (t->modify_mask & QPM_PATH_MTU)
			json_object_set_new(o, "path_mtu",
					    json_integer(ib_mtu_bytes(t->modify.mtu)));
		if (t->modify_mask & QPM_DEST_QPN)
			json_object_set_new(o, "dest_qp_num", json_integer(t->modify.dest_qp_num));
		if (t->modify_mask & QPM_AV) {
			char g[INET6_ADDRSTRLEN];

			json_object_set_new(o, "sgid_index", json_integer(t->modify.sgid_index));
			json_object_set_new(o, "dlid", json_integer(t->modify.dlid));
			if (inet_ntop(AF_INET6, t->modify.dgid, g, sizeof(g)))
				json_object_set_new(o, "dgid", json_string(g));
		}
		if (t->modify_mask & (QPM_AV | QPM_PORT))
			json_object_set_new(o, "port", json_integer(t->modify.port));
		if (t->modify_mask & QPM_TIMEOUT)
			json_object_set_new(o, "timeout", json_integer(t->modify.timeout));
		if (t->modify_mask & QPM_RETRY_CNT)
			json_object_set_new(o, "retry_cnt", json_integer(t->modify.retry_cnt));
		if (t->modify_mask & QPM_RNR_RETRY)
			json_object_set_new(o, "rnr_retry", json_integer(t->modify.rnr_retry));
		if (t->modify_mask & QPM_MIN_RNR_TIMER)
			json_object_set_new(o, "min_rnr_timer",
					    json_integer(t->modify.min_rnr_timer));
		return o;
	case NT_P_IBV_DESTROY_QP:
		if (e->ret)
			return NULL;
		q = qp_find(ib, e->d.ib.obj, e->d.ib.qp_num);
		o = base_record(e, "ib_qp");
		json_object_set_new(o, "event", json_string("destroy"));
		if (q) {
			q->destroyed = true;
			q->changed_ns = e->h.ts_ns;
			qp_json(o, q);
		} else {
			json_object_set_new(o, "qp_num", json_integer(e->d.ib.qp_num));
		}
		return o;
	case NT_P_IBV_REG_MR: {
		uint64_t len = e->d.ib.obj; /* the BPF side found it among the arguments */

		if (e->ret)
			return NULL;
		ib->nmr++;
		ib->mr_bytes += len;
		o = base_record(e, "ib_mr");
		json_object_set_new(o, "length", json_integer((json_int_t)len));
		return o;
	}
	case NT_P_IBV_ASYNC_EVENT:
		if (!e->ret || e->retval != 0)
			return NULL;
		ib->nasync++;
		ib->async_type = e->d.ib.event_type;
		ib->async_qp = ib_event_has_qp(e->d.ib.event_type) ? e->d.ib.qp_num : 0;
		ib->async_port = ib_event_has_qp(e->d.ib.event_type) ? 0 : e->d.ib.port;
		ib->async_ns = e->h.ts_ns;
		snprintf(ib->async_dev, sizeof(ib->async_dev), "%.23s", e->d.ib.dev);
		o = base_record(e, "ib_event");
		json_object_set_new(o, "event", json_string(ib_event_name(ib->async_type)));
		json_object_set_new(o, "dev", json_string(ib->async_dev));
		if (ib->async_qp) {
			json_object_set_new(o, "qp_num", json_integer(ib->async_qp));
			q = qp_find(ib, e->d.ib.obj, ib->async_qp);
			if (q && ib_event_is_error(ib->async_type))
				q->state = 6; /* IBV_QPS_ERR: the HCA moved it */
		} else {
			json_object_set_new(o, "port", json_integer(ib->async_port));
		}
		return o;
	default:
		return NULL;
	}
}

json_t *nccl_state__event(struct nccl_state *s, const struct nt_ev_nccl *e)
{
	struct nproc *p = proc_get(s, e->pid);
	const struct nccl_probe_def *d = nccl_probe(e->probe);
	struct nthread *t;
	json_t *o;

	if (!p || !d)
		return NULL;
	t = thread_get(p, e->tid);
	if (e->probe >= NT_P_ROLE_PROXY_SERVICE) {
		if (t)
			t->role = e->probe;
		o = base_record(e, "nccl_thread");
		json_object_set_new(o, "role", json_string(d->name + strlen("role_")));
		return o;
	}
	if (e->probe == NT_P_ENV) {
		char name[65], val[193];

		snprintf(name, sizeof(name), "%s", e->d.env.name);
		snprintf(val, sizeof(val), "%s", e->d.env.value);
		/* NCCL reads a parameter once; later reads add nothing */
		if (!set_setting(p, name, e->retval ? val : NULL, true))
			return NULL;
		o = base_record(e, "nccl_setting");
		json_object_set_new(o, "name", json_string(name));
		json_object_set_new(o, "value", e->retval ? json_string(val) : json_null());
		return o;
	}
	if (e->probe == NT_P_DEBUG_LOG) {
		char text[257];

		snprintf(text, sizeof(text), "%s", e->d.text);
		/*
		 * NCCL downgrades some WARNs to INFO (ncclDebugNoWarn, e.g. while probing NVLS):
		 * those never reach ncclLastError. Seen on the GPU machine as empty texts.
		 */
		if (!text[0]) {
			p->suppressed++;
			return NULL;
		}
		p->warnings++;
		snprintf(p->last_warning, sizeof(p->last_warning), "%.255s", text);
		ib_warning(p, e, text);
		o = base_record(e, "nccl_warning");
		json_object_set_new(o, "text", json_string(text));
		return o;
	}
	if (e->probe == NT_P_COMM_DESTROY || e->probe == NT_P_COMM_ABORT) {
		for (int i = 0; i < p->ncomm; i++) {
			struct ncomm *c = &p->comm[i];

			if (c->addr != e->d.fin.comm || c->gone)
				continue;
			c->gone = true;
			c->sc.destroyed = true;
			if (s->seq_off && s->seq_off(s->ctx, c->lib) >= 0) {
				if (!c->sc.seq_ok ||
				    memcmp(c->sc.seq, e->d.fin.seq, sizeof(c->sc.seq)))
					c->sc.changed_ns = e->h.ts_ns;
				memcpy(c->sc.seq, e->d.fin.seq, sizeof(c->sc.seq));
				c->sc.seq_ok = true;
			}
		}
		o = base_record(e, "nccl");
		json_object_set_new(o, "event", json_string("enter"));
		json_object_set_new(o, "phase", json_string(d->name));
		return o;
	}
	if (e->probe >= NT_P_IBV_OPEN_DEVICE && e->probe <= NT_P_IBV_ASYNC_EVENT)
		return verbs_event(p, t, e);
	if (e->probe == NT_P_CONNECT_RETRY) {
		char a[64];

		p->retries++;
		p->last_retry_ns = e->h.ts_ns;
		o = base_record(e, "nccl_connect_retry");
		addr_string(e->d.sock.addr, a, sizeof(a));
		snprintf(p->retry_addr, sizeof(p->retry_addr), "%s", a);
		json_object_set_new(o, "addr", json_string(a));
		json_object_set_new(o, "retries", json_integer(p->retries));
		return o;
	}
	if (e->probe == NT_P_ENQUEUE)
		return collective_record(p, e);
	/* a phase: keep the thread's stack as BPF does */
	if (t && !e->ret) {
		if (t->depth < NT_PHASE_DEPTH) {
			t->probe[t->depth] = e->probe;
			t->since[t->depth] = e->h.ts_ns;
			phase_detail(e, t->detail[t->depth], sizeof(t->detail[0]));
		}
		t->depth++;
	} else if (t && e->ret && t->depth > 0) {
		/* the same rule as BPF's: only the frame of this very probe is left */
		if (t->depth > NT_PHASE_DEPTH || t->probe[t->depth - 1] == e->probe)
			t->depth--;
	}
	o = base_record(e, "nccl");
	json_object_set_new(o, "event", json_string(e->ret ? "exit" : "enter"));
	json_object_set_new(o, "phase", json_string(probe_label(e->probe)));
	if (e->ret) {
		json_object_set_new(o, "result", json_integer(e->retval));
		json_object_set_new(o, "duration_s",
				    json_real(e->since_ns ? (e->h.ts_ns - e->since_ns) / 1e9 : 0));
	}
	if (nt_probe_has_comm(e->probe) && !e->ret && e->d.comm.comm) {
		json_object_set_new(o, "rank", json_integer(e->d.comm.rank));
		json_object_set_new(o, "nranks", json_integer(e->d.comm.nranks));
		{
			char h[24];

			snprintf(h, sizeof(h), "%016llx", (unsigned long long)e->d.comm.hash);
			json_object_set_new(o, "comm_hash", json_string(h));
		}
		if (e->probe == NT_P_P2P_SETUP && (int64_t)e->args[3] >= 0)
			json_object_set_new(o, "graph", json_integer((int64_t)e->args[3]));
		if (e->probe == NT_P_BOOTSTRAP_INIT) {
			bool known = false;

			for (int i = 0; i < p->ncomm; i++)
				known |= p->comm[i].addr == e->d.comm.comm && !p->comm[i].gone;
			if (!known && p->ncomm < MAX_COMMS) {
				struct ncomm *c = &p->comm[p->ncomm++];

				memset(c, 0, sizeof(*c));
				c->addr = e->d.comm.comm;
				c->lib = e->lib;
				c->sc.pid = p->pid;
				c->sc.hash = e->d.comm.hash;
				c->sc.rank = e->d.comm.rank;
				c->sc.nranks = e->d.comm.nranks;
				c->sc.last_coll = -1;
			}
		}
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
		addr_string(e->d.sock.addr, a, sizeof(a));
		json_object_set_new(o, "fd", json_integer(e->d.sock.fd));
		json_object_set_new(o, "addr", json_string(a));
		json_object_set_new(o, "socket_type",
				    json_string(nccl_socket_type_name(e->d.sock.type)));
		json_object_set_new(o, "state", json_integer(e->d.sock.state));
		if (e->ret && e->retval == 0)
			label_socket(p, e, t ? t : NULL);
		break;
	}
	case NT_P_NET_CONNECT:
	case NT_P_NET_ACCEPT:
		if (e->ret)
			json_object_set_new(o, "done", json_boolean(e->args[3] != 0));
		break;
	}
	return o;
}

static bool usable(const struct ncomm *c)
{
	return !c->gone && c->sc.seq_ok;
}

/* Is comm k of process i the first usable one of its communicator, in walk order? */
static bool first_member(const struct nccl_state *s, int i, int k)
{
	uint64_t h = s->p[i].comm[k].sc.hash;

	for (int j = 0; j <= i; j++)
		for (int l = 0; l < (j == i ? k : s->p[j].ncomm); l++)
			if (usable(&s->p[j].comm[l]) && s->p[j].comm[l].sc.hash == h)
				return false;
	return true;
}

/* Straggler evidence: in each communicator that moves, who alone has launched the fewest. */
static void compare_ranks(struct nccl_state *s, uint64_t now)
{
	int total = 0;

	for (int i = 0; i < s->n; i++)
		total += s->p[i].ncomm;
	for (int i = 0; i < s->n; i++)
		for (int k = 0; k < s->p[i].ncomm; k++) {
			struct snap_comm *c = &s->p[i].comm[k].sc, *mem[total > 0 ? total : 1];
			uint64_t lo = UINT64_MAX, hi = 0, moved = 0, tot[total > 0 ? total : 1];
			int nlo = 0, nm = 0;

			/* once per communicator: at its first member in this walk */
			if (s->p[i].comm[k].gone || !c->seq_ok || !first_member(s, i, k))
				continue;
			for (int j = 0; j < s->n; j++)
				for (int l = 0; l < s->p[j].ncomm; l++) {
					struct snap_comm *m = &s->p[j].comm[l].sc;

					if (m->hash != c->hash || !usable(&s->p[j].comm[l]))
						continue;
					tot[nm] = 0;
					for (int f = 0; f < NSEQ; f++)
						tot[nm] += m->seq[f];
					nlo = tot[nm] < lo ? 1 : nlo + (tot[nm] == lo);
					lo = tot[nm] < lo ? tot[nm] : lo;
					hi = tot[nm] > hi ? tot[nm] : hi;
					moved = m->changed_ns > moved ? m->changed_ns : moved;
					mem[nm++] = m;
				}
			if (nm < 2 || now - moved > PROGRESS_WINDOW_NS)
				continue;
			for (int j = 0; j < nm; j++) {
				struct snap_comm *m = mem[j];

				m->differ_bits = m->differ_bits << 1 | (lo != hi);
				m->behind_bits = m->behind_bits << 1 |
						 (lo != hi && tot[j] == lo && nlo == 1);
				m->nsamples += m->nsamples < 64;
				if (!m->behind_bits)
					m->behind_since_ns = 0;
				else if (!m->behind_since_ns)
					m->behind_since_ns = now;
			}
		}
}

void nccl_state__sample(struct nccl_state *s, uint64_t now)
{
	for (int i = 0; i < s->n; i++) {
		struct nproc *p = &s->p[i];

		for (int k = 0; k < p->ncomm; k++) {
			struct ncomm *c = &p->comm[k];
			int off = s->seq_off ? s->seq_off(s->ctx, c->lib) : -1;
			uint64_t seq[NSEQ];
			struct iovec local = {.iov_base = seq, .iov_len = sizeof(seq)};
			struct iovec remote = {.iov_base = (void *)(uintptr_t)(c->addr + off),
					       .iov_len = sizeof(seq)};

			if (c->gone || off < 0)
				continue;
			/*
			 * NCCL's own counters, as RAS reads them: no probe per collective. A
			 * process that is gone keeps its last counts: where it stopped matters.
			 */
			if (process_vm_readv(p->pid, &local, 1, &remote, 1, 0) !=
			    (ssize_t)sizeof(seq))
				continue;
			if (!c->sc.seq_ok || memcmp(seq, c->sc.seq, sizeof(seq)))
				c->sc.changed_ns = now;
			memcpy(c->sc.seq, seq, sizeof(seq));
			c->sc.seq_ok = true;
		}
	}
	compare_ranks(s, now);
}

int nccl_state__comms(struct nccl_state *s, struct snap_comm **out)
{
	int n = 0;

	for (int i = 0; i < s->n; i++)
		for (int k = 0; k < s->p[i].ncomm; k++) {
			if (n == s->snapcap) {
				int cap = s->snapcap ? 2 * s->snapcap : 16;
				struct snap_comm *v = realloc(s->snap, cap * sizeof(*v));

				if (!v)
					break;
				s->snap = v;
				s->snapcap = cap;
			}
			s->snap[n++] = s->p[i].comm[k].sc;
		}
	*out = s->snap;
	return n;
}

json_t *nccl_state__proc_json(const struct nccl_state *s, int pid, uint64_t now)
{
	const struct nproc *p = proc_find(s, pid);
	json_t *o, *th, *cm;

	if (!p)
		return NULL;
	o = json_object();
	th = json_array();
	cm = json_array();
	for (int i = 0; i < p->nth; i++) {
		const struct nthread *t = &p->th[i];
		json_t *to;

		if (!t->depth && !t->role)
			continue;
		to = json_object();
		json_object_set_new(to, "tid", json_integer(t->tid));
		if (t->role)
			json_object_set_new(
				to, "role",
				json_string(nccl_probe(t->role)->name + strlen("role_")));
		if (t->depth > 0 && t->depth <= NT_PHASE_DEPTH) {
			char l[64];

			frame_label(t, t->depth - 1, l, sizeof(l));
			json_object_set_new(to, "phase", json_string(l));
			json_object_set_new(to, "in_phase_s",
					    json_real((now - t->since[t->depth - 1]) / 1e9));
		}
		json_array_append_new(th, to);
	}
	for (int i = 0; i < p->ncomm; i++) {
		const struct snap_comm *c = &p->comm[i].sc;
		json_t *co = json_object(), *seq = json_object();
		char h[24];

		snprintf(h, sizeof(h), "%016llx", (unsigned long long)c->hash);
		json_object_set_new(co, "comm_hash", json_string(h));
		json_object_set_new(co, "rank", json_integer(c->rank));
		json_object_set_new(co, "nranks", json_integer(c->nranks));
		if (c->seq_ok) {
			for (int k = 0; k < NSEQ; k++)
				if (c->seq[k])
					json_object_set_new(seq, snap_coll_name(k),
							    json_integer(c->seq[k]));
		}
		json_object_set_new(co, "collectives", seq);
		json_array_append_new(cm, co);
	}
	json_object_set_new(o, "threads", th);
	json_object_set_new(o, "comms", cm);
	json_object_set_new(o, "warnings", json_integer(p->warnings));
	json_object_set_new(o, "warnings_downgraded", json_integer(p->suppressed));
	json_object_set_new(o, "connect_retries", json_integer(p->retries));
	json_object_set_new(o, "settings_read", json_integer(p->nset));
	if (p->has_ibv) {
		json_t *ib = json_object(), *qa = json_array();

		for (int i = 0; i < p->ibv.nqp; i++) {
			const struct snap_qp *q = &p->ibv.qp[i];
			json_t *qo = json_object();

			if (q->destroyed)
				continue;
			qp_json(qo, q);
			json_object_set_new(qo, "dest_qp_num", json_integer(q->dest_qp_num));
			json_object_set_new(qo, "timeout", json_integer(q->timeout));
			json_object_set_new(qo, "retry_cnt", json_integer(q->retry_cnt));
			json_object_set_new(qo, "sgid_index", json_integer(q->sgid_index));
			json_object_set_new(
				qo, "age_s",
				json_real((double)(now - q->changed_ns) / NT_NSEC_PER_SEC));
			json_array_append_new(qa, qo);
		}
		json_object_set_new(ib, "qps", qa);
		json_object_set_new(ib, "mrs", json_integer(p->ibv.nmr));
		json_object_set_new(ib, "mr_bytes", json_integer((json_int_t)p->ibv.mr_bytes));
		json_object_set_new(ib, "async_events", json_integer(p->ibv.nasync));
		if (p->ib_hs.probe) {
			json_t *h = json_object();

			json_object_set_new(h, "call",
					    json_string(nccl_probe(p->ib_hs.probe)->name));
			json_object_set_new(h, "inside", json_boolean(p->ib_hs.inside));
			json_object_set_new(h, "stage", json_string(ib_stage_name(p->ib_hs.stage)));
			json_object_set_new(
				h, "for_s",
				json_real((double)(now - p->ib_hs.since_ns) / NT_NSEC_PER_SEC));
			json_object_set_new(h, "tid", json_integer(p->ib_hs.tid));
			json_object_set_new(ib, "handshake", h);
		}
		json_object_set_new(o, "ib", ib);
	}
	return o;
}

const char *nccl_state__socket_label(const struct nccl_state *s, int pid, uint64_t ino)
{
	const struct nproc *p = proc_find(s, pid);

	for (int i = 0; p && i < p->nsock; i++)
		if (p->sock[i].ino == ino)
			return p->sock[i].label;
	return NULL;
}

bool nccl_state__phase(const struct nccl_state *s, int pid, uint64_t *since_ns, char *buf,
		       size_t len)
{
	const struct nproc *p = proc_find(s, pid);
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
	frame_label(best, best->depth - 1, buf, len);
	/* and what it is part of, where an outer frame says: "proxy call in p2p setup (ring)" */
	for (int d = best->depth - 2; d >= 0; d--)
		if (best->detail[d][0]) {
			size_t l = strlen(buf);

			snprintf(buf + l, len - l, " in ");
			l = strlen(buf);
			frame_label(best, d, buf + l, len - l);
			break;
		}
	return true;
}

static int setup_class(int probe)
{
	switch (probe) {
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

int nccl_state__setup(const struct nccl_state *s, int pid, uint64_t *since_ns)
{
	const struct nproc *p = proc_find(s, pid);
	const struct nthread *best = NULL;

	for (int i = 0; p && i < p->nth; i++) {
		const struct nthread *t = &p->th[i];

		if (t->depth <= 0 || !setup_class(t->probe[0]))
			continue;
		if (t->tid == pid) {
			best = t;
			break;
		}
		if (!best || t->since[0] < best->since[0])
			best = t;
	}
	if (!best)
		return SNAP_SETUP_NONE;
	*since_ns = best->since[0];
	return setup_class(best->probe[0]);
}
