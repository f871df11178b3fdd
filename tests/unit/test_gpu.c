// SPDX-License-Identifier: MIT
/*
 * The GPU as a suspect: the kernel's Xid lines read from /dev/kmsg records (hostile and truncated
 * ones too), and diagnose() on synthetic snapshots: gpu_error names the rank whose GPU raised
 * the Xid and takes over the stall that named it; throttling, a degraded link, ACS and a GPU
 * shared by ranks, a rank pinned away from its GPU's or its NIC's NUMA node become hypotheses
 * on a straggler or a stall; which GPU is a rank's, from
 * NVML's processes, NCCL's log and CUDA_VISIBLE_DEVICES with LOCAL_RANK.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include "diagnose/explain.h"
#include "diagnose/rules.h"
#include "model/gpupick.h"
#include "trace/xid.h"
#include "util/clock.h"

#define SEC NT_NSEC_PER_SEC
#define NOW (1000 * SEC)

static bool parse(const char *rec, struct xid_event *e)
{
	return xid_parse_kmsg(rec, strlen(rec), e);
}

static void test_xid_lines(void **state)
{
	struct xid_event e;
	char big[2000];

	(void)state;
	assert_true(parse("3,1234,5678901,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=4711, "
			  "name=python3, GPU has fallen off the bus.\n",
			  &e));
	assert_string_equal(e.bus, "0000:3b:00");
	assert_int_equal(e.xid, 79);
	assert_int_equal(e.pid, 4711);
	assert_non_null(strstr(e.text, "fallen off the bus"));
	/* older drivers: no PCI: prefix, no pid */
	assert_true(parse("4,9,10,-;NVRM: Xid (0000:18:00): 48, An uncorrectable double bit error",
			  &e));
	assert_int_equal(e.xid, 48);
	assert_int_equal(e.pid, 0);
	/* pid='<unknown>' */
	assert_true(
		parse("4,9,10,-;NVRM: Xid (PCI:0000:18:00): 13, pid='<unknown>', name=<unknown>, "
		      "Graphics Exception",
		      &e));
	assert_int_equal(e.pid, 0);
	/* a user's line (facility 1, LOG_USER: written to /dev/kmsg) is not the driver's */
	assert_false(parse("12,1235,5678902,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, fake", &e));
	/* truncated, hostile, not an Xid */
	assert_false(parse("3,1,2,-;NVRM: Xid (PCI:0000:3b:00", &e));
	assert_false(parse("3,1,2,-;NVRM: Xid (PCI:0000:3b:00): ", &e));
	assert_false(parse("3,1,2,-;NVRM: Xid (PCI:0000:3b:00): -5, x", &e));
	assert_false(parse("3,1,2,-;NVRM: Xid (PCI:$(reboot)): 79, x", &e));
	assert_false(parse("3,1,2,-;NVRM: loading NVIDIA UNIX Open Kernel Module", &e));
	assert_false(parse("garbage without a prefix", &e));
	assert_false(parse(";NVRM: Xid (PCI:0000:3b:00): 79", &e));
	assert_false(xid_parse_kmsg(NULL, 0, &e));
	memset(big, 'A', sizeof(big));
	memcpy(big, "3,1,2,-;NVRM: Xid (PCI:", 23);
	assert_false(xid_parse_kmsg(big, sizeof(big), &e));
	/* the catalogue, and the bus against a function's address */
	assert_non_null(strstr(xid_meaning(79), "fallen off the bus"));
	assert_string_equal(xid_meaning(4242), "");
	assert_non_null(strstr(xid_fix(4242), "nvidia-smi"));
	assert_true(xid_bus_is("0000:3b:00", "0000:3b:00.0"));
	assert_true(xid_bus_is("0000:3B:00", "0000:3b:00.0"));
	assert_true(xid_bus_is("0000:3b:00.0", "0000:3b:00.0"));
	assert_false(xid_bus_is("0000:3b:00", "0000:3b:001.0"));
	assert_false(xid_bus_is("0000:3c:00", "0000:3b:00.0"));
}

