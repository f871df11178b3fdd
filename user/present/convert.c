// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "present/convert.h"
#include "present/dump.h"
#include "present/dumpconns.h"
#include "util/grow.h"

#define MAX_DEPTH 32

/* An open NCCL phase on a thread. */
struct frame {
	char probe[32];
	char name[64];
	uint64_t ts;
	json_t *args;
};

struct track {
	int pid, tid;
	struct frame f[MAX_DEPTH];
	int depth;
};

/* A collective launch (--collectives): rank, comm, function and its place in the sequence. */
struct launch {
	int pid;
	char comm[24], coll[24];
	long long seq;
	uint64_t ts;
};

/* An event spilled to the sink's file: where, and its time for the final order */
struct spilled {
	double ts;
	uint64_t seq;
	off_t off;
	size_t len;
};

struct convert_sink {
	FILE *spill; /* an unlinked temporary file: the events, compact JSON, as produced */
	off_t size;
	struct spilled *ev;
	int n, cap;
	bool failed; /* a write to the spill failed (disk full): said once, at the end */
};

struct conv {
	bool phases_only; /* for report: the slices and names, nothing else */
	/*
	 * Where finished events go: with a sink, each is spilled there once the next one starts
	 * (its caller fills it in between), so ev holds one event at a time; else ev holds all
	 */
	struct convert_sink *sink;
	void (*place)(json_t *e, void *ctx);
	void *place_ctx;
	json_t *ev;
	uint64_t start, end;
	bool header;
	struct {
		int pid, rank;
	} ranks[1024];
	int nranks;
	struct track *tracks;
	int ntracks, cap_tracks;
	struct dump_conns conns;
	struct {
		int pid;
		uint64_t sent, recv, ts;
	} rate[1024];
	int nrate;
	struct launch *launch;
	int nlaunch, cap_launch;
};

static int rank_of(const struct conv *c, int pid)
{
	for (int i = 0; i < c->nranks; i++)
		if (c->ranks[i].pid == pid)
			return c->ranks[i].rank;
	return -1;
}

/* The trace's pid: the rank where there is one (Perfetto sorts by it), else above any rank. */
static int tpid(const struct conv *c, int pid)
{
	int r = rank_of(c, pid);

	return r >= 0 ? r : 100000 + pid;
}

static double us(const struct conv *c, uint64_t ts)
{
	return ts > c->start ? (double)(ts - c->start) / 1e3 : 0;
}

static void spill(struct convert_sink *s, json_t *e)
{
	char *txt;
	size_t len;

	if (s->failed)
		return;
	txt = json_dumps(e, JSON_COMPACT);
	if (!txt || (s->n == s->cap && grow(&s->ev, &s->cap, s->n, sizeof(*s->ev), 1024))) {
		free(txt);
		s->failed = true;
		return;
	}
	len = strlen(txt);
	if (fwrite(txt, 1, len, s->spill) != len) {
		s->failed = true;
	} else {
		s->ev[s->n] = (struct spilled){json_number_value(json_object_get(e, "ts")),
					       (uint64_t)s->n, s->size, len};
		s->n++;
		s->size += (off_t)len;
	}
	free(txt);
}

/* a sink's pending events, finished: placed, spilled, let go */
static void flush(struct conv *c)
{
	size_t i;
	json_t *e;

	if (!c->sink)
		return;
	json_array_foreach(c->ev, i, e)
	{
		if (c->place)
			c->place(e, c->place_ctx);
		spill(c->sink, e);
	}
	json_array_clear(c->ev);
}

static json_t *event(struct conv *c, const char *ph, const char *name, int pid, int tid,
		     uint64_t ts)
{
	json_t *e;

	flush(c);
	e = json_object();

	json_object_set_new(e, "ph", json_string(ph));
	json_object_set_new(e, "name", json_string(name));
	json_object_set_new(e, "pid", json_integer(tpid(c, pid)));
	json_object_set_new(e, "tid", json_integer(tid));
	json_object_set_new(e, "ts", json_real(us(c, ts)));
	json_array_append_new(c->ev, e);
	return e;
}

