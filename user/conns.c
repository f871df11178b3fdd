// SPDX-License-Identifier: MIT
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "conns.h"

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
		if (c[i].peer_pid > 0)
			mapped++;
	}
	free(keys);
	return mapped;
}
