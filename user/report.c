// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>
#include "cli.h"
#include "dump.h"
#include "report.h"

struct collect {
	json_t *findings; /* array, index = id - 1 where possible */
	json_t *header;
	json_t *footer;
	char *err;
	size_t errlen;
	const char *path;
};

static const char *const required[] = {"kind", "phase", "since_s", "summary", "evidence"};

static int collect(void *ctx, json_t *rec, int line)
{
	struct collect *c = ctx;
	const char *type = json_string_value(json_object_get(rec, "type"));
	json_t *id;
	size_t i;
	json_t *v;

	if (line == 1) {
		c->header = json_incref(rec);
		return 0;
	}
	if (!type) {
		snprintf(c->err, c->errlen, "%s:%d: record without a \"type\"", c->path, line);
		return -1;
	}
	if (strcmp(type, "footer") == 0) {
		c->footer = json_incref(rec);
		return 0;
	}
	if (strcmp(type, "finding") != 0)
		return 0;
	id = json_object_get(rec, "id");
	if (!json_is_integer(id)) {
		snprintf(c->err, c->errlen, "%s:%d: finding without an integer \"id\"", c->path,
			 line);
		return -1;
	}
	for (i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		if (!json_object_get(rec, required[i])) {
			snprintf(c->err, c->errlen, "%s:%d: finding without \"%s\"", c->path, line,
				 required[i]);
			return -1;
		}
	}
	json_array_foreach(c->findings, i, v)
	{
		if (json_integer_value(json_object_get(v, "id")) == json_integer_value(id)) {
			json_t *copy = json_deep_copy(rec);

			json_object_del(copy, "type");
			json_array_set_new(c->findings, i, copy);
			return 0;
		}
	}
	v = json_deep_copy(rec);
	json_object_del(v, "type");
	json_array_append_new(c->findings, v);
	return 0;
}

json_t *report_findings(const char *path, char *err, size_t errlen)
{
	struct collect c = {.findings = json_array(), .err = err, .errlen = errlen, .path = path};
	json_t *out;

	if (dump_read(path, collect, &c, err, errlen)) {
		json_decref(c.findings);
		json_decref(c.header);
		json_decref(c.footer);
		return NULL;
	}
	out = json_object();
	json_object_set_new(out, "findings", c.findings);
	json_object_set_new(out, "complete", json_boolean(c.footer != NULL));
	if (c.header)
		json_object_set(out, "cmd", json_object_get(c.header, "cmd"));
	if (c.footer) {
		json_object_set(out, "exit_status", json_object_get(c.footer, "exit_status"));
		json_object_set(out, "lost", json_object_get(c.footer, "lost"));
	}
	json_decref(c.header);
	json_decref(c.footer);
	return out;
}

/* "settings: NCCL_X=1 (read), NCCL_Y unset": the ranks' values where they disagree */
static void print_settings(json_t *set)
{
	const char *name;
	json_t *v;
	int n = 0;

	json_object_foreach(set, name, v)
	{
		const char *val = json_string_value(json_object_get(v, "value"));
		const char *ranks = json_string_value(json_object_get(v, "ranks"));

		const char *src = json_string_value(json_object_get(v, "source"));

		printf("%s%s", n++ ? ", " : "    settings: ", name);
		if (val)
			printf("=%s (%s)", val, src ? src : "?");
		else
			printf(" unset");
		if (ranks)
			printf(" [%s]", ranks);
	}
	if (n)
		printf("\n");
}

static void print_text(json_t *r)
{
	json_t *fs = json_object_get(r, "findings"), *f, *cmd = json_object_get(r, "cmd"), *e;
	size_t i, j;

	printf("command:");
	json_array_foreach(cmd, i, e) printf(" %s", json_string_value(e));
	printf("\n");
	if (json_is_true(json_object_get(r, "complete")))
		printf("exit status: %lld\n",
		       (long long)json_integer_value(json_object_get(r, "exit_status")));
	else
		printf("the dump has no footer: the tracer did not finish (killed?)\n");
	printf("%zu finding%s\n", json_array_size(fs), json_array_size(fs) == 1 ? "" : "s");
	json_array_foreach(fs, i, f)
	{
		printf("\n#%lld %s (%s) %.1fs: %s\n",
		       (long long)json_integer_value(json_object_get(f, "id")),
		       json_string_value(json_object_get(f, "kind")),
		       json_string_value(json_object_get(f, "event")),
		       json_number_value(json_object_get(f, "since_s")),
		       json_string_value(json_object_get(f, "summary")));
		json_array_foreach(json_object_get(f, "evidence"), j, e)
			printf("    %s\n", json_string_value(e));
		json_array_foreach(json_object_get(f, "hypotheses"), j, e)
			printf("    %s %s\n", j ? "or:" : "likely:", json_string_value(e));
		print_settings(json_object_get(f, "settings"));
	}
	if (json_object_get(r, "lost")) {
		json_t *lost = json_object_get(r, "lost");

		printf("\nlost: %lld ring-buffer drops, %lld connections and %lld processes "
		       "untracked\n",
		       (long long)json_integer_value(json_object_get(lost, "ringbuf_drops")),
		       (long long)json_integer_value(json_object_get(lost, "conns_map_full")),
		       (long long)json_integer_value(json_object_get(lost, "traced_map_full")));
	}
}

int report_main(int argc, char **argv)
{
	struct report_opts o;
	char err[512];
	json_t *r;

	if (cli_parse_report(argc, argv, &o, err, sizeof(err))) {
		fprintf(stderr, "nccltrace: %s\n", err);
		return EXIT_USAGE;
	}
	if (o.help) {
		fputs(cli_report_help, stdout);
		return 0;
	}
	if (access(o.path, R_OK)) {
		fprintf(stderr, "nccltrace: cannot read %s: %s\n", o.path, strerror(errno));
		return EXIT_NOINPUT;
	}
	r = report_findings(o.path, err, sizeof(err));
	if (!r) {
		fprintf(stderr, "nccltrace: %s\n", err);
		return EXIT_DATAERR;
	}
	if (o.json) {
		json_dumpf(r, stdout, JSON_INDENT(1));
		putchar('\n');
	} else {
		print_text(r);
	}
	json_decref(r);
	return 0;
}