static struct track *track_of(struct conv *c, int pid, int tid)
{
	for (int i = 0; i < c->ntracks; i++)
		if (c->tracks[i].pid == pid && c->tracks[i].tid == tid)
			return &c->tracks[i];
	if (grow(&c->tracks, &c->cap_tracks, c->ntracks, sizeof(*c->tracks), 16))
		return NULL;
	memset(&c->tracks[c->ntracks], 0, sizeof(c->tracks[0]));
	c->tracks[c->ntracks].pid = pid;
	c->tracks[c->ntracks].tid = tid;
	return &c->tracks[c->ntracks++];
}

/* Close the top frame of t at ts: a complete slice, nested in the frames below it. */
static void pop(struct conv *c, struct track *t, uint64_t ts)
{
	struct frame *f = &t->f[--t->depth];
	json_t *e = event(c, "X", f->name, t->pid, t->tid, f->ts);

	json_object_set_new(e, "dur", json_real(ts > f->ts ? (double)(ts - f->ts) / 1e3 : 0));
	json_object_set_new(e, "cat", json_string("nccl"));
	json_object_set_new(e, "args", f->args ? f->args : json_object());
	f->args = NULL;
}

static void on_phase(struct conv *c, json_t *rec, uint64_t ts)
{
	const char *probe = json_string_value(json_object_get(rec, "probe"));
	const char *ev = json_string_value(json_object_get(rec, "event"));
	const char *phase = json_string_value(json_object_get(rec, "phase"));
	int pid = (int)json_integer_value(json_object_get(rec, "pid"));
	int tid = (int)json_integer_value(json_object_get(rec, "tid"));
	struct track *t;

	if (!probe || !ev || !phase)
		return;
	/* probes without a return are instants; a launch is kept for the collectives' slices */
	if (!strcmp(probe, "enqueue") || !strcmp(probe, "comm_destroy") ||
	    !strcmp(probe, "comm_abort")) {
		json_t *e, *a;

		if (c->phases_only)
			return;
		e = event(c, "i", phase, pid, tid, ts);
		a = json_deep_copy(rec);

		json_object_set_new(e, "s", json_string("t"));
		json_object_set_new(e, "cat", json_string("nccl"));
		json_object_set_new(e, "args", a);
		if (!strcmp(probe, "enqueue") && json_is_integer(json_object_get(rec, "seq")) &&
		    json_string_value(json_object_get(rec, "comm_hash"))) {
			struct launch *l;

			if (grow(&c->launch, &c->cap_launch, c->nlaunch, sizeof(*c->launch), 64))
				return;
			l = &c->launch[c->nlaunch++];
			l->pid = pid;
			l->ts = ts;
			l->seq = json_integer_value(json_object_get(rec, "seq"));
			snprintf(l->comm, sizeof(l->comm), "%s",
				 json_string_value(json_object_get(rec, "comm_hash")));
			snprintf(l->coll, sizeof(l->coll), "%s",
				 json_string_value(json_object_get(rec, "coll")) ?: "?");
		}
		return;
	}
	t = track_of(c, pid, tid);
	if (!t)
		return;
	if (!strcmp(ev, "enter")) {
		json_t *a = json_deep_copy(rec);

		if (t->depth == MAX_DEPTH)
			pop(c, t, ts);
		/* the record's own bookkeeping is not worth showing twice */
		json_object_del(a, "type");
		json_object_del(a, "ts_ns");
		json_object_del(a, "event");
		snprintf(t->f[t->depth].probe, sizeof(t->f[0].probe), "%s", probe);
		snprintf(t->f[t->depth].name, sizeof(t->f[0].name), "%s", phase);
		t->f[t->depth].ts = ts;
		t->f[t->depth].args = a;
		t->depth++;
		return;
	}
	/* an exit closes its frame, and any left open above it (a lost return) */
	for (int d = t->depth - 1; d >= 0; d--)
		if (!strcmp(t->f[d].probe, probe)) {
			while (t->depth > d)
				pop(c, t, ts);
			return;
		}
}

