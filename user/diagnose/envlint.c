// SPDX-License-Identifier: MIT
/*
 * Each rule rests on what NCCL 2.28 and PyTorch's launchers do (reference/nccl-internals.md
 * §2, §5, §7): NCCL reads only the names compiled into it, parses integers with strtoll, and
 * chooses interfaces with NCCL_SOCKET_IFNAME's prefix/exact/exclude syntax; torchrun gives
 * every rank RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diagnose/envlint.h"
#include "nccl/ncclparams.h"
#include "trace/ranks.h"

struct out {
	struct lint_problem *p;
	int n, max;
};

__attribute__((format(printf, 6, 7))) static struct lint_problem *
problem(struct out *o, enum lint_sev sev, const struct lint_env *e, const struct lint_var *v,
	const char *fix, const char *fmt_, ...)
{
	struct lint_problem *p;
	va_list ap;

	if (o->n >= o->max)
		return NULL;
	p = &o->p[o->n++];
	memset(p, 0, sizeof(*p));
	p->sev = sev;
	p->rank = e ? e->rank : -1;
	if (v) {
		snprintf(p->var, sizeof(p->var), "%s", v->key);
		snprintf(p->value, sizeof(p->value), "%s", v->value);
	}
	va_start(ap, fmt_);
	vsnprintf(p->what, sizeof(p->what), fmt_, ap);
	va_end(ap);
	snprintf(p->fix, sizeof(p->fix), "%s", fix ? fix : "");
	return p;
}

static const struct lint_var *get(const struct lint_env *e, const char *key)
{
	for (int i = 0; i < e->n; i++)
		if (!strcmp(e->v[i].key, key))
			return &e->v[i];
	return NULL;
}

static bool known_name(const struct lint_ctx *c, const char *name)
{
	for (int i = 0; i < c->nnames; i++)
		if (!strcmp(c->names[i], name))
			return true;
	return false;
}

/* An integer in [lo, hi], all of the text; false otherwise. */
static bool int_in(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	if (!s || !*s)
		return false;
	v = strtol(s, &end, 10);
	if (*end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static bool loopback(const char *addr)
{
	return !strncmp(addr, "127.", 4) || !strcmp(addr, "localhost") || !strcmp(addr, "::1");
}

/* name (exact, or as a prefix) in "lo,eth0,..." */
static bool in_list(const char *list, const char *name, bool exact)
{
	size_t n = strlen(name);

	for (const char *p = list; p && *p;) {
		size_t l = strcspn(p, ",");

		if (exact ? l == n && !strncmp(p, name, n) : l >= n && !strncmp(p, name, n))
			return true;
		p += l + (p[l] == ',');
	}
	return false;
}

/* NCCL_SOCKET_IFNAME: "^a,b" excludes, "=eth0" is exact, "eth" a prefix; entries by commas */
static void check_ifname(const struct lint_ctx *c, struct out *o, const struct lint_env *e,
			 const struct lint_var *v)
{
	char buf[256], *save = NULL, *tok;
	const char *list = v->value;
	bool exact = false, any = false;

	if ((!c->iface_exists && !e->ifaces) || list[0] == '^')
		return;
	if (list[0] == '=') {
		exact = true;
		list++;
	}
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		any |= c->iface_exists ? c->iface_exists(c->io, tok, exact)
				       : in_list(e->ifaces, tok, exact);
	if (any)
		return;
	if (c->iface_exists)
		problem(o, LINT_ERROR, e, v,
			"name an interface the ranks share ('ip -br addr' lists them), or unset "
			"it",
			"no local interface %s '%s': NCCL 2.28 fails init with \"Bootstrap : no "
			"socket interface found\"",
			exact ? "is" : "starts with", list);
	else
		problem(o, LINT_ERROR, e, v,
			"name an interface every host has, or set it per host ('ip -br addr' lists "
			"them)",
			"no interface of host %s (%s) %s '%s': NCCL 2.28 fails init there with "
			"\"Bootstrap : no socket interface found\"",
			e->host ? e->host : "?", e->ifaces, exact ? "is" : "starts with", list);
}

/*
 * NCCL_IB_GID_INDEX against this host's GID table: an empty GID, or a RoCE v1 one where NCCL
 * wants v2, lets the QPs come up (the handshake runs over TCP) and fails the first transfer.
 */
static void check_gid_index(const struct lint_ctx *c, struct out *o, const struct lint_env *e,
			    const struct lint_var *v)
{
	const struct lint_var *hv = get(e, "NCCL_IB_HCA"), *rv = get(e, "NCCL_IB_ROCE_VERSION_NUM");
	char hca[64] = "", type[32] = "", dev[64] = "";
	long idx = strtol(v->value, NULL, 0);
	bool ib = false;
	int r;

	if (!c->gid || idx < 0)
		return;
	/* the first HCA NCCL_IB_HCA names (not an exclusion list) */
	if (hv && hv->value[0] && hv->value[0] != '^') {
		const char *p = hv->value + (hv->value[0] == '=');

		snprintf(hca, sizeof(hca), "%.*s", (int)strcspn(p, ":,"), p);
	}
	r = c->gid(c->io, hca[0] ? hca : NULL, (int)idx, type, sizeof(type), dev, sizeof(dev), &ib);
	if (r == -ENOENT)
		problem(o, LINT_ERROR, e, v,
			"an index whose type is RoCE v2 with an IPv4-mapped GID (show_gids, "
			"/sys/class/infiniband/DEV/ports/1/gid_attrs/types), or unset it: NCCL "
			"then picks one by NCCL_IB_ROCE_VERSION_NUM and NCCL_IB_ADDR_FAMILY",
			"%s port 1 has no GID %ld: the QPs come up (the handshake is TCP) and the "
			"first transfer fails with IBV_WC_RETRY_EXC_ERR after the retries",
			dev[0] ? dev : (hca[0] ? hca : "the HCA"), idx);
	else if (r == 0 && ib)
		problem(o, LINT_INFO, e, v, NULL,
			"%s is InfiniBand: NCCL addresses its QPs by LID, and the GID index only "
			"counts on RoCE",
			dev);
	else if (r == 0 && strstr(type, "v1") && (!rv || !strcmp(rv->value, "2")))
		problem(o, LINT_WARN, e, v,
			"a RoCE v2 GID index, or NCCL_IB_ROCE_VERSION_NUM=1 if the fabric is one "
			"L2 domain",
			"GID %ld of %s is %s, while NCCL_IB_ROCE_VERSION_NUM is %s: RoCE v1 is not "
			"routed across subnets, so peers elsewhere never answer",
			idx, dev, type, rv ? "2" : "2 by default");
}

/* NCCL_IB_HCA: [^][=]name[:port],...  (exclude, exact match, a port number) */
static void check_ib_hca(struct out *o, const struct lint_env *e, const struct lint_var *v)
{
	const char *p = v->value;

	if (*p == '^')
		p++;
	if (*p == '=')
		p++;
	while (*p) {
		size_t name = strspn(
			p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-");

		if (!name)
			break;
		p += name;
		if (*p == ':') {
			size_t port = strspn(p + 1, "0123456789");

			if (!port)
				break;
			p += 1 + port;
		}
		if (*p == ',' && p[1])
			p++;
		else if (*p)
			break;
	}
	if (*p || !*v->value)
		problem(o, LINT_ERROR, e, v,
			"HCA names with optional ports, by commas: mlx5_0:1,mlx5_1:1 ('^' "
			"excludes, "
			"'=' matches exactly; 'ibv_devices' lists them)",
			"NCCL_IB_HCA='%s' does not parse at '%s'", v->value, *p ? p : "(empty)");
}

static void check_nccl_var(const struct lint_ctx *c, struct out *o, const struct lint_env *e,
			   const struct lint_var *v)
{
	const struct nccl_fake *fk = nccl_fake_find(v->key);
	const struct nccl_param *p = nccl_param_find(v->key);
	char why[160], fix[200];

	if (fk) {
		problem(o, LINT_WARN, e, v, fk->fix, "%s", fk->why);
		return;
	}
	if (nccl_label_var(v->key))
		return; /* NVIDIA's images label their NCCL package so: nothing reads it */
	if (!known_name(c, v->key)) {
		const char *near = nccl_param_closest(v->key, c->names, c->nnames);

		if (near) {
			snprintf(fix, sizeof(fix), "did you mean %s?", near);
			problem(o, LINT_ERROR, e, v, fix,
				"NCCL does not read %s (not among the %d "
				"names of %s)",
				v->key, c->nnames, c->names_from);
		} else {
			problem(o, LINT_WARN, e, v, "remove it, or check the NCCL version",
				"NCCL does not read %s (not among the %d names of %s)", v->key,
				c->nnames, c->names_from);
		}
		return;
	}
	if (p && !nccl_param_valid(p, v->value, why, sizeof(why))) {
		snprintf(fix, sizeof(fix), "%s%s%s", p->doc ? p->doc : "a valid value",
			 p->def ? "; default " : "", p->def ? p->def : "");
		problem(o, LINT_ERROR, e, v, fix, "%s=%s %s", v->key, v->value, why);
		return;
	}
	if (!strcmp(v->key, "NCCL_SOCKET_RETRY_CNT") && !strcmp(v->value, "0"))
		problem(o, LINT_WARN, e, v,
			"keep the default (34) unless ranks always start together",
			"no connect retries: a rank that connects before its peer listens fails "
			"init at once with \"connection refused\"");
	if (!strcmp(v->key, "NCCL_IB_TIMEOUT") && !strcmp(v->value, "0"))
		problem(o, LINT_WARN, e, v, "use a finite value (default 20, about 4.3 s per try)",
			"an IB timeout of 0 means the QP never times out: a lost peer hangs the "
			"transfer for ever instead of failing with IBV_WC_RETRY_EXC_ERR");
	/* src/misc/socket.cc socketWait() (2.29-2.30.7): only whether it is 0 is read */
	if (!strcmp(v->key, "NCCL_SOCKET_POLL_TIMEOUT_MSEC") && strcmp(v->value, "0"))
		problem(o, LINT_INFO, e, v,
			"for a bound on a hang: PyTorch's init_process_group(timeout=...)",
			"NCCL_SOCKET_POLL_TIMEOUT_MSEC=%s (NCCL 2.29+) makes NCCL's blocking "
			"socket waits sleep in poll() instead of spinning; it is no timeout: a "
			"wait on a silent peer still lasts for ever",
			v->value);
	if (!strcmp(v->key, "NCCL_DEBUG")) {
		static const char *const lv[] = {"VERSION", "WARN",  "ATTN",
						 "INFO",    "ABORT", "TRACE"};
		bool ok = false;

		for (size_t i = 0; i < sizeof(lv) / sizeof(lv[0]); i++)
			ok |= !strcasecmp(v->value, lv[i]);
		if (!ok)
			problem(o, LINT_WARN, e, v,
				"VERSION, WARN, ATTN (2.32+), INFO, ABORT or TRACE",
				"NCCL_DEBUG=%s is not a level NCCL knows: it logs nothing",
				v->value);
		/*
		 * ATTN (WARN and NCCL's notices) came in 2.32 with NCCL_DEBUG_LEVELS
		 * (reference/nccl-versions.md §6); before, an unknown level logs nothing
		 */
		if (!strcasecmp(v->value, "ATTN") && !known_name(c, "NCCL_DEBUG_LEVELS"))
			problem(o, LINT_INFO, e, v, "WARN, on an NCCL before 2.32",
				"NCCL_DEBUG=ATTN is a level of NCCL 2.32 and later; %s has no "
				"NCCL_DEBUG_LEVELS, so it may be older and log nothing",
				c->names_from ? c->names_from : "the library");
	}
	if (!strcmp(v->key, "NCCL_SOCKET_IFNAME"))
		check_ifname(c, o, e, v);
	if (!strcmp(v->key, "NCCL_IB_HCA"))
		check_ib_hca(o, e, v);
	if (!strcmp(v->key, "NCCL_IB_GID_INDEX"))
		check_gid_index(c, o, e, v);
	if (!strcmp(v->key, "NCCL_IB_ROCE_VERSION_NUM") && strcmp(v->value, "1") &&
	    strcmp(v->value, "2"))
		problem(o, LINT_ERROR, e, v, "1 or 2 (RoCE v2 is the routable one)",
			"NCCL_IB_ROCE_VERSION_NUM=%s is not a RoCE version", v->value);
}

/* The launcher's variables of one rank (after launch) or of the launch (before). */
static void check_rank_vars(const struct lint_ctx *c, struct out *o, const struct lint_env *e)
{
	const struct lint_var *rank = get(e, "RANK"), *ws = get(e, "WORLD_SIZE");
	const struct lint_var *lr = get(e, "LOCAL_RANK"), *lws = get(e, "LOCAL_WORLD_SIZE");
	const struct lint_var *port = get(e, "MASTER_PORT"), *addr = get(e, "MASTER_ADDR");
	long r = -1, w = -1, l = -1, lw = -1, pt = -1;

	if (ws && !int_in(ws->value, 1, 1 << 24, &w))
		problem(o, LINT_ERROR, e, ws, "a positive integer", "WORLD_SIZE=%s is not a size",
			ws->value);
	if (rank && !int_in(rank->value, 0, 1 << 24, &r))
		problem(o, LINT_ERROR, e, rank, "an integer from 0 to WORLD_SIZE-1",
			"RANK=%s is not a rank", rank->value);
	if (r >= 0 && w > 0 && r >= w)
		problem(o, LINT_ERROR, e, rank, "an integer from 0 to WORLD_SIZE-1",
			"RANK=%ld is not below WORLD_SIZE=%ld", r, w);
	if (lr && int_in(lr->value, 0, 1 << 24, &l) && lws && int_in(lws->value, 1, 1 << 24, &lw) &&
	    l >= lw)
		problem(o, LINT_ERROR, e, lr, "an integer from 0 to LOCAL_WORLD_SIZE-1",
			"LOCAL_RANK=%ld is not below LOCAL_WORLD_SIZE=%ld", l, lw);
	if (port && !int_in(port->value, 1, 65535, &pt))
		problem(o, LINT_ERROR, e, port, "a TCP port, 1 to 65535",
			"MASTER_PORT=%s is not a port", port->value);
	if (!c->launch && e->rank >= 0) {
		static const char *const need[] = {"RANK", "WORLD_SIZE", "MASTER_ADDR",
						   "MASTER_PORT"};

		for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
			if (!get(e, need[i]))
				problem(o, LINT_WARN, e, NULL,
					"start ranks with torchrun, or set it for every rank",
					"%s is not set: init_process_group's env:// needs it",
					need[i]);
	}
	/*
	 * Before launch: RANK and WORLD_SIZE set for a process that is started directly (not by
	 * torchrun, which sets all four): env:// rendezvous also needs where rank 0's store is
	 */
	if (c->launch && rank && ws && (!addr || !port))
		problem(o, LINT_WARN, e, NULL,
			"set MASTER_ADDR (rank 0's host) and MASTER_PORT (a free port there) "
			"for every rank",
			"RANK and WORLD_SIZE are set but %s%s%s is not: init_process_group's "
			"env:// "
			"rendezvous needs both",
			!addr ? "MASTER_ADDR" : "", !addr && !port ? " or " : "",
			!port ? "MASTER_PORT" : "");
	if (c->launch && pt > 0 && c->port_in_use &&
	    (!addr || loopback(addr->value) || !strcmp(addr->value, "0.0.0.0")) &&
	    c->port_in_use(c->io, (int)pt))
		problem(o, LINT_ERROR, e, port,
			"pick a free port, or stop what holds it ('ss -ltnp')",
			"MASTER_PORT %ld is already in use on this host: the rendezvous store "
			"cannot "
			"listen there (a job left behind?)",
			pt);
}

/* Across the ranks: one world, distinct ranks covering it, one master. */
static void check_across(struct out *o, const struct lint_env *envs, int nenv)
{
	long w0 = -1, lw0 = -1, seen_max = -1;
	const char *addr0 = NULL, *port0 = NULL, *host0 = NULL;
	bool hosts = false, *seen;
	int ranked = 0;

	for (int i = 0; i < nenv; i++) {
		const struct lint_env *e = &envs[i];
		const struct lint_var *ws = get(e, "WORLD_SIZE"), *ad = get(e, "MASTER_ADDR");
		const struct lint_var *pt = get(e, "MASTER_PORT"),
				      *lws = get(e, "LOCAL_WORLD_SIZE");
		long w;

		if (e->rank < 0)
			continue;
		ranked++;
		seen_max = e->rank > seen_max ? e->rank : seen_max;
		if (ws && int_in(ws->value, 1, 1 << 24, &w)) {
			if (w0 > 0 && w != w0)
				problem(o, LINT_ERROR, e, ws,
					"every rank of one job must have the same WORLD_SIZE",
					"WORLD_SIZE=%ld here, %ld on another rank", w, w0);
			w0 = w0 > 0 ? w0 : w;
		}
		if (lws && lw0 < 0 && !int_in(lws->value, 1, 1 << 24, &lw0))
			lw0 = -1;
		if (ad && addr0 && strcmp(ad->value, addr0))
			problem(o, LINT_ERROR, e, ad, "every rank must name the same master",
				"MASTER_ADDR=%s here, %s on another rank", ad->value, addr0);
		if (ad && !addr0)
			addr0 = ad->value;
		if (pt && port0 && strcmp(pt->value, port0))
			problem(o, LINT_ERROR, e, pt, "every rank must name the same master",
				"MASTER_PORT=%s here, %s on another rank", pt->value, port0);
		if (pt && !port0)
			port0 = pt->value;
		if (e->host && host0 && strcmp(e->host, host0))
			hosts = true;
		if (e->host && !host0)
			host0 = e->host;
	}
	if (!ranked)
		return;
	if (addr0 && loopback(addr0) && (hosts || (w0 > 0 && lw0 > 0 && w0 > lw0)))
		problem(o, LINT_ERROR, NULL, NULL,
			"set MASTER_ADDR to an address of rank 0's host that the others reach",
			"MASTER_ADDR=%s is a loopback address, but the ranks span hosts%s", addr0,
			hosts ? "" : " (WORLD_SIZE > LOCAL_WORLD_SIZE)");
	seen = calloc(seen_max + 2, sizeof(*seen));
	if (!seen)
		return;
	for (int i = 0; i < nenv; i++) {
		if (envs[i].rank < 0)
			continue;
		if (seen[envs[i].rank])
			problem(o, LINT_ERROR, &envs[i], NULL, "each process needs its own RANK",
				"rank %d appears twice (%s)", envs[i].rank, envs[i].label);
		seen[envs[i].rank] = true;
	}
	if (w0 > 0) {
		char miss[160] = "";
		size_t off = 0;
		int nmiss = 0;

		for (long r = 0; r < w0; r++)
			if (r > seen_max || !seen[r]) {
				if (off + 12 < sizeof(miss))
					off += snprintf(miss + off, sizeof(miss) - off, "%s%ld",
							nmiss ? "," : "", r);
				nmiss++;
			}
		/* one host's dump of a multi-node job misses the others' ranks by design */
		if (nmiss)
			problem(o, hosts || lw0 < 0 || lw0 < w0 ? LINT_INFO : LINT_ERROR, NULL,
				NULL,
				hosts || lw0 < 0 || lw0 < w0 ? "the other hosts' dumps have them"
							     : "every rank of WORLD_SIZE must "
							       "start; see the launcher's log",
				"%d of WORLD_SIZE=%ld ranks never appeared: %s", nmiss, w0, miss);
	}
	free(seen);
}

static bool same(const struct lint_var *a, const struct lint_var *b)
{
	return (!a && !b) || (a && b && !strcmp(a->value, b->value));
}

/* NCCL_* settings that are not the same on every rank. */
static void check_differences(struct out *o, const struct lint_env *envs, int nenv)
{
	for (int i = 0; i < nenv; i++)
		for (int k = 0; k < envs[i].n; k++) {
			const struct lint_var *ref = NULL;
			const char *key = envs[i].v[k].key;
			bool differ = false, first = true, any = false;
			char vals[200] = "";
			size_t off = 0;

			if (strncmp(key, "NCCL_", 5) || envs[i].rank < 0)
				continue;
			/* once per key: at the first rank that has it */
			for (int j = 0; j < i; j++)
				first &= envs[j].rank < 0 || !get(&envs[j], key);
			if (!first)
				continue;
			for (int j = 0; j < nenv; j++) {
				const struct lint_var *v;

				if (envs[j].rank < 0)
					continue;
				v = get(&envs[j], key);
				if (any && !same(v, ref))
					differ = true;
				if (!any)
					ref = v;
				any = true;
				if (off + 20 < sizeof(vals))
					off += snprintf(vals + off, sizeof(vals) - off,
							"%srank %d %s", off ? ", " : "",
							envs[j].rank, v ? v->value : "unset");
			}
			if (differ)
				problem(o, LINT_WARN, NULL, &envs[i].v[k],
					"set it the same on every rank, unless the hosts differ on "
					"purpose",
					"%s differs across ranks: %s", key, vals);
		}
}

int envlint(const struct lint_ctx *c, const struct lint_env *envs, int nenv,
	    struct lint_problem *out, int max)
{
	struct out o = {.p = out, .max = max};

	for (int i = 0; i < nenv; i++) {
		for (int k = 0; k < envs[i].n; k++)
			if (!strncmp(envs[i].v[k].key, "NCCL_", 5))
				check_nccl_var(c, &o, &envs[i], &envs[i].v[k]);
		check_rank_vars(c, &o, &envs[i]);
	}
	if (nenv > 1) {
		check_across(&o, envs, nenv);
		check_differences(&o, envs, nenv);
	}
	return o.n;
}

void envlint_lost(const struct lint_env *shell, const struct lint_env *here,
		  struct lint_problem *out, int *n, int max)
{
	struct out o = {.p = out, .n = *n, .max = max};
	char fix[240];

	for (int i = 0; i < shell->n; i++) {
		const struct lint_var *v = &shell->v[i];

		if (!ranks_env_allowed(v->key, strlen(v->key)) || get(here, v->key))
			continue;
		snprintf(fix, sizeof(fix),
			 "sudo -E nccltrace ..., sudo --preserve-env=%s, or put it after --: "
			 "nccltrace run -- env %s=... CMD",
			 v->key, v->key);
		problem(&o, LINT_WARN, NULL, v, fix,
			"%s is set in %s but not here: sudo's env_reset dropped it, so the job "
			"runs without it",
			v->key, shell->label);
	}
	*n = o.n;
}

int envlint_count(const struct lint_problem *p, int n)
{
	int c = 0;

	for (int i = 0; i < n; i++)
		c += p[i].sev != LINT_INFO;
	return c;
}

const char *lint_sev_name(enum lint_sev s)
{
	return s == LINT_ERROR ? "error" : s == LINT_WARN ? "warning" : "info";
}
