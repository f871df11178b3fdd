// SPDX-License-Identifier: MIT
/*
 * The tracer's side of nccltrace's NCCL profiler plugin (include/ntprof.h): found in each
 * process's maps, its state copied with process_vm_readv each tick, validated, and fed into the
 * NCCL state; the ranks are compared in ncclprofcmp.c.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "ntprof.h"
#include "util/elfsym.h"
#include "nccl/ncclprof.h"
#include "nccl/ncclprof_priv.h"
#include "nccl/ncclstate_priv.h"
#include "trace/procfs.h"
#include "util/grow.h"
#include "util/log.h"

void nprof_free(struct nprof *pf)
{
	if (!pf)
		return;
	for (int i = 0; i < pf->n; i++)
		for (int k = 0; k < NTPROF_MAX_COMMS; k++)
			free(pf->p[i].comm[k].pend);
	free(pf->p);
	pidix_free(&pf->pids);
	free(pf->g);
	free(pf);
}

static struct nprof *nprof_get(struct nccl_state *s)
{
	if (!s->prof)
		s->prof = calloc(1, sizeof(*s->prof));
	return s->prof;
}

static struct pproc *pproc_get(struct nprof *pf, int pid, bool add)
{
	int i = pidix_find(&pf->pids, pid);

	if (i >= 0)
		return &pf->p[i];
	if (!add || grow(&pf->p, &pf->cap, pf->n, sizeof(*pf->p), 4) || pidix_add(&pf->pids, pid))
		return NULL;
	memset(&pf->p[pf->n], 0, sizeof(pf->p[0]));
	pf->p[pf->n].pid = pid;
	return &pf->p[pf->n++];
}

const struct pproc *nprof_find(const struct nccl_state *s, int pid)
{
	int i = s->prof ? pidix_find(&s->prof->pids, pid) : -1;

	return i >= 0 ? &s->prof->p[i] : NULL;
}

/* ---------------------------------------------------------------- finding the plugin */

int ncclprof_find_in_maps(const char *maps, char *path, size_t len, uint64_t *base)
{
	const char *line = maps;
	size_t bl = strlen(NTPROF_LIB);

	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t ll = end ? (size_t)(end - line) : strlen(line);
		const char *p = memchr(line, '/', ll);
		unsigned long long lo, off;

		if (p && sscanf(line, "%llx-%*x %*s %llx", &lo, &off) == 2 && off == 0) {
			size_t pl = ll - (size_t)(p - line);
			const char *b = p + pl;

			/* a file replaced on disk after it was mapped: "PATH (deleted)" */
			if (pl > 10 && !memcmp(p + pl - 10, " (deleted)", 10))
				pl -= 10;
			b = p + pl;
			while (b > p && b[-1] != '/')
				b--;
			if ((size_t)(p + pl - b) == bl && !memcmp(b, NTPROF_LIB, bl) && pl < len) {
				memcpy(path, p, pl);
				path[pl] = '\0';
				*base = lo;
				return 0;
			}
		}
		line = end ? end + 1 : NULL;
	}
	return -ENOENT;
}

/* The state's address in the plugin file at path (.dynsym), cached: every rank loads one file */
static int state_vaddr(struct nprof *pf, int pid, const char *path, uint64_t *vaddr)
{
	char file[PATH_MAX + 32], err[256];
	struct elf_lib *l;
	struct elf_sym sym;
	int rc;

	if (pf->sym_path[0] && !strcmp(pf->sym_path, path)) {
		*vaddr = pf->sym_vaddr;
		return 0;
	}
	/* through the process's root: the job may run in another mount namespace */
	snprintf(file, sizeof(file), "/proc/%d/root%s", pid, path);
	rc = elflib_open(file, &l, err, sizeof(err));
	if (rc) {
		pr_debug("NCCL profiler plugin %s in pid %d: %s\n", path, pid, err);
		return rc;
	}
	rc = elflib_find_object(l, NTPROF_SYMBOL, &sym);
	elflib_close(l);
	if (rc)
		return rc;
	snprintf(pf->sym_path, sizeof(pf->sym_path), "%s", path);
	pf->sym_vaddr = *vaddr = sym.vaddr;
	return 0;
}

