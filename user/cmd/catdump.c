// SPDX-License-Identifier: MIT
/* `nccltrace cat DUMP`: the dump's records, each snapshot and state whole (present/dumpdelta.h) */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cmd/cli.h"
#include "cmd/subcmds.h"
#include "present/dump.h"

static int print_rec(void *ctx, json_t *rec, int line)
{
	(void)ctx;
	(void)line;
	/* the key order as written: type first */
	if (json_dumpf(rec, stdout, JSON_COMPACT | JSON_ENSURE_ASCII) || putchar('\n') == EOF)
		return -1;
	return 0;
}

int cat_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{},
	};
	char err[512];
	int c, rc;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h') {
			fputs(cli_cat_help, stdout);
			return 0;
		}
		fprintf(stderr, "nccltrace: unknown option '%s'\n", argv[optind - 1]);
		return EXIT_USAGE;
	}
	if (optind != argc - 1) {
		fprintf(stderr, "nccltrace: usage: nccltrace cat DUMP\n");
		return EXIT_USAGE;
	}
	if (access(argv[optind], R_OK)) {
		fprintf(stderr, "nccltrace: cannot read %s: %s\n", argv[optind], strerror(errno));
		return EXIT_NOINPUT;
	}
	rc = dump_read_states(argv[optind], print_rec, NULL, err, sizeof(err));
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "nccltrace: cannot write the records: %s\n", strerror(errno));
		return EXIT_IOERR;
	}
	if (rc) {
		/* the records before the bad one are out: as report, it says where it stopped */
		fprintf(stderr, "nccltrace: %s\n", err);
		return EXIT_DATAERR;
	}
	return 0;
}
