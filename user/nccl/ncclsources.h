/* SPDX-License-Identifier: MIT */
/*
 * Which of nccltrace's sources tell each fact about a job on one NCCL library: its internal
 * probes where its symbols and DWARF are, else its public API, NCCL's profiler plugin (2.23 on),
 * NCCL's own log (every build), the threads' stacks. Pure: from what nccllib_open() found and
 * the plugin API the library looks up. `nccltrace probes` and `doctor` print it.
 */
#ifndef NT_NCCLSOURCES_H
#define NT_NCCLSOURCES_H

#include "nccl/nccllib.h"

#define NCCL_SOURCES_MAX 8

struct nccl_source {
	const char *fact; /* "phases", "collective counts", ... */
	char how[320];	  /* the sources that serve it, best first; "none" if nothing does */
	bool none;	  /* no source on this build */
};

/* The rows for lib; plugin_api: ncclprof_lib_api()'s answer (0: no plugin API, < 0: unknown) */
int nccl_sources(const struct nccl_lib *lib, int plugin_api, struct nccl_source *out);

#endif /* NT_NCCLSOURCES_H */
