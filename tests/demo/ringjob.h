/* SPDX-License-Identifier: MIT */
/*
 * What the parts of ringjob (ringjob.c, ringworker.c, ringlauncher.c) share: its limits, exit
 * codes and options, and the messages and clocks of ringjob.c.
 */
#ifndef RINGJOB_H
#define RINGJOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define PROG	  "ringjob"
#define MAX_RANKS 64
/* room for the step header (tag + last step) and a distinct tail tag */
#define MIN_SIZE     24
#define MAX_SIZE     (1L << 30)
#define MAX_SECONDS  1e7
#define MAX_STEPS    1000000000000LL
#define LAST_UNKNOWN UINT64_MAX
#define HELLO_MAGIC  0x52494e474a4f4231ULL /* "RINGJOB1" */
/* NCCL retries refused connects the same way, because peers come up in any order */
#define CONNECT_RETRY_S	 0.05
#define CONNECT_GIVEUP_S 30.0
/*
 * A previous rank that never connects (its launcher failed on another host) fails the job
 * instead of hanging it: after twice the connect's give-up, so that a peer's own failure to
 * connect is the one reported
 */
#define ACCEPT_GIVEUP_S (2 * CONNECT_GIVEUP_S)
/*
 * How long a "lost connection" exit may wait for the exit that caused it: a rank that dies takes
 * its neighbours down within microseconds, and the launcher should blame the culprit, not
 * whichever corpse it happened to reap first.
 */
#define SYMPTOM_GRACE_S 0.25

enum {
	EXIT_FAIL = 1,	  /* a system call failed */
	EXIT_LOST = 2,	  /* a peer went away */
	EXIT_STALL = 3,	  /* --stall-mode exit */
	EXIT_CORRUPT = 5, /* the ring delivered the wrong bytes */
	EXIT_USAGE = 64,  /* EX_USAGE */
};

enum stall_mode {
	STALL_SLEEP,
	STALL_STOP,
	STALL_EXIT,
};

struct opts {
	int ranks;
	double duration;
	uint64_t steps; /* 0: run for --duration */
	size_t size;
	int stall_rank; /* -1: no fault */
	double stall_after;
	double stall_for;
	enum stall_mode stall_mode;
	bool blocking;
	bool quiet;
	/*
	 * A training-like rhythm: step_every seconds of compute after each step (0: back to back);
	 * every rank pauses pause_for seconds after every pause_every / step_every steps (an
	 * evaluation: together, nobody waits); slow_rank takes slow_by x step_every longer a step
	 */
	double step_every, pause_every, pause_for, slow_by;
	int slow_rank;
	/*
	 * A ring across hosts (--hosts, --port, --local-ranks): rank r listens on addr[r] (network
	 * order; 127.0.0.1 by default) at port + r (port 0: any, one host only), and this launcher
	 * starts ranks local_lo..local_hi (default all)
	 */
	uint32_t addr[MAX_RANKS];
	int port;
	int local_lo, local_hi;
};

/* ringjob.c */
__attribute__((format(printf, 1, 2))) void msg_err(const char *fmt, ...);
/* nothing with --quiet */
__attribute__((format(printf, 1, 2))) void msg_info(const char *fmt, ...);
/* the message, then _exit(code) */
__attribute__((format(printf, 2, 3), noreturn)) void job_fail(int code, const char *fmt, ...);
uint64_t clock_real_ns(void);
double clock_mono(void);
struct timespec ts_from_sec(double s);
/* s seconds, however often a signal interrupts the sleep */
void sleep_for(double s);

/* ringworker.c: one rank of the ring (RANK set) */
int worker_main(const struct opts *o);

/* ringlauncher.c: the job (RANK unset), argv the workers' command line */
int launcher_main(const struct opts *o, char **argv);

#endif /* RINGJOB_H */
