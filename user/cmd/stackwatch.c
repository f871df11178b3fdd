// SPDX-License-Identifier: MIT
/*
 * The stacks the session takes (stackwatch.h says which and when). A take stops each chosen
 * thread alone for tens to hundreds of microseconds (docs/benchmarks.md); once a second per
 * process is the most a waiting process is asked to bear, and a process that nothing waits on
 * and that waits on nothing is never stopped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/session.h"
#include "cmd/stackwatch.h"
#include "nccl/ncclstack.h"
#include "present/stackrec.h"
#include "trace/procfs.h"
#include "util/grow.h"
#include "util/clock.h"
#include "util/log.h"

#define TAKE_EVERY_NS	 NT_NSEC_PER_SEC
#define PROCS_PER_TICK	 4 /* the rest at the next tick: a tick stays short */
#define THREADS_PER_PROC 4
/*
 * The other waiters of a finding have their Python stacks read (nothing stopped) to group them
 * by their line: the first PY_WAITERS of each finding (each a 80 KB record kept), PY_PER_TICK
 * a tick
 */
#define PY_WAITERS  32
#define PY_PER_TICK 16
/*
 * A process the scheduler keeps runnable but unrun this long per second is not stopped before
 * a finding names it: its threads reach their stop only when they run, and each take costs it
 * two waits for a CPU (long, with 32 spinning ranks on 2 cores); the diagnosis calls it starved.
 */
#define STARVED_NS (NT_NSEC_PER_SEC / 2)
/* a stack that did not change is written to the dump again this often */
#define RECORD_AGAIN_NS (30 * NT_NSEC_PER_SEC)
/* attach: the threads of a process whose stacks are taken at once */
#define ATTACH_MAX_THREADS 1024

struct watched {
	int pid;
	uint64_t last_ns; /* the last take */
	struct snap_stack v[THREADS_PER_PROC];
	int n;
	uint64_t recorded_ns[THREADS_PER_PROC]; /* when v[i] was last written to the dump */
	bool forgotten;				/* exited: its session is closed, v stays */
	struct py_stacks py; /* its Python stacks, read with v (py.nthreads 0: none) */
	bool has_py;
	uint64_t py_ns; /* when py was last read */
};

struct stackwatch {
	struct stacks *st;
	struct pystacks *py;
	struct watched *w;
	int n, cap;
	bool told;    /* why stacks cannot be taken, said once */
	bool told_py; /* why Python stacks cannot be read, said once */
};

/* What to take in one process. */
struct want {
	int pid;
	int tids[THREADS_PER_PROC];
	int n;
};

/*
 * tid's calls whose returns nccltrace's uretprobes hijacked: its phase stack, most recent
 * first. Unknown (< 0) when it is deeper than the frames BPF keeps: the most recent are missing.
 */
static int phase_returns(void *ctx, int tid, struct stack_return *out, int max)
{
	struct session *s = ctx;
	struct nt_phase_stack ps;
	int n = 0;

	if (!s->tracer || tracer__phase_stack(s->tracer, tid, &ps))
		return 0;
	if (ps.depth > NT_PHASE_DEPTH)
		return -1;
	for (int d = (int)ps.depth - 1; d >= 0 && n < max; d--)
		out[n++] = (struct stack_return){.entry = ps.f[d].ip, .ret = ps.f[d].ret};
	return n;
}

struct stackwatch *stackwatch_new(struct session *s)
{
	struct stackwatch *w = calloc(1, sizeof(*w));

	if (w && (!(w->st = stacks__new(phase_returns, s)) || !(w->py = pystacks__new()))) {
		stacks__free(w->st);
		free(w);
		return NULL;
	}
	return w;
}

void stackwatch_free(struct stackwatch *w)
{
	if (!w)
		return;
	stacks__free(w->st);
	pystacks__free(w->py);
	free(w->w);
	free(w);
}

static struct watched *watched(struct stackwatch *w, int pid, bool add)
{
	for (int i = 0; i < w->n; i++)
		if (w->w[i].pid == pid)
			return &w->w[i];
	if (!add || grow(&w->w, &w->cap, w->n, sizeof(*w->w), 8))
		return NULL;
	memset(&w->w[w->n], 0, sizeof(w->w[0]));
	w->w[w->n].pid = pid;
	return &w->w[w->n++];
}

void stackwatch_attach(struct stackwatch *w, struct snapshot *snap)
{
	for (int i = 0; w && i < snap->nprocs; i++) {
		struct snap_proc *p = &snap->procs[i];
		struct watched *ws = watched(w, p->pid, false);

		p->stacks = ws && ws->n ? ws->v : NULL;
		p->nstacks = ws ? ws->n : 0;
		p->py = ws && ws->has_py ? &ws->py : NULL;
		/* an exited process keeps its last stacks; its libdwfl session goes */
		if (ws && p->exited && !ws->forgotten) {
			stacks__forget(w->st, p->pid);
			pystacks__forget(w->py, p->pid);
			ws->forgotten = true;
		}
	}
}

