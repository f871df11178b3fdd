/* SPDX-License-Identifier: MIT */
/*
 * NCCL's own log in a dump (its nccl_log records), per process, for report: the version and
 * network, each communicator as Init told it (and whether its rings connected), and the
 * transport of each peer and channel.
 */
#ifndef NT_REPORTLOG_H
#define NT_REPORTLOG_H

#include <jansson.h>

/* One nccl_log record into logs (an object: pid -> what its log told). */
void reportlog_add(json_t *logs, json_t *rec);
/*
 * Each rank's log into its entry ("nccl_log"); a process with no rank record but a
 * communicator in its log becomes a rank as NCCL numbered it (rank_source "NCCL log").
 */
void reportlog_merge(json_t *ranks, json_t *logs);
/* The lines of a rank's "nccl_log", under its entry. */
void reportlog_print(json_t *rank);

#endif /* NT_REPORTLOG_H */
