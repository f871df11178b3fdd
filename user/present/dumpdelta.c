// SPDX-License-Identifier: MIT
/* Snapshot and state records as what changed since the last frame of their type (dumpdelta.h) */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "present/dumpdelta.h"

#define NKINDS	     3 /* the arrays of a frame, at most */
#define KEY_EVERY_NS ((uint64_t)DELTA_KEY_EVERY_S * 1000000000ull)

/* the record types written as frames, and their arrays (in the record, or in its "state") */
static const struct frame_type {
	const char *type;
	const char *inner; /* the object that holds the arrays; NULL: the record */
	bool ages;	   /* its elements carry ages (dumpdelta.h) */
	const char *arrays[NKINDS];
} frame_types[] = {
	{"snapshot", NULL, true, {"procs", "conns", NULL}},
	{"state", "state", false, {"procs", "conns", "comms"}},
};
#define NTYPES (sizeof(frame_types) / sizeof(frame_types[0]))

static int frame_type_of(const json_t *rec)
{
	const char *t = json_string_value(json_object_get(rec, "type"));

	for (size_t i = 0; t && i < NTYPES; i++)
		if (!strcmp(t, frame_types[i].type))
			return (int)i;
	return -1;
}

static json_t *frame_holder(const struct frame_type *ft, json_t *rec)
{
	json_t *o = ft->inner ? json_object_get(rec, ft->inner) : rec;

	return json_is_object(o) ? o : NULL;
}

static bool age_key(const char *k)
{
	size_t n = strlen(k);

	return !strcmp(k, "age_s") || (n > 6 && !strcmp(k + n - 6, "_age_s")) ||
	       !strcmp(k, "for_s") || !strcmp(k, "in_phase_s") || !strcmp(k, "api_call_s");
}

/* ---- the writer ---- */

/*
 * the canonical text of each element of one array of the last frame (canon, or its identity),
 * and an index on it
 */
struct slot {
	char **s;
	size_t n;
	int *tab; /* open addressing: element index + 1, 0 empty */
	size_t cap;
};

struct enc_type {
	bool have;
	uint64_t prev_ts, key_ts;
	struct slot a[NKINDS];
};

