/* SPDX-License-Identifier: MIT */
#ifndef NT_VERBSOFFS_H
#define NT_VERBSOFFS_H

#include "nccltrace.h"

/* Offsets of the verbs fields the probes read, from <infiniband/verbs.h>. */
void verbs_offsets_fill(struct nt_verbs_offsets *o);

#endif /* NT_VERBSOFFS_H */
