// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include "diagnose/explain.h"
#include "nccl/ibwarn.h"
#include "nccl/ncclparams.h"
#include "testutil.h"

#define SEC NT_NSEC_PER_SEC
#define NOW (1000 * SEC)

static struct snap_proc procs[4];
static struct snap_conn conns[4];
static struct snapshot snap;

/* Ranks 0..n-1 (pids 100+r), alive, with the settings given per rank. */
static void job(int n, const struct snap_setting *const *set, const int *nset)
{
	memset(procs, 0, sizeof(procs));
	memset(conns, 0, sizeof(conns));
	memset(&snap, 0, sizeof(snap));
	for (int r = 0; r < n; r++) {
		procs[r].pid = 100 + r;
		procs[r].rank = r;
		procs[r].state = 'S';
		procs[r].nccl = true; /* NCCL's probes are live in it */
		procs[r].set = set ? set[r] : NULL;
		procs[r].nset = nset ? nset[r] : 0;
	}
	snap.now_ns = NOW;
	snap.procs = procs;
	snap.nprocs = n;
	snap.conns = conns;
}

static struct finding finding(enum finding_kind kind, int culprit, int waiter)
{
	struct finding f;

	memset(&f, 0, sizeof(f));
	f.kind = kind;
	f.pid = 100 + culprit;
	f.rank = culprit;
	f.peer_pid = 100 + waiter;
	f.peer_rank = waiter;
	f.waiters[f.nwaiters++] = (struct finding_waiter){100 + waiter, waiter};
	f.conn = -1;
	return f;
}

static const struct finding_setting *setting(const struct finding *f, const char *name)
{
	for (int i = 0; i < f->nsettings; i++)
		if (!strcmp(f->settings[i].name, name))
			return &f->settings[i];
	return NULL;
}

static int hyp_with(const struct finding *f, const char *needle)
{
	for (int i = 0; i < f->nhyp; i++)
		if (strstr(f->hypotheses[i], needle))
			return i;
	return -1;
}

static void test_settings_as_read_env_default(void **state)
{
	static const struct snap_setting r0[] = {{"NCCL_SOCKET_RETRY_CNT", "10", true},
						 {"NCCL_P2P_DISABLE", "1", false}};
	const struct snap_setting *set[] = {r0, r0};
	const int nset[] = {2, 2};
	struct finding f = finding(FINDING_RING_SETUP_BLOCKED, 1, 0);
	const struct finding_setting *fs;

	(void)state;
	job(2, set, nset);
	explain_finding(&snap, &f);
	fs = setting(&f, "NCCL_SOCKET_RETRY_CNT");
	assert_non_null(fs);
	assert_string_equal(fs->value, "10");
	assert_string_equal(fs->source, "read");
	assert_string_equal(fs->ranks, "");
	fs = setting(&f, "NCCL_P2P_DISABLE");
	assert_string_equal(fs->source, "environ");
	fs = setting(&f, "NCCL_SOCKET_RETRY_SLEEP_MSEC");
	assert_string_equal(fs->value, "100");
	assert_string_equal(fs->source, "default");
	fs = setting(&f, "NCCL_SOCKET_IFNAME");
	assert_string_equal(fs->source, "unset");
	/* the lazy connect: named with the value it rests on */
	assert_true(hyp_with(&f, "NCCL_RUNTIME_CONNECT=1, default") >= 0);
	/* init waits have their own settings */
	f = finding(FINDING_INIT_BLOCKED, 1, 0);
	explain_finding(&snap, &f);
	assert_non_null(setting(&f, "NCCL_COMM_ID"));
	assert_null(setting(&f, "NCCL_IB_TIMEOUT"));
}

