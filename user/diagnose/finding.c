// SPDX-License-Identifier: MIT
/* What every rule family uses to build a finding: kinds, evidence, culprit and waiter text. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "diagnose/rules.h"
#include "util/fmt.h"

static const char *const kind_names[FINDING_KIND_MAX] = {
	[FINDING_STALL] = "stall",
	[FINDING_RING_SETUP_BLOCKED] = "ring_setup_blocked",
	[FINDING_INIT_BLOCKED] = "init_blocked",
	[FINDING_COLLECTIVE_MISMATCH] = "collective_mismatch",
	[FINDING_PEER_DEAD] = "peer_dead",
	[FINDING_PEER_STOPPED] = "peer_stopped",
	[FINDING_STRAGGLER] = "straggler",
	[FINDING_CONN_ERROR] = "conn_error",
	[FINDING_IB_ERROR] = "ib_error",
	[FINDING_GPU_ERROR] = "gpu_error",
	[FINDING_CONFIG] = "config",
};

const char *finding_kind_name(enum finding_kind k)
{
	return (unsigned int)k < FINDING_KIND_MAX ? kind_names[k] : "?";
}

int finding_kind_parse(const char *s)
{
	for (int i = 0; i < FINDING_KIND_MAX; i++)
		if (strcmp(s, kind_names[i]) == 0)
			return i;
	return -1;
}

__attribute__((format(printf, 2, 3))) void add_evidence(struct finding *f, const char *fmt_, ...)
{
	va_list ap;

	if (f->nevidence >= DIAG_MAX_EVIDENCE)
		return;
	va_start(ap, fmt_);
	vsnprintf(f->evidence[f->nevidence++], sizeof(f->evidence[0]), fmt_, ap);
	va_end(ap);
}

void describe_status(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
}

void describe_culprit(const struct snap_proc *p, struct finding *f)
{
	char st[64];

	if (p->exited) {
		describe_status(p->exit_status, st, sizeof(st));
		snprintf(f->phase, sizeof(f->phase), "%s", st);
		return;
	}
	switch (p->state) {
	case 'T':
	case 't':
		snprintf(f->phase, sizeof(f->phase), "stopped (state %c)", p->state);
		break;
	case 'R':
		snprintf(f->phase, sizeof(f->phase),
			 "running outside socket calls (busy elsewhere)");
		break;
	case 'D':
		snprintf(f->phase, sizeof(f->phase), "uninterruptible sleep%s%s",
			 p->where[0] ? " in " : "", p->where);
		break;
	default:
		snprintf(f->phase, sizeof(f->phase), "sleeping%s%s", p->where[0] ? " in " : "",
			 p->where);
		break;
	}
	if (p->nccl_phase[0]) {
		size_t l = strlen(f->phase);

		snprintf(f->phase + l, sizeof(f->phase) - l, ", in NCCL %s", p->nccl_phase);
	} else if (p->nccl && !p->exited) {
		size_t l = strlen(f->phase);

		snprintf(f->phase + l, sizeof(f->phase) - l, ", outside NCCL");
	}
}

void state_evidence(const struct snap_proc *p, struct finding *f)
{
	if (p->exited)
		add_evidence(f, "pid %d %s", p->pid, f->phase);
	else
		add_evidence(f, "/proc/%d/stat state %c%s%s, %.2fs CPU in the last second", p->pid,
			     p->state, p->where[0] ? ", main thread in " : "", p->where,
			     (double)p->cpu_busy_ns / NT_NSEC_PER_SEC);
}

/*
 * "rank 2", "ranks 0-19,21-31 (31)", "pids 11,12", "ranks 0,2 and pid 12": ranks as ranges in
 * order, then the processes without a rank; the count where it is more than a few.
 */
