// SPDX-License-Identifier: MIT
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "model/conns.h"

bool conns_is_reverse(const struct nt_tuple *a, const struct nt_tuple *b)
{
	return a->family == b->family && a->sport == b->dport && a->dport == b->sport &&
	       memcmp(a->saddr, b->daddr, 16) == 0 && memcmp(a->daddr, b->saddr, 16) == 0;
}

/* Sort key: the local end first, so the reverse of a tuple is found by swapping ends. */
struct end_key {
	uint16_t family;
	uint16_t lport;
	uint16_t rport;
	uint8_t laddr[16];
	uint8_t raddr[16];
	int idx;
};

static int key_cmp(const void *pa, const void *pb)
{
	const struct end_key *a = pa, *b = pb;

	/* compare everything but idx */
	return memcmp(a, b, offsetof(struct end_key, idx));
}

static void key_fill(struct end_key *k, const struct nt_tuple *t, bool swap, int idx)
{
	memset(k, 0, sizeof(*k));
	k->family = t->family;
	k->lport = swap ? t->dport : t->sport;
	k->rport = swap ? t->sport : t->dport;
	memcpy(k->laddr, swap ? t->daddr : t->saddr, 16);
	memcpy(k->raddr, swap ? t->saddr : t->daddr, 16);
	k->idx = idx;
}

/* A listener as a sort key: family, port, address */
struct listen_key {
	uint16_t family;
	uint16_t port;
	uint8_t addr[16];
	int idx;
};

static int listen_cmp(const void *pa, const void *pb)
{
	return memcmp(pa, pb, offsetof(struct listen_key, idx));
}

static bool is_loopback(const struct nt_tuple *t)
{
	static const uint8_t v6lo[16] = {[15] = 1};

	return t->family == 2 /* AF_INET */ ? t->daddr[0] == 127 : !memcmp(t->daddr, v6lo, 16);
}

/*
 * A connection whose other end is not in the table yet (an accepted socket joins it at its
 * first send or receive: a peer that never accept()s or never reads is never seen) goes to a
 * traced listener of this host: its owner is the peer. The listener's own address must match,
 * or be the wildcard for a loopback destination. Not for a connect still unanswered: that one
 * is about its address.
 */
static void map_listeners(struct snap_conn *c, int n)
{
	struct listen_key *keys = calloc(n, sizeof(*keys));
	int m = 0;

	if (!keys)
		return;
	for (int i = 0; i < n; i++)
		if ((c[i].c.flags & NT_CONN_LISTENER) && !c[i].closed) {
			keys[m].family = c[i].c.t.family;
			keys[m].port = c[i].c.t.sport;
			memcpy(keys[m].addr, c[i].c.t.saddr, 16);
			keys[m++].idx = i;
		}
	if (m > 1)
		qsort(keys, m, sizeof(*keys), listen_cmp);
	for (int i = 0; m && i < n; i++) {
		struct listen_key want = {.family = c[i].c.t.family, .port = c[i].c.t.dport}, *hit;

		if (c[i].peer_pid > 0 || (c[i].c.flags & NT_CONN_LISTENER) || c[i].closed ||
		    c[i].c.state == 2 /* TCP_SYN_SENT */ || !c[i].c.t.dport)
			continue;
		memcpy(want.addr, c[i].c.t.daddr, 16);
		hit = bsearch(&want, keys, m, sizeof(*keys), listen_cmp);
		if (!hit && is_loopback(&c[i].c.t)) {
			memset(want.addr, 0, 16);
			hit = bsearch(&want, keys, m, sizeof(*keys), listen_cmp);
		}
		if (hit)
			c[i].peer_pid = c[hit->idx].pid;
	}
	free(keys);
}

int conns_map_peers(struct snap_conn *c, int n)
{
	struct end_key *keys;
	int m = 0, mapped = 0;

	if (n <= 0)
		return 0;
	keys = calloc(n, sizeof(*keys));
	if (!keys)
		return 0;
	for (int i = 0; i < n; i++)
		if (!(c[i].c.flags & NT_CONN_LISTENER) && c[i].c.t.sport && c[i].c.t.dport)
			key_fill(&keys[m++], &c[i].c.t, false, i);
	if (m > 1)
		qsort(keys, m, sizeof(*keys), key_cmp);
	for (int i = 0; i < n; i++) {
		struct end_key want, *hit;

		if (c[i].c.flags & NT_CONN_LISTENER || !c[i].c.t.sport || !c[i].c.t.dport) {
			continue;
		}
		key_fill(&want, &c[i].c.t, true, 0);
		/* a TCP self-connect (same address and port both ends) is its own other end */
		hit = bsearch(&want, keys, m, sizeof(*keys), key_cmp);
		if (hit)
			c[i].peer_pid = c[hit->idx].pid;
	}
	free(keys);
	map_listeners(c, n);
	for (int i = 0; i < n; i++)
		mapped += c[i].peer_pid > 0 && !(c[i].c.flags & NT_CONN_LISTENER);
	return mapped;
}
