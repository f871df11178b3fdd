// SPDX-License-Identifier: MIT
/*
 * attach's pure parts: the kernel's socket view (sock_diag messages, tcp_info ages as
 * connections), seeding the BPF side's connections with their true age, finding the job from a
 * pid, its options, and NCCL phases from a stack taken at attach.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <stdio.h>
#include <string.h>
#include "testutil.h"
#include "cmd/cli.h"
#include "model/sockseed.h"
#include "nccl/ncclstate.h"
#include "trace/jobtree.h"
#include "trace/sockdiag.h"

#define SEC 1000000000ULL

struct got {
	struct sockdiag_sock v[4];
	int n;
};

static int collect(void *ctx, const struct sockdiag_sock *s)
{
	struct got *g = ctx;

	if (g->n < 4)
		g->v[g->n++] = *s;
	return 0;
}

/* One SOCK_DIAG_BY_FAMILY message with a tcp_info attribute, as the kernel sends it */
static size_t diag_msg(char *buf, int state, uint32_t ino, const struct tcp_info *ti)
{
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct inet_diag_msg *m = NLMSG_DATA(h);
	struct rtattr *a = (struct rtattr *)(m + 1);

	memset(buf, 0, NLMSG_SPACE(sizeof(*m) + RTA_SPACE(sizeof(*ti))));
	h->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	h->nlmsg_len = NLMSG_LENGTH(sizeof(*m) + RTA_SPACE(sizeof(*ti)));
	m->idiag_family = AF_INET;
	m->idiag_state = state;
	m->id.idiag_sport = htons(40000);
	m->id.idiag_dport = htons(5000);
	m->id.idiag_src[0] = htonl(0x7f000001);
	m->id.idiag_dst[0] = htonl(0x7f000002);
	m->idiag_inode = ino;
	m->idiag_rqueue = 0;
	m->idiag_wqueue = 300;
	a->rta_type = INET_DIAG_INFO;
	a->rta_len = RTA_LENGTH(sizeof(*ti));
	memcpy(RTA_DATA(a), ti, sizeof(*ti));
	return NLMSG_ALIGN(h->nlmsg_len);
}

static void test_parse_messages(void **state)
{
	char buf[4096] __attribute__((aligned(8)));
	struct tcp_info ti = {0};
	struct nlmsghdr *done;
	struct got g = {0};
	size_t off;

	(void)state;
	ti.tcpi_last_data_recv = 1200000; /* 1200 s */
	ti.tcpi_last_data_sent = 3000;
	ti.tcpi_total_retrans = 7;
	ti.tcpi_rtt = 85;
	ti.tcpi_bytes_acked = 1001;
	ti.tcpi_bytes_received = 5000;
	off = diag_msg(buf, 1 /* ESTABLISHED */, 4242, &ti);
	/* a TIME_WAIT socket has no owner: left out */
	off += diag_msg(buf + off, 6, 4243, &ti);
	done = (struct nlmsghdr *)(buf + off);
	done->nlmsg_type = NLMSG_DONE;
	done->nlmsg_len = NLMSG_LENGTH(4);
	off += NLMSG_ALIGN(done->nlmsg_len);
	assert_int_equal(sockdiag_parse(buf, off, collect, &g), 1);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.v[0].ino, 4242);
	assert_int_equal(g.v[0].t.sport, 40000);
	assert_int_equal(g.v[0].t.dport, 5000);
	assert_int_equal(g.v[0].t.saddr[0], 127);
	assert_int_equal(g.v[0].t.daddr[3], 2);
	assert_true(g.v[0].have_info);
	assert_int_equal(g.v[0].last_data_recv_ms, 1200000);
	assert_int_equal(g.v[0].total_retrans, 7);
	assert_int_equal(g.v[0].wqueue, 300);
	/* without the end, more follow */
	assert_int_equal(sockdiag_parse(buf, off - NLMSG_ALIGN(done->nlmsg_len), collect, &g), 0);
}

static void test_parse_error(void **state)
{
	char buf[256] __attribute__((aligned(8))) = {0};
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct nlmsgerr *e = NLMSG_DATA(h);
	struct got g = {0};

	(void)state;
	h->nlmsg_type = NLMSG_ERROR;
	h->nlmsg_len = NLMSG_LENGTH(sizeof(*e));
	e->error = -EPERM;
	assert_int_equal(sockdiag_parse(buf, h->nlmsg_len, collect, &g), -EPERM);
	assert_int_equal(g.n, 0);
}

