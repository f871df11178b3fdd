// SPDX-License-Identifier: MIT
/*
 * The verbs side of the diagnosis: names checked against the real <infiniband/verbs.h>, and
 * the findings from QP tables, asynchronous events and IB handshakes (synthetic snapshots).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>
#include "diagnose/diagnose.h"
#include "nccl/ibwarn.h"
#include "nccl/ncclstate.h"
#include "testutil.h"
#include "nccl/verbsoffs.h"

#define SEC NT_NSEC_PER_SEC
#define NOW (1000 * SEC)

static const struct diag_config cfg = {.stall_threshold_ns = 5 * SEC, .active_window_ns = SEC};

static void test_names_follow_verbs_h(void **state)
{
	(void)state;
	assert_string_equal(ib_qp_state_name(IBV_QPS_RTS), "RTS");
	assert_string_equal(ib_qp_state_name(IBV_QPS_ERR), "ERR");
	assert_string_equal(ib_qp_state_name(IBV_QPS_INIT), "INIT");
	assert_string_equal(ib_event_name(IBV_EVENT_QP_FATAL), "IBV_EVENT_QP_FATAL");
	assert_string_equal(ib_event_name(IBV_EVENT_PORT_ERR), "IBV_EVENT_PORT_ERR");
	assert_string_equal(ib_event_name(IBV_EVENT_GID_CHANGE), "IBV_EVENT_GID_CHANGE");
	assert_string_equal(ib_event_name(IBV_EVENT_WQ_FATAL), "IBV_EVENT_WQ_FATAL");
	assert_string_equal(ib_event_name(IBV_EVENT_DEVICE_FATAL), "IBV_EVENT_DEVICE_FATAL");
	assert_true(ib_event_is_error(IBV_EVENT_QP_FATAL) && ib_event_is_error(IBV_EVENT_PORT_ERR));
	assert_false(ib_event_is_error(IBV_EVENT_PORT_ACTIVE) ||
		     ib_event_is_error(IBV_EVENT_COMM_EST));
	assert_true(ib_event_has_qp(IBV_EVENT_QP_FATAL) && ib_event_has_qp(IBV_EVENT_COMM_EST));
	assert_false(ib_event_has_qp(IBV_EVENT_PORT_ERR) || ib_event_has_qp(IBV_EVENT_CQ_ERR));
	assert_int_equal(ib_mtu_bytes(IBV_MTU_4096), 4096);
	assert_int_equal(ib_mtu_bytes(IBV_MTU_256), 256);
	assert_string_equal(ib_stage_name(6), "Connecting");
	assert_string_equal(ib_stage_name(2), "unknown");
}

/*
 * The offsets the BPF programs get are rdma-core's stable x86-64 layout, as numbers: offsetof()
 * here would only repeat what verbsoffs.c computes. Read from the DWARF of a program built
 * against Debian 12's <infiniband/verbs.h> (gdb's ptype /o).
 */
static void test_offsets(void **state)
{
	struct nt_verbs_offsets o;

	(void)state;
	verbs_offsets_fill(&o);
	assert_int_equal(o.qp_num, 52);
	assert_int_equal(o.qp_context, 0);
	assert_int_equal(o.ctx_device, 0);
	assert_int_equal(o.dev_name, 24);
	assert_int_equal(o.attr_state, 0);
	assert_int_equal(o.attr_mtu, 8);
	assert_int_equal(o.attr_dest_qp_num, 28);
	assert_int_equal(o.attr_timeout, 130);
	assert_int_equal(o.attr_retry_cnt, 131);
	assert_int_equal(o.attr_rnr_retry, 132);
	assert_int_equal(o.attr_min_rnr_timer, 128);
	assert_int_equal(o.attr_sgid_index, 76);
	assert_int_equal(o.attr_port_num, 86);
	assert_int_equal(o.attr_dlid, 80);
	assert_int_equal(o.attr_dgid, 56);
	assert_int_equal(o.ev_element, 0);
	assert_int_equal(o.ev_type, 8);
}

struct job {
	struct snap_proc procs[3];
	struct snap_ib ib[3];
	struct snapshot s;
};

static struct job *job_new(void)
{
	struct job *j = calloc(1, sizeof(*j));

	assert_non_null(j);
	j->s.now_ns = NOW;
	j->s.procs = j->procs;
	j->s.nprocs = 3;
	for (int r = 0; r < 3; r++) {
		struct snap_proc *p = &j->procs[r];

		p->pid = 100 + r;
		p->rank = r;
		p->world_size = 3;
		p->state = 'S';
		p->nccl = true;
		p->ib = &j->ib[r];
		snprintf(p->comm, sizeof(p->comm), "python3");
		j->ib[r].nqp = 1;
		j->ib[r].qp[0] = (struct snap_qp){.obj = 0x1000,
						  .qp_num = 0x100 + r,
						  .dest_qp_num = 0x100 + (r + 1) % 3,
						  .state = IBV_QPS_RTS,
						  .timeout = 20,
						  .retry_cnt = 7,
						  .sgid_index = 3,
						  .port = 1,
						  .changed_ns = NOW - 60 * SEC};
		snprintf(j->ib[r].qp[0].dev, sizeof(j->ib[r].qp[0].dev), "mlx5_0");
	}
	return j;
}

