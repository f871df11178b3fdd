/* SPDX-License-Identifier: MIT */
/*
 * The trace dump: JSON Lines, one record per line, each written with a single write(2) so a
 * killed tracer still leaves a readable file (a ".zst" one: zstd frames of a second's records,
 * dumpzst.h). First line a header, last line a footer.
 */
#ifndef NT_DUMP_H
#define NT_DUMP_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "present/dumpring.h"

struct dump;

/*
 * Create path exclusively (never following a symlink, never overwriting), mode 0640, owned by
 * uid:gid when chown is set. 0 or -errno.
 */
int dump__create(const char *path, bool chown, uid_t uid, gid_t gid, struct dump **out);
/* The same file creation, for the job's output log: the fd (appending), or -errno. */
int dump_create_file(const char *path, bool chown, uid_t uid, gid_t gid);
/*
 * The same for a directory (mode 0750; never an existing one, never through a symlink): an fd
 * on it, or -errno.
 */
int dump_create_dir(const char *path, bool chown, uid_t uid, gid_t gid);
/* Append one record. 0 or -errno. */
int dump__write(struct dump *d, json_t *rec);
/*
 * A snapshot at ts, while the job is calm: item, what ops builds its record from (taken: freed
 * here), held in the pre-trigger ring (dumpring.h) for a minute, then written if keep, else
 * dropped without its record ever built; the frames held longer go now. 0 or -errno.
 */
int dump__hold(struct dump *d, void *item, const struct dump_held_ops *ops, size_t bytes,
	       uint64_t ts, bool keep);
/*
 * A frame (snapshot or state) of a calm stretch: written as the budget allows
 * (dump__set_budget), else counted as thinned. 0 or -errno.
 */
int dump__write_calm(struct dump *d, json_t *rec);
/* every held frame to the file, oldest first: something happened, or the trace ends */
int dump__release(struct dump *d);
/*
 * every held frame as if its minute were over: those to keep written, oldest first, the others
 * dropped (thinned): the trace ends and nothing happened
 */
int dump__settle(struct dump *d);
/*
 * A compressed dump (its name ends in ".zst", dumpzst.h): the records since the last frame
 * written as one, a second after the last (now: CLOCK_MONOTONIC); 0 or -errno. Nothing for
 * a plain dump, whose records are written as they come.
 */
int dump__tick(struct dump *d, uint64_t now);
/* a ".zst" dump: dump__tick writes it */
bool dump__compressed(const struct dump *d);
/* the ring's span (default DUMP_RING_SPAN_S); 0 or -ENOMEM */
int dump__set_ring(struct dump *d, unsigned span_s);
/* frames held in the ring so far, and those of them dropped (thinned) */
void dump__frames(const struct dump *d, uint64_t *held, uint64_t *dropped);
const char *dump__path(const struct dump *d);

/*
 * The budget (--max-dump-bytes): the file never grows past it. The calm stretches are thinned
 * first, as it fills: their frames all while half of it is free, then one in 2, 4 and 8 as the
 * free part halves, none in its last sixteenth. Every other record (findings, events, the
 * frames while something happens, the minute before it) is written while it fits, the
 * footer's DUMP_FOOTER_RESERVE bytes kept; the footer always fits. A compressed dump counts
 * its bytes on disk and its next frame at the most it can take; past the budget by that, the
 * frame goes at once and the record is compressed alone, written if that fits. What was left
 * out is counted, and said in the footer.
 */
#define DUMP_FOOTER_RESERVE (16u << 10)
#define DUMP_BUDGET_MIN	    (256u << 10)
struct dump_budget {
	uint64_t bytes;		  /* 0: none */
	uint64_t calm_thinned;	  /* calm frames left out to keep within it */
	uint64_t frames_dropped;  /* frames of busy stretches not written: it was met */
	uint64_t records_dropped; /* other records not written: it was met */
	uint64_t met_ns;	  /* ts_ns of the first record it left out, 0 if none */
};
void dump__set_budget(struct dump *d, uint64_t bytes);
/*
 * The footer's "budget": {"bytes", "written", "calm_thinned", "frames_dropped",
 * "records_dropped", "met_ns" (when it was met; absent if never)}
 */
json_t *dump__budget_json(const struct dump *d);
/* the held frames written (dump__release), then the file closed */
void dump__close(struct dump *d);

/*
 * "nccltrace-HOST-YYYYmmdd-HHMMSS.jsonl", "nccltrace-HOST-JOB-YYYYmmdd-HHMMSS.jsonl" (job not "");
 * seq > 1 adds "-SEQ" before ".jsonl": the next name to try where that one exists (two runs in
 * one second, in one directory)
 */
void dump_default_name(char *buf, size_t len, const char *host, const char *job, time_t now,
		       int seq);
/*
 * The job a dump belongs to, so that one job's dumps (one per host) are found together:
 * "slurm-SLURM_JOB_ID", else "run-TORCHELASTIC_RUN_ID", else "run-ID" of the command's
 * --rdzv-id/--rdzv_id (torchrun), else "". Characters other than [A-Za-z0-9._-] become '_'.
 */
void dump_job_id(char *buf, size_t len, const char *slurm_job_id, const char *run_id,
		 char *const *cmd, int ncmd);

/*
 * Read a dump, calling fn for each record (the record is freed after fn returns). Stops at the
 * first line that is not a JSON object, at a missing or wrong header, or when fn returns
 * non-zero: -1 with "PATH:LINE: what is wrong" in err. 0 on success.
 */
int dump_read(const char *path, int (*fn)(void *ctx, json_t *rec, int line), void *ctx, char *err,
	      size_t errlen);
/*
 * dump_read() passes over the `state` records (the whole snapshot each second, which only a
 * merged report reads: they are most of a dump) without parsing them; this one gives them too.
 */
int dump_read_states(const char *path, int (*fn)(void *ctx, json_t *rec, int line), void *ctx,
		     char *err, size_t errlen);
/*
 * dump_read() without the snapshots too: the events, findings, header and footer, for a reader
 * that wants none of the frames (report's findings, convert's phases)
 */
int dump_read_events(const char *path, int (*fn)(void *ctx, json_t *rec, int line), void *ctx,
		     char *err, size_t errlen);

/*
 * A dump read one record at a time (what `replay` plays as time goes), with the checks of
 * dump_read(): want is what it gives beside the events, findings, header and footer.
 */
/* DUMP_READ_ONLY_STATES: the header, the state records and the footer, nothing else parsed */
enum { DUMP_READ_STATES = 1, DUMP_READ_SNAPSHOTS = 2, DUMP_READ_ONLY_STATES = 4 };
struct dump_reader;
/* NULL with "PATH: why" in err */
struct dump_reader *dump_reader_open(const char *path, int want, char *err, size_t errlen);
/*
 * 1: the next record in *rec (the caller's to decref) and its line in *line; 0: the end (a last
 * record cut short is left out, with a warning, as dump_read() does); -1 with
 * "PATH:LINE: what is wrong" in err. After 0 or -1 it gives 0.
 */
int dump_reader_next(struct dump_reader *r, json_t **rec, int *line, char *err, size_t errlen);
void dump_reader_close(struct dump_reader *r);

#endif /* NT_DUMP_H */
