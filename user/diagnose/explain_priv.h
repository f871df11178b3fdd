/* SPDX-License-Identifier: MIT */
/* What explain.c shares with its parts (explainib.c): the ranked hypotheses. Internal. */
#ifndef NT_EXPLAIN_PRIV_H
#define NT_EXPLAIN_PRIV_H

#include "diagnose/finding.h"
#include "model/snapshot.h"

/* Ordered hypotheses: kept sorted by score as they are added. */
struct hyps {
	int score[DIAG_MAX_HYP];
	struct finding *f;
};

/* A hypothesis of score (higher: more likely) into h's finding, in its place */
__attribute__((format(printf, 3, 4))) void hyp(struct hyps *h, int score, const char *fmt_, ...);
/* A process's numeric setting name (what NCCL read, its log, its environment), else def */
long num_of(const struct snap_proc *p, const char *name, long def);

/* InfiniBand: a completion error's status (p->ib_err), an HCA's asynchronous event (p->ib) */
void explain_ib_rules(struct hyps *h, const struct snap_proc *p);
void explain_ib_async_rules(struct hyps *h, const struct snap_proc *p);

/* The culprit's GPU (gpu.c): its figures as evidence, what they suggest as hypotheses */
void explain_gpu_rules(struct hyps *h, const struct snapshot *s, struct finding *f);

#endif /* NT_EXPLAIN_PRIV_H */
