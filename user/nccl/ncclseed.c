// SPDX-License-Identifier: MIT
/*
 * NCCL phases from a stack taken at attach: the probes see a call's entry only, and every
 * call a thread was inside when nccltrace attached would stay unseen until it returns.
 */
#include <string.h>
#include "nccl/nccllib.h"
#include "nccl/ncclstack.h"
#include "nccl/ncclstate_priv.h"

/*
 * The probe whose symbol frame f is in (any version's name), NT_P_NONE if none. ncclX is a
 * weak alias of pncclX at the same address (src/include/core.h), and a lookup that prefers
 * global symbols names pncclX: the probe's name is ncclX
 */
static int frame_probe(const struct stack_frame *f)
{
	const char *sym = !strncmp(f->symbol, "pnccl", 5) ? f->symbol + 1 : f->symbol;

	if (!sym[0])
		return NT_P_NONE;
	for (int id = NT_P_NONE + 1; id < NT_P_MAX; id++) {
		const struct nccl_probe_def *d = nccl_probe(id);

		/* clones (.part.N) are retry counters, no phase */
		if (!d || (d->flags & NP_CLONE))
			continue;
		for (const struct nccl_sym_alt *a = d->alts; a->sym; a++)
			if (!strcmp(a->sym, sym))
				return id;
	}
	return NT_P_NONE;
}

static bool internal_setup(int probe)
{
	return probe == NT_P_RING_CONNECT || probe == NT_P_TREE_CONNECT ||
	       probe == NT_P_P2P_SETUP || probe == NT_P_PROXY_CONNECT;
}

/*
 * p's main thread seen at at_ns (a stack of it, or /proc's word where it was left alone): the
 * attach's view when it comes within NT_ATTACH_RETAKE_NS of the first; true if it is that one
 */
static bool seen_main(struct nproc *p, uint64_t at_ns)
{
	if (!p->attached_ns)
		p->attached_ns = at_ns;
	if (p->stack_at_attach_ns || at_ns - p->attached_ns > NT_ATTACH_RETAKE_NS)
		return false;
	p->stack_at_attach_ns = at_ns;
	return true;
}

void nccl_state__seed_stack(struct nccl_state *s, int pid, int tid, const struct stack_frame *f,
			    int n, uint64_t at_ns)
{
	struct nproc *p = nstate_proc(s, pid);
	struct nthread *t = p ? nstate_thread(p, tid) : NULL;
	int probes[NT_PHASE_DEPTH], np = 0, keep = 0;
	bool gpu_wait = false;

	if (p && !p->attached_ns)
		p->attached_ns = at_ns;
	/* followed by the probes (an entry seen, or phases above its seeded ones): theirs */
	if (!t || t->depth != t->seeded) {
		if (t && tid == pid && n > 0)
			seen_main(p, at_ns);
		return;
	}
	for (int i = n - 1; i >= 0 && np < NT_PHASE_DEPTH; i--) {
		int id = frame_probe(&f[i]);
		const struct nccl_probe_def *d = nccl_probe(id);

		if (id >= NT_P_ROLE_PROXY_SERVICE) {
			t->role = id;
			continue;
		}
		gpu_wait |= nccl_stack_cuda_wait(&f[i]);
		if (!d || !d->phase)
			continue;
		probes[np++] = id;
	}
	/*
	 * at attach (its main thread's first stack taken: the thread stopped in time, at the
	 * attach or at a retake soon after), where its main thread was; waiting on its GPU,
	 * outside NCCL, it had launched work, the NCCL calls behind it returned (a first
	 * collective's setup among them). A later stack (of a process in a finding) does not
	 * change what the attach saw
	 */
	if (tid == pid && n > 0 && seen_main(p, at_ns) && gpu_wait && !np)
		p->gpu_wait_at_attach_ns = at_ns;
	/* the seeded frames the new stack still has keep their start */
	while (keep < np && keep < t->seeded && t->probe[keep] == probes[keep])
		keep++;
	for (int d = keep; d < np; d++) {
		t->probe[d] = probes[d];
		t->since[d] = at_ns;
		t->detail[d][0] = '\0';
	}
	t->depth = t->seeded = np;
	t->seed_ns = at_ns;
}

void nccl_state__seed_refused(struct nccl_state *s, int pid, uint64_t at_ns)
{
	struct nproc *p = nstate_proc(s, pid);

	if (p)
		seen_main(p, at_ns);
}

void nccl_state__seed_done(struct nccl_state *s, int pid)
{
	struct nproc *p = nstate_proc(s, pid);
	bool api_coll = false, setup = false;

	for (int i = 0; p && i < p->nth; i++)
		for (int d = 0; d < p->th[i].seeded && d < NT_PHASE_DEPTH; d++) {
			api_coll |= nt_probe_api_coll(p->th[i].probe[d]);
			setup |= internal_setup(p->th[i].probe[d]);
		}
	/*
	 * Inside a collective call since before the attach: its first after init only if a
	 * transport setup is on a stack of the process too (the lazy connect, which NCCL 2.28
	 * runs in a thread for each communicator of a group of several, ncclAsyncJobMain, while
	 * the caller waits in ncclGroupEnd: group.cc asyncJobLaunch); else a later one, not setup
	 */
	if (api_coll && !setup && p->coll_returns == p->coll_returns_at_init)
		p->coll_returns = p->coll_returns_at_init + 1;
}