static json_t *found_record(const struct pproc *pp, uint64_t now)
{
	json_t *o = json_object();

	json_object_set_new(o, "type", json_string("nccl_profiler"));
	json_object_set_new(o, "ts_ns", json_integer((json_int_t)now));
	json_object_set_new(o, "pid", json_integer(pp->pid));
	json_object_set_new(o, "path", json_string(pp->path));
	return o;
}

/* Is the plugin mapped in pid yet? Then its state's address. */
static bool scan(struct nprof *pf, struct pproc *pp)
{
	static char buf[1 << 20];
	uint64_t base, vaddr;

	if (procfs_read_maps(pp->pid, buf, sizeof(buf)) ||
	    ncclprof_find_in_maps(buf, pp->path, sizeof(pp->path), &base) ||
	    state_vaddr(pf, pp->pid, pp->path, &vaddr))
		return false;
	/* our own build: its first PT_LOAD is at address 0, so the mapping at offset 0 is the base */
	pp->addr = base + vaddr;
	return true;
}

/* ---------------------------------------------------------------- reading */

static ssize_t peek(int pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = {.iov_base = buf, .iov_len = len};
	struct iovec r = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};

	return process_vm_readv(pid, &l, 1, &r, 1, 0);
}

/* The head of the state: ours, of this layout, of this process (not a copy a fork inherited) */
static int head_ok(const struct ntprof_state *h, int pid)
{
	if (h->magic != NTPROF_MAGIC)
		return -EAGAIN; /* not yet, or not ours: the constructor sets it last */
	if (h->layout != NTPROF_LAYOUT || h->comm_size != sizeof(struct ntprof_comm) ||
	    h->max_comms != NTPROF_MAX_COMMS || h->ring != NTPROF_RING || h->pid != pid)
		return -EINVAL;
	return 0;
}

static bool id_ok(const struct ntprof_comm_head *c)
{
	return c->id_check && c->id_check == ntprof_id_check(c) && c->api >= 1 && c->api <= 7 &&
	       c->rank >= -1 && c->nranks >= -1 && c->nnodes >= -1 && c->rank < 1 << 24 &&
	       c->nranks < 1 << 24 && c->nnodes < 1 << 24 && (c->nranks < 0 || c->rank < c->nranks);
}

/* Counters that cannot be: a copy to drop, whatever both copies said */
static bool counters_ok(const struct ntprof_comm_head *c)
{
	uint64_t sum = 0;

	if (c->state > NTPROF_FINALIZED || c->ncoll >> 48)
		return false;
	for (int f = 0; f < NTPROF_NFUNC; f++)
		sum += c->fcount[f] < 1ULL << 48 ? c->fcount[f] : 1ULL << 48;
	/* fcount follows ncoll's increment: never ahead of it */
	return sum <= c->ncoll;
}

static void member_reset(struct pcomm *m, uint64_t gen)
{
	free(m->pend);
	memset(m, 0, sizeof(*m));
	m->gen = gen;
}

static void take_counters(struct pcomm *m, const struct ntprof_comm_head *c)
{
	m->state = c->state;
	m->flags = c->flags;
	m->ncoll = c->ncoll;
	memcpy(m->fcount, c->fcount, sizeof(m->fcount));
	m->graph = c->graph;
	m->np2p = c->np2p;
	m->coll_api = c->coll_api;
	m->p2p_api = c->p2p_api;
	m->group_api = c->group_api;
	m->group_start_ns = c->group_start_ns;
	m->group_end_ns = c->group_end_ns;
	m->launched_at_end = c->launched_at_end;
	m->finalize_ns = c->finalize_ns;
}

/* Forget the pending records up to ordinal ord, remembering each function's last signature */
void pend_drop_upto(struct pcomm *m, uint64_t ord)
{
	int k = 0;

	for (; k < m->npend && m->pend[k].ord <= ord; k++) {
		if (m->pend[k].func < NTPROF_NFUNC)
			m->prev_sig[m->pend[k].func] = ntprof_rec_sig(&m->pend[k]);
		if (m->nhist == HIST)
			memmove(m->hist, m->hist + 1, (HIST - 1) * sizeof(m->hist[0]));
		m->hist[m->nhist < HIST ? m->nhist++ : HIST - 1] = ntprof_rec_sig(&m->pend[k]);
	}
	if (!k)
		return; /* nothing to drop (and no array yet, maybe) */
	memmove(m->pend, m->pend + k, (m->npend - k) * sizeof(*m->pend));
	m->npend -= k;
}

