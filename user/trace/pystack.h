/* SPDX-License-Identifier: MIT */
/*
 * The Python stacks of a CPython process, read from its memory without stopping it
 * (process_vm_readv, as py-spy does): each thread's frames, file:line and function, innermost
 * first. The interpreter is found in /proc/PID/maps (a python binary, or libpython in a venv or
 * conda), _PyRuntime by its ELF symbol; CPython 3.13 and later are read through the
 * _Py_DebugOffsets they publish at the start of _PyRuntime, 3.9-3.12 through layouts taken from
 * their own headers (pylayouts.c). Another version is said in one line, never guessed.
 *
 * process_vm_readv needs what ptrace needs (PTRACE_MODE_ATTACH_REALCREDS): the same user and
 * Yama's ptrace_scope allowing it, or CAP_SYS_PTRACE.
 */
#ifndef NT_PYSTACK_H
#define NT_PYSTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "trace/stacks.h"

#define PY_MAX_FRAMES  48
#define PY_MAX_THREADS 8

struct py_frame {
	char file[128]; /* co_filename as the code object has it */
	char func[64];	/* co_qualname (3.11+), else co_name */
	int line;	/* 0 if none (an instruction without a line) */
	/* the outermost frame of one run of the eval loop (a C call into it): where the native
	 * stack has a _PyEval_EvalFrameDefault frame above it */
	bool entry;
};

struct py_thread {
	int tid;	/* its OS thread id; 0 when the version keeps none (3.9, 3.10) */
	bool main;	/* the interpreter's main thread */
	bool truncated; /* deeper than PY_MAX_FRAMES: the outermost are missing */
	int nframes;
	struct py_frame frames[PY_MAX_FRAMES]; /* innermost first */
};

struct py_stacks {
	int pid;
	uint64_t taken_ns; /* CLOCK_MONOTONIC */
	uint64_t read_ns;  /* how long the reads took (the process ran meanwhile) */
	char version[16];  /* "3.11", "" when not CPython */
	/* why there are no stacks, one line ("CPython 3.15: Python stack unknown"), or "" */
	char error[200];
	int nthreads;
	struct py_thread threads[PY_MAX_THREADS]; /* the main thread first */
};

struct pystacks;

struct pystacks *pystacks__new(void);
void pystacks__free(struct pystacks *ps);
/*
 * The Python stacks of pid into out. 0 with out filled; -ENOENT when pid runs no CPython
 * (out->error empty); any other -errno with out->error saying why in one line (-ENOTSUP: a
 * version this reader does not know; -EPERM: not permitted).
 */
int pystacks__take(struct pystacks *ps, int pid, struct py_stacks *out);
/* pid exited or exec'd: what was found about its interpreter is dropped */
void pystacks__forget(struct pystacks *ps, int pid);

/* The thread of tid in s (the main thread for tid == pid when no tids are known), or NULL. */
const struct py_thread *py_stacks_thread(const struct py_stacks *s, int tid);

/*
 * The line of the instruction at addr (in code units for 3.10's bytes, see pylayouts.c) of a
 * code object whose first line is first, from its line table tab[0..n), in the format of
 * version minor (3.9: co_lnotab; 3.10: co_linetable pairs; 3.11+: the location table). 0 when
 * the instruction has no line. Pure.
 */
int py_addr2line(int minor, const uint8_t *tab, size_t n, int first, int addr);

/*
 * "file:line func" of a frame, the file cut to what the user knows: "train.py",
 * "torch/serialization.py" for a file under site-packages or the standard library. Pure.
 */
const char *py_frame_name(const struct py_frame *f, char *buf, size_t len);
/* A frame of the user's own code: not the standard library, not an installed package. Pure. */
bool py_frame_is_user(const struct py_frame *f);
/* The innermost user frame of t, else its innermost frame; NULL without frames. Pure. */
const struct py_frame *py_top_frame(const struct py_thread *t);

/*
 * Native and Python frames as one stack into buf, each native frame of the eval loop
 * (_PyEval_EvalFrameDefault) replaced by the Python frames it runs, read from the caller to the
 * callee and starting at the top user frame's: "train.py:142 save_checkpoint -> torch/
 * serialization.py:652 save -> ... -> write". True when merged; false when the two do not line
 * up (the text then holds both, labelled "python:" and "native:"). Pure.
 */
bool py_merge_text(const struct thread_stack *native, const struct py_thread *py, char *buf,
		   size_t len);

#endif /* NT_PYSTACK_H */
