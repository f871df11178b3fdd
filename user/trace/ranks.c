// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "trace/ranks.h"

static const char *const allowed_keys[] = {
	"RANK",
	"LOCAL_RANK",
	"WORLD_SIZE",
	"LOCAL_WORLD_SIZE",
	"GROUP_RANK",
	"ROLE_RANK",
	"MASTER_ADDR",
	"MASTER_PORT",
	"SLURM_PROCID",
	"SLURM_LOCALID",
	"SLURM_NTASKS",
	"SLURM_JOB_ID",
	"SLURM_NODEID",
	"OMPI_COMM_WORLD_RANK",
	"OMPI_COMM_WORLD_SIZE",
	"OMPI_COMM_WORLD_LOCAL_RANK",
	"PMI_RANK",
	"PMI_SIZE",
	"TORCHELASTIC_RUN_ID",
	"TORCHELASTIC_RESTART_COUNT",
	"TORCHELASTIC_MAX_RESTARTS",
	"PYTORCH_CUDA_ALLOC_CONF",
};

static const char *const allowed_prefixes[] = {"NCCL_", "TORCH_", "CUDA_"};

bool ranks_env_allowed(const char *key, size_t keylen)
{
	for (size_t i = 0; i < sizeof(allowed_keys) / sizeof(allowed_keys[0]); i++)
		if (strlen(allowed_keys[i]) == keylen && memcmp(key, allowed_keys[i], keylen) == 0)
			return true;
	for (size_t i = 0; i < sizeof(allowed_prefixes) / sizeof(allowed_prefixes[0]); i++) {
		size_t pl = strlen(allowed_prefixes[i]);

		if (keylen > pl && memcmp(key, allowed_prefixes[i], pl) == 0)
			return true;
	}
	return false;
}

/* Iterate KEY=VALUE entries; entries without '=' are skipped. */
static int env_each(const char *buf, size_t len, bool allowed_only,
		    void (*cb)(void *, const char *, size_t, const char *, size_t), void *ctx)
{
	size_t off = 0;
	int n = 0;

	while (off < len) {
		const char *e = buf + off;
		const char *end = memchr(e, '\0', len - off);
		size_t elen = end ? (size_t)(end - e) : len - off;
		const char *eq = memchr(e, '=', elen);

		off += elen + 1;
		if (!eq || eq == e)
			continue;
		if (allowed_only && !ranks_env_allowed(e, eq - e))
			continue;
		cb(ctx, e, eq - e, eq + 1, elen - (eq - e) - 1);
		n++;
	}
	return n;
}

int ranks_env_each(const char *buf, size_t len,
		   void (*cb)(void *, const char *, size_t, const char *, size_t), void *ctx)
{
	return env_each(buf, len, true, cb, ctx);
}

/* A non-negative int, or -1 for anything else ("", "abc", "3x", "-1", overflow). */
static int parse_nonneg(const char *v, size_t len)
{
	char tmp[16], *end;
	long x;

	if (len == 0 || len >= sizeof(tmp))
		return -1;
	memcpy(tmp, v, len);
	tmp[len] = '\0';
	errno = 0;
	x = strtol(tmp, &end, 10);
	if (errno || *end || x < 0 || x > 1 << 30)
		return -1;
	return (int)x;
}

struct parse_ctx {
	struct rank_info *ri;
	int prio; /* priority of the variable the rank came from: lower wins */
};

static void take(void *c, const char *key, size_t kl, const char *val, size_t vl)
{
	/* torchrun's RANK first; MPI and Slurm launchers' own variables otherwise */
	static const char *const rank_keys[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
						"SLURM_PROCID"};
	struct parse_ctx *pc = c;
	struct rank_info *ri = pc->ri;

#define KEY_IS(s) (kl == strlen(s) && memcmp(key, s, kl) == 0)
	for (int i = 0; i < (int)(sizeof(rank_keys) / sizeof(rank_keys[0])); i++) {
		if (KEY_IS(rank_keys[i]) && i < pc->prio) {
			int r = parse_nonneg(val, vl);

			if (r >= 0) {
				ri->rank = r;
				pc->prio = i;
				strcpy(ri->source, rank_keys[i]);
			}
		}
	}
	if (KEY_IS("LOCAL_RANK") || (KEY_IS("OMPI_COMM_WORLD_LOCAL_RANK") && ri->local_rank < 0) ||
	    (KEY_IS("SLURM_LOCALID") && ri->local_rank < 0))
		ri->local_rank = parse_nonneg(val, vl);
	else if (KEY_IS("WORLD_SIZE") || (KEY_IS("OMPI_COMM_WORLD_SIZE") && ri->world_size < 0) ||
		 (KEY_IS("SLURM_NTASKS") && ri->world_size < 0))
		ri->world_size = parse_nonneg(val, vl);
	else if (KEY_IS("MASTER_PORT"))
		ri->master_port = parse_nonneg(val, vl);
	else if (KEY_IS("MASTER_ADDR") && vl < sizeof(ri->master_addr)) {
		memcpy(ri->master_addr, val, vl);
		ri->master_addr[vl] = '\0';
	}
#undef KEY_IS
}

void ranks_parse_environ(const char *buf, size_t len, struct rank_info *ri)
{
	struct parse_ctx pc = {.ri = ri, .prio = 1 << 20};

	memset(ri, 0, sizeof(*ri));
	ri->rank = ri->local_rank = ri->world_size = ri->master_port = -1;
	env_each(buf, len, true, take, &pc);
}