static struct snap_proc procs[3];
static struct snap_gpu gpus[3];
static struct snapshot snap;

/* 3 ranks (pids 100+r) on GPUs 0..2, healthy figures */
static void job(void)
{
	memset(procs, 0, sizeof(procs));
	memset(&snap, 0, sizeof(snap));
	for (int r = 0; r < 3; r++) {
		memset(&gpus[r], 0, sizeof(gpus[r]));
		gpus[r].index = r;
		gpus[r].numa = 0;
		gpus[r].util = 40;
		gpus[r].sm_mhz = gpus[r].sm_max_mhz = 1980;
		gpus[r].pcie_gen = gpus[r].pcie_gen_max = 5;
		gpus[r].pcie_width = gpus[r].pcie_width_max = 16;
		snprintf(gpus[r].bus, sizeof(gpus[r].bus), "0000:%02x:00.0", 0x1b + 0x10 * r);
		snprintf(gpus[r].uuid, sizeof(gpus[r].uuid), "GPU-%d", r);
		snprintf(gpus[r].how, sizeof(gpus[r].how), "nvml");
		procs[r].pid = 100 + r;
		procs[r].rank = r;
		procs[r].state = 'S';
		procs[r].nccl = true;
		procs[r].gpu = &gpus[r];
		procs[r].gpu_env = r;
		procs[r].local_rank = r;
	}
	snap.now_ns = NOW;
	snap.procs = procs;
	snap.nprocs = 3;
}

/* out[0]: a stall whose culprit is rank 1, ranks 0 and 2 waiting */
static int stall_on_1(struct finding *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = FINDING_STALL;
	out->pid = 101;
	out->rank = 1;
	out->peer_pid = 100;
	out->conn = -1;
	out->since_ns = NOW - 10 * SEC;
	out->waiters[0] = (struct finding_waiter){.pid = 100, .rank = 0};
	out->waiters[1] = (struct finding_waiter){.pid = 102, .rank = 2};
	out->nwaiters = out->nwaiters_total = 2;
	return 1;
}

static const struct finding *kind(const struct finding *f, int n, enum finding_kind k)
{
	for (int i = 0; i < n; i++)
		if (f[i].kind == k)
			return &f[i];
	return NULL;
}

static bool has_hyp(const struct finding *f, const char *text)
{
	for (int i = 0; i < f->nhyp; i++)
		if (strstr(f->hypotheses[i], text))
			return true;
	return false;
}

static bool has_ev(const struct finding *f, const char *text)
{
	for (int i = 0; i < f->nevidence; i++)
		if (strstr(f->evidence[i], text))
			return true;
	return false;
}

static struct finding out[8];

/* a finding of kind k on rank 1, explained against the job as it is now */
static void explain_on_1(struct finding *f, enum finding_kind k)
{
	memset(f, 0, sizeof(*f));
	f->kind = k;
	f->pid = 101;
	f->rank = 1;
	f->peer_rank = f->conn = -1;
	explain_finding(&snap, f);
}

