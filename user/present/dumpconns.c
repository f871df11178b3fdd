// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "present/dumpconns.h"
#include "util/grow.h"

static struct dump_conn *get(struct dump_conns *d, const char *id)
{
	/* each snapshot lists its connections in the same order: the one after the last first */
	if (d->hint < d->n && !strcmp(d->v[d->hint].id, id))
		return &d->v[d->hint++];
	for (int k = 0; k < d->n; k++)
		if (!strcmp(d->v[k].id, id)) {
			d->hint = k + 1;
			return &d->v[k];
		}
	if (grow(&d->v, &d->cap, d->n, sizeof(*d->v), 64))
		return NULL;
	memset(&d->v[d->n], 0, sizeof(d->v[0]));
	snprintf(d->v[d->n].id, sizeof(d->v[0].id), "%s", id);
	d->v[d->n].mi = -1;
	d->hint = d->n + 1;
	return &d->v[d->n++];
}

/* pid's tally; c keeps its index, so a connection finds it at once the next time */
static struct dump_moved *moved(struct dump_conns *d, struct dump_conn *c)
{
	if (c->mi >= 0 && c->mi < d->nm && d->m[c->mi].pid == c->pid)
		return &d->m[c->mi];
	for (int k = 0; k < d->nm; k++)
		if (d->m[k].pid == c->pid) {
			c->mi = k;
			return &d->m[k];
		}
	if (grow(&d->m, &d->capm, d->nm, sizeof(*d->m), 16))
		return NULL;
	d->m[d->nm] = (struct dump_moved){.pid = c->pid};
	c->mi = d->nm;
	return &d->m[d->nm++];
}

int dump_conns_update(struct dump_conns *d, json_t *snapshot)
{
	size_t i;
	json_t *v;

	for (int k = 0; k < d->nm; k++)
		d->m[k].changed = false;
	json_array_foreach(json_object_get(snapshot, "conns"), i, v)
	{
		const char *id = json_string_value(json_object_get(v, "id"));
		long long sent = json_integer_value(json_object_get(v, "bytes_sent")),
			  recv = json_integer_value(json_object_get(v, "bytes_recv")), rise;
		struct dump_conn *c;
		struct dump_moved *m;

		if (!id || json_is_true(json_object_get(v, "listener")))
			continue;
		c = get(d, id);
		if (!c)
			return -ENOMEM;
		c->pid = (int)json_integer_value(json_object_get(v, "pid"));
		rise = (sent >= c->sent ? sent - c->sent : sent) +
		       (recv >= c->recv ? recv - c->recv : recv);
		c->sent = sent;
		c->recv = recv;
		c->retrans = json_integer_value(json_object_get(v, "retrans"));
		if (rise > 0) {
			if (!(m = moved(d, c)))
				return -ENOMEM;
			m->bytes += rise;
			m->changed = true;
		}
	}
	return 0;
}

struct dump_conn_sum dump_conns_of(const struct dump_conns *d, int pid)
{
	struct dump_conn_sum s = {0};

	for (int k = 0; k < d->n; k++)
		if (d->v[k].pid == pid) {
			s.conns++;
			s.sent += d->v[k].sent;
			s.recv += d->v[k].recv;
			s.retrans += d->v[k].retrans;
		}
	return s;
}

void dump_conns_free(struct dump_conns *d)
{
	free(d->v);
	free(d->m);
	memset(d, 0, sizeof(*d));
}
