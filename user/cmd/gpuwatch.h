/* SPDX-License-Identifier: MIT */
/*
 * The ranks' GPUs, for the tracer: NVML's figures through the nccltrace-nvml helper (a process
 * of its own: see user/helper/nccltrace-nvml.c), sampled every GPUWATCH_SAMPLE_S and at once
 * when asked (a finding opened); Xids from NVML's events and from the kernel's log (/dev/kmsg,
 * $NCCLTRACE_KMSG for tests), from the trace's start on; each GPU's PCI path from pcilint (ACS,
 * a degraded link) and its NUMA node. Each tick puts every rank's GPU into the snapshot.
 */
#ifndef NT_GPUWATCH_H
#define NT_GPUWATCH_H

#include <stdbool.h>
#include <stdint.h>
#include "model/snapshot.h"

#define GPUWATCH_SAMPLE_S 5

struct gpuwatch;

/* Starts the helper (helper: its path, NULL: none) and opens the kernel's log. Never NULL. */
struct gpuwatch *gpuwatch_open(const char *helper, uint64_t now);
/*
 * Reads what came, asks for a sample when one is due (or at once: urgent), and sets each
 * process's gpu in s (valid until the next tick)
 */
void gpuwatch_tick(struct gpuwatch *g, struct snapshot *s, uint64_t now, bool urgent);
/* "NVML 580.159.04, 8 GPUs" or why there is no NVML; "" before the helper said */
const char *gpuwatch_status(const struct gpuwatch *g);
/* the CPU time nccltrace-nvml has used so far, -1 when none runs (it is not the tracer's own) */
double gpuwatch_helper_cpu_s(const struct gpuwatch *g);
void gpuwatch_close(struct gpuwatch *g);
/*
 * One sample, no job (doctor): the GPUs into out (at most max; their number), what NVML said
 * into status; within timeout_s whatever NVML does
 */
int gpuwatch_once(const char *helper, struct snap_gpu *out, int max, char *status, size_t len,
		  int timeout_s);

#endif /* NT_GPUWATCH_H */
