/* SPDX-License-Identifier: MIT */
/*
 * The environment lint behind `nccltrace doctor` and the config findings of `run`: NCCL_*
 * names NCCL does not read (typos, folklore, PyTorch's), values it cannot use, the launcher's
 * rank variables, their consistency across ranks, per-rank differences of NCCL settings, and
 * variables lost to sudo's env_reset. Pure: the host checks come as callbacks.
 */
#ifndef NT_ENVLINT_H
#define NT_ENVLINT_H

#include <stdbool.h>
#include <stddef.h>

struct lint_var {
	const char *key;
	const char *value;
};

/* One environment: this shell, a command's, or one rank's. */
struct lint_env {
	const char *label;  /* "this shell", "rank 1 (pid 4711)" */
	int rank;	    /* -1: not a rank */
	const char *host;   /* NULL: unknown */
	const char *ifaces; /* its host's interfaces ("lo,eth0", a dump's header), NULL: unknown */
	const struct lint_var *v;
	int n;
};

enum lint_sev {
	LINT_INFO = 0, /* worth knowing, not a problem */
	LINT_WARN,
	LINT_ERROR,
};

struct lint_problem {
	enum lint_sev sev;
	char var[64];
	char value[96];
	int rank;  /* -1: not one rank's */
	bool host; /* the host's (its PCI tree), not the environment's: var names the part */
	char what[320];
	char fix[240];
};

struct lint_ctx {
	/* the names NCCL reads, and where they come from ("libnccl.so.2 (2.28.9) at PATH") */
	const char *const *names;
	int nnames;
	const char *names_from;
	/* before launch (doctor, doctor -- CMD, run): rank variables come from the launcher */
	bool launch;
	/* does any local interface match this NCCL_SOCKET_IFNAME entry? NULL: not checked */
	bool (*iface_exists)(void *io, const char *name, bool exact);
	/* is this TCP port taken on this host? NULL: not checked */
	bool (*port_in_use)(void *io, int port);
	/*
	 * GID idx of port 1 of the local HCA hca (NULL: the first): 0 with its type ("RoCE v2",
	 * "IB/RoCE v1") and device name, *ib set on an InfiniBand link; -ENOENT if that GID is
	 * empty or absent; another negative errno when it cannot tell (no HCA). NULL: not checked
	 */
	int (*gid)(void *io, const char *hca, int idx, char *type, size_t tlen, char *dev,
		   size_t dlen, bool *ib);
	void *io;
};

/* Lint the environments; returns how many problems were written to out (at most max). */
int envlint(const struct lint_ctx *c, const struct lint_env *envs, int nenv,
	    struct lint_problem *out, int max);

/*
 * Variables that matter to a job (those the dump keeps: NCCL_*, TORCH_*, CUDA_*, the
 * launcher's) set in the user's shell but absent here: what sudo's env_reset dropped. Appends to out from *n.
 */
void envlint_lost(const struct lint_env *shell, const struct lint_env *here,
		  struct lint_problem *out, int *n, int max);

/* Problems that count (warnings and errors). */
int envlint_count(const struct lint_problem *p, int n);
const char *lint_sev_name(enum lint_sev s);

#endif /* NT_ENVLINT_H */
