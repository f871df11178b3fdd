// SPDX-License-Identifier: MIT
/*
 * Wait-for reasoning over a snapshot. A process waits when none of its connections made byte
 * progress for longer than the threshold while it keeps trying one of them (an EAGAIN spin, a
 * thread blocked in a send or receive, a connect nobody answers). Following "waits on the peer of
 * that connection" from any waiting process ends at a process that is not waiting (sleeping,
 * stopped, exited, busy elsewhere) or at an address nobody traced: that is the culprit.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include "diagnose.h"
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
static bool conn_tried(const struct snap_conn *c, const struct diag_config *cfg, uint64_t now)
{
	if (c->closed)
		return false;
	if (c->c.last_eagain_ns && now - c->c.last_eagain_ns <= cfg->active_window_ns &&
	    c->c.last_eagain_ns > conn_progress(c))
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
		    !conn_tried(c, cfg, s->now_ns) ||
		    s->now_ns - conn_progress(c) <= cfg->stall_threshold_ns)
			continue;
		if (conn_progress(c) < best_t) {
			best_t = conn_progress(c);
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
	double age = (double)(s->now_ns - conn_progress(c)) / NT_NSEC_PER_SEC;

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
			uint64_t prog = conn_progress(wc);

			/* the longest waiter's last progress */
			if (!f->since_ns || prog < f->since_ns)
				f->since_ns = prog;
			if (!f->peer_pid || f->conn < 0 ||
			    conn_progress(wc) < conn_progress(&s->conns[f->conn])) {
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
			fmt_endpoint(&s->conns[f->conn].c.t, 0, ep, sizeof(ep));
			snprintf(cn, sizeof(cn), "%s", ep);
			snprintf(f->phase, sizeof(f->phase), "%s",
				 f->kind == FINDING_CONN_ERROR ? "connect unanswered"
							       : "untraced peer silent");
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
			for (int j = 0; j < s->nconns; j++) {
				const struct snap_conn *c = &s->conns[j];
				char tup[112], pn[48];

				if (c->pid != p->pid || c->peer_pid <= 0)
					continue;
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
	setup_findings(s, cfg, out, &n, max);

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
	}
	return n;
}