static void want_tid(struct want *wants, int *nw, int max, int pid, int tid)
{
	struct want *x = NULL;

	for (int i = 0; i < *nw && !x; i++)
		if (wants[i].pid == pid)
			x = &wants[i];
	if (!x) {
		if (*nw >= max)
			return;
		x = &wants[(*nw)++];
		x->pid = pid;
		x->n = 0;
	}
	for (int k = 0; k < x->n; k++)
		if (x->tids[k] == tid)
			return;
	if (x->n < THREADS_PER_PROC)
		x->tids[x->n++] = tid;
}

/* Not to be stopped now: gone or a zombie */
static bool gone(const struct snap_proc *p)
{
	return !p || p->exited || p->state == 'Z';
}

/* A culprit or waiter of a finding: its main thread and every thread blocked in a socket call */
static void want_proc(const struct snapshot *snap, struct want *wants, int *nw, int max, int pid)
{
	const struct snap_proc *p = snapshot_proc(snap, pid);

	if (gone(p))
		return;
	want_tid(wants, nw, max, pid, pid);
	for (int i = 0; i < snap->nconns; i++) {
		const struct snap_conn *c = &snap->conns[i];

		if (c->pid == pid && c->blocked != SNAP_BLOCK_NONE && c->blocked_tid > 0)
			want_tid(wants, nw, max, pid, c->blocked_tid);
	}
}

/* The same stack as the one written last: same thread, call and frames. */
static bool same_stack(const struct snap_stack *a, const struct snap_stack *b)
{
	if (a->st.tid != b->st.tid || a->st.nframes != b->st.nframes ||
	    strcmp(a->st.syscall, b->st.syscall) || strcmp(a->st.error, b->st.error) ||
	    strcmp(a->py_text, b->py_text))
		return false;
	for (int i = 0; i < a->st.nframes; i++)
		if (a->st.frames[i].pc != b->st.frames[i].pc)
			return false;
	return true;
}

/*
 * The Python stacks of the process just unwound, read without stopping it, and each native
 * stack's thread merged with its Python frames. Said once when they cannot be read.
 */
static void take_python(struct stackwatch *w, struct watched *ws, uint64_t now)
{
	int rc = pystacks__take(w->py, ws->pid, &ws->py);

	ws->py_ns = now;
	ws->has_py = rc != -ENOENT;
	if (rc && rc != -ENOENT && rc != -ESRCH && !w->told_py) {
		pr_warn("no Python stacks of pid %d: %s\n", ws->pid, ws->py.error);
		w->told_py = true;
	}
	for (int i = 0; i < ws->n; i++) {
		struct snap_stack *v = &ws->v[i];
		const struct py_thread *t = py_stacks_thread(&ws->py, v->st.tid);

		v->py_text[0] = '\0';
		v->py_merged = false;
		if (t && t->nframes)
			v->py_merged = py_merge_text(v->st.nframes ? &v->st : NULL, t, v->py_text,
						     sizeof(v->py_text));
	}
}

/* pid's main thread, not stopped on purpose (not for lack of time): its place is known */
static bool refused_main(int pid, const struct thread_stack *st)
{
	return st->tid == pid && !st->nframes && !st->timed_out && !st->exited;
}

int stackwatch_kept(const struct snap_stack *prev, int nprev, const struct thread_stack *now)
{
	if (!now->timed_out || now->nframes)
		return -1;
	for (int k = 0; k < nprev; k++)
		if (prev[k].st.tid == now->tid && prev[k].st.nframes)
			return k;
	return -1;
}

