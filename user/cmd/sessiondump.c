// SPDX-License-Identifier: MIT
/*
 * The session's dump: each record as it happens, and the snapshots at the rate of
 * --dump-detail: each second written at once while something happens, held in the dump's
 * pre-trigger ring while the job runs calm (present/dumpring.h, records.h's rate rule); and its
 * footer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include "cmd/gpuwatch.h"
#include "cmd/session.h"
#include "present/records.h"
#include "util/clock.h"
#include "util/log.h"

/* the trace goes on; only the file stops growing */
static void dump_failed(struct session *s, int err)
{
	pr_warn("cannot write the trace dump %s: %s; tracing continues without it\n",
		dump__path(s->dump), strerror(-err));
	s->dump_failed = true;
}

void session_dump(struct session *s, json_t *rec)
{
	int err;

	if (!rec)
		return;
	if (s->dump && !s->dump_failed) {
		err = dump__write(s->dump, rec);
		if (err)
			dump_failed(s, err);
	}
	json_decref(rec);
}

/*
 * NCCLTRACE_RING_S (the tests' knob, 4-600): the ring's span and with it the calm rate's times
 * (records.h record_rate_scale), so that a test sees a calm job thinned within a minute
 */
void session_ring_scale(struct session *s)
{
	const char *v = getenv("NCCLTRACE_RING_S");
	char *end;
	unsigned long n;

	if (!v || !*v)
		return;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || n < 4 || n > 600 || dump__set_ring(s->dump, (unsigned)n)) {
		pr_warn("NCCLTRACE_RING_S='%s' ignored: expected seconds, 4 to 600\n", v);
		return;
	}
	record_rate_scale((unsigned)n);
}

/*
 * The CPU this thread has used, for the footer's dump_cpu_s: what building and writing the
 * snapshot and state frames costs the tracer (docs/benchmarks.md, "The tracer's CPU")
 */
static uint64_t thread_cpu_ns(void)
{
	struct timespec t;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t))
		return 0;
	return (uint64_t)t.tv_sec * NT_NSEC_PER_SEC + (uint64_t)t.tv_nsec;
}

static json_t *held_record(const void *h)
{
	return record_snapshot_held(h);
}

static const struct dump_held_ops held_snapshot_ops = {
	.record = held_record,
	.free = held_snapshot_free,
};

/*
 * The job ended by itself, each of its processes with exit status 0, no finding open: nothing
 * happened, and the ring's calm minute is no news (a crash, a kill, a finding, the user's stop:
 * the minute before it is written whole)
 */
static bool ended_clean(const struct session *s)
{
	if (!s->job_exited || s->detached || s->job_status || findings_open_count(&s->findings) > 0)
		return false;
	for (int i = 0; i < s->snap.nprocs; i++)
		if (s->snap.procs[i].exited && s->snap.procs[i].exit_status)
			return false;
	return true;
}

static void ring_out(struct session *s, bool settle)
{
	uint64_t t0 = thread_cpu_ns();
	int err;

	if (s->dump && !s->dump_failed &&
	    (err = settle ? dump__settle(s->dump) : dump__release(s->dump)))
		dump_failed(s, err);
	s->dump_cpu_ns += thread_cpu_ns() - t0;
}

/* the trace ends: the ring written whole, or after a clean end only the frames it keeps */
void session_ring_end(struct session *s)
{
	ring_out(s, ended_clean(s));
}

bool session_snapshot(struct session *s, uint64_t now, bool force)
{
	uint64_t t0, last_ns = s->last_snapshot_ns;
	bool asked = s->snapshot_now, busy, end, clean;
	struct held_snapshot *h;
	size_t bytes;
	int err;

	if (!force && !s->snapshot_now && now - s->last_snapshot_ns < NT_NSEC_PER_SEC)
		return false;
	s->last_snapshot_ns = now;
	s->snapshot_now = false;
	if (!s->dump || s->dump_failed)
		return true;
	t0 = thread_cpu_ns();
	/*
	 * The moment a finding opens, all of it: every rank, connection, phase and counter, and
	 * the minute before it from the ring. The job's clean end: its last snapshot, after what
	 * the ring keeps of its calm minute.
	 */
	clean = ended_clean(s);
	end = force && clean;
	busy = (force && !end) || asked || s->opts.dump_full ||
	       record_snapshot_busy(now, s->start_ns, s->last_change_ns,
				    findings_open_count(&s->findings) > 0 ||
					    (s->job_exited && !clean) ||
					    snapshot_in_setup(&s->snap));
	h = record_snapshot_hold(&s->snap, s->nstate, last_ns, &s->last_held, &bytes);
	if (busy || end || !h) {
		ring_out(s, end && !busy);
		session_dump(s, h ? record_snapshot_held(h) : NULL);
		held_snapshot_free(h);
		s->last_kept_ns = now;
	} else {
		bool keep = record_snapshot_kept(&s->snap, s->last_kept_ns, last_ns);

		/* a calm second's snapshot into the dump's ring: its record built if it is written */
		if ((err = dump__hold(s->dump, h, &held_snapshot_ops, bytes, now, keep)))
			dump_failed(s, err);
		if (keep)
			s->last_kept_ns = now;
	}
	s->dump_cpu_ns += thread_cpu_ns() - t0;
	return true;
}