static void counter(struct conv *c, const char *name, int pid, uint64_t ts, const char *key,
		    double v)
{
	json_t *e = event(c, "C", name, pid, 0, ts);

	json_object_set_new(e, "args", json_pack("{s:f}", key, v));
}

static void on_snapshot(struct conv *c, json_t *rec, uint64_t ts)
{
	json_t *v, *cm;
	size_t i, j;

	if (dump_conns_update(&c->conns, rec))
		return;
	/* bytes/s per process since the previous snapshot */
	for (int r = 0; r < c->nranks; r++) {
		int pid = c->ranks[r].pid, k;
		struct dump_conn_sum sum = dump_conns_of(&c->conns, pid);
		uint64_t sent = sum.sent, recv = sum.recv;

		for (k = 0; k < c->nrate && c->rate[k].pid != pid; k++)
			;
		if (k == c->nrate) {
			if (c->nrate == (int)(sizeof(c->rate) / sizeof(c->rate[0])))
				continue;
			c->rate[c->nrate].pid = pid;
			c->rate[c->nrate].sent = sent;
			c->rate[c->nrate].recv = recv;
			c->rate[c->nrate++].ts = ts;
			continue;
		}
		if (ts > c->rate[k].ts) {
			double dt = (double)(ts - c->rate[k].ts) / 1e9;

			counter(c, "TCP MB/s sent", pid, ts, "MB/s",
				(double)(sent - c->rate[k].sent) / dt / 1e6);
			counter(c, "TCP MB/s received", pid, ts, "MB/s",
				(double)(recv - c->rate[k].recv) / dt / 1e6);
			c->rate[k].sent = sent;
			c->rate[k].recv = recv;
			c->rate[k].ts = ts;
		}
	}
	/* collective counts per communicator: per function, or in all where only that is known */
	json_array_foreach(json_object_get(rec, "procs"), i, v)
	{
		int pid = (int)json_integer_value(json_object_get(v, "pid"));

		json_array_foreach(json_object_get(json_object_get(v, "nccl"), "comms"), j, cm)
		{
			const char *fn, *h = json_string_value(json_object_get(cm, "comm_hash"));
			json_t *n, *args = json_object();
			json_int_t all;
			char name[64];

			json_object_foreach(json_object_get(cm, "collectives"), fn, n)
				json_object_set_new(args, fn, json_integer(json_integer_value(n)));
			all = json_integer_value(json_object_get(cm, "total"));
			if (!json_object_size(args) && all > 0)
				json_object_set_new(args, "all", json_integer(all));
			snprintf(name, sizeof(name), "collectives, comm %.8s", h ? h : "?");
			json_object_set_new(event(c, "C", name, pid, 0, ts), "args", args);
		}
	}
}

static void on_finding(struct conv *c, json_t *rec, uint64_t ts)
{
	const char *ev = json_string_value(json_object_get(rec, "event"));
	const char *kind = json_string_value(json_object_get(rec, "kind"));
	int pid = json_is_integer(json_object_get(rec, "pid"))
			  ? (int)json_integer_value(json_object_get(rec, "pid"))
			  : 0;
	char name[64];
	json_t *e;

	if (!ev || !kind || !strcmp(ev, "update"))
		return;
	snprintf(name, sizeof(name), "%s %s", kind, !strcmp(ev, "open") ? "opened" : "closed");
	e = event(c, "i", name, pid > 0 ? pid : 0, 0, ts);
	/* on the culprit's process, or across the whole trace */
	json_object_set_new(e, "s", json_string(pid > 0 ? "p" : "g"));
	json_object_set_new(e, "cat", json_string("finding"));
	json_object_set_new(e, "args",
			    json_pack("{s:O?,s:O?,s:O?}", "summary",
				      json_object_get(rec, "summary"), "evidence",
				      json_object_get(rec, "evidence"), "hypotheses",
				      json_object_get(rec, "hypotheses")));
}

