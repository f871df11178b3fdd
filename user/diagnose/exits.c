// SPDX-License-Identifier: MIT
/*
 * Deaths: the first process to exit abnormally while connected to live processes, and the
 * deaths that are no cause at all, a job torn down by its launcher or its user.
 */
#include <stdio.h>
#include <sys/wait.h>
#include "diagnose/rules.h"
#include "util/fmt.h"

/*
 * A launcher ending a job (its timeout, torchrun after a failure, mpirun, Ctrl-C) signals every
 * rank at once, and they die within milliseconds of each other, a little more on a loaded node.
 * Which of them the kernel finishes first says nothing.
 */
#define TEARDOWN_NS (NT_NSEC_PER_SEC / 2)

/* Did q die of signal sig within TEARDOWN_NS of when? */
static bool killed_near(const struct snap_proc *q, int sig, uint64_t when)
{
	uint64_t d;

	if (!q || !q->exited || !WIFSIGNALED(q->exit_status) || WTERMSIG(q->exit_status) != sig)
		return false;
	d = q->exit_ns > when ? q->exit_ns - when : when - q->exit_ns;
	return d <= TEARDOWN_NS;
}

bool torn_down(const struct snapshot *s, const struct snap_proc *p)
{
	int at = snapshot_proc_at(s, p->pid), n = 0;
	const int *ci = at >= 0 && s->ix ? snapshot_conns_of(s, at, &n) : NULL;
	int sig;

	if (!p->exited || !WIFSIGNALED(p->exit_status))
		return false;
	/* too soon to tell: the others' signals may still be on their way, unless all is over */
	if (!s->job_over && s->now_ns < p->exit_ns + TEARDOWN_NS)
		return true;
	sig = WTERMSIG(p->exit_status);
	for (int k = 0; k < n; k++) {
		const struct snap_conn *c = &s->conns[ci[k]];

		if (c->peer_pid > 0 && c->peer_pid != p->pid &&
		    killed_near(snapshot_proc(s, c->peer_pid), sig, p->exit_ns))
			return true;
	}
	return false;
}

/* The first abnormal exit of a process that had connections to processes alive at the time. */
static int first_abnormal_exit(const struct snapshot *s)
{
	int best = -1;

	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_proc *p = &s->procs[i];
		bool connected = false;
		int n = 0;
		const int *ci = s->ix ? snapshot_conns_of(s, i, &n) : NULL;

		if (!p->exited || (WIFEXITED(p->exit_status) && WEXITSTATUS(p->exit_status) == 0))
			continue;
		/* killed while waiting inside NCCL setup: the launcher tearing the job down */
		if (p->nccl_setup != SNAP_SETUP_NONE || torn_down(s, p))
			continue;
		for (int k = 0; k < n && !connected; k++) {
			const struct snap_conn *c = &s->conns[ci[k]];
			const struct snap_proc *q;

			if (c->peer_pid <= 0)
				continue;
			q = snapshot_proc(s, c->peer_pid);
			connected = q && (!q->exited || q->exit_ns > p->exit_ns);
		}
		if (connected && (best < 0 || p->exit_ns < s->procs[best].exit_ns))
			best = i;
	}
	return best;
}

/* Its connections to other traced processes, a few, as evidence; the first is its peer */
static void exit_conns(const struct snapshot *s, const struct snap_proc *p, struct finding *f)
{
	int n = 0, shown = 0;
	const int *ci = snapshot_conns_of(s, snapshot_proc_at(s, p->pid), &n);

	for (int k = 0; k < n; k++) {
		const struct snap_conn *c = &s->conns[ci[k]];
		char tup[112], pn[48];

		if (c->peer_pid <= 0 || c->peer_pid == p->pid)
			continue;
		/* a few: room stays for NCCL's own words */
		if (shown++ == 4)
			break;
		if (!f->peer_pid) {
			const struct snap_proc *q = snapshot_proc(s, c->peer_pid);

			f->peer_pid = c->peer_pid;
			f->peer_rank = q ? q->rank : -1;
		}
		snap_proc_name(snapshot_proc(s, c->peer_pid), c->peer_pid, pn, sizeof(pn));
		add_evidence(f, "its conn %s to %s", fmt_tuple(&c->c.t, tup, sizeof(tup)), pn);
	}
}

/* A process that died abnormally while its peers were alive, even if nobody waits yet. */
void exit_findings(const struct snapshot *s, struct finding *out, int *n, int max)
{
	int dead = first_abnormal_exit(s);
	const struct snap_proc *p = dead >= 0 ? &s->procs[dead] : NULL;
	struct finding *f;
	char cn[48], st[48];

	if (!p)
		return;
	/* a wait chain that ends there has told it already */
	for (int i = 0; i < *n; i++)
		if (out[i].pid == p->pid)
			return;
	f = proc_finding(out, n, max, FINDING_PEER_DEAD, p, p->exit_ns);
	if (!f)
		return;
	describe_status(p->exit_status, st, sizeof(st));
	snprintf(f->phase, sizeof(f->phase), "%s", st);
	snap_proc_name(p, p->pid, cn, sizeof(cn));
	snprintf(f->summary, sizeof(f->summary), "%s %s while connected to live processes", cn, st);
	add_evidence(f, "pid %d %s", p->pid, st);
	exit_conns(s, p, f);
}
