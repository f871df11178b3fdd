// SPDX-License-Identifier: MIT
/*
 * The pure parts of stacks taken from outside: names of frames, what a stack says about NCCL,
 * the stacks as a finding's evidence, and the `stack` record with report's view of it. The
 * taking itself (ptrace, libdwfl, real processes) is tests/integration/test_stacks.sh.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/stackwatch.h"
#include "diagnose/diagnose.h"
#include "diagnose/rules.h"
#include "nccl/ncclstack.h"
#include "present/stackrec.h"
#include "trace/stacks.h"
#include "testutil.h"

#define SEC NT_NSEC_PER_SEC
#define NOW (1000 * SEC)

static const char *const LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6";
static const char *const NCCL = "/opt/venv/nvidia/nccl/lib/libnccl.so.2";
static const char *const PROG = "/usr/bin/python3.11";

/* frames of st, innermost first: "module|symbol|offset" ("" symbol: inside none) */
static void frames(struct thread_stack *st, int n, const char *const *spec)
{
	st->nframes = n;
	for (int i = 0; i < n; i++) {
		struct stack_frame *f = &st->frames[i];
		char mod[160], sym[128];
		unsigned long long off;

		assert_int_equal(sscanf(spec[i], "%159[^|]|%127[^|]|%llx", mod, sym, &off), 3);
		snprintf(f->module, sizeof(f->module), "%s",
			 !strcmp(mod, "libc")	? LIBC
			 : !strcmp(mod, "nccl") ? NCCL
			 : !strcmp(mod, "prog") ? PROG
						: mod);
		snprintf(f->symbol, sizeof(f->symbol), "%s", strcmp(sym, "-") ? sym : "");
		f->offset = off;
		f->pc = 0x7f0000000000ULL + (uint64_t)i * 0x100;
	}
}

static void test_short_names(void **state)
{
	char buf[128];

	(void)state;
	assert_string_equal(stack_short_name("_Z21ncclTransportP2pSetupP8ncclCommP13ncclTopoGraphi",
					     buf, sizeof(buf)),
			    "ncclTransportP2pSetup");
	assert_string_equal(
		stack_short_name("_ZL20ncclCommInitRankFuncP12ncclAsyncJob", buf, sizeof(buf)),
		"ncclCommInitRankFunc");
	assert_string_equal(stack_short_name("_ZN4c10d16ProcessGroupNCCL9allreduceERSt6vector", buf,
					     sizeof(buf)),
			    "c10d::ProcessGroupNCCL::allreduce");
	assert_string_equal(stack_short_name("clock_nanosleep@GLIBC_2.2.5", buf, sizeof(buf)),
			    "clock_nanosleep");
	assert_string_equal(stack_short_name("__libc_start_main@@GLIBC_2.34", buf, sizeof(buf)),
			    "__libc_start_main");
	assert_string_equal(stack_short_name("pncclAllReduce", buf, sizeof(buf)), "pncclAllReduce");
	/* not a name this reader knows: unchanged */
	assert_string_equal(stack_short_name("_Z", buf, sizeof(buf)), "_Z");
	assert_string_equal(stack_short_name("_Z99x", buf, sizeof(buf)), "_Z99x");
	/* cut at the buffer, never past it */
	assert_string_equal(stack_short_name("_Z21ncclTransportP2pSetupv", buf, 9), "ncclTran");
	assert_string_equal(stack_module_base("/a/b/libnccl.so.2"), "libnccl.so.2");
	assert_string_equal(stack_module_base("nccljob"), "nccljob");
}

