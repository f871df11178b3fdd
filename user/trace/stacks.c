// SPDX-License-Identifier: MIT
/*
 * Stacks of waiting threads, taken from outside with libdwfl.
 *
 * One file (920 lines): the seize, the stop's wait, the unwind, the detach and the held
 * threads' release share one state (struct stacks, its dwfl per process, the held list) and
 * one order of steps that a crash of the tracer must never break; split, each part would need
 * the others' internals. Symbol names are already apart (stacknames.c).
 *
 * Why not libdwfl's own attach: it uses PTRACE_ATTACH, which sends SIGSTOP, and a tracer that
 * dies between the attach and the detach leaves the process stopped. A PTRACE_SEIZE +
 * PTRACE_INTERRUPT stop is a ptrace-stop without any signal: when the tracer dies, the kernel
 * detaches it (exit_ptrace) and the thread runs on; a process that was in a group-stop (SIGSTOP,
 * state T) goes back to it, as after any detach. So each chosen thread is seized, interrupted,
 * unwound and detached, one thread at a time; symbols are looked up after the thread runs
 * again, and the modules' ELF files and .eh_frame are opened before any thread is stopped (at
 * report time), so the pause is the unwind itself.
 *
 * libdwfl unwinds through thread callbacks of our own (dwfl_attach_state), not
 * dwfl_linux_proc_attach's: the registers come from the thread we hold, the memory from
 * process_vm_readv, and a return address that a uretprobe replaced with its trampoline (the
 * start of the [uprobes] mapping; nccltrace's own NCCL probes do this to every call in
 * progress that they watch) is read as the original, which the probe's entry kept (the caller
 * gives them: the session reads them from the probes' phase stacks). Without that, every stack
 * of a thread inside a probed NCCL call would end at the trampoline.
 *
 * A stop ends the thread's system call for a moment; the kernel restarts most of them by
 * itself (ERESTARTSYS and restart_syscall), but a few return EINTR to the program even without a
 * signal handler (signal(7), "Interruption of system calls and library functions by stop
 * signals"): epoll_wait, epoll_pwait, semop, semtimedop, sigtimedwait. A thread blocked in one of
 * those is not stopped. The socket calls join that list only when SO_RCVTIMEO/SO_SNDTIMEO is set,
 * which NCCL does not do on its ranks' sockets (only its RAS client tool, src/ras/client.cc).
 *
 * Naming the frames is stacknames.c's. The rest stays one file: the seize, the wait for the
 * stop, the unwind through libdwfl's callbacks and the detach share one process's state, and
 * the one rule of this file (no thread is ever left stopped or traced) is easier to check where
 * every path to a detach is in view.
 */
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "trace/procfs.h"
#include "trace/stacks.h"
#include "trace/stacks_priv.h"
#include "util/clock.h"
#include "util/fmt.h"
#include "util/grow.h"

/*
 * Sessions kept at once: each holds its modules' files open (65 descriptors for a python3 with
 * 58 libraries); past this, the one used least recently is closed, and made again when needed.
 */
#define MAX_SESSIONS 8
/*
 * How long a take waits for a thread to stop: it must leave its system call first, and run. The
 * tick waits meanwhile, so it is short; a thread that stops later is let go at the SIGCHLD its
 * stop sends (stacks__poll).
 */
#define STOP_WAIT_NS (20 * 1000000ULL)

#define PAGE 4096
/*
 * Symbols looked up, by address: libdwfl's lookup reads every symbol of the module (elfutils
 * 0.188, libdwfl/dwfl_module_addrsym.c), and the stacks of a waiting process are the same second
 * after second.
 */
#define SYMCACHE 256
#define SYMPROBE 8 /* slots tried from the home one */