void session_state(struct session *s, bool force)
{
	uint64_t t0 = thread_cpu_ns();
	json_t *rec = record_state(&s->snap);
	int err;

	if (force || findings_open_count(&s->findings) > 0 || !s->dump || s->dump_failed) {
		session_dump(s, rec);
	} else {
		/* a calm stretch's: thinned first under --max-dump-bytes */
		if (rec && (err = dump__write_calm(s->dump, rec)))
			dump_failed(s, err);
		json_decref(rec);
	}
	s->dump_cpu_ns += thread_cpu_ns() - t0;
}

void session_dump_tick(struct session *s, uint64_t now)
{
	uint64_t t0;
	int err;

	/* a plain dump's records are written as they come: nothing is due */
	if (!s->dump || s->dump_failed || !dump__compressed(s->dump))
		return;
	t0 = thread_cpu_ns();
	if ((err = dump__tick(s->dump, now)))
		dump_failed(s, err);
	s->dump_cpu_ns += thread_cpu_ns() - t0;
}

double session_cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

void session_footer(struct session *s, int exit_status)
{
	json_t *f;
	struct rusage ru;

	uint64_t supp[NT_P_MAX];

	tracer__stats(s->tracer, s->stats);
	f = record_footer(s->stats, tracer__suppressed(s->tracer, supp) ? NULL : supp, s->nfindings,
			  session_cpu_seconds(), exit_status, clock_mono_ns());
	/* the tracer's own peak memory, for the load and soak figures (docs/reliability.md) */
	if (f && !getrusage(RUSAGE_SELF, &ru))
		json_object_set_new(json_object_get(f, "totals"), "tracer_maxrss_kib",
				    json_integer(ru.ru_maxrss));
	/* the tick's timing, and what serving pages took of the loop (docs/reliability.md) */
	if (f) {
		json_t *t = json_object_get(f, "totals");

		json_object_set_new(t, "ticks", json_integer((json_int_t)s->timer_ticks));
		json_object_set_new(t, "ticks_late", json_integer((json_int_t)s->timer_late));
		json_object_set_new(t, "tick_gap_max_ms",
				    json_real((double)s->timer_gap_max_ns / 1e6));
		if (s->listen) {
			json_object_set_new(t, "pages", json_integer((json_int_t)s->pages));
			json_object_set_new(t, "page_s", json_real((double)s->page_ns / 1e9));
			json_object_set_new(t, "page_max_ms",
					    json_real((double)s->page_max_ns / 1e6));
		}
	}
	if (f && gpuwatch_helper_cpu_s(s->gpu) >= 0) /* NVML's calls, in a process of its own */
		json_object_set_new(json_object_get(f, "totals"), "nvml_helper_cpu_s",
				    json_real(gpuwatch_helper_cpu_s(s->gpu)));
	/* the last minute before the footer: whole, or after a clean end what the ring keeps */
	session_ring_end(s);
	if (f && s->dump) {
		uint64_t held, dropped;

		/* after the ring's last minute: the frames' part of tracer_cpu_s */
		json_object_set_new(json_object_get(f, "totals"), "dump_cpu_s",
				    json_real((double)s->dump_cpu_ns / 1e9));

		dump__frames(s->dump, &held, &dropped);
		json_object_set_new(f, "snapshots",
				    json_pack("{s:I, s:I}", "held", (json_int_t)held, "thinned",
					      (json_int_t)dropped));
		if (s->opts.max_dump_bytes)
			json_object_set_new(f, "budget", dump__budget_json(s->dump));
	}
	if (f && *gpuwatch_status(s->gpu))
		json_object_set_new(f, "gpus", json_string(gpuwatch_status(s->gpu)));
	session_dump(s, f);
}