static void test_frame_names(void **state)
{
	struct thread_stack st = {0};
	char buf[128];

	(void)state;
	frames(&st, 3, (const char *const[]){"libc|read@GLIBC_2.2.5|1c", "nccl|-|5a3c", "-|-|0"});
	assert_string_equal(stack_frame_name(&st.frames[0], buf, sizeof(buf)), "read");
	/* inside no symbol: the module's own address, never a neighbouring export */
	assert_string_equal(stack_frame_name(&st.frames[1], buf, sizeof(buf)),
			    "libnccl.so.2+0x5a3c");
	st.frames[2].module[0] = '\0';
	st.frames[2].pc = 0x1234;
	assert_string_equal(stack_frame_name(&st.frames[2], buf, sizeof(buf)), "0x1234");
}

/* A rank in the lazy ring connect of its first all-reduce, in a library with .symtab. */
static void test_nccl_call_symtab(void **state)
{
	struct snap_stack s = {0};

	(void)state;
	snprintf(s.st.syscall, sizeof(s.st.syscall), "accept");
	frames(&s.st, 10,
	       (const char *const[]){
		       "libc|accept|4f",
		       "nccl|_ZL19socketProgressStateP10ncclSocket|c0",
		       "nccl|_Z16ncclSocketAcceptP10ncclSocketS0_|b2",
		       "nccl|_Z13bootstrapRecvPviiS_i|2a",
		       "nccl|_Z21ncclTransportP2pSetupP8ncclCommP13ncclTopoGraphi|124",
		       "nccl|_Z24ncclTransportRingConnectP8ncclComm|e",
		       "nccl|_Z16ncclEnqueueCheckP8ncclInfo|131",
		       "nccl|pncclAllReduce|55",
		       "prog|_PyEval_EvalFrameDefault|1234",
		       "libc|__libc_start_main|84",
	       });
	nccl_stack_describe(&s);
	assert_int_equal(s.nnccl, 7);
	assert_int_equal(s.nccl_frames[0], 1);
	assert_int_equal(s.nccl_frames[6], 7);
	/* pncclX is what a lookup preferring global symbols finds: shown as the API's name */
	assert_string_equal(s.nccl_api, "ncclAllReduce");
	assert_string_equal(s.nccl_call,
			    "inside socketProgressState <- ncclSocketAccept <- "
			    "bootstrapRecv <- ... <- ncclAllReduce, blocked in accept");
}

/* NVIDIA's build stripped to .dynsym: only the exported frame has a name. */
static void test_nccl_call_stripped(void **state)
{
	struct snap_stack s = {0};

	(void)state;
	snprintf(s.st.syscall, sizeof(s.st.syscall), "futex");
	frames(&s.st, 7,
	       (const char *const[]){
		       "libc|__futex_abstimed_wait_common|10",
		       "libc|pthread_cond_wait@@GLIBC_2.3.2|20",
		       "nccl|-|a83a",
		       "nccl|-|b000",
		       "nccl|pncclGroupEnd|40",
		       "nccl|-|c000",
		       "nccl|pncclAllReduce|55",
	       });
	nccl_stack_describe(&s);
	assert_int_equal(s.nnccl, 5);
	assert_string_equal(s.nccl_api, "ncclAllReduce");
	/* a run of unnamed frames is said once, by its innermost */
	assert_string_equal(s.nccl_call, "inside libnccl.so.2+0xa83a <- ncclGroupEnd <- "
					 "libnccl.so.2+0xc000 <- ncclAllReduce, blocked in futex");
	/* running, not in a call */
	s.st.syscall[0] = '\0';
	nccl_stack_describe(&s);
	assert_contains(s.nccl_call, "ncclAllReduce, running");
}

