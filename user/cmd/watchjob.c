// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/watchjob.h"
#include "present/statedelta.h"

int watch_alloc(struct watch *w, char **specs, int n)
{
	w->n = n;
	w->ep = calloc(n, sizeof(*w->ep));
	w->cur = calloc(n, sizeof(*w->cur));
	w->host = calloc(n, sizeof(*w->host));
	w->lo = calloc(n, sizeof(*w->lo));
	w->cache = calloc(n, sizeof(*w->cache));
	if (!w->ep || !w->cur || !w->host || !w->lo || !w->cache)
		return -1;
	for (int i = 0; i < n; i++)
		w->ep[i].spec = specs[i];
	return 0;
}

/*
 * An agent's /state ({"jobs":[{rule, id, state}]}): the state of the job named by --job
 * ("RULE=ID"), or of its only job; NULL (with why in the endpoint's err) when it has none or
 * several and none is named. A tracer's /state as it is. o is taken over.
 */
static json_t *agent_job(struct watch *w, int i, json_t *o)
{
	json_t *jobs = json_object_get(o, "jobs"), *j, *pick = NULL;
	char names[160] = "";
	size_t k, len = 0;

	if (!json_is_array(jobs))
		return o;
	json_array_foreach(jobs, k, j)
	{
		const char *rule = json_string_value(json_object_get(j, "rule")) ?: "",
			   *id = json_string_value(json_object_get(j, "id")) ?: "";
		size_t rl = strlen(rule);

		if (w->job ? !strncmp(w->job, rule, rl) && w->job[rl] == '=' &&
				     !strcmp(w->job + rl + 1, id)
			   : json_array_size(jobs) == 1)
			pick = json_object_get(j, "state");
		if (len < sizeof(names))
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s=%s",
						k ? ", " : "", rule, id);
	}
	if (json_is_object(pick))
		json_incref(pick);
	else if (w->job)
		snprintf(w->ep[i].err, sizeof(w->ep[i].err),
			 "an agent without the job %s (its jobs: %s)", w->job,
			 json_array_size(jobs) ? names : "none");
	else
		snprintf(w->ep[i].err, sizeof(w->ep[i].err),
			 "an agent of %zu jobs: name one with --job (%s)", json_array_size(jobs),
			 json_array_size(jobs) ? names : "none yet");
	json_decref(o);
	return json_is_object(pick) ? pick : NULL;
}

/*
 * endpoint i's answer, on the first answer's clock: its snapshot's now, or 0 if it is none.
 * The document is kept in doc[i].
 */
/*
 * The answer as read, a page of what changed made whole against the last one (the next asks
 * since this one); NULL where it cannot be (the next asks for the whole page)
 */
static json_t *whole_page(struct endpoint *e)
{
	json_error_t je;
	json_t *o = json_loadb(e->body, e->len, 0, &je);
	char why[160];

	if (!o)
		return NULL;
	if (!e->dec && !(e->dec = delta_dec_new())) {
		json_decref(o);
		return NULL;
	}
	if (state_delta_take(e->dec, o, why, sizeof(why))) {
		snprintf(e->err, sizeof(e->err), "a page of what changed: %s", why);
		delta_dec_free(e->dec);
		e->dec = NULL;
		e->seq = 0;
		json_decref(o);
		return NULL;
	}
	e->seq = (unsigned long long)json_integer_value(json_object_get(o, "seq"));
	return o;
}

