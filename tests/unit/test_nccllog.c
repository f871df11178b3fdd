// SPDX-License-Identifier: MIT
/*
 * NCCL's log lines: each format filled as NCCL fills it, at the tags whose source the format is
 * taken from (src/init.cc, transport/p2p.cc, shm.cc, net.cc, graph/paths.cc, graph/rings.cc,
 * misc/param.cc, bootstrap.cc, net_socket.cc, net_ib.cc, debug.cc at v2.18.6-1, v2.21.5-1,
 * v2.23.4-1, v2.24.3-1, v2.28.9-1, v2.30.7-1), then truncated, hostile and random lines.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nccl/nccllog.h"
#include "model/snapshot.h"

#define P18 "gpu-a:12345:12345 [0] NCCL INFO "
#define P28 "gpu-a:3333:3399 [2] NCCL INFO "

static enum nccllog_kind parse(const char *line, struct nccllog_fact *f)
{
	return nccllog_parse(line, strlen(line), f);
}

static void test_prefix(void **state)
{
	struct nccllog_fact f;

	(void)state;
	assert_int_equal(parse(P28 "Using network Socket", &f), NLOG_NETWORK);
	assert_string_equal(f.host, "gpu-a");
	assert_int_equal(f.pid, 3333);
	assert_int_equal(f.tid, 3399);
	assert_int_equal(f.dev, 2);
	assert_string_equal(f.u.name, "Socket");
	/* the newline NCCL's fwrite ends it with, and a CR */
	assert_int_equal(nccllog_parse(P28 "Using network IB\r\n", strlen(P28) + 18, &f),
			 NLOG_NETWORK);
	assert_string_equal(f.u.name, "IB");
	/* a host name with ':' in it: pid and tid are taken from the right */
	assert_int_equal(parse("odd:name:77:78 [0] NCCL INFO Using network IB", &f), NLOG_NETWORK);
	assert_string_equal(f.host, "odd:name");
	assert_int_equal(f.pid, 77);
	/* 2.18's WARN (debug.cc: "\n%s:%d:%d [%d] %s:%d NCCL WARN "): no timestamp */
	assert_int_equal(parse("gpu-a:12345:12400 [0] misc/socket.cc:484 NCCL WARN socketProgress: "
			       "Connection closed by remote peer gpu-b<42314>",
			       &f),
			 NLOG_WARN);
	assert_int_equal(f.pid, 12345);
	assert_string_equal(f.u.warn.where, "misc/socket.cc:484");
	assert_string_equal(f.u.warn.text,
			    "socketProgress: Connection closed by remote peer gpu-b<42314>");
	/* 2.26+: WARN gets "[%F %T] " first by default */
	assert_int_equal(parse("[2025-06-01 10:00:00] gpu-a:3333:3399 [0] net_socket.cc:660 NCCL "
			       "WARN NET/Socket : peer 127.0.0.1<40123> message truncated",
			       &f),
			 NLOG_WARN);
	assert_int_equal(f.tid, 3399);
	assert_string_equal(f.u.warn.where, "net_socket.cc:660");
	/* any NCCL_DEBUG_TIMESTAMP_FORMAT, on INFO too (NCCL_DEBUG_TIMESTAMP_LEVELS) */
	assert_int_equal(
		parse("Jun 01 10:00:00.123456 gpu-a:1:2 [0] NCCL INFO Using network IB", &f),
		NLOG_NETWORK);
	assert_int_equal(f.pid, 1);
	/* the version line alone, as NCCL_DEBUG=VERSION or WARN write it */
	assert_int_equal(parse("NCCL version 2.18.6+cuda12.2", &f), NLOG_VERSION);
	assert_string_equal(f.u.name, "2.18.6+cuda12.2");
	assert_int_equal(f.pid, 0);
	assert_int_equal(parse(P28 "NCCL version 2.28.9+cuda13.0", &f), NLOG_VERSION);
	assert_string_equal(f.u.name, "2.28.9+cuda13.0");
	/* TRACE and CALL lines, other INFO lines: nothing */
	assert_int_equal(parse("gpu-a:1:2 [0] 1.234000 enqueue.cc:12 NCCL TRACE x", &f), NLOG_NONE);
	assert_int_equal(parse(P28 "[Proxy Service] Device 0 CPU core 12", &f), NLOG_NONE);
	assert_int_equal(parse(P28 "NET/Socket: Using 2 threads and 8 sockets per thread", &f),
			 NLOG_NONE);
	assert_int_equal(parse("", &f), NLOG_NONE);
	assert_int_equal(parse("plain output of the job", &f), NLOG_NONE);
}

/*
 * 2.30 names the function between the location and the level (debug.cc at v2.30.7-1: "[%d]
 * %s:%d (%s) NCCL WARN %s"; without a function, and before 2.30, "[%d] %s:%d NCCL WARN %s")
 */
