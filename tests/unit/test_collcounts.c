// SPDX-License-Identifier: MIT
/*
 * NCCL 2.18-2.22's collective counter, comm->sharedRes->collOpCount: its offsets from a
 * library's DWARF (this test binary's, which declares NCCL's structs as 2.21 has them), the
 * reader against communicators in this process's own memory (process_vm_readv, as on a rank),
 * when the count is not the communicator's own, and the diagnosis on totals only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "nccl/nccllib.h"
#include "nccl/ncclstate_priv.h"
#include "synth.h"
#include "testutil.h"

/* ---- NCCL 2.21.5's structs, where nccltrace reads them (include/comm.h, socket.h) ---- */

struct ncclSocket {
	int fd;
	int acceptFd;
	int timedOutRetries;
	int refusedRetries;
	char addr[28];
};

struct ncclComm;
struct ncclSharedResources {
	int refCount;
	struct ncclComm *owner;
	void *peers[32];
	void *devPeers[32];
	uint64_t p2pOpCount[32];
	uint64_t collOpCount;
	int tpNRanks;
};

/* no seqNumber: that came with 2.23 */
struct ncclComm {
	uint64_t magic;
	uint64_t commHash;
	int rank;
	int nRanks;
	char pad[200];
	struct ncclSharedResources *sharedRes;
	char pad2[60];
	int persistentRefs;
};

/* in the DWARF, and the version nccllib_open looks for */
struct ncclSocket test_sock;
struct ncclComm test_comms[3];
struct ncclSharedResources test_shres[3];
__attribute__((used)) static const char test_version[] = "NCCL version 2.21.5+unittest";

#define HASH 0x5b5c9d1caeb34aadULL
#define SEC  NT_NSEC_PER_SEC

/* ---- offsets ---- */

static void check_offsets(const struct nt_nccl_offsets *o)
{
	assert_int_equal(o->comm_seq, -1);
	assert_int_equal(o->comm_rank, offsetof(struct ncclComm, rank));
	assert_int_equal(o->comm_shres, offsetof(struct ncclComm, sharedRes));
	assert_int_equal(o->comm_persistent, offsetof(struct ncclComm, persistentRefs));
	assert_int_equal(o->shres_refcount, offsetof(struct ncclSharedResources, refCount));
	assert_int_equal(o->shres_owner, offsetof(struct ncclSharedResources, owner));
	assert_int_equal(o->shres_collops, offsetof(struct ncclSharedResources, collOpCount));
}

/* From the DWARF, then from the cache it wrote; a cache of an older nccltrace is not used. */
static void test_offsets_dwarf_and_cache(void **state)
{
	char dir[] = "/tmp/nt-collcounts.XXXXXX", path[PATH_MAX + 64], err[256];
	struct nccl_lib *lib = calloc(1, sizeof(*lib));
	FILE *f;

	(void)state;
	assert_non_null(lib);
	assert_non_null(mkdtemp(dir));
	assert_int_equal(nccllib_open("/proc/self/exe", dir, lib, err, sizeof(err)), 0);
	assert_string_equal(lib->version, "2.21.5");
	assert_true(lib->build_id[0]);
	assert_int_equal(lib->offs_src, OFFS_DWARF);
	check_offsets(&lib->offs);
	assert_int_equal(nccllib_open("/proc/self/exe", dir, lib, err, sizeof(err)), 0);
	assert_int_equal(lib->offs_src, OFFS_CACHE);
	check_offsets(&lib->offs);
	/* the 18 fields an older nccltrace cached, without sharedRes' */
	snprintf(path, sizeof(path), "%s/%s.offsets", dir, lib->build_id);
	f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < 18; i++)
		fprintf(f, "%s 0\n", nccllib_offset_field(i));
	fclose(f);
	assert_int_equal(nccllib_open("/proc/self/exe", dir, lib, err, sizeof(err)), 0);
	assert_int_equal(lib->offs_src, OFFS_DWARF);
	check_offsets(&lib->offs);
	unlink(path);
	rmdir(dir);
	free(lib);
}

/* ---- when the count is the communicator's own ---- */

