// SPDX-License-Identifier: MIT
/*
 * A snapshot that owns what its makers change between two ticks (pure). The tracer's loop
 * takes ring-buffer records between ticks, and each may grow or move what the last snapshot
 * points into: a process's NCCL settings and warnings (nccl/ncclstate.c's process table, grown
 * by a new process, its settings by a new read), its verbs, a socket's label. /state, /metrics
 * and the dashboard read that snapshot until the next tick: a page that read a label freed by
 * a record crashed the tracer (issue 49). Copied once a tick into one block, they stay as the
 * tick saw them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "model/snapshot.h"

/* where the next copy goes; base NULL: only counts the bytes */
struct cursor {
	char *base;
	size_t at;
};

static const void *put(struct cursor *c, const void *src, size_t n)
{
	size_t at = (c->at + 15) & ~(size_t)15;

	c->at = at + n;
	if (!c->base || !src)
		return src;
	memcpy(c->base + at, src, n);
	return c->base + at;
}

static const char *put_str(struct cursor *c, const char *s)
{
	return s ? put(c, s, strlen(s) + 1) : NULL;
}

/* the copies into c (its base set), or their size (base NULL: s is left as it is) */
static size_t own_pass(struct snapshot *s, struct cursor *c)
{
	for (int i = 0; i < s->nprocs; i++) {
		struct snap_proc *p = &s->procs[i];
		struct snap_proc q = *p;
		struct snap_setting *set;

		set = (struct snap_setting *)put(c, q.set, (size_t)q.nset * sizeof(*q.set));
		for (int k = 0; q.set && k < q.nset; k++) {
			const char *name = put_str(c, q.set[k].name),
				   *value = put_str(c, q.set[k].value);

			if (c->base) {
				set[k].name = name;
				set[k].value = value;
			}
		}
		if (c->base)
			p->set = set;
		q.nccl_retry_addr = put_str(c, q.nccl_retry_addr);
		q.nccl_warning = put_str(c, q.nccl_warning);
		q.nccl_first_warning = put_str(c, q.nccl_first_warning);
		q.ib_err = put(c, q.ib_err, sizeof(*q.ib_err));
		q.ib = put(c, q.ib, sizeof(*q.ib));
		q.host = put_str(c, q.host);
		if (!c->base)
			continue;
		p->nccl_retry_addr = q.nccl_retry_addr;
		p->nccl_warning = q.nccl_warning;
		p->nccl_first_warning = q.nccl_first_warning;
		p->ib_err = q.ib_err;
		p->ib = q.ib;
		p->host = q.host;
	}
	for (int i = 0; i < s->nconns; i++) {
		const char *l = put_str(c, s->conns[i].nccl_label);

		if (c->base)
			s->conns[i].nccl_label = l;
	}
	return c->at;
}

int snapshot_own(struct snapshot *s, struct snap_owned *o)
{
	struct cursor c = {0};
	size_t n = own_pass(s, &c);
	void *block = malloc(n ? n : 1);

	if (!block) {
		/* nothing kept that could dangle: the tick goes on without these facts */
		for (int i = 0; i < s->nprocs; i++) {
			struct snap_proc *p = &s->procs[i];

			p->set = NULL, p->nset = 0;
			p->nccl_retry_addr = p->nccl_warning = p->nccl_first_warning = p->host =
				NULL;
			p->ib_err = NULL, p->ib = NULL;
		}
		for (int i = 0; i < s->nconns; i++)
			s->conns[i].nccl_label = NULL;
		snap_owned_free(o);
		return -ENOMEM;
	}
	c = (struct cursor){.base = block};
	own_pass(s, &c);
	/* the last tick's copies are read no more: every pointer above now points into block */
	snap_owned_free(o);
	o->block = block;
	o->bytes = n;
	return 0;
}

void snap_owned_free(struct snap_owned *o)
{
	free(o->block);
	o->block = NULL;
	o->bytes = 0;
}
