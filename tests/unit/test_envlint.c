// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include "diagnose/envlint.h"
#include "nccl/ncclparams.h"

#define MAXP 32

static const char *const names[] = {"NCCL_SOCKET_IFNAME", "NCCL_SOCKET_RETRY_CNT",
				    "NCCL_IB_TIMEOUT",	  "NCCL_NET_GDR_LEVEL",
				    "NCCL_P2P_DISABLE",	  "NCCL_DEBUG",
				    "NCCL_IB_HCA",	  "NCCL_IB_ROCE_VERSION_NUM"};

static bool fake_iface(void *io, const char *name, bool exact)
{
	(void)io;
	return exact ? !strcmp(name, "eth0") : !strncmp("eth0", name, strlen(name));
}

static bool fake_port(void *io, int port)
{
	(void)io;
	return port == 29500;
}

static struct lint_ctx ctx(bool launch)
{
	struct lint_ctx c = {.names = names,
			     .nnames = sizeof(names) / sizeof(names[0]),
			     .names_from = "a test table",
			     .launch = launch,
			     .iface_exists = fake_iface,
			     .port_in_use = fake_port};
	return c;
}

static struct lint_problem out[MAXP];

/* One environment of "K=V" strings. */
static int lint1(bool launch, const char *const *kv, int n)
{
	struct lint_var v[16];
	char keys[16][64];
	struct lint_env e = {.label = "this shell", .rank = -1, .v = v, .n = n};
	struct lint_ctx c = ctx(launch);

	for (int i = 0; i < n; i++) {
		const char *eq = strchr(kv[i], '=');

		snprintf(keys[i], sizeof(keys[i]), "%.*s", (int)(eq - kv[i]), kv[i]);
		v[i].key = keys[i];
		v[i].value = eq + 1;
	}
	memset(out, 0, sizeof(out));
	return envlint(&c, &e, 1, out, MAXP);
}

static const struct lint_problem *find(int n, const char *var, const char *what)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(out[i].var, var) && strstr(out[i].what, what))
			return &out[i];
	return NULL;
}

#define LINT1(launch, ...)                                                                         \
	lint1(launch, (const char *const[]){__VA_ARGS__},                                          \
	      sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *))

/* env:// needs MASTER_ADDR and MASTER_PORT once RANK and WORLD_SIZE say it is used */
static void test_master_missing(void **state)
{
	int n;

	(void)state;
	n = LINT1(true, "RANK=1", "WORLD_SIZE=2");
	assert_non_null(find(n, "", "MASTER_ADDR or MASTER_PORT is not"));
	n = LINT1(true, "RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=10.0.0.1");
	assert_non_null(find(n, "", "but MASTER_PORT is not"));
	assert_null(find(n, "", "MASTER_ADDR is not"));
	n = LINT1(true, "RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29400");
	assert_null(find(n, "", "rendezvous needs both"));
	/* no RANK: a launcher (torchrun) sets all four itself */
	n = LINT1(true, "WORLD_SIZE=2");
	assert_null(find(n, "", "rendezvous needs both"));
}

/* a dump's rank: NCCL_SOCKET_IFNAME against its own host's interfaces (the dump's header) */
static void test_ifname_per_host(void **state)
{
	struct lint_var v = {.key = "NCCL_SOCKET_IFNAME", .value = "eth"};
	struct lint_env e = {
		.label = "rank 2", .rank = 2, .host = "b", .ifaces = "lo,ens1f0", .v = &v, .n = 1};
	/* a dump's ranks: the names known, no host of this one to look at */
	struct lint_ctx c = ctx(false);
	int n;

	c.iface_exists = NULL;
	c.port_in_use = NULL;

	(void)state;
	n = envlint(&c, &e, 1, out, MAXP);
	assert_non_null(find(n, "NCCL_SOCKET_IFNAME", "no interface of host b (lo,ens1f0)"));
	v.value = "ens";
	assert_null(find(envlint(&c, &e, 1, out, MAXP), "NCCL_SOCKET_IFNAME", "no interface"));
	/* exact: "=ens1" is not ens1f0 */
	v.value = "=ens1";
	assert_non_null(find(envlint(&c, &e, 1, out, MAXP), "NCCL_SOCKET_IFNAME", "is 'ens1'"));
	/* no interfaces in the dump (an older one): nothing to say */
	e.ifaces = NULL;
	assert_null(find(envlint(&c, &e, 1, out, MAXP), "NCCL_SOCKET_IFNAME", "no interface"));
}

