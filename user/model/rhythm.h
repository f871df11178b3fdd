/* SPDX-License-Identifier: MIT */
/*
 * A job's own rhythm: the gaps between the moments a communicator's collective counters, or a
 * connection's bytes, were seen moving. What the adaptive stall threshold is derived from
 * (diagnose: k x p99 gap, clamped between --min-threshold and -t). Pure.
 *
 * A gap is measured between the ticks that saw a move (or, for a connection, between the last
 * progress times the kernel recorded by then): with a 100 ms tick a communicator that launches
 * every 20 ms shows 100 ms gaps, an upper bound on its true ones. That errs long, never short:
 * the threshold it gives can only be later than the job's real rhythm allows.
 */
#ifndef NT_RHYTHM_H
#define NT_RHYTHM_H

#include <stdbool.h>
#include <stdint.h>

/* the last RHYTHM_GAPS gaps count: a new phase of training replaces the old one's */
#define RHYTHM_GAPS 128
/* fewer gaps than this: still learning, no threshold of its own (the ceiling applies) */
#define RHYTHM_WARM 20

struct rhythm {
	uint32_t gap[RHYTHM_GAPS]; /* ring: the latest min(n, RHYTHM_GAPS) gaps, microseconds */
	int n;			   /* gaps seen in all */
	uint64_t last_ns;	   /* the latest move, 0 before the first */
	uint64_t every_ns;	   /* the time per event (collective, send/receive), averaged */
	uint64_t count;		   /* the events counted by the latest move (rhythm_seen) */
	uint64_t tick;		   /* the tick number that saw it */
};

/*
 * The counters (or the progress time) moved by events at t; a gap longer than cap_ns (0: no
 * cap) counts as cap_ns. The first call only starts the clock; a call with t not after the
 * latest is ignored.
 */
void rhythm_moved(struct rhythm *r, uint64_t t, uint64_t events, uint64_t cap_ns);

/*
 * A monotonic count (collectives launched, calls that moved bytes) read at tick number tick,
 * with the time of its latest move: a move when it differs from the last count seen. Moves at
 * two ticks in a row are at most one tick (tick_ns) apart as far as ticks can tell: the jitter
 * of the ticks themselves is no gap of the job's.
 */
void rhythm_seen(struct rhythm *r, uint64_t t, uint64_t count, uint64_t tick, uint64_t tick_ns);

/* The 99th percentile of the kept gaps (nearest rank); 0 while warming up. */
uint64_t rhythm_p99(const struct rhythm *r);

/*
 * Rhythms by key (a socket's kernel address; a process and communicator hash mixed), kept
 * from tick to tick; those not asked for since a sweep go at the next one. Open addressing.
 */
struct rhythm_slot {
	uint64_t key; /* 0: empty */
	bool seen;    /* asked for since the last sweep */
	struct rhythm r;
};

struct rhythms {
	struct rhythm_slot *slot;
	unsigned int cap; /* a power of two, 0 before the first get */
	unsigned int n;
	uint64_t tick; /* rhythms_learn's calls so far */
};

/* The rhythm of key (not 0), made if new; NULL when out of memory. */
struct rhythm *rhythms_get(struct rhythms *t, uint64_t key);
/* Drop every rhythm not asked for since the last sweep; the rest start a new round. */
void rhythms_sweep(struct rhythms *t);
void rhythms_free(struct rhythms *t);

/* A process's communicator as a key: never 0 */
uint64_t rhythm_comm_key(int pid, uint64_t comm_hash);

struct snapshot;
/*
 * Learn from one tick's snapshot and fill its communicators' and connections' gap_p99_ns and
 * every_ns. Connections learn nothing while the per-call hooks are off (quiet mode), and their
 * clock starts again when the hooks come back: the quiet time is no gap of theirs.
 */
void rhythms_learn(struct rhythms *t, struct snapshot *s, uint64_t tick_ns);

#endif /* NT_RHYTHM_H */
