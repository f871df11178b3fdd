/* SPDX-License-Identifier: MIT */
/*
 * What NCCL 2.28 reads from the environment, checked against its source and the strings of
 * libnccl.so.2 (reference/nccl-internals.md §5): the real names with the defaults that matter
 * for diagnosis, the names that circulate in tuning guides but that NCCL never reads, and the
 * NCCL_* names that belong to PyTorch. Pure.
 */
#ifndef NT_NCCLPARAMS_H
#define NT_NCCLPARAMS_H

#include <stdbool.h>
#include <stddef.h>

enum param_type {
	PARAM_STRING = 0,
	PARAM_INT,   /* strtoll; anything else reads as 0 with a WARN, or as the default */
	PARAM_BOOL,  /* an int that is 0 or 1 */
	PARAM_LEVEL, /* a topology level: LOC, NVL, PIX, PXB, PHB, SYS, or an old number 0-5 */
};

struct nccl_param {
	const char *name; /* with the NCCL_ prefix */
	enum param_type type;
	const char *def; /* NCCL's default, as text; NULL: computed at run time */
	long long min, max;
	const char *doc; /* what it governs, for findings and doctor */
};

/* NCCL_* names that NCCL does not read, though guides (or PyTorch) use them */
struct nccl_fake {
	const char *name;
	const char *why; /* one line: what is true instead */
	const char *fix; /* what to do */
	bool pytorch;	 /* read by PyTorch, not NCCL */
};

/* The built-in table (NCCL 2.28.9); NULL if name is not a real NCCL setting. */
const struct nccl_param *nccl_param_find(const char *name);
/* Every real name of the built-in table, for doctor's "is it real" check. */
const struct nccl_param *nccl_param_at(int i); /* NULL past the end */
/* A name guides or PyTorch use but NCCL does not read; NULL otherwise. */
const struct nccl_fake *nccl_fake_find(const char *name);

/* A variable with the NCCL_ prefix that is a label, not a setting (NCCL_VERSION of NVIDIA's images) */
bool nccl_label_var(const char *name);

/* The closest real name (edit distance at most 3, or 1/4 of its length); NULL if none. */
const char *nccl_param_closest(const char *name, const char *const *names, int n);
int nccl_edit_distance(const char *a, const char *b);

/*
 * Is value a valid value of p? On false, why says what is wrong (one clause). Level names are
 * those of ncclGetLevel; integers as strtoll reads them, within [min, max].
 */
bool nccl_param_valid(const struct nccl_param *p, const char *value, char *why, size_t len);

/*
 * How long NCCL keeps retrying a refused or unreachable connect before it gives up: retry n
 * sleeps n x sleep_ms, so cnt retries sleep sleep_ms x cnt (cnt+1) / 2 in all (defaults: 34 and
 * 100 ms, about 59.5 s). Each attempt also lasts until the kernel gives up on its SYNs when
 * they are dropped.
 */
double nccl_retry_window_s(long cnt, long sleep_ms);

#endif /* NT_NCCLPARAMS_H */
