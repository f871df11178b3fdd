/* SPDX-License-Identifier: MIT */
/*
 * The findings of a job of several hosts over time: each merged snapshot (model/snapmerge.h)
 * diagnosed as the tracer diagnoses its own, its findings tracked from snapshot to snapshot
 * and kept in the report's form, each naming the host of its culprit and of the longest waiter.
 * What `watch` and a merged `report` share.
 */
#ifndef NT_JOBVIEW_H
#define NT_JOBVIEW_H

#include <jansson.h>
#include "diagnose/diagnose.h"
#include "diagnose/findings.h"
#include "model/snapjson.h"

struct jobview {
	struct diag_config cfg;
	struct findings fs;
	struct finding *found;
	json_t *latest; /* the latest record of each finding, in the order they opened */
	const struct snapshot *snap; /* the snapshot being diagnosed (during a step) */
	int64_t realtime_off;	     /* add to its times for CLOCK_REALTIME */
	int nopen;
	finding_cb tell; /* also told each event, NULL: none (watch's plain output) */
	void *tell_ctx;
};

int jobview_init(struct jobview *v, double stall_threshold_s);
void jobview_free(struct jobview *v);
/*
 * Diagnose m (at m->s.now_ns); realtime_off: what turns its clock into CLOCK_REALTIME.
 * stale_ns: how old the oldest host's state merged into m is at its now (0: all fresh). A
 * finding absent from m closes once absent 1 s more than that: a state taken as of a later
 * time reads its ages short by as much, and a host whose tick slipped is no sign the wait ended.
 */
void jobview_step(struct jobview *v, const struct snapstore *m, int64_t realtime_off,
		  uint64_t stale_ns);
/* The end: every finding still open closes at now. */
void jobview_close(struct jobview *v, const struct snapstore *m, uint64_t now);
/* The findings open after the last step, as the report's findings (a new array). */
json_t *jobview_open_findings(const struct jobview *v);

#endif /* NT_JOBVIEW_H */
