// SPDX-License-Identifier: MIT
/*
 * NCCL's own log in the diagnosis: a 3-rank ring whose rank 1 never reaches ring setup, each
 * rank's log as NCCL 2.28.9 writes it up to there (the lines nccllog_parse reads), and what the
 * findings say from it: the transport of the waiter's connection to the culprit, what in the log
 * decided it, the missing "Connected all rings" and the connections set up on one side only; for
 * init, Init START without COMPLETE; settings as the log tells them where no probe read them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diagnose/diagnose.h"
#include "model/snapshot.h"
#include "nccl/nccllog.h"
#include "testutil.h"

#define SEC	    NT_NSEC_PER_SEC
#define NOW	    (100 * SEC)
#define STALL_START (NOW - 8 * SEC)

struct world {
	struct snapshot s;
	struct snap_proc p[3];
	struct snap_nccl_log log[3];
};

static void feed(struct snap_nccl_log *l, int pid, const char *fmt, ...)
{
	char line[512], pre[64];
	struct nccllog_fact f;
	va_list ap;

	snprintf(pre, sizeof(pre), "gpu-a:%d:%d [0] NCCL INFO ", pid, pid);
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	memmove(line + strlen(pre), line, strlen(line) + 1);
	memcpy(line, pre, strlen(pre));
	if (nccllog_parse(line, strlen(line), &f) == NLOG_NONE)
		fail_msg("not parsed: %s", line);
	nccllog_apply(l, &f, NOW - 9 * SEC);
}

/* ranks 0 and 2 in ring setup, rank 1 asleep outside NCCL; logs through init, or ring setup */
static struct world *world_new(bool ring_setup)
{
	struct world *w = calloc(1, sizeof(*w));

	for (int r = 0; r < 3; r++) {
		struct snap_proc *p = &w->p[r];
		struct snap_nccl_log *l = &w->log[r];
		int pid = 100 + r;

		*p = (struct snap_proc){.pid = pid, .rank = r, .world_size = 3, .state = 'S'};
		p->nccl = true;
		p->nccl_log = l;
		feed(l, pid, "NCCL version 2.28.9+cuda13.0");
		feed(l, pid, "NET/IB : No device found.");
		feed(l, pid, "NET/Socket : Using [0]lo:127.0.0.1<0>");
		feed(l, pid, "Using network Socket");
		feed(l, pid,
		     "ncclCommInitRank comm 0x%x rank %d nranks 3 cudaDev %d nvmlDev %d busId %x "
		     "commId 0xc0ffee - Init START",
		     0x1000 * (r + 1), r, r, r, 0x1b000 + 0x10000 * r);
		feed(l, pid, "NCCL_P2P_DISABLE set by environment to 1");
		feed(l, pid, "NCCL_SHM_DISABLE set by environment to 1.");
		if (!ring_setup)
			continue;
		feed(l, pid,
		     "ncclCommInitRank comm 0x%x rank %d nranks 3 cudaDev %d nvmlDev %d busId %x "
		     "commId 0xc0ffee - Init COMPLETE",
		     0x1000 * (r + 1), r, r, r, 0x1b000 + 0x10000 * r);
		if (r == 1)
			continue; /* its first collective, and the ring connect in it, never came */
		feed(l, pid, "Channel 00/0 : %d[%d] -> %d[%d] [receive] via NET/Socket/0",
		     (r + 2) % 3, (r + 2) % 3, r, r);
		feed(l, pid, "Channel 00/0 : %d[%d] -> %d[%d] [send] via NET/Socket/0", r, r,
		     (r + 1) % 3, (r + 1) % 3);
		p->nccl_setup = SNAP_SETUP_TRANSPORT;
		p->nccl_setup_since_ns = STALL_START + r * SEC / 10;
		snprintf(p->nccl_phase, sizeof(p->nccl_phase), "proxy call");
	}
	snprintf(w->p[1].where, sizeof(w->p[1].where), "clock_nanosleep");
	w->s = (struct snapshot){.now_ns = NOW, .procs = w->p, .nprocs = 3};
	return w;
}

static const struct finding_setting *setting(const struct finding *f, const char *name)
{
	for (int i = 0; i < f->nsettings; i++)
		if (!strcmp(f->settings[i].name, name))
			return &f->settings[i];
	return NULL;
}

