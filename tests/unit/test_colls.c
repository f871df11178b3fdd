// SPDX-License-Identifier: MIT
/*
 * The diagnosis on synthetic snapshots (diagworld.h): the communicators' collective counters
 * (colls.c, collmm.c, straggler.c): the rank behind, mismatched functions and arguments (also
 * between two ranks, and as the profiler plugin latched them, with grouped evidence), a
 * destroyed member, the straggler, counters outranking sockets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include "diagworld.h"

static void test_coll_behind_is_culprit(void **state)
{
	struct world *w = nvlink_job(4, 1000, STALL_START);
	struct finding out[MAX_OUT];
	const struct finding *f = &out[0];

	(void)state;
	/* rank 2 never launched AllReduce #1001: it sleeps in the data loader */
	comm_store[2].seq[AR] = 999;
	comm_store[2].changed_ns = STALL_START - SEC;
	w->procs[2].state = 'S';
	snprintf(w->procs[2].where, sizeof(w->procs[2].where), "futex");
	assert_int_equal(run(w, out), 1);
	assert_int_equal(f->kind, FINDING_STALL);
	assert_int_equal(f->rank, 2);
	assert_int_equal(f->pid, 102);
	assert_int_equal(f->comm_hash, HASH);
	assert_int_equal(f->nwaiters, 3);
	assert_true(has_waiter(f, 100) && has_waiter(f, 101) && has_waiter(f, 103));
	assert_int_equal(f->since_ns, STALL_START);
	assert_contains(f->summary, "rank 2 has not launched AllReduce #1000");
	assert_contains(f->summary, "ranks 0,1,3 wait");
	/* the culprit's counters first, the others' together */
	assert_true(evidence_has(f, "rank 2 (pid 102) launched AllReduce 999"));
	assert_true(evidence_has(f, "ranks 0,1,3 (3) launched AllReduce 1000 on comm"));
	assert_false(evidence_has(f, "rank 0 (pid 100) launched"));
	free(w);
}

/*
 * attach: the communicator was found by the memory scan (made before the attach): the same
 * culprit, and its evidence says so, its counts unchanged "at least" since then
 */
static void test_coll_behind_found_by_scan(void **state)
{
	struct world *w = nvlink_job(3, 50, STALL_START);
	struct finding out[MAX_OUT];
	const struct finding *f = &out[0];

	(void)state;
	for (int r = 0; r < 3; r++) {
		comm_store[r].scanned = true;
		comm_store[r].seq_src = SNAP_SRC_SEQNUMBER;
	}
	comm_store[1].seq[AR] = 49;
	w->procs[1].state = 'S';
	assert_int_equal(run(w, out), 1);
	assert_int_equal(f->kind, FINDING_STALL);
	assert_int_equal(f->rank, 1);
	assert_int_equal(f->since_ns, STALL_START);
	assert_true(evidence_has(f, "rank 1 (pid 101) launched AllReduce 49 on comm"));
	assert_true(evidence_has(f, "(comm->seqNumber; comm found by a memory scan at attach), "
				    "unchanged for"));
	assert_true(evidence_has(f, "at least (since the attach)"));
	free(w);
}

static void test_coll_behind_dead_or_stopped(void **state)
{
	struct finding out[MAX_OUT];

	(void)state;
	for (int k = 0; k < 2; k++) {
		struct world *w = nvlink_job(2, 50, STALL_START);

		comm_store[1].seq[AR] = 49;
		if (k == 0)
			set_exited(&w->procs[1], SIGSEGV, STALL_START);
		else
			w->procs[1].state = 'T';
		assert_int_equal(run(w, out), 1);
		assert_int_equal(out[0].kind, k == 0 ? FINDING_PEER_DEAD : FINDING_PEER_STOPPED);
		assert_int_equal(out[0].rank, 1);
		assert_int_equal(out[0].peer_rank, 0);
		free(w);
	}
}

