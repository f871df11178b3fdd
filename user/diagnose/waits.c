// SPDX-License-Identifier: MIT
/*
 * Wait-for reasoning over a snapshot. A process waits when none of its connections made byte
 * progress for longer than the threshold while it keeps trying one of them (an EAGAIN spin, a
 * thread blocked in a send or receive, a connect nobody answers). Following "waits on the peer of
 * that connection" from any waiting process ends at a process that is not waiting (sleeping,
 * stopped, exited, busy elsewhere) or at an address nobody traced: that is the culprit.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diagnose/rules.h"
#include "util/fmt.h"

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

/*
 * Progress of a connection as the diagnosis may read it: nothing counted while hooks were off.
 * While they are off (quiet mode) its counters are frozen at the switch, the last EAGAIN and
 * byte alike: no age can be read from them, so none is (the hooks come back at the first tick a
 * communicator stops, and the ages count from then). Before, a rank alive after its
 * communicator's destroy, at a healthy job's end, "waited" since the switch on a peer that had
 * just exited: a false peer_dead.
 */
static uint64_t conn_seen_progress(const struct snapshot *s, const struct snap_conn *c)
{
	uint64_t t = conn_progress(c);

	if (s->tcp_quiet)
		return s->now_ns;

	return s->tcp_resumed_ns > t ? s->tcp_resumed_ns : t;
}

/*
 * Since when the owner has waited on the connection whose progress is prog: its first EAGAIN
 * after that progress, where it spins; a waiter that slept first (a pause of its own, every rank
 * at once) waited only since it came back to try. A thread blocked in a call, a connect, or a
 * record without the field (an older dump): since the progress.
 */
static uint64_t conn_wait_start(const struct snap_conn *c, uint64_t prog)
{
	if (c->c.eagain_since_ns > prog && c->c.state != TCP_SYN_SENT &&
	    (c->blocked == SNAP_BLOCK_NONE || c->blocked == SNAP_BLOCK_POLL))
		return c->c.eagain_since_ns;
	return prog;
}

/*
 * Both ends in one process (NCCL's main thread and its own proxy service talk over loopback):
 * waiting there only says the process waits on itself, never who it really waits for.
 */
static bool conn_is_self(const struct snap_conn *c)
{
	return c->peer_pid > 0 && c->peer_pid == c->pid;
}

/*
 * Starved: a thread of the process waited at least this long per second runnable but not
 * running (schedstat). The scheduler, not the process, decides when it tries next.
 */
#define STARVED_NS (NT_NSEC_PER_SEC / 2)
/* Busy: CPU used per second by a process that ran but tried none of its connections */
#define BUSY_NS (NT_NSEC_PER_SEC * 3 / 10)

static bool starved(const struct snap_proc *p)
{
	return p && p->runnable_ns >= STARVED_NS;
}

/* Is the owner p still trying this connection, whose last progress is prog? */
static bool conn_tried_since(const struct snap_proc *p, const struct snap_conn *c,
			     const struct diag_config *cfg, uint64_t now, uint64_t prog)
{
	/*
	 * The peer closed its side (CLOSE_WAIT): a receive returns at once; whatever keeps the
	 * owner from it, the peer is not what it waits for
	 */
	if (c->closed || c->c.state == TCP_CLOSE_WAIT)
		return false;
	if (c->c.last_eagain_ns && now - c->c.last_eagain_ns <= cfg->active_window_ns &&
	    c->c.last_eagain_ns > prog)
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
	/*
	 * A process the scheduler keeps waiting (more runnable processes than CPUs) makes its
	 * next attempt whenever it runs again: it tried after the last progress, and is still
	 * waiting, however long ago it last ran.
	 */
	if (starved(p) && c->c.last_eagain_ns > prog && !c->c.recv_q)
		return true;
	return false;
}

static bool conn_tried(const struct snapshot *s, const struct snap_proc *p,
		       const struct snap_conn *c, const struct diag_config *cfg, uint64_t now)
{
	return conn_tried_since(p, c, cfg, now, conn_seen_progress(s, c));
}

/* Does any data connection of procs[i] show it trying (whatever the threshold)? */
static bool proc_trying(const struct snapshot *s, const struct diag_config *cfg, int i)
{
	int n;
	const int *ci = snapshot_conns_of(s, i, &n);

	for (int k = 0; k < n; k++) {
		const struct snap_conn *c = &s->conns[ci[k]];

		if (snap_conn_is_data(c) && !conn_is_self(c) &&
		    conn_tried(s, &s->procs[i], c, cfg, s->now_ns))
			return true;
	}
	return false;
}

