/* SPDX-License-Identifier: MIT */
/*
 * What the dashboard shows, built from the engine's snapshot and findings: ranks with their
 * phase and collective counts, connections with rates (from the previous snapshot), findings.
 * Pure: no maps, no /proc.
 */
#ifndef NT_DASHBOARD_H
#define NT_DASHBOARD_H

#include "diagnose/diagnose.h"
#include "diagnose/findings.h"
#include "present/tuilayout.h"

struct dash_info {
	const char *cmd;
	uint64_t start_ns;
	const char *mode;
	uint64_t lost;
	uint64_t suppressed; /* records over the budget */
	const char *dump;
	const char *host;
	bool job_done;
	const struct diag_config *cfg;
	const char *const *log; /* the job's last output lines */
	int nlog;
	int expanded; /* the group to show rank by rank (tui_state.expanded) */
};

/* From this many ranks on, the waiters of a finding are one row: the picture stays readable */
#define DASH_GROUP_RANKS 64

struct dashboard;

struct dashboard *dashboard__new(void);
void dashboard__free(struct dashboard *d);

/* The model for this snapshot; valid until the next call. NULL on allocation failure. */
const struct tui_model *dashboard__update(struct dashboard *d, const struct snapshot *s,
					  const struct findings *fs, const struct dash_info *in,
					  enum tui_sort sort);

#endif /* NT_DASHBOARD_H */
