/* SPDX-License-Identifier: MIT */
/*
 * The NCCL_* names an NCCL library really reads: the strings of the library a job will load
 * (found from its command, LD_LIBRARY_PATH, CUDA_HOME, the toolkit next to nvcc, the system),
 * else the built-in table of NCCL 2.28.9's names.
 */
#ifndef NT_NCCLNAMES_H
#define NT_NCCLNAMES_H

#include <limits.h>

#define NCCL_NAMES_MAX 1024

struct nccl_names {
	const char *v[NCCL_NAMES_MAX]; /* strdup'ed */
	int n;
	char from[PATH_MAX + 64]; /* "NCCL 2.28.9 at /x/libnccl.so.2" or the table's name */
	char path[PATH_MAX];	  /* that library, "" for the table */
	/*
	 * it exports ncclParamGetAllParameterKeys (2.30.4 on), not used: that registry lists only
	 * the parameters moved into it (2 in 2.30.4, 9 in 2.30.7, of about 240 names read), so the
	 * names come from the library's strings, which hold the registry's keys too
	 */
	bool registry_api;
};

/* From lib if given, else from the first library found for cmd0 (may be NULL), else the table. */
void nccl_names_load(struct nccl_names *nm, const char *lib, const char *cmd0);
void nccl_names_free(struct nccl_names *nm);

#define NCCL_CAND_LEN (PATH_MAX + 64)
/* Where libnccl.so.2 usually is for cmd0 (a venv's site-packages) and on this system, in order. */
void nccl_lib_candidates(const char *cmd0, char (*out)[NCCL_CAND_LEN], int *n, int max);

#endif /* NT_NCCLNAMES_H */