/* One process: its libdwfl session, and the file mappings it was reported with. */
struct pstate {
	int pid;
	Dwfl *dwfl;
	bool attached; /* dwfl_attach_state done: once per session */
	uint64_t maps_hash;
	uint64_t used_ns; /* the last take */
	bool child;	  /* a child of this process: its exit, if a take reaps it, is told */
	uint64_t tramp;	  /* the uretprobe trampoline (start of [uprobes]), 0 if none mapped */
	/* while one thread is unwound: it, whose memory is read (a zombie leader has none) ... */
	int tid;
	struct stack_return rets[STACK_MAX_FRAMES]; /* the probed calls, most recent first */
	int nrets, next;			    /* next: the first not matched yet */
	uint64_t swapped_at[STACK_MAX_FRAMES];	    /* where each trampoline was read ... */
	uint64_t swapped_to[STACK_MAX_FRAMES];	    /* ... and what it was read as */
	int nswapped;
	uint64_t cur_pc; /* the frame being unwound (its pc, as looked up) */
	uint64_t page_addr;
	bool page_ok;
	unsigned char page[PAGE];
	struct stack_frame sym[SYMCACHE]; /* pc 0: empty; emptied when the modules change */
};

/* A thread seized whose stop had not come when the take gave up waiting. */
struct held {
	int pid, tid;
	int stop_status; /* a stop someone else's waitpid saw (stacks__note_stop), 0 if none */
};

/* An exit of a thread group leader that a wait here reaped. */
struct reaped {
	int pid, status;
};

struct stacks {
	struct pstate **ps;
	int nps, cap_ps;
	int (*returns)(void *ctx, int tid, struct stack_return *out, int max);
	void *returns_ctx;
	struct held *held;
	int nheld, cap_held;
	struct reaped *reaped;
	int nreaped, cap_reaped;
	struct stacks_stats stats;
	uint64_t stop_wait_ns; /* STOP_WAIT_NS unless a test driver sets it */
};

/*
 * Separate debug files only from this machine, by build-id under the debuginfo path
 * (/usr/lib/debug/.build-id/xx/yyyy.debug, checked by libdwfl against the module's build-id).
 * Not dwfl_standard_find_debuginfo: when nothing is found locally it asks the debuginfod servers
 * of DEBUGINFOD_URLS (elfutils 0.188, libdwfl/find-debuginfo.c), a network request per module in
 * the middle of a hang.
 */
static int local_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			   const char *file, const char *debuglink, GElf_Word crc,
			   char **debuginfo_file_name)
{
	return dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file, debuglink, crc,
					    debuginfo_file_name);
}

static char *debuginfo_path;

/*
 * dwfl_linux_proc_find_elf opens the mapped files by path; for the vDSO and deleted files it
 * reads /proc/PID/mem. It would PTRACE_ATTACH for that only in a session of
 * dwfl_linux_proc_attach (libdwfl/linux-proc-maps.c), which this file never makes.
 */
static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = local_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

struct stacks *stacks__new(int (*returns)(void *ctx, int tid, struct stack_return *out, int max),
			   void *ctx)
{
	struct stacks *st = calloc(1, sizeof(struct stacks));

	if (st) {
		st->returns = returns;
		st->returns_ctx = ctx;
		st->stop_wait_ns = STOP_WAIT_NS;
	}
	return st;
}

void stacks__set_stop_wait(struct stacks *st, uint64_t ns)
{
	st->stop_wait_ns = ns;
}

static void pstate_free(struct pstate *p)
{
	if (p->dwfl)
		dwfl_end(p->dwfl);
	free(p);
}

void stacks__free(struct stacks *st)
{
	if (!st)
		return;
	/* held threads: detach what has stopped by now; the rest the kernel releases at exit */
	stacks__poll(st);
	for (int i = 0; i < st->nps; i++)
		pstate_free(st->ps[i]);
	free(st->ps);
	free(st->held);
	free(st->reaped);
	free(st);
}

const struct stacks_stats *stacks__stats(const struct stacks *st)
{
	return &st->stats;
}

void stacks__forget(struct stacks *st, int pid)
{
	for (int i = 0; i < st->nps; i++) {
		if (st->ps[i]->pid != pid)
			continue;
		pstate_free(st->ps[i]);
		st->ps[i] = st->ps[--st->nps];
		return;
	}
}

static struct pstate *pstate_get(struct stacks *st, int pid)
{
	struct proc_stat ps;
	struct pstate *p;

