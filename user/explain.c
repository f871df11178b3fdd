// SPDX-License-Identifier: MIT
/*
 * Why a finding's wait lasts, from NCCL's point of view. Every rule rests on what NCCL 2.28
 * does (reference/nccl-internals.md §2, §5, §7): connect retries and their window, the lazy ring
 * connect of the first collective, the interface choice, the names NCCL never reads.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "explain.h"
#include "fmt.h"
#include "ibwarn.h"
#include "ncclparams.h"

#define TCP_SYN_SENT 2

/* The settings that govern each kind of wait. */
static const char *const init_set[] = {"NCCL_SOCKET_IFNAME",
				       "NCCL_SOCKET_FAMILY",
				       "NCCL_COMM_ID",
				       "NCCL_SOCKET_RETRY_CNT",
				       "NCCL_SOCKET_RETRY_SLEEP_MSEC",
				       "NCCL_OOB_NET_ENABLE",
				       "NCCL_HOSTID",
				       NULL};
static const char *const setup_set[] = {"NCCL_SOCKET_IFNAME",
					"NCCL_SOCKET_RETRY_CNT",
					"NCCL_SOCKET_RETRY_SLEEP_MSEC",
					"NCCL_RUNTIME_CONNECT",
					"NCCL_NET",
					"NCCL_IB_DISABLE",
					"NCCL_P2P_DISABLE",
					"NCCL_P2P_LEVEL",
					"NCCL_SHM_DISABLE",
					"NCCL_NET_GDR_LEVEL",
					"NCCL_IB_TIMEOUT",
					"NCCL_IB_RETRY_CNT",
					NULL};
static const char *const ib_set[] = {"NCCL_IB_TIMEOUT",
				     "NCCL_IB_RETRY_CNT",
				     "NCCL_IB_GID_INDEX",
				     "NCCL_IB_ROCE_VERSION_NUM",
				     "NCCL_IB_HCA",
				     "NCCL_IB_SL",
				     "NCCL_IB_TC",
				     "NCCL_IB_ADAPTIVE_ROUTING",
				     NULL};
static const char *const coll_set[] = {"NCCL_NET",
				       "NCCL_IB_DISABLE",
				       "NCCL_P2P_DISABLE",
				       "NCCL_SHM_DISABLE",
				       "NCCL_IB_TIMEOUT",
				       "NCCL_IB_RETRY_CNT",
				       NULL};

/* Ordered hypotheses: kept sorted by score as they are added. */
struct hyps {
	int score[DIAG_MAX_HYP];
	struct finding *f;
};

__attribute__((format(printf, 3, 4))) static void hyp(struct hyps *h, int score, const char *fmt_,
						      ...)
{
	struct finding *f = h->f;
	char text[sizeof(f->hypotheses[0])];
	va_list ap;
	int at;

	va_start(ap, fmt_);
	vsnprintf(text, sizeof(text), fmt_, ap);
	va_end(ap);
	for (at = 0; at < f->nhyp && h->score[at] >= score; at++)
		;
	if (at >= DIAG_MAX_HYP)
		return;
	if (f->nhyp < DIAG_MAX_HYP)
		f->nhyp++;
	for (int i = f->nhyp - 1; i > at; i--) {
		memcpy(f->hypotheses[i], f->hypotheses[i - 1], sizeof(f->hypotheses[0]));
		h->score[i] = h->score[i - 1];
	}
	memcpy(f->hypotheses[at], text, sizeof(text));
	h->score[at] = score;
}

static const struct snap_setting *proc_setting(const struct snap_proc *p, const char *name)
{
	for (int i = 0; p && i < p->nset; i++)
		if (!strcmp(p->set[i].name, name))
			return &p->set[i];
	return NULL;
}

/* A process's value of name and where it comes from; NULL value: unset, no known default. */
static const char *value_of(const struct snap_proc *p, const char *name, const char **source)
{
	const struct snap_setting *st = proc_setting(p, name);
	const struct nccl_param *par = nccl_param_find(name);

	if (st && st->value) {
		*source = st->read ? "read" : "environ";
		return st->value;
	}
	if (par && par->def) {
		*source = "default";
		return par->def;
	}
	*source = "unset";
	return NULL;
}