static void test_coll_progressing_no_finding(void **state)
{
	struct world *w = nvlink_job(4, 1000, NOW - 100 * MSEC);
	struct finding out[MAX_OUT];

	(void)state;
	/* ranks apart, as at any instant of a healthy job: they moved 100 ms ago */
	comm_store[1].seq[AR] = 999;
	comm_store[3].seq[AR] = 1001;
	assert_int_equal(run(w, out), 0);
	/* all equal and idle for long (evaluation, checkpointing): nobody waits on anybody */
	w = (free(w), nvlink_job(4, 1000, STALL_START));
	assert_int_equal(run(w, out), 0);
	free(w);
}

static void test_coll_mismatch_functions(void **state)
{
	struct world *w = nvlink_job(3, 4, STALL_START);
	struct finding out[MAX_OUT];
	const struct finding *f = &out[0];

	(void)state;
	/* rank 1 broadcasts where ranks 0 and 2 all-reduce */
	comm_store[1].seq[AR] = 3;
	comm_store[1].seq[BCAST] = 1;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(f->kind, FINDING_COLLECTIVE_MISMATCH);
	assert_int_equal(f->rank, 1);
	assert_true(has_waiter(f, 100) && has_waiter(f, 102));
	assert_contains(f->phase, "Broadcast #1");
	assert_contains(f->summary, "rank 1 in Broadcast #1, ranks 0,2 in AllReduce #4");
	/* two ranks: the odd one is in the function launched least over the communicator */
	w = (free(w), nvlink_job(2, 4, STALL_START));
	comm_store[0].seq[AR] = 3;
	comm_store[0].seq[BCAST] = 1;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(f->kind, FINDING_COLLECTIVE_MISMATCH);
	assert_int_equal(f->rank, 0);
	free(w);
}

static void test_coll_mismatch_arguments(void **state)
{
	struct world *w = nvlink_job(3, 7, STALL_START);
	struct finding out[MAX_OUT];

	(void)state;
	for (int r = 0; r < 3; r++) {
		comm_store[r].last_coll = AR;
		comm_store[r].last_count = r == 2 ? 32768 : 65536;
		comm_store[r].last_dtype = 7;
	}
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_COLLECTIVE_MISMATCH);
	assert_int_equal(out[0].rank, 2);
	assert_contains(out[0].summary, "rank 2 in AllReduce #7 (count 32768 float32)");
	assert_contains(out[0].summary, "ranks 0,1 in AllReduce #7 (count 65536 float32)");
	/* the same arguments everywhere: not a mismatch (a transport matter, if anything) */
	comm_store[2].last_count = 65536;
	assert_int_equal(run(w, out), 0);
	/* arguments unknown (no --collectives) on one rank: no guess */
	comm_store[2].last_count = 1;
	comm_store[1].last_coll = -1;
	assert_int_equal(run(w, out), 0);
	free(w);
}

/* The counters outrank the sockets: a rank inside the collective is never the culprit. */
static void test_coll_overrides_socket_culprit(void **state)
{
	struct world *w = stalled_ring(3, 2, 'S');
	struct finding out[MAX_OUT];
	int n;

	(void)state;
	/*
	 * rank 2 sleeps in futex (cudaStreamSynchronize) inside the collective; rank 1 never
	 * launched it: on the sockets rank 2 looks like the culprit, the counters say rank 1
	 */
	for (int r = 0; r < 3; r++)
		add_comm(w, r, 3, r == 1 ? 9 : 10, STALL_START);
	n = run(w, out);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].rank, 1);
	assert_int_equal(out[0].kind, FINDING_STALL);
	free(w);
	/* both agree: one finding, with the socket evidence and the counters */
	w = stalled_ring(3, 1, 'S');
	for (int r = 0; r < 3; r++)
		add_comm(w, r, 3, r == 1 ? 9 : 10, STALL_START);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].rank, 1);
	assert_true(evidence_has(&out[0], "EAGAIN"));
	assert_true(evidence_has(&out[0], "launched AllReduce 9"));
	free(w);
}

/*
 * The counts are read at ticks: the waiters' launch of the next collective is seen up to a
 * tick after their sockets fell silent, so the sockets' rule names rank 1 while the counters
 * last moved within their threshold (a loaded machine: test_profiler's stall, once in a lane).
 * The counts join that finding from its first record; they name nobody themselves yet.
 */
