// SPDX-License-Identifier: MIT
/*
 * InfiniBand/RoCE: completion errors NCCL reported and the HCA's asynchronous events (ib_error),
 * and IB handshakes blocked inside one call (the silent ring-setup block on IB).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include "diagnose/rules.h"
#include "nccl/ibwarn.h"

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

/* NCCL's completion-error WARN: the transport gave up on a peer. */
static void completion_error(const struct snapshot *s, const struct snap_proc *p,
			     const struct snap_ib_error *ib, const char *pn, struct finding *f)
{
	snprintf(f->phase, sizeof(f->phase), "%s on %s%s",
		 ib->colls_before <= 1 ? "first transfer" : "transfer", ib->hca[0] ? ib->hca : "?",
		 ib->roce ? " (RoCE)" : "");
	snprintf(f->summary, sizeof(f->summary),
		 "%s: InfiniBand completion error %s(%d) from peer %s on %s%s, after %llu "
		 "collective%s: the transport gave up on that peer",
		 pn, ib_wc_status_name(ib->status), ib->status, ib->peer,
		 ib->hca[0] ? ib->hca : "?", ib->roce ? " (RoCE)" : "",
		 (unsigned long long)ib->colls_before, ib->colls_before == 1 ? "" : "s");
	add_evidence(f, "NCCL WARN: %.180s", ib->text);
	ib_peer_rank(s, p, ib->peer, f);
	if (ib->count > 1)
		add_evidence(f, "%d such completion errors on %s", ib->count, pn);
	add_evidence(f, "opcode %d, vendor_err %u (0x%x)", ib->opcode, ib->vendor_err,
		     ib->vendor_err);
}

/* An asynchronous event of the HCA that breaks a QP, a port or the device. */
static void async_summary(const struct snap_ib *v, const char *pn, struct finding *f)
{
	const struct snap_qp *q = ib_event_qp(v);
	const char *dev = v->async_dev[0] ? v->async_dev : "?";
	char qd[160];

	snprintf(f->phase, sizeof(f->phase), "%s on %s", ib_event_name(v->async_type), dev);
	if (q) {
		qp_desc(q, qd, sizeof(qd));
		snprintf(f->summary, sizeof(f->summary),
			 "%s: the HCA %s raised %s on %s: that QP is in error, and the collectives "
			 "on it fail",
			 pn, dev, ib_event_name(v->async_type), qd);
	} else if (v->async_qp) {
		snprintf(f->summary, sizeof(f->summary), "%s: the HCA %s raised %s on QP 0x%x", pn,
			 dev, ib_event_name(v->async_type), v->async_qp);
	} else {
		snprintf(f->summary, sizeof(f->summary), "%s: the HCA %s raised %s on port %d", pn,
			 dev, ib_event_name(v->async_type), v->async_port);
	}
}

/* The async event's evidence, and the rank owning the other end of its QP. */
static void async_evidence(const struct snapshot *s, const struct snap_proc *p, const char *pn,
			   struct finding *f)
{
	const struct snap_ib *v = p->ib;
	const struct snap_qp *q = ib_event_qp(v);

	if (v->async_qp)
		add_evidence(f, "ibv_get_async_event in %s: %s on %s QP 0x%x (%d event%s)", pn,
			     ib_event_name(v->async_type), v->async_dev, v->async_qp, v->nasync,
			     v->nasync == 1 ? "" : "s");
	else
		add_evidence(f, "ibv_get_async_event in %s: %s on %s port %d (%d event%s)", pn,
			     ib_event_name(v->async_type), v->async_dev, v->async_port, v->nasync,
			     v->nasync == 1 ? "" : "s");
	if (!q || !q->dest_qp_num)
		return;
	/* the QP's other end, among the traced ranks' QPs */
	for (int k = 0; k < s->nprocs; k++)
		for (int j = 0; s->procs[k].ib && j < s->procs[k].ib->nqp; j++)
			if (s->procs[k].ib->qp[j].qp_num == q->dest_qp_num && &s->procs[k] != p) {
				char qn[48];

				snap_proc_name(&s->procs[k], s->procs[k].pid, qn, sizeof(qn));
				add_evidence(f, "QP 0x%x's other end, QP 0x%x, is %s's",
					     v->async_qp, q->dest_qp_num, qn);
				f->peer_pid = s->procs[k].pid;
				f->peer_rank = s->procs[k].rank;
			}
}

void ib_findings(const struct snapshot *s, struct finding *out, int *n, int max)
{
	for (int i = 0; i < s->nprocs && *n < max; i++) {
		const struct snap_proc *p = &s->procs[i];
		const struct snap_ib_error *ib = p->ib_err;
		const struct snap_ib *v = p->ib;
		bool async = v && v->nasync && ib_event_is_error(v->async_type);
		struct finding *f;
		char pn[48];

		if (!ib && !async)
			continue;
		/* its death or stall is the consequence: one finding, with the cause */
		for (int k = 0; k < *n; k++)
			if (out[k].pid == p->pid)
				remove_finding(out, n, k--);
		f = proc_finding(out, n, max, FINDING_IB_ERROR, p, ib ? ib->ts_ns : v->async_ns);
		snap_proc_name(p, p->pid, pn, sizeof(pn));
		if (ib)
			completion_error(s, p, ib, pn, f);
		else
			async_summary(v, pn, f);
		if (async)
			async_evidence(s, p, pn, f);
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
void ib_handshake_findings(const struct snapshot *s, const struct diag_config *cfg,
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

				if (w != p && !w->exited && w->ib_hs.probe && !w->ib_hs.inside) {
					push_waiter(s, f, w->pid);
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
