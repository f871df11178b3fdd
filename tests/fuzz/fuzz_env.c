// SPDX-License-Identifier: MIT
/*
 * Environments as /proc/PID/environ gives them (NUL-separated KEY=VALUE, any bytes; ranks
 * separated by an empty entry): rank identity, the dump's allow-list, and doctor's lint across
 * the ranks, with variables lost to sudo against the first.
 */
#include <stdbool.h>
#include <string.h>
#include "fuzz.h"
#include "diagnose/envlint.h"
#include "trace/ranks.h"

#define MAX_ENVS 4
#define MAX_VARS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void count(void *ctx, const char *k, size_t kl, const char *v, size_t vl)
{
	(void)k, (void)v;
	*(size_t *)ctx += kl + vl;
}

static bool iface(void *io, const char *name, bool exact)
{
	(void)io, (void)exact;
	return !strcmp(name, "lo");
}

static bool port(void *io, int p)
{
	(void)io;
	return p == 29500;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = {"NCCL_SOCKET_IFNAME", "NCCL_IB_HCA",
					    "NCCL_DEBUG",	  "NCCL_P2P_DISABLE",
					    "NCCL_NET",		  "NCCL_IB_GID_INDEX"};
	static char buf[1 << 16];
	static struct lint_var v[MAX_ENVS][MAX_VARS];
	static struct lint_problem out[64];
	struct lint_env envs[MAX_ENVS];
	struct lint_ctx c = {.names = names,
			     .nnames = sizeof(names) / sizeof(names[0]),
			     .names_from = "fuzz",
			     .iface_exists = iface,
			     .port_in_use = port};
	size_t len = size < sizeof(buf) - 1 ? size : sizeof(buf) - 1, o = 0;
	int ne = 0, n;

	memcpy(buf, data, len);
	buf[len] = '\0';
	c.launch = len & 1;
	memset(envs, 0, sizeof(envs));
	while (o <= len && ne < MAX_ENVS) {
		size_t start = o, allowed = 0;
		struct rank_info ri;
		struct lint_env *e = &envs[ne];

		/* one environment: entries up to an empty one */
		while (o < len && buf[o])
			o += strlen(buf + o) + 1;
		ranks_parse_environ(buf + start, o - start, &ri);
		ranks_env_each(buf + start, o - start, count, &allowed);
		e->label = ne ? "a rank" : "this shell";
		e->rank = ri.rank;
		e->host = "h";
		e->v = v[ne];
		for (size_t i = start, next; i < o && e->n < MAX_VARS; i = next) {
			char *eq = strchr(buf + i, '=');

			next = i + strlen(buf + i) + 1;
			if (!eq || eq == buf + i)
				continue;
			*eq = '\0';
			v[ne][e->n].key = buf + i;
			v[ne][e->n].value = eq + 1;
			e->n++;
		}
		ne++;
		o++;
	}
	n = envlint(&c, envs, ne, out, 64);
	if (ne > 1)
		envlint_lost(&envs[0], &envs[1], out, &n, 64);
	envlint_count(out, n);
	return 0;
}
