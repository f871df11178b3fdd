// SPDX-License-Identifier: MIT
/*
 * Wait-for reasoning over a snapshot. A process waits when none of its connections made byte
 * progress for longer than the threshold while it keeps trying one of them (an EAGAIN spin, a
 * thread blocked in a send or receive, a connect nobody answers). Following "waits on the peer of
 * that connection" from any waiting process ends at a process that is not waiting (sleeping,
 * stopped, exited, busy elsewhere) or at an address nobody traced: that is the culprit.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include "diagnose.h"
#include "explain.h"
#include "ibwarn.h"
#include "fmt.h"

#define TCP_SYN_SENT 2

static const char *const kind_names[FINDING_KIND_MAX] = {
	[FINDING_STALL] = "stall",
	[FINDING_RING_SETUP_BLOCKED] = "ring_setup_blocked",
	[FINDING_INIT_BLOCKED] = "init_blocked",
	[FINDING_COLLECTIVE_MISMATCH] = "collective_mismatch",
	[FINDING_PEER_DEAD] = "peer_dead",
	[FINDING_PEER_STOPPED] = "peer_stopped",
	[FINDING_STRAGGLER] = "straggler",
	[FINDING_CONN_ERROR] = "conn_error",
	[FINDING_IB_ERROR] = "ib_error",
	[FINDING_CONFIG] = "config",
};

/* ncclFunc_t, which also indexes comm->seqNumber[] for the first five */
static const char *const coll_names[] = {"Broadcast", "Reduce",	  "AllGather", "ReduceScatter",
					 "AllReduce", "SendRecv", "Send",      "Recv"};

const char *snap_coll_name(int f)
{
	return f >= 0 && f < (int)(sizeof(coll_names) / sizeof(coll_names[0])) ? coll_names[f]
									       : "collective";
}

/* ncclDataType_t */
static const char *dtype_name(int t)
{
	static const char *const n[] = {"int8",	   "uint8",    "int32",	     "uint32",
					"int64",   "uint64",   "float16",    "float32",
					"float64", "bfloat16", "float8e4m3", "float8e5m2"};

	return t >= 0 && t < (int)(sizeof(n) / sizeof(n[0])) ? n[t] : "?";
}

/* "count 65536 float32", with the root where the collective has one */
static void coll_args(int coll, uint64_t count, int dtype, int root, char *buf, size_t len)
{
	int o = snprintf(buf, len, "count %llu %s", (unsigned long long)count, dtype_name(dtype));

	if ((coll == 0 || coll == 1 || coll >= 6) && o > 0 && (size_t)o < len)
		snprintf(buf + o, len - o, " %s %d", coll >= 6 ? "peer" : "root", root);
}

static bool same_args(const struct snap_comm *a, const struct snap_comm *b)
{
	return a->last_coll == b->last_coll && a->last_count == b->last_count &&
	       a->last_root == b->last_root && a->last_dtype == b->last_dtype;
}

const char *finding_kind_name(enum finding_kind k)
{
	return (unsigned int)k < FINDING_KIND_MAX ? kind_names[k] : "?";
}

int finding_kind_parse(const char *s)
{
	for (int i = 0; i < FINDING_KIND_MAX; i++)
		if (strcmp(s, kind_names[i]) == 0)
			return i;
	return -1;
}

