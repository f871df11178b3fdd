// SPDX-License-Identifier: MIT
/*
 * The communicators of the NCCL state: NCCL's own collective counters (comm->seqNumber[]; on
 * 2.18-2.22 comm->sharedRes->collOpCount, ncclshres.c) read from the ranks' memory each tick,
 * as NCCL RAS does, and the ranks of each compared.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include "nccl/ncclstate_priv.h"
#include "util/grow.h"

/* a communicator that moved this recently is progressing: its samples count for stragglers */
#define PROGRESS_WINDOW_NS NT_NSEC_PER_SEC

static bool usable(const struct ncomm *c)
{
	return !c->gone && c->sc.seq_ok;
}

/* Is comm k of process i the first usable one of its communicator, in walk order? */
static bool first_member(const struct nccl_state *s, int i, int k)
{
	uint64_t h = s->p[i].comm[k].sc.hash;

	for (int j = 0; j <= i; j++)
		for (int l = 0; l < (j == i ? k : s->p[j].ncomm); l++)
			if (usable(&s->p[j].comm[l]) && s->p[j].comm[l].sc.hash == h)
				return false;
	return true;
}

/* Straggler evidence: in each communicator that moves, who alone has launched the fewest. */
static void compare_ranks(struct nccl_state *s, uint64_t now)
{
	int total = 0;

	for (int i = 0; i < s->n; i++)
		total += s->p[i].ncomm;
	for (int i = 0; i < s->n; i++)
		for (int k = 0; k < s->p[i].ncomm; k++) {
			struct snap_comm *c = &s->p[i].comm[k].sc, *mem[total > 0 ? total : 1];
			uint64_t lo = UINT64_MAX, hi = 0, moved = 0, tot[total > 0 ? total : 1];
			int nlo = 0, nm = 0;

			/* once per communicator: at its first member in this walk */
			if (s->p[i].comm[k].gone || !c->seq_ok || !first_member(s, i, k))
				continue;
			for (int j = 0; j < s->n; j++)
				for (int l = 0; l < s->p[j].ncomm; l++) {
					struct snap_comm *m = &s->p[j].comm[l].sc;

					if (m->hash != c->hash || !usable(&s->p[j].comm[l]))
						continue;
					tot[nm] = snap_comm_total(m);
					nlo = tot[nm] < lo ? 1 : nlo + (tot[nm] == lo);
					lo = tot[nm] < lo ? tot[nm] : lo;
					hi = tot[nm] > hi ? tot[nm] : hi;
					moved = m->changed_ns > moved ? m->changed_ns : moved;
					mem[nm++] = m;
				}
			if (nm < 2 || now - moved > PROGRESS_WINDOW_NS)
				continue;
			for (int j = 0; j < nm; j++) {
				struct snap_comm *m = mem[j];

				m->differ_bits = m->differ_bits << 1 | (lo != hi);
				m->behind_bits = m->behind_bits << 1 |
						 (lo != hi && tot[j] == lo && nlo == 1);
				m->nsamples += m->nsamples < 64;
				if (!m->behind_bits)
					m->behind_since_ns = 0;
				else if (!m->behind_since_ns)
					m->behind_since_ns = now;
			}
		}
}

struct ncomm *nstate_comm_seen(struct nproc *p, uint64_t addr, int lib, uint64_t hash, int rank,
			       int nranks, bool add)
{
	struct ncomm *c;

	for (int i = 0; i < p->ncomm; i++)
		if (p->comm[i].addr == addr && !p->comm[i].gone) {
			if (!p->comm[i].sc.hash)
				p->comm[i].sc.hash = hash;
			return &p->comm[i];
		}
	if (!add || p->ncomm == MAX_COMMS)
		return NULL;
	c = &p->comm[p->ncomm++];
	memset(c, 0, sizeof(*c));
	c->addr = addr;
	c->lib = lib;
	c->sc.pid = p->pid;
	c->sc.hash = hash;
	c->sc.rank = rank;
	c->sc.nranks = nranks;
	c->sc.last_coll = -1;
	return c;
}

int nccl_state__comm_found(struct nccl_state *s, int pid, int lib, uint64_t addr, uint64_t hash,
			   int rank, int nranks)
{
	struct nproc *p = nstate_proc(s, pid);
	int before = p ? p->ncomm : 0;
	struct ncomm *c = p ? nstate_comm_seen(p, addr, lib, hash, rank, nranks, true) : NULL;

	if (!c)
		return -ENOSPC;
	if (p->ncomm == before)
		return 0;
	c->sc.scanned = true;
	return 1;
}

void nccl_state__sample(struct nccl_state *s, uint64_t now)
{
	for (int i = 0; i < s->n; i++) {
		struct nproc *p = &s->p[i];

		for (int k = 0; k < p->ncomm; k++) {
			struct ncomm *c = &p->comm[k];
			const struct nt_nccl_offsets *o = nstate_offs(s, c->lib);
			int off = o ? o->comm_seq : -1;
			uint64_t seq[NSEQ];
			struct iovec local = {.iov_base = seq, .iov_len = sizeof(seq)};
			struct iovec remote = {.iov_base = (void *)(uintptr_t)(c->addr + off),
					       .iov_len = sizeof(seq)};

			if (c->gone || !o)
				continue;
			/* no seqNumber before 2.23: the collectives launched in all */
			if (off < 0) {
				nstate_sample_collops(p, c, o, now);
				continue;
			}
			/*
			 * NCCL's own counters, as RAS reads them: no probe per collective. A
			 * process that is gone keeps its last counts: where it stopped matters.
			 */
			if (process_vm_readv(p->pid, &local, 1, &remote, 1, 0) !=
			    (ssize_t)sizeof(seq))
				continue;
			if (!c->sc.seq_ok || memcmp(seq, c->sc.seq, sizeof(seq)))
				c->sc.changed_ns = now;
			memcpy(c->sc.seq, seq, sizeof(seq));
			c->sc.seq_ok = true;
			c->sc.seq_src = SNAP_SRC_SEQNUMBER;
		}
	}
	compare_ranks(s, now);
}

int nccl_state__comms(struct nccl_state *s, struct snap_comm **out)
{
	int n = 0;

	for (int i = 0; i < s->n; i++)
		for (int k = 0; k < s->p[i].ncomm; k++) {
			if (grow(&s->snap, &s->snapcap, n, sizeof(*s->snap), 16))
				break;
			s->snap[n++] = s->p[i].comm[k].sc;
		}
	*out = s->snap;
	return n;
}