/*
 * Verbs on the thread that made the call: a QP's creation, each state it is moved to (with
 * the attributes set), its destruction; the HCA's asynchronous events, on the process.
 */
static void on_ib(struct conv *c, json_t *rec, const char *type, uint64_t ts)
{
	int pid = (int)json_integer_value(json_object_get(rec, "pid"));
	int tid = (int)json_integer_value(json_object_get(rec, "tid"));
	const char *ev = json_string_value(json_object_get(rec, "event")) ?: "?";
	json_t *args = json_object(), *e;
	const char *k;
	json_t *v;
	char name[64];

	if (!strcmp(type, "ib_event"))
		snprintf(name, sizeof(name), "%s", ev);
	else if (!strcmp(ev, "modify"))
		snprintf(name, sizeof(name), "QP 0x%llx -> %s",
			 (unsigned long long)json_integer_value(json_object_get(rec, "qp_num")),
			 json_string_value(json_object_get(rec, "to")) ?: "?");
	else
		snprintf(name, sizeof(name), "QP 0x%llx %s",
			 (unsigned long long)json_integer_value(json_object_get(rec, "qp_num")),
			 ev);
	json_object_foreach(rec, k, v) if (strcmp(k, "type") && strcmp(k, "ts_ns") &&
					   strcmp(k, "pid") && strcmp(k, "tid") &&
					   strcmp(k, "probe")) json_object_set(args, k, v);
	e = event(c, "i", name, pid, strcmp(type, "ib_event") ? tid : pid, ts);
	json_object_set_new(e, "s", json_string(strcmp(type, "ib_event") ? "t" : "p"));
	json_object_set_new(e, "cat", json_string("verbs"));
	json_object_set_new(e, "args", args);
}

static int on_record(void *ctx, json_t *rec, int line)
{
	struct conv *c = ctx;
	const char *type = json_string_value(json_object_get(rec, "type"));
	json_t *tsv = json_object_get(rec, "ts_ns");
	uint64_t ts = json_is_integer(tsv) ? (uint64_t)json_integer_value(tsv) : 0;

	(void)line;
	if (!c->header) {
		c->header = true;
		c->start = (uint64_t)json_integer_value(json_object_get(rec, "start_ns"));
		return 0;
	}
	if (!type)
		return 0;
	if (ts > c->end)
		c->end = ts;
	if (!strcmp(type, "rank") && c->nranks < (int)(sizeof(c->ranks) / sizeof(c->ranks[0]))) {
		int pid = (int)json_integer_value(json_object_get(rec, "pid"));
		json_t *e;
		char name[64];

		c->ranks[c->nranks].pid = pid;
		c->ranks[c->nranks++].rank = (int)json_integer_value(json_object_get(rec, "rank"));
		snprintf(name, sizeof(name), "rank %d (pid %d)", rank_of(c, pid), pid);
		e = event(c, "M", "process_name", pid, 0, 0);
		json_object_set_new(e, "args", json_pack("{s:s}", "name", name));
		e = event(c, "M", "process_sort_index", pid, 0, 0);
		json_object_set_new(e, "args", json_pack("{s:i}", "sort_index", rank_of(c, pid)));
		e = event(c, "M", "thread_name", pid, pid, 0);
		json_object_set_new(e, "args", json_pack("{s:s}", "name", "main"));
	} else if (!strcmp(type, "nccl_thread")) {
		const char *role = json_string_value(json_object_get(rec, "role"));
		json_t *e = event(c, "M", "thread_name",
				  (int)json_integer_value(json_object_get(rec, "pid")),
				  (int)json_integer_value(json_object_get(rec, "tid")), 0);

		json_object_set_new(e, "args", json_pack("{s:s}", "name", role ? role : "nccl"));
	} else if (!strcmp(type, "nccl")) {
		on_phase(c, rec, ts);
	} else if (c->phases_only) {
		/* nothing else wanted */
	} else if (!strcmp(type, "snapshot")) {
		on_snapshot(c, rec, ts);
	} else if (!strcmp(type, "finding")) {
		on_finding(c, rec, ts);
	} else if (!strcmp(type, "ib_qp") || !strcmp(type, "ib_event")) {
		on_ib(c, rec, type, ts);
	} else if (!strcmp(type, "proc")) {
		const char *ev = json_string_value(json_object_get(rec, "event"));
		int pid = (int)json_integer_value(json_object_get(rec, "pid"));
		char name[48];
		json_t *e;

		snprintf(name, sizeof(name), "%s %s", ev ? ev : "?",
			 json_string_value(json_object_get(rec, "comm")) ?: "");
		e = event(c, "i", name, pid, pid, ts);
		json_object_set_new(e, "s", json_string("p"));
		json_object_set_new(e, "cat", json_string("process"));
	} else if (!strcmp(type, "footer")) {
		c->end = ts > c->end ? ts : c->end;
	}
	return 0;
}

