// SPDX-License-Identifier: MIT
/* `nccltrace report [--json | --html OUT] DUMP`: the command around the report's parts. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cmd/cli.h"
#include "cmd/subcmds.h"
#include "present/html.h"
#include "present/report.h"
#include "present/reportmerge.h"

/* The report of one dump, or of several hosts' dumps of one job merged: text, JSON or HTML */
static int report_paths(char **paths, int n, bool json, const char *html)
{
	char err[512];
	json_t *r = n > 1 ? report_merged(paths, n, err, sizeof(err))
			  : report_findings(paths[0], err, sizeof(err));
	int rc = 0;

	if (r && n == 1) {
		json_t *ranks = report_ranks(paths[0], r, err, sizeof(err));

		if (ranks)
			json_object_set_new(r, "ranks", ranks);
		else
			json_decref(r), r = NULL;
	}
	if (!r) {
		fprintf(stderr, "nccltrace: %s\n", err);
		return EXIT_DATAERR;
	}
	if (html) {
		rc = n > 1 ? html_write_merged(html, r, paths, n, err, sizeof(err))
			   : html_write(html, r, paths[0], err, sizeof(err));
		if (rc)
			fprintf(stderr, "nccltrace: %s\n", err);
		else
			printf("%s written: open it in a browser (it needs nothing else)\n", html);
	} else if (json) {
		json_dumpf(r, stdout, JSON_INDENT(1));
		putchar('\n');
	} else {
		report_print(r);
	}
	json_decref(r);
	return rc;
}

int report_dump(const char *path, bool json, const char *html)
{
	char *p = (char *)path;

	return report_paths(&p, 1, json, html);
}

int report_main(int argc, char **argv)
{
	struct report_opts o;
	char err[512];

	if (cli_parse_report(argc, argv, &o, err, sizeof(err))) {
		fprintf(stderr, "nccltrace: %s\n", err);
		return EXIT_USAGE;
	}
	if (o.help) {
		fputs(cli_report_help, stdout);
		return 0;
	}
	for (int i = 0; i < o.npaths; i++)
		if (access(o.paths[i], R_OK)) {
			fprintf(stderr, "nccltrace: cannot read %s: %s\n", o.paths[i],
				strerror(errno));
			return EXIT_NOINPUT;
		}
	return report_paths(o.paths, o.npaths, o.json, o.html);
}
