// SPDX-License-Identifier: MIT
/*
 * The BPF side's phase stacks read at the tick (nccl/ncclpoll.c): the state, where the records
 * are history. A thread's phases follow the stack when records were lost, a record that comes
 * after the tick's read changes nothing twice, the setups' entries are the stack's, and the
 * polling the kernel counts (the socket net's accept and connect) becomes the process's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include "nccl/ncclstate.h"
#include "testutil.h"

#define SEC   NT_NSEC_PER_SEC
#define NOW   (100 * SEC)
#define PID   100
#define MAIN  100
#define PROXY 107

static struct nt_phase_stack stacks[2]; /* the main thread's, the proxy thread's */

static int each_stack(void *ctx, int (*fn)(void *, int, const struct nt_phase_stack *), void *fnctx)
{
	(void)ctx;
	stacks[0].tgid = stacks[1].tgid = PID;
	fn(fnctx, MAIN, &stacks[0]);
	fn(fnctx, PROXY, &stacks[1]);
	return 0;
}

static void frame(struct nt_phase_stack *st, int probe, uint64_t since)
{
	st->f[st->depth].probe = probe;
	st->f[st->depth].since_ns = since;
	st->depth++;
}

/* An entry (ret false) or return of probe on the main thread, as BPF sends it */
static void event(struct nccl_state *s, int probe, bool ret, uint64_t since, int depth)
{
	struct nt_ev_nccl e;

	memset(&e, 0, sizeof(e));
	e.h.ts_ns = since + 1000;
	e.pid = PID;
	e.tid = MAIN;
	e.probe = probe;
	e.ret = ret;
	e.since_ns = since;
	e.depth = depth;
	e.args[3] = (uint64_t)-1; /* no graph */
	json_decref(nccl_state__event(s, &e));
}

static struct snap_proc snap(struct nccl_state *s)
{
	struct snap_proc sp = {.pid = PID};

	sp.nccl_setup = nccl_state__setup(s, PID, &sp.nccl_setup_since_ns);
	nccl_state__phase(s, PID, &sp.nccl_since_ns, sp.nccl_phase, sizeof(sp.nccl_phase));
	nccl_state__proc_snap(s, &sp);
	return sp;
}

static struct nccl_state *fresh(void)
{
	struct nccl_state *s = nccl_state__new(NULL, NULL);

	memset(stacks, 0, sizeof(stacks));
	/* the process is known: its first record (a setting read at init) */
	event(s, NT_P_COMM_INIT, false, NOW - 20 * SEC, 1);
	event(s, NT_P_COMM_INIT, true, NOW - 20 * SEC, 1);
	return s;
}

/* Every record of a ring setup lost: the stack says the main thread is in it */
static void test_entries_lost(void **state)
{
	struct nccl_state *s = fresh();
	struct snap_proc sp;

	(void)state;
	frame(&stacks[0], NT_P_RING_CONNECT, NOW - 6 * SEC);
	frame(&stacks[0], NT_P_P2P_SETUP, NOW - 6 * SEC + 100);
	stacks[0].entered_ns[2] = NOW - 6 * SEC;
	nccl_state__sample_stacks(s, NOW, each_stack, NULL);
	sp = snap(s);
	assert_int_equal(sp.nccl_setup, SNAP_SETUP_TRANSPORT);
	assert_int_equal(sp.nccl_setup_since_ns, NOW - 6 * SEC);
	assert_string_equal(sp.nccl_phase, "transport setup");
	assert_int_equal(sp.nccl_transport_entered_ns, NOW - 6 * SEC);
	/* the records come after all, late: nothing twice */
	event(s, NT_P_RING_CONNECT, false, NOW - 6 * SEC, 1);
	event(s, NT_P_P2P_SETUP, false, NOW - 6 * SEC + 100, 2);
	sp = snap(s);
	assert_string_equal(sp.nccl_phase, "transport setup");
	event(s, NT_P_P2P_SETUP, true, NOW - 6 * SEC + 100, 2);
	sp = snap(s);
	assert_string_equal(sp.nccl_phase, "ring setup");
	nccl_state__free(s);
}

/* The returns lost: the records left it in the setup, the stack says it is out */
static void test_returns_lost(void **state)
{
	struct nccl_state *s = fresh();
	struct snap_proc sp;

	(void)state;
	event(s, NT_P_RING_CONNECT, false, NOW - 9 * SEC, 1);
	event(s, NT_P_P2P_SETUP, false, NOW - 9 * SEC + 100, 2);
	sp = snap(s);
	assert_int_equal(sp.nccl_setup, SNAP_SETUP_TRANSPORT);
	stacks[0].entered_ns[2] = NOW - 9 * SEC;
	nccl_state__sample_stacks(s, NOW, each_stack, NULL);
	sp = snap(s);
	assert_int_equal(sp.nccl_setup, SNAP_SETUP_NONE);
	assert_string_equal(sp.nccl_phase, "");
	/* it went through: the entry stays known */
	assert_int_equal(sp.nccl_transport_entered_ns, NOW - 9 * SEC);
	/* a return read after the stack has it popped pops nothing more */
	event(s, NT_P_RING_CONNECT, false, NOW - SEC, 1);
	event(s, NT_P_P2P_SETUP, true, NOW - 9 * SEC + 100, 2);
	sp = snap(s);
	assert_string_equal(sp.nccl_phase, "ring setup");
	nccl_state__free(s);
}

