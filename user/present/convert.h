/* SPDX-License-Identifier: MIT */
/*
 * `nccltrace convert DUMP -o trace.json`: the dump as Chrome trace-event JSON, which the
 * Perfetto UI (ui.perfetto.dev) and chrome://tracing open. pid = rank, tid = thread; NCCL
 * phases are complete slices, properly nested on each thread; collectives (--collectives) are
 * async slices from a rank's launch to the last rank's launch of the same one; bytes/s and
 * collective counts are counters; findings and process events are instant markers.
 */
#ifndef NT_CONVERT_H
#define NT_CONVERT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * The trace of a dump; NULL with a one-line reason in err. phases_only: the NCCL phase slices
 * and the names of processes and threads, nothing else (what report and --html draw).
 */
json_t *convert_dump(const char *path, bool phases_only, char *err, size_t errlen);

#endif /* NT_CONVERT_H */
