/* SPDX-License-Identifier: MIT */
/*
 * The live dashboard (ncursesw): draws the frames tui_layout() makes, changed cells only, and
 * turns keys into UI state and actions. It reads no maps and no /proc.
 */
#ifndef NT_TUI_H
#define NT_TUI_H

#include <stddef.h>
#include "present/tuilayout.h"

enum tui_action {
	TUI_NONE = 0,
	TUI_REDRAW,	   /* the state changed: draw again */
	TUI_SNAPSHOT,	   /* write a snapshot to the dump now */
	TUI_QUIT_STOP_JOB, /* stop the job, trace until it exits */
	TUI_QUIT_DETACH,   /* stop tracing now, leave the job running */
};

struct tui;

/* Take over the terminal (stdout). 0, or -1 with a one-line reason (no terminal, no TERM). */
int tui__open(struct tui **out, char *err, size_t errlen);
/* Give the terminal back as it was; safe to call twice. */
void tui__close(struct tui *t);
int tui__input_fd(const struct tui *t);
struct tui_state *tui__state(struct tui *t);

/* Read the pending keys; m is what is on screen (for selection bounds). */
enum tui_action tui__keys(struct tui *t, const struct tui_model *m, bool job_done);
/* The terminal was resized (SIGWINCH). */
void tui__resize(struct tui *t);
void tui__draw(struct tui *t, const struct tui_model *m);

#endif /* NT_TUI_H */