static long num_of(const struct snap_proc *p, const char *name, long def)
{
	const char *src, *v = value_of(p, name, &src);

	return v ? strtol(v, NULL, 0) : def;
}

/* The processes a finding is about: culprit first, then those that wait on it. */
static int involved(const struct snapshot *s, const struct finding *f, const struct snap_proc **out,
		    int max)
{
	int n = 0;

	if (f->pid > 0 && snapshot_proc(s, f->pid))
		out[n++] = snapshot_proc(s, f->pid);
	for (int k = 0; k < f->nwaiters && n < max; k++)
		if (snapshot_proc(s, f->waiters[k]) && f->waiters[k] != f->pid)
			out[n++] = snapshot_proc(s, f->waiters[k]);
	return n;
}

static bool same_value(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Do the job's ranks disagree on name? Then ranks says how (ranked processes only). */
static bool ranks_differ(const struct snapshot *s, const char *name, char *ranks, size_t len)
{
	const char *first = NULL, *src;
	bool any = false, differ = false;
	size_t off = 0;

	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_proc *p = &s->procs[i];
		const char *v;

		if (p->rank < 0 || !p->nset)
			continue;
		v = value_of(p, name, &src);
		if (any && !same_value(v, first))
			differ = true;
		if (!any)
			first = v;
		any = true;
	}
	if (!differ)
		return false;
	ranks[0] = '\0';
	for (int i = 0; i < s->nprocs && off + 24 < len; i++) {
		const struct snap_proc *p = &s->procs[i];
		const char *v;

		if (p->rank < 0 || !p->nset)
			continue;
		v = value_of(p, name, &src);
		off += snprintf(ranks + off, len - off, "%srank %d %s", off ? ", " : "", p->rank,
				v ? v : "unset");
	}
	return true;
}

/* p's setting name, found at position j first: ranks read their settings in the same order */
static const struct snap_setting *setting_at(const struct snap_proc *p, int j, const char *name)
{
	if (j < p->nset && !strcmp(p->set[j].name, name))
		return &p->set[j];
	return proc_setting(p, name);
}

static bool same_setting(const struct snap_setting *a, const struct snap_setting *b)
{
	return a && b && same_value(a->value, b->value);
}

static void add_name(const char **v, int *n, int max, const char *name)
{
	for (int i = 0; i < *n; i++)
		if (!strcmp(v[i], name))
			return;
	if (*n < max)
		v[(*n)++] = name;
}

/*
 * Names whose entries are not the same on every rank, each once: every rank is compared with
 * the first, by position, so the usual case (same settings, same order) costs one pass.
 * ranks_differ() decides, with NCCL's defaults for the ones a rank lacks.
 */
static int differing_names(const struct snapshot *s, const char **out, int max)
{
	const struct snap_proc *ref = NULL;
	int n = 0;

	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_proc *p = &s->procs[i];

		if (p->rank < 0 || !p->nset)
			continue;
		if (!ref) {
			ref = p;
			continue;
		}
		for (int j = 0; j < p->nset; j++)
			if (!same_setting(setting_at(ref, j, p->set[j].name), &p->set[j]))
				add_name(out, &n, max, p->set[j].name);
		for (int j = 0; j < ref->nset; j++)
			if (!setting_at(p, j, ref->set[j].name))
				add_name(out, &n, max, ref->set[j].name);
	}
	return n;
}

static struct finding_setting *add_setting(const struct snapshot *s, struct finding *f,
					   const struct snap_proc *p, const char *name)
{
	struct finding_setting *fs;
	const char *src, *v;

	for (int i = 0; i < f->nsettings; i++)
		if (!strcmp(f->settings[i].name, name))
			return &f->settings[i];
	if (f->nsettings >= DIAG_MAX_SETTINGS)
		return NULL;
	fs = &f->settings[f->nsettings++];
	memset(fs, 0, sizeof(*fs));
	snprintf(fs->name, sizeof(fs->name), "%s", name);
	v = value_of(p, name, &src);
	snprintf(fs->value, sizeof(fs->value), "%s", v ? v : "");
	snprintf(fs->source, sizeof(fs->source), "%s", src);
	ranks_differ(s, name, fs->ranks, sizeof(fs->ranks));
	return fs;
}

