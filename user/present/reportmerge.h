/* SPDX-License-Identifier: MIT */
/*
 * `report` of several dumps of one job, one per host: their `state` records put on one clock
 * (each dump's boot_to_realtime_ns: CLOCK_REALTIME is the common clock, so the hosts' clocks
 * are assumed to agree as NTP keeps them), merged second by second and diagnosed as one job,
 * so that a rank on one host waiting on a rank on another finds it, with that host's evidence.
 */
#ifndef NT_REPORTMERGE_H
#define NT_REPORTMERGE_H

#include <jansson.h>
#include <stddef.h>

/*
 * The report of dumps paths[0..n) (report_findings()'s form, the findings re-diagnosed across
 * hosts, plus "merged": the dumps, their hosts and clock offsets, and the skew assumed), with
 * "ranks": every dump's ranks, each with its "host". NULL with "PATH: ..." in err.
 */
json_t *report_merged(char **paths, int n, char *err, size_t errlen);

#endif /* NT_REPORTMERGE_H */
