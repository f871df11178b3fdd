/* SPDX-License-Identifier: MIT */
/* Findings as nccltrace prints them on stderr, live and at the end. */
#ifndef NT_CONSOLE_H
#define NT_CONSOLE_H

#include <stdio.h>
#include "diagnose/findings.h"

/* "RING-SETUP-BLOCKED" for ring_setup_blocked */
void console_kind_label(enum finding_kind k, char *buf, size_t len);

/*
 * A finding that opened (with its evidence and likely causes) or closed, on f. Updates print
 * nothing: the dump has them.
 */
void console_finding(FILE *f, enum finding_event ev, const struct tracked_finding *t, uint64_t now);

/* One line per finding: what the terminal shows again after the dashboard. */
void console_summary(FILE *f, const struct findings *fs);

#endif /* NT_CONSOLE_H */
