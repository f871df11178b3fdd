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
	NP_RET = 1 << 0,    /* a phase: uprobe and uretprobe (C-ABI functions that cannot throw) */
	NP_CORE = 1 << 1,   /* part of the core set `nccltrace probes` requires */
	NP_OPTIN = 1 << 2,  /* per-collective: only with --collectives */
	NP_CLONE = 1 << 3,  /* a compiler clone: counted, its arguments are not read */
	NP_PUBLIC = 1 << 4, /* NCCL's public C API: in .dynsym of every build, stripped or not */
	NP_FIRST = 1 << 5,  /* only while a process's first collectives run (a trap per call) */
	/*
	 * NCCL calls it again and again until something happens (a re-entrant connect or accept
	 * the proxy polls): counted in the kernel, never told per call (nt_probe_polled, which the
	 * BPF side uses, says the same: a unit test holds them together)
	 */
	NP_POLLED = 1 << 6,
};

/*
 * A probed function's (mangled) name in the NCCL versions that have it: from..to inclusive, as
 * NCCL_VERSION_CODE (2.28.9 is 22809). arg: where that version's signature puts what the probe
 * reads (bootstrapInit's comm, a net connect's sendComm), -1 where there is nothing to say.
 */
struct nccl_sym_alt {
	const char *sym;
	int from, to;
	int arg;
};

struct nccl_probe_def {
	enum nt_probe id;
	const char *name;		 /* short name in output and the dump */
	const struct nccl_sym_alt *alts; /* newest first, ended by {NULL} */
	const char *phase;		 /* human phase while inside, NULL for non-phases */
	unsigned int flags;
};

/* "2.28.9" -> 22809, as NCCL_VERSION_CODE; 0 if it does not parse */
int nccl_version_code(const char *version);

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
	int version_code;		 /* 22809 for 2.28.9, 0 if unknown */
	uint64_t probe_off[NT_P_MAX];	 /* file offset of each probe, 0 if missing */
	const char *probe_sym[NT_P_MAX]; /* the name it resolved by, or this version's if missing */
	int probe_dups[NT_P_MAX];	 /* how many functions have that name */
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

/* "ncclSocket.fd": the i-th s32 field of struct nt_nccl_offsets, NULL past the last */
const char *nccllib_offset_field(int i);

#endif /* NT_NCCLLIB_H */