/* Evidence from the sockets: a connect nobody answers, NCCL's retries. */
static void network_rules(const struct snapshot *s, struct finding *f, struct hyps *h,
			  const struct snap_proc *const *inv, int ninv)
{
	const struct snap_proc *retrier = NULL;
	long cnt, sleep_ms;

	for (int i = 0; i < s->nconns; i++) {
		const struct snap_conn *c = &s->conns[i];
		bool mine = false;
		char ep[64];

		for (int k = 0; k < ninv; k++)
			mine |= inv[k]->pid == c->pid;
		if (!mine || c->closed || c->c.state != TCP_SYN_SENT || !c->c.syn_retrans)
			continue;
		cnt = num_of(snapshot_proc(s, c->pid), "NCCL_SOCKET_RETRY_CNT", 34);
		hyp(h, 90,
		    "packets to %s are dropped (%u SYN retransmits, no answer): a firewall DROP "
		    "rule, a wrong route or interface. Each of NCCL's %ld+1 connect attempts "
		    "(NCCL_SOCKET_RETRY_CNT) waits for the kernel's SYN timeout (~127 s), so this "
		    "looks like a hang for over an hour",
		    fmt_endpoint(&c->c.t, 0, ep, sizeof(ep)), c->c.syn_retrans, cnt);
		break;
	}
	for (int k = 0; k < ninv; k++)
		if (inv[k]->nccl_retries &&
		    (!retrier || inv[k]->nccl_retries > retrier->nccl_retries))
			retrier = inv[k];
	if (retrier) {
		char pn[48];

		cnt = num_of(retrier, "NCCL_SOCKET_RETRY_CNT", 34);
		sleep_ms = num_of(retrier, "NCCL_SOCKET_RETRY_SLEEP_MSEC", 100);
		snap_proc_name(retrier, retrier->pid, pn, sizeof(pn));
		hyp(h, 85,
		    "%s had %llu connects fail (refused or unreachable: nobody listens "
		    "there yet, or the address is wrong); NCCL gives up after %ld retries, %.1f s "
		    "of sleeps (NCCL_SOCKET_RETRY_CNT=%ld, NCCL_SOCKET_RETRY_SLEEP_MSEC=%ld)",
		    pn, (unsigned long long)retrier->nccl_retries, cnt,
		    nccl_retry_window_s(cnt, sleep_ms), cnt, sleep_ms);
		add_setting(s, f, retrier, "NCCL_SOCKET_RETRY_CNT");
		add_setting(s, f, retrier, "NCCL_SOCKET_RETRY_SLEEP_MSEC");
	}
}

/* What a completion status means, and how long the transport tried, from the settings. */
/* An asynchronous event from the HCA (ibv_get_async_event) */
static void ib_async_rules(struct hyps *h, const struct snap_proc *p)
{
	const struct snap_ib *ib = p->ib;
	long to = num_of(p, "NCCL_IB_TIMEOUT", 20), rc = num_of(p, "NCCL_IB_RETRY_CNT", 7);

	switch (ib->async_type) {
	case 1: /* IBV_EVENT_QP_FATAL */
	case 2: /* IBV_EVENT_QP_REQ_ERR */
	case 3: /* IBV_EVENT_QP_ACCESS_ERR */
		hyp(h, 80,
		    "the HCA moved QP 0x%x to the error state by itself (%s): a bad work request "
		    "or memory registration, or a firmware/driver fault; the collectives on it "
		    "fail or hang. dmesg and /sys/class/infiniband/%s/ports/*/hw_counters say "
		    "which",
		    ib->async_qp, ib_event_name(ib->async_type), ib->async_dev);
		break;
	case 10: /* IBV_EVENT_PORT_ERR */
		hyp(h, 85,
		    "port %d of %s went down: a cable, a switch port or the link partner; every QP "
		    "on it fails after its retries, (%ld+1) x 4.096 us x 2^%ld = %.1f s "
		    "(NCCL_IB_RETRY_CNT=%ld, NCCL_IB_TIMEOUT=%ld)",
		    ib->async_port, ib->async_dev, rc, to, ib_retry_window_s((int)to, (int)rc), rc,
		    to);
		break;
	case 8: /* IBV_EVENT_DEVICE_FATAL */
		hyp(h, 90,
		    "%s failed as a whole (catastrophic error): a firmware or hardware fault; the "
		    "device must be reset, and every process on it restarted",
		    ib->async_dev);
		break;
	default:
		hyp(h, 50, "the HCA %s reported %s: see dmesg and the port's counters",
		    ib->async_dev, ib_event_name(ib->async_type));
		break;
	}
}

