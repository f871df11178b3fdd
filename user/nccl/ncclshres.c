// SPDX-License-Identifier: MIT
/*
 * NCCL 2.18-2.22's collective counter, where comm->seqNumber[] does not exist yet:
 * comm->sharedRes->collOpCount, read from the ranks' memory at DWARF offsets. What NCCL does
 * with it (src/enqueue.cc at v2.18.6-1, v2.19.4-1, v2.20.5-1, v2.21.5-1, v2.22.3-1):
 *
 * - each collective put into a kernel plan takes plan->collOpCount++ (addCollToPlan until 2.19,
 *   addCBDCollToPlan/addTunedCollToPlan/addCollnetCollToPlan in 2.20-2.21,
 *   scheduleCollTasksToPlan in 2.22), network work or not; uploadProxyOps adds the plan's to
 *   comm->sharedRes->collOpCount, from hostStreamPlanTask, which ncclLaunchKernelAfter_NoCuda
 *   calls right after the plan's kernel launch inside ncclGroupEnd. So it counts the
 *   collectives launched, all functions together (a group's at once), as seqNumber later does
 *   per function. Collectives of count 0 and single-rank communicators are never planned
 *   (taskAppend); sends and receives go to p2pOpCount.
 * - not so while the communicator is captured in a CUDA graph (comm->persistentRefs != 0) or
 *   under CUDA_LAUNCH_BLOCKING (misc/cudawrap.cc): hostStreamPlanTask then runs as a host
 *   stream callback for the plans with proxy ops only, at each graph launch. A rank whose
 *   plans have no network work counts nothing: the ranks' counts are not comparable.
 * - sharedRes is the communicator's own unless ncclCommSplit shares its parent's
 *   (config.splitShare or NCCL_COMM_SPLIT_SHARE_RESOURCES=1; 0 by default: commAlloc in
 *   init.cc): then parent and children count into one collOpCount (refCount > 1, owner the
 *   parent), which no communicator can be credited with.
 *
 * comm->opCount counts proxy starts (ncclProxyStart: plans, sends and receives included), so it
 * differs across ranks by design; the per-channel work FIFO indices count work elements, per
 * channel. Neither says how many collectives a rank launched.
 */
#include <string.h>
#include <sys/uio.h>
#include "nccl/ncclstate_priv.h"
#include "util/log.h"

const char *nccl_shres_unusable(const struct nccl_shres *r)
{
	if (r->refcount != 1 || r->owner != r->comm)
		return "comm->sharedRes is shared with a split communicator (ncclCommSplit with "
		       "splitShare or NCCL_COMM_SPLIT_SHARE_RESOURCES=1): its collOpCount counts "
		       "both";
	if (r->persistent)
		return "the communicator is captured in a CUDA graph (comm->persistentRefs): NCCL "
		       "then counts only plans with network work, at graph launches";
	if (r->launch_blocking)
		return "CUDA_LAUNCH_BLOCKING is set: NCCL then counts only plans with network work";
	if (r->have_prev && r->collops < r->prev)
		return "comm->sharedRes->collOpCount went backwards (memory reused?)";
	return NULL;
}

/* CUDA_LAUNCH_BLOCKING as NCCL reads it: set, not empty and not "0" */
static bool launch_blocking(const struct nproc *p)
{
	for (int i = 0; i < p->nset; i++)
		if (!strcmp(p->set[i].name, "CUDA_LAUNCH_BLOCKING"))
			return p->set[i].value && p->set[i].value[0] &&
			       strcmp(p->set[i].value, "0");
	return false;
}

void nstate_collops(struct nproc *p, struct ncomm *c, struct nccl_shres *r, uint64_t now)
{
	struct snap_comm *sc = &c->sc;

	/*
	 * Ranks are compared by the communicator's hash: none before it is known. The plugin's
	 * per-function counts are better, where a build has both.
	 */
	if (c->unusable || !r->shres || !sc->hash || sc->seq_src == SNAP_SRC_PROFILER)
		return;
	r->launch_blocking = launch_blocking(p);
	r->prev = sc->total;
	r->have_prev = sc->seq_ok;
	c->unusable = nccl_shres_unusable(r);
	if (c->unusable) {
		/* for good: counts that were merged or skipped once stay apart from the others' */
		sc->seq_ok = false;
		pr_info("pid %d comm %016llx: collective counts not used: %s\n", p->pid,
			(unsigned long long)sc->hash, c->unusable);
		return;
	}
	if (!sc->seq_ok || r->collops != sc->total)
		sc->changed_ns = now;
	sc->total = r->collops;
	sc->total_only = true;
	sc->seq_ok = true;
	sc->seq_src = SNAP_SRC_COLLOPCOUNT;
}

/* One read of n pieces from pid's memory; false unless all of it came */
static bool read_remote(int pid, const struct iovec *local, const struct iovec *remote, int n)
{
	ssize_t want = 0;

	for (int i = 0; i < n; i++)
		want += (ssize_t)local[i].iov_len;
	return process_vm_readv(pid, local, n, remote, n, 0) == want;
}

#define RIOV(base, off, len)                                                                       \
	{                                                                                          \
		.iov_base = (void *)(uintptr_t)((base) + (off)), .iov_len = (len)                  \
	}

void nstate_sample_collops(struct nproc *p, struct ncomm *c, const struct nt_nccl_offsets *o,
			   uint64_t now)
{
	struct nccl_shres r = {.comm = c->addr};
	struct iovec l1[] = {{&r.shres, 8}, {&r.persistent, 4}},
		     r1[] = {RIOV(c->addr, o->comm_shres, 8),
			     RIOV(c->addr, o->comm_persistent < 0 ? 0 : o->comm_persistent, 4)};

	if (o->comm_shres < 0 || o->shres_collops < 0 || o->shres_refcount < 0 ||
	    o->shres_owner < 0 || !read_remote(p->pid, l1, r1, o->comm_persistent < 0 ? 1 : 2))
		return;
	if (r.shres) {
		struct iovec l2[] = {{&r.refcount, 4}, {&r.owner, 8}, {&r.collops, 8}},
			     r2[] = {RIOV(r.shres, o->shres_refcount, 4),
				     RIOV(r.shres, o->shres_owner, 8),
				     RIOV(r.shres, o->shres_collops, 8)};

		if (!read_remote(p->pid, l2, r2, 3))
			return;
	}
	nstate_collops(p, c, &r, now);
}