static void test_xid_is_gpu_error(void **state)
{
	const struct finding *f;
	int n;

	(void)state;
	job();
	n = stall_on_1(out);
	gpu_findings(&snap, out, &n, 8);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].kind, FINDING_STALL);
	/* rank 1's GPU raises Xid 79: one gpu_error, the stall given up to it with its waiters */
	gpus[1].xid = 79;
	gpus[1].xid_ns = NOW - 2 * SEC;
	snprintf(gpus[1].xid_src, sizeof(gpus[1].xid_src), "kmsg");
	n = stall_on_1(out);
	gpu_findings(&snap, out, &n, 8);
	assert_int_equal(n, 1);
	f = &out[0];
	assert_int_equal(f->kind, FINDING_GPU_ERROR);
	assert_int_equal(f->rank, 1);
	assert_int_equal(f->since_ns, NOW - 2 * SEC);
	assert_int_equal(f->nwaiters, 2);
	assert_non_null(strstr(f->summary, "Xid 79 (GPU has fallen off the bus)"));
	explain_finding(&snap, &out[0]);
	assert_true(has_hyp(f, "reset the GPU"));
	/* an Xid on a GPU no rank uses names nobody */
	procs[1].gpu = NULL;
	n = stall_on_1(out);
	gpu_findings(&snap, out, &n, 8);
	assert_null(kind(out, n, FINDING_GPU_ERROR));
	/* two ranks on one GPU (8 ranks on one H100): one finding, the other rank said */
	job();
	procs[2].gpu = &gpus[1];
	gpus[1].xid = 43;
	n = 0;
	gpu_findings(&snap, out, &n, 8);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].rank, 1);
	assert_true(has_ev(&out[0], "also on this GPU: rank 2"));
	/* uncorrectable ECC errors during the trace */
	job();
	gpus[2].ecc_new = 3;
	gpus[2].sampled_ns = NOW - SEC;
	n = stall_on_1(out);
	gpu_findings(&snap, out, &n, 8);
	f = kind(out, n, FINDING_GPU_ERROR);
	assert_non_null(f);
	assert_int_equal(f->rank, 2);
	assert_non_null(strstr(f->summary, "3 uncorrectable ECC errors"));
	/* the stall on rank 1 stays: another GPU's error is not its cause */
	assert_non_null(kind(out, n, FINDING_STALL));
}

static void test_gpu_hypotheses(void **state)
{
	struct finding f;

	(void)state;
	job();
	gpus[1].throttle = 0x40;
	gpus[1].sm_mhz = 1100;
	explain_on_1(&f, FINDING_STRAGGLER);
	assert_true(has_ev(
		&f, "GPU: rank 1 (pid 101) is on GPU 1 (GPU-1, 0000:2b:00.0), by NVML's "
		    "processes: util 40 %, SM 1100 of 1980 MHz, PCIe Gen5 x16, NUMA node 0"));
	assert_true(has_hyp(&f,
			    "GPU 1 (GPU-1, 0000:2b:00.0) is throttled (HW thermal slowdown): SM "
			    "clock 1100 of 1980 MHz"));
	/* an idle GPU's clocks are not a slowdown */
	gpus[1].throttle = 0x1;
	explain_on_1(&f, FINDING_STRAGGLER);
	assert_false(has_hyp(&f, "is throttled ("));
	/* a link trained narrower, an ACS redirect on its path */
	gpus[1].pcie_width = 8;
	gpus[1].pcie_gen = 4;
	snprintf(gpus[1].host_note, sizeof(gpus[1].host_note),
		 "ACS redirect is on at the switch port 0000:2a:01.0, between GPU 0000:2b:00.0 and "
		 "mlx5_0 (0000:2c:00.0)");
	explain_on_1(&f, FINDING_STALL);
	assert_true(has_hyp(&f, "runs at Gen4 x8 of its Gen5 x16"));
	assert_true(has_hyp(&f, "ACS redirect is on at the switch port 0000:2a:01.0"));
	assert_true(has_ev(&f, "PCIe Gen4 x8 of Gen5 x16"));
	assert_false(has_hyp(&f, "NUMA node"));
	/* the rank pinned to the other socket's CPUs */
	procs[1].cpu_numa = 1;
	explain_on_1(&f, FINDING_STALL);
	assert_true(has_hyp(&f, "rank 1 may run only on the CPUs of NUMA node 1, but GPU 1 "
				"(GPU-1, 0000:2b:00.0) is on node 0"));
	assert_true(has_ev(&f, "NUMA node 0, the rank's CPUs on node 1"));
	assert_false(has_hyp(&f, "NVLink errors"));
	/* its links' error counters rose during the trace */
	gpus[1].nvlink_err_new = 480;
	explain_on_1(&f, FINDING_STALL);
	assert_true(has_hyp(&f, "GPU 1 (GPU-1, 0000:2b:00.0) counted 480 NVLink errors during the "
				"trace"));
	/* no GPU known: nothing said */
	procs[1].gpu = NULL;
	explain_on_1(&f, FINDING_STALL);
	assert_false(has_hyp(&f, "PCIe"));
	assert_false(has_ev(&f, "GPU:"));
}

