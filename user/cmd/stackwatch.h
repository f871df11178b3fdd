/* SPDX-License-Identifier: MIT */
/*
 * Which threads' stacks the session takes, and when: only threads that wait (the main thread
 * and blocked threads of each finding's culprit and longest waiter, and threads blocked in a
 * socket call on a connection that waits, unless starved of CPU), each process at most once a
 * second, never in a healthy job. The Python stacks of each process taken are read with them
 * (nothing stopped), and those alone of a finding's other waiters (the first 32), to group the
 * waiters by the line they are at.
 * The stacks go into the snapshot (snap_proc.stacks, .py) and the dump (`stack` records).
 */
#ifndef NT_STACKWATCH_H
#define NT_STACKWATCH_H

#include <stdbool.h>
#include "diagnose/finding.h"
#include "trace/stacks.h"

struct session;
struct snapshot;
struct snap_stack;
struct stackwatch;

/* s->tracer gives the original return addresses of probed calls (phase stacks) */
struct stackwatch *stackwatch_new(struct session *s);
void stackwatch_free(struct stackwatch *w);
/* Before diagnose(): the latest stacks of each process into the session's snapshot. */
void stackwatch_attach(struct stackwatch *w, struct snapshot *snap);
/*
 * After diagnose(): take the stacks that are due for found[0..n) and the waiting threads, write
 * them to the dump, release threads that had not stopped yet. True when new stacks are in the
 * snapshot (diagnose again to use them).
 */
bool stackwatch_step(struct session *s, const struct finding *found, int n);
/* The job's own waitpid saw a stop of its child (a tracee): see stacks__note_stop. */
void stackwatch_note_stop(struct stackwatch *w, int pid, int status);
/* A SIGCHLD: threads that reached their stop late are let go now, not at the next tick */
void stackwatch_poll(struct stackwatch *w);

/*
 * attach: every thread of pid taken once, now (threads a stop would harm are left alone, as
 * ever), into the dump, its NCCL phases seeded from them; the snapshot keeps the main thread
 * and threads inside NCCL. The threads taken, or -errno.
 */
int stackwatch_take_all(struct session *s, int pid);

/*
 * A thread that did not stop within a take's wait (no CPU came to it in time, on a busy
 * machine) keeps the stack it had, if it had one: that one, said with its age ("unwound 2.8s
 * ago"), tells more than none. The index in prev[0..nprev) of the stack now's thread keeps,
 * or -1 (now is its stack).
 */
int stackwatch_kept(const struct snap_stack *prev, int nprev, const struct thread_stack *now);

/* The cost of the takes so far (NULL without a watch) */
const struct stacks_stats *stackwatch_stats(const struct stackwatch *w);

#endif /* NT_STACKWATCH_H */
