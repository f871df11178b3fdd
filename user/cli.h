/* SPDX-License-Identifier: MIT */
/* Command-line parsing (pure: argv in, options or a one-line error out). */
#ifndef NT_CLI_H
#define NT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include "nccltrace.h"

/* sysexits(3): nccltrace's own failures */
enum {
	EXIT_USAGE = 64,
	EXIT_DATAERR = 65,
	EXIT_NOINPUT = 66,
	EXIT_UNAVAILABLE = 69,
	EXIT_SOFTWARE = 70,
	EXIT_OSERR = 71,
	EXIT_CANTCREAT = 73,
	EXIT_IOERR = 74,
	EXIT_NOPERM = 77,
	EXIT_CONFIG = 78,
};

struct run_opts {
	const char *dump_path; /* NULL: nccltrace-<host>-<time>.jsonl */
	double stall_threshold_s;
	bool no_tui;
	int verbose;
	const char *user;
	enum nt_attach_mode mode;
	const char *nccl_lib; /* --nccl-lib: probe this library from the start */
	bool collectives;     /* --collectives: a probe per collective (costly) */
	bool tcp_always;      /* --tcp-hooks always: never detach the per-call TCP hooks */
	char **cmd;	      /* NULL-terminated, points into argv */
	int ncmd;
	bool help;
};

struct report_opts {
	bool json;
	const char *html; /* --html OUT: write a self-contained HTML timeline there */
	const char *path;
	bool help;
};

struct doctor_opts {
	bool json;
	const char *nccl_lib; /* the library whose names are real (default: searched) */
	char **cmd;	      /* -- CMD...: lint the environment CMD would get; NULL if none */
	int ncmd;
	char **dumps; /* DUMP...: lint every rank of these dumps */
	int ndumps;
	bool help;
};

/* Both return 0, or -1 with a one-line reason in err. argv[0] is the subcommand. */
int cli_parse_run(int argc, char **argv, struct run_opts *o, char *err, size_t errlen);
int cli_parse_report(int argc, char **argv, struct report_opts *o, char *err, size_t errlen);
int cli_parse_doctor(int argc, char **argv, struct doctor_opts *o, char *err, size_t errlen);

/* A positive, finite number of seconds no larger than max; 0 or -1. */
int cli_parse_seconds(const char *s, double max, double *out);

const char *cli_mode_name(enum nt_attach_mode m);

extern const char cli_run_help[];
extern const char cli_main_help[];
extern const char cli_report_help[];
extern const char cli_probes_help[];
extern const char cli_doctor_help[];
extern const char cli_convert_help[];

#endif /* NT_CLI_H */
