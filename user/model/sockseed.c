// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "model/sockseed.h"
#include "util/grow.h"

int sockseeds_add(struct sockseeds *s, int pid, const struct nt_conn *c)
{
	struct sockseed *e;

	if (sockseeds_find(s, c->ino))
		return 0;
	if (grow(&s->v, &s->cap, s->n, sizeof(*s->v), 64))
		return -ENOMEM;
	e = &s->v[s->n++];
	memset(e, 0, sizeof(*e));
	e->ino = c->ino;
	e->pid = pid;
	e->c = *c;
	e->seen = true;
	return 0;
}

struct sockseed *sockseeds_find(const struct sockseeds *s, uint64_t ino)
{
	for (int i = 0; ino && i < s->n; i++)
		if (s->v[i].ino == ino)
			return &s->v[i];
	return NULL;
}

static uint64_t later(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

bool sockseeds_apply(struct sockseeds *s, struct nt_conn *c)
{
	struct sockseed *e = sockseeds_find(s, c->ino);

	/* a struct sock the BPF side saw start itself (a connect after the attach) is new */
	if (!e || c->first_ns < s->attach_ns || (c->flags & NT_CONN_ACTIVE))
		return false;
	if (e->c.first_ns && e->c.first_ns < c->first_ns)
		c->first_ns = e->c.first_ns;
	c->last_send_ns = later(c->last_send_ns, e->c.last_send_ns);
	c->last_recv_ns = later(c->last_recv_ns, e->c.last_recv_ns);
	c->bytes_sent += e->c.bytes_sent;
	c->bytes_recv += e->c.bytes_recv;
	c->retrans += e->c.retrans;
	if (!c->srtt_us)
		c->srtt_us = e->c.srtt_us;
	if (!c->snd_cwnd)
		c->snd_cwnd = e->c.snd_cwnd;
	e->in_map = true;
	return true;
}

void sockseeds_refresh(struct sockseed *e, const struct nt_conn *v)
{
	uint64_t first = e->c.first_ns, ls = e->c.last_send_ns, lr = e->c.last_recv_ns;

	e->c = *v;
	e->c.tgid = e->c.tid = e->pid;
	e->c.first_ns = e->c.state_ns = first;
	/* tcp_info's ages are in milliseconds (jiffies): a date never moves back by rounding */
	e->c.last_send_ns = v->last_send_ns ? later(ls, v->last_send_ns) : ls;
	e->c.last_recv_ns = v->last_recv_ns ? later(lr, v->last_recv_ns) : lr;
	e->seen = true;
}

void sockseeds_free(struct sockseeds *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}