/* tcp_info's ages date the last data each way: 1200 s silent is 1200 s old at once */
static void test_to_conn_ages(void **state)
{
	struct sockdiag_sock s = {.ino = 9, .state = 1, .have_info = true};
	uint64_t now = 5000 * SEC;
	struct nt_conn c;

	(void)state;
	s.last_data_recv_ms = 1200000;
	s.last_data_sent_ms = 1300000;
	s.bytes_acked = 1 + 4096;
	s.bytes_received = 8192;
	s.total_retrans = 3;
	sockdiag_to_conn(&s, 77, now, &c);
	assert_int_equal(c.tgid, 77);
	assert_int_equal(c.ino, 9);
	assert_int_equal(c.last_recv_ns, now - 1200 * SEC);
	assert_int_equal(c.last_send_ns, now - 1300 * SEC);
	assert_int_equal(c.first_ns, now - 1300 * SEC);
	assert_int_equal(c.bytes_sent, 4096); /* the SYN's sequence number is not a byte */
	assert_int_equal(c.bytes_recv, 8192);
	assert_int_equal(c.retrans, 3);
	/* no data ever: no last data dated, the connection as old as its establishment */
	s.bytes_acked = 1;
	s.bytes_received = 0;
	s.last_data_recv_ms = s.last_data_sent_ms = 60000;
	sockdiag_to_conn(&s, 77, now, &c);
	assert_int_equal(c.last_send_ns, 0);
	assert_int_equal(c.last_recv_ns, 0);
	assert_int_equal(c.first_ns, now - 60 * SEC);
	/* a listener is no data connection */
	s.state = 10;
	sockdiag_to_conn(&s, 77, now, &c);
	assert_true(c.flags & NT_CONN_LISTENER);
}

/* The BPF side meets an old socket at its first call after attach: its seed gives its age */
static void test_seed_apply(void **state)
{
	struct sockseeds ss = {.attach_ns = 1000 * SEC};
	struct nt_conn seed = {.ino = 5,
			       .first_ns = 10 * SEC,
			       .last_recv_ns = 20 * SEC,
			       .last_send_ns = 30 * SEC,
			       .bytes_sent = 100,
			       .retrans = 2};
	struct nt_conn bpf = {.ino = 5, .first_ns = 1000 * SEC + 1, .recv_eagain = 99};
	struct nt_conn other = {.ino = 6, .first_ns = 1001 * SEC};
	struct nt_conn before = {.ino = 5, .first_ns = 999 * SEC};

	(void)state;
	assert_int_equal(sockseeds_add(&ss, 42, &seed), 0);
	assert_int_equal(sockseeds_add(&ss, 42, &seed), 0);
	assert_int_equal(ss.n, 1);
	assert_true(sockseeds_apply(&ss, &bpf));
	assert_int_equal(bpf.first_ns, 10 * SEC);
	assert_int_equal(bpf.last_recv_ns, 20 * SEC);
	assert_int_equal(bpf.last_send_ns, 30 * SEC);
	assert_int_equal(bpf.bytes_sent, 100);
	assert_int_equal(bpf.retrans, 2);
	assert_int_equal(bpf.recv_eagain, 99);
	assert_true(ss.v[0].in_map);
	/* progress after the attach wins over the seed's */
	bpf = (struct nt_conn){.ino = 5, .first_ns = 1000 * SEC + 1, .last_recv_ns = 1002 * SEC};
	assert_true(sockseeds_apply(&ss, &bpf));
	assert_int_equal(bpf.last_recv_ns, 1002 * SEC);
	/* another socket, or one the BPF side saw start before, is left as it is */
	assert_false(sockseeds_apply(&ss, &other));
	assert_int_equal(other.first_ns, 1001 * SEC);
	assert_false(sockseeds_apply(&ss, &before));
	assert_int_equal(before.first_ns, 999 * SEC);
	sockseeds_free(&ss);
}