static void pend_add(struct pcomm *m, const struct ntprof_rec *r)
{
	/* a rank far ahead of one that stopped (or exited): the older half goes uncompared */
	if (m->npend == MAX_PENDING) {
		m->pend_dropped += MAX_PENDING / 2;
		pend_drop_upto(m, m->pend[MAX_PENDING / 2 - 1].ord);
	}
	if (grow(&m->pend, &m->pcap, m->npend, sizeof(*m->pend), 64))
		return;
	m->pend[m->npend++] = *r;
}

/* The records of m from read_upto up to its ncoll, those still in the ring, validated. */
static void read_records(int pid, uint64_t comm_addr, struct pcomm *m)
{
	static struct ntprof_rec buf[NTPROF_RING];
	uint64_t lo = m->read_upto + 1, hi = m->ncoll;
	struct iovec l[2], r[2];
	int nv = 0;

	if (hi < lo)
		return;
	/* the older ones are overwritten: lost */
	if (hi - lo + 1 > NTPROF_RING)
		lo = hi - NTPROF_RING + 1;
	/* [lo, hi] in the ring: one or two pieces */
	for (uint64_t o = lo; o <= hi;) {
		uint64_t slot = (o - 1) % NTPROF_RING, run = NTPROF_RING - slot;

		if (run > hi - o + 1)
			run = hi - o + 1;
		l[nv].iov_base = &buf[o - lo];
		l[nv].iov_len = run * sizeof(buf[0]);
		r[nv].iov_base =
			(void *)(uintptr_t)(comm_addr + offsetof(struct ntprof_comm, ring) +
					    slot * sizeof(buf[0]));
		r[nv].iov_len = run * sizeof(buf[0]);
		nv++;
		o += run;
	}
	if (process_vm_readv(pid, l, nv, r, nv, 0) != (ssize_t)((hi - lo + 1) * sizeof(buf[0])))
		return;
	m->lost += lo - (m->read_upto + 1);
	m->read_upto = lo - 1;
	for (uint64_t o = lo; o <= hi; o++) {
		const struct ntprof_rec *rec = &buf[o - lo];

		/* being written (or a copy torn across two writes): read it next tick */
		if (rec->ord != o || rec->check != ntprof_rec_check(rec, m->gen)) {
			/* never whole, for a second, with newer ones written: lost, not a wall */
			if (o < hi && ++m->stuck > STUCK_READS) {
				m->stuck = 0;
				m->lost++;
				m->read_upto = o;
				continue;
			}
			break;
		}
		m->stuck = 0;
		m->recent[(o - 1) % RECENT] = *rec;
		pend_add(m, rec);
		m->read_upto = o;
	}
}

static json_t *comm_record(const struct pproc *pp, const struct pcomm *m, uint64_t now)
{
	json_t *o = json_object();
	char h[24];

	snprintf(h, sizeof(h), "%016llx", (unsigned long long)m->hash);
	json_object_set_new(o, "type", json_string("nccl_profiler_comm"));
	json_object_set_new(o, "ts_ns", json_integer((json_int_t)now));
	json_object_set_new(o, "pid", json_integer(pp->pid));
	json_object_set_new(o, "comm_hash", json_string(h));
	json_object_set_new(o, "rank", json_integer(m->rank));
	json_object_set_new(o, "nranks", json_integer(m->nranks));
	json_object_set_new(o, "nnodes", json_integer(m->nnodes));
	json_object_set_new(o, "api", json_integer(m->api));
	json_object_set_new(o, "name", json_string(m->name));
	return o;
}

/*
 * One process's state: the head, each communicator's identity and counters (copied twice in
 * one call: kept only when both copies agree), the new records. 0; -EFAULT when it cannot be
 * read (gone, or unmapped by an exec); -EINVAL when it is not a state of ours for this process
 * (another layout, or a copy a fork inherited).
 */
