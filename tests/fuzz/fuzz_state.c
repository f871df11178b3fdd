// SPDX-License-Identifier: MIT
/*
 * `/state` documents from other hosts, as `watch` takes them: each host's answer put on one
 * clock, read back into a snapshot, the hosts merged and diagnosed as one job, round after
 * round; the findings told as they open and close, listed as `watch --once --json` prints them,
 * and the dashboard's model built from the merged job. Any input gives a picture or an error,
 * never a crash.
 *
 * The input: its first byte gives the number of hosts (1 to 3); the rest is split into
 * documents at ASCII RS bytes (0x1e, as in RFC 7464's JSON text sequences), document j being
 * host j % hosts's answer in round j / hosts (8 rounds at most).
 */
#include <jansson.h>
#include <string.h>
#include "fuzz.h"
#include "cmd/watchjob.h"
#include "present/console.h"
#include "present/dashboard.h"

#define MAX_HOSTS  3
#define MAX_ROUNDS 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;

static void tell(void *ctx, enum finding_event ev, const struct tracked_finding *t)
{
	const struct watch *w = ctx;

	console_finding(devnull, ev, t, w->merged ? w->merged->s.now_ns : 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *specs[MAX_HOSTS] = {"a:1", "b:2", "c:3"};
	struct watch w = {0};
	struct dashboard *d;
	struct dash_info in = {.cmd = "fuzz", .mode = "watch", .dump = ""};
	const uint8_t *p, *end = data + size;
	int n, doc = 0;
	json_t *fs;

	if (!size)
		return 0;
	if (!devnull && !(devnull = fopen("/dev/null", "w")))
		abort();
	n = 1 + data[0] % MAX_HOSTS;
	if (watch_alloc(&w, specs, n))
		abort();
	w.tell = tell;
	w.tell_ctx = &w;
	d = dashboard__new();
	for (p = data + 1; p <= end && doc < n * MAX_ROUNDS; doc++) {
		const uint8_t *q = memchr(p, 0x1e, end - p);
		struct endpoint *e = &w.ep[doc % n];

		if (!q)
			q = end;
		free(e->body);
		e->len = q - p;
		e->body = malloc(e->len + 1);
		if (!e->body)
			abort();
		memcpy(e->body, p, e->len);
		e->err[0] = '\0';
		p = q + 1;
		if (doc % n == n - 1 || p > end) {
			watch_absorb(&w);
			if (w.merged && d) {
				in.cfg = &w.v.cfg;
				dashboard__update(d, &w.merged->s, &w.v.fs, &in, SORT_WORST);
			}
			for (int i = 0; i < n; i++)
				snprintf(w.ep[i].err, sizeof(w.ep[i].err), "no answer");
		}
	}
	if (w.started) {
		char *s;

		fs = jobview_open_findings(&w.v);
		s = json_dumps(fs, JSON_INDENT(1));
		free(s);
		json_decref(fs);
	}
	dashboard__free(d);
	watch_free(&w);
	return 0;
}