static void ib_rules(struct hyps *h, const struct snap_proc *p)
{
	const struct snap_ib_error *ib = p->ib_err;
	long to = num_of(p, "NCCL_IB_TIMEOUT", 20), rc = num_of(p, "NCCL_IB_RETRY_CNT", 7);
	double win = ib_retry_window_s((int)to, (int)rc);

	switch (ib->status) {
	case 12: /* IBV_WC_RETRY_EXC_ERR */
		if (ib->colls_before <= 1)
			hyp(h, 85,
			    "no ACK ever came back at the first transfer: the QPs were set up (the "
			    "handshake runs over TCP) but RDMA packets do not reach %s: a wrong "
			    "GID "
			    "index or RoCE version (NCCL_IB_GID_INDEX, NCCL_IB_ROCE_VERSION_NUM), "
			    "routing "
			    "or a VLAN/PFC setting; the transport tried for %.1f s (%ld+1 tries of "
			    "4.096 us x 2^%ld: NCCL_IB_TIMEOUT=%ld, NCCL_IB_RETRY_CNT=%ld)",
			    ib->peer, win, rc, to, to, rc);
		else
			hyp(h, 85,
			    "ACKs stopped in the middle of the run: the peer %s (its process, host "
			    "or "
			    "HCA) or a link on the way went down; the transport tried for %.1f s "
			    "(NCCL_IB_TIMEOUT=%ld, NCCL_IB_RETRY_CNT=%ld) before it gave up",
			    ib->peer, win, to, rc);
		hyp(h, 40,
		    "a raised NCCL_IB_TIMEOUT only waits longer for a peer that is gone; it helps "
		    "only on a congested fabric that drops ACKs now and then");
		break;
	case 13: /* IBV_WC_RNR_RETRY_EXC_ERR */
		hyp(h, 80,
		    "the receiver at %s posted no receive in time and the RNR retries ran out: it "
		    "is stuck, gone, or far behind",
		    ib->peer);
		break;
	case 5: /* IBV_WC_WR_FLUSH_ERR */
		hyp(h, 70,
		    "the queue pair was already in the error state: this completion follows "
		    "another error on the same QP (look for the first one, on this rank or its "
		    "peer)");
		break;
	case 4:	 /* IBV_WC_LOC_PROT_ERR */
	case 8:	 /* IBV_WC_LOC_ACCESS_ERR */
	case 10: /* IBV_WC_REM_ACCESS_ERR */
		hyp(h, 75,
		    "a memory registration or key was refused (%s): GPU Direct RDMA to a buffer "
		    "the NIC cannot reach (nvidia-peermem / dmabuf, NCCL_NET_GDR_LEVEL), or a "
		    "buffer freed while in flight",
		    ib_wc_status_name(ib->status));
		break;
	default:
		hyp(h, 50, "the transport reported %s(%d) for peer %s (vendor_err 0x%x on %s)",
		    ib_wc_status_name(ib->status), ib->status, ib->peer, ib->vendor_err, ib->hca);
		break;
	}
}