struct delta_enc {
	struct enc_type t[NTYPES];
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static void slot_clear(struct slot *sl)
{
	for (size_t i = 0; i < sl->n; i++)
		free(sl->s[i]);
	free(sl->s);
	free(sl->tab);
	memset(sl, 0, sizeof(*sl));
}

/* take s[0..n) as the slot's elements; 0, or -ENOMEM (the slot is then empty) */
static int slot_set(struct slot *sl, char **s, size_t n)
{
	slot_clear(sl);
	sl->s = s;
	sl->n = n;
	if (!n)
		return 0;
	for (sl->cap = 16; sl->cap < 2 * n; sl->cap *= 2)
		;
	sl->tab = calloc(sl->cap, sizeof(*sl->tab));
	if (!sl->tab) {
		slot_clear(sl);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		size_t h = hash_str(s[i]) & (sl->cap - 1);

		while (sl->tab[h])
			h = (h + 1) & (sl->cap - 1);
		sl->tab[h] = (int)i + 1;
	}
	return 0;
}

/* the index of an element of the last frame whose text is s, or -1 */
static long slot_find(const struct slot *sl, const char *s)
{
	if (!sl->cap)
		return -1;
	for (size_t h = hash_str(s) & (sl->cap - 1); sl->tab[h]; h = (h + 1) & (sl->cap - 1))
		if (!strcmp(sl->s[sl->tab[h] - 1], s))
			return sl->tab[h] - 1;
	return -1;
}

/*
 * Every age in v (age_key) made what f makes of it: the moment it counts from, to compare two
 * frames (the writer), or grown by the time between them (the reader)
 */
static void map_ages(json_t *v, json_t *(*f)(double age, double arg), double arg)
{
	const char *k;
	json_t *x;
	void *tmp;
	size_t i;

	if (json_is_object(v)) {
		json_object_foreach_safe(v, tmp, k, x)
		{
			if (age_key(k) && json_is_number(x))
				json_object_set_new(v, k, f(json_number_value(x), arg));
			else
				map_ages(x, f, arg);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x) map_ages(x, f, arg);
	}
}

/* an age dt seconds later */
static json_t *age_grown(double age, double dt)
{
	return json_real(age + dt);
}

/*
 * An element's canonical text: 128 bits of hash over its JSON as it stands (members in their
 * order, every value with its type), each age as the moment it counts from (µs of the
 * record's clock: the same while nothing moves). Built by a walk of the element, with no copy
 * of it and no text of it: the cost of a frame that is mostly what changed.
 */
struct digest {
	uint64_t a, b;
};

static void mix(struct digest *d, uint64_t w)
{
	d->a = (d->a ^ w) * 0x9e3779b97f4a7c15ull;
	d->a ^= d->a >> 29;
	d->b = (d->b + w) * 0xc2b2ae3d27d4eb4full;
	d->b = d->b << 31 | d->b >> 33;
}

/* n bytes at p, eight at a time */
static void dig(struct digest *d, const void *p, size_t n)
{
	const unsigned char *c = p;
	uint64_t w;

	for (; n >= 8; n -= 8, c += 8) {
		memcpy(&w, c, 8);
		mix(d, w);
	}
	if (n) {
		w = 0;
		memcpy(&w, c, n);
		mix(d, w ^ (uint64_t)n << 56);
	}
}

static void dig_tag(struct digest *d, char tag)
{
	dig(d, &tag, 1);
}

static void walk(struct digest *d, json_t *v, bool ages, double ts_us)
{
	const char *k;
	json_t *x;
	size_t i;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		dig_tag(d, '{');
		json_object_foreach(v, k, x)
		{
			dig(d, k, strlen(k) + 1);
			if (ages && age_key(k) && json_is_number(x)) {
				int64_t m = (int64_t)(ts_us - json_number_value(x) * 1e6 + 0.5);

				dig_tag(d, 'm');
				dig(d, &m, sizeof(m));
			} else {
				walk(d, x, ages, ts_us);
			}
		}
		dig_tag(d, '}');
		break;
	case JSON_ARRAY:
		dig_tag(d, '[');
		json_array_foreach(v, i, x) walk(d, x, ages, ts_us);
		dig_tag(d, ']');
		break;
	case JSON_STRING:
		i = json_string_length(v);
		dig_tag(d, 's');
		dig(d, &i, sizeof(i));
		dig(d, json_string_value(v), i);
		break;
	case JSON_INTEGER: {
		json_int_t n = json_integer_value(v);

		dig_tag(d, 'i');
		dig(d, &n, sizeof(n));
		break;
	}
	case JSON_REAL: {
		double r = json_real_value(v);

		dig_tag(d, 'r');
		dig(d, &r, sizeof(r));
		break;
	}
	default:
		dig_tag(d, json_is_true(v) ? 't' : json_is_false(v) ? 'f' : 'n');
	}
}

/* the last step of MurmurHash3: every bit of the sum in every bit of the hash */
static uint64_t fmix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

#define DIGEST_SEED                                                                                \
	{                                                                                          \
		1469598103934665603ull, 0x84222325cbf29ce4ull                                      \
	}

static void digest_text(const struct digest *d, char out[DELTA_ID_LEN])
{
	snprintf(out, DELTA_ID_LEN, "%016llx%016llx", (unsigned long long)fmix(d->a),
		 (unsigned long long)fmix(d->b));
}

void delta_id(const void *p, size_t n, char out[DELTA_ID_LEN])
{
	struct digest d = DIGEST_SEED;

	dig(&d, p, n);
	digest_text(&d, out);
}

static char *canon(const json_t *el, bool ages, uint64_t ts)
{
	struct digest d = DIGEST_SEED;
	char *s = malloc(DELTA_ID_LEN);

	if (!s)
		return NULL;
	walk(&d, (json_t *)el, ages, (double)ts / 1e3);
	digest_text(&d, s);
	return s;
}

struct delta_enc *delta_enc_new(void)
{
	return calloc(1, sizeof(struct delta_enc));
}

void delta_enc_reset(struct delta_enc *e)
{
	for (size_t t = 0; t < NTYPES; t++) {
		for (int k = 0; k < NKINDS; k++)
			slot_clear(&e->t[t].a[k]);
		e->t[t].have = false;
	}
}

void delta_enc_free(struct delta_enc *e)
{
	if (!e)
		return;
	delta_enc_reset(e);
	free(e);
}

