/* SPDX-License-Identifier: MIT */
/*
 * Private to trace/: between stacks.c (taking stacks), stacknames.c (naming their frames) and
 * pystack.c (Python stacks).
 */
#ifndef NT_STACKS_PRIV_H
#define NT_STACKS_PRIV_H

#include <elfutils/libdwfl.h>
#include "trace/stacks.h"

/* Module, symbol and offset of fr->pc in dwfl's modules */
void stacks_symbolize(Dwfl *dwfl, struct stack_frame *fr);

/* Why ptrace (or process_vm_readv, which has ptrace's rules) is refused on pid's thread tid */
void stacks_eperm_why(int pid, int tid, char *why, size_t len);

#endif /* NT_STACKS_PRIV_H */