/* A wait on the GPU outside NCCL (PyTorch's .item()); inside NCCL a sync is NCCL's own */
static void test_gpu_wait(void **state)
{
	struct snap_stack s = {0};

	(void)state;
	frames(&s.st, 5,
	       (const char *const[]){
		       "libc|__futex_abstimed_wait_common|10",
		       "libc|pthread_cond_wait@@GLIBC_2.3.2|20",
		       "/usr/lib/x86_64-linux-gnu/libcuda.so.1|cuStreamSynchronize_ptsz|30",
		       "/x/libtorch_cuda.so|cudaStreamSynchronize|40",
		       "prog|main|b5e",
	       });
	nccl_stack_describe(&s);
	assert_true(s.gpu_wait);
	frames(&s.st, 3,
	       (const char *const[]){"/x/libcudart.so.13|cudaMemcpyAsync|30", "prog|main|b5e",
				     "libc|__libc_start_main|84"});
	nccl_stack_describe(&s);
	assert_false(s.gpu_wait);
	frames(&s.st, 4,
	       (const char *const[]){
		       "/usr/lib/x86_64-linux-gnu/libcuda.so.1|cuStreamSynchronize|30",
		       "nccl|_Z24ncclTransportRingConnectP8ncclComm|e",
		       "nccl|pncclAllReduce|55",
		       "prog|main|b5e",
	       });
	nccl_stack_describe(&s);
	assert_false(s.gpu_wait);
	assert_int_equal(s.nnccl, 2);
}

static void test_nccl_call_outside_and_static(void **state)
{
	struct snap_stack s = {0};

	(void)state;
	frames(&s.st, 3,
	       (const char *const[]){"libc|clock_nanosleep|65", "prog|nap|4c", "prog|main|b5e"});
	nccl_stack_describe(&s);
	assert_int_equal(s.nnccl, 0);
	assert_string_equal(s.nccl_call, "");
	assert_string_equal(s.nccl_api, "");
	/*
	 * NCCL linked into another library (older PyTorch wheels): its nccl* names say it; its
	 * other internal names (bootstrapRecv) cannot be told from the host library's
	 */
	frames(&s.st, 4,
	       (const char *const[]){"libc|poll|10",
				     "/x/libtorch_cuda.so|_Z13bootstrapRecvPviiS_i|2a",
				     "/x/libtorch_cuda.so|_Z16ncclEnqueueCheckP8ncclInfo|131",
				     "/x/libtorch_cuda.so|ncclCommInitRank|99"});
	nccl_stack_describe(&s);
	assert_int_equal(s.nnccl, 2);
	assert_int_equal(s.nccl_frames[0], 2);
	assert_string_equal(s.nccl_call, "inside ncclEnqueueCheck <- ncclCommInitRank, running");
	assert_string_equal(s.nccl_api, "ncclCommInitRank");
	/* PyTorch's own names with NCCL in them are not NCCL's */
	frames(&s.st, 1,
	       (const char *const[]){
		       "/x/libtorch_cuda.so|_ZN4c10d16ProcessGroupNCCL9allreduceEv|10"});
	nccl_stack_describe(&s);
	assert_int_equal(s.nnccl, 0);
}

/* n ranks, all but rank 1 in transport setup for 10 s, rank 1 sleeping outside NCCL */
static void ring_setup(struct snap_proc *procs, int n, struct snapshot *snap)
{
	memset(procs, 0, n * sizeof(*procs));
	for (int r = 0; r < n; r++) {
		struct snap_proc *p = &procs[r];

		p->pid = 100 + r;
		p->rank = p->local_rank = r;
		p->world_size = n;
		p->state = 'S';
		p->nccl = true;
		snprintf(p->comm, sizeof(p->comm), "python3");
		if (r != 1) {
			p->nccl_setup = SNAP_SETUP_TRANSPORT;
			p->nccl_setup_since_ns = p->nccl_since_ns = NOW - 10 * SEC + r;
			snprintf(p->nccl_phase, sizeof(p->nccl_phase), "socket accept");
		}
	}
	snprintf(procs[1].where, sizeof(procs[1].where), "clock_nanosleep");
	memset(snap, 0, sizeof(*snap));
	snap->now_ns = NOW;
	snap->procs = procs;
	snap->nprocs = n;
}