/* A later sock_diag view: figures follow, the start stays, dates never move back */
static void test_seed_refresh(void **state)
{
	struct sockseeds ss = {.attach_ns = 100 * SEC};
	struct nt_conn seed = {.ino = 5, .first_ns = 10 * SEC, .last_recv_ns = 20 * SEC};
	struct nt_conn now = {.ino = 5,
			      .first_ns = 11 * SEC,
			      .last_recv_ns = 20 * SEC - 3000000,
			      .send_q = 77,
			      .state = 8};

	(void)state;
	sockseeds_add(&ss, 42, &seed);
	sockseeds_refresh(&ss.v[0], &now);
	assert_int_equal(ss.v[0].c.first_ns, 10 * SEC);
	assert_int_equal(ss.v[0].c.last_recv_ns, 20 * SEC);
	assert_int_equal(ss.v[0].c.send_q, 77);
	assert_int_equal(ss.v[0].c.state, 8);
	assert_int_equal(ss.v[0].c.tgid, 42);
	assert_true(sockseed_id(5) != 5);
	sockseeds_free(&ss);
}

/*
 * shell 10 -> launcher 11 -> ranks 12, 13 (-> helper 14 of rank 13); another job 20 -> 21.
 * mpirun 30 -> prted 31 -> rank 32.
 */
static const struct jobtree_proc procs[] = {
	{1, 0, "systemd", -1},	{10, 1, "bash", -1},	{11, 10, "torchrun", -1},
	{12, 11, "python3", 0}, {13, 11, "python3", 1}, {14, 13, "pt_helper", 1},
	{20, 1, "ringjob", -1}, {21, 20, "ringjob", 0}, {30, 10, "mpirun", -1},
	{31, 30, "prted", -1},	{32, 31, "a.out", 0},
};
#define NPROCS ((int)(sizeof(procs) / sizeof(procs[0])))

static void test_job_root(void **state)
{
	char why[256];

	(void)state;
	/* a rank climbs to its launcher, a rank's helper too, a launcher stays */
	assert_int_equal(jobtree_root(procs, NPROCS, 12, why, sizeof(why)), 11);
	assert_contains(why, "pid 11 (torchrun)");
	assert_contains(why, "rank 0 (pid 12)");
	assert_int_equal(jobtree_root(procs, NPROCS, 14, why, sizeof(why)), 11);
	assert_int_equal(jobtree_root(procs, NPROCS, 11, why, sizeof(why)), 11);
	assert_contains(why, "was given");
	assert_int_equal(jobtree_root(procs, NPROCS, 21, why, sizeof(why)), 20);
	/* an MPI daemon's ranks belong to the mpirun that started it */
	assert_int_equal(jobtree_root(procs, NPROCS, 32, why, sizeof(why)), 30);
	assert_contains(why, "prted");
	assert_int_equal(jobtree_root(procs, NPROCS, 99, why, sizeof(why)), -1);
}

static void test_job_members(void **state)
{
	int out[16], n;

	(void)state;
	n = jobtree_members(procs, NPROCS, 11, out, 16);
	assert_int_equal(n, 4);
	assert_int_equal(out[0], 11);
	for (int i = 1; i < n; i++)
		assert_true(out[i] == 12 || out[i] == 13 || out[i] == 14);
	/* never another job's */
	n = jobtree_members(procs, NPROCS, 20, out, 16);
	assert_int_equal(n, 2);
	assert_int_equal(out[1], 21);
	assert_int_equal(jobtree_members(procs, NPROCS, 11, out, 2), 2);
	assert_int_equal(jobtree_members(procs, NPROCS, 98, out, 16), 0);
}

static int parse(struct attach_opts *o, char *err, const char *const *args, int n)
{
	char *argv[16];

	for (int i = 0; i < n; i++)
		argv[i] = (char *)args[i];
	argv[n] = NULL;
	return cli_parse_attach(n, argv, o, err, 256);
}