	for (int i = 0; i < st->nps; i++)
		if (st->ps[i]->pid == pid)
			return st->ps[i];
	if (st->nps >= MAX_SESSIONS) {
		int lru = 0;

		for (int i = 1; i < st->nps; i++)
			if (st->ps[i]->used_ns < st->ps[lru]->used_ns)
				lru = i;
		stacks__forget(st, st->ps[lru]->pid);
	}
	if (grow(&st->ps, &st->cap_ps, st->nps, sizeof(*st->ps), 8))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->child = procfs_read_stat(pid, &ps) == 0 && ps.ppid == getpid();
	p->dwfl = dwfl_begin(&proc_callbacks);
	if (!p->dwfl) {
		free(p);
		return NULL;
	}
	st->ps[st->nps++] = p;
	return p;
}

/* A word of the process's memory: from a page read at once, as the unwinder reads nearby. */
static bool read_word(struct pstate *p, uint64_t addr, uint64_t *out)
{
	uint64_t page = addr & ~(uint64_t)(PAGE - 1);
	struct iovec local = {.iov_base = p->page, .iov_len = PAGE};
	struct iovec remote = {.iov_base = (void *)page, .iov_len = PAGE};
	bool inside = addr - page <= PAGE - 8;

	if (inside && (!p->page_ok || p->page_addr != page)) {
		p->page_ok = process_vm_readv(p->tid, &local, 1, &remote, 1, 0) == PAGE;
		p->page_addr = page;
	}
	if (inside && p->page_ok) {
		memcpy(out, p->page + (addr - page), 8);
		return true;
	}
	local = (struct iovec){.iov_base = out, .iov_len = 8};
	remote = (struct iovec){.iov_base = (void *)addr, .iov_len = 8};
	return process_vm_readv(p->tid, &local, 1, &remote, 1, 0) == 8;
}

static const struct stack_frame *symbol_of(struct pstate *p, uint64_t pc);

/*
 * The uretprobe trampoline read at where (a stack slot, or a register for lr) while unwinding
 * the frame at p->cur_pc: the original return address of the probed call whose function that
 * frame is in, by the symbol at the probe's address (probes are placed on symbols) and its size;
 * a call whose return the probes did not hijack, or saw no return of, is passed over. The same
 * slot read again gives the same one. None matching: it stays the trampoline, and the unwind
 * ends there rather than go on with a guess.
 */
static uint64_t unhijack(struct pstate *p, uint64_t where, uint64_t v)
{
	if (!p->tramp || v != p->tramp)
		return v;
	for (int i = 0; i < p->nswapped; i++)
		if (p->swapped_at[i] == where)
			return p->swapped_to[i];
	if (p->nswapped >= STACK_MAX_FRAMES)
		return v;
	for (int k = p->next; k < p->nrets; k++) {
		const struct stack_frame *fn = symbol_of(p, p->rets[k].entry);
		uint64_t entry = p->rets[k].entry;

		if (!fn->symbol[0] || fn->offset || p->cur_pc < entry ||
		    p->cur_pc - entry >= fn->size)
			continue;
		p->next = k + 1;
		p->swapped_at[p->nswapped] = where;
		p->swapped_to[p->nswapped++] = p->rets[k].ret;
		return p->rets[k].ret;
	}
	return v;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct pstate *p = arg;
	uint64_t v;

	(void)dwfl;
	if (!read_word(p, addr, &v))
		return false;
	*result = unhijack(p, addr, v);
	return true;
}

/* Threads are named by the caller (dwfl_getthread_frames), never listed. */
static pid_t cb_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)arg;
	(void)thread_argp;
	return 0;
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)tid;
	*thread_argp = arg;
	return true;
}

/* The registers of the thread we hold, in DWARF's numbering (the psABI's). */
static bool cb_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct pstate *p = arg;
	pid_t tid = dwfl_thread_tid(thread);
