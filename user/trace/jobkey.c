// SPDX-License-Identifier: MIT
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "trace/jobkey.h"

/* NAME's value in env, NULL if unset */
static const char *env_get(const char *env, size_t len, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = env; p < env + len; p += strnlen(p, (size_t)(env + len - p)) + 1)
		if ((size_t)(env + len - p) > n && !strncmp(p, name, n) && p[n] == '=')
			return p + n + 1;
	return NULL;
}

/* a value fit for a key: set, not empty, within the entry (env is NUL-separated) */
static bool usable(const char *v)
{
	return v && *v;
}

int jobkey_from_env(const char *env, size_t len, struct jobkey *k)
{
	const char *run = env_get(env, len, "TORCHELASTIC_RUN_ID");
	const char *slurm = env_get(env, len, "SLURM_JOB_ID");
	const char *addr = env_get(env, len, "MASTER_ADDR");
	const char *port = env_get(env, len, "MASTER_PORT");
	const char *world = env_get(env, len, "WORLD_SIZE");

	memset(k, 0, sizeof(*k));
	if (usable(run) && strcmp(run, "none")) {
		snprintf(k->rule, sizeof(k->rule), "TORCHELASTIC_RUN_ID");
		snprintf(k->id, sizeof(k->id), "%s", run);
	} else if (usable(slurm)) {
		const char *step = env_get(env, len, "SLURM_STEP_ID");

		snprintf(k->rule, sizeof(k->rule), "SLURM_JOB_ID");
		snprintf(k->id, sizeof(k->id), "%s%s%s", slurm, usable(step) ? "." : "",
			 usable(step) ? step : "");
	} else if (usable(addr) && usable(port) && usable(world)) {
		snprintf(k->rule, sizeof(k->rule), "MASTER_ADDR");
		snprintf(k->id, sizeof(k->id), "%s:%s/%s", addr, port, world);
	} else {
		return -1;
	}
	return 0;
}

void jobkey_launcher(int pid, unsigned long long start_ticks, struct jobkey *k)
{
	memset(k, 0, sizeof(*k));
	snprintf(k->rule, sizeof(k->rule), "launcher");
	snprintf(k->id, sizeof(k->id), "pid %d started %llu", pid, start_ticks);
}

void jobkey_file_part(const struct jobkey *k, char *out, size_t len)
{
	size_t o = 0;

	if (!len)
		return;
	for (const char *p = k->id; *p && o + 1 < len; p++) {
		char c = *p;

		out[o++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
					   (c >= '0' && c <= '9') || c == '.' || c == '-'
				   ? c
				   : '_';
	}
	out[o] = '\0';
}
