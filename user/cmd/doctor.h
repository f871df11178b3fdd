/* SPDX-License-Identifier: MIT */
/* `nccltrace doctor`, and the same lint of the launch environment at the start of `run`. */
#ifndef NT_DOCTOR_H
#define NT_DOCTOR_H

#include "diagnose/envlint.h"

/*
 * Lint the environment CMD is about to get (this process's, its `env` prefix applied), with
 * what sudo dropped. Fills out (up to max) and names_from (which names count as real);
 * returns how many problems.
 */
int doctor_launch_check(char **cmd, int ncmd, const char *nccl_lib, struct lint_problem *out,
			int max, char *names_from, size_t len);

#endif /* NT_DOCTOR_H */