static void test_warn_230(void **state)
{
	struct nccllog_fact f;

	(void)state;
	assert_int_equal(parse("[2026-06-01 10:00:00] gpu-a:3333:3399 [1] misc/socket.cc:58 "
			       "(socketProgress) NCCL WARN socketProgress: Connection closed by "
			       "remote peer gpu-b<42314>",
			       &f),
			 NLOG_WARN);
	assert_int_equal(f.pid, 3333);
	assert_int_equal(f.tid, 3399);
	assert_int_equal(f.dev, 1);
	assert_string_equal(f.u.warn.where, "misc/socket.cc:58");
	assert_string_equal(f.u.warn.text,
			    "socketProgress: Connection closed by remote peer gpu-b<42314>");
	/* a function without a location before it is not NCCL's */
	assert_int_equal(parse("gpu-a:1:2 [0] (socketProgress) NCCL WARN x", &f), NLOG_NONE);
	assert_int_equal(parse("gpu-a:1:2 [0] a.cc:1 () NCCL WARN x", &f), NLOG_NONE);
}

/*
 * 2.32's ATTN lines (NCCL_DEBUG=ATTN, and INFO shows them too), written as a WARN is: "[%d]
 * %s:%d (%s) NCCL ATTN %s" (2.32's src/debug.cc, read in a copy: reference/nccl-versions.md
 * §6). Kept as NCCL's own notices, not counted as WARNs.
 */
static void test_attn(void **state)
{
	struct snap_nccl_log *l = calloc(1, sizeof(*l));
	struct nccllog_fact f;
	json_t *o;

	(void)state;
	assert_non_null(l);
	assert_int_equal(parse("[2026-09-01 10:00:00] gpu-a:3333:3399 [0] init.cc:1200 "
			       "(ncclCommInitRankFunc) NCCL ATTN a notice",
			       &f),
			 NLOG_ATTN);
	assert_int_equal(f.pid, 3333);
	assert_string_equal(f.u.warn.where, "init.cc:1200");
	assert_string_equal(f.u.warn.text, "a notice");
	o = nccllog_fact_json(&f);
	assert_string_equal(json_string_value(json_object_get(o, "what")), "attn");
	assert_string_equal(json_string_value(json_object_get(o, "where")), "init.cc:1200");
	assert_string_equal(json_string_value(json_object_get(o, "text")), "a notice");
	json_decref(o);
	nccllog_apply(l, &f, 1);
	assert_int_equal(l->nwarn, 0);
	assert_string_equal(l->last_warn, "");
	/* without a function, and without a location (not NCCL's) */
	assert_int_equal(parse("gpu-a:1:2 [0] init.cc:12 NCCL ATTN x", &f), NLOG_ATTN);
	assert_int_equal(parse("gpu-a:1:2 [0] NCCL ATTN x", &f), NLOG_NONE);
	assert_true(nccllog_level_writes_file("ATTN"));
	free(l);
}

static void test_init(void **state)
{
	struct nccllog_fact f;

	(void)state;
	/* 2.18.6-2.20: no API name */
	assert_int_equal(parse(P18 "comm 0x55d1c2a0e400 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId "
				   "1b000 commId 0x9a3f5c2e1d0b7a66 - Init START",
			       &f),
			 NLOG_INIT);
	assert_false(f.u.init.complete);
	assert_string_equal(f.u.init.api, "");
	assert_true(f.u.init.comm == 0x55d1c2a0e400ULL);
	assert_int_equal(f.u.init.rank, 0);
	assert_int_equal(f.u.init.nranks, 4);
	assert_int_equal(f.u.init.nvml_dev, 0);
	assert_true(f.u.init.bus_id == 0x1b000);
	assert_true(f.u.init.has_id && f.u.init.id == 0x9a3f5c2e1d0b7a66ULL);
	assert_false(f.u.init.split);
	/* 2.21.5: "ncclCommInitRank comm ..." */
	assert_int_equal(parse(P18
			       "ncclCommInitRank comm 0x5603e8f2e0b0 rank 1 nranks 2 cudaDev 1 "
			       "nvmlDev 1 busId 2a000 commId 0x6d3c1e7f2a9b4c5d - Init COMPLETE",
			       &f),
			 NLOG_INIT);
	assert_true(f.u.init.complete);
	assert_string_equal(f.u.init.api, "ncclCommInitRank");
	assert_int_equal(f.u.init.cuda_dev, 1);
	/* 2.21.5's split, with a commId */
	assert_int_equal(parse(P18
			       "ncclCommSplit comm 0x5603e8f30000 rank 0 nranks 2 cudaDev 0 "
			       "nvmlDev 0 busId 1b000 parent 0x5603e8f2e0b0 color 1 key 0 commId "
			       "0x11 - Init START",
			       &f),
			 NLOG_INIT);
	assert_true(f.u.init.split);
	assert_true(f.u.init.parent == 0x5603e8f2e0b0ULL);
	assert_int_equal(f.u.init.color, 1);
	assert_int_equal(f.u.init.split_count, -1);
	/* 2.23.4's split: no commId, the dash glued to the key ("key %d- Init START") */
	assert_int_equal(parse(P28
			       "ncclCommSplit comm 0x7f0000001000 rank 0 nranks 2 cudaDev 0 "
			       "nvmlDev 0 busId 1b000 parent 0x7f0000000100 color 1 key 0- Init "
			       "START",
			       &f),
			 NLOG_INIT);
	assert_false(f.u.init.has_id);
	assert_int_equal(f.u.init.key, 0);
	/* 2.24.3-2.28.9: splitCount; COMPLETE with " - " */
	assert_int_equal(parse(P28 "ncclCommSplit comm 0x7f0000001000 rank 1 nranks 2 cudaDev 1 "
				   "nvmlDev 1 busId 2a000 parent 0x7f0000000100 splitCount 3 color "
				   "-1 key 7 - Init COMPLETE",
			       &f),
			 NLOG_INIT);
	assert_int_equal(f.u.init.split_count, 3);
	assert_int_equal(f.u.init.color, -1);
	assert_int_equal(f.u.init.key, 7);
	/* 2.28.9 ncclCommInitRankConfig */
	assert_int_equal(parse(P28
			       "ncclCommInitRankConfig comm 0x5581a8e3f2d0 rank 2 nranks 3 "
			       "cudaDev 2 nvmlDev 2 busId 5d000 commId 0xe1f3bc6734a09d21 - Init "
			       "START",
			       &f),
			 NLOG_INIT);
	assert_string_equal(f.u.init.api, "ncclCommInitRankConfig");
	assert_int_equal(f.u.init.rank, 2);
	/* 2.29+/2.30.7: "[Rank %d] " first; splits count children */
	assert_int_equal(parse(P28 "[Rank 3] ncclCommInitRankConfig comm 0x7f00aa001000 rank 3 "
				   "nranks 8 cudaDev 3 nvmlDev 3 busId 5d000 commId "
				   "0x1234abcd5678ef90 - Init START",
			       &f),
			 NLOG_INIT);
	assert_int_equal(f.u.init.rank, 3);
	assert_int_equal(f.u.init.nranks, 8);
	assert_int_equal(parse(P28 "ncclCommSplit comm 0x7f00aa002000 rank 0 nranks 4 cudaDev 0 "
				   "nvmlDev 0 busId 1b000 parent 0x7f00aa001000 childCount 2 color "
				   "0 key 0- Init START",
			       &f),
			 NLOG_INIT);
	assert_int_equal(f.u.init.split_count, 2);
	/* a NULL parent prints as glibc's "(nil)" */
	assert_int_equal(parse(P28 "ncclCommSplit comm 0x10 rank 0 nranks 1 cudaDev 0 nvmlDev 0 "
				   "busId 0 parent (nil) color 0 key 0- Init START",
			       &f),
			 NLOG_INIT);
	assert_true(f.u.init.parent == 0);
}