#if defined(__x86_64__)
	struct user_regs_struct r;
	Dwarf_Word d[17];

	(void)p;
	if (ptrace(PTRACE_GETREGS, tid, NULL, &r))
		return false;
	d[0] = r.rax, d[1] = r.rdx, d[2] = r.rcx, d[3] = r.rbx;
	d[4] = r.rsi, d[5] = r.rdi, d[6] = r.rbp, d[7] = r.rsp;
	d[8] = r.r8, d[9] = r.r9, d[10] = r.r10, d[11] = r.r11;
	d[12] = r.r12, d[13] = r.r13, d[14] = r.r14, d[15] = r.r15;
	d[16] = r.rip; /* the return address column */
	dwfl_thread_state_register_pc(thread, r.rip);
	return dwfl_thread_state_registers(thread, 0, 17, d);
#elif defined(__aarch64__)
	struct user_pt_regs r;
	struct iovec io = {.iov_base = &r, .iov_len = sizeof(r)};
	Dwarf_Word d[32];

	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &io))
		return false;
	/* x0-x30, sp; a probed function that has not saved lr yet holds the trampoline in it */
	p->cur_pc = r.pc;
	for (int i = 0; i < 31; i++)
		d[i] = unhijack(p, ~(uint64_t)i, r.regs[i]);
	d[31] = r.sp;
	dwfl_thread_state_register_pc(thread, r.pc);
	return dwfl_thread_state_registers(thread, 0, 32, d);
#else
	(void)p;
	(void)tid;
	return false;
#endif
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = cb_next_thread,
	.get_thread = cb_get_thread,
	.memory_read = cb_memory_read,
	.set_initial_registers = cb_initial_registers,
};

/*
 * A hash of the file-backed lines of /proc/PID/maps (address range and path): anonymous memory
 * comes and goes all the time, the modules only when a library is loaded or the process execs.
 */
static int maps_hash(int pid, uint64_t *out, uint64_t *tramp)
{
	char path[64], line[4096];
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	*tramp = 0;
	while (fgets(line, sizeof(line), f)) {
		const char *p = strchr(line, '/');

		/* the uprobes' execute-out-of-line page; its first slot is the trampoline */
		if (strstr(line, "[uprobes]")) {
			unsigned long long start;

			if (sscanf(line, "%llx-", &start) == 1)
				*tramp = start;
		}
		if (!p && !strstr(line, "[vdso]"))
			continue;
		for (const char *c = line; *c; c++)
			h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	}
	fclose(f);
	*out = h;
	return 0;
}

/* Open each module's ELF file and .eh_frame now, not while a thread is held. */
static int prewarm(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start, void *arg)
{
	Dwarf_Addr bias;

	(void)userdata;
	(void)name;
	(void)start;
	(void)arg;
	dwfl_module_eh_cfi(mod, &bias);
	return DWARF_CB_OK;
}

/*
 * The session of pid, its modules up to date with its mappings, read through thread via (the
 * leader, unless it exited before the others: a zombie has no mappings). 0 or -errno (why set).
 */
static int pstate_ready(struct stacks *st, struct pstate *p, int via, char *why, size_t len)
{
	uint64_t h, t0;
	int err;

	err = maps_hash(via, &h, &p->tramp);
	if (err) {
		snprintf(why, len, "cannot read /proc/%d/maps: %s", via, strerror(-err));
		return err;
	}
	if (h != p->maps_hash || !p->maps_hash) {
		t0 = clock_mono_ns();
		/* modules whose name and range did not change are kept (dwfl_report_module) */
		dwfl_report_begin(p->dwfl);
		err = dwfl_linux_proc_report(p->dwfl, via);
		if (dwfl_report_end(p->dwfl, NULL, NULL) || err) {
			snprintf(why, len, "cannot read the modules of pid %d: %s", p->pid,
				 err > 0 ? strerror(err) : dwfl_errmsg(-1));
			p->maps_hash = 0;
			return err > 0 ? -err : -EINVAL;
		}
		dwfl_getmodules(p->dwfl, prewarm, NULL, 0);
		memset(p->sym, 0, sizeof(p->sym));
		p->maps_hash = h;
		st->stats.reports++;
		st->stats.report_ns += clock_mono_ns() - t0;
	}
	/* the machine's backend is taken from the modules reported */
	if (!p->attached) {
		if (!dwfl_attach_state(p->dwfl, NULL, p->pid, &thread_callbacks, p)) {
			snprintf(why, len, "cannot unwind pid %d: %s", p->pid, dwfl_errmsg(-1));
			return -EINVAL;
		}
		p->attached = true;
	}
	return 0;
}

