/* SPDX-License-Identifier: MIT */
/*
 * The traces of one job's dumps (one per host) as one: each dump's events moved onto the first
 * dump's time axis by their realtime anchors, its processes named with their host, and the
 * processes without a rank kept apart across hosts. For `convert` and `report --html` of
 * several dumps.
 */
#ifndef NT_CONVERTMERGE_H
#define NT_CONVERTMERGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* A dump's offset from the first's, in seconds on the first's axis (its start there). */
double convert_offset_s(json_t *first_header, json_t *header);
/* The first line (header) of a dump; NULL with the reason in err. */
json_t *convert_header(const char *path, char *err, size_t errlen);
/* The merged trace of paths[0..n); NULL with a one-line reason in err. */
json_t *convert_dumps(char **paths, int n, bool phases_only, char *err, size_t errlen);
/*
 * The same, one dump or several, in a sink (convert_sink: the events are not held), for
 * convert_sink_write; NULL with a one-line reason in err.
 */
struct convert_sink *convert_dumps_sink(char **paths, int n, char *err, size_t errlen);

#endif /* NT_CONVERTMERGE_H */
