// SPDX-License-Identifier: MIT
/*
 * The profiler plugin's shared state, as a rank's memory holds it (the job can write anything
 * there): read back with process_vm_readv from this process, as the tracer reads a rank's, for
 * three ticks. The input gives up to 4 communicators, each a 512-byte head and its records (as
 * many as the input has, at most 8 per tick); the harness makes the head's and the records'
 * check words right where the input's first byte says so, so the reader gets past them and the
 * comparisons, counters and records behind them are fuzzed too.
 */
#include <jansson.h>
#include <string.h>
#include "fuzz.h"
#include "ntprof.h"
#include "nccl/ncclprof.h"
#include "nccl/ncclstate.h"

#define COMMS 4
#define RECS  8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void drop(void *ctx, json_t *rec)
{
	(void)ctx;
	json_decref(rec);
}

/* comm i's head and up to RECS records after it from data at *o; false when data ends first */
static bool fill(struct ntprof_comm *c, bool fix, const uint8_t *data, size_t size, size_t *o)
{
	uint64_t n;

	if (*o + sizeof(c->h) > size)
		return false;
	memcpy(&c->h, data + *o, sizeof(c->h));
	*o += sizeof(c->h);
	if (fix)
		c->h.id_check = ntprof_id_check(&c->h);
	n = c->h.ncoll < RECS ? c->h.ncoll : RECS;
	for (uint64_t k = 0; k < n && *o + sizeof(struct ntprof_rec) <= size; k++) {
		uint64_t ord = c->h.ncoll - n + 1 + k;
		struct ntprof_rec *r = &c->ring[(ord - 1) % NTPROF_RING];

		memcpy(r, data + *o, sizeof(*r));
		*o += sizeof(*r);
		if (fix) {
			r->ord = ord;
			r->check = ntprof_rec_check(r, c->h.gen);
		}
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ntprof_state st;
	struct snap_proc sp = {.pid = getpid(), .rank = -1, .nccl = true};
	struct nccl_state *ns;
	struct snap_comm *comms;
	size_t o = 1;
	bool fix = size && (data[0] & 1);

	if (!size)
		return 0;
	memset(&st, 0, offsetof(struct ntprof_state, comm) + COMMS * sizeof(st.comm[0]));
	ns = nccl_state__new(NULL, NULL);
	if (!ns)
		abort();
	nccl_state__prof_at(ns, getpid(), (uint64_t)(uintptr_t)&st);
	for (int tick = 0; tick < 3; tick++) {
		int n = 0;

		while (n < COMMS && fill(&st.comm[n], fix, data, size, &o))
			n++;
		st.layout = NTPROF_LAYOUT;
		st.comm_size = sizeof(struct ntprof_comm);
		st.max_comms = NTPROF_MAX_COMMS;
		st.ring = NTPROF_RING;
		st.pid = getpid();
		st.api_max = data[0] >> 1;
		st.ncomms = n > (int)st.ncomms ? (uint64_t)n : st.ncomms;
		st.magic = NTPROF_MAGIC;
		nccl_state__sample_prof(ns, &sp, 1, 1000000000ULL * (tick + 1), drop, NULL);
		nccl_state__sample(ns, 1000000000ULL * (tick + 1));
		nccl_state__comms(ns, &comms);
		json_decref(nccl_state__proc_json(ns, getpid(), 1000000000ULL * (tick + 1)));
	}
	nccl_state__free(ns);
	return 0;
}
