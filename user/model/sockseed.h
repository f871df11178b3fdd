/* SPDX-License-Identifier: MIT */
/*
 * The connections a job had before nccltrace attached, as the kernel's sock_diag showed them
 * (trace/sockdiag.h), by socket inode. The BPF side counts a connection from its first call
 * after the attach; its seed gives it back its true age (the last data each way, the bytes and
 * retransmits before). A connection no call touches (a thread blocked in a receive since before
 * the attach) lives on the seed alone, under seed_id(). Pure: tables in, connections out.
 */
#ifndef NT_SOCKSEED_H
#define NT_SOCKSEED_H

#include <stdbool.h>
#include <stdint.h>
#include "nccltrace.h"

struct sockseed {
	uint64_t ino;
	int pid;
	struct nt_conn c; /* sock_diag's view, refreshed while the BPF side does not have it */
	bool in_map;	  /* the BPF side has it now: its seed entry in the model is gone */
	bool seen;	  /* in the latest sock_diag dump */
	bool closed;	  /* no longer in sock_diag's dumps */
	bool forgotten;	  /* in_map, and its seed entry is out of the model */
};

struct sockseeds {
	struct sockseed *v;
	int n, cap;
	uint64_t attach_ns;
	uint64_t read_ns; /* when sock_diag was last read for them */
};

/* The model's id of a connection known from its seed only: no kernel address looks like it */
static inline uint64_t sockseed_id(uint64_t ino)
{
	return ino | (1ULL << 63);
}

/* a seed's id: bit 63 alone of the top two (a kernel address has both) */
static inline bool sockseed_is_id(uint64_t id)
{
	return id >> 62 == 2;
}

/* 0 or -ENOMEM; a known inode is not added again */
int sockseeds_add(struct sockseeds *s, int pid, const struct nt_conn *c);
struct sockseed *sockseeds_find(const struct sockseeds *s, uint64_t ino);
/*
 * c, from the conns map: a socket older than the attach gets its seed's age and counts (its
 * start and last data each way no later than the seed's, bytes and retransmits added). True
 * when it had a seed (marked in_map).
 */
bool sockseeds_apply(struct sockseeds *s, struct nt_conn *c);
/* A later sock_diag view of e's socket: figures and the last data each way, the start kept. */
void sockseeds_refresh(struct sockseed *e, const struct nt_conn *now_view);
void sockseeds_free(struct sockseeds *s);

#endif /* NT_SOCKSEED_H */
