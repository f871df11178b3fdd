/* SPDX-License-Identifier: MIT */
/* The last lines of a growing file (the job's captured output), read as it grows. */
#ifndef NT_LOGTAIL_H
#define NT_LOGTAIL_H

#define LOGTAIL_LINES 300
#define LOGTAIL_WIDTH 240

struct logtail {
	int fd;
	char *line[LOGTAIL_LINES]; /* oldest first */
	int n;
	char part[LOGTAIL_WIDTH]; /* a line not ended yet */
	int plen;
};

/* 0 or -errno. */
int logtail_open(struct logtail *t, const char *path);
/* Read what was added; returns the number of new complete lines. */
int logtail_poll(struct logtail *t);
void logtail_close(struct logtail *t);

#endif /* NT_LOGTAIL_H */
