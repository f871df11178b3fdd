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
#include "diagnose/explain.h"
#include "diagnose/explain_priv.h"
#include "diagnose/rules.h"
#include "util/fmt.h"
#include "nccl/ibwarn.h"
#include "nccl/ncclparams.h"

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

void hyp(struct hyps *h, int score, const char *fmt_, ...)
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

/*
 * A process's value of name and where it comes from; NULL value: unset, no known default. What
 * NCCL read (its probe) first, then what its own log says it read ("set by environment": nccl.conf
 * values too, which /proc/PID/environ lacks, on builds without probes), then the environment.
 */
static const char *value_of(const struct snap_proc *p, const char *name, const char **source)
{
	const struct snap_setting *st = snap_proc_setting(p, name);
	const struct nccl_param *par = nccl_param_find(name);
	const char *logged = snap_proc_log_env(p, name);

	if (st && st->value && st->read) {
		*source = "read";
		return st->value;
	}
	if (logged) {
		*source = "log";
		return logged;
	}
	if (st && st->value) {
		*source = "environ";
		return st->value;
	}
	if (par && par->def) {
		*source = "default";
		return par->def;
	}
	*source = "unset";
	return NULL;
}

long num_of(const struct snap_proc *p, const char *name, long def)
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
		if (snapshot_proc(s, f->waiters[k].pid) && f->waiters[k].pid != f->pid)
			out[n++] = snapshot_proc(s, f->waiters[k].pid);
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
	return snap_proc_setting(p, name);
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

		/* the cheap test first: of hundreds of thousands, only unanswered connects count */
		if (c->closed || c->c.state != TCP_SYN_SENT || !c->c.syn_retrans)
			continue;
		for (int k = 0; k < ninv && !mine; k++)
			mine = inv[k]->pid == c->pid;
		if (!mine)
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

static void ring_setup_rules(struct hyps *h, const struct snap_proc *cul, const char *cn)
{
	const char *src, *v;

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
		    cn, cul->ib_hs.probe == NT_P_IB_CONNECT ? "ncclIbConnect" : "ncclIbAccept",
		    ib_stage_name(cul->ib_hs.stage));
	if (!cul || cul->nccl_setup != SNAP_SETUP_NONE)
		return;
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
}

