// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>
#include "nccl/ncclsources.h"

/* "a, b; c": the parts that apply, in order; "none" when no part does */
struct how {
	char *buf;
	size_t len, off;
};

static void add(struct how *h, bool when, const char *text)
{
	if (!when || h->off + 4 >= h->len)
		return;
	h->off += snprintf(h->buf + h->off, h->len - h->off, "%s%s", h->off ? "; " : "", text);
}

static bool has(const struct nccl_lib *lib, int probe)
{
	return lib->probe_off[probe] != 0;
}

static struct nccl_source *row(struct nccl_source *out, int *n, const char *fact, struct how *h)
{
	struct nccl_source *r = &out[(*n)++];

	r->fact = fact;
	r->how[0] = '\0';
	*h = (struct how){.buf = r->how, .len = sizeof(r->how)};
	return r;
}

static void done(struct nccl_source *r, const struct how *h)
{
	r->none = !h->off;
	if (r->none)
		snprintf(r->how, sizeof(r->how), "none on this build");
}

int nccl_sources(const struct nccl_lib *lib, int plugin_api, struct nccl_source *out)
{
	bool offs = lib->offs_src != OFFS_NONE, internal = has(lib, NT_P_RING_CONNECT) ||
							   has(lib, NT_P_P2P_SETUP) ||
							   has(lib, NT_P_BOOTSTRAP_INIT);
	bool seq = offs && lib->offs.comm_seq > 0, totals = offs && lib->offs.shres_collops > 0;
	struct nccl_source *r;
	struct how h;
	int n = 0;

	r = row(out, &n, "phases", &h);
	add(&h, internal, "internal probes (bootstrapInit, initTransportsRank, ring connect)");
	add(&h, (has(lib, NT_P_API_INIT_RANK) || has(lib, NT_P_API_INIT_CONFIG)) && internal,
	    "public API probes (ncclCommInitRank*)");
	add(&h, (has(lib, NT_P_API_INIT_RANK) || has(lib, NT_P_API_INIT_CONFIG)) && !internal,
	    "public API probes (ncclCommInitRank*, the first collectives until they return)");
	add(&h, plugin_api >= 5,
	    "the profiler plugin's API events (in ncclGroupEnd, nothing launched)");
	add(&h, true, "NCCL's log (Init START/COMPLETE, Connected all rings)");
	done(r, &h);
	r = row(out, &n, "collective counts", &h);
	add(&h, seq, "comm->seqNumber, read from memory");
	add(&h, plugin_api > 0, "nccltrace's profiler plugin");
	add(&h, !seq && totals, "comm->sharedRes->collOpCount (all functions together)");
	add(&h, has(lib, NT_P_ENQUEUE), "--collectives (ncclEnqueueCheck probe)");
	done(r, &h);
	r = row(out, &n, "collective arguments", &h);
	add(&h, plugin_api > 0, "nccltrace's profiler plugin (by default: size mismatches named)");
	add(&h, has(lib, NT_P_ENQUEUE), "--collectives (ncclEnqueueCheck probe)");
	done(r, &h);
	r = row(out, &n, "settings", &h);
	add(&h, has(lib, NT_P_ENV), "as NCCL read them (its getenv probe)");
	add(&h, true, "NCCL's log (set by environment)");
	add(&h, true, "the ranks' environment (as set, not as read)");
	done(r, &h);
	r = row(out, &n, "warnings", &h);
	add(&h, has(lib, NT_P_DEBUG_LOG) && lib->offs.lasterr_delta,
	    "ncclDebugLog probe with ncclLastError's text");
	add(&h, has(lib, NT_P_DEBUG_LOG) && !lib->offs.lasterr_delta,
	    "ncclDebugLog probe (counted, no text)");
	add(&h, has(lib, NT_P_API_LAST_ERROR), "ncclGetLastError probe");
	add(&h, true, "NCCL's log (WARN lines)");
	done(r, &h);
	r = row(out, &n, "transports", &h);
	add(&h, true, "NCCL's log (Channel lines: P2P, SHM, NET/Socket, NET/IB, GDR)");
	done(r, &h);
	r = row(out, &n, "socket roles", &h);
	add(&h, has(lib, NT_P_SOCKET_CONNECT) && has(lib, NT_P_SOCKET_ACCEPT),
	    "internal socket probes (bootstrap, proxy, net, ras)");
	done(r, &h);
	r = row(out, &n, "where a thread waits", &h);
	add(&h, true,
	    lib->has_symtab ? "stacks from outside, named from .symtab"
			    : "stacks from outside, exported names only (.dynsym)");
	done(r, &h);
	return n;
}
