// SPDX-License-Identifier: MIT
/* `nccltrace convert DUMP... -o TRACE.json`: the command around convert_dumps_sink(). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cmd/cli.h"
#include "cmd/subcmds.h"
#include "present/convert.h"
#include "present/convertmerge.h"

int convert_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{},
	};
	const char *outp = NULL;
	char err[512];
	struct convert_sink *sink;
	size_t n = 0;
	int c, fd, rc;
	FILE *f;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			outp = optarg;
			break;
		case 'h':
			fputs(cli_convert_help, stdout);
			return 0;
		case ':':
			fprintf(stderr, "nccltrace: option '%s' needs a value\n", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			fprintf(stderr, "nccltrace: unknown option '%s'\n", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc || !outp) {
		fprintf(stderr, "nccltrace: usage: nccltrace convert DUMP... -o TRACE.json\n");
		return EXIT_USAGE;
	}
	for (int i = optind; i < argc; i++)
		if (access(argv[i], R_OK)) {
			fprintf(stderr, "nccltrace: cannot read %s: %s\n", argv[i],
				strerror(errno));
			return EXIT_NOINPUT;
		}
	/* several dumps: one job's hosts, on one time axis; the events spilled, not held */
	sink = convert_dumps_sink(argv + optind, argc - optind, err, sizeof(err));
	if (!sink) {
		fprintf(stderr, "nccltrace: %s\n", err);
		return EXIT_DATAERR;
	}
	fd = open(outp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		fprintf(stderr, "nccltrace: cannot write %s: %s\n", outp, strerror(errno));
		if (fd >= 0)
			close(fd);
		convert_sink_free(sink);
		return EXIT_CANTCREAT;
	}
	rc = convert_sink_write(sink, f, &n, err, sizeof(err));
	convert_sink_free(sink);
	if (fclose(f) || rc) {
		fprintf(stderr, "nccltrace: cannot write %s%s%s\n", outp, rc ? ": " : "",
			rc ? err : "");
		return EXIT_IOERR;
	}
	printf("%zu trace events written to %s; open it in https://ui.perfetto.dev\n", n, outp);
	return 0;
}
