// SPDX-License-Identifier: MIT
/*
 * The GPU as a suspect: a rank's GPU that raised an Xid or an uncorrectable ECC error during the
 * trace (gpu_error, which outranks what else names a rank on that GPU, as the collective
 * counters outrank a socket's culprit); and each finding's culprit's GPU as evidence, with the
 * hypotheses its state gives: throttling, a degraded PCIe link, NVLink down, ACS on its path.
 */
#include <stdio.h>
#include <string.h>
#include "diagnose/explain_priv.h"
#include "diagnose/rules.h"
#include "nvmlapi.h"
#include "trace/xid.h"

/* clock reasons that slow a GPU against its will (not idle, not an application's setting) */
#define SLOWDOWN                                                                                   \
	(NVML_CLOCKS_HW_SLOWDOWN | NVML_CLOCKS_SW_THERMAL | NVML_CLOCKS_HW_THERMAL |               \
	 NVML_CLOCKS_HW_POWER_BRAKE)

static void throttle_names(uint64_t r, char *buf, size_t len)
{
	static const struct {
		uint64_t bit;
		const char *name;
	} names[] = {
		{NVML_CLOCKS_HW_SLOWDOWN, "HW slowdown"},
		{NVML_CLOCKS_SW_THERMAL, "SW thermal slowdown"},
		{NVML_CLOCKS_HW_THERMAL, "HW thermal slowdown"},
		{NVML_CLOCKS_HW_POWER_BRAKE, "HW power brake"},
		{NVML_CLOCKS_SW_POWER_CAP, "SW power cap"},
	};
	size_t at = 0;

	buf[0] = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && at < len; i++)
		if (r & names[i].bit)
			at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "",
					       names[i].name);
}

/* "GPU 3 (GPU-8a3b..., 0000:3b:00.0)" */
static void gpu_name(const struct snap_gpu *g, char *buf, size_t len)
{
	char idx[16] = "";

	if (g->index >= 0)
		snprintf(idx, sizeof(idx), " %d", g->index);
	snprintf(buf, len, "GPU%s (%s%s%s)", idx, g->uuid, g->uuid[0] ? ", " : "", g->bus);
}

/*
 * the GPU's figures as one line of evidence: who, which GPU and how it was found first (a real
 * UUID is 40 characters: what a line's end loses is the last figures)
 */
static void gpu_evidence(const struct snap_proc *p, struct finding *f)
{
	const struct snap_gpu *g = p->gpu;
	char name[96], who[48], figs[200] = "";
	size_t at = 0;

	gpu_name(g, name, sizeof(name));
	snap_proc_name(p, p->pid, who, sizeof(who));
	if (g->util >= 0)
		at += (size_t)snprintf(figs + at, sizeof(figs) - at, ": util %d %%", g->util);
	if (g->sm_mhz > 0 && at < sizeof(figs))
		at += (size_t)snprintf(figs + at, sizeof(figs) - at, "%sSM %d of %d MHz",
				       at ? ", " : ": ", g->sm_mhz, g->sm_max_mhz);
	if (g->pcie_width && at < sizeof(figs))
		at += (size_t)snprintf(figs + at, sizeof(figs) - at, "%sPCIe Gen%d x%d",
				       at ? ", " : ": ", g->pcie_gen, g->pcie_width);
	if (g->pcie_width &&
	    (g->pcie_gen != g->pcie_gen_max || g->pcie_width != g->pcie_width_max) &&
	    at < sizeof(figs))
		at += (size_t)snprintf(figs + at, sizeof(figs) - at, " of Gen%d x%d",
				       g->pcie_gen_max, g->pcie_width_max);
	if (g->nvlink_known && at < sizeof(figs))
		at += (size_t)snprintf(figs + at, sizeof(figs) - at, "%sNVLink %d of %d up",
				       at ? ", " : ": ", g->nvlink_up, g->nvlink_known);
	if (g->numa >= 0 && at < sizeof(figs))
		at += (size_t)snprintf(figs + at, sizeof(figs) - at, "%sNUMA node %d",
				       at ? ", " : ": ", g->numa);
	if (p->cpu_numa >= 0 && at < sizeof(figs))
		snprintf(figs + at, sizeof(figs) - at, "%sthe rank's CPUs on node %d",
			 at ? ", " : ": ", p->cpu_numa);
	add_evidence(f, "GPU: %s is on %s, by %s%s", who, name,
		     !strcmp(g->how, "nvml") ? "NVML's processes"
		     : !strcmp(g->how, "env")
			     ? "its CUDA_VISIBLE_DEVICES and LOCAL_RANK (NVML lists "
			       "no process of it)"
			     : "NCCL's log",
		     figs);
	if (p->gpu_also[0])
		add_evidence(f,
			     "GPU: NVML lists %s on GPU %s too: a second CUDA context (a CUDA call "
			     "before torch.cuda.set_device makes one on GPU 0)",
			     who, p->gpu_also);
	if (p->gpu_env >= 0 && g->index >= 0 && p->gpu_env != g->index)
		add_evidence(f,
			     "GPU: %s runs on GPU %d, but its CUDA_VISIBLE_DEVICES and LOCAL_RANK "
			     "point at GPU %d",
			     who, g->index, p->gpu_env);
}

