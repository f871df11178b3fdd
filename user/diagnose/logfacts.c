// SPDX-License-Identifier: MIT
/*
 * What NCCL's own log (model/snaplog.h) says about a finding: the transport NCCL chose between
 * the culprit and the rank that waits on it, and what in the log decided it; for setup blocking,
 * which ranks never logged "Connected all rings" or Init COMPLETE and which connection was set
 * up on one side only (users count "via NET/Socket" lines by hand today: nccl#634). Only what
 * the log shows: a fact it does not hold is never guessed.
 */
#include <stdio.h>
#include <string.h>
#include "diagnose/rules.h"

/* A connection of a communicator over the logs of every process: who set up which side. */
struct side_tally {
	int from, to;
	const char *transport;
	uint64_t sent, recvd; /* channels with a [send] / [receive] line */
};

/* "rank 1 (pid 12)" for a communicator rank: the process whose log has it, else "rank 1" */
static void comm_rank_name(const struct snapshot *s, const struct snap_log_comm *k, int r,
			   char *buf, size_t len)
{
	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_nccl_log *l = s->procs[i].nccl_log;

		for (int c = 0; l && c < l->ncomm; c++)
			if (snap_log_same_comm(&l->comm[c], k) && l->comm[c].rank == r) {
				snap_proc_name(&s->procs[i], s->procs[i].pid, buf, len);
				return;
			}
	}
	snprintf(buf, len, "rank %d", r);
}

/* The link a finding is about: from the rank that waits the longest to the culprit. */
static bool finding_link(const struct snapshot *s, const struct finding *f, struct snap_log_link *k)
{
	if (f->pid <= 0 || f->peer_pid <= 0)
		return false;
	if (snap_log_link(s, f->peer_pid, f->pid, f->comm_hash, k))
		return true;
	return snap_log_link(s, f->pid, f->peer_pid, f->comm_hash, k);
}

int log_transport_kinds(const struct snapshot *s, const struct finding *f)
{
	struct snap_log_link k;
	int kinds = 0;

	if (!finding_link(s, f, &k))
		return 0;
	for (int i = 0; i < k.npath; i++) {
		const struct snap_log_path *p = k.path[i];

		kinds |= p->p2p ? LOG_T_P2P : p->shm ? LOG_T_SHM : 0;
		if (p->net)
			kinds |= !strncmp(p->transport, "NET/Socket/", 11) ? LOG_T_SOCKET
									   : LOG_T_NET;
		kinds |= p->gdrdma ? LOG_T_GDR : 0;
	}
	if (kinds & (LOG_T_SOCKET | LOG_T_NET))
		for (int i = 0; k.la && i < k.la->ngdr; i++)
			kinds |= LOG_T_GDR;
	return kinds;
}

/* "rank 0 -> rank 1 via NET/Socket/0 on channels 0-1 ([send] on rank 0, [receive] on rank 1)" */
static void path_lines(const struct snapshot *s, struct finding *f, const struct snap_log_link *k)
{
	bool done[SNAP_LOG_LINK_PATHS] = {false};
	int lines = 0;

	for (int i = 0; i < k->npath && lines < 2; i++) {
		const struct snap_log_path *p = k->path[i];
		uint64_t ch = p->channels;
		char from[48], to[48], chs[64], sides[96] = "";
		size_t off = 0;

		if (done[i])
			continue;
		for (int j = i; j < k->npath; j++) {
			const struct snap_log_path *q = k->path[j];
			const struct snap_log_comm *c = k->path_log[j] == k->la ? k->ca : k->cb;
			char who[48];

			if (done[j] || q->from != p->from || q->to != p->to ||
			    strcmp(q->transport, p->transport))
				continue;
			done[j] = true;
			ch |= q->channels;
			comm_rank_name(s, k->ca, c ? c->rank : -1, who, sizeof(who));
			off += (size_t)snprintf(sides + off, sizeof(sides) - off, "%s%s on %s",
						off ? ", " : "",
						q->side == SNAP_LOG_SEND   ? "[send]"
						: q->side == SNAP_LOG_RECV ? "[receive]"
									   : "logged",
						who);
			if (off >= sizeof(sides))
				off = sizeof(sides) - 1;
		}
		snprintf(from, sizeof(from), "rank %d", p->from);
		snprintf(to, sizeof(to), "rank %d", p->to);
		snap_log_channels(ch, chs, sizeof(chs));
		/* NET/Socket never does GPU Direct RDMA: saying so would be noise */
		add_evidence(f, "NCCL log: %s -> %s via %s on %s%s (%s)", from, to, p->transport,
			     chs,
			     p->net && !p->gdrdma && strncmp(p->transport, "NET/Socket/", 11)
				     ? ", no GPU Direct RDMA"
				     : "",
			     sides);
		lines++;
	}
}