static void test_clean(void **state)
{
	(void)state;
	assert_int_equal(LINT1(true, "NCCL_SOCKET_IFNAME=eth", "NCCL_DEBUG=info", "HOME=/root",
			       "NCCL_IB_TIMEOUT=22", "NCCL_NET_GDR_LEVEL=PHB", "MASTER_PORT=29501"),
			 0);
	assert_int_equal(LINT1(true, "NCCL_SOCKET_IFNAME=^docker,lo"), 0);
	/* NVIDIA's CUDA images label their NCCL package: not a setting, not a problem */
	assert_int_equal(LINT1(true, "NCCL_VERSION=2.28.3-1"), 0);
	assert_int_equal(LINT1(true, "NCCL_SOCKET_IFNAME==eth0"), 0);
}

static void test_names(void **state)
{
	const struct lint_problem *p;
	int n;

	(void)state;
	n = LINT1(true, "NCCL_SOCKET_IFNAMES=eth0", "NCCL_SOCKET_TIMEOUT=30",
		  "NCCL_ASYNC_ERROR_HANDLING=1", "NCCL_FROBNICATE=1");
	assert_int_equal(n, 4);
	p = find(n, "NCCL_SOCKET_IFNAMES", "does not read");
	assert_non_null(p);
	assert_int_equal(p->sev, LINT_ERROR);
	assert_string_equal(p->fix, "did you mean NCCL_SOCKET_IFNAME?");
	assert_non_null(strstr(p->what, "a test table"));
	p = find(n, "NCCL_SOCKET_TIMEOUT", "no socket or connect timeout");
	assert_non_null(p);
	assert_int_equal(p->sev, LINT_WARN);
	assert_non_null(strstr(p->fix, "NCCL_SOCKET_RETRY_CNT"));
	p = find(n, "NCCL_ASYNC_ERROR_HANDLING", "PyTorch");
	assert_string_equal(p->fix, "use TORCH_NCCL_ASYNC_ERROR_HANDLING");
	p = find(n, "NCCL_FROBNICATE", "does not read");
	assert_int_equal(p->sev, LINT_WARN);
	assert_int_equal(envlint_count(out, n), 4);
}

static void test_values(void **state)
{
	int n;

	(void)state;
	n = LINT1(true, "NCCL_IB_TIMEOUT=abc", "NCCL_NET_GDR_LEVEL=PCI", "NCCL_P2P_DISABLE=2",
		  "NCCL_SOCKET_IFNAME=ib", "NCCL_DEBUG=LOUD", "NCCL_SOCKET_RETRY_CNT=0");
	assert_int_equal(n, 6);
	assert_non_null(find(n, "NCCL_IB_TIMEOUT", "not an integer"));
	assert_non_null(find(n, "NCCL_NET_GDR_LEVEL", "not a level"));
	assert_non_null(find(n, "NCCL_P2P_DISABLE", "out of range [0, 1]"));
	assert_non_null(find(n, "NCCL_SOCKET_IFNAME", "no local interface starts with 'ib'"));
	assert_non_null(find(n, "NCCL_DEBUG", "not a level NCCL knows"));
	assert_non_null(find(n, "NCCL_SOCKET_RETRY_CNT", "no connect retries"));
	n = LINT1(true, "NCCL_SOCKET_IFNAME==eth"); /* exact: eth is not eth0 */
	assert_non_null(find(n, "NCCL_SOCKET_IFNAME", "no local interface is 'eth'"));
}

/*
 * 2.29's NCCL_SOCKET_POLL_TIMEOUT_MSEC, in the built-in table (no library at hand): read by
 * NCCL, and said to be no timeout; 2.30's IB port failover known, nothing to say
 */
static void test_socket_poll_not_timeout(void **state)
{
	struct lint_var v[2] = {{"NCCL_SOCKET_POLL_TIMEOUT_MSEC", "100"},
				{"NCCL_IB_RESILIENCY_PORT_FAILOVER", "1"}};
	struct lint_env e = {.label = "this shell", .rank = -1, .v = v, .n = 2};
	struct lint_ctx c = ctx(true);
	const char *tbl[400];
	const struct lint_problem *p;
	int n = 0;

	(void)state;
	for (const struct nccl_param *q; (q = nccl_param_at(n)) && n < 400; n++)
		tbl[n] = q->name;
	c.names = tbl;
	c.nnames = n;
	c.names_from = "the built-in table";
	memset(out, 0, sizeof(out));
	n = envlint(&c, &e, 1, out, MAXP);
	assert_int_equal(n, 1);
	p = find(n, "NCCL_SOCKET_POLL_TIMEOUT_MSEC", "it is no timeout");
	assert_non_null(p);
	assert_int_equal(p->sev, LINT_INFO);
	v[0].value = "0";
	memset(out, 0, sizeof(out));
	assert_int_equal(envlint(&c, &e, 1, out, MAXP), 0);
}

