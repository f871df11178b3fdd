// SPDX-License-Identifier: MIT
/*
 * `nccltrace agent --listen`: /metrics and /state of every job at once, fetched from each job's
 * tracer (its attach listens on a loopback port of its own) when asked, not before.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/agent.h"
#include "cmd/watchpoll.h"
#include "util/clock.h"

/* "job" label of a job's metrics: its key, escaped as Prometheus label values are */
static void put_label(FILE *f, const struct agent_job *j)
{
	fputs("job=\"", f);
	for (const char *p = j->key.rule; *p; p++)
		fputc(*p, f);
	fputc('=', f);
	for (const char *p = j->key.id; *p; p++) {
		if (*p == '\\' || *p == '"')
			fputc('\\', f);
		if (*p == '\n')
			fputs("\\n", f);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* one job's /metrics into f, its samples with the job label, HELP and TYPE once in all */
static void put_metrics(FILE *f, const struct agent_job *j, char *body, json_t *typed)
{
	for (char *line = strtok(body, "\n"); line; line = strtok(NULL, "\n")) {
		char *brace = strchr(line, '{'), *space = strchr(line, ' ');

		if (line[0] == '#') {
			if (!json_object_get(typed, line)) {
				json_object_set_new(typed, line, json_true());
				fprintf(f, "%s\n", line);
			}
		} else if (brace && (!space || brace < space)) {
			fprintf(f, "%.*s", (int)(brace - line + 1), line);
			put_label(f, j);
			fprintf(f, "%s%s\n", brace[1] == '}' ? "" : ",", brace + 1);
		} else if (space) {
			fprintf(f, "%.*s{", (int)(space - line), line);
			put_label(f, j);
			fprintf(f, "}%s\n", space);
		}
	}
}

/* every live job's tracer asked for path at once; e[i] answers for a->j[i] */
static struct endpoint *fetch_all(struct agent *a, const char *path)
{
	struct endpoint *e = calloc((size_t)a->n + 1, sizeof(*e));
	char err[192];

	if (!e)
		return NULL;
	for (int i = 0; i < a->n; i++)
		e[i].spec = a->j[i].url[0] ? a->j[i].url : "http://127.0.0.1:1";
	if (watchpoll_init(e, a->n, err, sizeof(err)) == 0) {
		for (int i = 0; i < a->n; i++) {
			char *s = strrchr(e[i].url, '/');

			if (s)
				snprintf(s, sizeof(e[i].url) - (size_t)(s - e[i].url), "%s", path);
		}
		watchpoll_round(e, a->n, NULL, 1500);
	}
	return e;
}

#define AGENT_PAGE_TTL_NS (250 * 1000000ULL)

static char *fetch_page(struct agent *a, const char *url, const char **type);

char *agent_page(void *ctx, const char *url, const char *since, const char **type)
{
	struct agent *a = ctx;
	bool metrics = !strcmp(url, "/metrics");
	struct agent_page *pg = &a->page[metrics];
	uint64_t now = clock_mono_ns();

	(void)since; /* its jobs' pages whole: a watch of an agent asks for one of them */
	if (!metrics && strcmp(url, "/state"))
		return NULL;
	if (!pg->body || now - pg->made_ns >= AGENT_PAGE_TTL_NS) {
		free(pg->body);
		pg->body = fetch_page(a, url, &pg->type);
		pg->made_ns = clock_mono_ns();
	}
	if (!pg->body)
		return NULL;
	*type = pg->type;
	return strdup(pg->body);
}

void agent_pages_free(struct agent *a)
{
	for (int i = 0; i < 2; i++) {
		free(a->page[i].body);
		a->page[i].body = NULL;
	}
}

static char *fetch_page(struct agent *a, const char *url, const char **type)
{
	struct endpoint *e;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (!(e = fetch_all(a, url)) || !(f = open_memstream(&buf, &len))) {
		free(e);
		return NULL;
	}
	if (!strcmp(url, "/metrics")) {
		json_t *typed = json_object();
		int live = 0;

		for (int i = 0; i < a->n; i++)
			live += a->j[i].child != 0;
		fprintf(f,
			"# HELP nccltrace_agent_jobs NCCL jobs the agent traces now.\n"
			"# TYPE nccltrace_agent_jobs gauge\nnccltrace_agent_jobs %d\n",
			live);
		for (int i = 0; i < a->n; i++)
			if (e[i].body && !e[i].err[0])
				put_metrics(f, &a->j[i], e[i].body, typed);
		json_decref(typed);
		*type = "text/plain; version=0.0.4";
	} else {
		json_t *jobs = json_array(), *o;

		for (int i = 0; i < a->n; i++) {
			struct agent_job *j = &a->j[i];
			json_t *st =
				e[i].body && !e[i].err[0] ? json_loads(e[i].body, 0, NULL) : NULL;

			json_array_append_new(
				jobs, json_pack("{s:s,s:s,s:i,s:i,s:s,s:I,s:o,s:s?}", "rule",
						j->key.rule, "id", j->key.id, "pid", j->pid,
						"tracer", (int)j->child, "dump", j->dump, "started",
						(json_int_t)j->started, "state", st ?: json_null(),
						"error", st ? NULL : e[i].err));
		}
		o = json_pack("{s:{s:s,s:s,s:s},s:o}", "agent", "host", a->host, "version",
			      NT_VERSION, "dump_dir", a->o.dump_dir, "jobs", jobs);
		json_dumpf(o, f, JSON_COMPACT);
		json_decref(o);
		*type = "application/json";
	}
	watchpoll_free(e, a->n);
	free(e);
	fclose(f);
	return buf;
}
