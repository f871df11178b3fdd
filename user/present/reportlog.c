// SPDX-License-Identifier: MIT
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "present/reportlog.h"

static const char *str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* The comm entry whose pointer is ptr ("0x..."), the newest first */
static json_t *comm_of(json_t *comms, const char *ptr)
{
	for (size_t i = json_array_size(comms); ptr && i > 0; i--) {
		json_t *c = json_array_get(comms, i - 1);

		if (!strcmp(str(c, "comm") ?: "", ptr))
			return c;
	}
	return NULL;
}

static void add_init(json_t *l, json_t *rec)
{
	json_t *comms = json_object_get(l, "comms"), *c;
	bool complete = !strcmp(str(rec, "event") ?: "", "complete");

	c = complete ? comm_of(comms, str(rec, "comm")) : NULL;
	if (!c) {
		c = json_pack("{s:O,s:O,s:O,s:O,s:b,s:b}", "comm", json_object_get(rec, "comm"),
			      "comm_id", json_object_get(rec, "comm_id") ?: json_null(), "rank",
			      json_object_get(rec, "rank"), "nranks",
			      json_object_get(rec, "nranks"), "complete", 0, "rings", 0);
		if (!c)
			return;
		json_array_append_new(comms, c);
	}
	if (complete)
		json_object_set_new(c, "complete", json_true());
}

/* channel records of the same peer, transport and side: one entry with its channels */
static void add_channel(json_t *l, json_t *rec)
{
	json_t *tr = json_object_get(l, "transports"), *t;
	size_t i;

	if (!json_is_integer(json_object_get(rec, "from")) ||
	    !json_is_integer(json_object_get(rec, "to")) || !str(rec, "transport"))
		return;
	json_array_foreach(tr, i, t)
	{
		if (json_equal(json_object_get(t, "from"), json_object_get(rec, "from")) &&
		    json_equal(json_object_get(t, "to"), json_object_get(rec, "to")) &&
		    json_equal(json_object_get(t, "transport"),
			       json_object_get(rec, "transport")) &&
		    json_equal(json_object_get(t, "side"), json_object_get(rec, "side"))) {
			json_array_append(json_object_get(t, "channels"),
					  json_object_get(rec, "channel"));
			return;
		}
	}
	t = json_pack("{s:O,s:O,s:O,s:O,s:[O]}", "from", json_object_get(rec, "from"), "to",
		      json_object_get(rec, "to"), "transport", json_object_get(rec, "transport"),
		      "side", json_object_get(rec, "side") ?: json_null(), "channels",
		      json_object_get(rec, "channel") ?: json_null());
	if (t)
		json_array_append_new(tr, t);
}

void reportlog_add(json_t *logs, json_t *rec)
{
	const char *what = str(rec, "what") ?: "";
	json_t *pid = json_object_get(rec, "pid"), *l;
	char key[24];

	if (!json_is_integer(pid))
		return;
	snprintf(key, sizeof(key), "%lld", (long long)json_integer_value(pid));
	l = json_object_get(logs, key);
	if (!l) {
		l = json_pack("{s:[],s:[]}", "comms", "transports");
		json_object_set_new(logs, key, l);
	}
	if (!strcmp(what, "version") && str(rec, "version"))
		json_object_set(l, "version", json_object_get(rec, "version"));
	else if (!strcmp(what, "network") && str(rec, "network"))
		json_object_set(l, "network", json_object_get(rec, "network"));
	else if (!strcmp(what, "init") && json_is_integer(json_object_get(rec, "rank")))
		add_init(l, rec);
	else if (!strcmp(what, "channel"))
		add_channel(l, rec);
	else if (!strcmp(what, "rings_connected")) {
		json_t *c = comm_of(json_object_get(l, "comms"), str(rec, "comm"));

		if (c)
			json_object_set_new(c, "rings", json_true());
	}
}

void reportlog_merge(json_t *ranks, json_t *logs)
{
	const char *key;
	json_t *l;

	json_object_foreach(logs, key, l)
	{
		json_t *r = NULL, *v, *first = json_array_get(json_object_get(l, "comms"), 0);
		long long pid;
		size_t i;

		if (sscanf(key, "%lld", &pid) != 1)
			continue;
		json_array_foreach(ranks, i, v) if (json_integer_value(json_object_get(v, "pid")) ==
						    pid) r = v;
		if (!r && first) {
			/* no RANK in its environment: NCCL's number for it */
			r = json_pack("{s:O,s:I,s:s}", "rank", json_object_get(first, "rank"),
				      "pid", (json_int_t)pid, "rank_source", "NCCL log");
			json_array_append_new(ranks, r);
		}
		if (r)
			json_object_set(r, "nccl_log", l);
	}
}

void reportlog_print(json_t *rank)
{
	json_t *l = json_object_get(rank, "nccl_log"), *c, *t, *ch;
	size_t i, j;

	if (!l)
		return;
	if (str(l, "version") || str(l, "network"))
		printf("      NCCL log: NCCL %s, network %s\n", str(l, "version") ?: "?",
		       str(l, "network") ?: "?");
	json_array_foreach(json_object_get(l, "comms"), i, c)
	{
		printf("      comm %s: rank %lld of %lld, %s, %s\n", str(c, "comm_id") ?: "(split)",
		       (long long)json_integer_value(json_object_get(c, "rank")),
		       (long long)json_integer_value(json_object_get(c, "nranks")),
		       json_is_true(json_object_get(c, "complete")) ? "init complete"
								    : "no Init COMPLETE",
		       json_is_true(json_object_get(c, "rings")) ? "all rings connected"
								 : "no \"Connected all rings\"");
	}
	json_array_foreach(json_object_get(l, "transports"), i, t)
	{
		printf("      via: rank %lld -> rank %lld %s on channel%s",
		       (long long)json_integer_value(json_object_get(t, "from")),
		       (long long)json_integer_value(json_object_get(t, "to")), str(t, "transport"),
		       json_array_size(json_object_get(t, "channels")) > 1 ? "s" : "");
		json_array_foreach(json_object_get(t, "channels"), j, ch)
			printf("%s%lld", j ? "," : " ", (long long)json_integer_value(ch));
		if (str(t, "side") && strcmp(str(t, "side"), "sender"))
			printf(" [%s]", str(t, "side"));
		printf("\n");
	}
}
