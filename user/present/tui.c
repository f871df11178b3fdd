// SPDX-License-Identifier: MIT
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>
#include "present/tui.h"
#include "present/ttyguard.h"

struct tui {
	SCREEN *scr;
	struct tui_state st;
	struct tui_frame cur, prev; /* prev: what the terminal shows */
	bool open;
};

/* For the crash path: the terminal as it was, restored without curses. */
static struct termios saved_tios;
static bool saved_ok;

static void crash_restore(int sig)
{
	ttyguard_restore(STDOUT_FILENO, saved_ok ? &saved_tios : NULL);
	signal(sig, SIG_DFL);
	raise(sig);
}

static const short pair_fg[TA_MAX] = {
	[TA_NORMAL] = -1,	  [TA_TITLE] = COLOR_CYAN,
	[TA_CULPRIT] = COLOR_RED, [TA_WAITING] = COLOR_YELLOW,
	[TA_GOOD] = COLOR_GREEN,  [TA_DIM] = -1,
	[TA_SELECT] = -1,	  [TA_BAR] = -1,
};

static attr_t attr_of(uint8_t a)
{
	attr_t x = A_NORMAL;

	if (a >= TA_MAX)
		return x;
	if (has_colors() && pair_fg[a] != -1)
		x |= COLOR_PAIR(a);
	switch (a) {
	case TA_TITLE:
	case TA_CULPRIT:
		x |= A_BOLD;
		break;
	case TA_DIM:
		x |= A_DIM;
		break;
	case TA_SELECT:
	case TA_BAR:
		x |= A_REVERSE;
		break;
	default:
		break;
	}
	return x;
}

static int alloc_frames(struct tui *t)
{
	int h, w;

	getmaxyx(stdscr, h, w);
	tui_frame_free(&t->cur);
	tui_frame_free(&t->prev);
	if (tui_frame_alloc(&t->cur, w, h) || tui_frame_alloc(&t->prev, w, h))
		return -ENOMEM;
	/* nothing on screen yet: every cell differs */
	memset(t->prev.text, 0, (size_t)w * h);
	return 0;
}

int tui__open(struct tui **out, char *err, size_t errlen)
{
	struct tui *t;
	const char *term = getenv("TERM");

	if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) {
		snprintf(err, errlen, "not a terminal");
		return -1;
	}
	if (!term || !*term || !strcmp(term, "dumb")) {
		snprintf(err, errlen, "TERM is %s", term && *term ? term : "unset");
		return -1;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	saved_ok = tcgetattr(STDOUT_FILENO, &saved_tios) == 0;
	/* SIGKILL runs no handler: a watcher puts the terminal back then */
	if (saved_ok)
		ttyguard_start(STDOUT_FILENO, &saved_tios);
	t->scr = newterm(NULL, stdout, stdin);
	if (!t->scr) {
		snprintf(err, errlen, "TERM=%s has no terminfo entry here", term);
		ttyguard_stop();
		free(t);
		return -1;
	}
	set_term(t->scr);
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	if (has_colors()) {
		start_color();
		use_default_colors();
		for (int a = 1; a < TA_MAX; a++)
			if (pair_fg[a] != -1)
				init_pair(a, pair_fg[a], -1);
	}
	signal(SIGSEGV, crash_restore);
	signal(SIGBUS, crash_restore);
	signal(SIGABRT, crash_restore);
	signal(SIGFPE, crash_restore);
	t->st.selected = 0;
	t->open = true;
	if (alloc_frames(t)) {
		tui__close(t);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	*out = t;
	return 0;
}

void tui__close(struct tui *t)
{
	if (!t)
		return;
	if (t->open) {
		curs_set(1);
		endwin();
		delscreen(t->scr);
		ttyguard_stop();
		t->open = false;
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		signal(SIGABRT, SIG_DFL);
		signal(SIGFPE, SIG_DFL);
	}
	tui_frame_free(&t->cur);
	tui_frame_free(&t->prev);
	free(t);
}

int tui__input_fd(const struct tui *t)
{
	(void)t;
	return STDIN_FILENO;
}

struct tui_state *tui__state(struct tui *t)
{
	return &t->st;
}

void tui__resize(struct tui *t)
{
	struct winsize ws;

	/* resizeterm() queues a KEY_RESIZE: only when the size really changed */
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col &&
	    is_term_resized(ws.ws_row, ws.ws_col))
		resizeterm(ws.ws_row, ws.ws_col);
	clear();
	alloc_frames(t);
}