static void test_unusable(void **state)
{
	struct nccl_shres r = {.comm = 0x1000, .shres = 0x2000, .owner = 0x1000, .refcount = 1};

	(void)state;
	assert_null(nccl_shres_unusable(&r));
	r.refcount = 2; /* a split with splitShare lives: parent and child count into one */
	assert_contains(nccl_shres_unusable(&r), "shared with a split communicator");
	r.refcount = 1;
	r.owner = 0x3000; /* the child, its parent destroyed */
	assert_contains(nccl_shres_unusable(&r), "shared with a split communicator");
	r.owner = 0x1000;
	r.persistent = 1;
	assert_contains(nccl_shres_unusable(&r), "CUDA graph");
	r.persistent = 0;
	r.launch_blocking = true;
	assert_contains(nccl_shres_unusable(&r), "CUDA_LAUNCH_BLOCKING");
	r.launch_blocking = false;
	r.have_prev = true;
	r.prev = 10;
	r.collops = 9;
	assert_contains(nccl_shres_unusable(&r), "went backwards");
	r.collops = 10;
	assert_null(nccl_shres_unusable(&r));
}

/* ---- the reader, on this process's memory ---- */

static struct nt_nccl_offsets offs;

static const struct nt_nccl_offsets *offs_of(void *ctx, int lib)
{
	(void)ctx;
	return lib == 0 ? &offs : NULL;
}

static void set_offsets(void)
{
	memset(&offs, 0xff, offsetof(struct nt_nccl_offsets, lasterr_delta));
	offs.comm_hash = offsetof(struct ncclComm, commHash);
	offs.comm_rank = offsetof(struct ncclComm, rank);
	offs.comm_nranks = offsetof(struct ncclComm, nRanks);
	offs.comm_shres = offsetof(struct ncclComm, sharedRes);
	offs.comm_persistent = offsetof(struct ncclComm, persistentRefs);
	offs.shres_refcount = offsetof(struct ncclSharedResources, refCount);
	offs.shres_owner = offsetof(struct ncclSharedResources, owner);
	offs.shres_collops = offsetof(struct ncclSharedResources, collOpCount);
}

/* communicator k of this process, with its own sharedRes, having launched n */
static void comm_init(int k, int rank, uint64_t n)
{
	memset(&test_comms[k], 0, sizeof(test_comms[k]));
	memset(&test_shres[k], 0, sizeof(test_shres[k]));
	test_comms[k].rank = rank;
	test_comms[k].nRanks = 2;
	test_comms[k].sharedRes = &test_shres[k];
	test_shres[k].refCount = 1;
	test_shres[k].owner = &test_comms[k];
	test_shres[k].collOpCount = n;
}

/* a probe's entry on communicator k, with the hash it has then (0 before 2.23's bootstrap) */
static void feed(struct nccl_state *s, int probe, int k, uint64_t hash, uint64_t ts)
{
	struct nt_ev_nccl e;

	memset(&e, 0, sizeof(e));
	e.h.ts_ns = ts;
	e.pid = getpid();
	e.tid = getpid() + k;
	e.probe = probe;
	e.d.comm.comm = (uintptr_t)&test_comms[k];
	e.d.comm.hash = hash;
	e.d.comm.rank = test_comms[k].rank;
	e.d.comm.nranks = 2;
	if (probe == NT_P_COMM_DESTROY) {
		e.d.fin.comm = e.d.comm.comm;
		e.d.fin.shres = (uintptr_t)test_comms[k].sharedRes;
		e.d.fin.owner = (uintptr_t)test_shres[k].owner;
		e.d.fin.collops = test_shres[k].collOpCount;
		e.d.fin.refcount = test_shres[k].refCount;
	}
	json_decref(nccl_state__event(s, &e));
}

/* communicator k as the tick at now sees it */
static struct snap_comm comm_at(struct nccl_state *s, int k, uint64_t now)
{
	struct snap_comm *cs;
	int n;

	nccl_state__sample(s, now);
	n = nccl_state__comms(s, &cs);
	assert_true(k < n);
	return cs[k];
}