/*
 * The other end of c, in its traced peer: the connection with the tuple reversed (-1 if the
 * peer or its end is not in the snapshot). Needs s->ix; a peer has few connections.
 */
static int peer_end(const struct snapshot *s, const struct snap_conn *c)
{
	int at = c->peer_pid > 0 ? snapshot_proc_at(s, c->peer_pid) : -1, n = s->nconns;
	const int *ci = at >= 0 && s->ix ? snapshot_conns_of(s, at, &n) : NULL;

	if (at < 0)
		return -1;
	for (int k = 0; k < n; k++) {
		int i = ci ? ci[k] : k;
		const struct nt_tuple *t = &s->conns[i].c.t;

		if (s->conns[i].pid == c->peer_pid && t->family == c->c.t.family &&
		    t->sport == c->c.t.dport && t->dport == c->c.t.sport &&
		    !memcmp(t->saddr, c->c.t.daddr, sizeof(t->saddr)) &&
		    !memcmp(t->daddr, c->c.t.saddr, sizeof(t->daddr)))
			return i;
	}
	return -1;
}

/*
 * Did the other end move bytes on this connection within the threshold? Then the connection is
 * not stalled, whatever its owner saw: the peer handed data to the kernel that is on its way (a
 * loopback backlog on an oversubscribed node, a slow link) or it just read what the owner sent.
 * The peer is then not what the owner waits for, and its state a moment later (asleep in its
 * next call, exited after its last send) is no evidence against it.
 */
static bool peer_end_moved(const struct snapshot *s, const struct diag_config *cfg,
			   const struct snap_conn *c, uint64_t prog)
{
	int pe = peer_end(s, c);
	uint64_t t;

	if (pe < 0)
		return false;
	t = conn_seen_progress(s, &s->conns[pe]);
	return t > prog && s->now_ns - t <= cfg->stall_threshold_ns;
}

/* One of NCCL's data connections (its net or IB transport), by the probes' label */
static bool conn_is_nccl_data(const struct snap_conn *c)
{
	return c->nccl_label &&
	       (!strncmp(c->nccl_label, "net", 3) || !strncmp(c->nccl_label, "ib", 2));
}

/*
 * Has pid launched a collective within the threshold (its communicators' counts moved)? Then
 * it is not stuck in NCCL, and a silent data connection of NCCL's is one its proxy polls while
 * the collectives go over others (an idle channel): no wait. 1 yes, 0 no.
 */
static int launching(const struct snapshot *s, const struct diag_config *cfg, int pid)
{
	for (int i = 0; i < s->ncomms; i++) {
		const struct snap_comm *c = &s->comms[i];

		if (c->pid == pid && c->seq_ok && !c->destroyed && snap_comm_total(c) &&
		    s->now_ns - c->changed_ns <= cfg->stall_threshold_ns)
			return 1;
	}
	return 0;
}