static void test_coll_counts_join_socket_finding(void **state)
{
	struct world *w = stalled_ring(3, 1, 'S');
	struct finding out[MAX_OUT];

	(void)state;
	for (int r = 0; r < 3; r++)
		add_comm(w, r, 3, r == 1 ? 9 : 10, NOW - 300 * MSEC);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].rank, 1);
	assert_int_equal(out[0].comm_hash, HASH);
	assert_true(evidence_has(&out[0], "EAGAIN"));
	assert_true(evidence_has(&out[0], "rank 1 (pid 101) launched AllReduce 9"));
	assert_true(evidence_has(&out[0], "launched AllReduce 10"));
	free(w);
	/* equal counts join nothing: the sockets' finding alone */
	w = stalled_ring(3, 1, 'S');
	for (int r = 0; r < 3; r++)
		add_comm(w, r, 3, 10, NOW - 300 * MSEC);
	assert_int_equal(run(w, out), 1);
	assert_false(evidence_has(&out[0], "launched AllReduce"));
	free(w);
}

/*
 * Real NCCL at 8 ranks (the wheel, 2.28.9, on one GPU as 8 hosts): rank 1 slept before
 * AllReduce #251 and has just launched it. The others, inside it since, still spin on silent
 * sockets of several channels whose rings differ, and the socket each was seen waiting on
 * chains them into a cycle that leaves rank 1 out. The counters moved a moment ago: the stop is
 * ending, and the cycle is no hang (it opened beside rank 1's finding on the GPU).
 */
static struct world *cycle_job(uint64_t rank1_moved)
{
	struct world *w = world_new();
	const int cyc[] = {100, 102, 103};

	for (int r = 0; r < 4; r++) {
		add_proc(w, 100 + r, r, 'R', "");
		add_comm(w, r, 4, 251, r == 1 ? rank1_moved : STALL_START);
	}
	/* 0 waits on 3, 3 on 2, 2 on 0: each receives from the next and spins */
	for (int k = 0; k < 3; k++)
		spin(&w->conns[add_pair(w, cyc[(k + 1) % 3], cyc[k], STALL_START) + 1]);
	return w;
}

static void test_coll_cycle_while_launching(void **state)
{
	struct world *w = cycle_job(NOW - 200 * MSEC);
	struct finding out[MAX_OUT];

	(void)state;
	assert_int_equal(run(w, out), 0);
	free(w);
	/* nobody launched for long: the cycle lasts, and is the finding */
	w = cycle_job(STALL_START);
	assert_int_equal(run(w, out), 1);
	assert_true(out[0].cycle);
	assert_int_equal(out[0].nwaiters, 3);
	free(w);
}

/* A rank that destroyed the communicator keeps its final counts: it will launch no more. */
static void test_coll_destroyed_member(void **state)
{
	struct world *w = nvlink_job(2, 20, STALL_START);
	struct finding out[MAX_OUT];

	(void)state;
	/* real NCCL over NVLink: a Broadcast paired with an AllReduce, the last AllReduce never */
	comm_store[1].seq[AR] = 19;
	comm_store[1].seq[BCAST] = 1;
	comm_store[1].destroyed = true;
	w->procs[1].state = 'S';
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_COLLECTIVE_MISMATCH);
	assert_int_equal(out[0].rank, 1);
	assert_true(evidence_has(&out[0], "rank 1 (pid 101) destroyed comm"));
	/* behind and destroyed */
	comm_store[1].seq[BCAST] = 0;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_STALL);
	assert_int_equal(out[0].rank, 1);
	assert_contains(out[0].phase, "communicator destroyed");
	/* every rank destroyed it, whatever the counts: the job is done with it */
	comm_store[0].destroyed = true;
	assert_int_equal(run(w, out), 0);
	free(w);
}