static void test_stacks_as_evidence(void **state)
{
	const struct diag_config cfg = {.stall_threshold_ns = 5 * SEC, .active_window_ns = SEC};
	static struct snap_stack culprit[2], waiter;
	struct snap_proc procs[3];
	struct snapshot snap;
	struct finding out[4];
	const struct finding *f = &out[0];

	(void)state;
	ring_setup(procs, 3, &snap);
	assert_int_equal(diagnose(&snap, &cfg, out, 4), 1);
	assert_int_equal(f->kind, FINDING_RING_SETUP_BLOCKED);
	assert_false(evidence_has(f, "stack unwound"));

	/* rank 1: a helper thread and its main thread, sleeping in the program's own code */
	culprit[0].st.tid = 111;
	culprit[0].st.taken_ns = NOW - SEC;
	frames(&culprit[0].st, 1, (const char *const[]){"libc|read|4"});
	culprit[1].st.pid = culprit[1].st.tid = 101;
	culprit[1].st.taken_ns = NOW - SEC / 2;
	snprintf(culprit[1].st.syscall, sizeof(culprit[1].st.syscall), "clock_nanosleep");
	frames(&culprit[1].st, 6,
	       (const char *const[]){"libc|clock_nanosleep@GLIBC_2.2.5|65", "libc|__nanosleep|12",
				     "prog|data_loader_wait|4c", "prog|main|b5e",
				     "libc|__libc_start_call_main|79", "prog|_start|20"});
	nccl_stack_describe(&culprit[1]);
	procs[1].stacks = culprit;
	procs[1].nstacks = 2;
	/* rank 0, the longest waiter: inside the all-reduce, stripped */
	waiter.st.pid = waiter.st.tid = 100;
	waiter.st.taken_ns = NOW + SEC / 100; /* taken after the snapshot: the session's order */
	snprintf(waiter.st.syscall, sizeof(waiter.st.syscall), "accept");
	frames(&waiter.st, 4,
	       (const char *const[]){"libc|accept|4f", "nccl|-|5a3c", "nccl|pncclAllReduce|55",
				     "prog|train_step|99"});
	nccl_stack_describe(&waiter);
	procs[0].stacks = &waiter;
	procs[0].nstacks = 1;

	assert_int_equal(diagnose(&snap, &cfg, out, 4), 1);
	/* right after the culprit's /proc state: its main thread, up to main() */
	assert_contains(f->evidence[1],
			"rank 1 (pid 101) main thread (stack unwound 0.5s ago): outside NCCL, "
			"blocked in clock_nanosleep: clock_nanosleep <- __nanosleep [libc.so.6] <- "
			"data_loader_wait <- main [python3.11]");
	assert_null(strstr(f->evidence[1], "_start"));
	assert_contains(f->evidence[2],
			"rank 0 (pid 100) main thread (stack unwound 0.0s ago): inside "
			"libnccl.so.2+0x5a3c <- ncclAllReduce, blocked in accept; called from "
			"train_step [python3.11]");
	/* the lines diagnose had before are all still there */
	assert_true(evidence_has(f, "/proc/101/stat state S"));
	assert_true(evidence_has(f, "rank 2 (pid 102) in NCCL transport setup"));

	/* the waiter's stack outside NCCL while the snapshot has it in setup: taken once it had
	 * gone on, it would contradict the line after it */
	frames(&waiter.st, 2, (const char *const[]){"libc|clock_nanosleep|65", "prog|main|99"});
	nccl_stack_describe(&waiter);
	assert_int_equal(diagnose(&snap, &cfg, out, 4), 1);
	assert_false(evidence_has(f, "rank 0 (pid 100) main thread (stack"));
	assert_true(evidence_has(f, "rank 1 (pid 101) main thread (stack"));
	frames(&waiter.st, 4,
	       (const char *const[]){"libc|accept|4f", "nccl|-|5a3c", "nccl|pncclAllReduce|55",
				     "prog|train_step|99"});
	nccl_stack_describe(&waiter);

	/* a stack from long ago is not evidence of now */
	culprit[1].st.taken_ns = NOW - 30 * SEC;
	culprit[0].st.taken_ns = NOW - 30 * SEC;
	assert_int_equal(diagnose(&snap, &cfg, out, 4), 1);
	assert_false(evidence_has(f, "rank 1 (pid 101) main thread (stack"));
	assert_true(evidence_has(f, "rank 0 (pid 100) main thread (stack"));

	/* no stack, and why: that a debugger holds the culprit is worth knowing */
	memset(&culprit[1], 0, sizeof(culprit[1]));
	culprit[1].st.pid = culprit[1].st.tid = 101;
	culprit[1].st.taken_ns = NOW;
	snprintf(culprit[1].st.error, sizeof(culprit[1].st.error),
		 "pid 101 is traced by pid 999 (gdb) already, and a thread has one tracer");
	assert_int_equal(diagnose(&snap, &cfg, out, 4), 1);
	assert_true(evidence_has(f, "main thread (stack unwound 0.0s ago): no stack: pid 101 is "
				    "traced by pid 999 (gdb)"));
}