/* Calls a stop would end with EINTR, even without a signal handler (see the top). */
static bool stop_breaks(long nr)
{
	static const long calls[] = {
#ifdef SYS_epoll_wait
		SYS_epoll_wait,
#endif
#ifdef SYS_epoll_pwait2
		SYS_epoll_pwait2,
#endif
#ifdef SYS_semop
		SYS_semop,
#endif
		SYS_epoll_pwait,  SYS_semtimedop, SYS_rt_sigtimedwait,
	};

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (nr == calls[i])
			return true;
	return false;
}

static int yama_scope(void)
{
	char buf[16] = "";
	int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? atoi(buf) : -1;
}

/* Why a PTRACE_SEIZE (or process_vm_readv) got EPERM, in a few words. */
void stacks_eperm_why(int pid, int tid, char *why, size_t len)
{
	int tracer = procfs_tracer_pid(pid, tid), scope = yama_scope();
	struct proc_stat ts;

	if (tracer > 0) {
		if (procfs_read_stat(tracer, &ts))
			snprintf(ts.comm, sizeof(ts.comm), "?");
		snprintf(why, len,
			 "pid %d is traced by pid %d (%s) already, and a thread has one tracer",
			 pid, tracer, ts.comm);
	} else if (scope == 3) {
		snprintf(why, len, "ptrace is disabled here (kernel.yama.ptrace_scope=3)");
	} else if (scope > 0) {
		snprintf(why, len,
			 "ptrace not permitted (kernel.yama.ptrace_scope=%d): nccltrace "
			 "needs CAP_SYS_PTRACE",
			 scope);
	} else {
		snprintf(why, len,
			 "ptrace not permitted on pid %d (CAP_SYS_PTRACE, or a security "
			 "module)",
			 pid);
	}
}

static void note_reaped(struct stacks *st, int pid, int status)
{
	if (grow(&st->reaped, &st->cap_reaped, st->nreaped, sizeof(*st->reaped), 4) == 0)
		st->reaped[st->nreaped++] = (struct reaped){.pid = pid, .status = status};
}

bool stacks__reaped(struct stacks *st, int pid, int *status)
{
	for (int i = 0; i < st->nreaped; i++) {
		if (st->reaped[i].pid != pid)
			continue;
		*status = st->reaped[i].status;
		st->reaped[i] = st->reaped[--st->nreaped];
		return true;
	}
	return false;
}

enum wait_result { W_NONE, W_STOPPED, W_EXITED };

/*
 * One look at tid: stopped (its stop consumed, *status set), exited (reaped: a tracer must, or
 * the exit of a traced group leader never reaches its real parent), or neither yet.
 */
static enum wait_result wait_once(struct stacks *st, int pid, int tid, int *status)
{
	pid_t r = waitpid(tid, status, __WALL | WNOHANG);

	if (r != tid)
		return W_NONE;
	if (WIFSTOPPED(*status))
		return W_STOPPED;
	/*
	 * The leader's exit: for a child of ours (nccltrace runs the job) this wait was its
	 * parent's, and the caller must hear it; any other's goes on to its real parent
	 */
	if (tid == pid) {
		for (int i = 0; i < st->nps; i++)
			if (st->ps[i]->pid == pid && st->ps[i]->child)
				note_reaped(st, pid, *status);
	}
	return W_EXITED;
}

static enum wait_result wait_stop(struct stacks *st, int pid, int tid, int *status)
{
	uint64_t deadline = clock_mono_ns() + st->stop_wait_ns;
	struct timespec nap = {.tv_nsec = 20000};
	enum wait_result w;

	for (int spin = 0;; spin++) {
		w = wait_once(st, pid, tid, status);
		if (w != W_NONE || clock_mono_ns() >= deadline)
			return w;
		/* the thread needs a CPU to reach its stop: give ours up, then sleep a little */
		if (spin < 64)
			sched_yield();
		else
			nanosleep(&nap, NULL);
	}
}