static void test_straggler(void **state)
{
	struct world *w = nvlink_job(4, 500, NOW - 50 * MSEC);
	struct finding out[MAX_OUT];
	const struct diag_config scfg = {
		.stall_threshold_ns = 5 * SEC, .active_window_ns = SEC, .straggler_samples = 16};

	(void)state;
	for (int r = 0; r < 4; r++) {
		comm_store[r].nsamples = 64;
		comm_store[r].differ_bits = 0xffffffffULL;
		comm_store[r].behind_bits = r == 3 ? 0xf0f0f0f0ULL : (r == 1 ? 0x3ULL : 0);
	}
	comm_store[3].behind_since_ns = NOW - 8 * SEC;
	memset(out, 0, sizeof(out));
	assert_int_equal(diagnose(&w->s, &scfg, out, MAX_OUT), 1);
	assert_int_equal(out[0].kind, FINDING_STRAGGLER);
	assert_int_equal(out[0].rank, 3);
	assert_int_equal(out[0].nwaiters, 3);
	assert_int_equal(out[0].since_ns, NOW - 8 * SEC);
	assert_contains(out[0].summary, "alone behind in 16 of the last 64 samples");
	/* below the bar, or off */
	comm_store[3].behind_bits = 0xf0ULL;
	assert_int_equal(diagnose(&w->s, &scfg, out, MAX_OUT), 0);
	comm_store[3].behind_bits = 0xf0f0f0f0ULL;
	assert_int_equal(run(w, out), 0); /* cfg: straggler_samples 0 */
	/* ranks taking turns being last: no straggler */
	comm_store[1].behind_bits = 0x0f0f0f00ULL;
	assert_int_equal(diagnose(&w->s, &scfg, out, MAX_OUT), 0);
	free(w);
}

/* rank r launched collective ord of HASH as func with count (the profiler plugin's latch) */
static void latch_at(struct snap_comm *c, uint64_t ord, int func, uint64_t count, bool changed)
{
	c->mm_ord = c->mm_from = ord;
	c->mm_coll = func;
	c->mm_count = count;
	c->mm_dtype = 7;
	c->mm_root = 0;
	c->mm_seq = ord - 1;
	c->mm_ns = NOW - 2 * SEC;
	c->mm_changed = changed;
	c->launched = ord + 500;
	c->seq_src = c->args_src = SNAP_SRC_PROFILER;
}

/* A size-mismatched all_reduce at #21 that completed: the job goes on, the finding is there */
static void test_coll_mismatch_latched_while_moving(void **state)
{
	struct world *w = nvlink_job(4, 521, NOW - 100 * MSEC);
	struct finding out[MAX_OUT];
	const struct finding *f = &out[0];

	(void)state;
	for (int r = 0; r < 4; r++)
		latch_at(&comm_store[r], 21, AR, r == 2 ? 2109497 : 4194304, r == 2);
	assert_int_equal(run(w, out), 1);
	assert_int_equal(f->kind, FINDING_COLLECTIVE_MISMATCH);
	assert_int_equal(f->rank, 2);
	assert_int_equal(f->pid, 102);
	assert_int_equal(f->comm_hash, HASH);
	assert_int_equal(f->nwaiters, 3);
	assert_int_equal(f->since_ns, NOW - 2 * SEC);
	assert_contains(f->summary,
			"rank 2 in AllReduce #21 (count 2109497 float32), ranks 0,1,3 in "
			"AllReduce #21 (count 4194304 float32)");
	assert_contains(f->summary, "collective 21 of the communicator; the job went on (500 "
				    "collectives since): its data is likely corrupt");
	assert_true(evidence_has(f,
				 "ranks 0,1,3 launched AllReduce #21, count 4194304 float32, as "
				 "collective 21 of comm 9f3c1a2b3c4d5e6f (NCCL profiler plugin)"));
	assert_true(evidence_has(
		f, "rank 2 launched AllReduce #21, count 2109497 float32, as "
		   "collective 21 of comm 9f3c1a2b3c4d5e6f, other arguments than in its "
		   "previous one (NCCL profiler plugin)"));
	assert_true(evidence_has(f, "(NCCL profiler plugin), unchanged for"));
	assert_string_equal(f->key, "collective_mismatch:pid:102");
	/* stopped on it: the same finding, and nothing more from the stop-time rules */
	w->s.now_ns = NOW + 20 * SEC;
	assert_int_equal(run(w, out), 1);
	assert_contains(f->summary, "none has launched anything for");
	/* destroyed everywhere (the job is done with it): still there, until the session ends */
	for (int r = 0; r < 4; r++)
		comm_store[r].destroyed = true;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(f->kind, FINDING_COLLECTIVE_MISMATCH);
	free(w);
}