static void take(struct session *s, struct stackwatch *w, const struct want *x, uint64_t now)
{
	struct thread_stack out[THREADS_PER_PROC];
	struct watched *ws = watched(w, x->pid, true);
	struct snap_stack prev[THREADS_PER_PROC];
	uint64_t prev_rec[THREADS_PER_PROC];
	char why[160];
	int nprev, rc, kept[THREADS_PER_PROC];

	if (!ws)
		return;
	nprev = ws->n;
	memcpy(prev, ws->v, sizeof(prev));
	memcpy(prev_rec, ws->recorded_ns, sizeof(prev_rec));
	ws->last_ns = now;
	rc = stacks__take(w->st, x->pid, x->tids, x->n, out, why, sizeof(why));
	if (rc) {
		/* one line, once: the trace goes on without stacks where ptrace is refused */
		if (!w->told && rc != -ESRCH)
			pr_warn("cannot take the stacks of pid %d: %s; tracing continues without "
				"them\n",
				x->pid, why);
		w->told = w->told || rc != -ESRCH;
		memset(&ws->v[0], 0, sizeof(ws->v[0]));
		ws->v[0].st.pid = ws->v[0].st.tid = x->pid;
		ws->v[0].st.taken_ns = now;
		snprintf(ws->v[0].st.error, sizeof(ws->v[0].st.error), "%s", why);
		ws->n = 1;
		take_python(w, ws, now);
		/* why there is no stack, in the dump once (again when it changes) */
		if (nprev != 1 || strcmp(prev[0].st.error, ws->v[0].st.error))
			session_dump(s, record_stack(&ws->v[0], py_stacks_thread(&ws->py, x->pid),
						     ws->has_py ? &ws->py : NULL));
		return;
	}
	ws->n = x->n;
	for (int i = 0; i < x->n; i++) {
		kept[i] = stackwatch_kept(prev, nprev, &out[i]);
		if (kept[i] >= 0) {
			ws->v[i] = prev[kept[i]];
			continue;
		}
		ws->v[i].st = out[i];
		if (!ws->v[i].st.taken_ns)
			ws->v[i].st.taken_ns = now;
		nccl_stack_describe(&ws->v[i]);
		/* attach: a later stack replaces the phases seeded from the first */
		if (s->attached) {
			nccl_state__seed_stack(s->nstate, x->pid, ws->v[i].st.tid,
					       ws->v[i].st.frames, ws->v[i].st.nframes, now);
			if (refused_main(x->pid, &ws->v[i].st))
				nccl_state__seed_refused(s->nstate, x->pid, now);
		}
	}
	take_python(w, ws, now);
	for (int i = 0; i < x->n; i++) {
		struct snap_stack *v = &ws->v[i];
		bool changed = true;

		/* a kept stack keeps its Python frames too: both of the same moment */
		if (kept[i] >= 0) {
			memcpy(v->py_text, prev[kept[i]].py_text, sizeof(v->py_text));
			v->py_merged = prev[kept[i]].py_merged;
		}

		ws->recorded_ns[i] = 0;
		for (int k = 0; k < nprev; k++) {
			if (prev[k].st.tid != v->st.tid)
				continue;
			changed = !same_stack(&prev[k], v) || now - prev_rec[k] >= RECORD_AGAIN_NS;
			if (!changed)
				ws->recorded_ns[i] = prev_rec[k];
		}
		if (changed) {
			session_dump(s, record_stack(v, py_stacks_thread(&ws->py, v->st.tid),
						     ws->has_py ? &ws->py : NULL));
			ws->recorded_ns[i] = now;
		}
	}
	if (s->attached)
		nccl_state__seed_done(s->nstate, x->pid);
}

/*
 * The Python stacks alone (nothing stopped) of a finding's other waiters, the first
 * PY_WAITERS of each, so that the waiters can be grouped by the line they are at: each process
 * at most once a second, PY_PER_TICK a tick. Returns how many were read.
 */
static int python_waiters(struct stackwatch *w, const struct snapshot *snap,
			  const struct finding *found, int n, uint64_t now)
{
	int read = 0;

	for (int i = 0; i < n && read < PY_PER_TICK; i++) {
		for (int k = 0; k < found[i].nwaiters && k < PY_WAITERS && read < PY_PER_TICK;
		     k++) {
			int pid = found[i].waiters[k].pid;
			struct watched *ws;

			if (found[i].kind == FINDING_CONFIG || gone(snapshot_proc(snap, pid)))
				continue;
			ws = watched(w, pid, true);
			if (!ws || (ws->py_ns && now - ws->py_ns < TAKE_EVERY_NS))
				continue;
			ws->py_ns = now;
			ws->has_py = pystacks__take(w->py, pid, &ws->py) != -ENOENT;
			read++;
		}
	}
	return read;
}