/* the other live ranks on p's GPU, "0, 2" into buf; how many */
static int sharers(const struct snapshot *s, const struct snap_proc *p, char *buf, size_t len)
{
	size_t at = 0;
	int n = 0;

	buf[0] = 0;
	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_proc *q = &s->procs[i];

		if (q == p || q->rank < 0 || q->exited || !q->gpu ||
		    strcmp(q->gpu->bus, p->gpu->bus))
			continue;
		n++;
		if (at + 16 < len)
			at += (size_t)snprintf(buf + at, len - at, "%s%d", at ? ", " : "", q->rank);
	}
	return n;
}

/* every process on the GPU at bus, as the waiters of f; the culprit's findings given up to f */
static void take_over(const struct snapshot *s, struct finding *out, int *n, int fi)
{
	const char *bus = snapshot_proc(s, out[fi].pid)->gpu->bus;

	for (int i = 0; i < *n; i++) {
		const struct snap_proc *c;

		if (i == fi || out[i].kind == FINDING_GPU_ERROR || out[i].pid <= 0 ||
		    !(c = snapshot_proc(s, out[i].pid)) || !c->gpu || strcmp(c->gpu->bus, bus))
			continue;
		for (int k = 0; k < out[i].nwaiters; k++)
			if (out[i].waiters[k].pid != out[fi].pid)
				add_waiter(s, &out[fi], out[i].waiters[k].pid);
		remove_finding(out, n, i);
		if (i < fi)
			fi--;
		i--;
	}
}