void waiter_list(const struct snapshot *s, const struct finding *f, char *buf, size_t len)
{
	int nw = f->nwaiters, ranks[nw > 0 ? nw : 1], pids[nw > 0 ? nw : 1], nr = 0, np = 0;
	int total = f->nwaiters_total > nw ? f->nwaiters_total : nw;
	char rs[256] = "", ps[128] = "";

	(void)s;
	for (int k = 0; k < nw; k++) {
		if (f->waiters[k].rank >= 0)
			ranks[nr++] = f->waiters[k].rank;
		else
			pids[np++] = f->waiters[k].pid;
	}
	if (nr)
		fmt_ranges(ranks, nr, rs, sizeof(rs));
	if (np)
		fmt_ranges(pids, np, ps, sizeof(ps));
	if (nr && np)
		snprintf(buf, len, "rank%s %s and pid%s %s", nr > 1 ? "s" : "", rs,
			 np > 1 ? "s" : "", ps);
	else if (nr)
		snprintf(buf, len, "rank%s %s", nr > 1 ? "s" : "", rs);
	else
		snprintf(buf, len, "pid%s %s", np > 1 ? "s" : "", ps);
	if (total > 4) {
		size_t l = strlen(buf);

		snprintf(buf + l, len - l, " (%d)", total);
	}
}

struct finding *new_finding(struct finding *out, int *n, int max)
{
	struct finding *f;

	if (*n >= max)
		return NULL;
	f = &out[(*n)++];
	memset(f, 0, sizeof(*f));
	f->conn = -1;
	f->rank = f->peer_rank = -1;
	return f;
}

/* A new finding about process p (its rank), waiting since since_ns; NULL when out is full. */
struct finding *proc_finding(struct finding *out, int *n, int max, enum finding_kind kind,
			     const struct snap_proc *p, uint64_t since_ns)
{
	struct finding *f = new_finding(out, n, max);

	if (f) {
		f->kind = kind;
		f->pid = p->pid;
		f->rank = p->rank;
		f->since_ns = since_ns;
	}
	return f;
}

void remove_finding(struct finding *out, int *n, int i)
{
	memmove(&out[i], &out[i + 1], (*n - i - 1) * sizeof(out[0]));
	(*n)--;
}

bool named_in(const struct finding *out, int n, int pid)
{
	for (int i = 0; i < n; i++) {
		if (out[i].pid == pid)
			return true;
		for (int k = 0; k < out[i].nwaiters; k++)
			if (out[i].waiters[k].pid == pid)
				return true;
	}
	return false;
}

bool *named_set(const struct snapshot *s, const struct finding *out, int n)
{
	bool *set = calloc(s->nprocs > 0 ? s->nprocs : 1, sizeof(bool));

	for (int i = 0; set && i < n; i++) {
		int at = out[i].pid > 0 ? snapshot_proc_at(s, out[i].pid) : -1;

		if (at >= 0)
			set[at] = true;
		for (int k = 0; k < out[i].nwaiters; k++)
			if ((at = snapshot_proc_at(s, out[i].waiters[k].pid)) >= 0)
				set[at] = true;
	}
	return set;
}

void push_waiter(const struct snapshot *s, struct finding *f, int pid)
{
	const struct snap_proc *p = snapshot_proc(s, pid);

	f->nwaiters_total = (f->nwaiters_total > f->nwaiters ? f->nwaiters_total : f->nwaiters) + 1;
	if (f->nwaiters == DIAG_MAX_WAITERS)
		return;
	f->waiters[f->nwaiters].pid = pid;
	f->waiters[f->nwaiters].rank = p ? p->rank : -1;
	f->nwaiters++;
}

void add_waiter(const struct snapshot *s, struct finding *f, int pid)
{
	for (int k = 0; k < f->nwaiters; k++)
		if (f->waiters[k].pid == pid)
			return;
	push_waiter(s, f, pid);
}

const char *setup_name(int cls)
{
	return cls == SNAP_SETUP_INIT ? "communicator init" : "transport setup";
}