static void test_cli_attach(void **state)
{
	struct attach_opts o;
	char err[256];

	(void)state;
	assert_int_equal(parse(&o, err,
			       (const char *[]){"attach", "--once", "--json", "-t", "3", "-o",
						"/tmp/x.jsonl", "--collectives", "4711", "12"},
			       10),
			 0);
	assert_true(o.once);
	assert_true(o.json);
	assert_true(o.run.collectives);
	assert_int_equal(o.npids, 2);
	assert_int_equal(o.pids[0], 4711);
	assert_int_equal(o.pids[1], 12);
	assert_true(o.run.stall_threshold_s == 3);
	assert_string_equal(o.run.dump_path, "/tmp/x.jsonl");
	assert_int_equal(parse(&o, err, (const char *[]){"attach"}, 1), -1);
	assert_contains(err, "no pid");
	assert_int_equal(parse(&o, err, (const char *[]){"attach", "12x"}, 2), -1);
	assert_contains(err, "'12x' is not a pid");
	assert_int_equal(parse(&o, err, (const char *[]){"attach", "0"}, 2), -1);
	assert_int_equal(parse(&o, err, (const char *[]){"attach", "--json", "5"}, 3), -1);
	assert_contains(err, "--once");
	assert_int_equal(parse(&o, err, (const char *[]){"attach", "--user", "x", "5"}, 4), -1);
	assert_contains(err, "unknown option '--user'");
	assert_int_equal(parse(&o, err, (const char *[]){"attach", "-t", "0", "5"}, 4), -1);
	assert_int_equal(parse(&o, err, (const char *[]){"attach", "-h"}, 2), 0);
	assert_true(o.run.help);
}

static struct stack_frame frame(const char *sym)
{
	struct stack_frame f = {0};

	snprintf(f.symbol, sizeof(f.symbol), "%s", sym);
	snprintf(f.module, sizeof(f.module), "/x/libnccl.so.2");
	return f;
}

static void api_event(struct nccl_state *s, int probe, bool ret, uint64_t ts)
{
	struct nt_ev_nccl ev = {.h = {.type = NT_EV_NCCL, .ts_ns = ts},
				.pid = 100,
				.tid = 100,
				.probe = probe,
				.ret = ret,
				.depth = 1};

	json_decref(nccl_state__event(s, &ev));
}

/*
 * When a rank last entered an init and a transport setup, from its calls' entries: exact for a
 * setup shorter than a tick, which no tick sees (setup.c: it took part)
 */
static void test_setup_entered(void **state)
{
	struct nccl_state *s = nccl_state__new(NULL, NULL);
	struct snap_proc sp = {.pid = 100};

	(void)state;
	api_event(s, NT_P_API_INIT_RANK, false, 10 * SEC);
	api_event(s, NT_P_API_INIT_RANK, true, 11 * SEC);
	/* the first collective after init: its lazy connect, 20 ms */
	api_event(s, NT_P_API_ALLREDUCE, false, 12 * SEC);
	api_event(s, NT_P_API_ALLREDUCE, true, 12 * SEC + 20 * 1000000ULL);
	/* the second one sets nothing up */
	api_event(s, NT_P_API_ALLREDUCE, false, 13 * SEC);
	api_event(s, NT_P_API_ALLREDUCE, true, 13 * SEC + 1000);
	nccl_state__proc_snap(s, &sp);
	assert_int_equal(sp.nccl_init_entered_ns, 10 * SEC);
	assert_int_equal(sp.nccl_transport_entered_ns, 12 * SEC);
	nccl_state__free(s);
}

/* pid's snapshot after a stack of thread tid (innermost first) was seeded at 5 s */
static uint64_t gpu_wait_seeded(int tid, const char *const *syms, int n)
{
	struct nccl_state *s = nccl_state__new(NULL, NULL);
	struct stack_frame f[8];
	struct snap_proc sp = {.pid = 100};

	for (int i = 0; i < n; i++)
		f[i] = frame(syms[i]);
	nccl_state__seed_stack(s, 100, tid, f, n, 5 * SEC);
	nccl_state__seed_done(s, 100);
	nccl_state__proc_snap(s, &sp);
	nccl_state__free(s);
	/* the main thread's stack, taken, is known */
	assert_int_equal(sp.stack_at_attach_ns, tid == 100 ? 5 * SEC : 0);
	return sp.gpu_wait_at_attach_ns;
}

/*
 * At attach, a rank whose main thread waits on its GPU outside NCCL launched work (setup.c:
 * it took part in a first collective's setup under way); a copy that waits for nothing, a
 * thread in NCCL, or another thread's wait say nothing of it
 */
