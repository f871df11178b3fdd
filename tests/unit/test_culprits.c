// SPDX-License-Identifier: MIT
/*
 * What the end of a wait chain must show to be named, and what is no evidence against it: a
 * main thread whose stack is inside NCCL where no probe says so (NCCL 2.18-2.22 in a
 * collective), and a death with the job's teardown (synthetic rings, synth.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include "synth.h"
#include "testutil.h"

#define SEC  SYNTH_SEC
#define MSEC (SEC / 1000)
#define NOW  SYNTH_NOW
#define OUT  8

static const struct diag_config cfg = {
	.stall_threshold_ns = 5 * SEC,
	.active_window_ns = SEC,
};

static int run(struct synth *y, struct finding *out)
{
	return diagnose(&y->s, &cfg, out, OUT);
}

/* The stack of thread tid of p, inside NCCL (call) or not (""), blocked in syscall */
static void stack_of(struct snap_stack *v, int pid, int tid, const char *call, const char *sys,
		     uint64_t taken)
{
	memset(v, 0, sizeof(*v));
	v->st.pid = pid;
	v->st.tid = tid;
	v->st.taken_ns = taken;
	v->st.nframes = 1;
	snprintf(v->st.syscall, sizeof(v->st.syscall), "%s", sys);
	snprintf(v->nccl_call, sizeof(v->nccl_call), "%s", call);
}

static void test_chain_end_inside_nccl_by_stack(void **state)
{
	struct synth *y = synth_new(4, 2, SYNTH_RING, 1);
	struct snap_proc *p = &y->procs[1];
	struct snap_stack st[2];
	struct finding out[OUT];

	(void)state;
	/* rank 1 waits in a futex, no probe says where: named */
	snprintf(p->where, sizeof(p->where), "futex");
	assert_int_equal(run(y, out), 1);
	assert_int_equal(out[0].rank, 1);
	/* its main thread is inside ncclAllReduce: a waiter there, not the culprit */
	stack_of(&st[0], 1001, 1001, "inside ncclEnqueueCheck <- ncclAllReduce, blocked in futex",
		 "futex", NOW - 100 * MSEC);
	p->stacks = st;
	p->nstacks = 1;
	assert_int_equal(run(y, out), 0);
	/* a stack of 3 s ago says nothing of now */
	st[0].st.taken_ns = NOW - 3 * SEC;
	assert_int_equal(run(y, out), 1);
	/* nor one taken in another call than the one it sits in now */
	st[0].st.taken_ns = NOW - 100 * MSEC;
	snprintf(p->where, sizeof(p->where), "clock_nanosleep");
	assert_int_equal(run(y, out), 1);
	/* NCCL's own threads are always inside NCCL: the main thread's outside decides */
	snprintf(p->where, sizeof(p->where), "futex");
	stack_of(&st[0], 1001, 1007, "inside ncclProxyService, blocked in poll", "poll",
		 NOW - 100 * MSEC);
	stack_of(&st[1], 1001, 1001, "", "futex", NOW - 100 * MSEC);
	p->nstacks = 2;
	assert_int_equal(run(y, out), 1);
	assert_int_equal(out[0].rank, 1);
	synth_free(y);
}

/*
 * The chain's end waits on its GPU, outside NCCL (cuStreamSynchronize on its main thread's
 * recent stack): its collective's kernel runs and may wait on a peer, its proxy's tries unseen
 * (8 ranks on 2 cores: not run for a second). No culprit rather than it.
 */
static void test_chain_end_waiting_on_gpu(void **state)
{
	struct synth *y = synth_new(4, 2, SYNTH_RING, 1);
	struct snap_proc *p = &y->procs[1];
	struct snap_stack st[1];
	struct finding out[OUT];

	(void)state;
	snprintf(p->where, sizeof(p->where), "futex");
	stack_of(&st[0], 1001, 1001, "", "futex", NOW - 200 * MSEC);
	p->stacks = st;
	p->nstacks = 1;
	assert_int_equal(run(y, out), 1);
	assert_int_equal(out[0].rank, 1);
	st[0].gpu_wait = true;
	assert_int_equal(run(y, out), 0);
	/* a stack of 3 s ago says nothing of now */
	st[0].st.taken_ns = NOW - 3 * SEC;
	assert_int_equal(run(y, out), 1);
	synth_free(y);
}

static void set_killed(struct snap_proc *p, int status, uint64_t when)
{
	p->exited = true;
	p->state = 'X';
	p->exit_status = status;
	p->exit_ns = when;
}

static void test_teardown_is_no_culprit(void **state)
{
	struct synth *y = synth_new(3, 2, SYNTH_RING, 1);
	struct finding out[OUT];

	(void)state;
	/* rank 1 killed, the others go on waiting: it is dead */
	set_killed(&y->procs[1], SIGKILL, NOW - 2 * SEC);
	assert_int_equal(run(y, out), 1);
	assert_int_equal(out[0].kind, FINDING_PEER_DEAD);
	assert_int_equal(out[0].rank, 1);
	/* the launcher's answer, another signal: still rank 1 */
	set_killed(&y->procs[0], SIGTERM, NOW - 2 * SEC + 300 * MSEC);
	set_killed(&y->procs[2], SIGTERM, NOW - 2 * SEC + 301 * MSEC);
	assert_int_equal(run(y, out), 1);
	assert_int_equal(out[0].rank, 1);
	/* all killed by one signal within milliseconds: the job was ended, nobody is the cause */
	set_killed(&y->procs[0], SIGKILL, NOW - 2 * SEC + 3 * MSEC);
	set_killed(&y->procs[2], SIGKILL, NOW - 2 * SEC + 5 * MSEC);
	assert_int_equal(run(y, out), 0);
	synth_free(y);

	/* killed a moment ago, the others alive: too soon to tell, told half a second on */
	y = synth_new(3, 2, SYNTH_RING, 1);
	set_killed(&y->procs[1], SIGKILL, NOW - 100 * MSEC);
	assert_int_equal(run(y, out), 0);
	y->s.now_ns = NOW + 500 * MSEC;
	assert_int_equal(run(y, out), 1);
	assert_int_equal(out[0].rank, 1);
	/* or at once when the job has exited: no other death is to come */
	y->s.now_ns = NOW;
	y->s.job_over = true;
	assert_int_equal(run(y, out), 1);
	assert_int_equal(out[0].rank, 1);
	y->s.job_over = false;
	/* an exit status is no signal on its way: at once */
	y->s.now_ns = NOW;
	set_killed(&y->procs[1], 3 << 8, NOW - 100 * MSEC);
	assert_int_equal(run(y, out), 1);
	assert_int_equal(out[0].kind, FINDING_PEER_DEAD);
	synth_free(y);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain_end_inside_nccl_by_stack),
		cmocka_unit_test(test_chain_end_waiting_on_gpu),
		cmocka_unit_test(test_teardown_is_no_culprit),
	};

	return cmocka_run_group_tests_name("culprits", tests, NULL, NULL);
}
