/* SPDX-License-Identifier: MIT */
/*
 * Findings over time: a finding opens the first time diagnose() reports it, is updated while
 * the condition lasts (since grows), and closes once it has been absent for a while. Pure.
 */
#ifndef NT_FINDINGS_H
#define NT_FINDINGS_H

#include <jansson.h>
#include "diagnose/diagnose.h"

enum finding_event {
	FINDING_OPEN,
	FINDING_UPDATE,
	FINDING_CLOSE,
};

struct tracked_finding {
	int id;
	bool open;
	uint64_t opened_ns;
	uint64_t last_seen_ns;
	uint64_t last_told_ns;
	/*
	 * Opened at an adaptive threshold shorter than -t (early); sure once the wait outlived -t;
	 * transient: it closed before that, the rank having gone on (counted, not an alarm)
	 */
	bool early_open, sure, transient;
	struct finding f;
};

struct findings {
	struct tracked_finding *v;
	int n, cap;
	int next_id;
	int ntransient;		  /* closed as transient */
	uint64_t close_after_ns;  /* absent this long: closed */
	uint64_t update_every_ns; /* an open finding is re-told this often */
};

typedef void (*finding_cb)(void *ctx, enum finding_event ev, const struct tracked_finding *t);

void findings_init(struct findings *fs, uint64_t close_after_ns, uint64_t update_every_ns);
void findings_free(struct findings *fs);
/*
 * Feed the findings of one snapshot; cb hears what opened, changed or closed (an early finding
 * that became sure is told at once).
 */
void findings_update(struct findings *fs, const struct finding *cur, int n, uint64_t now,
		     finding_cb cb, void *ctx);
/* Close everything still open (end of the trace). */
void findings_close_all(struct findings *fs, uint64_t now, finding_cb cb, void *ctx);
int findings_open_count(const struct findings *fs);

const char *finding_event_name(enum finding_event ev);

/*
 * The dump/report form of a finding (the contract of `report --json`): kind, rank, peer_rank,
 * phase, since_s, summary, evidence, settings, plus id, event, pid, peer_pid, conn,
 * hypotheses, comm_hash, threshold_s, threshold_why, early and (closing) transient. conn may be
 * NULL.
 */
json_t *finding_to_json(const struct tracked_finding *t, enum finding_event ev, uint64_t now,
			const char *conn);

#endif /* NT_FINDINGS_H */
