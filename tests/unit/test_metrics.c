// SPDX-License-Identifier: MIT
/* /metrics' text (present/metrics.c) and --listen's address (cmd/listen.c), on plain data. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "cmd/listen.h"
#include "present/metrics.h"

#define SEC NT_NSEC_PER_SEC
#define NOW (100 * SEC)

static void test_metrics_text(void **state)
{
	static struct snap_nccl_log log = {.ncomm = 1, .comm = {{.cuda_dev = 3}}};
	struct snap_proc procs[2] = {
		{.pid = 10, .rank = 0, .nccl = true, .comm = "python3"},
		{.pid = 11,
		 .rank = 1,
		 .nccl = true,
		 .host = "b\"x",
		 .host_pid = 7,
		 .nccl_log = &log},
	};
	struct snap_conn conns[1] = {{.pid = 10, .peer_pid = 11}};
	struct snap_comm comms[1] = {
		{.pid = 10, .hash = 0xabc, .seq_ok = true, .seq = {0, 0, 0, 0, 42}}};
	struct snapshot s = {.now_ns = NOW,
			     .procs = procs,
			     .nprocs = 2,
			     .conns = conns,
			     .nconns = 1,
			     .comms = comms,
			     .ncomms = 1};
	/* one sure stall, one early (below -t, not yet an alarm), two transients before */
	struct tracked_finding tf[2] = {{.open = true, .sure = true, .f = {.kind = FINDING_STALL}},
					{.open = true, .f = {.kind = FINDING_STALL}}};
	struct findings fs = {.v = tf, .n = 2, .ntransient = 2};
	char *t;

	(void)state;
	strcpy(procs[0].nccl_phase, "ncclAllReduce");
	conns[0].c.t.family = AF_INET;
	conns[0].c.t.saddr[0] = conns[0].c.t.daddr[0] = 10;
	conns[0].c.t.sport = 5000;
	conns[0].c.t.dport = 6000;
	conns[0].c.bytes_sent = 1234;
	conns[0].c.retrans = 3;
	conns[0].c.last_send_ns = NOW - 2 * SEC;
	t = metrics_text(&s, &fs, "a");
	assert_non_null(t);
	/* every family typed, counters named _total */
	assert_non_null(strstr(t, "# TYPE nccltrace_rank_phase gauge\n"));
	assert_non_null(strstr(t, "# TYPE nccltrace_conn_sent_bytes_total counter\n"));
	assert_non_null(strstr(t, "nccltrace_rank_phase{host=\"a\",rank=\"0\",pid=\"10\",phase="
				  "\"ncclAllReduce\"} 1\n"));
	/* a merged process: its own host (escaped), its own pid, its GPU from NCCL's log */
	assert_non_null(strstr(t, "nccltrace_rank_phase{host=\"b\\\"x\",rank=\"1\",pid=\"7\",gpu="
				  "\"3\",phase=\"none\"} 1\n"));
	assert_non_null(strstr(t, "nccltrace_rank_seconds_without_progress{host=\"a\",rank=\"0\","
				  "pid=\"10\"} 2.000\n"));
	assert_non_null(strstr(t, "comm_hash=\"0000000000000abc\",coll=\"AllReduce\"} 42\n"));
	assert_non_null(strstr(t, "nccltrace_conn_sent_bytes_total{host=\"a\",rank=\"0\",pid="
				  "\"10\",src=\"10.0.0.0:5000\",dst=\"10.0.0.0:6000\"} 1234\n"));
	assert_non_null(strstr(t, "nccltrace_conn_retransmits_total{host=\"a\",rank=\"0\",pid="
				  "\"10\",src=\"10.0.0.0:5000\",dst=\"10.0.0.0:6000\"} 3\n"));
	assert_non_null(strstr(t, "nccltrace_findings{host=\"a\",kind=\"stall\"} 1\n"));
	assert_non_null(strstr(t, "nccltrace_findings{host=\"a\",kind=\"peer_dead\"} 0\n"));
	/* early and transient ones apart from the alarms */
	assert_non_null(strstr(t, "nccltrace_findings_early{host=\"a\",kind=\"stall\"} 1\n"));
	assert_non_null(strstr(t, "nccltrace_findings_transient_total{host=\"a\"} 2\n"));
	free(t);
}

static void test_listen_spec(void **state)
{
	struct sockaddr_storage ss;
	bool lo = false;

	(void)state;
	assert_true(listen_parse_spec("9464", &ss, &lo));
	assert_true(lo);
	assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 9464);
	assert_true(listen_parse_spec("198.18.0.1:80", &ss, &lo));
	assert_false(lo);
	assert_true(listen_parse_spec("[::1]:9464", &ss, &lo));
	assert_true(lo);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_true(listen_parse_spec("127.0.0.2:0", &ss, &lo));
	assert_true(lo);
	assert_false(listen_parse_spec("host:9464", &ss, &lo));
	assert_false(listen_parse_spec("1.2.3.4:99999", &ss, &lo));
	assert_false(listen_parse_spec(":9464", &ss, &lo));
	assert_false(listen_parse_spec("1.2.3.4:", &ss, &lo));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics_text),
		cmocka_unit_test(test_listen_spec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