/* Full evidence: the stacks go near the top, the last lines make room. */
static void test_stack_evidence_full(void **state)
{
	const struct diag_config cfg = {.stall_threshold_ns = 5 * SEC, .active_window_ns = SEC};
	struct snap_proc procs[12];
	struct snapshot snap;
	struct snap_stack v = {0}, w = {0};
	struct finding out[4];
	const struct finding *f = &out[0];

	(void)state;
	ring_setup(procs, 12, &snap);
	assert_int_equal(diagnose(&snap, &cfg, out, 4), 1);
	/* the culprit's line and six waiters': two stack lines more than there is room for */
	assert_int_equal(f->nevidence, DIAG_MAX_EVIDENCE - 1);
	v.st.pid = v.st.tid = 101;
	v.st.taken_ns = NOW;
	frames(&v.st, 2, (const char *const[]){"libc|pause|1", "prog|main|2"});
	procs[1].stacks = &v;
	procs[1].nstacks = 1;
	w.st.pid = w.st.tid = 100;
	w.st.taken_ns = NOW;
	frames(&w.st, 2, (const char *const[]){"nccl|ncclCommInitRank|1", "prog|main|2"});
	nccl_stack_describe(&w);
	procs[0].stacks = &w;
	procs[0].nstacks = 1;
	assert_int_equal(diagnose(&snap, &cfg, out, 4), 1);
	assert_int_equal(f->nevidence, DIAG_MAX_EVIDENCE);
	assert_contains(f->evidence[0], "/proc/101/stat state S");
	assert_contains(f->evidence[1], "pause [libc.so.6] <- main [python3.11]");
	assert_contains(f->evidence[2], "rank 0 (pid 100) main thread");
	assert_contains(f->evidence[2], "inside ncclCommInitRank, running; called from main");
	assert_contains(f->evidence[3], "in NCCL transport setup");
}

/*
 * A stack longer than an evidence line is cut between two frames and says so (" <- ..."), never
 * inside a frame's name
 */