static const struct diag_config cfg = {.stall_threshold_ns = 5 * SEC, .active_window_ns = SEC};

static void test_ring_setup(void **state)
{
	struct world *w = world_new(true);
	struct finding out[8];
	const struct finding_setting *st;

	(void)state;
	assert_int_equal(diagnose(&w->s, &cfg, out, 8), 1);
	assert_int_equal(out[0].kind, FINDING_RING_SETUP_BLOCKED);
	assert_int_equal(out[0].rank, 1);
	assert_int_equal(out[0].peer_pid, 100);
	/* rank 0's connection to rank 1, as rank 0 logged it */
	assert_true(evidence_has(&out[0],
				 "NCCL log: rank 0 -> rank 1 via NET/Socket/0 on channel 0 "
				 "([send] on rank 0 (pid 100))"));
	assert_true(evidence_has(&out[0], "NCCL log of comm 0000000000c0ffee: ranks 0,2 set up "
					  "channels, no \"Connected all rings\"; rank 1 logged no "
					  "Channel line"));
	assert_true(evidence_has(&out[0],
				 "set up on one side only: 0 -> 1 via NET/Socket/0 on "
				 "channel 0: [send] by rank 0, no [receive] by rank 1; 1 -> "
				 "2 via NET/Socket/0 on channel 0: [receive] by rank 2, no "
				 "[send] by rank 1"));
	/* what in the log decided NET/Socket */
	assert_true(evidence_has(&out[0],
				 "NCCL log of rank 0: NET/Socket/0, with NCCL_P2P_DISABLE=1, "
				 "NCCL_SHM_DISABLE=1 set by environment; Using network Socket "
				 "(NET/IB: no device found); NET/Socket on lo 127.0.0.1<0>"));
	/* no probe read them, the environment does not have them: NCCL's log says so */
	st = setting(&out[0], "NCCL_P2P_DISABLE");
	assert_non_null(st);
	assert_string_equal(st->value, "1");
	assert_string_equal(st->source, "log");
	assert_non_null(setting(&out[0], "NCCL_SOCKET_IFNAME"));
	/* and nothing blames the transport settings for the wait (nccl-internals.md §7) */
	for (int i = 0; i < out[0].nhyp; i++)
		assert_null(strstr(out[0].hypotheses[i], "NCCL_P2P_DISABLE"));
	/* what a probe read wins over the log */
	w->p[0].set = (struct snap_setting[]){{"NCCL_P2P_DISABLE", "0", true}};
	w->p[0].nset = 1;
	assert_int_equal(diagnose(&w->s, &cfg, out, 8), 1);
	st = setting(&out[0], "NCCL_P2P_DISABLE");
	assert_string_equal(st->source, "read");
	assert_string_equal(st->value, "0");
	/* a log that names no such setting says so, and names none */
	w->log[0].nenv = 0;
	assert_int_equal(diagnose(&w->s, &cfg, out, 8), 1);
	assert_true(evidence_has(&out[0], "NCCL log of rank 0: NET/Socket/0, no P2P, SHM or GDR "
					  "setting set by environment; Using network Socket"));
	/* without the logs: none of it */
	for (int r = 0; r < 3; r++)
		w->p[r].nccl_log = NULL;
	assert_int_equal(diagnose(&w->s, &cfg, out, 8), 1);
	assert_false(evidence_has(&out[0], "NCCL log"));
	free(w);
}

/*
 * NCCL before 2.23 logs NCCL_P2P_DISABLE=1 as "NCCL_P2P_LEVEL set by environment to LOC"
 * (graph/paths.cc ncclGetLevel): the setting is the one the environment has
 */