static int read_proc(struct pproc *pp, uint64_t now, void (*emit)(void *, json_t *), void *ctx)
{
	static struct ntprof_comm_head hdr[2 * NTPROF_MAX_COMMS];
	struct iovec l[2 * NTPROF_MAX_COMMS], r[2 * NTPROF_MAX_COMMS];
	struct ntprof_state head;
	size_t hl = HEAD_LEN;
	int n, rc;

	if (peek(pp->pid, pp->addr, &head, offsetof(struct ntprof_state, comm)) !=
	    (ssize_t)offsetof(struct ntprof_state, comm))
		return -EFAULT;
	rc = head_ok(&head, pp->pid);
	if (rc)
		return rc == -EAGAIN ? 0 : rc;
	pp->api_max = head.api_max;
	pp->overflow = head.overflow;
	n = head.ncomms < NTPROF_MAX_COMMS ? (int)head.ncomms : NTPROF_MAX_COMMS;
	if (n > pp->ncomm)
		pp->ncomm = n;
	for (int i = 0; i < pp->ncomm; i++) {
		uint64_t a = pp->addr + offsetof(struct ntprof_state, comm) +
			     (uint64_t)i * sizeof(struct ntprof_comm);

		for (int k = 0; k < 2; k++) {
			l[2 * i + k].iov_base = &hdr[2 * i + k];
			l[2 * i + k].iov_len = hl;
			r[2 * i + k].iov_base = (void *)(uintptr_t)a;
			r[2 * i + k].iov_len = hl;
		}
	}
	if (pp->ncomm && process_vm_readv(pp->pid, l, 2 * pp->ncomm, r, 2 * pp->ncomm, 0) !=
				 (ssize_t)(2 * pp->ncomm * hl))
		return -EFAULT;
	for (int i = 0; i < pp->ncomm; i++) {
		const struct ntprof_comm_head *a = &hdr[2 * i], *b = &hdr[2 * i + 1];
		struct pcomm *m = &pp->comm[i];

		if (!id_ok(a) || memcmp(a, b, ID_WORDS_LEN))
			continue; /* being (re)initialised: next tick */
		if (a->gen != m->gen || !m->id_ok)
			member_reset(m, a->gen);
		m->id_ok = true;
		m->hash = a->hash;
		m->rank = a->rank;
		m->nranks = a->nranks;
		m->nnodes = a->nnodes;
		m->api = (int)a->api;
		memcpy(m->name, a->name, NTPROF_NAME);
		m->name[NTPROF_NAME] = '\0';
		if (!memcmp((const char *)a + NTPROF_COUNTERS_OFF,
			    (const char *)b + NTPROF_COUNTERS_OFF, NTPROF_COUNTERS_LEN) &&
		    counters_ok(a) && a->ncoll >= m->ncoll)
			take_counters(m, a);
		read_records(pp->pid,
			     pp->addr + offsetof(struct ntprof_state, comm) +
				     (uint64_t)i * sizeof(struct ntprof_comm),
			     m);
		/* v1-v3 learn their communicator at the first event */
		if (!m->told && m->hash && emit) {
			emit(ctx, comm_record(pp, m, now));
			m->told = true;
		}
	}
	return 0;
}

/*
 * Unreadable: the process exited (what was read stays), or its plugin is gone (an exec): then
 * found again later, a new instance whose communicators start over. Not ours: never again.
 */
static void read_failed(struct pproc *pp, int rc, bool exited, uint64_t now)
{
	if (rc == -EINVAL || exited) {
		pp->dead = true;
		return;
	}
	pp->addr = 0;
	pp->next_scan_ns = now + RESCAN_NS;
	for (int k = 0; k < pp->ncomm; k++)
		member_reset(&pp->comm[k], 0);
	pp->ncomm = 0;
}

/* ---------------------------------------------------------------- into the NCCL state */

static const struct ntprof_rec *newest(const struct pcomm *m)
{
	const struct ntprof_rec *r = m->read_upto ? &m->recent[(m->read_upto - 1) % RECENT] : NULL;

	return r && r->ord == m->read_upto ? r : NULL;
}

static struct ncomm *state_comm(struct nproc *p, const struct pcomm *m)
{
	struct ncomm *c;

