/* SPDX-License-Identifier: MIT */
/*
 * The user-space stacks of chosen threads of a process, taken from outside: each thread is
 * stopped alone with PTRACE_SEIZE + PTRACE_INTERRUPT (a ptrace-stop, which the kernel ends by
 * itself if nccltrace dies, and no signal), unwound with libdwfl from .eh_frame, and detached at
 * once; the symbols are looked up after it runs again. One libdwfl session per process is kept,
 * and its modules are reported again only when the process's file mappings change.
 */
#ifndef NT_STACKS_H
#define NT_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STACK_MAX_FRAMES 32

struct stack_frame {
	uint64_t pc; /* the address looked up: a return address less 1 above the innermost frame */
	/* from the symbol's start, or, when the address is inside no symbol, the module's address */
	uint64_t offset;
	char module[160]; /* the mapped file ("/usr/lib/x86_64-linux-gnu/libc.so.6"), "" if none */
	char symbol[128]; /* as the ELF file has it (mangled); "" when inside no symbol */
	uint64_t size;	  /* the symbol's size, 0 if none or unknown */
	/*
	 * Inside no symbol (a function a stripped file does not export): the nearest function
	 * symbol below it, and pc's offset from it. Not where the thread is, only a landmark for
	 * who reads the file's exports ("" if none)
	 */
	char near[64];
	uint64_t near_offset;
};

struct thread_stack {
	int pid, tid;
	uint64_t taken_ns;   /* CLOCK_MONOTONIC when it was stopped */
	uint64_t stopped_ns; /* how long it was stopped: from its stop seen to the detach */
	uint64_t held_ns;    /* from the seize to the detach: the wait for it to stop too */
	char syscall[32]; /* what it was blocked in, from /proc/PID/task/TID/syscall; "" running */
	char error[160];  /* why there are no frames (or fewer); "" when none */
	bool exited;	  /* the thread exited during the take */
	bool timed_out;	  /* it did not stop in time (held until it does): where it is, unknown */
	int wait_status;  /* its wait(2) status then: a tracer reaps its tracees' exits */
	int nframes;
	struct stack_frame frames[STACK_MAX_FRAMES]; /* innermost first */
};

/* The cost of the takes so far (docs/benchmarks.md). */
struct stacks_stats {
	uint64_t takes;		 /* threads stopped */
	uint64_t stopped_ns;	 /* their pauses together (stop seen to detach) */
	uint64_t max_stopped_ns; /* the longest */
	uint64_t held_ns;	 /* seize to detach, together */
	uint64_t max_held_ns;
	uint64_t reports;   /* module reports (a process's file mappings changed) */
	uint64_t report_ns; /* time in them */
};

struct stacks;

/* A call in progress whose return a uretprobe hijacked, as the probe's entry saw it. */
struct stack_return {
	uint64_t entry; /* the probed function's address */
	uint64_t ret;	/* the caller's return address the uretprobe replaced */
};

/*
 * returns (may be NULL): thread tid's probed calls in progress, most recent first, into
 * out[0..max); their count, or < 0 if unknown.
 */
struct stacks *stacks__new(int (*returns)(void *ctx, int tid, struct stack_return *out, int max),
			   void *ctx);
/* Every session closed; a thread that has not stopped yet is released (by the kernel, at the
 * latest when this process exits). */
void stacks__free(struct stacks *st);

/*
 * The stacks of threads tids[0..n) of process pid, into out[0..n), one thread stopped at a time.
 * A thread that cannot be taken (exited, zombie, uninterruptible, in a call a stop would make
 * fail with EINTR, not permitted) gets its reason in error and no frames. Returns 0, or -errno
 * when the process cannot be read at all (why says it in one line): -EPERM (another tracer,
 * Yama's ptrace_scope), -ESRCH (gone).
 */
int stacks__take(struct stacks *st, int pid, const int *tids, int n, struct thread_stack *out,
		 char *why, size_t len);
/*
 * Threads that had not stopped within the take's wait (they were running a long system call)
 * are detached as soon as they stop: call this often (each tick) while it returns > 0, the
 * number still held.
 */
int stacks__poll(struct stacks *st);
/* How long a take waits for a thread's stop (20 ms); the test driver sets 0 to make takes that
 * give up, and retakes of threads still held */
void stacks__set_stop_wait(struct stacks *st, uint64_t ns);
/*
 * A wait here reaped the exit of pid's group leader (a tracer has to): true once, with its
 * wait(2) status, for the caller that is pid's parent (nccltrace runs the job) to take as its own.
 */
bool stacks__reaped(struct stacks *st, int pid, int *status);
/*
 * The caller's own waitpid on its child tid got a stop (a tracee's stops reach a parent that is
 * also its tracer): a held thread is then detached with the signal of that stop.
 */
void stacks__note_stop(struct stacks *st, int tid, int status);
/* The process exited (or exec'd into something else): its session is dropped. */
void stacks__forget(struct stacks *st, int pid);
const struct stacks_stats *stacks__stats(const struct stacks *st);

/*
 * A name to show: "ncclTransportP2pSetup" for "_Z21ncclTransportP2pSetupP8ncclCommP13ncclTopo
 * GraphiPi", "a::b" for a nested one, "read" for "read@GLIBC_2.2.5". Pure; returns buf.
 */
const char *stack_short_name(const char *sym, char *buf, size_t len);
/* A frame's name: its symbol's short name, else "libnccl.so.2+0x1234" (module+offset). Pure. */
const char *stack_frame_name(const struct stack_frame *f, char *buf, size_t len);
/* "libnccl.so.2" for "/x/y/libnccl.so.2". Pure. */
const char *stack_module_base(const char *module);

#endif /* NT_STACKS_H */