/* The signal a stop was about, to deliver on detach: none for an interrupt or group-stop. */
static int stop_signal(int status)
{
	return (status >> 16) == 0 ? WSTOPSIG(status) : 0;
}

struct unwind {
	struct pstate *p;
	uint64_t pc[STACK_MAX_FRAMES];
	int n;
};

static int frame_cb(Dwfl_Frame *f, void *arg)
{
	struct unwind *u = arg;
	Dwarf_Addr pc;
	bool activation;

	/*
	 * This frame is unwound next, and its return address may be a trampoline. Asking whether
	 * it is an activation unwinds it already (libdwfl/dwfl_frame_pc.c), so where it is goes
	 * first; a return address is after its call, which is one byte before
	 */
	if (!dwfl_frame_pc(f, &pc, NULL))
		return DWARF_CB_ABORT;
	u->p->cur_pc = u->n ? pc - 1 : pc;
	if (!dwfl_frame_pc(f, &pc, &activation))
		return DWARF_CB_ABORT;
	u->pc[u->n++] = activation ? pc : pc - 1;
	return u->n < STACK_MAX_FRAMES ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* pc's frame from the cache, looked up on a miss (into the first free slot, else the home one) */
static const struct stack_frame *symbol_of(struct pstate *p, uint64_t pc)
{
	unsigned home = (unsigned)((pc * 0x9e3779b97f4a7c15ULL) >> 56) % SYMCACHE;
	struct stack_frame *c = &p->sym[home];

	for (unsigned k = 0; k < SYMPROBE; k++) {
		struct stack_frame *x = &p->sym[(home + k) % SYMCACHE];

		if (x->pc == pc)
			return x;
		if (!x->pc) {
			c = x;
			break;
		}
	}
	memset(c, 0, sizeof(*c));
	c->pc = pc;
	stacks_symbolize(p->dwfl, c);
	return c;
}

/* Keep tid until its stop comes; stacks__poll detaches it then. */
static void hold(struct stacks *st, int pid, int tid)
{
	if (grow(&st->held, &st->cap_held, st->nheld, sizeof(*st->held), 4) == 0)
		st->held[st->nheld++] = (struct held){.pid = pid, .tid = tid};
}

/* tid's place in the held list, -1 if it is not held */
static int held_at(const struct stacks *st, int tid)
{
	for (int i = 0; i < st->nheld; i++)
		if (st->held[i].tid == tid)
			return i;
	return -1;
}

void stacks__note_stop(struct stacks *st, int tid, int status)
{
	int h = held_at(st, tid);

	if (h >= 0)
		st->held[h].stop_status = status;
}

int stacks__poll(struct stacks *st)
{
	for (int i = 0; i < st->nheld;) {
		struct held *h = &st->held[i];
		int status = 0;
		enum wait_result w = wait_once(st, h->pid, h->tid, &status);
		bool done = w == W_EXITED;

		if (w == W_STOPPED)
			done = ptrace(PTRACE_DETACH, h->tid, NULL,
				      (void *)(long)stop_signal(status)) == 0 ||
			       errno == ESRCH;
		else if (w == W_NONE && h->stop_status)
			/* the job's own reaper saw the stop (the tracee is nccltrace's child) */
			done = ptrace(PTRACE_DETACH, h->tid, NULL,
				      (void *)(long)stop_signal(h->stop_status)) == 0;
		else if (w == W_NONE && kill(h->tid, 0) && errno == ESRCH)
			done = true;
		if (done)
			*h = st->held[--st->nheld];
		else
			i++;
	}
	return st->nheld;
}

static void syscall_name(long nr, char *buf, size_t len)
{
	const char *name = fmt_syscall(nr);

	if (nr < 0)
		buf[0] = '\0';
	else if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "syscall %ld", nr);
}

/*
 * May tid be stopped at all? Not when gone, a zombie, in uninterruptible sleep (it would stop
 * only when its call returns: maybe never) or in a call a stop would end with EINTR. False with
 * out->error set; its system call goes into out->syscall either way.
 */