static void test_gpu_pick(void **state)
{
	char also[24];
	int l[3];

	(void)state;
	job();
	snprintf(gpus[2].uuid, sizeof(gpus[2].uuid), "GPU-8a3b0c1d-0000");
	snprintf(gpus[1].uuid, sizeof(gpus[1].uuid), "GPU-8a3c0000-1111");
	/* the environment: unset CUDA_VISIBLE_DEVICES, GPU LOCAL_RANK */
	assert_int_equal(gpu_env_pick(NULL, 1, gpus, 3), 1);
	assert_int_equal(gpu_env_pick(NULL, -1, gpus, 3), -1);
	assert_int_equal(gpu_env_pick(NULL, 7, gpus, 3), -1);
	/* one entry: every local rank's; a list: entry LOCAL_RANK */
	assert_int_equal(gpu_env_pick("2", 0, gpus, 3), 2);
	assert_int_equal(gpu_env_pick("2", 5, gpus, 3), 2);
	assert_int_equal(gpu_env_pick("2,0,1", 1, gpus, 3), 0);
	assert_int_equal(gpu_env_pick("2, 0 ,1", 1, gpus, 3), 0);
	assert_int_equal(gpu_env_pick("2,0,1", 3, gpus, 3), -1);
	assert_int_equal(gpu_env_pick("2,0", -1, gpus, 3), -1);
	/* UUIDs, whole or a prefix CUDA takes; an ambiguous prefix, MIG, junk, none visible */
	assert_int_equal(gpu_env_pick("GPU-8a3b0c1d-0000", 0, gpus, 3), 2);
	assert_int_equal(gpu_env_pick("0,GPU-8a3b", 1, gpus, 3), 2);
	assert_int_equal(gpu_env_pick("GPU-8a3", 0, gpus, 3), -1);
	assert_int_equal(gpu_env_pick("MIG-1234", 0, gpus, 3), -1);
	assert_int_equal(gpu_env_pick("x1", 0, gpus, 3), -1);
	assert_int_equal(gpu_env_pick("-1", 0, gpus, 3), -1);
	assert_int_equal(gpu_env_pick("", 0, gpus, 3), -1);
	assert_int_equal(gpu_env_pick(",", 1, gpus, 3), -1);
	assert_int_equal(gpu_env_pick("9", 0, gpus, 3), -1);
	/* NVML lists the process on GPUs 0 and 2 (a stray context on 0): NCCL's bus wins */
	l[0] = 0, l[1] = 2;
	assert_int_equal(gpu_pick(gpus, l, 2, "0000:3b:00.0", -1, also, sizeof(also)), 2);
	assert_string_equal(also, "0");
	/* no log: the environment's */
	assert_int_equal(gpu_pick(gpus, l, 2, "", 2, also, sizeof(also)), 2);
	assert_string_equal(also, "0");
	/* neither: the lowest; the environment's GPU not listed does not count */
	l[0] = 2, l[1] = 1;
	assert_int_equal(gpu_pick(gpus, l, 2, NULL, 0, also, sizeof(also)), 1);
	assert_string_equal(also, "2");
	/* the log's GPU not listed: the environment's */
	assert_int_equal(gpu_pick(gpus, l, 2, "0000:1b:00.0", 2, also, sizeof(also)), 2);
	/* one: it, nothing else */
	assert_int_equal(gpu_pick(gpus, l, 1, NULL, -1, also, sizeof(also)), 2);
	assert_string_equal(also, "");
	assert_int_equal(gpu_pick(gpus, l, 0, "0000:3b:00.0", 2, also, sizeof(also)), -1);
}

