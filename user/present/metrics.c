// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "present/metrics.h"
#include "util/fmt.h"

struct out {
	char *buf;
	size_t len, cap;
	bool oom;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		/* no buffer yet: measure only (a NULL plus 0 is no pointer to write to) */
		n = o->buf ? vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap)
			   : vsnprintf(NULL, 0, fmt, ap);
		va_end(ap);
		if (n >= 0 && o->len + (size_t)n < o->cap) {
			o->len += (size_t)n;
			return;
		}
		{
			size_t nc = (o->cap + (size_t)n + 1) * 2;
			char *nb = realloc(o->buf, nc);

			if (!nb) {
				o->oom = true;
				return;
			}
			o->buf = nb;
			o->cap = nc;
		}
	}
}

/* a label value: backslash, double quote and newline escaped (the exposition format's rule) */
static void esc(const char *s, char *buf, size_t len)
{
	size_t k = 0;

	for (; s && *s && k + 3 < len; s++) {
		if (*s == '\\' || *s == '"')
			buf[k++] = '\\', buf[k++] = *s;
		else if (*s == '\n')
			buf[k++] = '\\', buf[k++] = 'n';
		else
			buf[k++] = *s;
	}
	buf[k] = '\0';
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
	put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/*
 * host="a",rank="2",pid="4711"[,gpu="3",UUID="GPU-..."] of a process: its GPU as dcgm-exporter
 * labels it (NVML's index), else its CUDA device from NCCL's log
 */
static void proc_labels(const struct snap_proc *p, const char *host, char *buf, size_t len)
{
	char h[128];
	int n;

	esc(p && p->host ? p->host : host, h, sizeof(h));
	n = snprintf(buf, len, "host=\"%s\",rank=\"%d\",pid=\"%d\"", h, p ? p->rank : -1,
		     p ? (p->host_pid ? p->host_pid : p->pid) : 0);
	if (p && p->gpu && p->gpu->index >= 0 && p->gpu->uuid[0] && n > 0 && (size_t)n < len) {
		esc(p->gpu->uuid, h, sizeof(h));
		snprintf(buf + n, len - (size_t)n, ",gpu=\"%d\",UUID=\"%s\"", p->gpu->index, h);
	} else if (p && p->nccl_log && p->nccl_log->ncomm && p->nccl_log->comm[0].cuda_dev >= 0 &&
		   n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ",gpu=\"%d\"", p->nccl_log->comm[0].cuda_dev);
}

/* the latest byte progress of a process's connections, 0 if none */
static uint64_t last_progress(const struct snapshot *s, int pid)
{
	uint64_t last = 0;

	for (int i = 0; i < s->nconns; i++) {
		const struct nt_conn *c = &s->conns[i].c;

		if (s->conns[i].pid != pid || (c->flags & NT_CONN_LISTENER))
			continue;
		if (c->last_send_ns > last)
			last = c->last_send_ns;
		if (c->last_recv_ns > last)
			last = c->last_recv_ns;
	}
	return last;
}

static void rank_metrics(struct out *o, const struct snapshot *s, const char *host)
{
	char l[320], ph[160];

	family(o, "nccltrace_rank_phase", "gauge",
	       "1 for the NCCL phase a rank is in (phase \"none\" outside NCCL)");
	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_proc *p = &s->procs[i];

		if (p->rank < 0 && !p->nccl)
			continue;
		proc_labels(p, host, l, sizeof(l));
		esc(p->nccl_phase[0] ? p->nccl_phase : "none", ph, sizeof(ph));
		put(o, "nccltrace_rank_phase{%s,phase=\"%s\"} 1\n", l, ph);
	}
	family(o, "nccltrace_rank_seconds_without_progress", "gauge",
	       "seconds since any connection of the rank last moved a byte");
	for (int i = 0; i < s->nprocs; i++) {
		const struct snap_proc *p = &s->procs[i];
		uint64_t last = last_progress(s, p->pid);

		if ((p->rank < 0 && !p->nccl) || !last)
			continue;
		proc_labels(p, host, l, sizeof(l));
		put(o, "nccltrace_rank_seconds_without_progress{%s} %.3f\n", l,
		    s->now_ns > last ? (double)(s->now_ns - last) / 1e9 : 0.0);
	}
	family(o, "nccltrace_rank_collectives_total", "counter",
	       "collectives a rank launched on a communicator, per function (NCCL's counters)");
	for (int i = 0; i < s->ncomms; i++) {
		const struct snap_comm *c = &s->comms[i];
		const struct snap_proc *p = snapshot_proc(s, c->pid);

		if (!c->seq_ok)
			continue;
		proc_labels(p, host, l, sizeof(l));
		for (int f = 0; f < SNAP_NSEQ; f++)
			if (!c->total_only)
				put(o,
				    "nccltrace_rank_collectives_total{%s,comm_hash=\"%016llx\","
				    "coll=\"%s\"} %llu\n",
				    l, (unsigned long long)c->hash, snap_coll_name(f),
				    (unsigned long long)c->seq[f]);
		if (c->total_only)
			put(o,
			    "nccltrace_rank_collectives_total{%s,comm_hash=\"%016llx\",coll="
			    "\"all\"} "
			    "%llu\n",
			    l, (unsigned long long)c->hash, (unsigned long long)c->total);
	}
}