static void test_ifname_differs_ranked_first(void **state)
{
	static const struct snap_setting r0[] = {{"NCCL_SOCKET_IFNAME", "eth0", true}};
	static const struct snap_setting r1[] = {{"NCCL_SOCKET_IFNAME", "eth1", true}};
	const struct snap_setting *set[] = {r0, r1, r0};
	const int nset[] = {1, 1, 1};
	struct finding f = finding(FINDING_INIT_BLOCKED, 1, 0);

	(void)state;
	job(3, set, nset);
	explain_finding(&snap, &f);
	assert_string_equal(setting(&f, "NCCL_SOCKET_IFNAME")->ranks,
			    "rank 0 eth0, rank 1 eth1, rank 2 eth0");
	/* rank 1 outside NCCL: its own code holds it, whatever its interface */
	assert_int_equal(hyp_with(&f, "has not called ncclCommInitRank"), 0);
	assert_true(hyp_with(&f, "NCCL_SOCKET_IFNAME differs across ranks") > 0);
	/* rank 1 in init itself, connecting: its interface is the first suspect */
	procs[1].nccl_setup = SNAP_SETUP_INIT;
	f = finding(FINDING_INIT_BLOCKED, 1, 0);
	explain_finding(&snap, &f);
	assert_int_equal(hyp_with(&f, "NCCL_SOCKET_IFNAME differs across ranks"), 0);
	procs[1].nccl_setup = SNAP_SETUP_NONE;
	/* the same everywhere: no difference told */
	set[1] = r0;
	job(3, set, nset);
	f = finding(FINDING_INIT_BLOCKED, 1, 0);
	explain_finding(&snap, &f);
	assert_int_equal(hyp_with(&f, "differs"), -1);
}

/* interface names and per-host settings differ across hosts by design: listed, never a cause */
static void test_host_differences_by_design(void **state)
{
	static const struct snap_setting a[] = {
		{"NCCL_SOCKET_IFNAME", "eth0", true},
		{"NCCL_HOSTID", "a", true},
		{"NCCL_DEBUG_FILE", "/tmp/a/nccl.%h.%p.log", false}};
	static const struct snap_setting b[] = {
		{"NCCL_SOCKET_IFNAME", "ens1", true},
		{"NCCL_HOSTID", "b", true},
		{"NCCL_DEBUG_FILE", "/tmp/b/nccl.%h.%p.log", false}};
	const struct snap_setting *set[] = {a, a, b, b};
	const int nset[] = {3, 3, 3, 3};
	struct finding f = finding(FINDING_RING_SETUP_BLOCKED, 2, 0);

	(void)state;
	job(4, set, nset);
	procs[0].host = procs[1].host = "host-a";
	procs[2].host = procs[3].host = "host-b";
	explain_finding(&snap, &f);
	assert_non_null(setting(&f, "NCCL_SOCKET_IFNAME"));
	assert_int_equal(hyp_with(&f, "differs"), -1);
	/* two ranks of one host on different interfaces: a cause again */
	set[1] = b;
	job(4, set, nset);
	procs[0].host = procs[1].host = "host-a";
	procs[2].host = procs[3].host = "host-b";
	f = finding(FINDING_RING_SETUP_BLOCKED, 2, 0);
	explain_finding(&snap, &f);
	assert_true(hyp_with(&f, "NCCL_SOCKET_IFNAME differs across ranks") >= 0);
	assert_int_equal(hyp_with(&f, "NCCL_HOSTID"), -1);
	assert_int_equal(hyp_with(&f, "NCCL_DEBUG_FILE"), -1);
}

static void test_other_difference_and_fake_name(void **state)
{
	static const struct snap_setting r0[] = {{"NCCL_P2P_DISABLE", "1", true},
						 {"NCCL_SOCKET_TIMEOUT", "30", false}};
	static const struct snap_setting r1[] = {{"NCCL_P2P_DISABLE", "0", true},
						 {"NCCL_SOCKET_TIMEOUT", "30", false}};
	const struct snap_setting *set[] = {r0, r1};
	const int nset[] = {2, 2};
	struct finding f = finding(FINDING_STALL, 1, 0);

	(void)state;
	job(2, set, nset);
	explain_finding(&snap, &f);
	assert_true(hyp_with(&f, "NCCL_P2P_DISABLE differs across ranks (rank 0 1, rank 1 0)") >=
		    0);
	/* NCCL_HOSTID is meant to differ from host to host: listed, never a cause */
	{
		static const struct snap_setting h0[] = {{"NCCL_HOSTID", "node-a", true}};
		static const struct snap_setting h1[] = {{"NCCL_HOSTID", "node-b", true}};
		const struct snap_setting *hs[] = {h0, h1};
		const int nh[] = {1, 1};
		struct finding g = finding(FINDING_STALL, 1, 0);

		job(2, hs, nh);
		explain_finding(&snap, &g);
		assert_int_equal(hyp_with(&g, "NCCL_HOSTID"), -1);
		job(2, set, nset);
	}
	/* told once, however many ranks have it */
	assert_true(hyp_with(&f, "NCCL_SOCKET_TIMEOUT=30 is set, but NCCL has no socket") >= 0);
	assert_string_equal(setting(&f, "NCCL_SOCKET_TIMEOUT")->source, "not read");
	{
		int n = 0;

		for (int i = 0; i < f.nhyp; i++)
			n += strstr(f.hypotheses[i], "NCCL_SOCKET_TIMEOUT") != NULL;
		assert_int_equal(n, 1);
	}
}

