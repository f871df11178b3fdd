// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "present/logtail.h"

int logtail_open(struct logtail *t, const char *path)
{
	memset(t, 0, sizeof(*t));
	t->fd = open(path, O_RDONLY | O_CLOEXEC);
	return t->fd < 0 ? -errno : 0;
}

static void push(struct logtail *t)
{
	char *s = strndup(t->part, t->plen);

	if (!s)
		return;
	if (t->n == LOGTAIL_LINES) {
		free(t->line[0]);
		memmove(&t->line[0], &t->line[1], (LOGTAIL_LINES - 1) * sizeof(t->line[0]));
		t->n--;
	}
	t->line[t->n++] = s;
	t->plen = 0;
}

int logtail_poll(struct logtail *t)
{
	char buf[8192];
	ssize_t r;
	int lines = 0;

	if (t->fd < 0)
		return 0;
	while ((r = read(t->fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < r; i++) {
			char c = buf[i];

			if (c == '\n') {
				push(t);
				lines++;
			} else if (c == '\r') {
				t->plen = 0; /* a progress bar redrawing its line */
			} else if (t->plen < LOGTAIL_WIDTH - 1) {
				/* tabs as a blank, other control bytes dropped */
				if (c == '\t')
					c = ' ';
				if ((unsigned char)c >= 32 || c == ' ')
					t->part[t->plen++] = c;
			}
		}
	return lines;
}

void logtail_close(struct logtail *t)
{
	if (t->fd >= 0)
		close(t->fd);
	for (int i = 0; i < t->n; i++)
		free(t->line[i]);
	memset(t, 0, sizeof(*t));
	t->fd = -1;
}
