// SPDX-License-Identifier: MIT
/*
 * Where each chain of waits ends (waits.c builds the chains): a process that does not wait, an
 * address nobody traced, or a cycle named by its smallest pid. Memoised, so that all chains
 * together cost O(processes).
 */
#include <stdint.h>
#include "diagnose/rules.h"

/*
 * Where the chain of waits from procs[start] ends. memo[i] holds procs[i]'s end once known (its
 * culprit's position +1, or a negative code): every start that reaches a known node stops
 * there, so all chains together cost O(processes).
 */
#define END_CYCLE    (-1)	 /* on or into a cycle */
#define END_ADDR(ci) (-2 - (ci)) /* at an address nobody traced, through connection ci */
#define ON_WALK	     INT32_MIN

/* The next process on a wait chain (wait[i] >= 0, its peer traced) */
static int next_of(const struct snapshot *s, const int *wait, int i)
{
	return snapshot_proc_at(s, s->conns[wait[i]].peer_pid);
}

/*
 * The smallest pid of the cycle that start leads into; cyc[] caches it for every node met, so
 * the nodes of one cycle (and of the chains into it) cost one walk in all.
 */
static int cycle_name(const struct snapshot *s, const int *wait, int *cyc, int start)
{
	int slow = start, fast = start, name;

	if (cyc[start] > 0)
		return cyc[start];
	/* Floyd: meet inside the cycle, then walk it once */
	do {
		slow = next_of(s, wait, slow);
		fast = next_of(s, wait, next_of(s, wait, fast));
	} while (slow != fast && cyc[slow] <= 0);
	if (cyc[slow] > 0) {
		name = cyc[slow];
	} else {
		name = s->procs[slow].pid;
		for (int i = next_of(s, wait, slow); i != slow; i = next_of(s, wait, i))
			if (s->procs[i].pid < name)
				name = s->procs[i].pid;
		for (int i = next_of(s, wait, slow); cyc[i] <= 0; i = next_of(s, wait, i))
			cyc[i] = name;
	}
	for (int i = start; cyc[i] <= 0; i = next_of(s, wait, i))
		cyc[i] = name;
	return name;
}

struct culprit wait_chain_end(const struct snapshot *s, const int *wait, int *memo, int *cyc,
			      int start)
{
	int cur = start, hops = 0, end;
	struct culprit r = {.conn = -1};

	/* walk until a node that does not wait, an untraced peer, a known end, or a revisit */
	while (memo[cur] == 0 && hops++ <= s->nprocs) {
		int ci = wait[cur], next;

		memo[cur] = ON_WALK;
		if (ci < 0) {
			memo[cur] = cur + 1;
			break;
		}
		next = s->conns[ci].peer_pid > 0 ? snapshot_proc_at(s, s->conns[ci].peer_pid) : -1;
		if (next < 0) {
			memo[cur] = END_ADDR(ci);
			break;
		}
		cur = next;
	}
	end = memo[cur] == ON_WALK ? END_CYCLE : memo[cur];
	/* every node of this walk ends where cur ends */
	for (int i = start; i >= 0 && memo[i] == ON_WALK;) {
		memo[i] = end;
		i = wait[i] >= 0 && s->conns[wait[i]].peer_pid > 0
			    ? snapshot_proc_at(s, s->conns[wait[i]].peer_pid)
			    : -1;
	}
	if (end > 0) {
		r.pid = s->procs[end - 1].pid;
		return r;
	}
	if (end <= -2) {
		r.conn = -2 - end;
		return r;
	}
	/* a cycle: named by its smallest pid, so every start finds the same one */
	r.cycle = true;
	r.pid = cycle_name(s, wait, cyc, start);
	return r;
}