const struct snap_proc *snapshot_proc(const struct snapshot *s, int pid)
{
	for (int i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

void snap_proc_name(const struct snap_proc *p, int pid, char *buf, size_t len)
{
	if (p && p->rank >= 0)
		snprintf(buf, len, "rank %d (pid %d)", p->rank, pid);
	else if (p && p->comm[0])
		snprintf(buf, len, "pid %d (%s)", pid, p->comm);
	else
		snprintf(buf, len, "pid %d", pid);
}

static uint64_t conn_progress(const struct snap_conn *c)
{
	uint64_t t = c->c.first_ns;

	/* a connect (NCCL's retries make new ones) counts from its own start */
	if (c->c.state == TCP_SYN_SENT && c->c.state_ns > t)
		t = c->c.state_ns;
	if (c->c.last_send_ns > t)
		t = c->c.last_send_ns;
	if (c->c.last_recv_ns > t)
		t = c->c.last_recv_ns;
	return t;
}

/* Progress of a connection as the diagnosis may read it: nothing counted while hooks were off */
static uint64_t conn_seen_progress(const struct snapshot *s, const struct snap_conn *c)
{
	uint64_t t = conn_progress(c);

	return s->tcp_resumed_ns > t ? s->tcp_resumed_ns : t;
}

static bool conn_is_data(const struct snap_conn *c)
{
	return !(c->c.flags & NT_CONN_LISTENER) && !c->ras;
}

/*
 * Both ends in one process (NCCL's main thread and its own proxy service talk over loopback):
 * waiting there only says the process waits on itself, never who it really waits for.
 */
static bool conn_is_self(const struct snap_conn *c)
{
	return c->peer_pid > 0 && c->peer_pid == c->pid;
}

/* Is the owner still trying this connection, and since when has it got nowhere? */
static bool conn_tried(const struct snapshot *s, const struct snap_conn *c,
		       const struct diag_config *cfg, uint64_t now)
{
	if (c->closed)
		return false;
	if (c->c.last_eagain_ns && now - c->c.last_eagain_ns <= cfg->active_window_ns &&
	    c->c.last_eagain_ns > conn_seen_progress(s, c))
		return true;
	/*
	 * Blocked in a call on it right now is trying, however recently the thread went back in:
	 * /proc is sampled every tick, so a thread that wakes only to block again looks freshly
	 * blocked at every step. How long nothing moved is the connection's own age.
	 */
	if (c->blocked != SNAP_BLOCK_NONE && c->blocked != SNAP_BLOCK_POLL)
		return true;
	if (c->c.state == TCP_SYN_SENT && now - c->c.state_ns >= cfg->stall_threshold_ns)
		return true;
	return false;
}

int diagnose_waiting_conn(const struct snapshot *s, const struct diag_config *cfg, int pid)
{
	const struct snap_proc *p = snapshot_proc(s, pid);
	uint64_t best_t = UINT64_MAX;
	int best = -1;

	if (!p || p->exited || p->state == 'T' || p->state == 't' || p->state == 'Z')
		return -1;
	/*
	 * Per connection, not per process: other connections of the process may well move
	 * (PyTorch's TCPStore client, NCCL RAS keep-alives) while it is stuck on this one.
	 */
	for (int i = 0; i < s->nconns; i++) {
		const struct snap_conn *c = &s->conns[i];

		if (c->pid != pid || !conn_is_data(c) || conn_is_self(c) ||
		    !conn_tried(s, c, cfg, s->now_ns) ||
		    s->now_ns - conn_seen_progress(s, c) <= cfg->stall_threshold_ns)
			continue;
		if (conn_seen_progress(s, c) < best_t) {
			best_t = conn_seen_progress(s, c);
			best = i;
		}
	}
	return best;
}

/* Where a chain of waits ends. */
struct culprit {
	int pid;  /* > 0: a traced process; 0: an untraced address */
	int conn; /* for an address: the connection that waits on it */
	bool cycle;
};

/* The connection pid waits on, -1 if it does not wait. */
static int proc_wait(const struct snapshot *s, const int *wait, int pid)
{
	for (int i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return wait[i];
	return -1;
}

static struct culprit follow(const struct snapshot *s, const int *wait, int start)
{
	int cur = start;
	struct culprit r = {.pid = start, .conn = -1};

	/* each hop goes to a process of the snapshot: more hops than processes is a cycle */
	for (int hops = 0; hops <= s->nprocs; hops++) {
		int ci = proc_wait(s, wait, cur);

		if (ci < 0) {
			r.pid = cur;
			return r;
		}
		if (s->conns[ci].peer_pid <= 0 || !snapshot_proc(s, s->conns[ci].peer_pid)) {
			r.pid = 0;
			r.conn = ci;
			return r;
		}
		cur = s->conns[ci].peer_pid;
	}
	/* cur is on the cycle: name it by its smallest pid, so every start finds the same one */
	r.pid = cur;
	r.cycle = true;
	for (int p = s->conns[proc_wait(s, wait, cur)].peer_pid; p != cur;
	     p = s->conns[proc_wait(s, wait, p)].peer_pid)
		if (p < r.pid)
			r.pid = p;
	return r;
}

__attribute__((format(printf, 2, 3))) static void add_evidence(struct finding *f, const char *fmt_,
							       ...)
{
	va_list ap;

	if (f->nevidence >= DIAG_MAX_EVIDENCE)
		return;
	va_start(ap, fmt_);
	vsnprintf(f->evidence[f->nevidence++], sizeof(f->evidence[0]), fmt_, ap);
	va_end(ap);
}

static void describe_status(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
}

static void describe_culprit(const struct snap_proc *p, struct finding *f)
{
	char st[64];

	if (p->exited) {
		describe_status(p->exit_status, st, sizeof(st));
		snprintf(f->phase, sizeof(f->phase), "%s", st);
		return;
	}
	switch (p->state) {
	case 'T':
	case 't':
		snprintf(f->phase, sizeof(f->phase), "stopped (state %c)", p->state);
		break;
	case 'R':
		snprintf(f->phase, sizeof(f->phase),
			 "running outside socket calls (busy elsewhere)");
		break;
	case 'D':
		snprintf(f->phase, sizeof(f->phase), "uninterruptible sleep%s%s",
			 p->where[0] ? " in " : "", p->where);
		break;
	default:
		snprintf(f->phase, sizeof(f->phase), "sleeping%s%s", p->where[0] ? " in " : "",
			 p->where);
		break;
	}
	if (p->nccl_phase[0]) {
		size_t l = strlen(f->phase);

		snprintf(f->phase + l, sizeof(f->phase) - l, ", in NCCL %s", p->nccl_phase);
	} else if (p->nccl && !p->exited) {
		size_t l = strlen(f->phase);

		snprintf(f->phase + l, sizeof(f->phase) - l, ", outside NCCL");
	}
}

/* "ranks 0,2,3", "pids 11,12", or "rank 0, pid 12" when mixed; in rank order */
static void waiter_list(const struct snapshot *s, const struct finding *f, char *buf, size_t len)
{
	int order[DIAG_MAX_WAITERS], nr = 0, np = 0;
	size_t off = 0;

	for (int k = 0; k < f->nwaiters; k++) {
		const struct snap_proc *w = snapshot_proc(s, f->waiters[k]);
		int key = w && w->rank >= 0 ? w->rank : -1, j = k;

		nr += key >= 0;
		np += key < 0;
		/* insertion sort: ranked first by rank, then pids */
		while (j > 0) {
			const struct snap_proc *o = snapshot_proc(s, f->waiters[order[j - 1]]);
			int okey = o && o->rank >= 0 ? o->rank : -1;

			if (okey >= 0 && (key < 0 || okey <= key))
				break;
			if (okey < 0 && key < 0)
				break;
			order[j] = order[j - 1];
			j--;
		}
		order[j] = k;
	}
	buf[0] = '\0';
	for (int k = 0; k < f->nwaiters && off + 16 < len; k++) {
		const struct snap_proc *w = snapshot_proc(s, f->waiters[order[k]]);
		bool ranked = w && w->rank >= 0;
		const char *label = "";

		if (np && nr)
			label = ranked ? "rank " : "pid ";
		else if (k == 0)
			label = nr ? (nr > 1 ? "ranks " : "rank ") : (np > 1 ? "pids " : "pid ");
		off += snprintf(buf + off, len - off, "%s%s%d", k ? (np && nr ? ", " : ",") : "",
				label, ranked ? w->rank : f->waiters[order[k]]);
	}
}

static void waiter_evidence(const struct snapshot *s, struct finding *f, int ci)
{
	const struct snap_conn *c = &s->conns[ci];
	const struct snap_proc *w = snapshot_proc(s, c->pid);
	const struct snap_proc *peer = c->peer_pid > 0 ? snapshot_proc(s, c->peer_pid) : NULL;
	char wn[48], pn[48], tup[112], n1[16], qb[24];
	double age = (double)(s->now_ns - conn_seen_progress(s, c)) / NT_NSEC_PER_SEC;

	snap_proc_name(w, c->pid, wn, sizeof(wn));
	if (peer)
		snap_proc_name(peer, c->peer_pid, pn, sizeof(pn));
	else
		snprintf(pn, sizeof(pn), "untraced peer");
	fmt_tuple(&c->c.t, tup, sizeof(tup));
	if (c->c.state == TCP_SYN_SENT) {
		add_evidence(f, "%s connect %s unanswered for %.1fs, %u SYN retransmits", wn, tup,
			     (double)(s->now_ns - c->c.state_ns) / NT_NSEC_PER_SEC,
			     c->c.syn_retrans);
	} else if (c->blocked == SNAP_BLOCK_RECV || c->blocked == SNAP_BLOCK_SEND) {
		char l[64], r[64];
		bool rx = c->blocked == SNAP_BLOCK_RECV;

		add_evidence(f,
			     "%s %s %s on %s%s%s: thread %d blocked in %s for %.1fs, no bytes for "
			     "%.1fs, send queue %s",
			     wn, rx ? "receives from" : "sends to", pn,
			     fmt_endpoint(&c->c.t, 1, l, sizeof(l)), rx ? "<-" : "->",
			     fmt_endpoint(&c->c.t, 0, r, sizeof(r)), c->blocked_tid,
			     rx ? "receive" : "send",
			     (double)(s->now_ns - c->blocked_since_ns) / NT_NSEC_PER_SEC, age,
			     fmt_bytes(c->c.send_q, qb, sizeof(qb)));
	} else if (c->c.last_recv_try_ns >= c->c.last_send_try_ns) {
		char l[64], r[64];

		add_evidence(
			f,
			"%s receives from %s on %s<-%s: nothing for %.1fs, %s receive calls got "
			"EAGAIN, send queue %s",
			wn, pn, fmt_endpoint(&c->c.t, 1, l, sizeof(l)),
			fmt_endpoint(&c->c.t, 0, r, sizeof(r)), age,
			fmt_count(c->c.recv_eagain, n1, sizeof(n1)),
			fmt_bytes(c->c.send_q, qb, sizeof(qb)));
	} else {
		add_evidence(f,
			     "%s sends to %s on %s: no byte accepted for %.1fs, %s send calls "
			     "got EAGAIN, send queue %s",
			     wn, pn, tup, age, fmt_count(c->c.send_eagain, n1, sizeof(n1)),
			     fmt_bytes(c->c.send_q, qb, sizeof(qb)));
	}
	if (c->c.recv_eof)
		add_evidence(f, "%s conn %s: the peer closed it (receive returned 0)", wn, tup);
	if (w && w->nccl_phase[0])
		add_evidence(f, "%s is in NCCL %s for %.1fs", wn, w->nccl_phase,
			     (double)(s->now_ns - w->nccl_since_ns) / NT_NSEC_PER_SEC);
}

/* Both connections go to the same remote address and port. */
static bool same_remote(const struct snapshot *s, int a, int b)
{
	const struct nt_tuple *ta = &s->conns[a].c.t, *tb = &s->conns[b].c.t;

	return ta->family == tb->family && ta->dport == tb->dport &&
	       memcmp(ta->daddr, tb->daddr, sizeof(ta->daddr)) == 0;
}

/* One finding per culprit: a traced process, or an address nobody traced. */
static int find_or_add(const struct snapshot *s, struct finding *out, int *n, int max,
		       enum finding_kind kind, int pid, int conn)
{
	for (int i = 0; i < *n; i++)
		if (out[i].pid == pid && (pid > 0 || same_remote(s, out[i].conn, conn)))
			return i;
	if (*n >= max)
		return -1;
	memset(&out[*n], 0, sizeof(out[*n]));
	out[*n].kind = kind;
	out[*n].pid = pid;
	out[*n].rank = -1;
	out[*n].peer_rank = -1;
	out[*n].conn = pid > 0 ? -1 : conn;
	return (*n)++;
}

/* The first abnormal exit of a process that had connections to processes alive at the time. */
static int first_abnormal_exit(const struct snapshot *s)
{
	int best = -1;

	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_proc *p = &s->procs[i];
		bool connected = false;

		if (!p->exited || (WIFEXITED(p->exit_status) && WEXITSTATUS(p->exit_status) == 0))
			continue;
		/* killed while waiting inside NCCL setup: the launcher tearing the job down */
		if (p->nccl_setup != SNAP_SETUP_NONE)
			continue;
		for (int j = 0; j < s->nconns && !connected; j++) {
			const struct snap_conn *c = &s->conns[j];
			const struct snap_proc *q;

			if (c->pid != p->pid || c->peer_pid <= 0)
				continue;
			q = snapshot_proc(s, c->peer_pid);
			connected = q && (!q->exited || q->exit_ns > p->exit_ns);
		}
		if (connected && (best < 0 || p->exit_ns < s->procs[best].exit_ns))
			best = i;
	}
	return best;
}

static bool named_in(const struct finding *out, int n, int pid)
{
	for (int i = 0; i < n; i++) {
		if (out[i].pid == pid)
			return true;
		for (int k = 0; k < out[i].nwaiters; k++)
			if (out[i].waiters[k] == pid)
				return true;
	}
	return false;
}

static const char *setup_name(int cls)
{
	return cls == SNAP_SETUP_INIT ? "communicator init" : "transport setup";
}

static void remove_finding(struct finding *out, int *n, int i)
{
	memmove(&out[i], &out[i + 1], (*n - i - 1) * sizeof(out[0]));
	(*n)--;
}

/*
 * InfiniBand/RoCE completion errors NCCL reported: the transport gave up on a peer. The rank
 * that saw it is named; what it means comes from the status and the settings (explain).
 */
static struct finding *new_finding(struct finding *out, int *n, int max)
{
	struct finding *f;

	if (*n >= max)
		return NULL;
	f = &out[(*n)++];
	memset(f, 0, sizeof(*f));
	f->conn = -1;
	f->rank = f->peer_rank = -1;
	return f;
}

/* A new finding about process p (its rank), waiting since since_ns; NULL when out is full. */
static struct finding *proc_finding(struct finding *out, int *n, int max, enum finding_kind kind,
				    const struct snap_proc *p, uint64_t since_ns)
{
	struct finding *f = new_finding(out, n, max);

	if (f) {
		f->kind = kind;
		f->pid = p->pid;
		f->rank = p->rank;
		f->since_ns = since_ns;
	}
	return f;
}

/*
 * The rank behind NCCL's "peer 10.0.0.2<43517>": the traced process at the other end of p's
 * connection to that address (the IB connection's TCP socket), if any.
 */
static void ib_peer_rank(const struct snapshot *s, const struct snap_proc *p, const char *peer,
			 struct finding *f)
{
	for (int i = 0; i < s->nconns; i++) {
		const struct snap_conn *c = &s->conns[i];
		const struct snap_proc *q;
		char a[INET6_ADDRSTRLEN], ep[INET6_ADDRSTRLEN + 16], qn[48];

		if (c->pid != p->pid || c->peer_pid <= 0 ||
		    !inet_ntop(c->c.t.family == AF_INET6 ? AF_INET6 : AF_INET, c->c.t.daddr, a,
			       sizeof(a)))
			continue;
		snprintf(ep, sizeof(ep), "%s<%u>", a, c->c.t.dport);
		if (strcmp(ep, peer) || !(q = snapshot_proc(s, c->peer_pid)))
			continue;
		f->peer_pid = q->pid;
		f->peer_rank = q->rank;
		snap_proc_name(q, q->pid, qn, sizeof(qn));
		add_evidence(f, "peer %s is %s (the IB connection's socket)", peer, qn);
		return;
	}
}

/* The QP an asynchronous event names, NULL if not known */
static const struct snap_qp *ib_event_qp(const struct snap_ib *ib)
{
	for (int i = ib->nqp - 1; ib->async_qp && i >= 0; i--)
		if (ib->qp[i].qp_num == ib->async_qp)
			return &ib->qp[i];
	return NULL;
}

/* "QP 0x66a000 (to QP 0x66a101, timeout 14, retry_cnt 3, GID index 3, port 1)" */
static void qp_desc(const struct snap_qp *q, char *buf, size_t len)
{
	snprintf(buf, len,
		 "QP 0x%x (to QP 0x%x, %s, timeout %u, retry_cnt %u, GID index %u, port %u)",
		 q->qp_num, q->dest_qp_num, ib_qp_state_name(q->state), q->timeout, q->retry_cnt,
		 q->sgid_index, q->port);
}

static void ib_findings(const struct snapshot *s, struct finding *out, int *n, int max)
{
	for (int i = 0; i < s->nprocs && *n < max; i++) {
		const struct snap_proc *p = &s->procs[i];
		const struct snap_ib_error *ib = p->ib_err;
		const struct snap_ib *v = p->ib;
		bool async = v && v->nasync && ib_event_is_error(v->async_type);
		struct finding *f;
		char pn[48], qd[160];

		if (!ib && !async)
			continue;
		/* its death or stall is the consequence: one finding, with the cause */
		for (int k = 0; k < *n; k++)
			if (out[k].pid == p->pid)
				remove_finding(out, n, k--);
		f = proc_finding(out, n, max, FINDING_IB_ERROR, p, ib ? ib->ts_ns : v->async_ns);
		snap_proc_name(p, p->pid, pn, sizeof(pn));
		if (ib) {
			snprintf(f->phase, sizeof(f->phase), "%s on %s%s",
				 ib->colls_before <= 1 ? "first transfer" : "transfer",
				 ib->hca[0] ? ib->hca : "?", ib->roce ? " (RoCE)" : "");
			snprintf(f->summary, sizeof(f->summary),
				 "%s: InfiniBand completion error %s(%d) from peer %s on %s%s, "
				 "after "
				 "%llu collective%s: the transport gave up on that peer",
				 pn, ib_wc_status_name(ib->status), ib->status, ib->peer,
				 ib->hca[0] ? ib->hca : "?", ib->roce ? " (RoCE)" : "",
				 (unsigned long long)ib->colls_before,
				 ib->colls_before == 1 ? "" : "s");
			add_evidence(f, "NCCL WARN: %.180s", ib->text);
			ib_peer_rank(s, p, ib->peer, f);
			if (ib->count > 1)
				add_evidence(f, "%d such completion errors on %s", ib->count, pn);
			add_evidence(f, "opcode %d, vendor_err %u (0x%x)", ib->opcode,
				     ib->vendor_err, ib->vendor_err);
		} else {
			const struct snap_qp *q = ib_event_qp(v);

			snprintf(f->phase, sizeof(f->phase), "%s on %s",
				 ib_event_name(v->async_type),
				 v->async_dev[0] ? v->async_dev : "?");
			if (q) {
				qp_desc(q, qd, sizeof(qd));
				snprintf(f->summary, sizeof(f->summary),
					 "%s: the HCA %s raised %s on %s: that QP is in error, and "
					 "the collectives on it fail",
					 pn, v->async_dev[0] ? v->async_dev : "?",
					 ib_event_name(v->async_type), qd);
			} else if (v->async_qp) {
				snprintf(f->summary, sizeof(f->summary),
					 "%s: the HCA %s raised %s on QP 0x%x", pn,
					 v->async_dev[0] ? v->async_dev : "?",
					 ib_event_name(v->async_type), v->async_qp);
			} else {
				snprintf(f->summary, sizeof(f->summary),
					 "%s: the HCA %s raised %s on port %d", pn,
					 v->async_dev[0] ? v->async_dev : "?",
					 ib_event_name(v->async_type), v->async_port);
			}
		}
		if (async && v->async_qp)
			add_evidence(f, "ibv_get_async_event in %s: %s on %s QP 0x%x (%d event%s)",
				     pn, ib_event_name(v->async_type), v->async_dev, v->async_qp,
				     v->nasync, v->nasync == 1 ? "" : "s");
		else if (async)
			add_evidence(f, "ibv_get_async_event in %s: %s on %s port %d (%d event%s)",
				     pn, ib_event_name(v->async_type), v->async_dev, v->async_port,
				     v->nasync, v->nasync == 1 ? "" : "s");
		if (async && ib_event_qp(v) && ib_event_qp(v)->dest_qp_num) {
			/* the QP's other end, among the traced ranks' QPs */
			uint32_t dq = ib_event_qp(v)->dest_qp_num;

			for (int k = 0; k < s->nprocs; k++)
				for (int j = 0; s->procs[k].ib && j < s->procs[k].ib->nqp; j++)
					if (s->procs[k].ib->qp[j].qp_num == dq && k != i) {
						char qn[48];

						snap_proc_name(&s->procs[k], s->procs[k].pid, qn,
							       sizeof(qn));
						add_evidence(
							f, "QP 0x%x's other end, QP 0x%x, is %s's",
							v->async_qp, dq, qn);
						f->peer_pid = s->procs[k].pid;
						f->peer_rank = s->procs[k].rank;
					}
		}
		if (p->exited) {
			char st[48];

			describe_status(p->exit_status, st, sizeof(st));
			add_evidence(f, "pid %d %s afterwards", p->pid, st);
		}
	}
}

/* Evidence of a process's oldest QP that is not ready to send (not RTS). */
static void qp_evidence(const struct snapshot *s, const struct snap_proc *p, struct finding *f)
{
	char pn[48];
	int shown = 0;

	if (!p->ib)
		return;
	snap_proc_name(p, p->pid, pn, sizeof(pn));
	for (int i = 0; i < p->ib->nqp && shown < 1; i++) {
		const struct snap_qp *q = &p->ib->qp[i];

		if (q->destroyed || q->state == 3 /* RTS */)
			continue;
		add_evidence(f, "%s QP 0x%x on %s at %s for %.1fs: never reached RTS%s", pn,
			     q->qp_num, q->dev[0] ? q->dev : "?", ib_qp_state_name(q->state),
			     (double)(s->now_ns - q->changed_ns) / NT_NSEC_PER_SEC,
			     q->dest_qp_num ? "" : " (the peer's QP number never came)");
		shown++;
	}
}

/*
 * IB handshakes (the silent ring-setup block on IB): ncclIbConnect and ncclIbAccept return at
 * once while the peer is not ready, and the proxy calls them again; one call that lasts is
 * blocked inside (a blocking socket, a verbs call that hangs). That rank holds up everyone
 * whose handshake with it is pending.
 */
static void ib_handshake_findings(const struct snapshot *s, const struct diag_config *cfg,
				  struct finding *out, int *n, int max)
{
	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_proc *p = &s->procs[i];
		const struct snap_ib_handshake *h = &p->ib_hs;
		const char *call;
		struct finding *f = NULL;
		char pn[48], ws[112];

		if (p->exited || !h->probe || !h->inside ||
		    s->now_ns - h->since_ns <= cfg->stall_threshold_ns)
			continue;
		call = h->probe == NT_P_IB_CONNECT ? "ncclIbConnect" : "ncclIbAccept";
		/* the sockets may name it already (the handshake runs over TCP): make it this */
		for (int k = 0; k < *n; k++)
			if (out[k].pid == p->pid && (out[k].kind == FINDING_STALL ||
						     out[k].kind == FINDING_RING_SETUP_BLOCKED ||
						     out[k].kind == FINDING_INIT_BLOCKED))
				f = &out[k];
		if (!f) {
			if (named_in(out, *n, p->pid) ||
			    !(f = proc_finding(out, n, max, FINDING_RING_SETUP_BLOCKED, p,
					       h->since_ns)))
				continue;
			for (int k = 0; k < s->nprocs; k++) {
				const struct snap_proc *w = &s->procs[k];

				if (w != p && !w->exited && w->ib_hs.probe && !w->ib_hs.inside &&
				    f->nwaiters < DIAG_MAX_WAITERS) {
					f->waiters[f->nwaiters++] = w->pid;
					if (!f->peer_pid) {
						f->peer_pid = w->pid;
						f->peer_rank = w->rank;
					}
				}
			}
		}
		f->kind = p->nccl_setup == SNAP_SETUP_INIT ? FINDING_INIT_BLOCKED
							   : FINDING_RING_SETUP_BLOCKED;
		/* the sockets' evidence, if any, only shows the wait: keep its first lines */
		if (f->nevidence > 2)
			f->nevidence = 2;
		snap_proc_name(p, p->pid, pn, sizeof(pn));
		snprintf(f->phase, sizeof(f->phase), "blocked inside %s (IB handshake stage %s)",
			 call, ib_stage_name(h->stage));
		waiter_list(s, f, ws, sizeof(ws));
		snprintf(f->summary, sizeof(f->summary),
			 "%s is blocked inside one %s call for %.1fs (IB connection handshake, "
			 "stage "
			 "%s)%s%s%s; NCCL never reports this",
			 pn, call, (double)(s->now_ns - h->since_ns) / NT_NSEC_PER_SEC,
			 ib_stage_name(h->stage), f->nwaiters ? "; " : "", f->nwaiters ? ws : "",
			 f->nwaiters > 1 ? " wait on it, their QPs short of RTS"
			 : f->nwaiters	 ? " waits on it, its QPs short of RTS"
					 : "");
		add_evidence(
			f,
			"%s thread %d (proxy service) entered %s %.1fs ago and has not returned: "
			"NCCL's IB connect/accept return at once while the peer is not ready",
			pn, h->tid, call, (double)(s->now_ns - h->since_ns) / NT_NSEC_PER_SEC);
		for (int k = 0; k < s->nprocs; k++) {
			const struct snap_proc *w = &s->procs[k];
			char wn[48];

			if (w == p || w->exited)
				continue;
			snap_proc_name(w, w->pid, wn, sizeof(wn));
			if (w->ib_hs.probe && !w->ib_hs.inside)
				add_evidence(f, "%s polls %s for %.1fs, handshake stage %s", wn,
					     w->ib_hs.probe == NT_P_IB_CONNECT ? "ncclIbConnect"
									       : "ncclIbAccept",
					     (double)(s->now_ns - w->ib_hs.since_ns) /
						     NT_NSEC_PER_SEC,
					     ib_stage_name(w->ib_hs.stage));
			qp_evidence(s, w, f);
		}
	}
}

/*
 * A rank inside NCCL setup whose connects are refused: NCCL retries them silently for
 * NCCL_SOCKET_RETRY_CNT rounds (about a minute by default), and everyone waits meanwhile.
 */
static void retry_findings(const struct snapshot *s, const struct diag_config *cfg,
			   struct finding *out, int *n, int max)
{
	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_proc *p = &s->procs[i];
		struct finding *f;
		char pn[48], ws[112];

		if (p->exited || p->nccl_setup == SNAP_SETUP_NONE || !p->nccl_retries ||
		    p->nccl_last_retry_ns < p->nccl_setup_since_ns ||
		    s->now_ns - p->nccl_setup_since_ns <= cfg->stall_threshold_ns ||
		    named_in(out, *n, p->pid) || *n >= max)
			continue;
		f = proc_finding(out, n, max,
				 p->nccl_setup == SNAP_SETUP_INIT ? FINDING_INIT_BLOCKED
								  : FINDING_RING_SETUP_BLOCKED,
				 p, p->nccl_setup_since_ns);
		/* the others in the same setup wait for it */
		for (int k = 0; k < s->nprocs; k++) {
			const struct snap_proc *w = &s->procs[k];

			if (w == p || w->exited || w->nccl_setup != p->nccl_setup ||
			    f->nwaiters >= DIAG_MAX_WAITERS)
				continue;
			f->waiters[f->nwaiters++] = w->pid;
			if (!f->peer_pid) {
				f->peer_pid = w->pid;
				f->peer_rank = w->rank;
			}
		}
		snap_proc_name(p, p->pid, pn, sizeof(pn));
		snprintf(f->phase, sizeof(f->phase), "%s (%s), connecting",
			 setup_name(p->nccl_setup), p->nccl_phase[0] ? p->nccl_phase : "?");
		waiter_list(s, f, ws, sizeof(ws));
		snprintf(f->summary, sizeof(f->summary),
			 "%s is blocked in NCCL %s for %.1fs: its connects to %s fail and NCCL "
			 "retries them silently (%llu so far)%s%s",
			 pn, setup_name(p->nccl_setup),
			 (double)(s->now_ns - f->since_ns) / NT_NSEC_PER_SEC,
			 p->nccl_retry_addr ? p->nccl_retry_addr : "?",
			 (unsigned long long)p->nccl_retries,
			 f->nwaiters ? "; waiting for it: " : "", f->nwaiters ? ws : "");
		add_evidence(f,
			     "%llu connect retries (socketConnectCheck), the last to %s %.1fs ago",
			     (unsigned long long)p->nccl_retries,
			     p->nccl_retry_addr ? p->nccl_retry_addr : "?",
			     (double)(s->now_ns - p->nccl_last_retry_ns) / NT_NSEC_PER_SEC);
		add_evidence(f, "%s in NCCL %s for %.1fs, now in %s", pn, setup_name(p->nccl_setup),
			     (double)(s->now_ns - p->nccl_setup_since_ns) / NT_NSEC_PER_SEC,
			     p->nccl_phase[0] ? p->nccl_phase : "?");
	}
}

