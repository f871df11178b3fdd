// SPDX-License-Identifier: MIT
/*
 * The BPF side's phase stacks, read at each tick: they are the state, the records only its
 * history. Each thread's phases are made the stack's (a record lost, or over the budget, would
 * otherwise leave a phase open for ever, or never opened), and the polling runs the kernel
 * counts (the net plugins' connect and accept, which NCCL's proxy calls ~10^5 times a second
 * until the peer is there) become the processes' handshakes: IB, and the socket net's.
 */
#include <stdio.h>
#include <string.h>
#include "util/clock.h"
#include "nccl/ncclstate_priv.h"

/* A run not called for this long has ended, done or not (the thread left it) */
#define POLL_LIVE_NS NT_NSEC_PER_SEC

struct sample {
	struct nccl_state *s;
	uint64_t now;
};

/* How many of st's frames are phases: those kept, up to the first polled one (its own state) */
static int stack_phases(const struct nt_phase_stack *st)
{
	int n = st->depth < NT_PHASE_DEPTH ? (int)st->depth : NT_PHASE_DEPTH;

	for (int d = 0; d < n; d++)
		if (nt_probe_polled(st->f[d].probe))
			return d;
	return n;
}

/* What a frame's kept arguments say of it (the entry record says more: the graph) */
static void frame_detail(const struct nt_phase_frame *f, char *buf, size_t len)
{
	buf[0] = '\0';
	if (f->probe == NT_P_BOOTSTRAP_SEND || f->probe == NT_P_BOOTSTRAP_RECV)
		snprintf(buf, len, "peer %d tag %d", (int)f->args[1], (int)f->args[2]);
}

/* The latest entries of the setups, as the stack holds them: its entries' records may be lost */
static void entered(struct nproc *p, const struct nt_phase_stack *st)
{
	static const int cls_of[NT_SETUP_CLASSES] = {SNAP_SETUP_NONE, SNAP_SETUP_INIT,
						     SNAP_SETUP_TRANSPORT};

	for (int c = 1; c < NT_SETUP_CLASSES; c++) {
		/* a public collective call: a setup only where it is the first after an init */
		int cls = c == 3 ? nstate_setup_class(p, NT_P_API_ALLREDUCE) : cls_of[c];

		if (cls != SNAP_SETUP_NONE && st->entered_ns[c] > p->setup_entered_ns[cls])
			p->setup_entered_ns[cls] = st->entered_ns[c];
	}
}

/*
 * t's phases made the stack's, frame by frame matched by entry time: the same frames keep what
 * their records said of them. A thread seeded from its stack at attach keeps its own account
 * (the BPF side never saw the calls entered before the probes).
 */
static void reconcile(struct nproc *p, struct nthread *t, const struct nt_phase_stack *st)
{
	int n = stack_phases(st), depth = n < NT_PHASE_DEPTH ? n : (int)st->depth;
	bool same = t->depth == depth;

	entered(p, st);
	if (t->seeded)
		return;
	for (int d = 0; same && d < n; d++)
		same = t->probe[d] == st->f[d].probe && t->since[d] == st->f[d].since_ns;
	if (same)
		return;
	for (int d = 0; d < n; d++) {
		const struct nt_phase_frame *f = &st->f[d];

		if (d < t->depth && t->probe[d] == f->probe && t->since[d] == f->since_ns)
			continue;
		t->probe[d] = f->probe;
		t->since[d] = f->since_ns;
		frame_detail(f, t->detail[d], sizeof(t->detail[d]));
	}
	t->depth = depth;
	p->phase_fixes++;
}

/*
 * The IB handshake of thread tid: inside one call (the frame on top is an IB connect/accept a
 * second old, and the thread has started no call since: the latest call's entry is that
 * frame's, within a millisecond; a frame whose return was lost would look old while the thread
 * goes on polling), else polling. The stack is read after the tick took its time: a call
 * entered since is not a second old.
 */
