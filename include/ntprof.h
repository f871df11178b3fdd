/* SPDX-License-Identifier: MIT */
/*
 * The state nccltrace's NCCL profiler plugin (user/plugin/nccl-profiler-nccltrace.c) keeps in
 * the job's memory, and the tracer (user/nccl/ncclprof.c) copies each tick with
 * process_vm_readv. Shared by both: fixed-width fields, explicit padding, sizes asserted.
 *
 * The writer takes no lock and makes no syscall. The reader may copy the memory at any moment,
 * while the writer is half-way through an update, so every part says by itself whether a copy
 * is whole:
 *  - a collective's record carries a check word, a hash of its other words written last: a
 *    copy mixing two writes of the slot does not match it, whatever order the copy went in;
 *  - the identity of a communicator has its own check (id_check);
 *  - the counters are single aligned words that only grow; the reader copies them twice in one
 *    call and keeps the copy only when both agree.
 * The reader trusts nothing else: the magic, the layout and every size are checked, indices
 * are taken modulo the ring, and a record is used only for the ordinal it claims.
 */
#ifndef NT_NTPROF_H
#define NT_NTPROF_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define NTPROF_MAGIC  0x666f72706e74636eULL /* "nctnprof" little-endian */
#define NTPROF_LAYOUT 1
/* the exported symbol the tracer looks up in the plugin's .dynsym */
#define NTPROF_SYMBOL "nccltrace_profiler_state"
/* the plugin's file name, as NCCL 2.26+ also finds it from NCCL_PROFILER_PLUGIN=nccltrace */
#define NTPROF_LIB "libnccl-profiler-nccltrace.so"

/* communicators (profiler contexts) per process: more are counted in overflow */
#define NTPROF_MAX_COMMS 64
/*
 * The last collectives of each communicator. The tracer reads every new record at each
 * 200 ms tick, so 1024 covers 5000 collectives a second per communicator without a loss; past
 * that the cumulative signature in each record still shows whether the ranks diverged in the
 * records it missed (see ncclprof.c).
 */
#define NTPROF_RING 1024
/* per ncclFunc_t: Broadcast 0 ... AllReduce 4 (= comm->seqNumber[]), SendRecv 5 ... Gather 10 */
#define NTPROF_NFUNC 16
#define NTPROF_NAME  32

enum ntprof_comm_state {
	NTPROF_FREE = 0,
	NTPROF_ACTIVE = 1,
	NTPROF_FINALIZED = 2, /* finalize: NCCL destroyed it; its counts are final */
};

enum ntprof_comm_flags {
	/* v1-v3: hash and rank come from the first Coll/P2p descriptor, not from init */
	NTPROF_CF_ID_LATE = 1 << 0,
	/*
	 * v3/v4 saw NCCL's seqNumber not advance between two Colls of a function: a CUDA graph
	 * replays collectives whose launches NCCL does not count, and those versions do not say
	 * which: the ordinals of its ranks may not align, so they are not compared
	 */
	NTPROF_CF_UNALIGNED = 1 << 1,
	/* a record was written unchained: the cumulative signatures cannot be compared */
	NTPROF_CF_UNCHAINED = 1 << 2,
};

enum ntprof_rec_flags {
	/* two writers at once (never seen: NCCL serialises a comm's launches): no chain */
	NTPROF_RF_UNCHAINED = 1 << 0,
};

/* One collective launched (a Coll startEvent), 64 bytes. */
struct ntprof_rec {
	__u64 ord;   /* 1-based ordinal among the communicator's collectives; 0: never written */
	__u64 ts_ns; /* CLOCK_MONOTONIC at the launch */
	__u64 count; /* as NCCL's task has it (AllGather, Broadcast: bytes of int8) */
	__u64 seq;   /* NCCL's seqNumber of its function, 0-based, as the descriptor gives it */
	__u64 sig;   /* cumulative signature of collectives 1..ord (0 when unchained) */
	__s32 root;
	__u8 func;	/* ncclFunc_t, 0xff unknown */
	__u8 dtype;	/* ncclDataType_t, 0xff unknown */
	__u8 op;	/* ncclRedOp_t where the version gives it (v1), else 0xff */
	__u8 flags;	/* enum ntprof_rec_flags */
	__u64 check;	/* ntprof_rec_check() of the other words and the slot's gen */
	__u64 user_tag; /* v7 (NCCL 2.31.2+): the call's userTag; 0 untagged or before v7 */
};

/* One communicator (a profiler context): all but its records, which the tracer reads apart */
struct ntprof_comm_head {
	/* identity, published by id_check (NTPROF_CF_ID_LATE: at the first event) */
	__u64 gen;		    /* the slot's generation: a change means another communicator */
	__u64 hash;		    /* commHash (v1-v4), commId (v5+; equal to commHash in 2.26+) */
	__s32 rank, nranks, nnodes; /* -1 where the version does not say */
	__u32 api;		    /* profiler API version NCCL called init with, 1..7 */
	char name[NTPROF_NAME];	    /* commName, "" if none */
	__u64 init_ns;
	__u64 id_check; /* ntprof_id_check() of the words above */
	/* counters: aligned words written atomically, only growing (state and flags aside) */
	__u32 state; /* enum ntprof_comm_state */
	__u32 flags; /* enum ntprof_comm_flags */
	__u64 finalize_ns;
	__u64 ncoll;		    /* collectives launched (ordinal of the newest record) */
	__u64 fcount[NTPROF_NFUNC]; /* of them per function, as comm->seqNumber[] counts */
	__u64 graph;		    /* graph-captured launches (v5+): not counted, as NCCL */
	__u64 np2p;		    /* point-to-point operations launched (P2p) */
	__u64 coll_api, p2p_api;    /* ncclAllReduce... / ncclSend, ncclRecv calls (v5+) */
	__u64 group_api;	    /* API groups started (v5+) */
	__u64 group_start_ns;	    /* the open API group's start, 0 when none is open */
	__u64 group_end_ns;	    /* when that group entered ncclGroupEnd, 0 if not yet */
	__u64 launched_at_end;	    /* ncoll + np2p when it did */
	__u64 last_launch_ns;
	__u64 bad; /* events ignored: unknown types, missing fields */
	/* the writer's own words */
	__u64 writing;		      /* try-flag of the record writer */
	__u64 last_sig;		      /* the chain so far */
	__u64 last_seq[NTPROF_NFUNC]; /* v3/v4: each function's last seqNumber + 1 */
	__u64 pad[7];
};