/*
 * NCCL setup blocking, which NCCL never reports: ranks inside communicator init (bootstrap)
 * or transport setup (the lazy ring connect of the first collective) for longer than the
 * threshold, while a rank of the same job is not in it: outside NCCL, stopped, exited, or
 * never started. A rank busy in another NCCL phase may just be slow: no finding for it.
 */
static void setup_findings(const struct snapshot *s, const struct diag_config *cfg,
			   struct finding *out, int *n, int max)
{
	for (int cls = SNAP_SETUP_INIT; cls <= SNAP_SETUP_TRANSPORT; cls++) {
		const struct snap_proc *longest = NULL, *cul = NULL;
		int waiters[DIAG_MAX_WAITERS], nw = 0, world = -1, missing = -1;
		struct finding *f;
		char cn[64], ws[112];

		for (int i = 0; i < s->nprocs; i++) {
			const struct snap_proc *p = &s->procs[i];

			if (p->rank < 0 || p->exited || p->nccl_setup != cls ||
			    s->now_ns - p->nccl_setup_since_ns <= cfg->stall_threshold_ns ||
			    named_in(out, *n, p->pid))
				continue;
			if (nw < DIAG_MAX_WAITERS)
				waiters[nw++] = p->pid;
			if (!longest || p->nccl_setup_since_ns < longest->nccl_setup_since_ns)
				longest = p;
			if (p->world_size > 0)
				world = p->world_size;
		}
		if (!nw)
			continue;
		for (int i = 0; i < s->nprocs; i++) {
			const struct snap_proc *p = &s->procs[i];
			bool stopped = p->state == 'T' || p->state == 't';

			if (p->rank < 0 || (world > 0 && p->world_size != world) ||
			    p->nccl_setup == cls || named_in(out, *n, p->pid))
				continue;
			/* inside another NCCL phase: progressing, perhaps slowly */
			if (!p->exited && !stopped && p->nccl_phase[0])
				continue;
			if (!cul || (cul->exited && !p->exited))
				cul = p;
		}
		for (int r = 0; !cul && world > 0 && r < world && missing < 0; r++) {
			bool seen = false;

			for (int i = 0; i < s->nprocs && !seen; i++)
				seen = s->procs[i].rank == r && s->procs[i].world_size == world;
			if (!seen)
				missing = r;
		}
		if ((!cul && missing < 0) || *n >= max)
			continue;
		f = &out[(*n)++];
		memset(f, 0, sizeof(*f));
		f->conn = -1;
		f->since_ns = longest->nccl_setup_since_ns;
		f->peer_pid = longest->pid;
		f->peer_rank = longest->rank;
		for (int k = 0; k < nw; k++)
			f->waiters[f->nwaiters++] = waiters[k];
		waiter_list(s, f, ws, sizeof(ws));
		if (cul) {
			f->pid = cul->pid;
			f->rank = cul->rank;
			describe_culprit(cul, f);
			f->kind = cul->exited				   ? FINDING_PEER_DEAD
				  : cul->state == 'T' || cul->state == 't' ? FINDING_PEER_STOPPED
				  : cls == SNAP_SETUP_INIT		   ? FINDING_INIT_BLOCKED
							   : FINDING_RING_SETUP_BLOCKED;
			snap_proc_name(cul, cul->pid, cn, sizeof(cn));
			if (cul->exited)
				add_evidence(f, "pid %d %s", cul->pid, f->phase);
			else
				add_evidence(f, "/proc/%d/stat state %c%s%s, not in NCCL %s",
					     cul->pid, cul->state,
					     cul->where[0] ? ", main thread in " : "", cul->where,
					     setup_name(cls));
		} else {
			f->pid = 0;
			f->rank = missing;
			f->kind = FINDING_PEER_DEAD;
			snprintf(f->phase, sizeof(f->phase), "never started");
			snprintf(cn, sizeof(cn), "rank %d", missing);
			add_evidence(f, "no traced process has RANK=%d (WORLD_SIZE=%d)", missing,
				     world);
		}
		snprintf(f->summary, sizeof(f->summary),
			 "%s wait%s in NCCL %s for %.1fs for %s, which is not in it: %s", ws,
			 nw > 1 ? "" : "s", setup_name(cls),
			 (double)(s->now_ns - f->since_ns) / NT_NSEC_PER_SEC, cn, f->phase);
		for (int k = 0; k < nw && f->nevidence < DIAG_MAX_EVIDENCE; k++) {
			const struct snap_proc *w = snapshot_proc(s, waiters[k]);
			char wn[48];

			snap_proc_name(w, w->pid, wn, sizeof(wn));
			add_evidence(f, "%s in NCCL %s for %.1fs, now in %s", wn, setup_name(cls),
				     (double)(s->now_ns - w->nccl_setup_since_ns) / NT_NSEC_PER_SEC,
				     w->nccl_phase[0] ? w->nccl_phase : "?");
		}
	}
}