static void kind_rules(struct finding *f, struct hyps *h, const struct snap_proc *cul)
{
	char cn[48];
	const char *src, *v;

	if (cul)
		snap_proc_name(cul, cul->pid, cn, sizeof(cn));
	else
		snprintf(cn, sizeof(cn), "rank %d", f->rank);
	switch (f->kind) {
	case FINDING_STALL:
		if (cul && !cul->nccl && !cul->nset)
			hyp(h, 40,
			    "%s is not exchanging data: its own code holds it (a sleep, I/O, a "
			    "lock, "
			    "a wait on something else) while its peers wait on its connections",
			    cn);
		else if (cul && !cul->nccl_phase[0])
			hyp(h, 40,
			    "%s is not inside NCCL: its own code holds it (data loading, I/O, a "
			    "CPU-side wait, a collective on another group) or it is slow to get "
			    "there. NCCL has no collective timeout; PyTorch's watchdog aborts "
			    "after "
			    "init_process_group(timeout=...), 10 min by default",
			    cn);
		break;
	case FINDING_PEER_STOPPED:
		hyp(h, 70,
		    "%s is stopped (SIGSTOP, Ctrl-Z or a debugger): 'kill -CONT %d' resumes it", cn,
		    f->pid);
		break;
	case FINDING_PEER_DEAD:
		if (!cul)
			hyp(h, 70,
			    "no process has RANK=%d: the launcher did not start it, or its node "
			    "failed; the others wait for it in NCCL setup, which has no timeout",
			    f->rank);
		else if (WIFSIGNALED(cul->exit_status) && WTERMSIG(cul->exit_status) == SIGKILL)
			hyp(h, 60,
			    "%s was killed by SIGKILL: the kernel's OOM killer (see dmesg) or the "
			    "launcher; the others wait for it and NCCL will not time out",
			    cn);
		else
			hyp(h, 60, "%s ended (%s): its own output says why; the others wait for it",
			    cn, f->phase);
		break;
	case FINDING_INIT_BLOCKED:
		if (!cul || cul->nccl_setup != SNAP_SETUP_NONE)
			break; /* the rank is in init itself: the network rules speak */
		hyp(h, 50,
		    "%s has not called ncclCommInitRank (init_process_group, or the first "
		    "collective of a lazily created group); NCCL's bootstrap root answers only "
		    "after every rank checked in",
		    cn);
		break;
	case FINDING_RING_SETUP_BLOCKED:
		if (cul && cul->ib_hs.probe && cul->ib_hs.inside)
			hyp(h, 85,
			    "%s's proxy thread is stuck inside one %s call (stage %s): NCCL's IB "
			    "connect and accept are non-blocking state machines, so a call that "
			    "does not "
			    "return blocks on a socket or a verbs call (a QP that cannot reach "
			    "RTR/RTS: "
			    "a wrong GID index or RoCE version, NCCL_IB_GID_INDEX, "
			    "NCCL_IB_ROCE_VERSION_NUM; a hung driver); the peers wait in their "
			    "handshake "
			    "with it, with no timeout",
			    cn,
			    cul->ib_hs.probe == NT_P_IB_CONNECT ? "ncclIbConnect" : "ncclIbAccept",
			    ib_stage_name(cul->ib_hs.stage));
		if (!cul || cul->nccl_setup != SNAP_SETUP_NONE)
			break;
		v = value_of(cul, "NCCL_RUNTIME_CONNECT", &src);
		if (v && strtol(v, NULL, 0) != 0)
			hyp(h, 50,
			    "rings connect at the first collective (NCCL_RUNTIME_CONNECT=%s, %s): "
			    "%s has not reached it, so the others block in ring setup, which has "
			    "no timeout",
			    v, src, cn);
		else
			hyp(h, 50,
			    "%s is not in transport setup; the others block in it, which has "
			    "no timeout",
			    cn);
		break;
	case FINDING_COLLECTIVE_MISMATCH:
		hyp(h, 60,
		    "the ranks launched different collectives (or arguments) at the same point: "
		    "a path taken on some ranks only (a rank-dependent branch, uneven data, an "
		    "early exit). NCCL cannot notice; TORCH_DISTRIBUTED_DEBUG=DETAIL makes "
		    "PyTorch check each collective across ranks");
		break;
	case FINDING_IB_ERROR:
		if (cul && cul->ib_err)
			ib_rules(h, cul);
		else if (cul && cul->ib && cul->ib->nasync)
			ib_async_rules(h, cul);
		break;
	case FINDING_STRAGGLER:
		hyp(h, 60,
		    "%s reaches every collective last: its own step is slower (input pipeline, "
		    "CPU contention or pinning, a slower or throttled GPU); the others idle in "
		    "each collective",
		    cn);
		break;
	default:
		break;
	}
}