struct ntprof_comm {
	struct ntprof_comm_head h;
	struct ntprof_rec ring[NTPROF_RING]; /* record ord is at ring[(ord - 1) % NTPROF_RING] */
};

/* The counters' part of struct ntprof_comm_head, which the reader copies twice */
#define NTPROF_COUNTERS_OFF __builtin_offsetof(struct ntprof_comm_head, state)
#define NTPROF_COUNTERS_LEN                                                                        \
	(__builtin_offsetof(struct ntprof_comm_head, writing) - NTPROF_COUNTERS_OFF)

struct ntprof_state {
	__u64 magic;	  /* NTPROF_MAGIC, set last when the plugin is loaded */
	__u32 layout;	  /* NTPROF_LAYOUT */
	__u32 comm_size;  /* sizeof(struct ntprof_comm) */
	__u32 max_comms;  /* NTPROF_MAX_COMMS */
	__u32 ring;	  /* NTPROF_RING */
	__u32 api_max;	  /* the newest API version NCCL called init with */
	__s32 pid;	  /* getpid() at load */
	__u64 ncomms;	  /* slots taken so far */
	__u64 overflow;	  /* inits refused: the table was full */
	__u64 bad_handle; /* stop/record calls with a handle that is not ours */
	__u64 pad;
	struct ntprof_comm comm[NTPROF_MAX_COMMS];
};

_Static_assert(sizeof(struct ntprof_rec) == 64, "ntprof_rec");
_Static_assert(__builtin_offsetof(struct ntprof_comm_head, id_check) == 72, "identity");
_Static_assert(__builtin_offsetof(struct ntprof_comm_head, state) % 8 == 0 &&
		       __builtin_offsetof(struct ntprof_comm_head, ncoll) % 8 == 0,
	       "counters aligned");
_Static_assert(sizeof(struct ntprof_comm_head) == 512, "ntprof_comm_head");
_Static_assert(sizeof(struct ntprof_comm) == 512 + NTPROF_RING * 64, "ntprof_comm");
_Static_assert(sizeof(struct ntprof_state) == 64 + NTPROF_MAX_COMMS * sizeof(struct ntprof_comm),
	       "ntprof_state");

/* splitmix64's finaliser: cheap, and every input bit reaches every output bit */
static inline __u64 ntprof_mix(__u64 h, __u64 v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	return h ^ (h >> 31);
}

/* root, func, dtype, op and flags as one word (in the record's order) */
static inline __u64 ntprof_rec_packed(const struct ntprof_rec *r)
{
	return (__u64)(__u32)r->root | (__u64)r->func << 32 | (__u64)r->dtype << 40 |
	       (__u64)r->op << 48 | (__u64)r->flags << 56;
}

/*
 * gen: the slot's generation, so that a record left by an earlier communicator never passes.
 * A multiply-xor chain, one word at a time, finished by ntprof_mix: a copy that mixes words of
 * two writes matches with probability 2^-64; and it costs the writer 7 multiplies.
 */
static inline __u64 ntprof_rec_check(const struct ntprof_rec *r, __u64 gen)
{
	const __u64 k = 0x9e3779b97f4a7c15ULL;
	__u64 h = gen ^ 0x6e7470726563ULL;

	h = (h ^ r->ord) * k;
	h = (h ^ r->ts_ns) * k;
	h = (h ^ r->count) * k;
	h = (h ^ r->seq) * k;
	h = (h ^ r->sig) * k;
	h = (h ^ r->user_tag) * k;
	h = (h ^ ntprof_rec_packed(r)) * k;
	return ntprof_mix(h, 0);
}

/* What must match across the ranks of one collective: function, count, datatype, root, op */
static inline __u64 ntprof_rec_sig(const struct ntprof_rec *r)
{
	__u64 h = ntprof_mix(0x6e74736967ULL, r->count);

	return ntprof_mix(h, ntprof_rec_packed(r) & 0x00ffffffffffffffULL);
}

static inline __u64 ntprof_id_check(const struct ntprof_comm_head *c)
{
	__u64 h = ntprof_mix(0x6e746964ULL, c->gen);

	h = ntprof_mix(h, c->hash);
	h = ntprof_mix(h, (__u64)(__u32)c->rank << 32 | (__u32)c->nranks);
	h = ntprof_mix(h, (__u64)(__u32)c->nnodes << 32 | c->api);
	for (int i = 0; i < NTPROF_NAME; i += 8) {
		__u64 w = 0;

		for (int k = 0; k < 8; k++)
			w |= (__u64)(unsigned char)c->name[i + k] << (8 * k);
		h = ntprof_mix(h, w);
	}
	return ntprof_mix(h, c->init_ns);
}

#endif /* NT_NTPROF_H */
