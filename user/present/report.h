/* SPDX-License-Identifier: MIT */
#ifndef NT_REPORT_H
#define NT_REPORT_H

#include <jansson.h>

/*
 * The findings of a dump, latest state of each, in the order they were raised:
 * {"findings":[...]}. NULL with "PATH:LINE: ..." in err on a corrupt dump.
 */
json_t *report_findings(const char *path, char *err, size_t errlen);

/* a rank's progress ("bytes_per_s"): at most this many columns */
#define REPORT_HEAT_COLS 60
/* a rank's connections listed with their columns in report --json and the page, the busiest */
#define REPORT_CONNS_LISTED 24

/*
 * Per rank (by pid), in rank order: identity, connection totals, QPs and HCA events, the main
 * thread's NCCL phase timeline, progress and how it ended (reportranks.c). NULL with the reason in
 * err on a corrupt dump.
 */
json_t *report_ranks(const char *path, json_t *header, char *err, size_t errlen);

/* The text form of a report (report_findings() with "ranks") on stdout. */
void report_print(json_t *report);

#endif /* NT_REPORT_H */