/* ---- collective sequences: NCCL's own counters, the only evidence without sockets ---- */

static uint64_t seq_total(const struct snap_comm *c)
{
	uint64_t t = 0;

	for (int f = 0; f < SNAP_NSEQ; f++)
		t += c->seq[f];
	return t;
}

static void add_waiter(struct finding *f, int pid)
{
	for (int k = 0; k < f->nwaiters; k++)
		if (f->waiters[k] == pid)
			return;
	if (f->nwaiters < DIAG_MAX_WAITERS)
		f->waiters[f->nwaiters++] = pid;
}

/* The members of the communicator of comms[i], if i is its first member; returns how many. */
static int comm_members(const struct snapshot *s, int i, int *mem)
{
	int n = 0;

	for (int j = 0; j < s->ncomms; j++) {
		if (!s->comms[j].seq_ok || s->comms[j].hash != s->comms[i].hash)
			continue;
		if (j < i)
			return 0;
		mem[n++] = j;
	}
	return n;
}

/* The collective a member is in: the function it launched the most of beyond the slowest. */
static int member_coll(const struct snap_comm *c, const uint64_t *lo)
{
	int best = -1;
	uint64_t d = 0;

	for (int f = 0; f < SNAP_NSEQ; f++)
		if (c->seq[f] - lo[f] > d) {
			d = c->seq[f] - lo[f];
			best = f;
		}
	return best;
}