/* each open connection of a rank: one sample per family */
static void conn_metrics(struct out *o, const struct snapshot *s, const char *host)
{
	static const char *const names[] = {
		"nccltrace_conn_sent_bytes_total", "nccltrace_conn_received_bytes_total",
		"nccltrace_conn_idle_seconds", "nccltrace_conn_retransmits_total"};
	static const char *const types[] = {"counter", "counter", "gauge", "counter"};
	static const char *const helps[] = {
		"bytes sent on a connection", "bytes received on a connection",
		"seconds since a connection last moved a byte either way",
		"TCP retransmits on a connection"};

	for (int k = 0; k < 4; k++) {
		family(o, names[k], types[k], helps[k]);
		for (int i = 0; i < s->nconns; i++) {
			const struct snap_conn *c = &s->conns[i];
			const struct snap_proc *p = snapshot_proc(s, c->pid);
			uint64_t last = c->c.last_send_ns > c->c.last_recv_ns ? c->c.last_send_ns
									      : c->c.last_recv_ns;
			char l[320], src[64], dst[64];

			if (c->closed || (c->c.flags & NT_CONN_LISTENER) || !p ||
			    (p->rank < 0 && !p->nccl))
				continue;
			proc_labels(p, host, l, sizeof(l));
			fmt_endpoint(&c->c.t, 1, src, sizeof(src));
			fmt_endpoint(&c->c.t, 0, dst, sizeof(dst));
			put(o, "%s{%s,src=\"%s\",dst=\"%s\"} ", names[k], l, src, dst);
			if (k == 0)
				put(o, "%llu\n", (unsigned long long)c->c.bytes_sent);
			else if (k == 1)
				put(o, "%llu\n", (unsigned long long)c->c.bytes_recv);
			else if (k == 2)
				put(o, "%.3f\n",
				    last && s->now_ns > last ? (double)(s->now_ns - last) / 1e9
							     : 0.0);
			else
				put(o, "%u\n", c->c.retrans);
		}
	}
}

char *metrics_text(const struct snapshot *s, const struct findings *fs, const char *host)
{
	struct out o = {0};
	int open[FINDING_KIND_MAX] = {0}, early[FINDING_KIND_MAX] = {0};
	char h[128];

	rank_metrics(&o, s, host);
	conn_metrics(&o, s, host);
	for (int i = 0; fs && i < fs->n; i++)
		if (fs->v[i].open && fs->v[i].f.kind < FINDING_KIND_MAX)
			(fs->v[i].sure ? open : early)[fs->v[i].f.kind]++;
	esc(host, h, sizeof(h));
	family(&o, "nccltrace_findings", "gauge", "open findings by kind (early ones apart)");
	for (int k = 0; k < FINDING_KIND_MAX; k++)
		put(&o, "nccltrace_findings{host=\"%s\",kind=\"%s\"} %d\n", h,
		    finding_kind_name((enum finding_kind)k), open[k]);
	family(&o, "nccltrace_findings_early", "gauge",
	       "open findings seen at an adaptive threshold below -t, younger than -t");
	for (int k = 0; k < FINDING_KIND_MAX; k++)
		put(&o, "nccltrace_findings_early{host=\"%s\",kind=\"%s\"} %d\n", h,
		    finding_kind_name((enum finding_kind)k), early[k]);
	family(&o, "nccltrace_findings_transient_total", "counter",
	       "early findings that closed before -t: the rank went on");
	put(&o, "nccltrace_findings_transient_total{host=\"%s\"} %d\n", h, fs ? fs->ntransient : 0);
	if (o.oom) {
		free(o.buf);
		return NULL;
	}
	return o.buf;
}