void explain_finding(const struct snapshot *s, struct finding *f)
{
	const struct snap_proc *inv[DIAG_MAX_WAITERS + 1], *who = NULL;
	const char *const *set = coll_set;
	struct hyps h = {.f = f};
	int ninv = involved(s, f, inv, DIAG_MAX_WAITERS + 1);
	bool any_nccl = false;
	char ranks[128];

	f->nsettings = 0;
	f->nhyp = 0;
	if (f->kind == FINDING_INIT_BLOCKED || (f->kind == FINDING_PEER_DEAD && f->pid <= 0))
		set = init_set;
	else if (f->kind == FINDING_RING_SETUP_BLOCKED || f->kind == FINDING_CONN_ERROR)
		set = setup_set;
	else if (f->kind == FINDING_IB_ERROR)
		set = ib_set;
	/*
	 * Whose values to show: the culprit's (first in inv) if NCCL or its environment told
	 * any, else the first waiter's; where ranks disagree, the setting says so.
	 */
	for (int k = 0; k < ninv && !who; k++)
		if (inv[k]->nset)
			who = inv[k];
	if (!who && ninv)
		who = inv[0];
	network_rules(s, f, &h, inv, ninv);
	/* NCCL's settings say something only about processes that use NCCL */
	for (int k = 0; k < ninv && !any_nccl; k++)
		any_nccl = inv[k]->nccl || inv[k]->nset;
	for (int i = 0; any_nccl && set[i]; i++)
		add_setting(s, f, who, set[i]);
	/* a setup blocked in an IB handshake: the IB settings govern it too */
	if (any_nccl && set != ib_set && ninv && inv[0]->ib_hs.probe)
		for (int i = 0; i < 4; i++)
			add_setting(s, f, who, ib_set[i]);
	if (ranks_differ(s, "NCCL_SOCKET_IFNAME", ranks, sizeof(ranks))) {
		add_setting(s, f, who, "NCCL_SOCKET_IFNAME");
		hyp(&h, 80,
		    "NCCL_SOCKET_IFNAME differs across ranks (%s): ranks bind and advertise "
		    "addresses on different interfaces, which the others may not reach",
		    ranks);
	}
	/* any other NCCL setting the ranks disagree on */
	{
		const char *cand[32];
		int nc = differing_names(s, cand, 32);

		for (int i = 0; i < nc; i++) {
			struct finding_setting *fs;

			if (!strcmp(cand[i], "NCCL_SOCKET_IFNAME") ||
			    !ranks_differ(s, cand[i], ranks, sizeof(ranks)))
				continue;
			fs = add_setting(s, f, who, cand[i]);
			if (fs)
				hyp(&h, 55, "%s differs across ranks (%s)", cand[i], ranks);
		}
	}
	/* names that look like settings but that NCCL never reads */
	for (int k = 0; k < ninv; k++)
		for (int j = 0; j < inv[k]->nset; j++) {
			const struct nccl_fake *fk = nccl_fake_find(inv[k]->set[j].name);
			struct finding_setting *fs;

			bool told = false;

			if (!fk || !inv[k]->set[j].value)
				continue;
			for (int i = 0; i < f->nsettings; i++)
				told |= !strcmp(f->settings[i].name, fk->name);
			if (told)
				continue;
			fs = add_setting(s, f, inv[k], fk->name);
			if (!fs)
				continue;
			snprintf(fs->source, sizeof(fs->source), "not read");
			hyp(&h, 45, "%s=%s is set, but %s", fk->name, inv[k]->set[j].value,
			    fk->why);
		}
	kind_rules(f, &h, f->pid > 0 ? snapshot_proc(s, f->pid) : NULL);
	/* NCCL's own last words, unless the finding quotes them already */
	for (int i = 0; i < f->nevidence; i++)
		if (!strncmp(f->evidence[i], "NCCL WARN", 9))
			return;
	for (int k = 0; k < ninv && f->nevidence < DIAG_MAX_EVIDENCE; k++)
		if (inv[k]->nccl_warning) {
			char pn[48];

			snap_proc_name(inv[k], inv[k]->pid, pn, sizeof(pn));
			snprintf(f->evidence[f->nevidence++], sizeof(f->evidence[0]),
				 "NCCL WARN on %s: %s", pn, inv[k]->nccl_warning);
		}
}