/* Two ranks: no majority; the rank whose arguments changed from its previous launch is odd */
static void test_coll_mismatch_latched_two_ranks(void **state)
{
	struct finding out[MAX_OUT];

	(void)state;
	for (int odd = 0; odd < 2; odd++) {
		struct world *w = nvlink_job(2, 30, NOW - 100 * MSEC);

		latch_at(&comm_store[0], 21, AR, odd == 0 ? 2109497 : 4194304, odd == 0);
		latch_at(&comm_store[1], 21, AR, odd == 1 ? 2109497 : 4194304, odd == 1);
		assert_int_equal(run(w, out), 1);
		assert_int_equal(out[0].kind, FINDING_COLLECTIVE_MISMATCH);
		assert_int_equal(out[0].rank, odd);
		free(w);
	}
	/* neither changed: the rarer function in the communicator is the odd one */
	for (int odd = 0; odd < 2; odd++) {
		struct world *w = nvlink_job(2, 30, NOW - 100 * MSEC);

		latch_at(&comm_store[0], 11, odd == 0 ? BCAST : AR, 4194304, false);
		latch_at(&comm_store[1], 11, odd == 1 ? BCAST : AR, 4194304, false);
		comm_store[odd].seq[BCAST] = 1;
		comm_store[odd].seq[AR] = 10;
		comm_store[!odd].seq[AR] = 11;
		assert_int_equal(run(w, out), 1);
		assert_int_equal(out[0].rank, odd);
		free(w);
	}
	/* both changed, their functions as common: no culprit rather than a guess */
	{
		struct world *w = nvlink_job(2, 30, NOW - 100 * MSEC);

		latch_at(&comm_store[0], 21, AR, 2109497, true);
		latch_at(&comm_store[1], 21, AR, 4194304, true);
		assert_int_equal(run(w, out), 1);
		assert_int_equal(out[0].kind, FINDING_COLLECTIVE_MISMATCH);
		assert_int_equal(out[0].rank, -1);
		assert_int_equal(out[0].pid, 0);
		assert_int_equal(out[0].nwaiters, 2);
		assert_contains(out[0].summary, "which of them is wrong cannot be told");
		assert_string_equal(out[0].key, "collective_mismatch:comm:9f3c1a2b3c4d5e6f");
		free(w);
	}
}

/* Another function at the same collective: named by function; lost records: by range */
static void test_coll_mismatch_latched_function_and_gap(void **state)
{
	struct world *w = nvlink_job(3, 13, NOW - 100 * MSEC);
	struct finding out[MAX_OUT];

	(void)state;
	for (int r = 0; r < 3; r++)
		latch_at(&comm_store[r], 13, r == 1 ? BCAST : AR, 65536, r == 1);
	comm_store[1].mm_seq = 0;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].rank, 1);
	assert_contains(out[0].summary, "rank 1 in Broadcast #1, ranks 0,2 in AllReduce #13;");
	free(w);
	/* the ranks diverged among records the tracer could not read in time */
	w = nvlink_job(2, 3000, NOW - 100 * MSEC);
	for (int r = 0; r < 2; r++) {
		latch_at(&comm_store[r], 1977, -1, 0, false);
		comm_store[r].mm_from = 1;
	}
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_COLLECTIVE_MISMATCH);
	assert_contains(out[0].summary, "their signatures differ from collective 1 on");
	assert_true(evidence_has(&out[0], "collectives 1-1977 of comm"));
	free(w);
}

/* Equal arguments everywhere, or point-to-point operations with their own peers: nothing */
static void test_coll_no_mismatch_equal_or_p2p(void **state)
{
	struct world *w = nvlink_job(3, 40, NOW - 100 * MSEC);
	struct finding out[MAX_OUT];

	(void)state;
	/* nothing latched: the plugin compared every collective and they agreed */
	for (int r = 0; r < 3; r++) {
		comm_store[r].last_coll = AR;
		comm_store[r].last_count = 65536;
		comm_store[r].last_dtype = 7;
		comm_store[r].args_src = SNAP_SRC_PROFILER;
	}
	assert_int_equal(run(w, out), 0);
	/* stopped with each rank's last a send to its own peer (ncclEnqueueCheck): no mismatch */
	w->s.now_ns = NOW + 20 * SEC;
	for (int r = 0; r < 3; r++) {
		comm_store[r].last_coll = 6; /* ncclFuncSend */
		comm_store[r].last_root = (r + 1) % 3;
		comm_store[r].args_src = SNAP_SRC_ENQUEUE;
	}
	assert_int_equal(run(w, out), 0);
	free(w);
}