static void test_long_stack_cut_between_frames(void **state)
{
	const struct diag_config cfg = {.stall_threshold_ns = 5 * SEC, .active_window_ns = SEC};
	static const char *const spec[] = {
		"libc|clock_nanosleep_internal_wait|1",	  "prog|trainer_wait_for_the_next_batch|2",
		"prog|trainer_step_with_gradient_sync|3", "prog|trainer_epoch_loop_over_batches|4",
		"prog|trainer_run_all_epochs_of_job|5",	  "prog|main|6"};
	struct snap_proc procs[4];
	struct snapshot snap;
	struct snap_stack v = {0};
	struct finding out[4];
	const char *line, *tail;

	(void)state;
	ring_setup(procs, 4, &snap);
	v.st.pid = v.st.tid = 101;
	v.st.taken_ns = NOW;
	frames(&v.st, 6, spec);
	procs[1].stacks = &v;
	procs[1].nstacks = 1;
	assert_int_equal(diagnose(&snap, &cfg, out, 4), 1);
	line = out[0].evidence[1];
	assert_contains(line, "clock_nanosleep_internal_wait [libc.so.6] <- trainer_wait_for_the");
	/* the line was full: it ends in the mark, after a whole frame's name */
	tail = strstr(line, " <- ...");
	assert_non_null(tail);
	assert_string_equal(tail, " <- ...");
	assert_null(strstr(line, "<- main"));
	for (size_t i = 1; i + 1 < sizeof(spec) / sizeof(spec[0]); i++) {
		char name[64];
		const char *at;

		sscanf(spec[i], "prog|%63[^|]", name);
		at = strstr(line, name);
		/* a name is there whole, followed by the next separator, or not at all */
		if (at)
			assert_true(!strncmp(at + strlen(name), " <- ", 4) ||
				    !strncmp(at + strlen(name), " [", 2));
	}
	assert_true(strlen(line) < sizeof(out[0].evidence[1]) - 1);
}

static void py_thread_of(struct py_stacks *ps, int pid, int n, const char *const *spec)
{
	struct py_thread *t = &ps->threads[0];

	memset(ps, 0, sizeof(*ps));
	ps->pid = pid;
	ps->taken_ns = NOW;
	snprintf(ps->version, sizeof(ps->version), "3.11");
	ps->nthreads = 1;
	t->tid = pid;
	t->main = true;
	t->nframes = n;
	for (int i = 0; i < n; i++) {
		struct py_frame *f = &t->frames[i];

		sscanf(spec[i], "%127[^|]|%d|%63s", f->file, &f->line, f->func);
	}
}

/*
 * Python stacks: the culprit's top user frame in the summary, the waiters by their line, and
 * the ranks that took different paths as the first hypothesis; none when the lines agree, or
 * when the stacks are old.
 */
/*
 * A retake whose thread did not stop in time (no CPU came to it, on a busy machine) keeps the
 * stack the thread had: the evidence goes on showing it, older, not "no stack"
 */
static void test_timed_out_take_keeps_stack(void **state)
{
	const struct diag_config cfg = {.stall_threshold_ns = 5 * SEC, .active_window_ns = SEC};
	static struct snap_stack prev[2], kept;
	struct thread_stack now = {.pid = 101, .tid = 101, .timed_out = true};
	struct snap_proc procs[3];
	struct snapshot snap;
	struct finding out[4];
	int k;

	(void)state;
	prev[0].st.pid = 101;
	prev[0].st.tid = 111;
	frames(&prev[0].st, 1, (const char *const[]){"libc|read|4"});
	prev[1].st.pid = prev[1].st.tid = 101;
	prev[1].st.taken_ns = NOW - 3 * SEC;
	snprintf(prev[1].st.syscall, sizeof(prev[1].st.syscall), "clock_nanosleep");
	frames(&prev[1].st, 3,
	       (const char *const[]){"libc|clock_nanosleep@GLIBC_2.2.5|65", "prog|save|4c",
				     "prog|main|b5e"});
	nccl_stack_describe(&prev[1]);

	k = stackwatch_kept(prev, 2, &now);
	assert_int_equal(k, 1);
	/* the thread's own stack, not another thread's */
	now.tid = 111;
	assert_int_equal(stackwatch_kept(prev, 2, &now), 0);
	now.tid = 222;
	assert_int_equal(stackwatch_kept(prev, 2, &now), -1);
	/* a take that stopped the thread is the stack, however it differs */
	now.tid = 101;
	now.timed_out = false;
	frames(&now, 1, (const char *const[]){"libc|poll|9"});
	assert_int_equal(stackwatch_kept(prev, 2, &now), -1);
	/* any other failure (gone, refused) is said as it is */
	now.nframes = 0;
	assert_int_equal(stackwatch_kept(prev, 2, &now), -1);
	/* nothing to keep: the timeout is what is known */
	now.timed_out = true;
	prev[1].st.nframes = 0;
	assert_int_equal(stackwatch_kept(prev, 2, &now), -1);

	/* the evidence of the kept stack: its frames, with its age */
	kept = prev[k];
	frames(&kept.st, 3,
	       (const char *const[]){"libc|clock_nanosleep@GLIBC_2.2.5|65", "prog|save|4c",
				     "prog|main|b5e"});
	nccl_stack_describe(&kept);
	ring_setup(procs, 3, &snap);
	procs[1].stacks = &kept;
	procs[1].nstacks = 1;
	assert_int_equal(diagnose(&snap, &cfg, out, 4), 1);
	assert_true(evidence_has(&out[0],
				 "rank 1 (pid 101) main thread (stack unwound 3.0s ago): "
				 "outside NCCL, blocked in clock_nanosleep: clock_nanosleep"));
}

