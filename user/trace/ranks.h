/* SPDX-License-Identifier: MIT */
/*
 * Rank identity from a process's environment (/proc/PID/environ), and the allow-list of
 * environment keys that may appear in a dump. Pure: buffers in, values out.
 */
#ifndef NT_RANKS_H
#define NT_RANKS_H

#include <stdbool.h>
#include <stddef.h>

struct rank_info {
	int rank;	 /* -1 if none */
	int local_rank;	 /* -1 if none */
	int world_size;	 /* -1 if none */
	int master_port; /* -1 if none */
	char master_addr[64];
	char source[24]; /* the variable the rank came from, e.g. "RANK" */
};

/* buf holds NUL-separated KEY=VALUE entries, as /proc/PID/environ does. */
void ranks_parse_environ(const char *buf, size_t len, struct rank_info *ri);

/* Only NCCL_*, TORCH_*, CUDA_* and the launcher's rank keys may leave the process. */
bool ranks_env_allowed(const char *key, size_t keylen);

/* Calls cb for each allow-listed entry of buf, in order; returns how many. */
int ranks_env_each(const char *buf, size_t len,
		   void (*cb)(void *ctx, const char *key, size_t keylen, const char *val,
			      size_t vallen),
		   void *ctx);

#endif /* NT_RANKS_H */