bool stackwatch_step(struct session *s, const struct finding *found, int n)
{
	struct stackwatch *w = s->stackw;
	const struct snapshot *snap = &s->snap;
	int max = snap->nprocs, nw = 0, taken = 0, status;
	struct want *wants;
	uint64_t now = snap->now_ns;

	if (!w)
		return false;
	stacks__poll(w->st);
	if (stacks__reaped(w->st, s->job.pid, &status)) {
		/* the job's exit, reaped by a take's wait: it is the session's to report */
		s->job_exited = true;
		s->job_status = status;
	}
	if (!max)
		return false;
	wants = calloc(max, sizeof(*wants));
	if (!wants)
		return false;
	/*
	 * What the evidence shows first: each finding's culprit and its longest waiter (the
	 * finding's peer), never every waiter of a big job; then threads blocked in a socket call
	 * on a connection that waits, so their stacks are there when a finding opens
	 */
	for (int i = 0; i < n; i++) {
		if (found[i].kind == FINDING_CONFIG)
			continue;
		if (found[i].pid > 0)
			want_proc(snap, wants, &nw, max, found[i].pid);
		if (found[i].peer_pid > 0)
			want_proc(snap, wants, &nw, max, found[i].peer_pid);
	}
	/*
	 * attach: a main thread that did not stop in time for its stack (running, on a busy
	 * machine) is tried again, once a second for a while: until then the diagnosis knows
	 * nothing of it and names it nowhere
	 */
	for (int i = 0; s->attached && i < snap->nprocs; i++) {
		const struct snap_proc *p = &snap->procs[i];

		if (snap_proc_unseen(p) && now - p->attached_ns <= NT_ATTACH_RETAKE_NS)
			want_tid(wants, &nw, max, p->pid, p->pid);
	}
	for (int i = 0; i < snap->nprocs; i++) {
		const struct snap_proc *p = &snap->procs[i];
		int ci = gone(p) || p->runnable_ns >= STARVED_NS
				 ? -1
				 : diagnose_waiting_conn(snap, &s->diag, p->pid);

		if (ci >= 0 && snap->conns[ci].blocked_tid > 0)
			want_tid(wants, &nw, max, snap->procs[i].pid, snap->conns[ci].blocked_tid);
	}
	for (int i = 0; i < nw && taken < PROCS_PER_TICK; i++) {
		struct watched *ws = watched(w, wants[i].pid, false);

		if (ws && ws->last_ns && now - ws->last_ns < TAKE_EVERY_NS)
			continue;
		take(s, w, &wants[i], now);
		taken++;
	}
	free(wants);
	taken += python_waiters(w, snap, found, n, now);
	if (taken)
		stackwatch_attach(w, &s->snap);
	return taken > 0;
}

void stackwatch_note_stop(struct stackwatch *w, int pid, int status)
{
	if (w)
		stacks__note_stop(w->st, pid, status);
}

void stackwatch_poll(struct stackwatch *w)
{
	if (w)
		stacks__poll(w->st);
}

/* What the snapshot keeps of pid's stacks at attach: its main thread, then threads in NCCL */
static void keep_stack(struct watched *ws, const struct snap_stack *v)
{
	if (ws->n < THREADS_PER_PROC && (v->st.tid == ws->pid || v->nnccl))
		ws->v[ws->n++] = *v;
}

int stackwatch_take_all(struct session *s, int pid)
{
	struct stackwatch *w = s->stackw;
	struct watched *ws = w ? watched(w, pid, true) : NULL;
	int *tids = calloc(ATTACH_MAX_THREADS, sizeof(*tids)), ntids;
	struct thread_stack *out = tids ? calloc(ATTACH_MAX_THREADS, sizeof(*out)) : NULL;
	uint64_t now = clock_mono_ns();
	char why[160];
	int rc = -ENOMEM;

	if (!ws || !out)
		goto cleanup;
	ws->n = 0;
	ws->last_ns = now;
	rc = ntids = procfs_tids(pid, tids, ATTACH_MAX_THREADS);
	if (rc < 0)
		goto cleanup;
	/* one thread stopped at a time, as ever: the others run on meanwhile */
	rc = stacks__take(w->st, pid, tids, ntids, out, why, sizeof(why));
	if (rc) {
		/* once: where ptrace is refused (another tracer, Yama), it is for every process */
		if (rc != -ESRCH && !w->told)
			pr_warn("cannot take the stacks of pid %d: %s; phases come from the probes "
				"alone\n",
				pid, why);
		w->told = w->told || rc != -ESRCH;
		goto cleanup;
	}
	for (int i = 0; i < ntids; i++) {
		struct snap_stack v = {.st = out[i]};

		if (!v.st.taken_ns)
			v.st.taken_ns = now;
		nccl_stack_describe(&v);
		session_dump(s, record_stack(&v, NULL, NULL));
		nccl_state__seed_stack(s->nstate, pid, v.st.tid, v.st.frames, v.st.nframes, now);
		if (refused_main(pid, &v.st))
			nccl_state__seed_refused(s->nstate, pid, now);
		keep_stack(ws, &v);
	}
	nccl_state__seed_done(s->nstate, pid);
	for (int i = 0; i < ws->n; i++)
		ws->recorded_ns[i] = now;
	rc = ntids;
cleanup:
	free(out);
	free(tids);
	return rc;
}

const struct stacks_stats *stackwatch_stats(const struct stackwatch *w)
{
	return w ? stacks__stats(w->st) : NULL;
}