static void test_network_evidence(void **state)
{
	static const struct snap_setting r[] = {{"NCCL_SOCKET_RETRY_CNT", "4", true},
						{"NCCL_SOCKET_RETRY_SLEEP_MSEC", "200", true}};
	const struct snap_setting *set[] = {r, r};
	const int nset[] = {2, 2};
	struct finding f = finding(FINDING_RING_SETUP_BLOCKED, 1, 0);

	(void)state;
	job(2, set, nset);
	/* rank 0's connect to 10.0.0.9 is never answered; NCCL retried 3 times */
	conns[0].pid = 100;
	conns[0].c.t = test_tuple(AF_INET, "10.0.0.1", 40000, "10.0.0.9", 43517);
	conns[0].c.state = 2;
	conns[0].c.syn_retrans = 5;
	snap.nconns = 1;
	procs[0].nccl_retries = 3;
	explain_finding(&snap, &f);
	assert_int_equal(hyp_with(&f, "packets to 10.0.0.9:43517 are dropped (5 SYN"), 0);
	assert_true(hyp_with(&f, "4+1 connect attempts") == 0);
	/* 4 retries sleeping 200, 400, 600, 800 ms: 2 s */
	assert_int_equal(hyp_with(&f, "had 3 connects fail"), 1);
	assert_true(hyp_with(&f, "gives up after 4 retries, 2.0 s of sleeps") == 1);
}

static void test_kind_rules(void **state)
{
	struct finding f;

	(void)state;
	job(2, NULL, NULL);
	f = finding(FINDING_PEER_STOPPED, 1, 0);
	explain_finding(&snap, &f);
	assert_true(hyp_with(&f, "kill -CONT 101") >= 0);
	procs[1].exited = true;
	procs[1].exit_status = SIGKILL; /* as wait(2) reports a SIGKILL */
	f = finding(FINDING_PEER_DEAD, 1, 0);
	explain_finding(&snap, &f);
	assert_true(hyp_with(&f, "OOM killer") >= 0);
	f = finding(FINDING_COLLECTIVE_MISMATCH, 1, 0);
	explain_finding(&snap, &f);
	assert_true(hyp_with(&f, "TORCH_DISTRIBUTED_DEBUG=DETAIL") >= 0);
	f = finding(FINDING_STRAGGLER, 0, 1);
	explain_finding(&snap, &f);
	assert_true(hyp_with(&f, "reaches every collective last") >= 0);
	/* never started: nothing to ask but the launcher */
	f = finding(FINDING_PEER_DEAD, 3, 0);
	f.pid = 0;
	explain_finding(&snap, &f);
	assert_true(hyp_with(&f, "no process has RANK=3") >= 0);
	assert_non_null(setting(&f, "NCCL_COMM_ID"));
	/* a job that does not use NCCL: its settings are not worth listing */
	procs[0].nccl = procs[1].nccl = false;
	f = finding(FINDING_STALL, 0, 1);
	explain_finding(&snap, &f);
	assert_int_equal(f.nsettings, 0);
	assert_true(hyp_with(&f, "is not exchanging data: its own code holds it") >= 0);
	assert_int_equal(hyp_with(&f, "NCCL"), -1);
	procs[0].nccl = procs[1].nccl = true;
	/* NCCL's last WARN becomes evidence */
	procs[1].nccl_warning = "NET/Socket : Connection closed by remote peer";
	f = finding(FINDING_STALL, 1, 0);
	explain_finding(&snap, &f);
	assert_int_equal(f.nevidence, 1);
	assert_string_equal(f.evidence[0], "NCCL WARN on rank 1 (pid 101): NET/Socket : "
					   "Connection closed by remote peer");
	/* a failure's WARNs: where it started first, then the last of them */
	procs[1].nccl_first_warning = "socketStartConnect: Connect to 127.0.0.1<4242> failed : "
				      "Software caused connection abort";
	procs[1].nccl_burst_warnings = 3;
	f = finding(FINDING_STALL, 1, 0);
	explain_finding(&snap, &f);
	assert_int_equal(f.nevidence, 2);
	assert_string_equal(f.evidence[0], "NCCL WARN on rank 1 (pid 101): socketStartConnect: "
					   "Connect to 127.0.0.1<4242> failed : Software caused "
					   "connection abort");
	assert_string_equal(f.evidence[1], "NCCL WARN on rank 1 (pid 101), the last of 3: "
					   "NET/Socket : Connection closed by remote peer");
	/* the same text again and again is said once */
	procs[1].nccl_first_warning = procs[1].nccl_warning;
	f = finding(FINDING_STALL, 1, 0);
	explain_finding(&snap, &f);
	assert_int_equal(f.nevidence, 1);
}

