/* SPDX-License-Identifier: MIT */
/*
 * `nccltrace agent` (cmd/agent.c): its state, shared with the pages --listen serves
 * (cmd/agentlisten.c).
 */
#ifndef NT_AGENT_H
#define NT_AGENT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include "trace/jobkey.h"

#define AGENT_SEEN 1024 /* pids already looked at, the last ones */

struct agent_opts {
	const char *dump_dir, *listen, *token_file, *threshold;
	uint64_t budget;
	bool help;
};

struct agent_job {
	struct jobkey key;
	int pid;     /* the process found mapping libnccl */
	int root;    /* its launcher */
	pid_t child; /* its attach; 0 once reaped */
	int out;     /* the attach's stdout and stderr, -1 once closed */
	char line[1024];
	size_t ll;
	char url[96]; /* its tracer's --listen, from its "serving" line */
	char dump[PATH_MAX];
	time_t started;
};

struct agent {
	struct agent_opts o;
	const char *self; /* what to exec for an attach */
	char host[64];
	bool journal; /* stderr is the journal's: lines carry "<N>" priorities */
	struct mmapwatch *mw;
	struct listener *l;
	struct agent_job *j;
	int n, cap;
	int seen[AGENT_SEEN], nseen;
	/*
	 * --listen's pages as last fetched (/state, /metrics), answered again for AGENT_PAGE_TTL:
	 * each fetch asks every job's tracer and waits for them, and pollers must not keep the
	 * agent's loop (its job discovery) waiting
	 */
	struct agent_page {
		char *body;
		const char *type;
		uint64_t made_ns;
	} page[2];
};

/* agent's options (argv[0] "agent"): 0, or -1 with why in err */
int agent_parse_opts(struct agent_opts *o, int argc, char **argv, char *err, size_t errlen);

/*
 * --listen's page of url (/metrics, /state): every job's, fetched from its tracer now, or the
 * one fetched less than AGENT_PAGE_TTL ago
 */
char *agent_page(void *ctx, const char *url, const char *since, const char **type);
/* the pages kept, freed */
void agent_pages_free(struct agent *a);

#endif /* NT_AGENT_H */