void gpu_findings(const struct snapshot *s, struct finding *out, int *n, int max)
{
	const char *done[64];
	int ndone = 0;

	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_proc *p = &s->procs[i], *cul = p;
		const struct snap_gpu *g = p->gpu;
		struct finding *f;
		char name[96], who[48], others[160] = "";
		size_t at = 0;
		bool seen = false;

		if (!g || (!g->xid && !g->ecc_new) || p->rank < 0)
			continue;
		for (int k = 0; k < ndone && !seen; k++)
			seen = !strcmp(done[k], g->bus);
		if (seen)
			continue;
		if (ndone < 64)
			done[ndone++] = g->bus;
		/* the rank the driver's line names, else the first rank on that GPU */
		for (int k = 0; k < s->nprocs; k++) {
			const struct snap_proc *q = &s->procs[k];

			if (!q->gpu || strcmp(q->gpu->bus, g->bus) || q->rank < 0)
				continue;
			if (q != cul && at < sizeof(others))
				at += (size_t)snprintf(others + at, sizeof(others) - at, "%s%d",
						       at ? "," : "", q->rank);
		}
		if (!(f = proc_finding(out, n, max, FINDING_GPU_ERROR, cul,
				       g->xid ? g->xid_ns : g->sampled_ns)))
			return;
		gpu_name(g, name, sizeof(name));
		snap_proc_name(cul, cul->pid, who, sizeof(who));
		describe_culprit(cul, f);
		if (g->xid)
			snprintf(f->summary, sizeof(f->summary),
				 "%s's %s raised Xid %d%s%s%s: the rank cannot finish its work on "
				 "its GPU, and every rank that waits on it hangs",
				 who, name, g->xid, *xid_meaning(g->xid) ? " (" : "",
				 xid_meaning(g->xid), *xid_meaning(g->xid) ? ")" : "");
		else
			snprintf(f->summary, sizeof(f->summary),
				 "%s's %s counted %llu uncorrectable ECC error%s during the trace",
				 who, name, (unsigned long long)g->ecc_new,
				 g->ecc_new == 1 ? "" : "s");
		if (g->xid)
			add_evidence(f, "Xid %d on %s, from %s%s%s", g->xid, g->bus,
				     !strcmp(g->xid_src, "kmsg") ? "the kernel's log: "
								 : "NVML's Xid event",
				     g->xid_text, "");
		if (g->ecc_new)
			add_evidence(f,
				     "uncorrectable ECC errors since the trace began: %llu (NVML)",
				     (unsigned long long)g->ecc_new);
		if (others[0])
			add_evidence(f, "also on this GPU: rank%s %s",
				     strchr(others, ',') ? "s" : "", others);
		take_over(s, out, n, (int)(f - out));
	}
}

/* the rank pinned to another NUMA node than its NIC's (the GPU's own rule says it where both
 * are on one node) */
static void nic_rule(struct hyps *h, const struct snap_proc *p, const struct finding *f)
{
	const struct snap_gpu *g = p->gpu;

	if (p->cpu_numa < 0 || p->nic_numa < 0 || !p->nic[0] || p->cpu_numa == p->nic_numa ||
	    (g && g->numa == p->nic_numa))
		return;
	if (f->kind != FINDING_STALL && f->kind != FINDING_STRAGGLER &&
	    f->kind != FINDING_RING_SETUP_BLOCKED)
		return;
	hyp(h, f->kind == FINDING_STRAGGLER ? 60 : 25,
	    "rank %d may run only on the CPUs of NUMA node %d, but its NIC %s (NCCL's network) is "
	    "on node %d: its proxy thread's sends and receives cross the sockets' link; bind it to "
	    "node %d (numactl --cpunodebind=%d --membind=%d)",
	    p->rank, p->cpu_numa, p->nic, p->nic_numa, p->nic_numa, p->nic_numa, p->nic_numa);
}

