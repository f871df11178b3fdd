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
#include <stdio.h>

/*
 * The trace of a dump; NULL with a one-line reason in err. phases_only: the NCCL phase slices
 * and the names of processes and threads, nothing else (what report and --html draw).
 */
json_t *convert_dump(const char *path, bool phases_only, char *err, size_t errlen);

/*
 * The same trace without holding it (`convert`): each event, once finished, goes to a sink
 * that spills it as compact JSON to an unlinked temporary file and keeps only its time and
 * place (32 bytes); the output is copied from there in time order. Memory: that index, the
 * open phases and the collective launches (--collectives), not the events.
 */
struct convert_sink;
struct convert_sink *convert_sink_new(char *err, size_t errlen);
/* path's events into s, each passed to place(e, ctx) first where place is not NULL */
int convert_dump_into(struct convert_sink *s, const char *path, void (*place)(json_t *, void *),
		      void *ctx, char *err, size_t errlen);
/* {"traceEvents":[...],"displayTimeUnit":"ms"} to f, in time order; *n: the events */
int convert_sink_write(struct convert_sink *s, FILE *f, size_t *n, char *err, size_t errlen);
void convert_sink_free(struct convert_sink *s);

#endif /* NT_CONVERT_H */
