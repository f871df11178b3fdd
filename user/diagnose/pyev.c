// SPDX-License-Identifier: MIT
/*
 * The Python side of a finding, from the main threads' Python stacks (snap_proc.py, read from
 * outside while the finding is open): the summary names the culprit's top user frame ("rank 1
 * (pid 4711) is in train.py:142 save_checkpoint, sleeping in clock_nanosleep"); one line says
 * where the waiters are, one representative stack per group of waiters at the same line; and a
 * culprit at another line than its waiters is the divergence in user code that most CPU-side
 * hangs are (the ranks took different paths), named as a hypothesis with that evidence.
 */
#include <stdio.h>
#include <string.h>
#include "diagnose/rules.h"
#include "util/fmt.h"

/* Python stacks older than this are not evidence of now (stackev.c's rule for native ones) */
#define PY_FRESH_NS (10 * NT_NSEC_PER_SEC)
#define MAX_GROUPS  3

/* pid's main thread's Python stack, when fresh */
static const struct py_thread *main_py(const struct snapshot *s, int pid)
{
	const struct snap_proc *p = pid > 0 ? snapshot_proc(s, pid) : NULL;
	const struct py_thread *t;

	if (!p || !p->py ||
	    (p->py->taken_ns < s->now_ns && s->now_ns - p->py->taken_ns > PY_FRESH_NS))
		return NULL;
	t = py_stacks_thread(p->py, pid);
	return t && t->nframes ? t : NULL;
}

/* "train.py:142" of f: where a rank is, to compare */
static void where_of(const struct py_frame *f, char *buf, size_t len)
{
	char name[200];

	py_frame_name(f, name, sizeof(name));
	/* the function goes: "train.py:142 save_checkpoint" -> "train.py:142" */
	name[strcspn(name, " ")] = '\0';
	snprintf(buf, len, "%.100s", name);
}

/* "job.py:42 (sleeper)" or, with the Python call it is in, "job.py:50 (ring_step -> recv)" */
static void at_text(const struct py_thread *t, const struct py_frame *top, char *buf, size_t len)
{
	char where[160];
	int i = (int)(top - t->frames);

	where_of(top, where, sizeof(where));
	if (i > 0)
		snprintf(buf, len, "%.100s (%.40s -> %.40s)", where, top->func,
			 t->frames[i - 1].func);
	else
		snprintf(buf, len, "%.100s (%.40s)", where, top->func);
}

/*
 * "train.py:200 main -> train.py:120 step -> torch/distributed/distributed_c10d.py:2501
 * all_reduce": the top frame between its caller and the call it is in
 */
static void caller_text(const struct py_thread *t, char *buf, size_t len)
{
	const struct py_frame *top = py_top_frame(t);
	int i = (int)(top - t->frames);
	size_t off = 0;
	char name[200];

	for (int k = i + 1 < t->nframes ? i + 1 : i; k >= 0 && k >= i - 1 && off < len; k--)
		off += snprintf(buf + off, len - off, "%s%.90s", off ? " -> " : "",
				py_frame_name(&t->frames[k], name, sizeof(name)));
}

/*
 * Insert the top frame into the summary after "(pid N) is ", else after "(pid N)", else after
 * "rank R is " (a finding told by the counters names no pid), else at its end.
 */
static void summary_top(struct finding *f, const struct py_frame *top)
{
	char pid[32], rank[32], name[200], out[sizeof(f->summary)];
	const char *at;
	size_t pre;

	snprintf(pid, sizeof(pid), "(pid %d)", f->pid);
	snprintf(rank, sizeof(rank), "rank %d is ", f->rank);
	py_frame_name(top, name, sizeof(name));
	if ((at = strstr(f->summary, pid))) {
		pre = (size_t)(at - f->summary) + strlen(pid);
	} else if (f->rank >= 0 && (at = strstr(f->summary, rank))) {
		pre = (size_t)(at - f->summary) + strlen(rank) - 4;
	} else {
		size_t n = strlen(f->summary);

		snprintf(f->summary + n, sizeof(f->summary) - n, "; %s %d is in %s",
			 f->rank >= 0 ? "rank" : "pid", f->rank >= 0 ? f->rank : f->pid, name);
		return;
	}
	if (!strncmp(f->summary + pre, " is ", 4)) {
		pre += 4;
		snprintf(out, sizeof(out), "%.*sin %s, %s", (int)pre, f->summary, name,
			 f->summary + pre);
	} else {
		snprintf(out, sizeof(out), "%.*s at %s%s", (int)pre, f->summary, name,
			 f->summary + pre);
	}
	snprintf(f->summary, sizeof(f->summary), "%s", out);
}