/*
 * NCCL_DEBUG=ATTN: 2.32's level (reference/nccl-versions.md §6), known; a library whose names
 * lack 2.32's NCCL_DEBUG_LEVELS gets a note that it may be older and log nothing
 */
static void test_debug_attn(void **state)
{
	static const char *const names232[] = {"NCCL_DEBUG", "NCCL_DEBUG_LEVELS"};
	struct lint_var v = {"NCCL_DEBUG", "ATTN"};
	struct lint_env e = {.label = "this shell", .rank = -1, .v = &v, .n = 1};
	struct lint_ctx c = ctx(true);
	const struct lint_problem *p;
	int n;

	(void)state;
	n = LINT1(true, "NCCL_DEBUG=attn");
	assert_int_equal(n, 1);
	assert_null(find(n, "NCCL_DEBUG", "not a level NCCL knows"));
	p = find(n, "NCCL_DEBUG", "a level of NCCL 2.32 and later");
	assert_non_null(p);
	assert_int_equal(p->sev, LINT_INFO);
	c.names = names232;
	c.nnames = 2;
	memset(out, 0, sizeof(out));
	assert_int_equal(envlint(&c, &e, 1, out, MAXP), 0);
}

static void test_ib_settings(void **state)
{
	int n;

	(void)state;
	assert_int_equal(LINT1(true, "NCCL_IB_HCA=mlx5_0:1,mlx5_1:1", "NCCL_IB_ROCE_VERSION_NUM=2"),
			 0);
	assert_int_equal(LINT1(true, "NCCL_IB_HCA=^=mlx5_2"), 0);
	assert_int_equal(LINT1(true, "NCCL_IB_HCA=mlx5_0"), 0);
	n = LINT1(true, "NCCL_IB_HCA=mlx5_0;mlx5_1", "NCCL_IB_ROCE_VERSION_NUM=v2");
	assert_int_equal(n, 2);
	assert_non_null(find(n, "NCCL_IB_HCA", "does not parse at ';mlx5_1'"));
	assert_non_null(find(n, "NCCL_IB_ROCE_VERSION_NUM", "not a RoCE version"));
	n = LINT1(true, "NCCL_IB_HCA=mlx5_0:", "NCCL_IB_TIMEOUT=32");
	assert_non_null(find(n, "NCCL_IB_HCA", "does not parse"));
	assert_non_null(find(n, "NCCL_IB_TIMEOUT", "out of range [0, 31]"));
}

static void test_launch_vars(void **state)
{
	int n;

	(void)state;
	n = LINT1(true, "MASTER_PORT=29500", "MASTER_ADDR=127.0.0.1");
	assert_int_equal(n, 1);
	assert_non_null(find(n, "MASTER_PORT", "already in use"));
	/* a remote master: the port is not ours to check */
	assert_int_equal(LINT1(true, "MASTER_PORT=29500", "MASTER_ADDR=10.0.0.1"), 0);
	n = LINT1(true, "MASTER_PORT=http", "RANK=4", "WORLD_SIZE=4", "LOCAL_RANK=2",
		  "LOCAL_WORLD_SIZE=2");
	assert_int_equal(n, 4);
	assert_non_null(find(n, "", "but MASTER_ADDR is not"));
	assert_non_null(find(n, "MASTER_PORT", "not a port"));
	assert_non_null(find(n, "RANK", "not below WORLD_SIZE=4"));
	assert_non_null(find(n, "LOCAL_RANK", "not below LOCAL_WORLD_SIZE=2"));
	/* before launch, no rank variables is normal; in a rank, it is not */
	assert_int_equal(LINT1(true, "HOME=/"), 0);
}

/* Ranks from a dump: rank r gets the given variables. */
static int lint_ranks(int nr, const int *rank, const char *host[], const char *const kv[][8])
{
	static struct lint_var v[8][8];
	static char keys[8][8][64];
	struct lint_env e[8];
	struct lint_ctx c = ctx(false);

	for (int r = 0; r < nr; r++) {
		int n = 0;

		for (; n < 8 && kv[r][n]; n++) {
			const char *eq = strchr(kv[r][n], '=');

			snprintf(keys[r][n], sizeof(keys[r][n]), "%.*s", (int)(eq - kv[r][n]),
				 kv[r][n]);
			v[r][n].key = keys[r][n];
			v[r][n].value = eq + 1;
		}
		e[r] = (struct lint_env){
			.label = "rank", .rank = rank[r], .host = host[r], .v = v[r], .n = n};
	}
	memset(out, 0, sizeof(out));
	return envlint(&c, e, nr, out, MAXP);
}