static void ib_handshake(struct nproc *p, int tid, const struct nt_phase_stack *st, uint64_t now)
{
	uint32_t d = st->depth - 1;

	if (p->ib_hs.inside)
		return;
	if (st->depth > 0 && d < NT_PHASE_DEPTH &&
	    (st->f[d].probe == NT_P_IB_CONNECT || st->f[d].probe == NT_P_IB_ACCEPT) &&
	    clock_age_ns(now, st->f[d].since_ns) > NT_NSEC_PER_SEC &&
	    st->poll_last_ns - st->f[d].since_ns < NT_NSEC_PER_SEC / 1000) {
		p->ib_hs = (struct snap_ib_handshake){st->f[d].probe, true, st->f[d].since_ns,
						      st->poll_stage, tid};
		return;
	}
	if ((st->poll_probe == NT_P_IB_CONNECT || st->poll_probe == NT_P_IB_ACCEPT) &&
	    clock_age_ns(now, st->poll_last_ns) <= POLL_LIVE_NS)
		p->ib_hs = (struct snap_ib_handshake){st->poll_probe, false, st->poll_first_ns,
						      st->poll_stage, tid};
}

/* The socket net's connect or accept thread tid polls, unfinished; the longest one is kept */
static void net_poll(struct nproc *p, struct nthread *t, const struct nt_phase_stack *st,
		     uint64_t now)
{
	if ((st->poll_probe != NT_P_NET_CONNECT && st->poll_probe != NT_P_NET_ACCEPT) ||
	    st->poll_done || clock_age_ns(now, st->poll_last_ns) > POLL_LIVE_NS ||
	    (p->net_poll.probe && p->net_poll.since_ns <= st->poll_first_ns))
		return;
	p->net_poll = (struct snap_net_poll){st->poll_probe, st->poll_first_ns, st->poll_calls,
					     t ? t->tid : 0};
	if (t && st->poll_probe == NT_P_NET_CONNECT)
		snprintf(p->net_poll.addr, sizeof(p->net_poll.addr), "%s", t->poll_addr);
}

static int sample_one(void *ctx, int tid, const struct nt_phase_stack *st)
{
	struct sample *sm = ctx;
	struct nproc *p = (struct nproc *)nstate_find(sm->s, (int)st->tgid);
	struct nthread *t;

	if (!p || !st->tgid)
		return 0;
	t = nstate_thread(p, tid);
	if (t)
		reconcile(p, t, st);
	if (p->has_ibv)
		ib_handshake(p, tid, st, sm->now);
	net_poll(p, t, st, sm->now);
	return 0;
}

void nccl_state__sample_stacks(struct nccl_state *s, uint64_t now, nccl_stacks_fn each, void *ctx)
{
	struct sample sm = {s, now};

	for (int i = 0; i < s->n; i++) {
		s->p[i].ib_hs = (struct snap_ib_handshake){.stage = -1};
		s->p[i].net_poll = (struct snap_net_poll){0};
	}
	each(ctx, sample_one, &sm);
}

json_t *nccl_state__poll_event(struct nccl_state *s, const struct nt_ev_poll *e)
{
	struct nproc *p = nstate_proc(s, e->pid);
	struct nthread *t = p ? nstate_thread(p, e->tid) : NULL;
	const struct nccl_probe_def *d = nccl_probe(e->probe);
	char a[64] = "";
	json_t *o;

	if (!p || !d)
		return NULL;
	if (e->addr[0] || e->addr[1])
		nstate_addr_string(e->addr, a, sizeof(a));
	if (t && !e->end && (e->probe == NT_P_NET_CONNECT || e->probe == NT_P_IB_CONNECT))
		snprintf(t->poll_addr, sizeof(t->poll_addr), "%s", a);
	o = json_object();
	json_object_set_new(o, "type", json_string("nccl_poll"));
	json_object_set_new(o, "ts_ns", json_integer((json_int_t)e->h.ts_ns));
	json_object_set_new(o, "pid", json_integer(e->pid));
	json_object_set_new(o, "tid", json_integer(e->tid));
	json_object_set_new(o, "probe", json_string(d->name));
	json_object_set_new(o, "event", json_string(e->end ? "end" : "start"));
	if (a[0])
		json_object_set_new(o, "addr", json_string(a));
	if (e->end) {
		json_object_set_new(o, "calls", json_integer((json_int_t)e->calls));
		json_object_set_new(o, "duration_s",
				    json_real((double)clock_age_ns(e->h.ts_ns, e->first_ns) / 1e9));
		json_object_set_new(o, "done", json_boolean(e->done));
		json_object_set_new(o, "result", json_integer(e->result));
	}
	return o;
}