static void test_ib_warn_parse(void **state)
{
	struct ib_completion c;

	(void)state;
	/* NCCL 2.28's net_ib.cc, RoCE */
	assert_true(ib_parse_completion(
		"NET/IB: Got completion from peer 10.0.0.2<43517> with "
		"status=IBV_WC_RETRY_EXC_ERR(12) "
		"opcode=IBV_WC_RDMA_WRITE(1) vendor_err=129  localGid ::ffff:10.0.0.1 "
		"remoteGids::ffff:10.0.0.2 hca mlx5_3",
		&c));
	assert_string_equal(c.peer, "10.0.0.2<43517>");
	assert_int_equal(c.status, 12);
	assert_int_equal(c.opcode, 1);
	assert_int_equal(c.vendor_err, 129);
	assert_string_equal(c.hca, "mlx5_3");
	assert_true(c.roce);
	/* older releases: numbers only, "vendor err N", InfiniBand (no GIDs) */
	assert_true(ib_parse_completion("NET/IB : Got completion from peer 10.0.0.7<1234> with "
					"status=5 opcode=0 len=0 vendor err 244 (Send) hca mlx5_0",
					&c));
	assert_int_equal(c.status, 5);
	assert_int_equal(c.vendor_err, 244);
	assert_false(c.roce);
	assert_string_equal(ib_wc_status_name(c.status), "IBV_WC_WR_FLUSH_ERR");
	assert_false(ib_parse_completion("NET/Socket : Connection closed by remote peer", &c));
	assert_false(ib_parse_completion("NET/IB : Got completion from peer", &c));
	/* 4.096 us x 2^20 x (7+1): about 34.4 s */
	assert_true(ib_retry_window_s(20, 7) > 34.35 && ib_retry_window_s(20, 7) < 34.36);
	assert_true(ib_retry_window_s(0, 7) == 0);
}