/*
 * A setup entered and left between two ticks, every record lost: the stack still holds when
 * it was entered (a rank that took part, never a culprit)
 */
static void test_entry_is_state(void **state)
{
	struct nccl_state *s = fresh();
	struct snap_proc sp;

	(void)state;
	stacks[0].entered_ns[1] = NOW - 15 * SEC;
	stacks[0].entered_ns[2] = NOW - 4 * SEC;
	nccl_state__sample_stacks(s, NOW, each_stack, NULL);
	sp = snap(s);
	assert_int_equal(sp.nccl_setup, SNAP_SETUP_NONE);
	assert_int_equal(sp.nccl_init_entered_ns, NOW - 15 * SEC);
	assert_int_equal(sp.nccl_transport_entered_ns, NOW - 4 * SEC);
	nccl_state__free(s);
}

/* The proxy polls the socket net's accept: counted in the kernel, the process's while it lasts */
static void test_net_poll(void **state)
{
	struct nccl_state *s = fresh();
	struct nt_phase_stack *px = &stacks[1];
	struct snap_proc sp;

	(void)state;
	px->poll_probe = NT_P_NET_ACCEPT;
	px->poll_first_ns = NOW - 7 * SEC;
	px->poll_last_ns = NOW - 2000;
	px->poll_calls = 1300000;
	/* inside one call just now: a polled frame is no phase */
	frame(px, NT_P_NET_ACCEPT, NOW - 2000);
	nccl_state__sample_stacks(s, NOW, each_stack, NULL);
	sp = snap(s);
	assert_int_equal(sp.net_poll.probe, NT_P_NET_ACCEPT);
	assert_int_equal(sp.net_poll.since_ns, NOW - 7 * SEC);
	assert_int_equal(sp.net_poll.calls, 1300000);
	assert_int_equal(sp.net_poll.tid, PROXY);
	assert_string_equal(sp.nccl_phase, "");
	/* done: no more */
	px->poll_done = 1;
	nccl_state__sample_stacks(s, NOW, each_stack, NULL);
	assert_int_equal(snap(s).net_poll.probe, 0);
	/* not called for over a second: the thread left it */
	px->poll_done = 0;
	px->poll_last_ns = NOW - 2 * SEC;
	nccl_state__sample_stacks(s, NOW, each_stack, NULL);
	assert_int_equal(snap(s).net_poll.probe, 0);
	nccl_state__free(s);
}

/* A polled connect: where to, from the record its run started with */
static void test_net_poll_connect(void **state)
{
	struct nccl_state *s = fresh();
	struct nt_phase_stack *px = &stacks[1];
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(43517)};
	struct nt_ev_poll e = {.h.type = NT_EV_POLL,
			       .h.ts_ns = NOW - 5 * SEC,
			       .pid = PID,
			       .tid = PROXY,
			       .probe = NT_P_NET_CONNECT};
	json_t *rec;

	(void)state;
	inet_pton(AF_INET, "10.0.0.2", &sin.sin_addr);
	memcpy(e.addr, &sin, sizeof(sin));
	rec = nccl_state__poll_event(s, &e);
	assert_non_null(rec);
	assert_string_equal(json_string_value(json_object_get(rec, "event")), "start");
	assert_string_equal(json_string_value(json_object_get(rec, "addr")), "10.0.0.2:43517");
	json_decref(rec);
	px->poll_probe = NT_P_NET_CONNECT;
	px->poll_first_ns = NOW - 5 * SEC;
	px->poll_last_ns = NOW - 1000;
	px->poll_calls = 42;
	nccl_state__sample_stacks(s, NOW, each_stack, NULL);
	assert_string_equal(snap(s).net_poll.addr, "10.0.0.2:43517");
	/* its end: how many calls, done or not */
	e.end = 1;
	e.done = 1;
	e.calls = 42;
	e.first_ns = NOW - 5 * SEC;
	e.h.ts_ns = NOW;
	rec = nccl_state__poll_event(s, &e);
	assert_int_equal(json_integer_value(json_object_get(rec, "calls")), 42);
	assert_true(json_is_true(json_object_get(rec, "done")));
	assert_true(json_real_value(json_object_get(rec, "duration_s")) > 4.99);
	json_decref(rec);
	nccl_state__free(s);
}

/*
 * A connection an asynchronous net accept made (inside ncclSocketReady, no socket call's record)
 * is NCCL's data connection all the same: labelled from its creator's phase
 */
static void test_conn_phase_label(void **state)
{
	(void)state;
	assert_string_equal(nccl_conn_phase_label(NT_P_NET_ACCEPT), "net (net accept)");
	assert_string_equal(nccl_conn_phase_label(NT_P_NET_CONNECT), "net (net connect)");
	assert_string_equal(nccl_conn_phase_label(NT_P_IB_ACCEPT), "ib (ib accept)");
	assert_null(nccl_conn_phase_label(NT_P_BOOTSTRAP_RECV));
	assert_null(nccl_conn_phase_label(0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_entries_lost),	 cmocka_unit_test(test_returns_lost),
		cmocka_unit_test(test_entry_is_state),	 cmocka_unit_test(test_net_poll),
		cmocka_unit_test(test_net_poll_connect), cmocka_unit_test(test_conn_phase_label),
	};

	return cmocka_run_group_tests_name("ncclpoll", tests, NULL, NULL);
}