struct group {
	char where[160];
	const struct py_thread *t; /* the representative: the longest waiter's if in it */
	int ranks[64], nranks;
};

/* the waiters of f by their main threads' top frame; the longest waiter's group first */
static int waiter_groups(const struct snapshot *s, const struct finding *f, struct group *g)
{
	int ng = 0;

	for (int k = -1; k < f->nwaiters; k++) {
		int pid = k < 0 ? f->peer_pid : f->waiters[k].pid;
		int rank = k < 0 ? f->peer_rank : f->waiters[k].rank;
		const struct py_thread *t = pid != f->pid ? main_py(s, pid) : NULL;
		char where[160];
		int i;

		if (!t || (k >= 0 && pid == f->peer_pid))
			continue;
		where_of(py_top_frame(t), where, sizeof(where));
		for (i = 0; i < ng && strcmp(g[i].where, where); i++)
			;
		if (i == ng) {
			if (ng == MAX_GROUPS)
				continue;
			memset(&g[ng], 0, sizeof(g[ng]));
			snprintf(g[ng].where, sizeof(g[ng].where), "%s", where);
			g[ng++].t = t;
		}
		if (g[i].nranks < 64)
			g[i].ranks[g[i].nranks++] = rank >= 0 ? rank : pid;
	}
	return ng;
}

/* hyp as f's first hypothesis: the others move down, the last goes when full */
static void first_hypothesis(struct finding *f, const char *hyp)
{
	int n = f->nhyp < DIAG_MAX_HYP ? f->nhyp : DIAG_MAX_HYP - 1;

	memmove(f->hypotheses[1], f->hypotheses[0], n * sizeof(f->hypotheses[0]));
	snprintf(f->hypotheses[0], sizeof(f->hypotheses[0]), "%s", hyp);
	f->nhyp = n + 1;
}

void py_evidence(const struct snapshot *s, struct finding *f)
{
	const struct py_thread *c = f->kind == FINDING_CONFIG ? NULL : main_py(s, f->pid);
	struct group g[MAX_GROUPS];
	char line[sizeof(f->evidence[0])], hyp[sizeof(f->hypotheses[0])], who[32], cat[200];
	char wat[200], ranks[160];
	int ng;
	size_t off;

	if (f->kind == FINDING_CONFIG)
		return;
	if (c)
		summary_top(f, py_top_frame(c));
	ng = waiter_groups(s, f, g);
	if (!ng)
		return;
	off = snprintf(line, sizeof(line), "waiting, in Python: ");
	for (int i = 0; i < ng && off < sizeof(line); i++) {
		fmt_ranges(g[i].ranks, g[i].nranks, ranks, sizeof(ranks));
		caller_text(g[i].t, cat, sizeof(cat));
		off += snprintf(line + off, sizeof(line) - off, "%s%s %s: %s", i ? "; " : "",
				g[i].nranks > 1 ? "ranks" : "rank", ranks, cat);
	}
	add_evidence(f, "%s", line);
	if (!c || !py_frame_is_user(py_top_frame(c)) || !py_frame_is_user(py_top_frame(g[0].t)))
		return;
	where_of(py_top_frame(c), cat, sizeof(cat));
	if (!strcmp(cat, g[0].where))
		return;
	at_text(c, py_top_frame(c), cat, sizeof(cat));
	at_text(g[0].t, py_top_frame(g[0].t), wat, sizeof(wat));
	if (f->rank >= 0)
		snprintf(who, sizeof(who), "rank %d", f->rank);
	else
		snprintf(who, sizeof(who), "pid %d", f->pid);
	off = snprintf(hyp, sizeof(hyp), "%s is at %s, the others at %s", who, cat, wat);
	if (off < sizeof(hyp))
		snprintf(hyp + off, sizeof(hyp) - off, "%s",
			 ": the ranks took different paths (their main threads' Python stacks)");
	first_hypothesis(f, hyp);
}
