// SPDX-License-Identifier: MIT
/*
 * A Python thread's native and Python frames as one stack. Each run of CPython's eval loop is
 * one native frame, _PyEval_EvalFrameDefault, and runs one group of Python frames: one frame
 * in 3.9 and 3.10 (each Python call enters the loop again), every frame down to the entry
 * frame in 3.11 and later (a Python call from Python stays in the same run; a call from C, a
 * callback or a builtin calling back, starts a new one). So the n-th eval frame of the native
 * stack, counted from the innermost, runs the n-th group of the Python stack. When the counts
 * do not agree (the two were read a moment apart, or the unwind stopped early) nothing is
 * merged: both are shown, labelled.
 */
#include <stdio.h>
#include <string.h>
#include "trace/pystack.h"

#define MERGED_MAX (STACK_MAX_FRAMES + PY_MAX_FRAMES)

struct merged {
	char name[MERGED_MAX][160];
	bool user[MERGED_MAX];
	int n;
};

static bool eval_frame(const struct stack_frame *f)
{
	char name[64];

	return !strcmp(stack_frame_name(f, name, sizeof(name)), "_PyEval_EvalFrameDefault");
}

/* The C library's frames below main() and a thread's start routine */
static bool startup(const char *name)
{
	return !strcmp(name, "start_thread") || !strncmp(name, "__clone", 7) ||
	       !strcmp(name, "_start") || !strncmp(name, "__libc_start", 12);
}

static void add_py(struct merged *m, const struct py_frame *f)
{
	if (m->n >= MERGED_MAX)
		return;
	py_frame_name(f, m->name[m->n], sizeof(m->name[0]));
	m->user[m->n++] = py_frame_is_user(f);
}

static void add_native(struct merged *m, const struct stack_frame *f)
{
	if (m->n >= MERGED_MAX)
		return;
	m->user[m->n] = false;
	stack_frame_name(f, m->name[m->n++], sizeof(m->name[0]));
}

/* group g of py: [*start, *end) */
static bool group(const struct py_thread *py, int g, int *start, int *end)
{
	int s = 0;

	for (int i = 0; i < py->nframes; i++) {
		if (!py->frames[i].entry && i + 1 < py->nframes)
			continue;
		if (g-- == 0) {
			*start = s;
			*end = i + 1;
			return true;
		}
		s = i + 1;
	}
	return false;
}

static int ngroups(const struct py_thread *py)
{
	int n = 0, s, e;

	while (group(py, n, &s, &e))
		n++;
	return n;
}

/*
 * The interpreter's own frames between two runs of the eval loop (its call machinery) are left
 * out; a C extension's frames there stay (a callback from C++ into Python shows who called).
 */
static bool merge(const struct thread_stack *nat, const struct py_thread *py, struct merged *m)
{
	int ne = 0, g = 0, s, e;
	const char *interp = NULL;
	bool inner_python = false;
	bool cut = nat->nframes >= STACK_MAX_FRAMES || py->truncated;

	for (int i = 0; i < nat->nframes; i++)
		ne += eval_frame(&nat->frames[i]);
	if (!ne || (cut ? ne > ngroups(py) : ne != ngroups(py)))
		return false;
	for (int i = 0; i < nat->nframes && !interp; i++)
		if (eval_frame(&nat->frames[i]))
			interp = nat->frames[i].module;
	m->n = 0;
	for (int i = 0; i < nat->nframes; i++) {
		const struct stack_frame *f = &nat->frames[i];
		bool in_interp = !strcmp(f->module, interp);
		char name[64];

		if (eval_frame(f)) {
			if (!group(py, g++, &s, &e))
				return false;
			for (int k = s; k < e; k++)
				add_py(m, &py->frames[k]);
			inner_python = true;
			continue;
		}
		if (startup(stack_frame_name(f, name, sizeof(name))))
			break;
		/*
		 * Below the innermost Python frame, of a run of the interpreter's own frames only
		 * the innermost (the builtin that runs: time_sleep, not the vectorcalls that got
		 * there); above it, none (report and --json keep every frame)
		 */
		if (in_interp &&
		    (inner_python || (i > 0 && !strcmp(nat->frames[i - 1].module, interp))))
			continue;
		add_native(m, f);
	}
	/* the native unwind stopped first: the outer groups follow */
	while (cut && group(py, g++, &s, &e))
		for (int k = s; k < e; k++)
			add_py(m, &py->frames[k]);
	return true;
}

/* m's frames from the top user frame (from) inward, callers first */
static size_t text(const struct merged *m, int from, char *buf, size_t len)
{
	size_t off = 0;

	if (from + 1 < m->n)
		off += snprintf(buf, len, "... -> ");
	for (int i = from; i >= 0 && off < len; i--)
		off += snprintf(buf + off, len - off, "%s%s", m->name[i], i ? " -> " : "");
	return off;
}

static int top_user(const struct merged *m)
{
	for (int i = 0; i < m->n; i++)
		if (m->user[i])
			return i;
	return m->n - 1;
}

bool py_merge_text(const struct thread_stack *native, const struct py_thread *py, char *buf,
		   size_t len)
{
	static __thread struct merged m; /* 13 KB: not on the tick's stack */
	size_t off;

	buf[0] = '\0';
	if (native && py && merge(native, py, &m)) {
		text(&m, top_user(&m), buf, len);
		return true;
	}
	m.n = 0;
	for (int i = 0; py && i < py->nframes; i++)
		add_py(&m, &py->frames[i]);
	off = snprintf(buf, len, "python: ");
	if (off < len)
		off += text(&m, top_user(&m), buf + off, len - off);
	if (!native || !native->nframes || off >= len)
		return false;
	m.n = 0;
	for (int i = 0; i < native->nframes; i++) {
		char name[64];

		if (startup(stack_frame_name(&native->frames[i], name, sizeof(name))))
			break;
		add_native(&m, &native->frames[i]);
	}
	off += snprintf(buf + off, len - off, "; native: ");
	if (off < len)
		text(&m, m.n - 1 < 0 ? 0 : m.n - 1, buf + off, len - off);
	return false;
}
