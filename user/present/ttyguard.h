/* SPDX-License-Identifier: MIT */
/*
 * The terminal back as it was, however nccltrace ends: on a crash (a signal handler) and on
 * SIGKILL, which no handler sees, through a watcher process that waits for nccltrace to go.
 */
#ifndef NT_TTYGUARD_H
#define NT_TTYGUARD_H

#include <termios.h>

/* Async-signal-safe: the saved modes, the cursor shown, the normal screen, attributes off. */
void ttyguard_restore(int fd, const struct termios *saved);

/*
 * Fork the watcher: it keeps only fd (the terminal) and a pipe from nccltrace, and restores
 * the terminal to saved when the pipe ends without ttyguard_stop() having been called (nccltrace
 * killed). It ignores the terminal's signals (Ctrl-C is nccltrace's). 0, or -errno (no watcher:
 * the dashboard runs all the same).
 */
int ttyguard_start(int fd, const struct termios *saved);

/* The dashboard closed normally: the watcher leaves the terminal alone and exits. */
void ttyguard_stop(void);

#endif /* NT_TTYGUARD_H */