static void test_seed_gpu_wait(void **state)
{
	(void)state;
#define GPU_WAIT(tid, ...)                                                                         \
	gpu_wait_seeded(tid, (const char *const[]){__VA_ARGS__},                                   \
			sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *))
	assert_int_equal(GPU_WAIT(100, "ioctl", "cuStreamSynchronize", "main"), 5 * SEC);
	/* the per-thread default stream's variant, reached through the runtime */
	assert_int_equal(
		GPU_WAIT(100, "", "cuStreamSynchronize_ptsz", "cudaStreamSynchronize", "main"),
		5 * SEC);
	assert_int_equal(GPU_WAIT(100, "cuMemcpyDtoH_v2", "cudaMemcpy", "main"), 5 * SEC);
	assert_int_equal(GPU_WAIT(100, "cudaMemcpyAsync", "main"), 0);
	assert_int_equal(GPU_WAIT(100, "cuStreamSynchronizeX", "main"), 0);
	assert_int_equal(GPU_WAIT(100, "clock_nanosleep", "main"), 0);
	/* inside NCCL (a stream sync of its own, in its setup) */
	assert_int_equal(GPU_WAIT(100, "cuStreamSynchronize",
				  "_Z24ncclTransportRingConnectP8ncclComm", "pncclAllReduce",
				  "main"),
			 0);
	/* not its main thread */
	assert_int_equal(GPU_WAIT(101, "cuStreamSynchronize", "start_thread"), 0);
#undef GPU_WAIT
}

/* What the attach saw stays: a later stack's wait (a process in a finding) is not the attach's */
static void test_seed_gpu_wait_later(void **state)
{
	struct nccl_state *s = nccl_state__new(NULL, NULL);
	struct stack_frame sleep[] = {frame("clock_nanosleep"), frame("main")};
	struct stack_frame wait[] = {frame("cuStreamSynchronize"), frame("main")};
	struct snap_proc sp = {.pid = 100};

	(void)state;
	nccl_state__seed_stack(s, 100, 100, sleep, 2, 5 * SEC);
	nccl_state__seed_stack(s, 100, 100, wait, 2, 9 * SEC);
	nccl_state__proc_snap(s, &sp);
	assert_int_equal(sp.gpu_wait_at_attach_ns, 0);
	assert_int_equal(sp.stack_at_attach_ns, 5 * SEC);
	/* a main thread that did not stop in time at the attach (no frames): unknown */
	nccl_state__seed_stack(s, 200, 200, NULL, 0, 5 * SEC);
	sp = (struct snap_proc){.pid = 200};
	nccl_state__proc_snap(s, &sp);
	assert_int_equal(sp.attached_ns, 5 * SEC);
	assert_int_equal(sp.stack_at_attach_ns, 0);
	/* retaken a second later: what it shows is the attach's */
	nccl_state__seed_stack(s, 200, 200, wait, 2, 6 * SEC);
	nccl_state__proc_snap(s, &sp);
	assert_int_equal(sp.stack_at_attach_ns, 6 * SEC);
	assert_int_equal(sp.gpu_wait_at_attach_ns, 6 * SEC);
	/* past the retakes' while (a stack of a process in a finding): not the attach's */
	nccl_state__seed_stack(s, 300, 300, NULL, 0, 5 * SEC);
	nccl_state__seed_stack(s, 300, 300, wait, 2, 5 * SEC + NT_ATTACH_RETAKE_NS + 1);
	sp = (struct snap_proc){.pid = 300};
	nccl_state__proc_snap(s, &sp);
	assert_int_equal(sp.stack_at_attach_ns, 0);
	assert_int_equal(sp.gpu_wait_at_attach_ns, 0);
	/*
	 * not stopped on purpose (uninterruptible, or in epoll_wait, which a stop would break):
	 * its place is /proc's to say, it is seen
	 */
	nccl_state__seed_stack(s, 400, 400, NULL, 0, 5 * SEC);
	nccl_state__seed_refused(s, 400, 5 * SEC);
	sp = (struct snap_proc){.pid = 400};
	nccl_state__proc_snap(s, &sp);
	assert_int_equal(sp.stack_at_attach_ns, 5 * SEC);
	assert_false(snap_proc_unseen(&sp));
	nccl_state__free(s);
}