/* ranks sharing a GPU, a stray context, a rank off its environment's GPU */
static void test_gpu_shared(void **state)
{
	struct finding f;

	(void)state;
	job();
	explain_on_1(&f, FINDING_STRAGGLER);
	assert_false(has_hyp(&f, "shares"));
	assert_false(has_ev(&f, "second CUDA context"));
	assert_false(has_ev(&f, "point at GPU"));
	/* every rank on GPU 0 */
	procs[1].gpu = procs[2].gpu = &gpus[0];
	snprintf(procs[1].gpu_also, sizeof(procs[1].gpu_also), "1");
	explain_on_1(&f, FINDING_STRAGGLER);
	assert_true(has_hyp(&f, "rank 1 shares GPU 0 (GPU-0, 0000:1b:00.0) with ranks 0, 2: they "
				"take turns on it"));
	assert_true(has_ev(&f, "GPU: rank 1 (pid 101) runs on GPU 0, but its CUDA_VISIBLE_DEVICES "
			       "and LOCAL_RANK point at GPU 1"));
	assert_true(has_ev(&f, "GPU: NVML lists rank 1 (pid 101) on GPU 1 too: a second CUDA "
			       "context"));
	/* an exited rank shares nothing; a stall is not slowed by sharing */
	procs[2].exited = true;
	explain_on_1(&f, FINDING_STRAGGLER);
	assert_true(has_hyp(&f, "with rank 0: they"));
	explain_on_1(&f, FINDING_STALL);
	assert_false(has_hyp(&f, "shares"));
	/* the environment said nothing: no mismatch */
	procs[1].gpu_env = -1;
	explain_on_1(&f, FINDING_STALL);
	assert_false(has_ev(&f, "point at GPU"));
	/* put there by the environment: said so */
	procs[1].gpu = &gpus[1];
	snprintf(gpus[1].how, sizeof(gpus[1].how), "env");
	explain_on_1(&f, FINDING_STALL);
	assert_true(has_ev(&f, "GPU: rank 1 (pid 101) is on GPU 1 (GPU-1, 0000:2b:00.0), by its "
			       "CUDA_VISIBLE_DEVICES and LOCAL_RANK (NVML lists no process of it): "
			       "util 40 %"));
}

/* the rank pinned away from its NIC's node: with its GPU's, or on its own */
static void test_nic_numa(void **state)
{
	struct finding f;

	(void)state;
	job();
	procs[1].cpu_numa = 1;
	snprintf(procs[1].nic, sizeof(procs[1].nic), "mlx5_0");
	procs[1].nic_numa = 0;
	explain_on_1(&f, FINDING_STALL);
	assert_true(has_hyp(&f, "but GPU 1 (GPU-1, 0000:2b:00.0) is on node 0, and so is its NIC "
				"mlx5_0 (NCCL's network): its copies"));
	assert_false(has_hyp(&f, "but its NIC"));
	/* the GPU on the rank's node, the NIC not */
	gpus[1].numa = 1;
	explain_on_1(&f, FINDING_STALL);
	assert_true(has_hyp(&f,
			    "rank 1 may run only on the CPUs of NUMA node 1, but its NIC mlx5_0 "
			    "(NCCL's network) is on node 0: its proxy thread's"));
	assert_false(has_hyp(&f, "but GPU 1"));
	/* no GPU known: the NIC still */
	procs[1].gpu = NULL;
	explain_on_1(&f, FINDING_STALL);
	assert_true(has_hyp(&f, "but its NIC mlx5_0"));
	/* its NIC's node unknown, or the rank's: nothing */
	procs[1].nic_numa = -1;
	explain_on_1(&f, FINDING_STALL);
	assert_false(has_hyp(&f, "NIC"));
	procs[1].nic_numa = 0;
	procs[1].cpu_numa = -1;
	explain_on_1(&f, FINDING_STALL);
	assert_false(has_hyp(&f, "NIC"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xid_lines),      cmocka_unit_test(test_xid_is_gpu_error),
		cmocka_unit_test(test_gpu_hypotheses), cmocka_unit_test(test_gpu_pick),
		cmocka_unit_test(test_gpu_shared),     cmocka_unit_test(test_nic_numa),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
