/* SPDX-License-Identifier: MIT */
/*
 * A job's name, for `nccltrace agent` (which takes a launcher's process tree as one job), from
 * the environment of its processes: the first rule that applies, in this order (each named in
 * the key):
 *   TORCHELASTIC_RUN_ID (torchrun; its default "none" says nothing and is passed over),
 *   SLURM_JOB_ID with SLURM_STEP_ID,
 *   MASTER_ADDR:MASTER_PORT with WORLD_SIZE,
 *   else its launcher's process tree (the caller's: jobtree_root()).
 * Pure.
 */
#ifndef NT_JOBKEY_H
#define NT_JOBKEY_H

#include <stddef.h>

struct jobkey {
	char rule[32]; /* "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "MASTER_ADDR", "launcher" */
	char id[96];   /* the rule's value: "e3b0c442", "4711.0", "10.0.0.1:29500/16", "pid 812" */
};

/*
 * The key of an environment (NUL-separated NAME=VALUE entries, len bytes): 0, or -1 when no
 * variable rule applies (the caller then takes the launcher: jobkey_launcher()).
 */
int jobkey_from_env(const char *env, size_t len, struct jobkey *k);
/* The launcher rule's key: its pid and start time (a pid is reused; the pair is not). */
void jobkey_launcher(int pid, unsigned long long start_ticks, struct jobkey *k);
/* k as a file-name part: [A-Za-z0-9._-] kept, others '_', at most len - 1 bytes */
void jobkey_file_part(const struct jobkey *k, char *out, size_t len);

#endif /* NT_JOBKEY_H */