static void comm_evidence(const struct snapshot *s, struct finding *f, const struct snap_comm *c)
{
	char pn[48], counts[128] = "";
	size_t off = 0;

	snap_proc_name(snapshot_proc(s, c->pid), c->pid, pn, sizeof(pn));
	for (int k = 0; k < SNAP_NSEQ && off + 24 < sizeof(counts); k++)
		if (c->seq[k])
			off += snprintf(counts + off, sizeof(counts) - off, "%s%s %llu",
					off ? ", " : "", coll_names[k],
					(unsigned long long)c->seq[k]);
	if (c->destroyed)
		add_evidence(f,
			     "%s destroyed comm %016llx (ncclCommDestroy) after launching %s, "
			     "%.1fs ago",
			     pn, (unsigned long long)c->hash, off ? counts : "no collective",
			     (double)(s->now_ns - c->changed_ns) / NT_NSEC_PER_SEC);
	else
		add_evidence(f,
			     "%s launched %s on comm %016llx (comm->seqNumber), unchanged for "
			     "%.1fs",
			     pn, off ? counts : "no collective", (unsigned long long)c->hash,
			     (double)(s->now_ns - c->changed_ns) / NT_NSEC_PER_SEC);
	if (c->last_coll >= 0) {
		char a[96];

		coll_args(c->last_coll, c->last_count, c->last_dtype, c->last_root, a, sizeof(a));
		add_evidence(f, "%s last launched %s, %s (ncclEnqueueCheck)", pn,
			     snap_coll_name(c->last_coll), a);
	}
}

/* "rank 1" or "pid 4711": a member by its process */
static void member_name(const struct snapshot *s, const struct snap_comm *c, char *buf, size_t len)
{
	const struct snap_proc *p = snapshot_proc(s, c->pid);

	if (p && p->rank >= 0)
		snprintf(buf, len, "rank %d", p->rank);
	else
		snprintf(buf, len, "comm rank %d (pid %d)", c->rank, c->pid);
}

/*
 * Members whose signature (sig[k]) is the rarest: the odd ones out. Ties go to the signature
 * with the smallest weight (the function launched least over the whole communicator).
 */
static int odd_signature(const int *sig, const uint64_t *weight, int nm)
{
	int best = -1, best_n = 0;

	for (int k = 0; k < nm; k++) {
		int cnt = 0;

		for (int j = 0; j < nm; j++)
			cnt += sig[j] == sig[k];
		if (best < 0 || cnt < best_n || (cnt == best_n && weight[k] < weight[best])) {
			best = k;
			best_n = cnt;
		}
	}
	return sig[best];
}

/* Drop socket findings that name a process as culprit that the counters show waiting. */
static void drop_explained(struct finding *out, int *n, int pid, struct finding *keep)
{
	for (int i = 0; i < *n; i++)
		if (&out[i] != keep && out[i].pid == pid && !out[i].comm_hash) {
			if (keep)
				for (int k = 0; k < out[i].nwaiters; k++)
					if (out[i].waiters[k] != keep->pid)
						add_waiter(keep, out[i].waiters[k]);
			remove_finding(out, n, i);
			return;
		}
}

#define DESC_LEN 80

