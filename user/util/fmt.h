/* SPDX-License-Identifier: MIT */
/* Human formatting of counts, sizes, durations and addresses (pure). */
#ifndef NT_FMT_H
#define NT_FMT_H

#include <stddef.h>
#include <stdint.h>
#include "nccltrace.h"

/* 81234 -> "81k", 1200000 -> "1.2M" */
const char *fmt_count(uint64_t n, char *buf, size_t len);
/* 1536 -> "1.5 KiB" */
const char *fmt_bytes(uint64_t n, char *buf, size_t len);
/* "127.0.0.1:40312" or "[::1]:40312" (source side if src, else destination side) */
const char *fmt_endpoint(const struct nt_tuple *t, int src, char *buf, size_t len);
/* "127.0.0.1:40312->127.0.0.1:40001" */
const char *fmt_tuple(const struct nt_tuple *t, char *buf, size_t len);
/* TCP state name: "ESTABLISHED", ... */
const char *fmt_tcp_state(unsigned int state);
/* syscall name for an x86-64 syscall number, NULL if not in the table */
const char *fmt_syscall(long nr);

/*
 * Numbers (ranks) as ranges, in order and once each: {0..19, 21..31} -> "0-19,21-31", {0,1,3}
 * -> "0,1,3". v is
 * sorted in place. Never cut in the middle of a number: what does not fit ends in "...".
 */
const char *fmt_ranges(int *v, int n, char *buf, size_t len);

/*
 * s made safe to show on a terminal: what a traced process controls (its name, command line,
 * NCCL's WARN text, a dump from elsewhere) must not reach the terminal as a control sequence.
 * C0 controls, DEL, C1 controls (raw or UTF-8 encoded) and bytes that are not valid UTF-8
 * become '?'; a tab becomes a space; valid UTF-8 text stays. Cut at len - 1 bytes, never in the
 * middle of a character. NULL becomes "".
 */
const char *fmt_safe(const char *s, char *buf, size_t len);

#endif /* NT_FMT_H */
