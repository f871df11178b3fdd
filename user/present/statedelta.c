// SPDX-License-Identifier: MIT
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "present/statedelta.h"

/* an encoder that has read the page of seq (0: free) */
struct base {
	uint64_t seq, used;
	struct delta_enc *e;
};

/* the last answers given (a hundred clients at one place cost one encoding) */
#define ANSWERS 4
struct answer {
	uint64_t since, seq;
	char *body;
};

struct state_deltas {
	struct base b[STATEDELTA_BASES];
	struct answer a[ANSWERS];
	uint64_t clock;
	int next_answer;
};

struct state_deltas *state_deltas_new(void)
{
	return calloc(1, sizeof(struct state_deltas));
}

void state_deltas_free(struct state_deltas *d)
{
	if (!d)
		return;
	for (int i = 0; i < STATEDELTA_BASES; i++)
		delta_enc_free(d->b[i].e);
	for (int i = 0; i < ANSWERS; i++)
		free(d->a[i].body);
	free(d);
}

uint64_t state_since(const char *s)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return 0;
	v = strtoull(s, &end, 10);
	return *end ? 0 : (uint64_t)v;
}

/*
 * The page's state as a frame of the dump's state records ({type, ts_ns, state}: what
 * dumpdelta codes), its state a copy of the page's (its arrays the page's own, shared)
 */
static json_t *frame_of(json_t *page)
{
	json_t *st = json_object_get(page, "state");

	if (!json_is_object(st))
		return NULL;
	return json_pack("{s:s,s:O?,s:o}", "type", "state", "ts_ns", json_object_get(st, "now_ns"),
			 "state", json_copy(st));
}

static struct base *base_at(struct state_deltas *d, uint64_t seq)
{
	for (int i = 0; seq && i < STATEDELTA_BASES; i++)
		if (d->b[i].e && d->b[i].seq == seq)
			return &d->b[i];
	return NULL;
}

/* a free place, else the least recently used */
static struct base *base_new(struct state_deltas *d)
{
	struct base *old = &d->b[0];

	for (int i = 0; i < STATEDELTA_BASES; i++) {
		if (!d->b[i].e)
			return &d->b[i];
		if (d->b[i].used < old->used)
			old = &d->b[i];
	}
	delta_enc_free(old->e);
	old->e = NULL;
	return old;
}

static char *remember(struct state_deltas *d, uint64_t since, uint64_t seq, char *body)
{
	struct answer *a = &d->a[d->next_answer];

	d->next_answer = (d->next_answer + 1) % ANSWERS;
	free(a->body);
	a->since = since;
	a->seq = seq;
	a->body = body ? strdup(body) : NULL;
	return body;
}

char *state_deltas_answer(struct state_deltas *d, json_t *page, uint64_t since)
{
	uint64_t seq = (uint64_t)json_integer_value(json_object_get(page, "seq"));
	struct base *b, *dup;
	json_t *f, *out;
	char *body;

	for (int i = 0; i < ANSWERS; i++)
		if (d->a[i].body && d->a[i].since == since && d->a[i].seq == seq)
			return strdup(d->a[i].body);
	f = frame_of(page);
	out = json_copy(page);
	if (!f || !out) {
		json_decref(f);
		json_decref(out);
		return NULL;
	}
	b = base_at(d, since);
	dup = base_at(d, seq);
	if (b) {
		/* against the client's page; the base moves on to this one, its next place */
		if (dup && dup != b) {
			delta_enc_free(dup->e);
			dup->e = NULL;
		}
		if (delta_encode(b->e, f) == 0 && json_is_true(json_object_get(f, "delta"))) {
			json_object_set(out, "state", json_object_get(f, "state"));
			json_object_set_new(out, "delta", json_true());
			json_object_set_new(out, "since", json_integer((json_int_t)since));
		}
	} else if (dup) {
		b = dup; /* whole, and a base is at it already */
	} else {
		/* whole: its frame read (a key frame) where the client's next answer starts */
		b = base_new(d);
		b->e = delta_enc_new();
		if (!b->e || delta_encode(b->e, f)) {
			delta_enc_free(b->e);
			b->e = NULL;
			json_decref(f);
			json_decref(out);
			return NULL;
		}
	}
	b->seq = seq;
	b->used = ++d->clock;
	body = json_dumps(out, JSON_COMPACT);
	json_decref(out);
	json_decref(f);
	return remember(d, since, seq, body);
}

int state_delta_take(struct delta_dec *dec, json_t *page, char *err, size_t errlen)
{
	json_t *st = json_object_get(page, "state"), *f;
	bool delta = json_is_true(json_object_get(page, "delta"));
	int rc;

	if (!json_is_integer(json_object_get(page, "seq")) || !json_is_object(st))
		return 0;
	/* the frame shares the page's state: made whole, the page's is */
	f = json_pack("{s:s,s:O?,s:O,s:b}", "type", "state", "ts_ns", json_object_get(st, "now_ns"),
		      "state", st, "delta", delta);
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	rc = delta_decode(dec, f, err, errlen);
	json_decref(f);
	json_object_del(page, "delta");
	json_object_del(page, "since");
	return rc;
}