/*
 * A collective on rank r: from its launch until the last rank launched the same one (the
 * earliest it can finish): how long this rank waited for the others.
 */
static int launch_cmp(const void *a, const void *b)
{
	const struct launch *x = a, *y = b;
	int r = strcmp(x->comm, y->comm);

	if (!r)
		r = strcmp(x->coll, y->coll);
	if (!r)
		r = x->seq < y->seq ? -1 : x->seq > y->seq;
	return r;
}

static void collective_slices(struct conv *c)
{
	/* grouped by collective (sorted), so each group's last launch is found in one pass */
	if (!c->nlaunch)
		return;
	qsort(c->launch, c->nlaunch, sizeof(c->launch[0]), launch_cmp);
	for (int g = 0, end; g < c->nlaunch; g = end) {
		uint64_t last = 0;

		for (end = g; end < c->nlaunch && !launch_cmp(&c->launch[g], &c->launch[end]);
		     end++)
			last = c->launch[end].ts > last ? c->launch[end].ts : last;
		for (int i = g; i < end; i++) {
			const struct launch *l = &c->launch[i];
			char name[48], id[64];
			json_t *b, *e;

			snprintf(name, sizeof(name), "%s #%lld", l->coll, l->seq);
			snprintf(id, sizeof(id), "%s:%s:%lld:%d", l->comm, l->coll, l->seq, l->pid);
			b = event(c, "b", name, l->pid, l->pid, l->ts);
			json_object_set_new(b, "cat", json_string("collective"));
			json_object_set_new(b, "id", json_string(id));
			json_object_set_new(b, "args", json_pack("{s:s}", "comm", l->comm));
			e = event(c, "e", name, l->pid, l->pid, last);
			json_object_set_new(e, "cat", json_string("collective"));
			json_object_set_new(e, "id", json_string(id));
		}
	}
}

struct ev_ref {
	double ts;
	size_t i;
	json_t *e;
};