/* One finding per communicator: the odd members (signature odd) against the others. */
static void mismatch_finding(const struct snapshot *s, const int *mem, int nm, const int *sig,
			     int odd, char (*desc)[DESC_LEN], struct finding *out, int *n, int max)
{
	const struct snap_comm *cul = NULL;
	struct finding *f;
	char ws[112], odds[112] = "";
	const char *theirs = "";
	uint64_t since = 0;
	size_t off = 0;

	for (int k = 0; k < nm; k++) {
		if (sig[k] == odd && !cul)
			cul = &s->comms[mem[k]];
		if (sig[k] != odd && !theirs[0])
			theirs = desc[k];
		if (!since || s->comms[mem[k]].changed_ns > since)
			since = s->comms[mem[k]].changed_ns;
	}
	/* every member waits on the others: socket findings among them say nothing more */
	for (int k = 0; k < nm; k++)
		drop_explained(out, n, s->comms[mem[k]].pid, NULL);
	f = new_finding(out, n, max);
	if (!f)
		return;
	f->kind = FINDING_COLLECTIVE_MISMATCH;
	f->pid = cul->pid;
	f->rank = snapshot_proc(s, cul->pid) ? snapshot_proc(s, cul->pid)->rank : -1;
	f->comm_hash = cul->hash;
	f->since_ns = since;
	for (int k = 0; k < nm; k++) {
		const struct snap_comm *c = &s->comms[mem[k]];
		char mn[48];

		if (sig[k] == odd) {
			if (off + 40 < sizeof(odds)) {
				member_name(s, c, mn, sizeof(mn));
				off += snprintf(odds + off, sizeof(odds) - off, "%s%s",
						off ? "," : "", mn);
			}
			continue;
		}
		add_waiter(f, c->pid);
		if (!f->peer_pid) {
			f->peer_pid = c->pid;
			f->peer_rank =
				snapshot_proc(s, c->pid) ? snapshot_proc(s, c->pid)->rank : -1;
		}
	}
	waiter_list(s, f, ws, sizeof(ws));
	for (int k = 0; k < nm; k++)
		if (&s->comms[mem[k]] == cul)
			snprintf(f->phase, sizeof(f->phase), "%s", desc[k]);
	snprintf(f->summary, sizeof(f->summary),
		 "collective mismatch on comm %016llx: %s in %s, %s in %s; none has launched "
		 "anything for %.1fs",
		 (unsigned long long)cul->hash, odds, f->phase, ws, theirs,
		 (double)(s->now_ns - since) / NT_NSEC_PER_SEC);
	for (int k = 0; k < nm; k++)
		comm_evidence(s, f, &s->comms[mem[k]]);
}

/*
 * Has pid launched a collective that another member of one of its communicators has not? Then
 * it waits inside it, whatever its sockets say: the counters decide who is behind.
 */
static bool counters_say_waiting(const struct snapshot *s, int pid)
{
	for (int i = 0; i < s->ncomms; i++) {
		const struct snap_comm *c = &s->comms[i];

		if (c->pid != pid || !c->seq_ok)
			continue;
		for (int j = 0; j < s->ncomms; j++) {
			const struct snap_comm *m = &s->comms[j];

			if (j == i || !m->seq_ok || m->hash != c->hash)
				continue;
			for (int f = 0; f < SNAP_NSEQ; f++)
				if (m->seq[f] < c->seq[f])
					return true;
			/* as far along, but launched with other arguments (--collectives) */
			if (!memcmp(m->seq, c->seq, sizeof(c->seq)) && m->last_coll >= 0 &&
			    c->last_coll >= 0 && !same_args(m, c))
				return true;
		}
	}
	return false;
}

/*
 * Without sockets (NVLink, SHM) a hang shows only in NCCL's counters: the members of a
 * communicator stopped launching, some have launched more than others. The ranks behind are
 * where the others wait; ranks in different collectives (or one collective with different
 * arguments) wait on each other for ever: a mismatch.
 */
static void coll_findings(const struct snapshot *s, const struct diag_config *cfg,
			  struct finding *out, int *n, int max)
{
	for (int i = 0; i < s->ncomms; i++) {
		int mem[s->ncomms], sig[s->ncomms], nm = comm_members(s, i, mem);
		uint64_t lo[SNAP_NSEQ], hi[SNAP_NSEQ], moved = 0, least = UINT64_MAX, wsince = 0;
		uint64_t weight[s->ncomms];
		bool ordered = true, equal = true, known = true, live = false;

		for (int k = 0; k < nm; k++)
			live |= !s->comms[mem[k]].destroyed;
		/* every rank destroyed it: the job is done with it */
		if (nm < 2 || !live)
			continue;
		for (int f = 0; f < SNAP_NSEQ; f++) {
			lo[f] = UINT64_MAX;
			hi[f] = 0;
		}
		for (int k = 0; k < nm; k++) {
			const struct snap_comm *c = &s->comms[mem[k]];

			moved = c->changed_ns > moved ? c->changed_ns : moved;
			least = seq_total(c) < least ? seq_total(c) : least;
			known &= c->last_coll >= 0;
			for (int f = 0; f < SNAP_NSEQ; f++) {
				lo[f] = c->seq[f] < lo[f] ? c->seq[f] : lo[f];
				hi[f] = c->seq[f] > hi[f] ? c->seq[f] : hi[f];
			}
		}
		/* still moving: slow perhaps, not stuck */
		if (s->now_ns - moved <= cfg->stall_threshold_ns)
			continue;
		for (int a = 0; a < nm; a++)
			for (int b = 0; b < nm; b++) {
				bool ahead = false, behind = false;

				for (int f = 0; f < SNAP_NSEQ; f++) {
					ahead |= s->comms[mem[a]].seq[f] > s->comms[mem[b]].seq[f];
					behind |= s->comms[mem[a]].seq[f] < s->comms[mem[b]].seq[f];
				}
				ordered &= !(ahead && behind);
				equal &= !ahead && !behind;
			}
		if (!ordered) {
			char desc[nm][DESC_LEN];
			int odd;

			for (int k = 0; k < nm; k++) {
				sig[k] = member_coll(&s->comms[mem[k]], lo);
				weight[k] = sig[k] >= 0 ? 0 : UINT64_MAX;
				for (int j = 0; j < nm && sig[k] >= 0; j++)
					weight[k] += s->comms[mem[j]].seq[sig[k]];
			}
			odd = odd_signature(sig, weight, nm);
			for (int k = 0; k < nm; k++)
				snprintf(desc[k], DESC_LEN, "%s #%llu", snap_coll_name(sig[k]),
					 (unsigned long long)(sig[k] >= 0
								      ? s->comms[mem[k]].seq[sig[k]]
								      : 0));
			mismatch_finding(s, mem, nm, sig, odd, desc, out, n, max);
			continue;
		}
		if (equal) {
			int odd;
			char desc[nm][DESC_LEN];
			bool differ = false;

			/* the same number of each: the arguments may still differ (--collectives) */
			if (!known)
				continue;
			for (int k = 0; k < nm; k++) {
				const struct snap_comm *c = &s->comms[mem[k]];

				sig[k] = k;
				for (int j = 0; j < k; j++) {
					const struct snap_comm *d = &s->comms[mem[j]];

					if (same_args(c, d)) {
						sig[k] = sig[j];
						break;
					}
				}
				weight[k] = 0;
			}
			for (int k = 1; k < nm; k++)
				differ |= sig[k] != sig[0];
			if (!differ)
				continue; /* the same collective everywhere: a transport matter */
			odd = odd_signature(sig, weight, nm);
			for (int k = 0; k < nm; k++) {
				const struct snap_comm *c = &s->comms[mem[k]];
				char a[DESC_LEN - 32];

				coll_args(c->last_coll, c->last_count, c->last_dtype, c->last_root,
					  a, sizeof(a));
				snprintf(desc[k], DESC_LEN, "%s #%llu (%s)",
					 snap_coll_name(c->last_coll),
					 (unsigned long long)(c->last_coll < SNAP_NSEQ
								      ? c->seq[c->last_coll]
								      : 0),
					 a);
			}
			mismatch_finding(s, mem, nm, sig, odd, desc, out, n, max);
			continue;
		}
		/* ordered, not equal: the members with the fewest launches hold the others */
		for (int k = 0; k < nm; k++) {
			const struct snap_comm *c = &s->comms[mem[k]];

			if (seq_total(c) != least && (!wsince || c->changed_ns < wsince))
				wsince = c->changed_ns;
		}
		for (int k = 0; k < nm; k++) {
			const struct snap_comm *c = &s->comms[mem[k]];
			const struct snap_proc *p = snapshot_proc(s, c->pid);
			struct finding *f = NULL;
			char cn[48], ws[112], st[64];
			bool fresh = false;

			if (seq_total(c) != least)
				continue;
			/* the ranks ahead wait inside the collective: not culprits */
			for (int j = 0; j < nm; j++)
				if (seq_total(&s->comms[mem[j]]) != least)
					drop_explained(out, n, s->comms[mem[j]].pid, NULL);
			for (int j = 0; j < *n && !f; j++)
				if (out[j].pid == c->pid)
					f = &out[j];
			if (!f) {
				f = new_finding(out, n, max);
				if (!f)
					return;
				fresh = true;
				f->pid = c->pid;
				f->rank = p ? p->rank : -1;
				f->since_ns = wsince;
				f->kind = !p || !p->exited ? FINDING_STALL : FINDING_PEER_DEAD;
				if (p && (p->state == 'T' || p->state == 't'))
					f->kind = FINDING_PEER_STOPPED;
			}
			f->comm_hash = c->hash;
			for (int j = 0; j < nm; j++) {
				const struct snap_comm *w = &s->comms[mem[j]];

				if (seq_total(w) == least)
					continue;
				add_waiter(f, w->pid);
				if (!f->peer_pid) {
					f->peer_pid = w->pid;
					f->peer_rank = snapshot_proc(s, w->pid)
							       ? snapshot_proc(s, w->pid)->rank
							       : -1;
				}
			}
			if (fresh) {
				int ahead = -1;

				for (int j = 0; j < nm && ahead < 0; j++)
					if (seq_total(&s->comms[mem[j]]) != least)
						ahead = member_coll(&s->comms[mem[j]], lo);
				if (p)
					describe_culprit(p, f);
				else
					snprintf(f->phase, sizeof(f->phase), "not traced");
				if (c->destroyed) {
					size_t l = strlen(f->phase);

					snprintf(f->phase + l, sizeof(f->phase) - l,
						 ", communicator destroyed");
				}
				member_name(s, c, cn, sizeof(cn));
				waiter_list(s, f, ws, sizeof(ws));
				snprintf(st, sizeof(st), "%s #%llu", snap_coll_name(ahead),
					 (unsigned long long)(ahead >= 0 ? hi[ahead] : 0));
				snprintf(f->summary, sizeof(f->summary),
					 "%s has not launched %s on comm %016llx; %s wait%s in it "
					 "for %.1fs; %s is %s",
					 cn, st, (unsigned long long)c->hash, ws,
					 f->nwaiters > 1 ? "" : "s",
					 (double)(s->now_ns - wsince) / NT_NSEC_PER_SEC, cn,
					 f->phase);
				if (p && p->exited)
					add_evidence(f, "pid %d %s", p->pid, f->phase);
				else if (p)
					add_evidence(f,
						     "/proc/%d/stat state %c%s%s, %.2fs CPU in the "
						     "last second",
						     p->pid, p->state,
						     p->where[0] ? ", main thread in " : "",
						     p->where,
						     (double)p->cpu_busy_ns / NT_NSEC_PER_SEC);
			}
			for (int j = 0; j < nm; j++)
				comm_evidence(s, f, &s->comms[mem[j]]);
		}
	}
}