/* What the log shows that decided the link's transport: the settings NCCL says it read, ... */
static void decided_line(struct finding *f, const struct snap_log_link *k, int kinds)
{
	static const char *const names[] = {"NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL",
					    "NCCL_SHM_DISABLE", "NCCL_NET_GDR_LEVEL",
					    "NCCL_IB_DISABLE",	"NCCL_SOCKET_IFNAME"};
	const struct snap_nccl_log *l = k->la;
	char set[160] = "", net[96] = "", tr[64];
	size_t o = 0, n = 0;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *v = snap_proc_log_env(k->pa, names[i]);

		if (v)
			o += (size_t)snprintf(set + o, sizeof(set) - o, "%s%s=%s", o ? ", " : "",
					      names[i], v);
		if (o >= sizeof(set))
			o = sizeof(set) - 1;
	}
	if (l->network[0])
		n += (size_t)snprintf(net + n, sizeof(net) - n, "; Using network %s%s", l->network,
				      l->no_ib ? " (NET/IB: no device found)" : "");
	for (int i = 0; i < l->nifs && n < sizeof(net); i++)
		if (((kinds & LOG_T_SOCKET) && !strcmp(l->ifs[i].what, "NET/Socket")) ||
		    ((kinds & LOG_T_NET) && !strcmp(l->ifs[i].what, "NET/IB"))) {
			n += (size_t)snprintf(net + n, sizeof(net) - n, "; %s on %s %s",
					      l->ifs[i].what, l->ifs[i].name, l->ifs[i].addr);
			break;
		}
	if (n >= sizeof(net))
		net[sizeof(net) - 1] = '\0';
	snap_log_link_transports(k, tr, sizeof(tr));
	add_evidence(f, "NCCL log of rank %d: %s, %s%s set by environment%s", k->ca->rank, tr,
		     set[0] ? "with " : "no P2P, SHM or GDR setting", set, net);
}

/* GPU Direct RDMA: the decision lines (graph/paths.cc) behind a NET link */
static void gdr_line(struct finding *f, const struct snap_log_link *k)
{
	const struct snap_nccl_log *l = k->la;

	for (int i = 0; i < l->ngdr; i++) {
		const struct snap_log_gdr *g = &l->gdr[i];

		if (g->distance < 0)
			add_evidence(f, "NCCL log: GPU Direct RDMA %s for HCA %s (its support)",
				     g->enabled ? "enabled" : "disabled", g->hca);
		else
			add_evidence(
				f,
				"NCCL log: GPU Direct RDMA %s for GPU %s / HCA %s (distance %d "
				"%s NCCL_NET_GDR_LEVEL's %d)",
				g->enabled ? "enabled" : "disabled", g->gpu, g->hca, g->distance,
				g->enabled ? "<=" : ">", g->level);
		return;
	}
}

static void add_rank(char *buf, size_t len, size_t *off, int rank)
{
	if (*off < len)
		*off += (size_t)snprintf(buf + *off, len - *off, "%s%d", *off ? "," : "", rank);
}

/* one NET connection's sides as logged: [send] by its sender, [receive] by its receiver */
static void tally(struct side_tally *t, int *nt, int max, const struct snap_log_path *q)
{
	int j;

	for (j = 0; j < *nt; j++)
		if (t[j].from == q->from && t[j].to == q->to &&
		    !strcmp(t[j].transport, q->transport))
			break;
	if (j == *nt) {
		if (*nt == max)
			return;
		t[(*nt)++] = (struct side_tally){q->from, q->to, q->transport, 0, 0};
	}
	if (q->side == SNAP_LOG_SEND)
		t[j].sent |= q->channels;
	else
		t[j].recvd |= q->channels;
}

/*
 * For ring setup: the ranks that set up channels but never logged "Connected all rings", those
 * that logged no channel at all, and the NET connections set up on one side only.
 */
