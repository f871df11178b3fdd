/* SPDX-License-Identifier: MIT */
/* What pystack.c and pylayouts.c share: one CPython version's layout, as byte offsets. */
#ifndef NT_PYSTACK_PRIV_H
#define NT_PYSTACK_PRIV_H

#include <stddef.h>
#include <stdint.h>

/* -1: the version has no such field */
struct py_layout {
	int minor;	     /* 3.minor */
	uint64_t hexversion; /* PY_VERSION_HEX where the process says it, else 0 */
	int rt_interp_head;  /* _PyRuntime.interpreters.head */
	int rt_main_thread;  /* _PyRuntime.main_thread (pthread_t): 3.9, 3.10 */
	int in_threads_head; /* PyInterpreterState.threads.head (tstate_head before 3.11) */
	int ts_next, ts_thread_id, ts_native_tid;
	int ts_frame;	/* the current frame: tstate->frame (3.9, 3.10), ->current_frame (3.13) */
	int ts_cframe;	/* 3.11, 3.12: tstate->cframe ... */
	int cf_current; /* ... ->current_frame */
	int fr_previous, fr_code;
	int fr_instr;	 /* f_lasti (an int, 3.9, 3.10), else prev_instr / instr_ptr (a pointer) */
	int fr_owner;	 /* 3.11+ */
	int fr_is_entry; /* 3.11 */
	int co_filename, co_name, co_qualname, co_firstlineno, co_linetable;
	int co_code; /* co_code_adaptive: where the instructions start (3.11+) */
	int by_size, by_sval;
	int un_length, un_state, un_ascii_size, un_compact_size;
};

/* 3.12+: a frame the C stack owns (an entry shim), not Python code */
#define PY_OWNED_BY_CSTACK 3
/* how much of _PyRuntime's start pylayout_from_debug reads */
#define PY_DEBUG_OFFSETS_LEN 584

/* The layout of 3.minor from the table (3.9-3.12), or NULL. */
const struct py_layout *pylayout_table(int minor);
/*
 * The layout from the _Py_DebugOffsets at the start of _PyRuntime (buf, n bytes): 0; -ENOENT
 * without the cookie; -ENOTSUP for a version whose debug offsets this reader does not know
 * (*minor set). Pure.
 */
int pylayout_from_debug(const uint8_t *buf, size_t n, struct py_layout *out, int *minor);

#endif /* NT_PYSTACK_PRIV_H */
