/* SPDX-License-Identifier: MIT */
/*
 * The dashboard's layout: a pure function of what to show (tui_model), the UI's state
 * (tui_state) and the terminal's size, into a frame of cells. The curses side only draws
 * frames; the unit tests read them.
 */
#ifndef NT_TUILAYOUT_H
#define NT_TUILAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#define TUI_MAX_EVIDENCE 8
#define TUI_MAX_HYP	 4
#define TUI_SPARK	 60 /* seconds of each rank's progress history drawn */

enum tui_attr {
	TA_NORMAL = 0,
	TA_TITLE,   /* pane titles and column heads */
	TA_CULPRIT, /* the rank the others wait on */
	TA_WAITING, /* a rank or connection that waits */
	TA_GOOD,
	TA_DIM,
	TA_SELECT, /* the selected line */
	TA_BAR,	   /* header and key bar */
	TA_MAX,
};

struct tui_rank {
	int rank; /* -1: a process without a rank (the launcher) */
	int pid;
	char host[32];
	char state; /* R S D T Z X */
	int gpu;    /* its GPU's NVML index, -1: not known */
	char phase[64];
	double in_phase_s;     /* < 0: not in NCCL */
	char colls[48];	       /* "AllReduce 1043" of its communicators */
	double progress_age_s; /* last byte moved on any connection, < 0 if none */
	bool waiting, culprit;
	/*
	 * A group row (at 64 ranks or more): group ranks that wait on one culprit, as ranges in
	 * members, the longest of them without progress in progress_age_s; group_id names the
	 * group for Enter (the finding's id, > 0)
	 */
	int group, group_id;
	char members[96];
	/* the bytes a second it moved, a second each, oldest first (the last TUI_SPARK s) */
	float spark[TUI_SPARK];
	int nspark;
};

struct tui_conn {
	char from[24];	/* "rank 0" or "pid 123" */
	char to[48];	/* "rank 1" or an address */
	char label[32]; /* NCCL's: "bootstrap", "net (net connect)", "ras"; "" */
	char via[24];	/* the transport NCCL's log names between the two ranks, "" if none */
	double tx_bps, rx_bps;
	double age_s; /* since the last byte either way */
	double eagain_ps;
	uint32_t retrans;
	uint32_t rtt_us;
	uint64_t queue; /* bytes not yet acknowledged */
	bool waiting;
	/* a group row: group connections that wait on one culprit (from is "N ranks") */
	int group, group_id;
	/* the bytes a second it moved, both ways, a second each, oldest first (none: a group) */
	float spark[TUI_SPARK];
	int nspark;
};

struct tui_finding {
	char kind[24]; /* "STALL" */
	double since_s;
	bool open;
	bool early;	/* open at an adaptive threshold below -t: not yet an alarm */
	bool transient; /* closed before -t: the rank went on */
	char summary[512];
	char evidence[TUI_MAX_EVIDENCE][200];
	int nevidence;
	char hyp[TUI_MAX_HYP][320];
	int nhyp;
	char settings[480]; /* "NCCL_X=1 (read), ..." */
};

struct tui_model {
	char cmd[256];
	double elapsed_s;
	int ranks_seen, ranks_expected; /* expected -1: unknown */
	char mode[16];
	uint64_t lost;
	uint64_t suppressed; /* records over the budget: counted, not sent */
	char dump[256];
	bool job_done;
	struct tui_rank *ranks;
	int nranks;
	double spark_max;	/* the most any rank's history holds: the sparklines' top */
	struct tui_conn *conns; /* in the order of the sort key */
	int nconns;
	double conn_spark_max;	      /* the most any connection's history holds */
	struct tui_finding *findings; /* open ones first */
	int nfindings;
	const char *const *log; /* the last lines of the job's output, oldest first */
	int nlog;
};

enum tui_sort {
	SORT_WORST = 0, /* waiting first, then the longest without progress */
	SORT_RATE,	/* bytes/s */
	SORT_EAGAIN,
	SORT_MAX,
};

enum tui_view {
	VIEW_MAIN = 0,
	VIEW_DETAIL, /* one finding */
	VIEW_HELP,
};

enum tui_pane {
	PANE_RANKS = 0,
	PANE_CONNS,
	PANE_FINDINGS,
	PANE_LOG,
	PANE_MAX,
};

struct tui_state {
	enum tui_view view;
	enum tui_sort sort;
	enum tui_pane focus;
	int scroll[PANE_MAX];
	int selected; /* finding */
	int expanded; /* the group shown rank by rank (a finding's id), 0: none */
	bool paused;
	bool confirm_quit; /* asking whether to stop the job too */
	char status[96];   /* a transient message on the key bar */
};

struct tui_frame {
	int w, h;
	char *text;    /* w*h ASCII bytes, row-major */
	uint8_t *attr; /* enum tui_attr per cell */
};

/* 0, or -ENOMEM. */
int tui_frame_alloc(struct tui_frame *f, int w, int h);
void tui_frame_free(struct tui_frame *f);

void tui_layout(const struct tui_model *m, const struct tui_state *st, struct tui_frame *f);

/* Row y of the frame as a string, trailing blanks kept (for tests and debugging). */
const char *tui_frame_row(const struct tui_frame *f, int y, char *buf, int len);

/* Sort the model's connections by the state's key (stable for equal keys). */
void tui_sort_conns(struct tui_conn *c, int n, enum tui_sort key);
const char *tui_sort_name(enum tui_sort key);

#endif /* NT_TUILAYOUT_H */
