// SPDX-License-Identifier: MIT
/*
 * Stacks as evidence: the culprit's and the longest waiter's stacks, unwound from outside
 * (snap_proc.stacks), in one line each, near the top of the finding's evidence. In NCCL they
 * say which call the thread is inside ("inside ncclAllReduce, blocked in accept"), the phase
 * even where the probes could not resolve it (a library stripped to its exports); outside NCCL,
 * where the program itself waits.
 */
#include <stdio.h>
#include <string.h>
#include "diagnose/rules.h"

/* A stack older than this (its process is no longer chosen) is not evidence of now. */
#define STACK_FRESH_NS (10 * NT_NSEC_PER_SEC)

/* p's stack to show: thread prefer's, else one inside NCCL, else the main thread's, else any */
static const struct snap_stack *pick(const struct snapshot *s, const struct snap_proc *p,
				     int prefer)
{
	const struct snap_stack *best = NULL;
	int score = -1;

	for (int i = 0; p && i < p->nstacks; i++) {
		const struct snap_stack *v = &p->stacks[i];
		int sc = v->st.tid == prefer   ? 4
			 : v->nccl_call[0]     ? 3
			 : v->st.tid == p->pid ? 2
					       : 1;

		/* taken after the snapshot's time (the session takes them after diagnose) is now */
		if (v->st.taken_ns < s->now_ns && s->now_ns - v->st.taken_ns > STACK_FRESH_NS)
			continue;
		if (sc > score) {
			best = v;
			score = sc;
		}
	}
	return best;
}

/*
 * Judging where a thread is now takes a recent stack: taken within STACK_NOW_NS (each process
 * is unwound again at most once a second while it is in a finding) and the thread still in the
 * call it was stopped in. One that left NCCL since is in another call, or was seen running.
 */
#define STACK_NOW_NS (2 * NT_NSEC_PER_SEC)

/*
 * Inside NCCL where no probe says so: a collective on NCCL 2.18-2.22, where no counter says
 * that a rank launched it, or any call of a library stripped to its exports
 */
bool stack_in_nccl(const struct snapshot *s, const struct snap_proc *p)
{
	for (int i = 0; i < p->nstacks; i++) {
		const struct snap_stack *v = &p->stacks[i];

		if (v->st.tid != p->pid || !v->nccl_call[0])
			continue;
		if (v->st.taken_ns < s->now_ns && s->now_ns - v->st.taken_ns > STACK_NOW_NS)
			continue;
		if (!strcmp(v->st.syscall, p->where))
			return true;
	}
	return false;
}

/*
 * Its main thread waits on its GPU now (a CUDA synchronize on a stack as recent as
 * stack_in_nccl's, still in the call it was stopped in): it launched work, its kernels run,
 * NCCL's among them, and theirs may wait on peers. Not idle: no culprit of a wait on it.
 */
bool stack_on_gpu(const struct snapshot *s, const struct snap_proc *p)
{
	for (int i = 0; i < p->nstacks; i++) {
		const struct snap_stack *v = &p->stacks[i];

		if (v->st.tid != p->pid || !v->gpu_wait)
			continue;
		if (v->st.taken_ns < s->now_ns && s->now_ns - v->st.taken_ns > STACK_NOW_NS)
			continue;
		if (!strcmp(v->st.syscall, p->where))
			return true;
	}
	return false;
}

/* The C library's frames below main() and a thread's start routine: the same in every stack */
static bool startup_frame(const char *name)
{
	return !strcmp(name, "start_thread") || !strncmp(name, "__clone", 7) ||
	       !strcmp(name, "_start") || !strncmp(name, "__libc_start", 12);
}

/*
 * "a <- b [libc.so.6] <- c [prog]" from frame i on, into buf at off, up to main(). A stack longer
 * than the line is cut between frames, never inside a name: " <- ..." says frames were left out
 */
static size_t frames_text(const struct thread_stack *st, int i, char *buf, size_t off, size_t len)
{
	static const char cut[] = " <- ...";

	for (int k = i; k < st->nframes && off < len; k++) {
		const struct stack_frame *f = &st->frames[k];
		bool last = k + 1 == st->nframes, end;
		char name[128], piece[192];
		int n;

		stack_frame_name(f, name, sizeof(name));
		if (startup_frame(name))
			break;
		end = last || !strcmp(name, "main");
		n = snprintf(piece, sizeof(piece), "%s%s", k > i ? " <- " : "", name);
		/* the module once, after the last of its frames in a row */
		if (!last) {
			char next[128];

			stack_frame_name(&st->frames[k + 1], next, sizeof(next));
			end = end || startup_frame(next);
			last = startup_frame(next) || strcmp(st->frames[k + 1].module, f->module);
		}
		if (last && f->symbol[0] && f->module[0] && n < (int)sizeof(piece))
			n += snprintf(piece + n, sizeof(piece) - n, " [%s]",
				      stack_module_base(f->module));
		/* this frame, and room to say that more follow where they do */
		if (off + n + (end ? 0 : sizeof(cut) - 1) >= len) {
			if (off + sizeof(cut) - 1 < len)
				off += snprintf(buf + off, len - off, "%s", k > i ? cut : "...");
			break;
		}
		off += snprintf(buf + off, len - off, "%s", piece);
		if (end)
			break;
	}
	return off;
}