/* a 2.21 communicator (hash set after bootstrapInit): its total, when it moved, and one behind */
static void test_read_from_memory(void **state)
{
	struct nccl_state *s;
	struct snap_comm c;

	(void)state;
	set_offsets();
	comm_init(0, 0, 0);
	comm_init(1, 1, 0);
	s = nccl_state__new(offs_of, NULL);
	assert_non_null(s);
	feed(s, NT_P_BOOTSTRAP_INIT, 0, 0, 1 * SEC);
	feed(s, NT_P_BOOTSTRAP_INIT, 1, 0, 1 * SEC);
	/* the hash is not known yet: the ranks could not be compared */
	assert_false(comm_at(s, 0, 2 * SEC).seq_ok);
	feed(s, NT_P_INIT_TRANSPORTS, 0, HASH, 3 * SEC);
	feed(s, NT_P_INIT_TRANSPORTS, 1, HASH, 3 * SEC);
	c = comm_at(s, 0, 4 * SEC);
	assert_true(c.seq_ok && c.total_only);
	assert_int_equal(c.hash, HASH);
	assert_int_equal(c.total, 0);
	assert_int_equal(c.seq_src, SNAP_SRC_COLLOPCOUNT);
	assert_string_equal(snap_src_name(c.seq_src), "comm->sharedRes->collOpCount");
	/* the two move, comm 1 one behind at each tick: it alone is behind */
	for (int t = 0; t < 20; t++) {
		test_shres[0].collOpCount += 3;
		test_shres[1].collOpCount = test_shres[0].collOpCount - 1;
		c = comm_at(s, 0, (5 + t) * SEC);
	}
	assert_int_equal(c.total, 60);
	assert_int_equal(snap_comm_total(&c), 60);
	assert_int_equal(c.changed_ns, 24 * SEC);
	for (int f = 0; f < SNAP_NSEQ; f++)
		assert_int_equal(c.seq[f], 0);
	c = comm_at(s, 1, 25 * SEC);
	assert_int_equal(c.total, 59);
	assert_int_equal(c.changed_ns, 24 * SEC);
	/* 20 ticks, and this one: it moved within the last second */
	assert_int_equal(__builtin_popcountll(c.behind_bits), 21);
	assert_int_equal(comm_at(s, 0, 25 * SEC).behind_bits, 0);
	/* ncclCommDestroy: the final count, read by BPF before the free */
	test_shres[1].collOpCount = 60;
	feed(s, NT_P_COMM_DESTROY, 1, 0, 26 * SEC);
	test_shres[1].collOpCount = 12345; /* freed and reused: never read again */
	c = comm_at(s, 1, 27 * SEC);
	assert_true(c.destroyed && c.seq_ok);
	assert_int_equal(c.total, 60);
	nccl_state__free(s);
}

/* the dump's part of communicator k: its total, or why its counts are not used */
static json_t *comm_json(struct nccl_state *s, int k, json_t **whole)
{
	*whole = nccl_state__proc_json(s, getpid(), 0);
	assert_non_null(*whole);
	return json_array_get(json_object_get(*whole, "comms"), k);
}