/* an array of the frame as references to the last frame's elements where they are the same */
static json_t *delta_array(const struct slot *prev, json_t *arr, char **cur)
{
	json_t *out = json_array(), *run = NULL, *el;
	long start = -1, len = 0;
	size_t i;

	if (!out)
		return NULL;
	json_array_foreach(arr, i, el)
	{
		long j = slot_find(prev, cur[i]);

		if (j >= 0 && start >= 0 && j == start + len) {
			len++;
			continue;
		}
		/* the run that ends here */
		if (start >= 0) {
			run = len == 1 ? json_integer(start)
				       : json_pack("[I,I]", (json_int_t)start, (json_int_t)len);
			if (json_array_append_new(out, run))
				goto oom;
		}
		start = j;
		len = j >= 0;
		if (j < 0 && json_array_append(out, el))
			goto oom;
	}
	if (start >= 0) {
		run = len == 1 ? json_integer(start)
			       : json_pack("[I,I]", (json_int_t)start, (json_int_t)len);
		if (json_array_append_new(out, run))
			goto oom;
	}
	return out;
oom:
	json_decref(out);
	return NULL;
}

/* the elements' identities (DELTA_ID) taken out of the frame's arrays, whatever else fails */
static void strip_ids(json_t *holder, const struct frame_type *ft)
{
	for (int k = 0; k < NKINDS && ft->arrays[k]; k++) {
		json_t *a = json_object_get(holder, ft->arrays[k]), *el;
		size_t i;

		json_array_foreach(a, i, el) json_object_del(el, DELTA_ID);
	}
}

/* an element's canonical text: its identity if it carries one, else its JSON's */
static char *element_canon(const json_t *el, bool ages, uint64_t ts)
{
	const char *id = json_string_value(json_object_get(el, DELTA_ID));

	return id ? strdup(id) : canon(el, ages, ts);
}

int delta_encode(struct delta_enc *e, json_t *rec)
{
	int ti = frame_type_of(rec), rc = 0;
	const struct frame_type *ft;
	struct enc_type *et;
	json_t *holder, *arrs[NKINDS] = {0}, *outs[NKINDS] = {0};
	char **cur[NKINDS] = {0};
	size_t ncur[NKINDS] = {0};
	uint64_t ts;
	bool key;

	if (ti < 0)
		return 0;
	ft = &frame_types[ti];
	et = &e->t[ti];
	holder = frame_holder(ft, rec);
	if (!holder)
		return 0;
	ts = (uint64_t)json_integer_value(json_object_get(rec, "ts_ns"));
	key = !et->have || ts < et->prev_ts || ts - et->key_ts >= KEY_EVERY_NS;
	for (int k = 0; k < NKINDS && ft->arrays[k]; k++) {
		json_t *a = json_object_get(holder, ft->arrays[k]), *el;
		size_t i;

		if (!json_is_array(a))
			continue;
		arrs[k] = a;
		ncur[k] = json_array_size(a);
		cur[k] = calloc(ncur[k] ? ncur[k] : 1, sizeof(char *));
		if (!cur[k]) {
			rc = -ENOMEM;
			goto out;
		}
		json_array_foreach(a, i, el)
		{
			/* an element that is not an object could not be told from a reference */
			if (!json_is_object(el))
				key = true;
			cur[k][i] = element_canon(el, ft->ages, ts);
			if (!cur[k][i]) {
				rc = -ENOMEM;
				goto out;
			}
		}
	}
	strip_ids(holder, ft);
	for (int k = 0; !key && k < NKINDS; k++)
		if (arrs[k] && !(outs[k] = delta_array(&et->a[k], arrs[k], cur[k]))) {
			rc = -ENOMEM;
			goto out;
		}
	/* nothing can fail from here: the record changes whole or not at all */
	for (int k = 0; k < NKINDS; k++) {
		if (outs[k]) {
			json_object_set_new(holder, ft->arrays[k], outs[k]);
			outs[k] = NULL;
		}
		if (slot_set(&et->a[k], cur[k], ncur[k]))
			rc = -ENOMEM;
		cur[k] = NULL;
	}
	json_object_set_new(rec, key ? "key" : "delta", json_true());
	et->have = rc == 0;
	et->prev_ts = ts;
	if (key)
		et->key_ts = ts;
out:
	if (rc)
		strip_ids(holder, ft);
	for (int k = 0; k < NKINDS; k++) {
		json_decref(outs[k]);
		for (size_t i = 0; cur[k] && i < ncur[k]; i++)
			free(cur[k][i]);
		free(cur[k]);
	}
	if (rc)
		et->have = false;
	return rc;
}

/* ---- the reader ---- */

struct dec_type {
	bool have;
	uint64_t ts;
	json_t *a[NKINDS];
};

struct delta_dec {
	struct dec_type t[NTYPES];
};

