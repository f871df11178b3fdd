/* SPDX-License-Identifier: MIT */
/*
 * The BPF side, seen from userspace: open -> configure -> load -> attach, with the attach mode
 * for send/receive chosen by trying (fentry, then kprobe, then tracepoints), never by kernel
 * version.
 */
#ifndef NT_TRACER_H
#define NT_TRACER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nccltrace.h"

struct tracer;

/* Called for every ring-buffer record; data starts with struct nt_ev_hdr. */
typedef int (*tracer_event_fn)(void *ctx, const void *data, size_t size);

struct tracer_opts {
	enum nt_attach_mode mode; /* NT_MODE_AUTO: try them in order */
	tracer_event_fn on_event;
	void *ctx;
	/* the verbs structs' offsets the verbs probes read, NULL: none */
	const struct nt_verbs_offsets *verbs;
	/* records a second each process may send per class; 0: NT_BUDGET_DEFAULT */
	uint32_t budget_per_s;
	/* the ring buffer's size in bytes (a power of 2, at least a page); 0: 1 MiB */
	uint32_t ringbuf_bytes;
};

/*
 * The most records one tracer__poll() hands on, and the longest it reads (a record may cost its
 * handler a process's probes attached): a flood cannot keep the caller from its tick
 */
#define TRACER_POLL_MAX 4096
#define TRACER_POLL_NS	(50 * 1000 * 1000ULL)

/* 0 or -errno; on failure, err holds one line saying what failed and why. */
int tracer__open(const struct tracer_opts *opts, struct tracer **out, char *err, size_t errlen);
void tracer__close(struct tracer *t);

enum nt_attach_mode tracer__mode(const struct tracer *t);
/* "auto", "fentry", "kprobe", "tracepoint" (pure) */
const char *tracer_mode_name(enum nt_attach_mode m);
/* why the modes before the chosen one were not used, "" if none was tried */
const char *tracer__mode_notes(const struct tracer *t);
/* names of optional hooks that could not be attached, "" if all were */
const char *tracer__missing_hooks(const struct tracer *t);

int tracer__track_pid(struct tracer *t, int pid);
int tracer__ringbuf_fd(const struct tracer *t);
/*
 * Consume pending ring-buffer records, at most TRACER_POLL_MAX or for TRACER_POLL_NS; returns
 * how many or -errno. What is left stays for the next call (the ring buffer's fd stays
 * readable).
 */
int tracer__poll(struct tracer *t);
/*
 * Everything the ring buffer holds, poll after poll (the job's end: its last records, its
 * processes' exits among them, come before the footer); at most TRACER_DRAIN_POLLS polls.
 * How many records, or -errno.
 */
#define TRACER_DRAIN_POLLS 64
int tracer__drain(struct tracer *t);

/* Visit every tracked connection; stop early if fn returns non-zero. */
int tracer__each_conn(struct tracer *t, int (*fn)(void *ctx, uint64_t sk, const struct nt_conn *c),
		      void *ctx);
/* Offsets of NCCL's struct fields for library slot (0..NT_MAX_LIBS-1). 0 or -errno. */
int tracer__set_nccl_offsets(struct tracer *t, int slot, const struct nt_nccl_offsets *o);

/* The BPF side's phase stack of thread tid (its polling of the polled probes included). */
int tracer__phase_stack(struct tracer *t, int tid, struct nt_phase_stack *out);
/* Visit every thread's phase stack (tgid in it); stop early if fn returns non-zero. */
int tracer__each_stack(struct tracer *t,
		       int (*fn)(void *ctx, int tid, const struct nt_phase_stack *st), void *ctx);

struct tracer_uprobes;
/*
 * Uprobes (or uretprobes) at offsets in the file path, for process pid only, each carrying its
 * cookie: one uprobe_multi link where the kernel has them, else one link per probe. Returns how
 * many are attached (*out then the caller's to detach), or -errno when none is (*out untouched).
 */
int tracer__attach_uprobes(struct tracer *t, int pid, const char *path, const uint64_t *offs,
			   const uint64_t *cookies, int n, bool ret, struct tracer_uprobes **out);
void tracer__detach_uprobes(struct tracer_uprobes *u);

/*
 * Detach (on=false) or re-attach the per-call hooks: send/receive and tcp_probe. The process
 * tree, TCP state changes, retransmits, resets and uprobes stay. 0 or -errno (then still off).
 */
int tracer__set_data_hooks(struct tracer *t, bool on);
bool tracer__data_hooks_on(const struct tracer *t);

/* Sum of the per-CPU counters */
int tracer__stats(struct tracer *t, uint64_t out[NT_STAT_MAX]);
/* The records over the budget, per NCCL probe (summed over the CPUs) */
int tracer__suppressed(struct tracer *t, uint64_t out[NT_P_MAX]);

#endif /* NT_TRACER_H */
