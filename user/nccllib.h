/* SPDX-License-Identifier: MIT */
/*
 * An NCCL library as nccltrace sees it: where it is, which of the probed functions it has (by
 * mangled name, from .symtab and .dynsym), and the offsets of the struct fields the probes read
 * (from its DWARF, cached by build-id; else a verified table; else none: arguments only).
 */
#ifndef NT_NCCLLIB_H
#define NT_NCCLLIB_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nccltrace.h"

enum nccl_probe_flags {
	NP_RET = 1 << 0,   /* a phase: uprobe and uretprobe (C-ABI functions that cannot throw) */
	NP_CORE = 1 << 1,  /* part of the core set `nccltrace probes` requires */
	NP_OPTIN = 1 << 2, /* per-collective: only with --collectives */
	NP_CLONE = 1 << 3, /* a compiler clone: counted, its arguments are not read */
};

struct nccl_probe_def {
	enum nt_probe id;
	const char *name;  /* short name in output and the dump */
	const char *sym;   /* mangled symbol in NCCL 2.28 */
	const char *phase; /* human phase while inside, NULL for non-phases */
	unsigned int flags;
};

/* NCCL's definition of probe id (names, phases), whichever library it is attached in */
const struct nccl_probe_def *nccl_probe(enum nt_probe id);
struct nccl_lib;
/* The definition in this library: libibverbs' exported symbol, or NCCL's; NULL if none */
const struct nccl_probe_def *nccl_lib_probe(const struct nccl_lib *lib, enum nt_probe id);
/* Is path libibverbs (basename libibverbs.so*)? */
bool nccllib_is_verbs(const char *path);

enum nccl_offsets_source {
	OFFS_NONE = 0,
	OFFS_DWARF,
	OFFS_CACHE, /* from DWARF, an earlier run */
	OFFS_TABLE,
	OFFS_HEADER, /* libibverbs: <infiniband/verbs.h>, compiled in */
};

const char *nccl_offsets_source_name(enum nccl_offsets_source s);

struct nccl_lib {
	char path[PATH_MAX];
	char build_id[41];
	char version[64]; /* "2.28.9", "" if not found */
	bool has_symtab;
	bool has_dwarf;
	enum nccl_offsets_source offs_src;
	struct nt_nccl_offsets offs;
	uint64_t probe_off[NT_P_MAX]; /* file offset of each probe, 0 if missing */
	int probe_dups[NT_P_MAX];     /* how many functions have that name */
	int missing_core;
	int resolved;
};

/*
 * Examine the library at path. 0, or -errno with a one-line reason (not ELF, no NCCL symbols).
 * cache_dir may be NULL (no cache).
 */
int nccllib_open(const char *path, const char *cache_dir, struct nccl_lib *lib, char *err,
		 size_t errlen);

/* The default offsets cache directory: $NCCLTRACE_CACHE_DIR or /var/cache/nccltrace */
const char *nccllib_cache_dir(void);

/*
 * Pure: from the text of /proc/PID/maps, the path of the mapped NCCL library (basename
 * libnccl.so*), or "" if none. Returns 0 when found.
 */
int nccllib_find_in_maps(const char *maps, char *path, size_t len);
/* The same for libibverbs.so* */
int nccllib_find_verbs_in_maps(const char *maps, char *path, size_t len);

/* `nccltrace probes LIB`: argv[0] is "probes". Returns the exit status. */
int nccllib_probes_main(int argc, char **argv);

#endif /* NT_NCCLLIB_H */