static void stack_text(const struct snap_stack *v, char *buf, size_t len)
{
	const struct thread_stack *st = &v->st;
	size_t off;

	if (!st->nframes && !v->py_text[0]) {
		snprintf(buf, len, "no stack: %s", st->error[0] ? st->error : "nothing unwound");
		return;
	}
	if (v->py_text[0]) {
		/* a Python program: its own frames say where it is, merged with the native ones */
		/* the stack ends in the call it is blocked in */
		off = v->nnccl ? snprintf(buf, len, "%s; ", v->nccl_call)
			       : snprintf(buf, len, "outside NCCL: ");
		if (off < len)
			off += snprintf(buf + off, len - off, "%s", v->py_text);
		return;
	}
	if (v->nnccl) {
		/* where the program called NCCL from: the frame after NCCL's outermost */
		int caller = v->nccl_frames[v->nnccl - 1] + 1;

		off = snprintf(buf, len, "%s", v->nccl_call);
		if (caller < st->nframes && off < len)
			frames_text(st, caller, buf,
				    off + snprintf(buf + off, len - off, "; called from "), len);
		return;
	}
	off = snprintf(buf, len, "outside NCCL%s%s: ", st->syscall[0] ? ", blocked in " : "",
		       st->syscall);
	frames_text(st, 0, buf, off, len);
}

/* line at position pos of f's evidence; the last line goes when it is full */
static void insert_evidence(struct finding *f, int pos, const char *line)
{
	if (pos > f->nevidence)
		pos = f->nevidence;
	if (f->nevidence == DIAG_MAX_EVIDENCE)
		f->nevidence--;
	if (pos >= DIAG_MAX_EVIDENCE)
		return;
	memmove(f->evidence[pos + 1], f->evidence[pos],
		(f->nevidence - pos) * sizeof(f->evidence[0]));
	snprintf(f->evidence[pos], sizeof(f->evidence[0]), "%s", line);
	f->nevidence++;
}

static bool stack_line(const struct snapshot *s, int pid, int prefer, char *line, size_t len)
{
	const struct snap_proc *p = snapshot_proc(s, pid);
	const struct snap_stack *v = pid > 0 ? pick(s, p, prefer) : NULL;
	char name[48], who[24];
	uint64_t age;
	size_t off;

	if (!v)
		return false;
	snap_proc_name(p, pid, name, sizeof(name));
	if (v->st.tid == pid)
		snprintf(who, sizeof(who), "main thread");
	else
		snprintf(who, sizeof(who), "thread %d", v->st.tid);
	age = v->st.taken_ns < s->now_ns ? s->now_ns - v->st.taken_ns : 0;
	off = snprintf(line, len, "%s %s (stack unwound %.1fs ago): ", name, who,
		       (double)age / NT_NSEC_PER_SEC);
	/* a long stack is cut where the evidence line ends; a Python stack that could not be read
	 * says why first (an unknown version, in one line) */
	if (p->py && p->py->error[0] && off < len)
		off += snprintf(line + off, len - off, "%s; ", p->py->error);
	if (off < len)
		stack_text(v, line + off, len - off);
	return true;
}

/*
 * A waiter the snapshot has inside NCCL whose latest stack is outside it: the stack was taken a
 * moment later (the phases come from the tick before), once the wait had ended. It would
 * contradict the finding's other lines: left out.
 */
static bool left_nccl(const struct snapshot *s, int pid, int prefer)
{
	const struct snap_proc *p = snapshot_proc(s, pid);
	const struct snap_stack *v = pid > 0 ? pick(s, p, prefer) : NULL;

	return v && v->st.nframes && !v->nnccl && p->nccl &&
	       (p->nccl_phase[0] || p->nccl_setup != SNAP_SETUP_NONE);
}

void stack_evidence(const struct snapshot *s, struct finding *f)
{
	char line[sizeof(f->evidence[0])];
	int prefer = 0, pos = f->nevidence ? 1 : 0;

	if (f->kind == FINDING_CONFIG)
		return;
	if (stack_line(s, f->pid, f->pid, line, sizeof(line)))
		insert_evidence(f, pos++, line);
	if (f->conn >= 0 && f->conn < s->nconns && s->conns[f->conn].pid == f->peer_pid)
		prefer = s->conns[f->conn].blocked_tid;
	if (f->peer_pid != f->pid && !left_nccl(s, f->peer_pid, prefer) &&
	    stack_line(s, f->peer_pid, prefer, line, sizeof(line)))
		insert_evidence(f, pos, line);
}