static void ring_lines(const struct snapshot *s, struct finding *f, const struct snap_log_comm *k)
{
	struct side_tally t[16];
	int nt = 0;
	char waiting[64] = "", idle[64] = "", one[200] = "";
	size_t wo = 0, io = 0, oo = 0;

	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_nccl_log *l = s->procs[i].nccl_log;

		for (int c = 0; l && c < l->ncomm; c++) {
			bool any = false;

			if (!snap_log_same_comm(&l->comm[c], k))
				continue;
			for (int p = 0; p < l->npath; p++)
				if (l->path[p].comm == c) {
					any = true;
					if (l->path[p].net)
						tally(t, &nt, 16, &l->path[p]);
				}
			if (!any)
				add_rank(idle, sizeof(idle), &io, l->comm[c].rank);
			else if (!l->comm[c].rings)
				add_rank(waiting, sizeof(waiting), &wo, l->comm[c].rank);
		}
	}
	if (waiting[0] || idle[0])
		add_evidence(f, "NCCL log of comm %016llx: %s%s%s%s%s%s%s",
			     (unsigned long long)(k->id ? k->id : k->hash),
			     waiting[0] ? (strchr(waiting, ',') ? "ranks " : "rank ") : "", waiting,
			     waiting[0] ? " set up channels, no \"Connected all rings\"" : "",
			     waiting[0] && idle[0] ? "; " : "",
			     idle[0] ? (strchr(idle, ',') ? "ranks " : "rank ") : "", idle,
			     idle[0] ? " logged no Channel line" : "");
	for (int j = 0; j < nt && oo < sizeof(one); j++) {
		uint64_t only_send = t[j].sent & ~t[j].recvd, only_recv = t[j].recvd & ~t[j].sent;
		char chs[48];

		if (!only_send && !only_recv)
			continue;
		snap_log_channels(only_send ? only_send : only_recv, chs, sizeof(chs));
		oo += (size_t)snprintf(
			one + oo, sizeof(one) - oo,
			"%s%d -> %d via %s on %s: %s by rank %d, no %s by rank %d", oo ? "; " : "",
			t[j].from, t[j].to, t[j].transport, chs, only_send ? "[send]" : "[receive]",
			only_send ? t[j].from : t[j].to, only_send ? "[receive]" : "[send]",
			only_send ? t[j].to : t[j].from);
	}
	if (one[0])
		add_evidence(f, "NCCL log, set up on one side only: %s", one);
}

/* For init: who logged Init START without COMPLETE, and who logged no START at all */
static void init_lines(const struct snapshot *s, struct finding *f)
{
	const struct snap_proc *cul = f->pid > 0 ? snapshot_proc(s, f->pid) : NULL;
	const struct snap_log_comm *k = NULL;
	char started[96] = "", cn[48];
	size_t o = 0;

	for (int w = 0; w < f->nwaiters; w++) {
		const struct snap_proc *p = snapshot_proc(s, f->waiters[w].pid);
		const struct snap_nccl_log *l = p ? p->nccl_log : NULL;

		if (!l || !l->ncomm || l->comm[l->ncomm - 1].complete)
			continue;
		k = &l->comm[l->ncomm - 1];
		if (o < sizeof(started))
			o += (size_t)snprintf(started + o, sizeof(started) - o, "%s%d",
					      o ? "," : "", k->rank);
	}
	if (!k)
		return;
	if (cul) {
		bool has = false;

		for (int c = 0; cul->nccl_log && c < cul->nccl_log->ncomm; c++)
			has |= snap_log_same_comm(&cul->nccl_log->comm[c], k);
		snap_proc_name(cul, cul->pid, cn, sizeof(cn));
		add_evidence(f,
			     "NCCL log: Init START without Init COMPLETE from rank%s %s (comm "
			     "%016llx of %d ranks); %s logged %s",
			     strchr(started, ',') ? "s" : "", started,
			     (unsigned long long)(k->id ? k->id : k->hash), k->nranks, cn,
			     has ? "its Init START too" : "no Init START of it");
	} else {
		add_evidence(f,
			     "NCCL log: Init START without Init COMPLETE from rank%s %s (comm "
			     "%016llx of %d ranks)",
			     strchr(started, ',') ? "s" : "", started,
			     (unsigned long long)(k->id ? k->id : k->hash), k->nranks);
	}
}

void log_evidence(const struct snapshot *s, struct finding *f)
{
	struct snap_log_link k;
	int kinds;

	if (f->kind == FINDING_INIT_BLOCKED) {
		init_lines(s, f);
		return;
	}
	if (!finding_link(s, f, &k))
		return;
	path_lines(s, f, &k);
	if (f->kind == FINDING_RING_SETUP_BLOCKED)
		ring_lines(s, f, k.ca);
	kinds = log_transport_kinds(s, f);
	if (kinds)
		decided_line(f, &k, kinds);
	if (kinds & LOG_T_GDR)
		gdr_line(f, &k);
}