static bool stoppable(const struct pstate *p, int tid, struct thread_stack *out)
{
	struct proc_stat ts;
	unsigned long arg0;
	long nr = -1;

	if (procfs_read_task_stat(p->pid, tid, &ts)) {
		snprintf(out->error, sizeof(out->error), "thread %d is gone", tid);
		return false;
	}
	if (ts.state == 'Z' || ts.state == 'X') {
		snprintf(out->error, sizeof(out->error), "thread %d is a zombie: no stack", tid);
		return false;
	}
	if (ts.state == 'D') {
		snprintf(out->error, sizeof(out->error),
			 "thread %d is in uninterruptible sleep (D): not stopped", tid);
		return false;
	}
	if (procfs_read_syscall(p->pid, tid, &nr, &arg0))
		nr = -1;
	syscall_name(nr, out->syscall, sizeof(out->syscall));
	if (nr >= 0 && stop_breaks(nr)) {
		snprintf(out->error, sizeof(out->error),
			 "thread %d is in %s, which a stop would end with EINTR: not stopped", tid,
			 out->syscall);
		return false;
	}
	return true;
}

/* What a wait for tid's stop gave: out says it where the thread did not stop; one that was not
 * held before (fresh) is held now until its stop comes */
static enum wait_result held_result(struct stacks *st, const struct pstate *p, int tid,
				    enum wait_result w, bool fresh, struct thread_stack *out,
				    const int *status)
{
	if (w == W_EXITED) {
		out->exited = true;
		out->wait_status = *status;
		snprintf(out->error, sizeof(out->error), "thread %d exited during the take", tid);
	} else if (w == W_NONE) {
		if (fresh)
			hold(st, p->pid, tid);
		out->timed_out = true;
		snprintf(out->error, sizeof(out->error),
			 "thread %d did not stop within %llu ms (in a long system call?): released "
			 "when it does",
			 tid, (unsigned long long)(st->stop_wait_ns / 1000000));
	}
	return w;
}

/*
 * Seize and interrupt tid, and wait for its stop: W_STOPPED (status set), or out->error says
 * why not (W_NONE: held until its stop comes; W_EXITED). -EPERM in *err when ptrace is refused.
 */
static enum wait_result stop_thread(struct stacks *st, struct pstate *p, int tid,
				    struct thread_stack *out, int *status, int *err, char *why,
				    size_t len)
{
	enum wait_result w;
	int h = held_at(st, tid);

	*err = 0;
	if (h >= 0) {
		/*
		 * Seized by an earlier take that gave up waiting, its stop not come or not seen by
		 * the time of this one (a thread that waits long for a CPU): it is ours already, so
		 * its stop is awaited again. A second seize would fail as "traced already", by
		 * nccltrace itself, and lose the process's take
		 */
		if (st->held[h].stop_status) {
			/* the job's own reaper saw the stop (the tracee is nccltrace's child) */
			*status = st->held[h].stop_status;
			w = W_STOPPED;
		} else {
			w = wait_stop(st, p->pid, tid, status);
		}
		if (w != W_NONE)
			st->held[h] = st->held[--st->nheld];
		return held_result(st, p, tid, w, false, out, status);
	}
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL)) {
		int e = errno;

		if (e == EPERM) {
			stacks_eperm_why(p->pid, tid, why, len);
			snprintf(out->error, sizeof(out->error), "%s", why);
			*err = -EPERM;
		} else {
			snprintf(out->error, sizeof(out->error), "thread %d: %s", tid,
				 e == ESRCH ? "gone" : strerror(e));
		}
		return W_NONE;
	}
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) && errno != ESRCH) {
		/* seized but not interrupted: nothing will stop it, and a seize alone does not */
		int e = errno;

		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		snprintf(out->error, sizeof(out->error), "thread %d: PTRACE_INTERRUPT: %s", tid,
			 strerror(e));
		return W_NONE;
	}
	return held_result(st, p, tid, wait_stop(st, p->pid, tid, status), true, out, status);
}