int diagnose_waiting_conn(const struct snapshot *s, const struct diag_config *cfg, int pid)
{
	int at = snapshot_proc_at(s, pid), n = s->nconns, moving = -1;
	const struct snap_proc *p = at >= 0 ? &s->procs[at] : NULL;
	const int *ci = NULL;
	uint64_t best_t = UINT64_MAX;
	int best = -1;

	if (!p || p->exited || p->state == 'T' || p->state == 't' || p->state == 'Z')
		return -1;
	if (s->ix)
		ci = snapshot_conns_of(s, at, &n);
	/*
	 * Per connection, not per process: other connections of the process may well move
	 * (PyTorch's TCPStore client, NCCL RAS keep-alives) while it is stuck on this one.
	 */
	for (int k = 0; k < n; k++) {
		int i = ci ? ci[k] : k;
		const struct snap_conn *c = &s->conns[i];
		uint64_t prog;

		/* hundreds of thousands at scale: the cheap tests first, progress computed once */
		if (c->pid != pid || !snap_conn_is_data(c) || conn_is_self(c))
			continue;
		prog = conn_seen_progress(s, c);
		if (s->now_ns - conn_wait_start(c, prog) <= conn_threshold(cfg, c) ||
		    prog >= best_t || !conn_tried_since(p, c, cfg, s->now_ns, prog) ||
		    peer_end_moved(s, cfg, c, prog))
			continue;
		if (conn_is_nccl_data(c) &&
		    (moving < 0 ? (moving = launching(s, cfg, pid)) : moving))
			continue;
		best_t = prog;
		best = i;
	}
	return best;
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

/*
 * What says that the process at the end of a chain does not take part: it exited (unless with
 * the job's teardown) or stopped; it sleeps outside NCCL and outside any socket wait; it ran
 * (its CPU time grew) without trying any connection. Nothing else makes a culprit: a process
 * inside NCCL (its phase, or its main thread's stack where no probe tells) waits or works
 * there, as does one whose main thread waits on its GPU (its kernels, NCCL's among them, may
 * wait on peers), a starved one is not run by the scheduler, one just between two socket
 * calls is about to wait. A wrong culprit is worse than none.
 */
static bool culprit_evidence(const struct snapshot *s, const struct diag_config *cfg, int i)
{
	const struct snap_proc *p = &s->procs[i];

	if (p->exited)
		return !torn_down(s, p);
	if (p->state == 'Z' || p->state == 'T' || p->state == 't')
		return true;
	if (p->nccl && (p->nccl_phase[0] || p->nccl_setup != SNAP_SETUP_NONE))
		return false;
	/* attached to, its main thread not seen yet (it did not stop in time): no evidence */
	if (snap_proc_unseen(p))
		return false;
	if (stack_in_nccl(s, p) || stack_on_gpu(s, p))
		return false;
	if (proc_trying(s, cfg, i))
		return false;
	/*
	 * a thread of it runnable and not run, its main thread asleep or not: its next try on a
	 * connection waits for a CPU (a proxy thread spinning among more spinners than CPUs, its
	 * tries unseen for a second)
	 */
	if (starved(p))
		return false;
	if (p->state == 'S' || p->state == 'D' || p->state == 'I')
		return true;
	return p->state == 'R' && p->cpu_busy_ns >= BUSY_NS;
}

/*
 * When procs[i] last moved bytes on a data connection of its own (sent, or received), 0 if
 * never. A process that did so within a waiter's threshold is not what holds the waiter: it is
 * the front of a wave of progress (a ring going again, where each rank is fed by the one before
 * it a moment later) or it works elsewhere. Blaming it for the waiter's whole silence would name
 * a second culprit for one stop.
 */
static uint64_t proc_last_moved(const struct snapshot *s, int i)
{
	int n;
	const int *ci = snapshot_conns_of(s, i, &n);
	const struct snap_proc *p = &s->procs[i];
	bool stopped = p->state == 'T' || p->state == 't';
	uint64_t t = 0;

	for (int k = 0; k < n; k++) {
		const struct snap_conn *c = &s->conns[ci[k]];

		if (!snap_conn_is_data(c) || conn_is_self(c))
			continue;
		if (c->c.last_send_ns > t)
			t = c->c.last_send_ns;
		/*
		 * A stopped process reads nothing: what waits in its receive queue came after its
		 * last read, and the last receive tcp_info dates (an attach's sockets, refreshed
		 * each tick) is the kernel's, not a move of its own. NCCL RAS's keep-alives go on
		 * arriving at a stopped rank every second (8 ranks of NVIDIA's 2.28.3 .deb,
		 * attach --once: its peers' keep-alives 0.4 s old in its queue made it "moving",
		 * and no finding came)
		 */
		if (c->c.last_recv_ns > t && !(stopped && c->c.recv_q))
			t = c->c.last_recv_ns;
	}
	return t;
}

/* The state of a wait search: each process's waited connection, and where its chain ends */
struct chains {
	int *wait;	     /* per process: the connection it waits on, -1 if none */
	struct culprit *cul; /* per waiting process: its chain's end */
	int *memo, *cyc;     /* wait_chain_end()'s */
	signed char *evid;   /* per process: culprit_evidence(), -1 until asked */
};

/* One finding per culprit: every process whose chain of waits ends there is a waiter. */
static void chain_findings(const struct snapshot *s, const struct diag_config *cfg,
			   const struct chains *ch, struct finding *out, int *np, int max)
{
	int n = *np;

	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_conn *wc;
		const struct snap_proc *cp;
		struct culprit *cu = &ch->cul[i];
		struct finding *f;
		int fi, at;

		if (ch->wait[i] < 0)
			continue;
		wc = &s->conns[ch->wait[i]];
		at = cu->pid > 0 ? snapshot_proc_at(s, cu->pid) : -1;
		cp = at >= 0 ? &s->procs[at] : NULL;
		/* no evidence against the chain's end: no culprit (the waiters are still told) */
		if (cp && !cu->cycle && ch->evid[at] < 0)
			ch->evid[at] = culprit_evidence(s, cfg, at);
		if (cp && !cu->cycle && !ch->evid[at])
			continue;
		if (cp && !cu->cycle && !cp->exited &&
		    s->now_ns - proc_last_moved(s, at) < conn_threshold(cfg, wc))
			continue;
		fi = find_or_add(s, out, &n, max, FINDING_STALL, cu->pid,
				 cu->pid > 0 ? 0 : cu->conn);
		if (fi < 0)
			break;
		f = &out[fi];
		if (cp) {
			f->rank = cp->rank;
			if (cp->exited || cp->state == 'Z')
				f->kind = FINDING_PEER_DEAD;
			else if (cp->state == 'T' || cp->state == 't')
				f->kind = FINDING_PEER_STOPPED;
		} else if (wc->c.state == TCP_SYN_SENT) {
			f->kind = FINDING_CONN_ERROR;
		}
		push_waiter(s, f, s->procs[i].pid);
		if (cu->cycle)
			f->cycle = true;
		/* direct waiters: their connection's peer is the culprit (or goes to its address) */
		if (wc->peer_pid == cu->pid || (cu->pid == 0 && ch->wait[i] == cu->conn) ||
		    cu->cycle) {
			uint64_t prog = conn_seen_progress(s, wc);

			/* the longest waiter's last progress */
			if (!f->since_ns || prog < f->since_ns)
				f->since_ns = prog;
			if (!f->peer_pid || f->conn < 0 ||
			    prog < conn_seen_progress(s, &s->conns[f->conn])) {
				f->peer_pid = s->procs[i].pid;
				f->peer_rank = s->procs[i].rank;
				f->conn = ch->wait[i];
			}
		}
	}
	*np = n;
}