static void test_async_event_is_ib_error(void **state)
{
	struct job *j = job_new();
	struct finding out[8];
	struct snap_ib *ib = &j->ib[1];
	int n;

	(void)state;
	/* a port coming up is no error */
	ib->nasync = 1;
	ib->async_type = IBV_EVENT_PORT_ACTIVE;
	ib->async_port = 1;
	assert_int_equal(diagnose(&j->s, &cfg, out, 8), 0);
	ib->nasync = 2;
	ib->async_type = IBV_EVENT_QP_FATAL;
	ib->async_qp = 0x101;
	ib->async_ns = NOW - SEC;
	snprintf(ib->async_dev, sizeof(ib->async_dev), "mlx5_0");
	ib->qp[0].state = IBV_QPS_ERR;
	n = diagnose(&j->s, &cfg, out, 8);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].kind, FINDING_IB_ERROR);
	assert_int_equal(out[0].rank, 1);
	assert_int_equal(out[0].peer_rank, 2); /* QP 0x102 is rank 2's */
	assert_contains(out[0].summary, "raised IBV_EVENT_QP_FATAL on QP 0x101 (to QP 0x102, ERR");
	assert_int_equal(out[0].since_ns, NOW - SEC);
	free(j);
}

static void test_handshake_blocked_inside(void **state)
{
	struct job *j = job_new();
	struct finding out[8];
	int n;

	(void)state;
	/* rank 0 polls ncclIbConnect with its QP at INIT; rank 1 is inside one ncclIbAccept */
	for (int r = 0; r < 3; r++) {
		j->procs[r].nccl_setup = SNAP_SETUP_TRANSPORT;
		j->procs[r].nccl_setup_since_ns = NOW - 8 * SEC;
		snprintf(j->procs[r].nccl_phase, sizeof(j->procs[r].nccl_phase), "proxy call");
	}
	j->procs[0].ib_hs =
		(struct snap_ib_handshake){NT_P_IB_CONNECT, false, NOW - 7 * SEC, 6, 11};
	j->ib[0].qp[0].state = IBV_QPS_INIT;
	j->ib[0].qp[0].dest_qp_num = 0;
	j->ib[0].qp[0].changed_ns = NOW - 7 * SEC;
	/* a call 4 s long is not yet past the threshold */
	j->procs[1].ib_hs = (struct snap_ib_handshake){NT_P_IB_ACCEPT, true, NOW - 4 * SEC, 5, 12};
	n = diagnose(&j->s, &cfg, out, 8);
	for (int i = 0; i < n; i++)
		assert_int_not_equal(out[i].kind, FINDING_RING_SETUP_BLOCKED);
	j->procs[1].ib_hs.since_ns = NOW - 6 * SEC;
	n = diagnose(&j->s, &cfg, out, 8);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].kind, FINDING_RING_SETUP_BLOCKED);
	assert_int_equal(out[0].rank, 1);
	assert_contains(out[0].phase, "blocked inside ncclIbAccept (IB handshake stage Recv)");
	assert_contains(out[0].summary, "blocked inside one ncclIbAccept call for 6.0s");
	assert_true(out[0].nwaiters == 1 && out[0].waiters[0].pid == 100);
	assert_true(evidence_has(&out[0], "rank 0 (pid 100) polls ncclIbConnect for 7.0s, "
					  "handshake stage Connecting"));
	assert_true(
		evidence_has(&out[0], "QP 0x100 on mlx5_0 at INIT for 7.0s: never reached RTS"));
	/*
	 * a call stamped after the snapshot's time (another host's /state) is not centuries old
	 * in the snapshot diagnose() gets (snapshot_clamp)
	 */
	j->procs[1].ib_hs.since_ns = NOW + 1000;
	snapshot_clamp(&j->s);
	n = diagnose(&j->s, &cfg, out, 8);
	for (int i = 0; i < n; i++)
		assert_int_not_equal(out[i].kind, FINDING_RING_SETUP_BLOCKED);
	/* polling alone (the peer is merely slow to answer) names nobody */
	j->procs[1].ib_hs.since_ns = NOW - 6 * SEC;
	j->procs[1].ib_hs.inside = false;
	n = diagnose(&j->s, &cfg, out, 8);
	for (int i = 0; i < n; i++)
		assert_int_not_equal(out[i].kind, FINDING_RING_SETUP_BLOCKED);
	free(j);
}