/* How long the take held and stopped the thread, into out and the totals */
static void count_take(struct stacks *st, struct thread_stack *out, uint64_t t0, uint64_t now)
{
	out->stopped_ns = now - out->taken_ns;
	out->held_ns = now - t0;
	st->stats.takes++;
	st->stats.stopped_ns += out->stopped_ns;
	st->stats.held_ns += out->held_ns;
	if (out->stopped_ns > st->stats.max_stopped_ns)
		st->stats.max_stopped_ns = out->stopped_ns;
	if (out->held_ns > st->stats.max_held_ns)
		st->stats.max_held_ns = out->held_ns;
}

/* One thread: 0, or -EPERM when ptrace is refused (why set), which holds for the process. */
static int take_one(struct stacks *st, struct pstate *p, int tid, struct thread_stack *out,
		    char *why, size_t len)
{
	struct unwind u = {.p = p, .n = 0};
	uint64_t t0;
	int status = 0, rc, err;

	memset(out, 0, sizeof(*out));
	out->pid = p->pid;
	out->tid = tid;
	if (!stoppable(p, tid, out))
		return 0;
	/* the symbols of its probed calls, looked up now rather than while it is held */
	p->nrets = st->returns ? st->returns(st->returns_ctx, tid, p->rets, STACK_MAX_FRAMES) : 0;
	for (int i = 0; i < p->nrets; i++)
		symbol_of(p, p->rets[i].entry);
	t0 = clock_mono_ns();
	if (stop_thread(st, p, tid, out, &status, &err, why, len) != W_STOPPED)
		return err;
	out->taken_ns = clock_mono_ns();
	/* the probes' view of this thread, read while it cannot change */
	p->nrets = st->returns ? st->returns(st->returns_ctx, tid, p->rets, STACK_MAX_FRAMES) : 0;
	if (p->nrets < 0)
		p->nrets = 0;
	p->next = p->nswapped = 0;
	p->page_ok = false;
	p->tid = tid;
	rc = dwfl_getthread_frames(p->dwfl, tid, frame_cb, &u);
	/* ESRCH here: killed while held (SIGKILL ends a ptrace-stop too): nothing to release */
	ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)stop_signal(status));
	count_take(st, out, t0, clock_mono_ns());
	if (rc < 0 && u.n == 0)
		snprintf(out->error, sizeof(out->error), "thread %d: cannot unwind: %s", tid,
			 dwfl_errmsg(-1));
	for (int i = 0; i < u.n; i++)
		out->frames[i] = *symbol_of(p, u.pc[i]);
	out->nframes = u.n;
	/* a sleep or poll the stop interrupted resumes as restart_syscall: the wrapper it is in
	 * says which */
	if (!strcmp(out->syscall, "restart_syscall") && u.n && out->frames[0].symbol[0])
		stack_short_name(out->frames[0].symbol, out->syscall, sizeof(out->syscall));
	return 0;
}

int stacks__take(struct stacks *st, int pid, const int *tids, int n, struct thread_stack *out,
		 char *why, size_t len)
{
	struct pstate *p = pstate_get(st, pid);
	struct proc_stat ps;
	int err, via = pid;

	why[0] = '\0';
	for (int i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].pid = pid;
		out[i].tid = tids[i];
	}
	if (!p) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	if (kill(pid, 0) && errno == ESRCH) {
		snprintf(why, len, "pid %d is gone", pid);
		return -ESRCH;
	}
	if (procfs_read_stat(pid, &ps) == 0 && ps.state == 'Z') {
		for (int i = 0; i < n && via == pid; i++)
			if (procfs_read_task_stat(pid, tids[i], &ps) == 0 && ps.state != 'Z' &&
			    ps.state != 'X')
				via = tids[i];
		if (via == pid) {
			snprintf(why, len, "pid %d is a zombie: no stacks", pid);
			return -ESRCH;
		}
	}
	p->used_ns = clock_mono_ns();
	err = pstate_ready(st, p, via, why, len);
	if (err)
		return err;
	for (int i = 0; i < n; i++) {
		err = take_one(st, p, tids[i], &out[i], why, len);
		if (err)
			return err;
	}
	return 0;
}