void explain_gpu_rules(struct hyps *h, const struct snapshot *s, struct finding *f)
{
	const struct snap_proc *p = f->pid > 0 ? snapshot_proc(s, f->pid) : NULL;
	const struct snap_gpu *g = p ? p->gpu : NULL;
	char name[96], why[120], others[64];

	if (p)
		nic_rule(h, p, f);
	if (!g)
		return;
	gpu_evidence(p, f);
	gpu_name(g, name, sizeof(name));
	if (f->kind == FINDING_GPU_ERROR) {
		if (g->xid)
			hyp(h, 95, "Xid %d%s%s: %s", g->xid, *xid_meaning(g->xid) ? ", " : "",
			    xid_meaning(g->xid), xid_fix(g->xid));
		else
			hyp(h, 90,
			    "uncorrectable ECC errors on %s: restart the job; nvidia-smi -q -d "
			    "ECC,ROW_REMAPPER; a GPU reset applies pending row remaps",
			    name);
		return;
	}
	if (f->kind != FINDING_STALL && f->kind != FINDING_STRAGGLER &&
	    f->kind != FINDING_RING_SETUP_BLOCKED && f->kind != FINDING_INIT_BLOCKED)
		return;
	throttle_names(
		g->throttle &
			(SLOWDOWN | (f->kind == FINDING_STRAGGLER ? NVML_CLOCKS_SW_POWER_CAP : 0)),
		why, sizeof(why));
	if (why[0])
		hyp(h, f->kind == FINDING_STRAGGLER ? 75 : 45,
		    "%s is throttled (%s): SM clock %d of %d MHz, so its rank runs behind the "
		    "others; "
		    "check its cooling and power: nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER",
		    name, why, g->sm_mhz, g->sm_max_mhz);
	if (g->pcie_width && g->pcie_width_max &&
	    (g->pcie_width < g->pcie_width_max || (g->pcie_gen < g->pcie_gen_max && g->util >= 50)))
		hyp(h, f->kind == FINDING_STRAGGLER ? 70 : 40,
		    "the PCIe link of %s runs at Gen%d x%d of its Gen%d x%d: its transfers, and "
		    "the "
		    "collectives through it, are that much slower; reseat it or check its slot and "
		    "riser (lspci -vvs %s: LnkSta against LnkCap)",
		    name, g->pcie_gen, g->pcie_width, g->pcie_gen_max, g->pcie_width_max, g->bus);
	if (g->nvlink_known && g->nvlink_up < g->nvlink_known)
		hyp(h, 50,
		    "%d of the %d NVLinks of %s are down: its peer traffic falls back to PCIe or "
		    "stops; nvidia-smi nvlink -s and -e, then reset the GPU",
		    g->nvlink_known - g->nvlink_up, g->nvlink_known, name);
	if (g->nvlink_err_new)
		hyp(h, f->kind == FINDING_STRAGGLER ? 60 : 50,
		    "%s counted %llu NVLink errors during the trace (replays, recoveries, CRC and "
		    "ECC "
		    "errors on its links): a flaky link slows or stalls its peer traffic; "
		    "nvidia-smi "
		    "nvlink -e -i %d, then reset the GPU or reseat its bridge",
		    name, (unsigned long long)g->nvlink_err_new, g->index);
	if (p->cpu_numa >= 0 && g->numa >= 0 && p->cpu_numa != g->numa)
		hyp(h, f->kind == FINDING_STRAGGLER ? 65 : 30,
		    "rank %d may run only on the CPUs of NUMA node %d, but %s is on node %d%s%s%s: "
		    "its copies and kernel launches cross the sockets' link; bind it to node %d "
		    "(numactl --cpunodebind=%d --membind=%d)",
		    p->rank, p->cpu_numa, name, g->numa,
		    p->nic[0] && p->nic_numa == g->numa ? ", and so is its NIC " : "",
		    p->nic[0] && p->nic_numa == g->numa ? p->nic : "",
		    p->nic[0] && p->nic_numa == g->numa ? " (NCCL's network)" : "", g->numa,
		    g->numa, g->numa);
	if (g->host_note[0] && (f->kind == FINDING_STALL || f->kind == FINDING_RING_SETUP_BLOCKED))
		hyp(h, 55, "%s (nccltrace doctor gives the fix)", g->host_note);
	if (f->kind == FINDING_STRAGGLER && sharers(s, p, others, sizeof(others)))
		hyp(h, 55,
		    "rank %d shares %s with rank%s %s: they take turns on it, each at a fraction "
		    "of its speed; give each rank a GPU of its own "
		    "(torch.cuda.set_device(LOCAL_RANK), "
		    "or CUDA_VISIBLE_DEVICES per rank)",
		    p->rank, name, strchr(others, ',') ? "s" : "", others);
	if (f->kind == FINDING_STALL && g->util >= 95)
		hyp(h, 35,
		    "%s is busy (%d %% of the last sample) while its rank makes no progress in "
		    "NCCL: "
		    "a long or never-ending kernel of its own (its stack and Python line say "
		    "where)",
		    name, g->util);
}