/* Shared with a split, captured in a graph, under CUDA_LAUNCH_BLOCKING: given up, for good. */
static void test_not_its_own(void **state)
{
	struct nccl_state *s;
	struct nt_ev_nccl e;
	json_t *whole, *j;

	(void)state;
	set_offsets();
	comm_init(0, 0, 5);
	comm_init(1, 0, 5);
	comm_init(2, 0, 5);
	s = nccl_state__new(offs_of, NULL);
	assert_non_null(s);
	for (int k = 0; k < 3; k++)
		feed(s, NT_P_BOOTSTRAP_INIT, k, HASH + k, SEC);
	assert_true(comm_at(s, 0, 2 * SEC).seq_ok);
	j = comm_json(s, 0, &whole);
	assert_int_equal(json_integer_value(json_object_get(j, "total")), 5);
	assert_string_equal(json_string_value(json_object_get(j, "source")),
			    "comm->sharedRes->collOpCount");
	assert_int_equal(json_object_size(json_object_get(j, "collectives")), 0);
	json_decref(whole);
	/* a child made with splitShare: the parent's count is theirs together from now on */
	test_shres[0].refCount = 2;
	test_comms[1].persistentRefs = 1;
	assert_false(comm_at(s, 0, 3 * SEC).seq_ok);
	assert_false(comm_at(s, 1, 3 * SEC).seq_ok);
	assert_true(comm_at(s, 2, 3 * SEC).seq_ok);
	test_shres[0].refCount = 1;
	test_comms[1].persistentRefs = 0;
	assert_false(comm_at(s, 0, 4 * SEC).seq_ok);
	assert_false(comm_at(s, 1, 4 * SEC).seq_ok);
	j = comm_json(s, 0, &whole);
	assert_null(json_object_get(j, "total"));
	assert_contains(json_string_value(json_object_get(j, "counts_unusable")),
			"shared with a split communicator");
	json_decref(whole);
	/* as NCCL reads it: "0" is unset; NCCL's own read (ncclGetEnv, 2.19+) wins */
	nccl_state__env(s, getpid(), "CUDA_LAUNCH_BLOCKING", "0");
	assert_true(comm_at(s, 2, 5 * SEC).seq_ok);
	memset(&e, 0, sizeof(e));
	e.pid = e.tid = getpid();
	e.probe = NT_P_ENV;
	e.ret = 1;
	e.retval = 1;
	snprintf(e.d.env.name, sizeof(e.d.env.name), "CUDA_LAUNCH_BLOCKING");
	snprintf(e.d.env.value, sizeof(e.d.env.value), "1");
	json_decref(nccl_state__event(s, &e));
	assert_false(comm_at(s, 2, 6 * SEC).seq_ok);
	nccl_state__free(s);
}

/* ---- the diagnosis, on totals only ---- */

static const struct diag_config cfg = {
	.stall_threshold_ns = 5 * SEC,
	.active_window_ns = SEC,
};

static struct snap_comm dcomms[8];

/*
 * A 3-rank ring whose rank 1 sleeps, the others spinning on NCCL's network connections, with
 * each rank's total (NCCL 2.18-2.22) as given, stopped since the hang
 */
static struct synth *ring(const uint64_t *totals)
{
	struct synth *y = synth_new(3, 2, SYNTH_RING, 1);

	assert_non_null(y);
	for (int i = 0; i < y->s.nconns; i++)
		y->conns[i].nccl_label = "net (net accept)";
	memset(dcomms, 0, sizeof(dcomms));
	for (int r = 0; r < 3; r++) {
		struct snap_comm *c = &dcomms[r];

		c->pid = 1000 + r;
		c->hash = HASH;
		c->rank = r;
		c->nranks = 3;
		c->total_only = true;
		c->total = totals[r];
		c->seq_ok = true;
		c->seq_src = SNAP_SRC_COLLOPCOUNT;
		c->changed_ns = SYNTH_STALL - SEC;
		c->last_coll = -1;
	}
	y->s.comms = dcomms;
	y->s.ncomms = 3;
	return y;
}

static int run(struct synth *y, struct finding *out)
{
	return diagnose(&y->s, &cfg, out, 8);
}

/* Rank 1 has launched 20, the others 21: it is the culprit, said with the counter's name. */
static void test_totals_behind(void **state)
{
	struct synth *y = ring((const uint64_t[]){21, 20, 21});
	struct finding *out = calloc(8, sizeof(*out));

	(void)state;
	assert_int_equal(run(y, out), 1);
	assert_int_equal(out[0].kind, FINDING_STALL);
	assert_int_equal(out[0].rank, 1);
	assert_int_equal(out[0].comm_hash, HASH);
	assert_true(evidence_has(&out[0], "rank 1 (pid 1001) launched 20 collectives (all "
					  "functions together) on comm 5b5c9d1caeb34aad "
					  "(comm->sharedRes->collOpCount)"));
	assert_true(evidence_has(&out[0], "ranks 0,2 (2) launched 21 collectives"));
	/* the sockets would name rank 1 too: the counters alone, on NVLink */
	for (int i = 0; i < y->s.nconns; i++)
		memset(&y->conns[i].c, 0, sizeof(y->conns[i].c));
	y->s.nconns = 0;
	assert_int_equal(run(y, out), 1);
	assert_int_equal(out[0].kind, FINDING_STALL);
	assert_int_equal(out[0].rank, 1);
	assert_contains(out[0].summary, "has not launched collective #21 on comm 5b5c9d1caeb34aad");
	synth_free(y);
	free(out);
}