static void test_python_evidence(void **state)
{
	const struct diag_config cfg = {.stall_threshold_ns = 5 * SEC, .active_window_ns = SEC};
	static struct py_stacks py[4];
	struct snap_proc procs[4];
	struct snapshot snap;
	struct finding out[4];
	const struct finding *f = &out[0];
	static const char *const waiter[] = {
		("/venv/lib/python3.11/site-packages/torch/distributed/"
		 "distributed_c10d.py|2501|all_reduce"),
		"/w/train.py|120|step", "/w/train.py|200|main"};
	static const char *const culprit[] = {"/usr/lib/python3.11/threading.py|320|wait",
					      "/w/train.py|142|save_checkpoint",
					      "/w/train.py|198|main"};

	(void)state;
	ring_setup(procs, 4, &snap);
	for (int r = 0; r < 4; r++) {
		py_thread_of(&py[r], 100 + r, 3, r == 1 ? culprit : waiter);
		procs[r].py = &py[r];
	}
	assert_int_equal(diagnose(&snap, &cfg, out, 4), 1);
	assert_int_equal(f->rank, 1);
	assert_contains(f->summary, "rank 1 (pid 101) at train.py:142 save_checkpoint, which is");
	assert_true(evidence_has(f,
				 "waiting, in Python: ranks 0,2,3: train.py:200 main -> "
				 "train.py:120 step -> torch/distributed/distributed_c10d.py:2501 "
				 "all_reduce"));
	assert_string_equal(f->hypotheses[0],
			    "rank 1 is at train.py:142 (save_checkpoint -> wait), the others at "
			    "train.py:120 (step -> all_reduce): the ranks took different paths "
			    "(their main threads' Python stacks)");
	assert_true(f->nhyp >= 2);

	/* the culprit at the waiters' line: no divergence to name */
	py_thread_of(&py[1], 101, 3, waiter);
	assert_int_equal(diagnose(&snap, &cfg, out, 4), 1);
	assert_contains(f->summary, "(pid 101) at train.py:120 step");
	for (int i = 0; i < f->nhyp; i++)
		assert_null(strstr(f->hypotheses[i], "different paths"));

	/* a finding the counters tell names no pid: the line goes after "rank 1 is " */
	{
		struct finding g = {.kind = FINDING_STALL, .rank = 1, .pid = 101, .peer_pid = -1};

		py_thread_of(&py[1], 101, 3, culprit);
		snprintf(g.summary, sizeof(g.summary),
			 "rank 1 has not launched AllReduce #21 on comm acc0; rank 0 waits in it "
			 "for "
			 "3.0s; rank 1 is sleeping in clock_nanosleep, outside NCCL");
		py_evidence(&snap, &g);
		assert_contains(g.summary,
				"; rank 1 is in train.py:142 save_checkpoint, sleeping in "
				"clock_nanosleep");
		/* and where the summary names the rank in no such place, at its end */
		snprintf(g.summary, sizeof(g.summary), "AllReduce #21 never launched");
		py_evidence(&snap, &g);
		assert_string_equal(g.summary, "AllReduce #21 never launched; rank 1 is in "
					       "train.py:142 save_checkpoint");
	}

	/* read long ago: nothing of it */
	for (int r = 0; r < 4; r++)
		py[r].taken_ns = NOW - 30 * SEC;
	assert_int_equal(diagnose(&snap, &cfg, out, 4), 1);
	assert_null(strstr(f->summary, "train.py"));
	assert_false(evidence_has(f, "in Python"));
}