/* A thread inside NCCL's ring setup when nccltrace attached: in it from the attach on */
static void test_seed_phases(void **state)
{
	struct nccl_state *s = nccl_state__new(NULL, NULL);
	struct stack_frame f[] = {
		frame("accept4"),
		frame("_Z16ncclSocketAcceptP10ncclSocketS0_"),
		frame("_Z21ncclTransportP2pSetupP8ncclCommP13ncclTopoGraphi"),
		frame("_Z24ncclTransportRingConnectP8ncclComm"),
		frame("pncclAllReduce"),
		frame("main"),
	};
	struct stack_frame g[] = {frame("clock_nanosleep"), frame("main")};
	char buf[128];
	uint64_t since = 0;

	(void)state;
	nccl_state__seed_stack(s, 100, 100, f, 6, 50 * SEC);
	assert_true(nccl_state__phase(s, 100, &since, buf, sizeof(buf)));
	assert_string_equal(buf, "socket accept");
	assert_int_equal(since, 50 * SEC);
	assert_int_equal(nccl_state__setup(s, 100, &since), SNAP_SETUP_TRANSPORT);
	assert_int_equal(since, 50 * SEC);
	assert_true(nccl_state__setup_at_attach(s, 100));
	/*
	 * the accept's entry, read after the stack though it came before it: the innermost seeded
	 * frame is that call's, and its return leaves the setup around it
	 */
	struct nt_ev_nccl ev = {.h = {.type = NT_EV_NCCL, .ts_ns = 49 * SEC},
				.pid = 100,
				.tid = 100,
				.probe = NT_P_SOCKET_ACCEPT,
				.depth = 1};
	json_decref(nccl_state__event(s, &ev));
	assert_true(nccl_state__phase(s, 100, &since, buf, sizeof(buf)));
	assert_string_equal(buf, "socket accept");
	assert_int_equal(since, 49 * SEC);
	ev.ret = 1;
	ev.h.ts_ns = 51 * SEC;
	json_decref(nccl_state__event(s, &ev));
	assert_true(nccl_state__phase(s, 100, &since, buf, sizeof(buf)));
	assert_string_equal(buf, "transport setup");
	assert_int_equal(nccl_state__setup(s, 100, &since), SNAP_SETUP_TRANSPORT);
	/* a later stack outside NCCL: the seeded phases are gone */
	nccl_state__seed_stack(s, 100, 100, g, 2, 52 * SEC);
	assert_false(nccl_state__phase(s, 100, &since, buf, sizeof(buf)));
	assert_int_equal(nccl_state__setup(s, 100, &since), SNAP_SETUP_NONE);
	/* inside a collective with no setup under it: a later collective, not the first's setup */
	nccl_state__seed_stack(s, 200, 200, &f[4], 2, 50 * SEC);
	nccl_state__seed_done(s, 200);
	assert_true(nccl_state__phase(s, 200, &since, buf, sizeof(buf)));
	assert_int_equal(nccl_state__setup(s, 200, &since), SNAP_SETUP_NONE);
	/*
	 * NCCL 2.28, a group of several communicators: the caller waits in ncclGroupEnd while a
	 * thread of NCCL's own connects each: the process is in its first collective's setup
	 */
	struct stack_frame caller[] = {frame("sched_yield"), frame("ncclGroupEnd"), frame("main")};
	struct stack_frame job[] = {frame("accept4"), frame("_Z16ncclSocketAcceptP10ncclSocketS0_"),
				    frame("_Z24ncclTransportRingConnectP8ncclComm"),
				    frame("ncclAsyncJobMain"), frame("start_thread")};
	nccl_state__seed_stack(s, 300, 300, caller, 3, 50 * SEC);
	nccl_state__seed_stack(s, 300, 301, job, 5, 50 * SEC);
	nccl_state__seed_done(s, 300);
	assert_int_equal(nccl_state__setup(s, 300, &since), SNAP_SETUP_TRANSPORT);
	/* a start routine names the thread's role */
	struct stack_frame r[] = {frame("poll"), frame("_Z16ncclProxyServicePv"),
				  frame("start_thread")};
	nccl_state__seed_stack(s, 100, 101, r, 3, 50 * SEC);
	json_t *j = nccl_state__proc_json(s, 100, 51 * SEC);
	char *txt = json_dumps(j, 0);
	assert_contains(txt, "proxy_service");
	free(txt);
	json_decref(j);
	nccl_state__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_messages), cmocka_unit_test(test_parse_error),
		cmocka_unit_test(test_to_conn_ages),   cmocka_unit_test(test_seed_apply),
		cmocka_unit_test(test_seed_refresh),   cmocka_unit_test(test_job_root),
		cmocka_unit_test(test_job_members),    cmocka_unit_test(test_cli_attach),
		cmocka_unit_test(test_seed_phases),    cmocka_unit_test(test_setup_entered),
		cmocka_unit_test(test_seed_gpu_wait),  cmocka_unit_test(test_seed_gpu_wait_later),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
