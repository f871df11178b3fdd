/* SPDX-License-Identifier: MIT */
/*
 * `/metrics`: a snapshot and its open findings in the Prometheus text format (0.0.4). Per rank:
 * its NCCL phase, seconds without byte progress, collectives launched per communicator and
 * function; per connection: bytes each way, idle seconds, retransmits; open findings by kind.
 * Labels host, rank, pid, comm_hash, and gpu (the CUDA device NCCL's log names) where known,
 * so that they join dcgm-exporter's. Pure.
 */
#ifndef NT_METRICS_H
#define NT_METRICS_H

#include "diagnose/findings.h"
#include "model/snapshot.h"

/* The exposition text (malloc'd, NUL-terminated), NULL on ENOMEM. */
char *metrics_text(const struct snapshot *s, const struct findings *fs, const char *host);

#endif /* NT_METRICS_H */
