/* SPDX-License-Identifier: MIT */
/*
 * Config correlation for a finding: the NCCL settings that govern its wait, as the ranks have
 * them (read by NCCL, else from the environment, else NCCL's default), where the ranks differ,
 * and rule-based hypotheses grounded in what NCCL 2.28 does, most likely first. Pure.
 */
#ifndef NT_EXPLAIN_H
#define NT_EXPLAIN_H

#include "diagnose/finding.h"
#include "model/snapshot.h"

void explain_finding(const struct snapshot *s, struct finding *f);

#endif /* NT_EXPLAIN_H */
