// SPDX-License-Identifier: MIT
/* The dump's pre-trigger ring (dumpring.h): a queue of frames, bounded in time and bytes */
#include <errno.h>
#include <stdlib.h>
#include "present/dumpring.h"

struct held {
	void *item;
	const struct dump_held_ops *ops;
	size_t len;
	uint64_t ts;
	bool keep;
};

struct dump_ring {
	struct held *h;
	size_t cap, head, n, bytes, max_bytes;
	uint64_t span_ns;
};

struct dump_ring *dump_ring_new(uint64_t span_ns, size_t max_bytes)
{
	struct dump_ring *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->span_ns = span_ns;
	r->max_bytes = max_bytes;
	return r;
}

void dump_ring_free(struct dump_ring *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		const struct held *o = &r->h[(r->head + i) % r->cap];

		o->ops->free(o->item);
	}
	free(r->h);
	free(r);
}

int dump_ring_push(struct dump_ring *r, void *item, const struct dump_held_ops *ops, size_t bytes,
		   uint64_t ts, bool keep)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 64;
		struct held *h = malloc(cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		for (size_t i = 0; i < r->n; i++)
			h[i] = r->h[(r->head + i) % r->cap];
		free(r->h);
		r->h = h;
		r->cap = cap;
		r->head = 0;
	}
	r->h[(r->head + r->n) % r->cap] = (struct held){item, ops, bytes, ts, keep};
	r->n++;
	r->bytes += bytes;
	return 0;
}

void *dump_ring_pop(struct dump_ring *r, uint64_t now, bool all, const struct dump_held_ops **ops,
		    bool *keep)
{
	struct held *o;

	if (!r->n)
		return NULL;
	o = &r->h[r->head];
	if (!all && r->bytes <= r->max_bytes && o->ts + r->span_ns > now)
		return NULL;
	*keep = o->keep;
	*ops = o->ops;
	r->bytes -= o->len;
	r->head = (r->head + 1) % r->cap;
	r->n--;
	return o->item;
}

size_t dump_ring_count(const struct dump_ring *r)
{
	return r->n;
}