/* Two communicators: the mismatch of one names its own rank, the other is clean */
static void test_coll_mismatch_latched_two_comms(void **state)
{
	struct world *w = nvlink_job(3, 21, NOW - 100 * MSEC);
	struct finding out[MAX_OUT];

	(void)state;
	for (int r = 0; r < 3; r++) {
		struct snap_comm *c = add_comm(w, r, 3, 21, NOW - 100 * MSEC);

		c->hash = HASH + 1;
		latch_at(c, 21, AR, r == 0 ? 100 : 200, r == 0);
	}
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].rank, 0);
	assert_int_equal(out[0].comm_hash, HASH + 1);
	free(w);
}

/* Stop-time rules from the plugin's counts on a stripped build: as from seqNumber */
static void test_coll_behind_from_plugin(void **state)
{
	struct world *w = nvlink_job(2, 21, STALL_START);
	struct finding out[MAX_OUT];

	(void)state;
	for (int r = 0; r < 2; r++)
		comm_store[r].seq_src = SNAP_SRC_PROFILER;
	comm_store[1].seq[AR] = 20;
	w->procs[1].state = 'S';
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_STALL);
	assert_int_equal(out[0].rank, 1);
	assert_true(evidence_has(&out[0], "rank 1 (pid 101) launched AllReduce 20 on comm "
					  "9f3c1a2b3c4d5e6f (NCCL profiler plugin)"));
	/* the job ended: both exited with status 0 within a tick of their last launches, before
	 * the plugin's counts were read again: nobody waits, so no culprit */
	set_exited(&w->procs[0], 0, NOW - SEC);
	set_exited(&w->procs[1], 0, NOW - SEC);
	assert_int_equal(run(w, out), 0);
	/* the one behind exited with status 0 within the second, the one ahead alive: its last
	 * launches may be after its counts were read, so not yet; a second on, it is named */
	w->procs[0].exited = false;
	w->procs[0].state = 'S';
	set_exited(&w->procs[1], 0, NOW - SEC / 3);
	assert_int_equal(run(w, out), 0);
	w->procs[1].exit_ns = NOW - SEC - SEC / 5;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].kind, FINDING_PEER_DEAD);
	assert_int_equal(out[0].rank, 1);
	set_exited(&w->procs[0], 0, NOW - SEC);
	set_exited(&w->procs[1], 0, NOW - SEC);
	/* the one ahead was killed while waiting: it did wait */
	w->procs[0].exit_status = SIGTERM;
	assert_int_equal(run(w, out), 1);
	assert_int_equal(out[0].rank, 1);
	free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_coll_behind_is_culprit),
		cmocka_unit_test(test_coll_behind_found_by_scan),
		cmocka_unit_test(test_coll_behind_dead_or_stopped),
		cmocka_unit_test(test_coll_progressing_no_finding),
		cmocka_unit_test(test_coll_mismatch_functions),
		cmocka_unit_test(test_coll_mismatch_arguments),
		cmocka_unit_test(test_coll_overrides_socket_culprit),
		cmocka_unit_test(test_coll_counts_join_socket_finding),
		cmocka_unit_test(test_coll_cycle_while_launching),
		cmocka_unit_test(test_coll_destroyed_member),
		cmocka_unit_test(test_straggler),
		cmocka_unit_test(test_coll_mismatch_latched_while_moving),
		cmocka_unit_test(test_coll_mismatch_latched_two_ranks),
		cmocka_unit_test(test_coll_mismatch_latched_function_and_gap),
		cmocka_unit_test(test_coll_no_mismatch_equal_or_p2p),
		cmocka_unit_test(test_coll_mismatch_latched_two_comms),
		cmocka_unit_test(test_coll_behind_from_plugin),
	};

	return cmocka_run_group_tests_name("colls", tests, NULL, NULL);
}