/*
 * A straggler: nothing hangs, but of the samples in which a communicator moved, one rank was
 * alone behind the others in most. It is the rank everyone waits for at each step.
 */
static void straggler_findings(const struct snapshot *s, const struct diag_config *cfg,
			       struct finding *out, int *n, int max)
{
	if (cfg->straggler_samples <= 0)
		return;
	for (int i = 0; i < s->ncomms; i++) {
		const struct snap_comm *c = &s->comms[i];
		int mem[s->ncomms], nm, behind = __builtin_popcountll(c->behind_bits), next = 0;
		const struct snap_proc *p = snapshot_proc(s, c->pid);
		struct finding *f;
		char cn[48], ws[112];

		if (!c->seq_ok || c->destroyed || behind < cfg->straggler_samples || !p ||
		    p->exited || named_in(out, *n, c->pid))
			continue;
		/* nobody else close: a job whose ranks take turns being last has no straggler */
		nm = 0;
		for (int j = 0; j < s->ncomms; j++)
			if (s->comms[j].seq_ok && s->comms[j].hash == c->hash)
				mem[nm++] = j;
		for (int k = 0; k < nm; k++)
			if (mem[k] != i) {
				int b = __builtin_popcountll(s->comms[mem[k]].behind_bits);

				next = b > next ? b : next;
			}
		if (next * 3 > behind)
			continue;
		f = new_finding(out, n, max);
		if (!f)
			return;
		f->kind = FINDING_STRAGGLER;
		f->pid = c->pid;
		f->rank = p->rank;
		f->comm_hash = c->hash;
		f->since_ns = c->behind_since_ns ? c->behind_since_ns : s->now_ns;
		for (int k = 0; k < nm; k++)
			if (mem[k] != i) {
				add_waiter(f, s->comms[mem[k]].pid);
				if (!f->peer_pid) {
					f->peer_pid = s->comms[mem[k]].pid;
					f->peer_rank = snapshot_proc(s, f->peer_pid)
							       ? snapshot_proc(s, f->peer_pid)->rank
							       : -1;
				}
			}
		describe_culprit(p, f);
		member_name(s, c, cn, sizeof(cn));
		waiter_list(s, f, ws, sizeof(ws));
		snprintf(f->summary, sizeof(f->summary),
			 "%s is the last to launch collectives on comm %016llx: alone behind in %d "
			 "of the last %d samples while it moved; %s wait%s for it at each step",
			 cn, (unsigned long long)c->hash, behind, c->nsamples, ws,
			 f->nwaiters > 1 ? "" : "s");
		add_evidence(f,
			     "%s alone behind in %d of %d samples, %d with the ranks apart "
			     "(comm->seqNumber sampled every tick)",
			     cn, behind, c->nsamples, __builtin_popcountll(c->differ_bits));
		for (int k = 0; k < nm; k++)
			if (mem[k] != i) {
				char mn[48];

				member_name(s, &s->comms[mem[k]], mn, sizeof(mn));
				add_evidence(f, "%s alone behind in %d samples", mn,
					     __builtin_popcountll(s->comms[mem[k]].behind_bits));
			}
		add_evidence(f, "/proc/%d/stat state %c%s%s, %.2fs CPU in the last second", p->pid,
			     p->state, p->where[0] ? ", main thread in " : "", p->where,
			     (double)p->cpu_busy_ns / NT_NSEC_PER_SEC);
	}
}

static uint64_t seq_total(const struct snap_comm *c);

/* Why the per-call hooks must be on now, or NULL if the job may run quiet. */
static const char *quiet_blocker(const struct snapshot *s, const struct diag_config *cfg,
				 int open_findings, char *buf, size_t len)
{
	const struct snap_comm *stopped = NULL;
	int counted = 0;

	if (open_findings > 0)
		return "a finding is open";
	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_proc *p = &s->procs[i];

		if (p->exited || !p->nccl_setup)
			continue;
		if (p->rank < 0)
			return "a process in NCCL setup";
		snprintf(buf, len, "rank %d in NCCL setup", p->rank);
		return buf;
	}
	for (int i = 0; i < s->nconns; i++)
		if (s->conns[i].c.state == TCP_SYN_SENT && !s->conns[i].closed)
			return "a connect in progress";
	for (int i = 0; i < s->ncomms; i++) {
		const struct snap_comm *c = &s->comms[i];
		const struct snap_proc *p = snapshot_proc(s, c->pid);

		if (c->destroyed || !c->seq_ok || !p || p->exited)
			continue;
		counted++;
		/* the one stopped the longest: where a stall starts, the rank behind stops first */
		/* ties (one tick saw them all stop): the one with fewer collectives is behind */
		if (s->now_ns - c->changed_ns > cfg->quiet_recent_ns &&
		    (!stopped || c->changed_ns < stopped->changed_ns ||
		     (c->changed_ns == stopped->changed_ns && seq_total(c) < seq_total(stopped))))
			stopped = c;
	}
	if (stopped) {
		snprintf(buf, len, "rank %d's collectives stopped on comm %016llx", stopped->rank,
			 (unsigned long long)stopped->hash);
		return buf;
	}
	return counted ? NULL : "no NCCL communicator progressing";
}

bool diagnose_quiet(const struct snapshot *s, const struct diag_config *cfg, int open_findings,
		    struct quiet *q)
{
	char buf[96];
	const char *why = cfg->quiet_hold_ns
				  ? quiet_blocker(s, cfg, open_findings, buf, sizeof(buf))
				  : "--tcp-hooks always";

	if (why) {
		if (q->off)
			snprintf(q->why_on, sizeof(q->why_on), "%s", why);
		q->off = false;
		q->eligible_ns = 0;
		return false;
	}
	if (!q->eligible_ns)
		q->eligible_ns = s->now_ns;
	if (!q->off && s->now_ns - q->eligible_ns >= cfg->quiet_hold_ns)
		q->off = true;
	return q->off;
}

