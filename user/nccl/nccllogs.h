/* SPDX-License-Identifier: MIT */
/*
 * NCCL's own log files of the traced processes, read as they grow: each process's file is found
 * from its NCCL_DEBUG_FILE (nccltrace's directory, where the pid in the name tells whose it is,
 * or the user's own path with %h and %p expanded), read incrementally each tick within a budget,
 * parsed line by line (nccllog.h) into a per-process summary for the snapshot, and each fact
 * handed out as a dump record.
 */
#ifndef NT_NCCLLOGS_H
#define NT_NCCLLOGS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "model/snapshot.h"

/* What one tick may read: per file, and in all (the rest waits for the next tick). */
#define NCCL_LOGS_FILE_TICK  (256 * 1024)
#define NCCL_LOGS_TOTAL_TICK (1024 * 1024)
/* A file that grows past this is not an init-time log: nccltrace stops reading it. */
#define NCCL_LOGS_FILE_MAX (64 * 1024 * 1024)
/* Dump records per file at most (a WARN flood must not flood the dump). */
#define NCCL_LOGS_FILE_RECORDS 8192

struct nccl_logs;

struct nccl_logs_opts {
	int dirfd;	     /* nccltrace's own directory for the job's logs, -1 if none */
	const char *pattern; /* the NCCL_DEBUG_FILE it gave the job there, NULL if none */
	const char *host;    /* this host's name, NCCL's %h */
	/* the job's user: its own files are opened with its rights, and ours must be its */
	bool as_user;
	uid_t uid;
	gid_t gid;
	void (*record)(void *ctx, json_t *rec); /* each fact's dump record (taken over) */
	void *ctx;
};

/* NULL when out of memory. */
struct nccl_logs *nccl_logs__new(const struct nccl_logs_opts *o);
void nccl_logs__free(struct nccl_logs *l);

/* Have the process's log files been looked for already (since its last exec)? */
bool nccl_logs__known(const struct nccl_logs *l, int pid);
/* pid exited: its file is read to its end once more, then closed (or given up if none). */
void nccl_logs__exit(struct nccl_logs *l, int pid);
/* pid exec'd: its new environment is looked at again (`env NCCL_DEBUG_FILE=... CMD`). */
void nccl_logs__exec(struct nccl_logs *l, int pid);

/*
 * A process and its environment's NCCL_DEBUG and NCCL_DEBUG_FILE (NULL: unset); cwd resolves
 * a relative file. Its log is followed if NCCL writes one (a level above VERSION and a file).
 */
void nccl_logs__proc(struct nccl_logs *l, int pid, const char *debug, const char *file,
		     const char *cwd);

/* Read what the files gained since the last call, within the budgets; now is CLOCK_MONOTONIC. */
void nccl_logs__poll(struct nccl_logs *l, uint64_t now);

/* What pid's log told, NULL if nothing: valid until the next call. */
const struct snap_nccl_log *nccl_logs__of(const struct nccl_logs *l, int pid);

/*
 * The commHash of the log's communicators that their commId is not (NCCL before 2.26), from
 * the uprobes' communicators of the same process, rank and nranks where only one matches.
 */
void nccl_logs__match(struct nccl_logs *l, const struct snap_comm *comms, int n);

/*
 * pid's rank as NCCL's log tells it: its first communicator's rank and nranks, unless the
 * process holds several ranks of that communicator (one process driving several GPUs). first
 * is set the first time it is asked for that pid. False if the log tells none.
 */
bool nccl_logs__rank(struct nccl_logs *l, int pid, int *rank, int *nranks, bool *first);

/* How many files are followed, lines read, facts: for -v and the footer. */
void nccl_logs__totals(const struct nccl_logs *l, int *files, uint64_t *lines, uint64_t *facts);

#endif /* NT_NCCLLOGS_H */