static void test_record_and_report(void **state)
{
	struct snap_stack s = {0};
	json_t *rec, *stacks, *f, *got, *fr;

	(void)state;
	s.st.pid = 101;
	s.st.tid = 105;
	s.st.taken_ns = 77;
	s.st.stopped_ns = 40000;
	s.st.held_ns = 90000;
	snprintf(s.st.syscall, sizeof(s.st.syscall), "accept");
	frames(&s.st, 2, (const char *const[]){"libc|accept|4f", "nccl|-|5a3c"});
	nccl_stack_describe(&s);
	rec = record_stack(&s, NULL, NULL);
	assert_string_equal(json_string_value(json_object_get(rec, "type")), "stack");
	assert_int_equal(json_integer_value(json_object_get(rec, "tid")), 105);
	assert_int_equal(json_integer_value(json_object_get(rec, "stopped_ns")), 40000);
	assert_int_equal(json_integer_value(json_object_get(rec, "held_ns")), 90000);
	assert_string_equal(json_string_value(json_object_get(rec, "nccl_call")),
			    "inside libnccl.so.2+0x5a3c, blocked in accept");
	fr = json_array_get(json_object_get(rec, "frames"), 1);
	assert_string_equal(json_string_value(json_object_get(fr, "module")), NCCL);
	/* inside no symbol: no symbol, the module's offset */
	assert_true(json_is_null(json_object_get(fr, "symbol")) || !json_object_get(fr, "symbol"));
	assert_int_equal(json_integer_value(json_object_get(fr, "offset")), 0x5a3c);
	assert_true(json_is_null(json_object_get(rec, "error")));

	/* report: the latest stack of each thread goes to the findings naming its process */
	stacks = stackrec_new();
	stackrec_note(stacks, rec);
	f = json_pack("{s:i,s:n}", "pid", 101, "peer_pid");
	stackrec_attach(stacks, f);
	got = json_array_get(json_object_get(f, "stacks"), 0);
	assert_non_null(got);
	assert_string_equal(json_string_value(json_object_get(got, "role")), "culprit");
	assert_int_equal(json_integer_value(json_object_get(got, "tid")), 105);
	json_decref(f);
	f = json_pack("{s:i,s:i}", "pid", 7, "peer_pid", 101);
	stackrec_attach(stacks, f);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(f, "stacks"), 0), "role")),
			    "waiter");
	json_decref(f);
	/* a finding about someone else gets none; bad records are ignored */
	f = json_pack("{s:i}", "pid", 8);
	got = json_pack("{s:s,s:i}", "type", "stack", "pid", 8);
	stackrec_note(stacks, got);
	json_decref(got);
	stackrec_attach(stacks, f);
	assert_null(json_object_get(f, "stacks"));
	json_decref(f);
	json_decref(stacks);
	json_decref(rec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_names),
		cmocka_unit_test(test_frame_names),
		cmocka_unit_test(test_nccl_call_symtab),
		cmocka_unit_test(test_nccl_call_stripped),
		cmocka_unit_test(test_nccl_call_outside_and_static),
		cmocka_unit_test(test_gpu_wait),
		cmocka_unit_test(test_stacks_as_evidence),
		cmocka_unit_test(test_stack_evidence_full),
		cmocka_unit_test(test_long_stack_cut_between_frames),
		cmocka_unit_test(test_record_and_report),
		cmocka_unit_test(test_timed_out_take_keeps_stack),
		cmocka_unit_test(test_python_evidence),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
