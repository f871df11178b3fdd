/* SPDX-License-Identifier: MIT */
/* Command-line parsing (pure: argv in, options or a one-line error out). */
#ifndef NT_CLI_H
#define NT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nccltrace.h"
#include "util/exits.h"

struct run_opts {
	const char *dump_path;	  /* NULL: nccltrace-<host>-<time>.jsonl */
	double stall_threshold_s; /* -t: the ceiling of the adaptive threshold */
	double min_threshold_s;	  /* --min-threshold: its floor (default 1) */
	bool fixed_threshold;	  /* --fixed-threshold: -t always */
	bool no_tui;
	int verbose;
	const char *user;
	enum nt_attach_mode mode;
	const char *nccl_lib;	 /* --nccl-lib: probe this library from the start */
	bool collectives;	 /* --collectives: a probe per collective (costly) */
	bool tcp_always;	 /* --tcp-hooks always: never detach the per-call TCP hooks */
	const char *listen;	 /* --listen ADDR:PORT: serve /metrics and /state, NULL: off */
	const char *token_file;	 /* --token-file: the bearer token those requests need */
	unsigned budget;	 /* --record-budget: records a second per process and class */
	unsigned ringbuf_kb;	 /* --ringbuf-kb: the ring buffer's size (0: 1024) */
	bool dump_full;		 /* --dump-detail full: every second's snapshot written */
	uint64_t max_dump_bytes; /* --max-dump-bytes: the dump's budget (0: none) */
	char **cmd;		 /* NULL-terminated, points into argv */
	int ncmd;
	bool help;
};

#define CLI_MAX_PIDS 64

/* nccltrace attach [OPTIONS] PID...: run's tracing options, and what attach adds */
struct attach_opts {
	struct run_opts run; /* cmd: the launcher's command line, filled in by attach */
	bool once;	     /* one diagnosis, then detach */
	bool json;	     /* with once: the report's JSON */
	int pids[CLI_MAX_PIDS];
	int npids;
};

struct report_opts {
	bool json;
	const char *html; /* --html OUT: write a self-contained HTML timeline there */
	const char *path; /* the first dump */
	char **paths;	  /* every dump (one job's, one per host: merged), points into argv */
	int npaths;
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
int cli_parse_attach(int argc, char **argv, struct attach_opts *o, char *err, size_t errlen);
int cli_parse_report(int argc, char **argv, struct report_opts *o, char *err, size_t errlen);
int cli_parse_doctor(int argc, char **argv, struct doctor_opts *o, char *err, size_t errlen);

/* Bytes, with an optional K, M, G or T (KiB ...; "M", "MB", "MiB"), at least min; 0 or -1. */
int cli_parse_bytes(const char *s, uint64_t min, uint64_t *out);
/* A positive, finite number of seconds no larger than max; 0 or -1. */
int cli_parse_seconds(const char *s, double max, double *out);

extern const char cli_run_help[];
extern const char cli_main_help[];
/* what starts this nccltrace again: the bundle's script (NCCLTRACE_SELF), else /proc/self/exe */
extern const char *cli_self;
extern const char cli_attach_help[];
extern const char cli_report_help[];
extern const char cli_probes_help[];
extern const char cli_doctor_help[];
extern const char cli_convert_help[];
extern const char cli_cat_help[];

#endif /* NT_CLI_H */