void tui__draw(struct tui *t, const struct tui_model *m)
{
	struct tui_frame *c = &t->cur, *p = &t->prev;
	struct tui_frame tmp;

	if (!c->text)
		return;
	tui_layout(m, &t->st, c);
	/* only the cells that changed */
	for (int y = 0; y < c->h; y++)
		for (int x = 0; x < c->w; x++) {
			size_t i = (size_t)y * c->w + x;

			if (c->text[i] == p->text[i] && c->attr[i] == p->attr[i])
				continue;
			/* the last cell: writing it would scroll on some terminals */
			if (y == c->h - 1 && x == c->w - 1)
				continue;
			mvaddch(y, x, (chtype)(unsigned char)c->text[i] | attr_of(c->attr[i]));
		}
	refresh();
	tmp = *p;
	*p = *c;
	*c = tmp;
}

static void scroll_by(struct tui_state *st, const struct tui_model *m, int d)
{
	if (st->focus == PANE_FINDINGS) {
		st->selected += d;
		if (st->selected >= m->nfindings)
			st->selected = m->nfindings - 1;
		if (st->selected < 0)
			st->selected = 0;
		st->scroll[PANE_FINDINGS] = st->selected;
		return;
	}
	/* the log scrolls back from its end */
	if (st->focus == PANE_LOG)
		d = -d;
	st->scroll[st->focus] += d;
	if (st->scroll[st->focus] < 0)
		st->scroll[st->focus] = 0;
}

enum tui_action tui__keys(struct tui *t, const struct tui_model *m, bool job_done)
{
	struct tui_state *st = &t->st;
	enum tui_action act = TUI_NONE;
	int ch;

	while ((ch = getch()) != ERR) {
		act = act == TUI_NONE ? TUI_REDRAW : act;
		st->status[0] = '\0';
		if (st->confirm_quit) {
			if (ch == 'y' || ch == 'Y')
				return TUI_QUIT_STOP_JOB;
			if (ch == 'n' || ch == 'N')
				return TUI_QUIT_DETACH;
			if (ch == 27 || ch == 'q')
				st->confirm_quit = false;
			continue;
		}
		switch (ch) {
		case 'q':
		case 'Q':
			if (job_done)
				return TUI_QUIT_DETACH;
			st->confirm_quit = true;
			break;
		case 'p':
			st->paused = !st->paused;
			break;
		case 's':
			st->sort = (st->sort + 1) % SORT_MAX;
			break;
		case '\t':
			st->focus = (st->focus + 1) % PANE_MAX;
			break;
		case KEY_BTAB:
			st->focus = (st->focus + PANE_MAX - 1) % PANE_MAX;
			break;
		case KEY_UP:
		case 'k':
			scroll_by(st, m, -1);
			break;
		case KEY_DOWN:
		case 'j':
			scroll_by(st, m, 1);
			break;
		case KEY_PPAGE:
			scroll_by(st, m, -10);
			break;
		case KEY_NPAGE:
			scroll_by(st, m, 10);
			break;
		case '\n':
		case '\r':
		case KEY_ENTER:
			if (st->view != VIEW_MAIN) {
				st->view = VIEW_MAIN;
			} else if (st->focus == PANE_RANKS && m) {
				/* the group at the top of the pane, one by one; again: grouped */
				const struct tui_rank *r =
					st->scroll[PANE_RANKS] < m->nranks
						? &m->ranks[st->scroll[PANE_RANKS]]
						: NULL;

				if (r && r->group)
					st->expanded = r->group_id;
				else if (st->expanded)
					st->expanded = 0;
				else
					snprintf(st->status, sizeof(st->status),
						 "no group of ranks here (Tab: another pane)");
			} else if (m && m->nfindings)
				st->view = VIEW_DETAIL;
			else
				snprintf(st->status, sizeof(st->status), "no finding to show");
			break;
		case 27:
			st->view = VIEW_MAIN;
			break;
		case '?':
		case 'h':
			st->view = st->view == VIEW_HELP ? VIEW_MAIN : VIEW_HELP;
			break;
		case 'd':
			snprintf(st->status, sizeof(st->status), "snapshot written to the dump");
			act = TUI_SNAPSHOT;
			break;
		case KEY_RESIZE:
			/* SIGWINCH comes through the tracer's signalfd, which calls tui__resize */
			break;
		default:
			break;
		}
	}
	return act;
}
