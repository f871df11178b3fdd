// SPDX-License-Identifier: MIT
/* Lookups over what NCCL's log told (pure). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/snapshot.h"

const char *snap_log_env_value(const struct snap_nccl_log *l, const char *name)
{
	for (int i = 0; l && i < l->nenv; i++)
		if (!strcmp(l->env[i].name, name))
			return l->env[i].value;
	return NULL;
}

const char *snap_proc_log_env(const struct snap_proc *p, const char *name)
{
	const struct snap_nccl_log *l = p ? p->nccl_log : NULL;
	const char *level = snap_log_env_value(l, "NCCL_P2P_LEVEL");
	const struct snap_setting *dis = snap_proc_setting(p, "NCCL_P2P_DISABLE"),
				  *lvl = snap_proc_setting(p, "NCCL_P2P_LEVEL");
	bool by_disable = level && !strcmp(level, "LOC") &&
			  !snap_log_env_value(l, "NCCL_P2P_DISABLE") && !(lvl && lvl->value) &&
			  dis && dis->value && strtol(dis->value, NULL, 0) == 1;

	if (by_disable && !strcmp(name, "NCCL_P2P_LEVEL"))
		return NULL;
	if (by_disable && !strcmp(name, "NCCL_P2P_DISABLE"))
		return dis->value;
	return snap_log_env_value(l, name);
}

void snap_log_channels(uint64_t mask, char *buf, size_t len)
{
	int n = __builtin_popcountll(mask), off;
	const char *sep = "";

	off = snprintf(buf, len, "%s ", n == 1 ? "channel" : "channels");
	if (off >= (int)len)
		return;
	if (!mask)
		snprintf(buf + off, len - off, "?");
	for (int c = 0; c < 64 && off < (int)len; c++) {
		int e = c;

		if (!(mask >> c & 1))
			continue;
		while (e + 1 < 64 && (mask >> (e + 1) & 1))
			e++;
		off += e > c ? snprintf(buf + off, len - off, "%s%d-%d", sep, c, e)
			     : snprintf(buf + off, len - off, "%s%d", sep, c);
		sep = ",";
		c = e;
	}
}

bool snap_log_same_comm(const struct snap_log_comm *a, const struct snap_log_comm *b)
{
	return a && b && ((a->id && a->id == b->id) || (a->hash && a->hash == b->hash));
}

static const struct snap_log_comm *same_in(const struct snap_nccl_log *l,
					   const struct snap_log_comm *c)
{
	for (int i = l ? l->ncomm - 1 : -1; i >= 0; i--)
		if (snap_log_same_comm(&l->comm[i], c))
			return &l->comm[i];
	return NULL;
}

static void add_paths(struct snap_log_link *k, const struct snap_nccl_log *l,
		      const struct snap_log_comm *c)
{
	int ci = (int)(c - l->comm);

	for (int i = 0; i < l->npath && k->npath < SNAP_LOG_LINK_PATHS; i++) {
		const struct snap_log_path *p = &l->path[i];

		if (p->comm != ci ||
		    !((p->from == k->ra && p->to == k->rb) || (p->from == k->rb && p->to == k->ra)))
			continue;
		k->path_log[k->npath] = l;
		k->path[k->npath++] = p;
	}
}

bool snap_log_link(const struct snapshot *s, int pid_a, int pid_b, uint64_t comm_hash,
		   struct snap_log_link *out)
{
	const struct snap_proc *a = snapshot_proc(s, pid_a), *b = snapshot_proc(s, pid_b);

	memset(out, 0, sizeof(*out));
	out->ra = out->rb = -1;
	out->pa = a;
	out->la = a ? a->nccl_log : NULL;
	out->lb = b ? b->nccl_log : NULL;
	if (!out->la || !out->la->ncomm)
		return false;
	for (int i = out->la->ncomm - 1; i >= 0 && comm_hash && !out->ca; i--) {
		const struct snap_log_comm *c = &out->la->comm[i];

		if (c->hash == comm_hash || c->id == comm_hash)
			out->ca = c;
	}
	for (int i = out->la->ncomm - 1; i >= 0 && !out->ca; i--)
		if (same_in(out->lb, &out->la->comm[i]))
			out->ca = &out->la->comm[i];
	if (!out->ca)
		out->ca = &out->la->comm[out->la->ncomm - 1];
	out->cb = same_in(out->lb, out->ca);
	out->ra = out->ca->rank;
	if (out->cb)
		out->rb = out->cb->rank;
	else if (b && b->rank >= 0 && b->world_size == out->ca->nranks)
		/* a torchrun job's world communicator: NCCL's rank is RANK */
		out->rb = b->rank;
	if (out->rb < 0)
		return true;
	add_paths(out, out->la, out->ca);
	if (out->cb)
		add_paths(out, out->lb, out->cb);
	return true;
}

void snap_log_link_transports(const struct snap_log_link *k, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < k->npath && off < len; i++) {
		bool seen = false;

		for (int j = 0; j < i && !seen; j++)
			seen = !strcmp(k->path[j]->transport, k->path[i]->transport);
		if (!seen)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? ", " : "",
						k->path[i]->transport);
	}
}

/*
 * The direction NCCL's net transport gave a socket: the receiver listens and accepts, the
 * sender connects (transport/net_socket.cc). Its label says it where a probe named it, else its
 * bytes do where they flowed one way only. -1: either.
 */
static int net_side(const struct snap_conn *c)
{
	if (c->nccl_label && strstr(c->nccl_label, "accept"))
		return SNAP_LOG_RECV;
	if (c->nccl_label && strstr(c->nccl_label, "connect"))
		return SNAP_LOG_SEND;
	if (c->c.bytes_recv && !c->c.bytes_sent)
		return SNAP_LOG_RECV;
	if (c->c.bytes_sent && !c->c.bytes_recv)
		return SNAP_LOG_SEND;
	return -1;
}

bool snap_log_remote_rank(const struct snapshot *s, const struct snap_conn *c,
			  struct snap_log_remote *out)
{
	const struct snap_proc *p = snapshot_proc(s, c->pid);
	const struct snap_nccl_log *l = p ? p->nccl_log : NULL;
	int side = net_side(c), found = 0;

	/* a socket NCCL named other than its net transport's (bootstrap, proxy, RAS) */
	if (!l || (c->nccl_label && strncmp(c->nccl_label, "net", 3)) || c->ras)
		return false;
	for (int i = 0; i < l->npath; i++) {
		const struct snap_log_path *q = &l->path[i];
		const struct snap_log_comm *cm = q->comm >= 0 ? &l->comm[q->comm] : NULL;
		int peer;

		if (!cm || !q->net || (side >= 0 && q->side != side) ||
		    (q->side != SNAP_LOG_SEND && q->side != SNAP_LOG_RECV))
			continue;
		if (q->side == SNAP_LOG_RECV ? q->to != cm->rank : q->from != cm->rank)
			continue;
		peer = q->side == SNAP_LOG_RECV ? q->from : q->to;
		/* two candidates: the log cannot say which one this socket reaches */
		if (found && (out->rank != peer || out->comm != cm))
			return false;
		*out = (struct snap_log_remote){
			.rank = peer,
			.comm = cm,
			.side = found && out->side != q->side ? -1 : q->side,
			.channels = (found ? out->channels : 0) | q->channels};
		found = 1;
	}
	return found;
}