/* An address nobody answers, where NCCL setup connects to it: the blocked rank is the subject */
static void describe_address(const struct snapshot *s, struct finding *f, char *cn, size_t len)
{
	const struct snap_proc *w = snapshot_proc(s, f->peer_pid);
	const struct snap_conn *c = &s->conns[f->conn];
	struct snap_log_remote rr;
	char ep[64];

	fmt_endpoint(&c->c.t, 0, ep, sizeof(ep));
	snprintf(cn, len, "%s", ep);
	snprintf(f->phase, sizeof(f->phase), "%s",
		 f->kind == FINDING_CONN_ERROR ? "connect unanswered" : "untraced peer silent");
	/* another host's rank, where the waiter's NCCL log names it: who, never why */
	if (f->kind != FINDING_CONN_ERROR && snap_log_remote_rank(s, c, &rr)) {
		/* how the log and the socket name it: [receive], [send], or both on one rank */
		static const char *const how[3][3] = {{"[receive]", "is from", "accepted"},
						      {"[send]", "is to", "connected"},
						      {"[send] and [receive]", "are with", "has"}};
		const char *const *h = how[rr.side == SNAP_LOG_RECV   ? 0
					   : rr.side == SNAP_LOG_SEND ? 1
								      : 2];
		char wn[48], chs[48], of[40] = "";

		if (!w || rr.comm->nranks != w->world_size)
			snprintf(of, sizeof(of), " of comm %016llx",
				 (unsigned long long)rr.comm->hash);
		snprintf(cn, len, "rank %d%s at %s", rr.rank, of, ep);
		f->remote_named = true;
		f->remote_rank = rr.rank;
		snap_proc_name(w, f->peer_pid, wn, sizeof(wn));
		snap_log_channels(rr.channels, chs, sizeof(chs));
		add_evidence(f,
			     "NCCL log of %s: its NET %s on %s %s rank %d alone (Channel lines), "
			     "and this socket is one it %s; no tracer here sees rank %d",
			     wn, h[0], chs, h[1], rr.rank, h[2], rr.rank);
	}
	if (f->kind == FINDING_CONN_ERROR && w && w->nccl_setup != SNAP_SETUP_NONE) {
		f->kind = w->nccl_setup == SNAP_SETUP_INIT ? FINDING_INIT_BLOCKED
							   : FINDING_RING_SETUP_BLOCKED;
		f->rank = w->rank;
		f->peer_rank = -1;
		snprintf(f->phase, sizeof(f->phase), "%s (%s), connecting",
			 setup_name(w->nccl_setup), w->nccl_phase[0] ? w->nccl_phase : "?");
	}
}

