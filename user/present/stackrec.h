/* SPDX-License-Identifier: MIT */
/*
 * Stacks in the dump and in the report: the `stack` record of a thread's stack taken from
 * outside, and the culprit's and longest waiter's stacks attached to each finding by `report`.
 */
#ifndef NT_STACKREC_H
#define NT_STACKREC_H

#include <jansson.h>
#include "model/snapshot.h"

/*
 * {"type":"stack", ts_ns, pid, tid, syscall, stopped_ns, nccl_call, nccl_api, frames, error,
 * python}: python (absent when the process runs no CPython) is {version, error, read_ns,
 * frames: [{file, line, func}] of thread t (innermost first), merged, text}
 */
json_t *record_stack(const struct snap_stack *s, const struct py_thread *t,
		     const struct py_stacks *py);

/* report: the stacks read so far, the latest per thread (a new object for stackrec_note) */
json_t *stackrec_new(void);
/* a `stack` record read from a dump */
void stackrec_note(json_t *stacks, json_t *rec);
/* the latest stacks of f's culprit (pid) and longest waiter (peer_pid) into f as "stacks" */
void stackrec_attach(json_t *stacks, json_t *f);
/* the stacks of a finding, as report prints them */
void stackrec_print(json_t *f);

#endif /* NT_STACKREC_H */
