/* SPDX-License-Identifier: MIT */
/*
 * The trace dump: JSON Lines, one record per line, each written with a single write(2) so a
 * killed tracer still leaves a readable file. First line a header, last line a footer.
 */
#ifndef NT_DUMP_H
#define NT_DUMP_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

struct dump;

/*
 * Create path exclusively (never following a symlink, never overwriting), mode 0640, owned by
 * uid:gid when chown is set. 0 or -errno.
 */
int dump__create(const char *path, bool chown, uid_t uid, gid_t gid, struct dump **out);
/* The same file creation, for the job's output log: the fd (appending), or -errno. */
int dump_create_file(const char *path, bool chown, uid_t uid, gid_t gid);
/* Append one record. 0 or -errno. */
int dump__write(struct dump *d, json_t *rec);
const char *dump__path(const struct dump *d);
void dump__close(struct dump *d);

/* "nccltrace-HOST-YYYYmmdd-HHMMSS.jsonl" */
void dump_default_name(char *buf, size_t len, const char *host, time_t now);

/*
 * Read a dump, calling fn for each record (the record is freed after fn returns). Stops at the
 * first line that is not a JSON object, at a missing or wrong header, or when fn returns
 * non-zero: -1 with "PATH:LINE: what is wrong" in err. 0 on success.
 */
int dump_read(const char *path, int (*fn)(void *ctx, json_t *rec, int line), void *ctx, char *err,
	      size_t errlen);

#endif /* NT_DUMP_H */