static int64_t take(struct watch *w, int i, json_t **doc)
{
	json_t *o = agent_job(w, i, whole_page(&w->ep[i]));
	json_t *b2r = json_object_get(o, "boot_to_realtime_ns");
	json_t *now = json_object_get(json_object_get(o, "state"), "now_ns");
	const char *host = json_string_value(json_object_get(o, "host"));

	*doc = NULL;
	if (!o || !json_is_integer(b2r) || !json_is_integer(now)) {
		if (o || !w->ep[i].err[0])
			snprintf(w->ep[i].err, sizeof(w->ep[i].err), "not an nccltrace /state");
		json_decref(o);
		return 0;
	}
	if (!w->have_ref) {
		w->ref_b2r = json_integer_value(b2r);
		w->have_ref = true;
	}
	if (!w->started) {
		double t = json_number_value(json_object_get(o, "stall_threshold_s"));

		jobview_init(&w->v, w->threshold_s > 0 ? w->threshold_s : t > 0 ? t : 5);
		w->started = true;
		w->v.tell = w->tell;
		w->v.tell_ctx = w->tell_ctx;
	}
	snprintf(w->host[i], sizeof(w->host[i]), "%s", host ? host : w->ep[i].spec);
	snprintf(w->lo[i], sizeof(w->lo[i]), "%s",
		 json_string_value(json_object_get(o, "loopback")) ?: "");
	/* a hostname twice (two "nodes" of one machine): "#N" after it, as report names it */
	for (int k = 0; k < i; k++)
		if (!strcmp(w->host[k], w->host[i])) {
			snprintf(w->host[i], sizeof(w->host[i]), "%.60s#%d", host ? host : "?",
				 i + 1);
			break;
		}
	*doc = o;
	return json_integer_value(now) + json_integer_value(b2r) - w->ref_b2r;
}

int watch_round(struct watch *w)
{
	int ok = watchpoll_round(w->ep, w->n, w->token_file ? w->token : NULL, 1000);

	watch_absorb(w);
	return ok;
}

/*
 * Every snapshot is taken as of the newest one's time (the tracers' ticks differ by up to
 * 0.2 s): its ages read short by that at most, never long.
 */
void watch_absorb(struct watch *w)
{
	struct snapmerge_in in[w->n];
	int64_t now[w->n], newest = 0;
	json_t *doc[w->n];
	int k = 0;
	char err[160];

	for (int i = 0; i < w->n; i++) {
		now[i] = 0;
		doc[i] = NULL;
		if (!w->ep[i].err[0])
			now[i] = take(w, i, &doc[i]);
		if (now[i] > newest)
			newest = now[i];
	}
	/* the merged view points into the hosts' stores (snapmerge copies no string): both go */
	snapstore_free(w->merged);
	w->merged = NULL;
	for (int i = 0; i < w->n; i++) {
		struct snapstore *last = w->cur[i];

		w->cur[i] = NULL;
		/* a tracer that does not answer is out of the picture, not frozen in it */
		if (!doc[i]) {
			snapjson_cache_free(&w->cache[i]);
			snapstore_free(last);
			continue;
		}
		/* what did not change since the last page is taken from the last store */
		w->cur[i] = snapjson_parse_cached(
			json_object_get(doc[i], "state"),
			newest - json_integer_value(json_object_get(
					 json_object_get(doc[i], "state"), "now_ns")),
			&w->cache[i], err, sizeof(err));
		if (!w->cur[i])
			snapjson_cache_free(&w->cache[i]);
		snapstore_free(last);
		json_decref(doc[i]);
		if (!w->cur[i])
			snprintf(w->ep[i].err, sizeof(w->ep[i].err), "%s", err);
		else
			in[k++] = (struct snapmerge_in){&w->cur[i]->s, w->host[i],
							w->lo[i][0] ? w->lo[i] : NULL};
	}
	if (!k)
		return;
	w->merged = snapmerge(in, k);
	if (w->merged)
		jobview_step(&w->v, w->merged, w->ref_b2r, 0);
}

void watch_free(struct watch *w)
{
	for (int i = 0; w->ep && i < w->n; i++)
		delta_dec_free(w->ep[i].dec);
	if (w->ep)
		watchpoll_free(w->ep, w->n);
	for (int i = 0; w->cur && i < w->n; i++)
		snapstore_free(w->cur[i]);
	for (int i = 0; w->cache && i < w->n; i++)
		snapjson_cache_free(&w->cache[i]);
	free(w->cache);
	snapstore_free(w->merged);
	if (w->started)
		jobview_free(&w->v);
	free(w->ep);
	free(w->cur);
	free(w->host);
	free(w->lo);
}