/*
 * Every rank launched 21: whether rank 1 broadcast where the others all-reduce, totals cannot
 * tell, so the socket culprit among those waiting inside a collective is dropped; not so with
 * per-function counts, nor outside a collective's connections, nor before any launch.
 */
static void test_totals_equal_name_nobody(void **state)
{
	struct synth *y = ring((const uint64_t[]){21, 21, 21});
	struct finding *out = calloc(8, sizeof(*out));

	(void)state;
	assert_int_equal(run(y, out), 0);
	/* control: the sockets name rank 1 where the counts do not say so */
	for (int r = 0; r < 3; r++) {
		dcomms[r].total_only = false;
		dcomms[r].seq[4] = 21;
	}
	assert_int_equal(run(y, out), 1);
	assert_int_equal(out[0].rank, 1);
	for (int r = 0; r < 3; r++) {
		dcomms[r].total_only = true;
		dcomms[r].seq[4] = 0;
	}
	for (int i = 0; i < y->s.nconns; i++)
		y->conns[i].nccl_label = "bootstrap (bootstrap recv)";
	assert_int_equal(run(y, out), 1);
	assert_int_equal(out[0].rank, 1);
	for (int i = 0; i < y->s.nconns; i++)
		y->conns[i].nccl_label = "net (net accept)";
	for (int r = 0; r < 3; r++)
		dcomms[r].total = 0;
	assert_int_equal(run(y, out), 1);
	assert_int_equal(out[0].rank, 1);
	synth_free(y);
	free(out);
}

/* The same with --collectives: the probe's last launch per rank tells the functions. */
static void test_totals_args_mismatch(void **state)
{
	struct synth *y = ring((const uint64_t[]){21, 21, 21});
	struct finding *out = calloc(8, sizeof(*out));

	(void)state;
	for (int r = 0; r < 3; r++) {
		dcomms[r].last_coll = r == 1 ? 0 : 4;
		dcomms[r].last_count = 65536;
		dcomms[r].last_dtype = 7;
		dcomms[r].args_src = SNAP_SRC_ENQUEUE;
	}
	assert_int_equal(run(y, out), 1);
	assert_int_equal(out[0].kind, FINDING_COLLECTIVE_MISMATCH);
	assert_int_equal(out[0].rank, 1);
	assert_contains(out[0].summary, "rank 1 in Broadcast as collective 21 (count 65536 float32 "
					"root 0), ranks 0,2 in AllReduce as collective 21");
	synth_free(y);
	free(out);
}

/* A rank that launched more than the socket chain's end waits inside; moving ranks are fine. */
static void test_totals_outrank_and_moving(void **state)
{
	struct synth *y = ring((const uint64_t[]){21, 22, 21});
	struct finding *out = calloc(8, sizeof(*out));
	int n;

	(void)state;
	n = run(y, out);
	for (int i = 0; i < n; i++)
		assert_int_not_equal(out[i].rank, 1);
	/* one behind while they still move: slow perhaps, not stuck */
	for (int r = 0; r < 3; r++)
		dcomms[r].changed_ns = SYNTH_NOW - SEC / 5;
	for (int i = 0; i < y->s.nconns; i++)
		memset(&y->conns[i].c, 0, sizeof(y->conns[i].c));
	y->s.nconns = 0;
	dcomms[1].total = 20;
	assert_int_equal(run(y, out), 0);
	synth_free(y);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offsets_dwarf_and_cache),
		cmocka_unit_test(test_unusable),
		cmocka_unit_test(test_read_from_memory),
		cmocka_unit_test(test_not_its_own),
		cmocka_unit_test(test_totals_behind),
		cmocka_unit_test(test_totals_equal_name_nobody),
		cmocka_unit_test(test_totals_args_mismatch),
		cmocka_unit_test(test_totals_outrank_and_moving),
	};

	return cmocka_run_group_tests_name("collcounts", tests, NULL, NULL);
}