/* Starved processes among the waiters: the scheduler, not a peer, keeps them back. */
static void starvation_evidence(const struct snapshot *s, struct finding *f)
{
	int nst = 0, worst = -1;
	uint64_t worst_ns = 0;

	for (int k = 0; k < f->nwaiters; k++) {
		const struct snap_proc *w = snapshot_proc(s, f->waiters[k].pid);

		if (!starved(w))
			continue;
		nst++;
		if (w->runnable_ns > worst_ns) {
			worst_ns = w->runnable_ns;
			worst = k;
		}
	}
	if (nst) {
		char wn[48];

		snap_proc_name(snapshot_proc(s, f->waiters[worst].pid), f->waiters[worst].pid, wn,
			       sizeof(wn));
		add_evidence(
			f,
			"%d waiter%s starved of CPU: %s waited %.2fs of the last second "
			"runnable (schedstat): the node's CPUs are oversubscribed; not a cause "
			"of the wait, but it slows its detection",
			nst, nst > 1 ? "s" : "", wn, (double)worst_ns / NT_NSEC_PER_SEC);
	}
}

/* The summary and evidence of a chain's finding: the culprit, or the address nobody answers. */
static void describe_chain(const struct snapshot *s, const struct chains *ch, struct finding *f)
{
	const struct snap_proc *cp = f->pid > 0 ? snapshot_proc(s, f->pid) : NULL;
	char cn[128], pn[48], ws[160] = "";
	double age;
	int shown = 0;

	if (f->since_ns == 0)
		f->since_ns = s->now_ns;
	age = (double)(s->now_ns - f->since_ns) / NT_NSEC_PER_SEC;
	waiter_list(s, f, ws, sizeof(ws));
	if (cp) {
		snap_proc_name(cp, f->pid, cn, sizeof(cn));
		describe_culprit(cp, f);
		if (f->cycle)
			snprintf(f->phase, sizeof(f->phase), "in a wait cycle");
	} else {
		describe_address(s, f, cn, sizeof(cn));
	}
	snap_proc_name(snapshot_proc(s, f->peer_pid), f->peer_pid, pn, sizeof(pn));
	if (cp && f->cycle)
		snprintf(f->summary, sizeof(f->summary),
			 "wait cycle: %s each wait on the next, none is outside a socket wait "
			 "(%.1fs without progress); the cause is the order of operations or the "
			 "network, not a stopped process",
			 ws, age);
	else if (cp && f->nwaiters)
		snprintf(f->summary, sizeof(f->summary),
			 "%s is %s; %s wait%s on it (longest: %s, %.1fs without progress)", cn,
			 f->phase, ws, f->nwaiters > 1 ? "" : "s", pn, age);
	else if (f->kind == FINDING_INIT_BLOCKED || f->kind == FINDING_RING_SETUP_BLOCKED)
		snprintf(
			f->summary, sizeof(f->summary),
			"%s is blocked in NCCL %s for %.1fs: its connect to %s is not answered (%u "
			"SYN retransmits); NCCL never reports this",
			pn, f->phase, age, cn, s->conns[f->conn].c.syn_retrans);
	else
		snprintf(f->summary, sizeof(f->summary), "%s waits on %s (%s) for %.1fs", pn, cn,
			 f->phase, age);
	if (cp)
		state_evidence(cp, f);
	/* the direct waiters' connections, a few */
	for (int k = 0; k < s->nprocs && shown < 4; k++) {
		int ci = ch->wait[k];

		if (ci < 0 || !((f->pid > 0 && s->conns[ci].peer_pid == f->pid) ||
				(f->pid == 0 && same_remote(s, ci, f->conn))))
			continue;
		waiter_evidence(s, f, ci);
		shown++;
	}
	starvation_evidence(s, f);
}

void wait_findings(const struct snapshot *s, const struct diag_config *cfg, struct finding *out,
		   int *n, int max)
{
	int np = s->nprocs > 0 ? s->nprocs : 1, first = *n;
	struct chains ch = {
		.wait = malloc(np * sizeof(int)),
		.cul = malloc(np * sizeof(struct culprit)),
		.memo = calloc(np, sizeof(int)),
		.cyc = calloc(np, sizeof(int)),
		.evid = malloc(np),
	};

	if (ch.wait && ch.cul && ch.memo && ch.cyc && ch.evid) {
		memset(ch.evid, -1, np);
		for (int i = 0; i < s->nprocs; i++)
			ch.wait[i] = diagnose_waiting_conn(s, cfg, s->procs[i].pid);
		for (int i = 0; i < s->nprocs; i++)
			if (ch.wait[i] >= 0)
				ch.cul[i] = wait_chain_end(s, ch.wait, ch.memo, ch.cyc, i);
		chain_findings(s, cfg, &ch, out, n, max);
		for (int i = first; i < *n; i++)
			describe_chain(s, &ch, &out[i]);
	}
	free(ch.wait);
	free(ch.cul);
	free(ch.memo);
	free(ch.cyc);
	free(ch.evid);
}