	for (int i = 0; i < p->ncomm; i++)
		if (p->comm[i].sc.hash == m->hash && (m->rank < 0 || p->comm[i].sc.rank == m->rank))
			return &p->comm[i];
	if (p->ncomm < MAX_COMMS) {
		c = &p->comm[p->ncomm++];
	} else {
		/* full: a destroyed communicator gives its place to a live one */
		c = NULL;
		for (int i = 0; i < p->ncomm && !c; i++)
			c = p->comm[i].sc.destroyed && m->state == NTPROF_ACTIVE ? &p->comm[i]
										 : NULL;
		if (!c)
			return NULL;
	}
	/* not seen by the probes (stripped library): known from the plugin only */
	memset(c, 0, sizeof(*c));
	c->lib = -1;
	c->sc.pid = p->pid;
	c->sc.hash = m->hash;
	c->sc.rank = m->rank;
	c->sc.nranks = m->nranks;
	c->sc.last_coll = -1;
	return c;
}

static void feed(struct nccl_state *s, struct nprof *pf, uint64_t now)
{
	for (int i = 0; i < pf->n; i++) {
		struct pproc *pp = &pf->p[i];
		struct nproc *p = pp->ncomm ? nstate_proc(s, pp->pid) : NULL;

		for (int k = 0; p && k < pp->ncomm; k++) {
			const struct pcomm *m = &pp->comm[k];
			const struct ntprof_rec *r = newest(m);
			const struct pgroup *g = NULL;
			struct ncomm *c;
			struct snap_comm *sc;

			if (!m->id_ok || !m->hash || !(c = state_comm(p, m)))
				continue;
			sc = &c->sc;
			for (int j = 0; j < pf->ng && !g; j++)
				g = pf->g[j].hash == m->hash ? &pf->g[j] : NULL;
			/* seqNumber where it can be read (DWARF), else the plugin's count */
			if (sc->seq_src != SNAP_SRC_SEQNUMBER) {
				uint64_t seq[SNAP_NSEQ];

				for (int f = 0; f < SNAP_NSEQ; f++)
					seq[f] = m->fcount[f];
				if (!sc->seq_ok || memcmp(seq, sc->seq, sizeof(seq)))
					sc->changed_ns = now;
				memcpy(sc->seq, seq, sizeof(seq));
				sc->seq_ok = true;
				sc->total_only = false;
				sc->seq_src = SNAP_SRC_PROFILER;
			}
			if (m->state == NTPROF_FINALIZED)
				sc->destroyed = true;
			sc->launched = m->ncoll;
			if (r) {
				sc->last_coll = r->func == 0xff ? -1 : r->func;
				sc->last_count = r->count;
				sc->last_dtype = r->dtype == 0xff ? -1 : r->dtype;
				sc->last_root = r->root;
				sc->args_src = SNAP_SRC_PROFILER;
			}
			if (g && g->latched && !sc->mm_ord) {
				const struct ntprof_rec *at = m->mm_ok ? &m->mm : NULL;

				sc->mm_ord = g->ord;
				sc->mm_from = g->from;
				sc->mm_coll = at && at->func != 0xff ? at->func : -1;
				sc->mm_dtype = at && at->dtype != 0xff ? at->dtype : -1;
				sc->mm_root = at ? at->root : 0;
				sc->mm_count = at ? at->count : 0;
				sc->mm_seq = at ? at->seq : 0;
				sc->mm_ns = at ? at->ts_ns : now;
				sc->mm_changed = at && m->mm_changed;
			}
		}
	}
}