static int by_ts(const void *a, const void *b)
{
	const struct ev_ref *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* In time order (stable): slices are emitted when they close, after what they contain. */
static json_t *sorted(json_t *ev)
{
	size_t n = json_array_size(ev);
	struct ev_ref *r = malloc((n ? n : 1) * sizeof(*r));
	json_t *out;

	if (!r)
		return json_incref(ev);
	for (size_t i = 0; i < n; i++) {
		r[i].e = json_array_get(ev, i);
		r[i].ts = json_number_value(json_object_get(r[i].e, "ts"));
		r[i].i = i;
	}
	qsort(r, n, sizeof(*r), by_ts);
	out = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append(out, r[i].e);
	free(r);
	return out;
}

/* path's events into c->ev (or c->sink): 0, or -1 with the reason in err */
static int convert_run(struct conv *c, const char *path, char *err, size_t errlen)
{
	c->ev = json_array();
	/* phases only: no snapshot is read */
	if (!c->ev ||
	    (c->phases_only ? dump_read_events : dump_read)(path, on_record, c, err, errlen))
		return -1;
	/* phases still open at the end of the trace end there */
	for (int i = 0; i < c->ntracks; i++)
		while (c->tracks[i].depth)
			pop(c, &c->tracks[i], c->end);
	collective_slices(c);
	flush(c);
	return 0;
}

static void conv_free(struct conv *c)
{
	for (int i = 0; i < c->ntracks; i++)
		for (int d = 0; d < c->tracks[i].depth; d++)
			json_decref(c->tracks[i].f[d].args);
	json_decref(c->ev);
	free(c->tracks);
	dump_conns_free(&c->conns);
	free(c->launch);
	free(c);
}

struct convert_sink *convert_sink_new(char *err, size_t errlen)
{
	struct convert_sink *s = calloc(1, sizeof(*s));
	const char *dir = getenv("TMPDIR");
	char tmpl[4096];
	int fd = -1;

	/* an unlinked file in $TMPDIR (tmpfile() would ignore it), else /tmp */
	snprintf(tmpl, sizeof(tmpl), "%s/nccltrace-convert-XXXXXX", dir && *dir ? dir : "/tmp");
	if (s && (fd = mkostemp(tmpl, O_CLOEXEC)) >= 0) {
		unlink(tmpl);
		s->spill = fdopen(fd, "w+");
	}
	if (!s || !s->spill) {
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "cannot make a temporary file for the events in %s: %s",
			 dir && *dir ? dir : "/tmp", strerror(errno));
		free(s);
		return NULL;
	}
	return s;
}

int convert_dump_into(struct convert_sink *s, const char *path, void (*place)(json_t *, void *),
		      void *ctx, char *err, size_t errlen)
{
	struct conv *c = calloc(1, sizeof(*c));
	int rc;

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	c->sink = s;
	c->place = place;
	c->place_ctx = ctx;
	rc = convert_run(c, path, err, errlen);
	conv_free(c);
	return rc;
}

static int spilled_cmp(const void *a, const void *b)
{
	const struct spilled *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int convert_sink_write(struct convert_sink *s, FILE *f, size_t *n, char *err, size_t errlen)
{
	size_t cap = 0;
	char *buf = NULL;
	int rc = 0;

	if (s->failed || fflush(s->spill)) {
		snprintf(err, errlen, "cannot keep the events in a temporary file: %s",
			 strerror(errno ? errno : EIO));
		return -1;
	}
	/* in time order (stable): slices are made when they close, after what they contain */
	if (s->n)
		qsort(s->ev, (size_t)s->n, sizeof(*s->ev), spilled_cmp);
	fputs("{\"traceEvents\":[", f);
	for (int i = 0; i < s->n && !rc; i++) {
		const struct spilled *e = &s->ev[i];

		if (e->len + 1 > cap) {
			char *nb = realloc(buf, e->len + 1);

			if (!nb) {
				rc = -1;
				break;
			}
			buf = nb;
			cap = e->len + 1;
		}
		if (pread(fileno(s->spill), buf, e->len, e->off) != (ssize_t)e->len) {
			rc = -1;
			break;
		}
		if ((i && fputc(',', f) == EOF) || fwrite(buf, 1, e->len, f) != e->len)
			rc = -1;
	}
	fputs("],\"displayTimeUnit\":\"ms\"}", f);
	free(buf);
	if (rc)
		snprintf(err, errlen, "cannot copy the events: %s", strerror(errno ? errno : EIO));
	*n = (size_t)s->n;
	return rc;
}

void convert_sink_free(struct convert_sink *s)
{
	if (!s)
		return;
	fclose(s->spill);
	free(s->ev);
	free(s);
}

json_t *convert_dump(const char *path, bool phases_only, char *err, size_t errlen)
{
	struct conv *c = calloc(1, sizeof(*c));
	json_t *out = NULL;

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->phases_only = phases_only;
	if (!convert_run(c, path, err, errlen))
		out = json_pack("{s:o,s:s}", "traceEvents", sorted(c->ev), "displayTimeUnit", "ms");
	conv_free(c);
	return out;
}