static void test_ib_error_rules(void **state)
{
	static const struct snap_setting r[] = {{"NCCL_IB_TIMEOUT", "14", true},
						{"NCCL_IB_RETRY_CNT", "3", true}};
	const struct snap_setting *set[] = {r, r};
	const int nset[] = {2, 2};
	struct snap_ib_error ib = {.count = 1, .status = 12, .colls_before = 0, .roce = true};
	struct finding f = finding(FINDING_IB_ERROR, 1, 0);

	(void)state;
	snprintf(ib.peer, sizeof(ib.peer), "10.0.0.2<43517>");
	job(2, set, nset);
	procs[1].ib_err = &ib;
	explain_finding(&snap, &f);
	/* at the first transfer: GIDs and routing; 4 tries of 4.096 us x 2^14 = 0.27 s */
	assert_int_equal(hyp_with(&f, "no ACK ever came back at the first transfer"), 0);
	assert_true(hyp_with(&f, "tried for 0.3 s (3+1 tries") == 0);
	assert_string_equal(setting(&f, "NCCL_IB_TIMEOUT")->value, "14");
	assert_non_null(setting(&f, "NCCL_IB_GID_INDEX"));
	/* in the middle of the run: the peer or a link went down */
	ib.colls_before = 500;
	f = finding(FINDING_IB_ERROR, 1, 0);
	explain_finding(&snap, &f);
	assert_int_equal(hyp_with(&f, "ACKs stopped in the middle of the run"), 0);
	ib.status = 5;
	f = finding(FINDING_IB_ERROR, 1, 0);
	explain_finding(&snap, &f);
	assert_int_equal(hyp_with(&f, "follows another error on the same QP"), 0);
	procs[1].ib_err = NULL;
}

static void test_params_table(void **state)
{
	const struct nccl_param *p;
	char why[160];
	const char *names[] = {"NCCL_SOCKET_IFNAME", "NCCL_SOCKET_RETRY_CNT", "NCCL_IB_TIMEOUT"};

	(void)state;
	p = nccl_param_find("NCCL_SOCKET_RETRY_CNT");
	assert_non_null(p);
	assert_string_equal(p->def, "34");
	assert_null(nccl_param_find("NCCL_SOCKET_TIMEOUT"));
	assert_non_null(nccl_fake_find("NCCL_SOCKET_TIMEOUT"));
	assert_true(nccl_fake_find("NCCL_ASYNC_ERROR_HANDLING")->pytorch);
	assert_null(nccl_fake_find("NCCL_DEBUG"));
	for (int i = 0; nccl_param_at(i); i++)
		assert_null(nccl_fake_find(nccl_param_at(i)->name));
	assert_string_equal(nccl_param_closest("NCCL_SOCKET_IFNAMES", names, 3),
			    "NCCL_SOCKET_IFNAME");
	assert_string_equal(nccl_param_closest("NCCL_IB_TIMOUT", names, 3), "NCCL_IB_TIMEOUT");
	assert_null(nccl_param_closest("NCCL_FOO", names, 3));
	assert_int_equal(nccl_edit_distance("kitten", "sitting"), 3);
	assert_int_equal(nccl_edit_distance("", "abc"), 3);
	p = nccl_param_find("NCCL_IB_TIMEOUT");
	assert_true(nccl_param_valid(p, "22", why, sizeof(why)));
	assert_false(nccl_param_valid(p, "abc", why, sizeof(why)));
	assert_string_equal(why, "is not an integer: NCCL reads it with strtoll, which makes it 0");
	assert_false(nccl_param_valid(p, "40", why, sizeof(why)));
	assert_string_equal(why, "is out of range [0, 31]");
	p = nccl_param_find("NCCL_NET_GDR_LEVEL");
	assert_true(nccl_param_valid(p, "PHB", why, sizeof(why)));
	assert_true(nccl_param_valid(p, "2", why, sizeof(why)));
	assert_false(nccl_param_valid(p, "PCI", why, sizeof(why)));
	assert_true(
		nccl_param_valid(nccl_param_find("NCCL_SOCKET_IFNAME"), "^lo", why, sizeof(why)));
	assert_true(nccl_retry_window_s(34, 100) > 59.4 && nccl_retry_window_s(34, 100) < 59.6);
	assert_true(nccl_retry_window_s(0, 100) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_settings_as_read_env_default),
		cmocka_unit_test(test_ifname_differs_ranked_first),
		cmocka_unit_test(test_host_differences_by_design),
		cmocka_unit_test(test_other_difference_and_fake_name),
		cmocka_unit_test(test_network_evidence),
		cmocka_unit_test(test_kind_rules),
		cmocka_unit_test(test_ib_warn_parse),
		cmocka_unit_test(test_ib_error_rules),
		cmocka_unit_test(test_params_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
