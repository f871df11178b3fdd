/* SPDX-License-Identifier: MIT */
/*
 * The state model of the traced job: processes (with rank identity and allow-listed
 * environment) and connections, fed by ring-buffer events, the conns map and /proc, and turned
 * into a snapshot for the pure parts.
 */
#ifndef NT_MODEL_H
#define NT_MODEL_H

#include <stdbool.h>
#include "trace/ranks.h"
#include "model/snapshot.h"

struct model;

struct model_env {
	char *key;
	char *val;
};

struct model_proc_info {
	struct rank_info ri;
	const struct model_env *env; /* allow-listed entries */
	int nenv;
	uint64_t start_ns;
};

struct model *model__new(void);
void model__free(struct model *m);

/*
 * Process events; ns is the event time. Adding a known pid is a no-op. An exec reads the new
 * environment (rank identity) at once, before the process can be gone.
 */
void model__proc_add(struct model *m, int pid, int ppid, const char *comm, uint64_t ns);
void model__proc_exec(struct model *m, int pid, const char *comm);
void model__proc_exit(struct model *m, int pid, int status, uint64_t ns);

/* A connection as the conns map or a state-change event shows it. */
void model__conn_update(struct model *m, uint64_t sk, const struct nt_conn *c, bool closed);

/*
 * A connection known under id no more, without a close: one the kernel's sock_diag showed
 * before the BPF side had it (attach), now in the conns map under its own id.
 */
void model__conn_forget(struct model *m, uint64_t id);

/*
 * A walk of the kernel's conns map: between begin and end, each model__conn_update() is the
 * map's. The map is the truth of what is open (an entry leaves it at the close): end closes, as
 * of now, every connection the BPF side told of that the walk did not see, whose close record
 * was lost or over the budget. The number closed so.
 */
void model__conns_walk_begin(struct model *m);
int model__conns_walk_end(struct model *m, uint64_t now);

/*
 * Read /proc for the live processes (state, CPU, where they wait, environment once after
 * exec if not read yet), find threads blocked on traced sockets, join connection ends. now is
 * CLOCK_MONOTONIC. Returns the pids whose rank identity just became known, through cb, exited
 * ones too.
 */
void model__refresh(struct model *m, uint64_t now,
		    void (*new_identity)(void *ctx, int pid, const struct model_proc_info *pi),
		    void *ctx);

/* The snapshot points into the model: valid until the next model__ call. */
void model__snapshot(struct model *m, uint64_t now, struct snapshot *out);
const struct model_proc_info *model__proc_info(const struct model *m, int pid);
int model__live_procs(const struct model *m);

#endif /* NT_MODEL_H */
