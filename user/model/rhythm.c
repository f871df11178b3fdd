// SPDX-License-Identifier: MIT
/* The gaps between moves, their 99th percentile, and a table of them by key. */
#include <stdlib.h>
#include <string.h>
#include "model/rhythm.h"
#include "model/snapshot.h"

void rhythm_moved(struct rhythm *r, uint64_t t, uint64_t events, uint64_t cap_ns)
{
	uint64_t gap, per;

	if (!t || t <= r->last_ns)
		return;
	if (!r->last_ns) {
		r->last_ns = t;
		return;
	}
	gap = t - r->last_ns;
	if (cap_ns && gap > cap_ns)
		gap = cap_ns;
	/* in microseconds: a gap past 71 minutes counts as that long */
	r->gap[r->n % RHYTHM_GAPS] = gap / 1000 > UINT32_MAX ? UINT32_MAX : (uint32_t)(gap / 1000);
	r->n++;
	r->last_ns = t;
	/* per event, averaged over about the last 8 moves */
	per = gap / (events ? events : 1);
	r->every_ns = r->every_ns ? r->every_ns - r->every_ns / 8 + per / 8 : per;
}

void rhythm_seen(struct rhythm *r, uint64_t t, uint64_t count, uint64_t tick, uint64_t tick_ns)
{
	uint64_t events = count - r->count, cap = r->tick + 1 == tick ? tick_ns : 0;

	if (count == r->count)
		return;
	r->count = count;
	r->tick = tick;
	/* a count that went back (a new communicator at the same key): start again */
	if (count < events) {
		r->last_ns = 0;
		events = 1;
	}
	rhythm_moved(r, t, events, cap);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t rhythm_p99(const struct rhythm *r)
{
	uint32_t g[RHYTHM_GAPS];
	int n = r->n < RHYTHM_GAPS ? r->n : RHYTHM_GAPS, rank;

	if (r->n < RHYTHM_WARM)
		return 0;
	memcpy(g, r->gap, sizeof(g[0]) * n);
	qsort(g, n, sizeof(g[0]), cmp_u32);
	/* nearest rank: the smallest gap at least 99 % of the kept ones do not exceed */
	rank = (99 * n + 99) / 100;
	return (uint64_t)g[rank - 1] * 1000;
}

uint64_t rhythm_comm_key(int pid, uint64_t comm_hash)
{
	/* splitmix64's finalizer: pids and hashes of one job spread over the table */
	uint64_t z = comm_hash ^ ((uint64_t)(unsigned int)pid << 32 | (unsigned int)pid);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return z ? z : 1;
}

static unsigned int slot_of(const struct rhythms *t, uint64_t key)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ULL;

	return (unsigned int)(h >> 32) & (t->cap - 1);
}

/* Put slot s (key not in t) into t, which has room */
static struct rhythm_slot *place(struct rhythms *t, const struct rhythm_slot *s)
{
	unsigned int i = slot_of(t, s->key);

	while (t->slot[i].key)
		i = (i + 1) & (t->cap - 1);
	t->slot[i] = *s;
	t->n++;
	return &t->slot[i];
}

/* Rebuild t with cap slots (only those seen this round, for a sweep). 0 or -1 (t as it was). */
static int rebuild(struct rhythms *t, unsigned int cap, bool only_seen)
{
	struct rhythms old = *t;

	t->slot = calloc(cap, sizeof(*t->slot));
	if (!t->slot) {
		*t = old;
		return -1;
	}
	t->cap = cap;
	t->n = 0;
	for (unsigned int i = 0; i < old.cap; i++)
		if (old.slot[i].key && (!only_seen || old.slot[i].seen)) {
			struct rhythm_slot *p = place(t, &old.slot[i]);

			/* a sweep starts a new round; growing keeps this one's */
			if (only_seen)
				p->seen = false;
		}
	free(old.slot);
	return 0;
}

struct rhythm *rhythms_get(struct rhythms *t, uint64_t key)
{
	struct rhythm_slot s = {.key = key, .seen = true};
	unsigned int i;

	if (!key)
		return NULL;
	if (t->cap) {
		for (i = slot_of(t, key); t->slot[i].key; i = (i + 1) & (t->cap - 1))
			if (t->slot[i].key == key) {
				t->slot[i].seen = true;
				return &t->slot[i].r;
			}
	}
	/* at most half full: probes stay short */
	if ((t->n + 1) * 2 > t->cap && rebuild(t, t->cap ? t->cap * 2 : 64, false))
		return NULL;
	return &place(t, &s)->r;
}

void rhythms_sweep(struct rhythms *t)
{
	unsigned int live = 0, cap = 64;

	if (!t->cap)
		return;
	for (unsigned int i = 0; i < t->cap; i++)
		live += t->slot[i].key && t->slot[i].seen;
	while (cap < live * 2 + 2)
		cap *= 2;
	/* out of memory: everything stays one round more */
	if (rebuild(t, cap, true))
		for (unsigned int i = 0; i < t->cap; i++)
			t->slot[i].seen = false;
}

void rhythms_free(struct rhythms *t)
{
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

static uint64_t conn_moved_ns(const struct snap_conn *c)
{
	return c->c.last_send_ns > c->c.last_recv_ns ? c->c.last_send_ns : c->c.last_recv_ns;
}

void rhythms_learn(struct rhythms *t, struct snapshot *s, uint64_t tick_ns)
{
	uint64_t tick = ++t->tick;

	for (int i = 0; i < s->ncomms; i++) {
		struct snap_comm *c = &s->comms[i];
		struct rhythm *r;

		if (!c->seq_ok || c->destroyed)
			continue;
		r = rhythms_get(t, rhythm_comm_key(c->pid, c->hash));
		if (!r)
			return;
		rhythm_seen(r, c->changed_ns, snap_comm_total(c), tick, tick_ns);
		c->gap_p99_ns = rhythm_p99(r);
		c->every_ns = r->every_ns;
	}
	for (int i = 0; i < s->nconns; i++) {
		struct snap_conn *c = &s->conns[i];
		struct rhythm *r;

		if (c->closed || (c->c.flags & NT_CONN_LISTENER))
			continue;
		r = rhythms_get(t, c->id);
		if (!r)
			return;
		if (!s->tcp_quiet) {
			if (r->last_ns && r->last_ns < s->tcp_resumed_ns)
				r->last_ns = 0;
			rhythm_seen(r, conn_moved_ns(c), c->c.send_calls + c->c.recv_calls, tick,
				    tick_ns);
		}
		c->gap_p99_ns = rhythm_p99(r);
		c->every_ns = r->every_ns;
	}
}
