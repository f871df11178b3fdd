// SPDX-License-Identifier: MIT
/*
 * attach: the communicators each rank made before nccltrace came, found by a scan of its
 * memory (nccl/ncclcommscan.h), join the NCCL state as if their init probe had returned them:
 * their counters (comm->seqNumber[]) are sampled from the first tick, so that a hang without
 * sockets (NVLink, SHM) still names the rank behind. What each scan cost is in the dump.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cmd/session.h"
#include "nccl/ncclattach.h"
#include "nccl/ncclcommscan.h"
#include "nccl/ncclstate.h"
#include "util/log.h"

#define MAX_FOUND 64

/* The dump's record of one process's scan */
static void scan_record(struct session *s, int pid, int rc, int added,
			const struct comm_scan_stats *st)
{
	json_t *r =
		json_pack("{s:s, s:i, s:i, s:i, s:I, s:i, s:I, s:i, s:i, s:I, s:i, s:b, s:f}",
			  "type", "comm_scan", "pid", pid, "found", rc > 0 ? rc : 0, "new", added,
			  "bytes", (json_int_t)st->bytes, "maps", st->maps, "probed_bytes",
			  (json_int_t)st->probed_bytes, "probed", st->probed, "skipped",
			  st->skipped, "skipped_bytes", (json_int_t)st->skipped_bytes, "candidates",
			  st->candidates, "capped", st->capped, "took_s", st->ns / 1e9);

	if (r && rc < 0)
		json_object_set_new(r, "error", json_string(strerror(-rc)));
	session_dump(s, r);
}

/* One process: its communicators found, added; how many were new */
static int scan_one(struct session *s, int pid, struct comm_scan_stats *st)
{
	int slot = nccl_attach__nccl_slot(s->nccl, pid), rc, added = 0;
	const struct nccl_lib *lib = nccl_attach__lib(s->nccl, slot);
	struct comm_found f[MAX_FOUND];

	if (!lib)
		return 0;
	rc = comm_scan(pid, &lib->offs, f, MAX_FOUND, st);
	if (rc == -ENOTSUP)
		pr_warn("pid %d: %s has no ncclComm.endMagic offset (NCCL before 2.21, or no "
			"DWARF and no verified table): its communicators from before the attach "
			"are not found, their collective counters unknown\n",
			pid, lib->path);
	else if (rc < 0)
		pr_warn("pid %d: cannot scan its memory for communicators: %s\n", pid,
			strerror(-rc));
	else if (st->capped)
		pr_warn("pid %d: communicator scan capped: %llu MiB searched whole, %llu MiB more "
			"at "
			"page starts only (mmapped blocks), %llu MiB not at all, in %.0f ms: a "
			"communicator inside a block there is not found\n",
			pid, (unsigned long long)(st->bytes >> 20),
			(unsigned long long)(st->probed_bytes >> 20),
			(unsigned long long)(st->skipped_bytes >> 20), st->ns / 1e6);
	for (int i = 0; i < rc; i++)
		added += nccl_state__comm_found(s->nstate, pid, slot, f[i].addr, f[i].hash,
						f[i].rank, f[i].nranks) > 0;
	scan_record(s, pid, rc, added, st);
	pr_debug("pid %d: %d communicators by a memory scan (%d new), %llu MiB in %.1f ms\n", pid,
		 rc, added, (unsigned long long)(st->bytes >> 20), st->ns / 1e6);
	return added;
}

int session_scan_comms(struct session *s, const int *pids, int n, uint64_t *took_ns)
{
	int total = 0;

	*took_ns = 0;
	for (int i = 0; i < n; i++) {
		struct comm_scan_stats st = {0};

		total += scan_one(s, pids[i], &st);
		*took_ns = st.ns > *took_ns ? st.ns : *took_ns;
	}
	return total;
}