/* ---- the engine's side: verbs events and the sampled handshake of a proxy thread ---- */

static struct nt_phase_stack fake_stack;

/* the tracer's visit of the BPF stacks: one thread, 11 of pid 100 */
static int stacks_of(void *ctx, int (*fn)(void *, int, const struct nt_phase_stack *), void *fnctx)
{
	(void)ctx;
	fake_stack.tgid = 100;
	return fn(fnctx, 11, &fake_stack);
}

static void feed(struct nccl_state *s, int probe, bool ret, uint64_t ts)
{
	struct nt_ev_nccl e;
	json_t *o;

	memset(&e, 0, sizeof(e));
	e.h.ts_ns = ts;
	e.pid = 100;
	e.tid = 11;
	e.probe = probe;
	e.ret = ret;
	e.d.ib.obj = 0x5000;
	snprintf(e.d.ib.dev, sizeof(e.d.ib.dev), "mlx5_0");
	o = nccl_state__event(s, &e);
	json_decref(o);
}

static void test_handshake_sampling(void **state)
{
	struct nccl_state *s = nccl_state__new(NULL, NULL);
	struct snap_proc sp = {.pid = 100};

	(void)state;
	assert_non_null(s);
	feed(s, NT_P_ROLE_PROXY_SERVICE, false, NOW - 10 * SEC);
	feed(s, NT_P_IBV_OPEN_DEVICE, true, NOW - 10 * SEC); /* an IB user */
	/* one ncclIbAccept call entered 3 s ago, and no call since: blocked inside */
	fake_stack.depth = 1;
	fake_stack.f[0].probe = NT_P_IB_ACCEPT;
	fake_stack.f[0].since_ns = NOW - 3 * SEC;
	fake_stack.poll_probe = NT_P_IB_ACCEPT;
	fake_stack.poll_first_ns = NOW - 5 * SEC;
	fake_stack.poll_last_ns = NOW - 3 * SEC + 2000;
	fake_stack.poll_stage = 5;
	nccl_state__sample_stacks(s, NOW, stacks_of, NULL);
	nccl_state__proc_snap(s, &sp);
	assert_int_equal(sp.ib_hs.probe, NT_P_IB_ACCEPT);
	assert_true(sp.ib_hs.inside);
	assert_int_equal(sp.ib_hs.since_ns, NOW - 3 * SEC);
	assert_int_equal(sp.ib_hs.stage, 5);
	assert_int_equal(sp.ib_hs.tid, 11);
	/* the same old frame while the thread goes on calling: a lost return, still polling */
	fake_stack.poll_last_ns = NOW - 10 * 1000000ULL;
	nccl_state__sample_stacks(s, NOW, stacks_of, NULL);
	nccl_state__proc_snap(s, &sp);
	assert_int_equal(sp.ib_hs.probe, NT_P_IB_ACCEPT);
	assert_false(sp.ib_hs.inside);
	assert_int_equal(sp.ib_hs.since_ns, NOW - 5 * SEC);
	/*
	 * the stack is read after the tick took its time: a call entered since (stamped after
	 * NOW) is a thread polling, not one inside a call for centuries (CI named such a rank
	 * "blocked inside ncclIbConnect for 18446744073.7s" at the end of a handshake stall)
	 */
	fake_stack.depth = 1;
	fake_stack.f[0].probe = NT_P_IB_CONNECT;
	fake_stack.f[0].since_ns = NOW + 3000;
	fake_stack.poll_probe = NT_P_IB_CONNECT;
	fake_stack.poll_first_ns = NOW - 4 * SEC;
	fake_stack.poll_last_ns = NOW + 3000;
	nccl_state__sample_stacks(s, NOW, stacks_of, NULL);
	nccl_state__proc_snap(s, &sp);
	assert_int_equal(sp.ib_hs.probe, NT_P_IB_CONNECT);
	assert_false(sp.ib_hs.inside);
	assert_int_equal(sp.ib_hs.since_ns, NOW - 4 * SEC);
	/* no call for over a second: no handshake at all */
	fake_stack.depth = 0;
	fake_stack.poll_last_ns = NOW - 2 * SEC;
	nccl_state__sample_stacks(s, NOW, stacks_of, NULL);
	nccl_state__proc_snap(s, &sp);
	assert_int_equal(sp.ib_hs.probe, 0);
	nccl_state__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_follow_verbs_h),
		cmocka_unit_test(test_offsets),
		cmocka_unit_test(test_async_event_is_ib_error),
		cmocka_unit_test(test_handshake_blocked_inside),
		cmocka_unit_test(test_handshake_sampling),
	};

	return cmocka_run_group_tests_name("ibverbs", tests, NULL, NULL);
}