void nccl_state__sample_prof(struct nccl_state *s, const struct snap_proc *procs, int n,
			     uint64_t now, void (*emit)(void *ctx, json_t *rec), void *ctx)
{
	struct nprof *pf = nprof_get(s);
	int rc;

	if (!pf)
		return;
	for (int i = 0; i < n; i++) {
		const struct snap_proc *sp = &procs[i];
		struct pproc *pp = pproc_get(pf, sp->pid, !sp->exited);

		if (!pp || pp->dead)
			continue;
		if (!pp->addr) {
			/*
			 * NCCL loads the plugin at its first communicator: each tick while NCCL
			 * is mapped, for a while (a launcher may map NCCL and never init it)
			 */
			if (sp->exited || now < pp->next_scan_ns)
				continue;
			if (!sp->nccl || ++pp->scans > SCANS_EACH_TICK)
				pp->next_scan_ns = now + RESCAN_NS;
			if (!scan(pf, pp))
				continue;
			if (emit)
				emit(ctx, found_record(pp, now));
			pr_info("pid %d: NCCL profiler plugin %s found\n", pp->pid, pp->path);
		}
		rc = read_proc(pp, now, emit, ctx);
		if (rc)
			read_failed(pp, rc, sp->exited, now);
	}
	nprof_compare_all(pf);
	feed(s, pf, now);
}

void nprof_read_now(struct nccl_state *s, int pid, uint64_t now)
{
	struct pproc *pp = s->prof ? pproc_get(s->prof, pid, false) : NULL;

	if (!pp || !pp->addr || pp->dead)
		return;
	/* a failure here: the next tick knows whether the process exited */
	if (!read_proc(pp, now, NULL, NULL))
		feed(s, s->prof, now);
}

int nccl_state__prof_at(struct nccl_state *s, int pid, uint64_t addr)
{
	struct nprof *pf = nprof_get(s);
	struct pproc *pp = pf ? pproc_get(pf, pid, true) : NULL;

	if (!pp)
		return -ENOMEM;
	pp->addr = addr;
	pp->dead = false;
	return 0;
}

/* ---------------------------------------------------------------- what a process shows */

void nprof_proc_snap(const struct nccl_state *s, struct snap_proc *sp)
{
	const struct pproc *pp = nprof_find(s, sp->pid);
	uint64_t since = 0;

	/*
	 * An exited process's last copy is as old as its last tick: the uprobes' word only; and
	 * theirs where their frames say where in the setup the process is
	 */
	if (!pp || sp->exited ||
	    (sp->nccl_setup != SNAP_SETUP_NONE &&
	     !(sp->nccl_setup == SNAP_SETUP_TRANSPORT && nstate_setup_by_api(s, sp->pid))))
		return;
	/*
	 * In ncclGroupEnd (v5+: GroupEndApiStart recorded) with nothing launched on the
	 * communicator yet: groupLaunch connects before it launches (src/group.cc), so this is
	 * the lazy transport setup of the first collective, which the uprobes would show.
	 */
	for (int k = 0; k < pp->ncomm; k++) {
		const struct pcomm *m = &pp->comm[k];

		if (m->id_ok && m->state == NTPROF_ACTIVE && m->group_start_ns && m->group_end_ns &&
		    !m->ncoll && !m->np2p && !m->launched_at_end &&
		    (!since || m->group_end_ns < since))
			since = m->group_end_ns;
	}
	if (!since)
		return;
	if (sp->nccl_setup == SNAP_SETUP_NONE) {
		sp->nccl_setup = SNAP_SETUP_TRANSPORT;
		sp->nccl_setup_since_ns = since;
	}
	/* the place is the plugin's, over a public call's probe (ncclAllReduce): it says more */
	snprintf(sp->nccl_phase, sizeof(sp->nccl_phase),
		 "ncclGroupEnd before its first launch (NCCL profiler plugin)");
	sp->nccl_since_ns = since;
}

/* ---------------------------------------------------------------- the plugin for the job */

static int api_string(void *ctx, const char *s, size_t len)
{
	int *best = ctx, v = 0;

	/* exactly "ncclProfiler_vN": not "ncclProfiler_v5_t" or a message */
	for (size_t i = strlen("ncclProfiler_v"); i < len && v < 1000; i++)
		v = s[i] >= '0' && s[i] <= '9' ? v * 10 + (s[i] - '0') : -1000000;
	if (len > strlen("ncclProfiler_v") && v > *best)
		*best = v;
	return 0;
}

int ncclprof_lib_api(const char *path)
{
	struct elf_lib *l;
	char err[256];
	int best = 0, rc = elflib_open(path, &l, err, sizeof(err));

	if (rc)
		return rc;
	rc = elflib_each_string(l, "ncclProfiler_v", api_string, &best);
	elflib_close(l);
	return rc < 0 ? rc : best;
}