static void test_init_bad(void **state)
{
	struct nccllog_fact f;
	static const char *const bad[] = {
		/* cut short */
		P28 "ncclCommInitRank comm 0x55 rank 0 nranks 4 cudaDev",
		P28 "ncclCommInitRank comm 0x55 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 1b000 "
		    "commId 0x1 - Init",
		/* out of range, inconsistent, overflowing */
		P28 "comm 0x55 rank 99999999999 nranks 4 cudaDev 0 nvmlDev 0 busId 0 commId 0x1 - "
		    "Init START",
		P28 "comm 0x55 rank 5 nranks 4 cudaDev 0 nvmlDev 0 busId 0 commId 0x1 - Init START",
		P28 "comm 0x55 rank 0 nranks 0 cudaDev 0 nvmlDev 0 busId 0 commId 0x1 - Init START",
		P28 "comm 0x55 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 0 commId "
		    "0x12345678901234567 - Init START",
		P28
		"comm 0x55 rank -1 nranks 4 cudaDev 0 nvmlDev 0 busId 0 commId 0x1 - Init START",
		/* no comm, or a value missing */
		P28 "rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 0 commId 0x1 - Init START",
		P28 "comm rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 0 commId 0x1 - Init START",
		P28 "comm 0x55 rank x nranks 4 cudaDev 0 nvmlDev 0 busId 0 commId 0x1 - Init START",
		P28 "foo$bar comm 0x55 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 0 commId 0x1 - "
		    "Init START",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (parse(bad[i], &f) != NLOG_NONE)
			fail_msg("parsed: %s", bad[i]);
}

static void test_channels(void **state)
{
	struct nccllog_fact f;

	(void)state;
	/* p2p.cc: the sender logs; "/read" */
	assert_int_equal(parse(P18 "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read", &f),
			 NLOG_CHANNEL);
	assert_int_equal(f.u.chan.channel, 0);
	assert_int_equal(f.u.chan.conn_index, 0);
	assert_int_equal(f.u.chan.from, 0);
	assert_int_equal(f.u.chan.to, 1);
	assert_int_equal(f.u.chan.to_dev, 1);
	assert_int_equal(f.u.chan.side, SNAP_LOG_SENDER);
	assert_true(f.u.chan.p2p);
	assert_false(f.u.chan.net);
	assert_string_equal(f.u.chan.transport, "P2P/IPC/read");
	/* 2.18-2.19 "P2P/CUMEM%s%s", 2.20+ "P2P/%s%s%s" (CUMEM or MNNVL), "/CE" */
	assert_int_equal(parse(P28 "Channel 13/1 : 2[2] -> 3[3] via P2P/CUMEM/read/CE", &f),
			 NLOG_CHANNEL);
	assert_int_equal(f.u.chan.channel, 13);
	assert_int_equal(f.u.chan.conn_index, 1);
	assert_string_equal(f.u.chan.transport, "P2P/CUMEM/read/CE");
	assert_int_equal(parse(P28 "Channel 02/0 : 0[0] -> 1[1] via P2P/direct pointer", &f),
			 NLOG_CHANNEL);
	assert_string_equal(f.u.chan.transport, "P2P/direct pointer");
	assert_int_equal(parse(P28 "Channel 03/0 : 0[0] -> 5[5] via P2P/indirect/4[4]/read", &f),
			 NLOG_CHANNEL);
	assert_string_equal(f.u.chan.transport, "P2P/indirect/4[4]/read");
	/* shm.cc: "Channel %02d : " without the connection index; "SHM/direct" in 2.30 */
	assert_int_equal(parse(P18 "Channel 00 : 0[0] -> 1[1] via SHM/direct/direct", &f),
			 NLOG_CHANNEL);
	assert_int_equal(f.u.chan.conn_index, -1);
	assert_true(f.u.chan.shm);
	assert_int_equal(parse(P28 "Channel 01 : 1[1] -> 0[0] via SHM/direct", &f), NLOG_CHANNEL);
	assert_string_equal(f.u.chan.transport, "SHM/direct");
	/* net.cc: both ends, [send] and [receive]; GDRDMA, PXN, (PCI) from 2.26, Shared */
	assert_int_equal(parse(P18 "Channel 00/0 : 3[3] -> 0[0] [receive] via NET/IB/0/GDRDMA", &f),
			 NLOG_CHANNEL);
	assert_int_equal(f.u.chan.side, SNAP_LOG_RECV);
	assert_true(f.u.chan.net && f.u.chan.gdrdma);
	assert_int_equal(f.u.chan.proxy_rank, -1);
	assert_int_equal(parse(P28 "Channel 01/0 : 0[0] -> 9[1] [send] via "
				   "NET/IB/1(3)/GDRDMA(PCI)/Shared",
			       &f),
			 NLOG_CHANNEL);
	assert_int_equal(f.u.chan.side, SNAP_LOG_SEND);
	assert_int_equal(f.u.chan.proxy_rank, 3);
	assert_true(f.u.chan.gdrdma);
	assert_int_equal(f.u.chan.to, 9);
	assert_int_equal(parse(P28 "Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0", &f),
			 NLOG_CHANNEL);
	assert_false(f.u.chan.gdrdma);
	assert_string_equal(f.u.chan.transport, "NET/Socket/0");
	/* a plugin's name */
	assert_int_equal(parse(P28 "Channel 00/0 : 1[1] -> 0[0] [receive] via NET/AWS "
				   "Libfabric/0/GDRDMA",
			       &f),
			 NLOG_CHANNEL);
	assert_true(f.u.chan.net && f.u.chan.gdrdma);
	/* rings.cc: rank 0's ring order, 2.23+ " %d" and 2.18 " %3d" */
	assert_int_equal(parse(P28 "Channel 01/02 : 0 1 2 3 4 5 6 7", &f), NLOG_RING);
	assert_int_equal(f.u.ring.channel, 1);
	assert_int_equal(f.u.ring.nrings, 2);
	assert_int_equal(f.u.ring.n, 8);
	assert_int_equal(f.u.ring.ranks[7], 7);
	assert_false(f.u.ring.more);
	assert_int_equal(parse(P18 "Channel 00/02 :    0   1   2   3", &f), NLOG_RING);
	assert_int_equal(f.u.ring.n, 4);
	assert_int_equal(f.u.ring.ranks[3], 3);
	assert_int_equal(parse(P28 "Channel 00/24 :  0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 "
				   "15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 "
				   "36 37 38...",
			       &f),
			 NLOG_NONE); /* "38..." is no rank: the cut lands mid-number */
	assert_int_equal(parse(P28 "Channel 00/24 :  0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 "
				   "15 16 17 18 ...",
			       &f),
			 NLOG_RING);
	assert_true(f.u.ring.more);
	assert_int_equal(f.u.ring.n, 19);
}

static void test_channels_bad(void **state)
{
	struct nccllog_fact f;
	static const char *const bad[] = {
		P28 "Channel 00/0 : 0[0] -> ",
		P28 "Channel 00/0 : 0[0] -> 1[1] via",
		P28 "Channel 00/0 : 0[0] -> 1[1] via ",
		P28 "Channel 00/0 : 0[0] -> 1[1]",
		P28 "Channel 99999999999999/0 : 0[0] -> 1[1] via NET/Socket/0",
		P28 "Channel 00/0 : 99999999999[0] -> 1[1] via NET/Socket/0",
		P28 "Channel 00/0 : 0[999999] -> 1[1] via NET/Socket/0",
		P28 "Channel 00 : 0 1 2", /* a ring order always has "/nrings" */
		P28 "Channel 00/02 :",
		P28 "Channel 00/02 : 0 x 2",
		P28 "Channel xx/0 : 0[0] -> 1[1] via NET/Socket/0",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (parse(bad[i], &f) != NLOG_NONE)
			fail_msg("parsed: %s", bad[i]);
}

static void test_rings_gdr(void **state)
{
	struct nccllog_fact f;

	(void)state;
	/* init.cc (2.18-2.21), generic.cc (2.22-2.23): plain; 2.24+: PXN and GDR */
	assert_int_equal(parse(P18 "Connected all rings", &f), NLOG_RINGS);
	assert_int_equal(f.u.rings.pxn, -1);
	assert_int_equal(f.u.rings.gdr, -1);
	assert_int_equal(parse(P28 "Connected all rings, use ring PXN 0 GDR 1", &f), NLOG_RINGS);
	assert_int_equal(f.u.rings.pxn, 0);
	assert_int_equal(f.u.rings.gdr, 1);
	assert_int_equal(parse(P28 "Connected all trees", &f), NLOG_NONE);
	/* paths.cc: 2.18 "GPU %lx / HCA %d" */
	assert_int_equal(
		parse(P18 "GPU Direct RDMA Disabled for GPU 1b000 / HCA 0 (distance 7 > 4)", &f),
		NLOG_GDR);
	assert_false(f.u.gdr.enabled);
	assert_string_equal(f.u.gdr.gpu, "1b000");
	assert_string_equal(f.u.gdr.hca, "0");
	assert_int_equal(f.u.gdr.distance, 7);
	assert_int_equal(f.u.gdr.level, 4);
	/* 2.21 "HCA %lx", read */
	assert_int_equal(parse(P18 "GPU Direct RDMA Enabled for GPU 1b000 / HCA 1b000000 (distance "
				   "4 <= 4), read 1",
			       &f),
			 NLOG_GDR);
	assert_true(f.u.gdr.enabled);
	assert_int_equal(f.u.gdr.read, 1);
	/* 2.24 "GPU %d" (the rank), 2.26+ " mode %s" */
	assert_int_equal(parse(P28 "GPU Direct RDMA Enabled for GPU 0 / HCA 1 (distance 5 <= 5), "
				   "read 0 mode Default",
			       &f),
			 NLOG_GDR);
	assert_string_equal(f.u.gdr.gpu, "0");
	assert_int_equal(f.u.gdr.read, 0);
	/* topo.cc: an HCA's support */
	assert_int_equal(parse(P28 "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'", &f),
			 NLOG_GDR);
	assert_false(f.u.gdr.enabled);
	assert_string_equal(f.u.gdr.hca, "mlx5_0");
	assert_int_equal(f.u.gdr.distance, -1);
	assert_int_equal(
		parse(P28 "GPU Direct RDMA Enabled for GPU 0 / HCA 1 (distance 5 > 5)", &f),
		NLOG_NONE);
	assert_int_equal(parse(P28 "GPU 0 / HCA 1 connected via C2C link", &f), NLOG_NONE);
}

static void test_env_iface(void **state)
{
	struct nccllog_fact f;

	(void)state;
	/* ncclGetLevel (paths.cc): a name, or "%d" for P2P_DISABLE (2.23+) */
	assert_int_equal(parse(P18 "NCCL_P2P_LEVEL set by environment to NVL", &f), NLOG_ENV);
	assert_string_equal(f.u.env.name, "NCCL_P2P_LEVEL");
	assert_string_equal(f.u.env.value, "NVL");
	assert_int_equal(parse(P28 "NCCL_P2P_DISABLE set by environment to 1", &f), NLOG_ENV);
	assert_string_equal(f.u.env.value, "1");
	/* param.cc: "%lld." */
	assert_int_equal(parse(P18 "NCCL_IB_TIMEOUT set by environment to 22.", &f), NLOG_ENV);
	assert_string_equal(f.u.env.value, "22");
	assert_int_equal(parse(P28 "NCCL_SHM_DISABLE set by environment to -1.", &f), NLOG_ENV);
	assert_string_equal(f.u.env.value, "-1");
	/* a string value that ends in '.' keeps it */
	assert_int_equal(parse(P28 "NCCL_SOCKET_IFNAME set by environment to eth.", &f), NLOG_ENV);
	assert_string_equal(f.u.env.value, "eth.");
	/* socket.cc (NET): "NCCL_SOCKET_IFNAME set to %s" */
	assert_int_equal(parse(P28 "NCCL_SOCKET_IFNAME set to =eth0", &f), NLOG_ENV);
	assert_string_equal(f.u.env.value, "=eth0");
	assert_int_equal(parse(P28 "NCCL_X$Y set by environment to 1", &f), NLOG_NONE);
	assert_int_equal(parse(P28 "Invalid value x for NCCL_IB_TIMEOUT, using default 20.", &f),
			 NLOG_NONE);
	/* net_socket.cc: " [%d]%s:%s" items, an IPv6 one with its scope */
	assert_int_equal(
		parse(P28 "NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:fe80::1%eth1<0>", &f),
		NLOG_IFACE);
	assert_int_equal(f.u.iface.n, 2);
	assert_string_equal(f.u.iface.v[0].what, "NET/Socket");
	assert_int_equal(f.u.iface.v[0].index, 0);
	assert_string_equal(f.u.iface.v[0].name, "eth0");
	assert_string_equal(f.u.iface.v[0].addr, "10.0.0.1<0>");
	assert_string_equal(f.u.iface.v[1].name, "eth1");
	assert_string_equal(f.u.iface.v[1].addr, "fe80::1%eth1<0>");
	/* an alias interface: the name keeps its ':' */
	assert_int_equal(parse(P28 "NET/Socket : Using [0]eth0:1:192.168.1.5<0>", &f), NLOG_IFACE);
	assert_string_equal(f.u.iface.v[0].name, "eth0:1");
	assert_string_equal(f.u.iface.v[0].addr, "192.168.1.5<0>");
	/* net_ib.cc: device:port/link layer, [RO], the OOB interface */
	assert_int_equal(parse(P18 "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB "
				   "eth0:10.1.2.3<0>",
			       &f),
			 NLOG_IFACE);
	assert_int_equal(f.u.iface.n, 3);
	assert_string_equal(f.u.iface.v[1].name, "mlx5_1");
	assert_string_equal(f.u.iface.v[1].addr, "1/RoCE");
	assert_string_equal(f.u.iface.v[2].what, "IB OOB");
	assert_string_equal(f.u.iface.v[2].name, "eth0");
	assert_int_equal(parse(P28 "NET/IB : Using [0]mlx5_0:1/RoCE ; OOB ib0:10.9.0.1<0>", &f),
			 NLOG_IFACE);
	assert_int_equal(f.u.iface.n, 2);
	/* bootstrap.cc: "Bootstrap : Using" to 2.23, "Bootstrap: Using" from 2.24 */
	assert_int_equal(parse(P18 "Bootstrap : Using eth0:10.1.2.3<0>", &f), NLOG_IFACE);
	assert_string_equal(f.u.iface.v[0].what, "Bootstrap");
	assert_int_equal(f.u.iface.v[0].index, -1);
	assert_int_equal(parse(P28 "Bootstrap: Using lo:127.0.0.1<0>", &f), NLOG_IFACE);
	assert_string_equal(f.u.iface.v[0].addr, "127.0.0.1<0>");
	assert_int_equal(parse(P28 "NET/IB : No device found.", &f), NLOG_NO_IB);
	assert_int_equal(parse(P28 "NET/Socket : Using", &f), NLOG_NONE);
	assert_int_equal(parse(P28 "NET/IB : Using [0]mlx5_0:1/IB", &f), NLOG_NONE);
}

/* hostile: no crash, nothing parsed wrongly, nothing unprintable out */
static void assert_printable(const char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s >= 0x7f)
			fail_msg("unprintable byte 0x%02x", (unsigned char)*s);
}

static void test_hostile(void **state)
{
	struct nccllog_fact f;
	char *big = malloc(NLOG_LINE_MAX * 3);
	const char nul[] = P28 "Using network Soc\0ket";

	(void)state;
	/* too long for NCCL's 1024-byte buffer (twice over): not NCCL's */
	memset(big, 'A', NLOG_LINE_MAX * 3 - 1);
	big[NLOG_LINE_MAX * 3 - 1] = '\0';
	memcpy(big, P28 "Using network ", strlen(P28 "Using network "));
	assert_int_equal(parse(big, &f), NLOG_NONE);
	free(big);
	assert_int_equal(nccllog_parse(nul, sizeof(nul) - 1, &f), NLOG_NONE);
	/* escape sequences (a terminal title, a screen clear) leave as '?' */
	assert_int_equal(parse("gpu-a:1:2 [0] x.cc:1 NCCL WARN \x1b]0;pwned\x07\x1b[2J done", &f),
			 NLOG_WARN);
	assert_string_equal(f.u.warn.text, "?]0;pwned??[2J done");
	assert_int_equal(parse(P28 "NCCL_SOCKET_IFNAME set by environment to \x1b[31meth0\xff", &f),
			 NLOG_ENV);
	assert_string_equal(f.u.env.value, "?[31meth0?");
	assert_int_equal(parse("h\x1b[1m:1:2 [0] NCCL INFO Using network IB", &f), NLOG_NETWORK);
	assert_printable(f.host);
	/* bounded copies: long fields are cut, never overflow */
	assert_int_equal(parse(P28
			       "NCCL_SOCKET_IFNAME set by environment to "
			       "eth0123456789012345678901234567890123456789012345678901234567890"
			       "1234567890123456789",
			       &f),
			 NLOG_ENV);
	assert_int_equal(strlen(f.u.env.value), sizeof(f.u.env.value) - 1);
	assert_int_equal(parse(P28
			       "NCCL_ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOPQRSTUVWXYZ set by "
			       "environment to 1",
			       &f),
			 NLOG_NONE);
	/* prefix numbers out of range */
	assert_int_equal(parse("h:99999999999:2 [0] NCCL INFO Using network IB", &f), NLOG_NONE);
	assert_int_equal(parse("h:1:2 [99999999] NCCL INFO Using network IB", &f), NLOG_NONE);
	assert_int_equal(parse("h:1:2 NCCL INFO Using network IB", &f), NLOG_NONE);
	assert_int_equal(parse(":1:2 [0] NCCL INFO Using network IB", &f), NLOG_NONE);
	/* random bytes: whatever comes out is in range and printable */
	srandom(1);
	for (int it = 0; it < 20000; it++) {
		char line[512];
		size_t n = (size_t)(random() % (sizeof(line) - 1)) + 1;
		enum nccllog_kind k;

		/* half of them start like NCCL's lines, so the parsers past the prefix run */
		if (it % 2) {
			static const char *const heads[] = {P28 "Channel ",
							    P28 "comm 0x1 rank ",
							    P28 "NET/IB : Using [",
							    P28 "GPU Direct RDMA ",
							    P28 "NCCL_",
							    "[x] h:1:2 [0] f:1 NCCL WARN "};
			const char *h = heads[it / 2 % 6];

			memcpy(line, h, strlen(h));
			for (size_t i = strlen(h); i < n; i++)
				line[i] = " 0123456789[]:->/()x,.'"[random() % 23];
			if (n < strlen(h))
				n = strlen(h);
		} else {
			for (size_t i = 0; i < n; i++)
				line[i] = (char)random();
		}
		k = nccllog_parse(line, n, &f);
		assert_true(k >= NLOG_NONE && k < NLOG_KIND_MAX);
		assert_printable(f.host);
		if (k == NLOG_WARN || k == NLOG_ATTN)
			assert_printable(f.u.warn.text);
		if (k == NLOG_CHANNEL) {
			assert_printable(f.u.chan.transport);
			assert_true(f.u.chan.from >= 0 && f.u.chan.to >= 0);
		}
		if (k == NLOG_INIT)
			assert_true(f.u.init.rank < f.u.init.nranks);
		if (k == NLOG_IFACE)
			assert_true(f.u.iface.n > 0 && f.u.iface.n <= NLOG_MAX_IFS);
	}
}

static void feed(struct snap_nccl_log *l, const char *line, uint64_t now)
{
	struct nccllog_fact f;

	if (parse(line, &f) == NLOG_NONE)
		fail_msg("not parsed: %s", line);
	nccllog_apply(l, &f, now);
}

/* A 2.28.9 rank's log, two communicators with the same ranks: what each line adds. */
static void test_summary(void **state)
{
	struct snap_nccl_log *l = calloc(1, sizeof(*l));
	char b[64];

	(void)state;
	feed(l, P28 "NCCL version 2.28.9+cuda13.0", 1);
	feed(l, P28 "Bootstrap: Using lo:127.0.0.1<0>", 1);
	feed(l, P28 "NET/Socket : Using [0]lo:127.0.0.1<0>", 1);
	feed(l, P28 "NET/Socket : Using [0]lo:127.0.0.1<0>", 1); /* each comm says it again */
	feed(l, P28 "NCCL_P2P_DISABLE set by environment to 1", 1);
	feed(l, P28 "NCCL_P2P_DISABLE set by environment to 1", 1);
	feed(l,
	     P28 "ncclCommInitRank comm 0x1000 rank 1 nranks 3 cudaDev 1 nvmlDev 1 busId 2a000 "
		 "commId 0xabc - Init START",
	     10);
	assert_int_equal(l->ncomm, 1);
	/* from 2.26 commId is the commHash */
	assert_true(l->comm[0].hash == 0xabc);
	assert_false(l->comm[0].complete);
	feed(l,
	     P28 "ncclCommInitRank comm 0x1000 rank 1 nranks 3 cudaDev 1 nvmlDev 1 busId 2a000 "
		 "commId 0xabc - Init COMPLETE",
	     20);
	assert_int_equal(l->ncomm, 1);
	assert_true(l->comm[0].complete);
	assert_true(l->comm[0].complete_ns == 20);
	/* the lazy ring connect: two channels, both sides of NET */
	feed(l, P28 "Channel 00/0 : 1[1] -> 2[2] [send] via NET/Socket/0", 30);
	feed(l, P28 "Channel 01/0 : 1[1] -> 2[2] [send] via NET/Socket/0", 30);
	feed(l, P28 "Channel 00/0 : 0[0] -> 1[1] [receive] via NET/Socket/0", 30);
	assert_int_equal(l->npath, 2);
	assert_int_equal(l->path[0].comm, 0);
	assert_true(l->path[0].channels == 3);
	snap_log_channels(l->path[0].channels, b, sizeof(b));
	assert_string_equal(b, "channels 0-1");
	assert_int_equal(l->path[1].side, SNAP_LOG_RECV);
	feed(l, P28 "Connected all rings, use ring PXN 0 GDR 0", 40);
	assert_true(l->comm[0].rings);
	assert_int_equal(l->comm[0].gdr, 0);
	/* a second communicator of the same ranks: its channels are its own */
	feed(l,
	     P28 "ncclCommInitRank comm 0x2000 rank 1 nranks 3 cudaDev 1 nvmlDev 1 busId 2a000 "
		 "commId 0xdef - Init START",
	     50);
	feed(l, P28 "Channel 00/0 : 1[1] -> 2[2] [send] via NET/Socket/0", 60);
	assert_int_equal(l->npath, 3);
	assert_int_equal(l->path[2].comm, 1);
	assert_false(l->comm[1].rings);
	/* a channel no communicator fits */
	feed(l, P28 "Channel 00/0 : 5[5] -> 7[7] [send] via NET/Socket/0", 60);
	assert_int_equal(l->path[3].comm, -1);
	assert_int_equal(l->nifs, 2);
	assert_int_equal(l->nenv, 1);
	assert_string_equal(snap_log_env_value(l, "NCCL_P2P_DISABLE"), "1");
	assert_null(snap_log_env_value(l, "NCCL_SHM_DISABLE"));
	feed(l, "[2025-06-01 10:00:00] gpu-a:3333:3399 [0] net_socket.cc:660 NCCL WARN boom", 70);
	assert_string_equal(l->last_warn, "boom");
	assert_int_equal(l->nwarn, 1);
	/* a version before 2.26: commId is not the commHash */
	memset(l, 0, sizeof(*l));
	feed(l, P18 "NCCL version 2.21.5+cuda12.4", 1);
	feed(l,
	     P18 "ncclCommInitRank comm 0x1000 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 "
		 "commId 0xabc - Init START",
	     1);
	assert_true(l->comm[0].id == 0xabc);
	assert_true(l->comm[0].hash == 0);
	/* full: counted, never overflowed */
	for (int i = 0; i < SNAP_LOG_MAX_PATHS + 5; i++) {
		char line[160];

		snprintf(line, sizeof(line),
			 P28 "Channel 00/0 : 0[0] -> %d[%d] [send] via NET/IB/0", i + 1, i + 1);
		feed(l, line, 2);
	}
	assert_int_equal(l->npath, SNAP_LOG_MAX_PATHS);
	assert_int_equal(l->dropped, 5);
	free(l);
}

static void test_channels_text(void **state)
{
	char b[64];

	(void)state;
	snap_log_channels(1, b, sizeof(b));
	assert_string_equal(b, "channel 0");
	snap_log_channels(0x2d, b, sizeof(b)); /* 0,2,3,5 */
	assert_string_equal(b, "channels 0,2-3,5");
	snap_log_channels(1ULL << 63, b, sizeof(b));
	assert_string_equal(b, "channel 63");
	snap_log_channels(~0ULL, b, 8); /* cut, still a string */
	assert_int_equal(strlen(b), 7);
}

static void test_json(void **state)
{
	struct nccllog_fact f;
	json_t *o;

	(void)state;
	parse(P28 "Channel 01/0 : 0[0] -> 9[1] [send] via NET/IB/1(3)/GDRDMA", &f);
	o = nccllog_fact_json(&f);
	assert_string_equal(json_string_value(json_object_get(o, "type")), "nccl_log");
	assert_string_equal(json_string_value(json_object_get(o, "what")), "channel");
	assert_string_equal(json_string_value(json_object_get(o, "side")), "send");
	assert_string_equal(json_string_value(json_object_get(o, "kind")), "NET");
	assert_int_equal(json_integer_value(json_object_get(o, "proxy_rank")), 3);
	assert_true(json_is_true(json_object_get(o, "gdrdma")));
	json_decref(o);
	parse(P28 "ncclCommInitRank comm 0x1000 rank 1 nranks 3 cudaDev 1 nvmlDev 1 busId 2a000 "
		  "commId 0xe1f3bc6734a09d21 - Init START",
	      &f);
	o = nccllog_fact_json(&f);
	assert_string_equal(json_string_value(json_object_get(o, "comm_id")), "e1f3bc6734a09d21");
	assert_string_equal(json_string_value(json_object_get(o, "comm")), "0x1000");
	assert_string_equal(json_string_value(json_object_get(o, "event")), "start");
	json_decref(o);
}

static void test_policy(void **state)
{
	char b[64];

	(void)state;
	assert_true(
		nccllog_expand_path("/d/nccl.%h.%p.log", "gpu-a.cluster.local", 42, b, sizeof(b)));
	assert_string_equal(b, "/d/nccl.gpu-a.42.log");
	assert_true(nccllog_expand_path("100%%-%x-%", "h", 1, b, sizeof(b)));
	assert_string_equal(b, "100%-%x-%");
	assert_false(nccllog_expand_path("/a/very/long/%h", "hostname", 1, b, 12));
	assert_true(nccllog_level_writes_file("INFO"));
	assert_true(nccllog_level_writes_file("warn"));
	assert_false(nccllog_level_writes_file("VERSION"));
	assert_false(nccllog_level_writes_file("LOUD"));
	assert_false(nccllog_level_writes_file(NULL));
	assert_true(nccllog_subsys_init_only("INIT,ENV"));
	assert_true(nccllog_subsys_init_only("init,bootstrap,NET"));
	assert_false(nccllog_subsys_init_only("INIT,COLL"));
	assert_false(nccllog_subsys_init_only("^COLL"));
	assert_false(nccllog_subsys_init_only("ALL"));
	assert_false(nccllog_subsys_init_only(""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prefix),	     cmocka_unit_test(test_warn_230),
		cmocka_unit_test(test_attn),	     cmocka_unit_test(test_init),
		cmocka_unit_test(test_init_bad),     cmocka_unit_test(test_channels),
		cmocka_unit_test(test_channels_bad), cmocka_unit_test(test_rings_gdr),
		cmocka_unit_test(test_env_iface),    cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_summary),	     cmocka_unit_test(test_channels_text),
		cmocka_unit_test(test_json),	     cmocka_unit_test(test_policy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
