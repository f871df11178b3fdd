/* SPDX-License-Identifier: MIT */
/*
 * `nccltrace report --html OUT DUMP`: one self-contained HTML file (no external resources,
 * opens offline): one row per rank with its NCCL phases coloured, the spans of stalls marked
 * on the culprit's row, the findings with evidence and causes.
 */
#ifndef NT_HTML_H
#define NT_HTML_H

#include <jansson.h>
#include <stddef.h>

/* report: what report_findings() and the rank summaries give. 0, or an exit status with err. */
int html_write(const char *out, json_t *report, const char *dump, char *err, size_t errlen);

/* The same for several dumps of one job (report is report_merged()'s). */
int html_write_merged(const char *out, json_t *report, char **dumps, int n, char *err,
		      size_t errlen);

/* The data the page draws from (pure, for tests): ranks, slices, stalls, findings. */
json_t *html_data(json_t *report, json_t *trace, json_t *finding_events);

#endif /* NT_HTML_H */