int diagnose(const struct snapshot *s, const struct diag_config *cfg, struct finding *out, int max)
{
	int wait[s->nprocs > 0 ? s->nprocs : 1];
	struct culprit cul[s->nprocs > 0 ? s->nprocs : 1];
	int n = 0, dead;

	for (int i = 0; i < s->nprocs; i++)
		wait[i] = diagnose_waiting_conn(s, cfg, s->procs[i].pid);
	for (int i = 0; i < s->nprocs; i++)
		if (wait[i] >= 0)
			cul[i] = follow(s, wait, s->procs[i].pid);

	/* one finding per culprit, with every process whose chain ends there */
	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_conn *wc;
		const struct snap_proc *cp;
		struct finding *f;
		int fi;

		if (wait[i] < 0)
			continue;
		wc = &s->conns[wait[i]];
		cp = cul[i].pid > 0 ? snapshot_proc(s, cul[i].pid) : NULL;
		fi = find_or_add(s, out, &n, max, FINDING_STALL, cul[i].pid,
				 cul[i].pid > 0 ? 0 : cul[i].conn);
		if (fi < 0)
			break;
		f = &out[fi];
		if (cp) {
			f->rank = cp->rank;
			if (cp->exited)
				f->kind = FINDING_PEER_DEAD;
			else if (cp->state == 'T' || cp->state == 't')
				f->kind = FINDING_PEER_STOPPED;
		} else if (wc->c.state == TCP_SYN_SENT) {
			f->kind = FINDING_CONN_ERROR;
		}
		if (f->nwaiters < DIAG_MAX_WAITERS)
			f->waiters[f->nwaiters++] = s->procs[i].pid;
		if (cul[i].cycle)
			f->cycle = true;
		/* direct waiters: their connection's peer is the culprit (or goes to its address) */
		if (wc->peer_pid == cul[i].pid || (cul[i].pid == 0 && wait[i] == cul[i].conn) ||
		    cul[i].cycle) {
			uint64_t prog = conn_seen_progress(s, wc);

			/* the longest waiter's last progress */
			if (!f->since_ns || prog < f->since_ns)
				f->since_ns = prog;
			if (!f->peer_pid || f->conn < 0 ||
			    conn_seen_progress(s, wc) < conn_seen_progress(s, &s->conns[f->conn])) {
				f->peer_pid = s->procs[i].pid;
				f->peer_rank = s->procs[i].rank;
				f->conn = wait[i];
			}
		}
	}

	for (int i = 0; i < n; i++) {
		struct finding *f = &out[i];
		const struct snap_proc *cp = f->pid > 0 ? snapshot_proc(s, f->pid) : NULL;
		char cn[64], pn[48], ws[112] = "", ep[64];
		int shown = 0;

		if (f->since_ns == 0)
			f->since_ns = s->now_ns;
		waiter_list(s, f, ws, sizeof(ws));
		if (cp) {
			snap_proc_name(cp, f->pid, cn, sizeof(cn));
			describe_culprit(cp, f);
			if (f->cycle)
				snprintf(f->phase, sizeof(f->phase), "in a wait cycle");
		} else {
			const struct snap_proc *w = snapshot_proc(s, f->peer_pid);

			fmt_endpoint(&s->conns[f->conn].c.t, 0, ep, sizeof(ep));
			snprintf(cn, sizeof(cn), "%s", ep);
			snprintf(f->phase, sizeof(f->phase), "%s",
				 f->kind == FINDING_CONN_ERROR ? "connect unanswered"
							       : "untraced peer silent");
			/*
			 * NCCL setup connecting to an address nobody answers: the blocked rank is
			 * the subject, the address is what it waits on (the finding's conn)
			 */
			if (f->kind == FINDING_CONN_ERROR && w &&
			    w->nccl_setup != SNAP_SETUP_NONE) {
				f->kind = w->nccl_setup == SNAP_SETUP_INIT
						  ? FINDING_INIT_BLOCKED
						  : FINDING_RING_SETUP_BLOCKED;
				f->rank = w->rank;
				f->peer_rank = -1;
				snprintf(f->phase, sizeof(f->phase), "%s (%s), connecting",
					 setup_name(w->nccl_setup),
					 w->nccl_phase[0] ? w->nccl_phase : "?");
			}
		}
		snap_proc_name(snapshot_proc(s, f->peer_pid), f->peer_pid, pn, sizeof(pn));
		if (cp && f->cycle)
			snprintf(
				f->summary, sizeof(f->summary),
				"wait cycle: %s each wait on the next, none is outside a socket "
				"wait "
				"(%.1fs without progress); the cause is the order of operations or "
				"the network, not a stopped process",
				ws, (double)(s->now_ns - f->since_ns) / NT_NSEC_PER_SEC);
		else if (cp && f->nwaiters)
			snprintf(f->summary, sizeof(f->summary),
				 "%s is %s; %s wait%s on it (longest: %s, %.1fs without progress)",
				 cn, f->phase, ws, f->nwaiters > 1 ? "" : "s", pn,
				 (double)(s->now_ns - f->since_ns) / NT_NSEC_PER_SEC);
		else if (f->kind == FINDING_INIT_BLOCKED || f->kind == FINDING_RING_SETUP_BLOCKED)
			snprintf(f->summary, sizeof(f->summary),
				 "%s is blocked in NCCL %s for %.1fs: its connect to %s is not "
				 "answered (%u SYN retransmits); NCCL never reports this",
				 pn, f->phase, (double)(s->now_ns - f->since_ns) / NT_NSEC_PER_SEC,
				 cn, s->conns[f->conn].c.syn_retrans);
		else
			snprintf(f->summary, sizeof(f->summary), "%s waits on %s (%s) for %.1fs",
				 pn, cn, f->phase,
				 (double)(s->now_ns - f->since_ns) / NT_NSEC_PER_SEC);
		if (cp && cp->exited)
			add_evidence(f, "pid %d %s", f->pid, f->phase);
		else if (cp)
			add_evidence(f, "/proc/%d/stat state %c%s%s, %.2fs CPU in the last second",
				     f->pid, cp->state, cp->where[0] ? ", main thread in " : "",
				     cp->where, (double)cp->cpu_busy_ns / NT_NSEC_PER_SEC);
		for (int k = 0; k < s->nprocs && shown < 4; k++) {
			int ci = diagnose_waiting_conn(s, cfg, s->procs[k].pid);

			if (ci < 0)
				continue;
			if (s->conns[ci].peer_pid == f->pid && f->pid > 0) {
				waiter_evidence(s, f, ci);
				shown++;
			} else if (f->pid == 0 && same_remote(s, ci, f->conn)) {
				waiter_evidence(s, f, ci);
				shown++;
			}
		}
	}

	/* a process that died abnormally while its peers were alive, even if nobody waits yet */
	dead = first_abnormal_exit(s);
	if (dead >= 0) {
		const struct snap_proc *p = &s->procs[dead];
		int fi = find_or_add(s, out, &n, max, FINDING_PEER_DEAD, p->pid, 0);

		if (fi >= 0 && out[fi].summary[0] == '\0') {
			struct finding *f = &out[fi];
			char cn[48], st[48];

			f->kind = FINDING_PEER_DEAD;
			f->rank = p->rank;
			f->since_ns = p->exit_ns;
			describe_status(p->exit_status, st, sizeof(st));
			snprintf(f->phase, sizeof(f->phase), "%s", st);
			snap_proc_name(p, p->pid, cn, sizeof(cn));
			snprintf(f->summary, sizeof(f->summary),
				 "%s %s while connected to live processes", cn, st);
			add_evidence(f, "pid %d %s", p->pid, st);
			for (int j = 0, shown = 0; j < s->nconns; j++) {
				const struct snap_conn *c = &s->conns[j];
				char tup[112], pn[48];

				if (c->pid != p->pid || c->peer_pid <= 0 || c->peer_pid == p->pid)
					continue;
				/* a few: room stays for NCCL's own words */
				if (shown++ == 4)
					break;
				if (!f->peer_pid) {
					const struct snap_proc *q = snapshot_proc(s, c->peer_pid);

					f->peer_pid = c->peer_pid;
					f->peer_rank = q ? q->rank : -1;
				}
				snap_proc_name(snapshot_proc(s, c->peer_pid), c->peer_pid, pn,
					       sizeof(pn));
				add_evidence(f, "its conn %s to %s",
					     fmt_tuple(&c->c.t, tup, sizeof(tup)), pn);
			}
		}
	}
	for (int i = 0; i < n; i++)
		if (out[i].pid > 0 && !out[i].cycle && out[i].kind == FINDING_STALL &&
		    counters_say_waiting(s, out[i].pid))
			remove_finding(out, &n, i--);
	coll_findings(s, cfg, out, &n, max);
	ib_findings(s, out, &n, max);
	ib_handshake_findings(s, cfg, out, &n, max);
	retry_findings(s, cfg, out, &n, max);
	setup_findings(s, cfg, out, &n, max);
	straggler_findings(s, cfg, out, &n, max);

	for (int i = 0; i < n; i++) {
		char ep[64];

		if (out[i].pid > 0)
			snprintf(out[i].key, sizeof(out[i].key), "%s:pid:%d",
				 finding_kind_name(out[i].kind), out[i].pid);
		else if (out[i].conn < 0)
			snprintf(out[i].key, sizeof(out[i].key), "%s:rank:%d",
				 finding_kind_name(out[i].kind), out[i].rank);
		else
			snprintf(out[i].key, sizeof(out[i].key), "%s:addr:%s",
				 finding_kind_name(out[i].kind),
				 fmt_endpoint(&s->conns[out[i].conn].c.t, 0, ep, sizeof(ep)));
		explain_finding(s, &out[i]);
	}
	return n;
}