struct delta_dec *delta_dec_new(void)
{
	return calloc(1, sizeof(struct delta_dec));
}

void delta_dec_free(struct delta_dec *d)
{
	if (!d)
		return;
	for (size_t t = 0; t < NTYPES; t++)
		for (int k = 0; k < NKINDS; k++)
			json_decref(d->t[t].a[k]);
	free(d);
}

static bool has_ages(const json_t *v)
{
	const char *k;
	json_t *x;
	size_t i;

	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, x) if ((age_key(k) && json_is_number(x)) ||
							   has_ages(x)) return true;
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x) if (has_ages(x)) return true;
	}
	return false;
}

/* element i of the last frame, as of dt seconds later */
static int take(json_t *out, json_t *prev, json_int_t i, bool ages, double dt)
{
	json_t *el = json_array_get(prev, (size_t)i), *c;

	if (!ages || dt == 0 || !has_ages(el))
		return json_array_append(out, el);
	c = json_deep_copy(el);
	if (!c)
		return -1;
	map_ages(c, age_grown, dt);
	return json_array_append_new(out, c);
}

static json_t *whole_array(json_t *delta, json_t *prev, bool ages, double dt, char *err,
			   size_t errlen)
{
	json_t *out = json_array(), *it;
	json_int_t np = (json_int_t)json_array_size(prev);
	size_t i;

	if (!out)
		goto oom;
	json_array_foreach(delta, i, it)
	{
		json_int_t from, n = 1;

		if (json_is_object(it)) {
			if (json_array_append(out, it))
				goto oom;
			continue;
		}
		if (json_is_integer(it)) {
			from = json_integer_value(it);
		} else if (json_is_array(it) && json_array_size(it) == 2 &&
			   json_is_integer(json_array_get(it, 0)) &&
			   json_is_integer(json_array_get(it, 1))) {
			from = json_integer_value(json_array_get(it, 0));
			n = json_integer_value(json_array_get(it, 1));
		} else {
			snprintf(err, errlen, "element %zu is neither an object nor a reference",
				 i);
			goto bad;
		}
		if (from < 0 || n < 1 || from > np - n) {
			snprintf(err, errlen,
				 "element %zu refers to %lld..%lld of the last frame, which has "
				 "%lld",
				 i, (long long)from, (long long)(from + n - 1), (long long)np);
			goto bad;
		}
		for (json_int_t k = from; k < from + n; k++)
			if (take(out, prev, k, ages, dt))
				goto oom;
	}
	return out;
oom:
	snprintf(err, errlen, "out of memory");
bad:
	json_decref(out);
	return NULL;
}

int delta_decode(struct delta_dec *d, json_t *rec, char *err, size_t errlen)
{
	int ti = frame_type_of(rec);
	const struct frame_type *ft;
	struct dec_type *dt;
	json_t *holder, *outs[NKINDS] = {0};
	uint64_t ts;
	bool delta;
	char why[200];

	if (ti < 0)
		return 0;
	ft = &frame_types[ti];
	dt = &d->t[ti];
	holder = frame_holder(ft, rec);
	if (!holder)
		return 0;
	delta = json_is_true(json_object_get(rec, "delta"));
	json_object_del(rec, "delta");
	json_object_del(rec, "key");
	ts = (uint64_t)json_integer_value(json_object_get(rec, "ts_ns"));
	if (delta && !dt->have) {
		snprintf(err, errlen, "a %s delta frame with no key frame before it", ft->type);
		return -1;
	}
	for (int k = 0; delta && k < NKINDS && ft->arrays[k]; k++) {
		json_t *a = json_object_get(holder, ft->arrays[k]);

		if (!json_is_array(a))
			continue;
		outs[k] = whole_array(a, dt->a[k], ft->ages, ((double)ts - (double)dt->ts) / 1e9,
				      why, sizeof(why));
		if (!outs[k]) {
			snprintf(err, errlen, "%s delta frame, %s: %s", ft->type, ft->arrays[k],
				 why);
			for (int j = 0; j < k; j++)
				json_decref(outs[j]);
			return -1;
		}
	}
	for (int k = 0; k < NKINDS && ft->arrays[k]; k++) {
		json_t *a;

		if (outs[k])
			json_object_set_new(holder, ft->arrays[k], outs[k]);
		a = json_object_get(holder, ft->arrays[k]);
		json_decref(dt->a[k]);
		dt->a[k] = json_is_array(a) ? json_incref(a) : NULL;
	}
	dt->have = true;
	dt->ts = ts;
	return 0;
}