#define R(rank, ws, addr, ifname)                                                                  \
	{                                                                                          \
		"RANK=" #rank, "WORLD_SIZE=" #ws, "MASTER_ADDR=" addr, "MASTER_PORT=29500",        \
			"LOCAL_WORLD_SIZE=" #ws, ifname, NULL                                      \
	}

static void test_across_ranks(void **state)
{
	const char *h1[] = {"a", "a", "a"};
	const char *h2[] = {"a", "a", "b"};
	int n;

	(void)state;
	{
		const int rk[] = {0, 1, 2};
		const char *const kv[][8] = {R(0, 3, "10.0.0.1", "NCCL_SOCKET_IFNAME=eth0"),
					     R(1, 3, "10.0.0.1", "NCCL_SOCKET_IFNAME=eth0"),
					     R(2, 3, "10.0.0.1", "NCCL_SOCKET_IFNAME=eth0")};

		assert_int_equal(lint_ranks(3, rk, h1, kv), 0);
	}
	{
		/* rank 1 twice, rank 2 never, one rank on its own interface */
		const int rk[] = {0, 1, 1};
		const char *const kv[][8] = {R(0, 3, "10.0.0.1", "NCCL_SOCKET_IFNAME=eth0"),
					     R(1, 3, "10.0.0.1", "NCCL_SOCKET_IFNAME=eth0"),
					     R(1, 3, "10.0.0.1", "NCCL_SOCKET_IFNAME=eth1")};

		n = lint_ranks(3, rk, h1, kv);
		assert_non_null(find(n, "", "rank 1 appears twice"));
		assert_non_null(find(n, "", "1 of WORLD_SIZE=3 ranks never appeared: 2"));
		assert_int_equal(find(n, "", "never appeared")->sev, LINT_ERROR);
		assert_non_null(
			find(n, "NCCL_SOCKET_IFNAME",
			     "differs across ranks: rank 0 eth0, rank 1 eth0, rank 1 eth1"));
	}
	{
		/* two hosts, a loopback master, another WORLD_SIZE */
		const int rk[] = {0, 1, 2};
		const char *const kv[][8] = {R(0, 4, "127.0.0.1", NULL), R(1, 4, "127.0.0.1", NULL),
					     R(2, 3, "127.0.0.1", NULL)};

		n = lint_ranks(3, rk, h2, kv);
		assert_non_null(find(n, "", "loopback address, but the ranks span hosts"));
		assert_non_null(find(n, "WORLD_SIZE", "WORLD_SIZE=3 here, 4 on another rank"));
		/* another host's ranks are not here by design: told, not counted */
		assert_int_equal(find(n, "", "never appeared")->sev, LINT_INFO);
	}
	{
		/* a rank without the launcher's variables */
		const int rk[] = {0};
		const char *const kv[][8] = {{"RANK=0", NULL}};

		n = lint_ranks(1, rk, h1, kv);
		assert_non_null(find(n, "", "WORLD_SIZE is not set"));
		assert_non_null(find(n, "", "MASTER_ADDR is not set"));
	}
}

static void test_lost_to_sudo(void **state)
{
	const struct lint_var sv[] = {{"NCCL_SOCKET_IFNAME", "eth0"},
				      {"HOME", "/home/u"},
				      {"MASTER_PORT", "29501"},
				      {"NCCL_DEBUG", "INFO"}};
	const struct lint_var hv[] = {{"NCCL_DEBUG", "INFO"}, {"HOME", "/root"}};
	struct lint_env shell = {.label = "your shell (pid 7)", .rank = -1, .v = sv, .n = 4};
	struct lint_env here = {.label = "here", .rank = -1, .v = hv, .n = 2};
	int n = 0;

	(void)state;
	envlint_lost(&shell, &here, out, &n, MAXP);
	assert_int_equal(n, 2);
	assert_string_equal(out[0].var, "NCCL_SOCKET_IFNAME");
	assert_non_null(strstr(out[0].what, "set in your shell (pid 7) but not here"));
	assert_non_null(strstr(out[0].fix, "--preserve-env=NCCL_SOCKET_IFNAME"));
	assert_string_equal(out[1].var, "MASTER_PORT");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean),
		cmocka_unit_test(test_master_missing),
		cmocka_unit_test(test_ifname_per_host),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_debug_attn),
		cmocka_unit_test(test_socket_poll_not_timeout),
		cmocka_unit_test(test_launch_vars),
		cmocka_unit_test(test_ib_settings),
		cmocka_unit_test(test_across_ranks),
		cmocka_unit_test(test_lost_to_sudo),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