static void test_p2p_level_before_223(void **state)
{
	struct world *w = world_new(true);
	struct snap_setting env[] = {{"NCCL_P2P_DISABLE", "1", false}};
	struct finding out[8];
	const struct finding_setting *st;

	(void)state;
	for (int r = 0; r < 3; r++) {
		for (int i = 0; i < w->log[r].nenv; i++)
			if (!strcmp(w->log[r].env[i].name, "NCCL_P2P_DISABLE")) {
				snprintf(w->log[r].env[i].name, sizeof(w->log[r].env[i].name),
					 "NCCL_P2P_LEVEL");
				snprintf(w->log[r].env[i].value, sizeof(w->log[r].env[i].value),
					 "LOC");
			}
		w->p[r].set = env;
		w->p[r].nset = 1;
	}
	assert_int_equal(diagnose(&w->s, &cfg, out, 8), 1);
	assert_true(evidence_has(&out[0], "NCCL log of rank 0: NET/Socket/0, with "
					  "NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE=1 set by "
					  "environment;"));
	assert_false(evidence_has(&out[0], "NCCL_P2P_LEVEL=LOC"));
	st = setting(&out[0], "NCCL_P2P_LEVEL");
	assert_true(!st || strcmp(st->source, "log"));
	st = setting(&out[0], "NCCL_P2P_DISABLE");
	assert_non_null(st);
	assert_string_equal(st->value, "1");
	/* without NCCL_P2P_DISABLE=1 in its environment the line is the level's */
	env[0].value = "0";
	assert_int_equal(diagnose(&w->s, &cfg, out, 8), 1);
	assert_true(evidence_has(&out[0], "with NCCL_P2P_LEVEL=LOC, NCCL_SHM_DISABLE=1 set by "
					  "environment;"));
	free(w);
}

static void test_init(void **state)
{
	struct world *w = world_new(false);
	struct finding out[8];

	(void)state;
	/* ranks 0 and 2 in init (bootstrap), rank 1 not started it: no Init START in its log */
	for (int r = 0; r < 3; r += 2) {
		w->p[r].nccl_setup = SNAP_SETUP_INIT;
		w->p[r].nccl_setup_since_ns = STALL_START;
		snprintf(w->p[r].nccl_phase, sizeof(w->p[r].nccl_phase), "bootstrap recv");
	}
	memset(&w->log[1], 0, sizeof(w->log[1]));
	assert_int_equal(diagnose(&w->s, &cfg, out, 8), 1);
	assert_int_equal(out[0].kind, FINDING_INIT_BLOCKED);
	assert_int_equal(out[0].rank, 1);
	assert_true(evidence_has(&out[0],
				 "NCCL log: Init START without Init COMPLETE from ranks "
				 "0,2 (comm 0000000000c0ffee of 3 ranks); rank 1 (pid 101) "
				 "logged no Init START of it"));
	free(w);
}

/* a waiter whose log has a path to the culprit over IB with GPU Direct RDMA */
static void test_gdr_link(void **state)
{
	struct world *w = world_new(true);
	struct finding out[8];
	struct snap_log_link k;
	char tr[64];

	(void)state;
	feed(&w->log[0], 100,
	     "GPU Direct RDMA Enabled for GPU 0 / HCA 1 (distance 5 <= 5), read 1 "
	     "mode Default");
	feed(&w->log[0], 100, "Channel 01/0 : 0[0] -> 1[1] [send] via NET/IB/1/GDRDMA");
	assert_true(snap_log_link(&w->s, 100, 101, 0, &k));
	assert_int_equal(k.ra, 0);
	assert_int_equal(k.rb, 1);
	assert_int_equal(k.npath, 2);
	snap_log_link_transports(&k, tr, sizeof(tr));
	assert_string_equal(tr, "NET/Socket/0, NET/IB/1/GDRDMA");
	/* the communicator asked for by its commId; an unknown one falls back to the shared one */
	assert_true(snap_log_link(&w->s, 100, 101, 0xc0ffee, &k));
	assert_int_equal(k.npath, 2);
	assert_true(snap_log_link(&w->s, 100, 101, 0xdead, &k));
	assert_int_equal(k.npath, 2);
	assert_int_equal(diagnose(&w->s, &cfg, out, 8), 1);
	assert_true(evidence_has(&out[0], "rank 0 -> rank 1 via NET/IB/1/GDRDMA on channel 1 "
					  "([send] on rank 0 (pid 100))"));
	assert_true(evidence_has(&out[0], "NCCL log: GPU Direct RDMA enabled for GPU 0 / HCA 1 "
					  "(distance 5 <= NCCL_NET_GDR_LEVEL's 5)"));
	assert_non_null(setting(&out[0], "NCCL_NET_GDR_LEVEL"));
	free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_setup),
		cmocka_unit_test(test_p2p_level_before_223),
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_gdr_link),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
