/* SPDX-License-Identifier: MIT */
/*
 * Struct member offsets from a library's own DWARF (libdw), for reading NCCL's structs from
 * BPF and from the ranks' memory. Build-specific, so cached by build-id.
 */
#ifndef NT_DWOFF_H
#define NT_DWOFF_H

#include <stdbool.h>
#include <stddef.h>

struct dwoff_req {
	const char *type;   /* struct name, e.g. "ncclSocket" */
	const char *member; /* e.g. "fd" */
	long offset;	    /* out: -1 when not found */
	bool is_ptr;	    /* out: its type is a pointer (through typedefs and qualifiers) */
};

/*
 * Fill reqs from the DWARF of path. Returns how many were found, or -errno with a reason in
 * err (no DWARF, not ELF...).
 */
int dwoff_resolve(const char *path, struct dwoff_req *reqs, int n, char *err, size_t errlen);

#endif /* NT_DWOFF_H */