static void kind_rules(struct finding *f, struct hyps *h, const struct snap_proc *cul)
{
	char cn[48];

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
		ring_setup_rules(h, cul, cn);
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
			explain_ib_rules(h, cul);
		else if (cul && cul->ib && cul->ib->nasync)
			explain_ib_async_rules(h, cul);
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

/*
 * Settings meant to differ from host to host (or rank to rank): NCCL_HOSTID names a host, and
 * rail-optimised jobs give each local rank its own HCA or interface. Listed, never a cause.
 */
static bool differs_by_design(const char *name)
{
	/*
	 * NCCL_DEBUG_FILE names a file per process (%h, %p), and a tracer per host puts it in its
	 * own directory; CUDA_VISIBLE_DEVICES and LOCAL_RANK pick each local rank's GPU
	 */
	static const char *const names[] = {"NCCL_HOSTID", "NCCL_DEBUG_FILE",
					    "CUDA_VISIBLE_DEVICES", "LOCAL_RANK"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

/*
 * Do two ranks of one host have different values of name? Interface and HCA names are the
 * host's own (eth0 on one, ens1f0 on another): only a difference within a host is a cause.
 */
static bool differs_within_host(const struct snapshot *s, const char *name)
{
	const char *src;

	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_proc *p = &s->procs[i];

		if (p->rank < 0 || !p->nset)
			continue;
		for (int k = i + 1; k < s->nprocs; k++) {
			const struct snap_proc *q = &s->procs[k];

			if (q->rank < 0 || !q->nset ||
			    (p->host != q->host &&
			     (!p->host || !q->host || strcmp(p->host, q->host))))
				continue;
			if (!same_value(value_of(p, name, &src), value_of(q, name, &src)))
				return true;
		}
	}
	return false;
}

/* a difference of name across ranks that can be a cause */
static bool differs_as_cause(const struct snapshot *s, const char *name)
{
	if (differs_by_design(name))
		return false;
	if (!strcmp(name, "NCCL_SOCKET_IFNAME") || !strcmp(name, "NCCL_IB_HCA"))
		return differs_within_host(s, name);
	return true;
}

/*
 * NCCL_SOCKET_IFNAME, then any other NCCL setting, different across ranks. Where the culprit is
 * outside NCCL (its own code holds it) a difference explains nothing of the wait: below that.
 */
static void differ_rules(const struct snapshot *s, struct finding *f, struct hyps *h,
			 const struct snap_proc *who)
{
	const struct snap_proc *cul = f->pid > 0 ? snapshot_proc(s, f->pid) : NULL;
	bool outside = cul && cul->nccl && !cul->nccl_phase[0] &&
		       cul->nccl_setup == SNAP_SETUP_NONE && f->kind != FINDING_CONN_ERROR;
	char ranks[128];

	if (ranks_differ(s, "NCCL_SOCKET_IFNAME", ranks, sizeof(ranks))) {
		add_setting(s, f, who, "NCCL_SOCKET_IFNAME");
		if (differs_as_cause(s, "NCCL_SOCKET_IFNAME"))
			hyp(h, outside ? 35 : 80,
			    "NCCL_SOCKET_IFNAME differs across ranks (%s) on one host: ranks bind "
			    "and advertise addresses on different interfaces, which the others "
			    "may not reach",
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
			if (fs && differs_as_cause(s, cand[i]))
				hyp(h, outside ? 30 : 55, "%s differs across ranks (%s)", cand[i],
				    ranks);
		}
	}
}

/*
 * The settings that decide the transport NCCL's log names for the finding's connection: P2P or
 * not (NCCL_P2P_LEVEL, NCCL_P2P_DISABLE), SHM (NCCL_SHM_DISABLE), Socket or IB (NCCL_NET,
 * NCCL_IB_DISABLE), the interface (NCCL_SOCKET_IFNAME), GPU Direct RDMA (NCCL_NET_GDR_LEVEL).
 * Which one decided is the log's to say (log_evidence quotes its lines): none of them blocks
 * setup (reference/nccl-internals.md §7), so no hypothesis rests on them here.
 */
static void transport_settings(const struct snapshot *s, struct finding *f,
			       const struct snap_proc *who)
{
	int kinds = log_transport_kinds(s, f);

	if (kinds & (LOG_T_SOCKET | LOG_T_NET | LOG_T_SHM)) {
		add_setting(s, f, who, "NCCL_P2P_DISABLE");
		add_setting(s, f, who, "NCCL_P2P_LEVEL");
	}
	if (kinds & LOG_T_P2P)
		add_setting(s, f, who, "NCCL_P2P_LEVEL");
	if (kinds & (LOG_T_SOCKET | LOG_T_NET)) {
		add_setting(s, f, who, "NCCL_SHM_DISABLE");
		add_setting(s, f, who, "NCCL_NET");
		add_setting(s, f, who, "NCCL_IB_DISABLE");
	}
	if (kinds & LOG_T_SOCKET)
		add_setting(s, f, who, "NCCL_SOCKET_IFNAME");
	if (kinds & LOG_T_GDR)
		add_setting(s, f, who, "NCCL_NET_GDR_LEVEL");
}

/* Names that look like settings but that NCCL never reads (NCCL_SOCKET_TIMEOUT...). */
static void unread_rules(const struct snapshot *s, struct finding *f, struct hyps *h,
			 const struct snap_proc *const *inv, int ninv)
{
	/* the culprit and the first waiters: ranks are launched alike, the differences are told */
	for (int k = 0; k < ninv && k < 64; k++)
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
			hyp(h, 45, "%s=%s is set, but %s", fk->name, inv[k]->set[j].value, fk->why);
		}
}

/*
 * p's NCCL WARNs: where its latest failure started (the first of its WARNs, the cause) and
 * where it ended, when they differ
 */
static void warn_evidence(struct finding *f, const struct snap_proc *p)
{
	const char *first = p->nccl_first_warning;
	char pn[48];

	if (!p->nccl_warning || f->nevidence >= DIAG_MAX_EVIDENCE)
		return;
	snap_proc_name(p, p->pid, pn, sizeof(pn));
	if (first && strcmp(first, p->nccl_warning)) {
		snprintf(f->evidence[f->nevidence++], sizeof(f->evidence[0]), "NCCL WARN on %s: %s",
			 pn, first);
		if (f->nevidence < DIAG_MAX_EVIDENCE)
			snprintf(f->evidence[f->nevidence++], sizeof(f->evidence[0]),
				 "NCCL WARN on %s, the last of %d: %s", pn, p->nccl_burst_warnings,
				 p->nccl_warning);
		return;
	}
	snprintf(f->evidence[f->nevidence++], sizeof(f->evidence[0]), "NCCL WARN on %s: %s", pn,
		 p->nccl_warning);
}

void explain_finding(const struct snapshot *s, struct finding *f)
{
	const struct snap_proc *inv[DIAG_MAX_WAITERS + 1], *who = NULL;
	const char *const *set = coll_set;
	struct hyps h = {.f = f};
	int ninv = involved(s, f, inv, DIAG_MAX_WAITERS + 1);
	bool any_nccl = false;

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
		any_nccl = inv[k]->nccl || inv[k]->nset || inv[k]->nccl_log;
	for (int i = 0; any_nccl && set[i]; i++)
		add_setting(s, f, who, set[i]);
	/* a setup blocked in an IB handshake: the IB settings govern it too */
	if (any_nccl && set != ib_set && ninv && inv[0]->ib_hs.probe)
		for (int i = 0; i < 4; i++)
			add_setting(s, f, who, ib_set[i]);
	if (any_nccl)
		transport_settings(s, f, who);
	differ_rules(s, f, &h, who);
	unread_rules(s, f, &h, inv, ninv);
	kind_rules(f, &h, f->pid > 0 ? snapshot_proc(s, f->pid) : NULL);
	explain_gpu_rules(&h, s, f);
	/* NCCL's own last words, unless the finding quotes them already */
	for (int i = 0; i < f->nevidence; i++)
		if (!strncmp(f->evidence[i], "NCCL WARN", 9))
			return;
	for (int k = 0; k < ninv; k++)
		warn_evidence(f, inv[k]);
}
