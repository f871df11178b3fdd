/* SPDX-License-Identifier: MIT */
/*
 * `watch`'s rounds: fetch every tracer's /state (watchpoll.c), put them on one clock, merge
 * and diagnose the job as one (present/jobview.c). What watch.c shows, and what the scale
 * benchmark times (tests/bench/fedbench.c).
 */
#ifndef NT_WATCHJOB_H
#define NT_WATCHJOB_H

#include <stdbool.h>
#include "cmd/watchpoll.h"
#include "model/snapmerge.h"
#include "present/jobview.h"

struct watch {
	struct endpoint *ep;
	int n;
	bool once, json, no_tui; /* watch's options */
	double threshold_s;	 /* 0: the first tracer's */
	const char *token_file;
	const char *job; /* --job RULE=ID: that job of an agent's /state */
	char token[256];
	struct jobview v;
	bool started;
	int64_t ref_b2r; /* the clock: the first answer's boot_to_realtime_ns */
	bool have_ref;
	struct snapstore **cur;	      /* each endpoint's last snapshot, NULL: none */
	struct snapjson_cache *cache; /* each one's connections as last read (into cur's store) */
	char (*host)[80];
	char (*lo)[128]; /* each tracer's loopback identity, "" if unknown */
	struct snapstore *merged;
	finding_cb tell; /* told each finding as it opens, changes and closes, NULL: none */
	void *tell_ctx;
};

/* The endpoints of specs[0..n) (pointed to, not copied); -1 on ENOMEM. */
int watch_alloc(struct watch *w, char **specs, int n);
/* One round: fetch, then watch_absorb; how many tracers answered. */
int watch_round(struct watch *w);
/*
 * The answers in ep[].body (ep[].err "" where there is one): put them on one clock, merge and
 * diagnose them as one job. What another host controls enters here (tests/fuzz/fuzz_state.c).
 */
void watch_absorb(struct watch *w);
void watch_free(struct watch *w);

#endif /* NT_WATCHJOB_H */
