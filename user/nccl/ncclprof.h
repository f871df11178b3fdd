/* SPDX-License-Identifier: MIT */
/*
 * NCCL's profiler plugin as an evidence source: nccltrace's plugin (user/plugin/) runs inside
 * every rank and keeps per communicator the collectives launched, their arguments and the API
 * calls in progress in its own memory (include/ntprof.h). The tracer finds that memory in each
 * process, copies what changed each tick, validates it (it is the job's memory: untrusted), and
 * feeds the NCCL state: counts where comm->seqNumber cannot be read (stripped builds), the
 * arguments of the last collective, the API call in progress, and the first collective whose
 * arguments differ across the ranks of a communicator.
 */
#ifndef NT_NCCLPROF_H
#define NT_NCCLPROF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nccl/ncclstate.h"
#include "model/snapshot.h"

/*
 * Each tick, before nccl_state__sample(): look for the plugin in the live processes of procs
 * (each tick until found), read it, compare the ranks of each communicator, and feed s. New
 * dump records (the plugin found, a communicator seen) go to emit, which takes them over.
 */
void nccl_state__sample_prof(struct nccl_state *s, const struct snap_proc *procs, int n,
			     uint64_t now, void (*emit)(void *ctx, json_t *rec), void *ctx);

/* Read pid's plugin state at addr from now on, without looking in its maps (the unit tests) */
int nccl_state__prof_at(struct nccl_state *s, int pid, uint64_t addr);

/*
 * Pure: in the text of /proc/PID/maps, the plugin's file (basename NTPROF_LIB) and where it is
 * loaded (its mapping at file offset 0). 0, or -ENOENT.
 */
int ncclprof_find_in_maps(const char *maps, char *path, size_t len, uint64_t *base);

/*
 * The newest profiler plugin API an NCCL library looks up (the "ncclProfiler_vN" strings of
 * its .rodata, which it dlsyms newest first): N, 0 if none (NCCL < 2.23), or -errno.
 */
int ncclprof_lib_api(const char *path);

#endif /* NT_NCCLPROF_H */
