// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "present/convert.h"
#include "present/convertmerge.h"

/* past any pid: the processes without a rank of host i are 100000 + pid + i * this */
#define HOST_PID_STRIDE 10000000

json_t *convert_header(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	json_t *h = NULL;

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (getline(&line, &cap, f) > 0)
		h = json_loads(line, 0, NULL);
	if (!json_is_object(h) || !json_object_get(h, "nccltrace")) {
		snprintf(err, errlen, "%s:1: not an nccltrace dump (no header)", path);
		json_decref(h);
		h = NULL;
	}
	free(line);
	fclose(f);
	return h;
}

double convert_offset_s(json_t *first, json_t *h)
{
	/* each start on CLOCK_REALTIME: start_ns + boot_to_realtime_ns */
	double a = (double)json_integer_value(json_object_get(first, "start_ns")) +
		   (double)json_integer_value(json_object_get(first, "boot_to_realtime_ns"));
	double b = (double)json_integer_value(json_object_get(h, "start_ns")) +
		   (double)json_integer_value(json_object_get(h, "boot_to_realtime_ns"));

	return (b - a) / 1e9;
}

struct placing {
	int i;
	double off_us;
	const char *host;
};

/* host i's event: on the first's axis, its process named with its host */
static void place_one(json_t *e, void *ctx)
{
	const struct placing *p = ctx;
	json_t *ts = json_object_get(e, "ts"), *pid = json_object_get(e, "pid");
	const char *ph = json_string_value(json_object_get(e, "ph"));
	const char *name = json_string_value(json_object_get(e, "name"));

	if (json_is_number(ts) && ph && strcmp(ph, "M"))
		json_object_set_new(e, "ts", json_real(json_number_value(ts) + p->off_us));
	if (json_is_integer(pid) && json_integer_value(pid) >= 100000)
		json_object_set_new(
			e, "pid",
			json_integer(json_integer_value(pid) + (json_int_t)p->i * HOST_PID_STRIDE));
	if (ph && !strcmp(ph, "M") && name && !strcmp(name, "process_name")) {
		json_t *args = json_object_get(e, "args");
		char buf[256];

		snprintf(buf, sizeof(buf), "%s on %s",
			 json_string_value(json_object_get(args, "name")) ?: "?", p->host);
		json_object_set_new(args, "name", json_string(buf));
	}
}

static void place(json_t *events, int i, double off_us, const char *host)
{
	struct placing p = {i, off_us, host};
	size_t k;
	json_t *e;

	json_array_foreach(events, k, e) place_one(e, &p);
}

struct convert_sink *convert_dumps_sink(char **paths, int n, char *err, size_t errlen)
{
	json_t *first = convert_header(paths[0], err, errlen);
	struct convert_sink *s = first ? convert_sink_new(err, errlen) : NULL;
	int rc = s ? 0 : -1;

	for (int i = 0; !rc && i < n; i++) {
		json_t *h = i ? convert_header(paths[i], err, errlen) : json_incref(first);
		struct placing p;

		if (!h) {
			rc = -1;
			break;
		}
		p = (struct placing){i, convert_offset_s(first, h) * 1e6,
				     json_string_value(json_object_get(h, "host")) ?: "?"};
		/* one dump: its own axis and names, as they are */
		rc = convert_dump_into(s, paths[i], n > 1 ? place_one : NULL, &p, err, errlen);
		json_decref(h);
	}
	json_decref(first);
	if (rc) {
		convert_sink_free(s);
		return NULL;
	}
	return s;
}

json_t *convert_dumps(char **paths, int n, bool phases_only, char *err, size_t errlen)
{
	json_t *first = convert_header(paths[0], err, errlen), *out = NULL, *all;

	if (!first)
		return NULL;
	out = json_pack("{s:[]}", "traceEvents");
	all = json_object_get(out, "traceEvents");
	for (int i = 0; i < n; i++) {
		json_t *h = i ? convert_header(paths[i], err, errlen) : json_incref(first);
		json_t *t = h ? convert_dump(paths[i], phases_only, err, errlen) : NULL;
		const char *host;

		if (!t) {
			json_decref(h);
			json_decref(out);
			out = NULL;
			break;
		}
		host = json_string_value(json_object_get(h, "host")) ?: "?";
		place(json_object_get(t, "traceEvents"), i, convert_offset_s(first, h) * 1e6, host);
		json_array_extend(all, json_object_get(t, "traceEvents"));
		json_decref(t);
		json_decref(h);
	}
	json_decref(first);
	return out;
}
