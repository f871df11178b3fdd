// SPDX-License-Identifier: MIT
/*
 * The session's dump: each record as it happens, and the snapshots at the rate of
 * --dump-detail: each second written at once while something happens, held in the dump's
 * pre-trigger ring while the job runs calm (present/dumpring.h, records.h's rate rule).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/session.h"
#include "present/records.h"
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

/* a calm second's snapshot into the dump's ring (dump__hold) */
static void session_hold(struct session *s, json_t *rec, uint64_t now, bool keep)
{
	int err;

	if (s->dump && !s->dump_failed && (err = dump__hold(s->dump, rec, now, keep)))
		dump_failed(s, err);
	json_decref(rec);
}

/* the ring's snapshots to the file: something happened, or the trace ends */
void session_release(struct session *s)
{
	int err;

	if (s->dump && !s->dump_failed && (err = dump__release(s->dump)))
		dump_failed(s, err);
}

bool session_snapshot(struct session *s, uint64_t now, bool force)
{
	json_t *rec;
	bool busy;

	if (!force && !s->snapshot_now && now - s->last_snapshot_ns < NT_NSEC_PER_SEC)
		return false;
	/*
	 * The moment a finding opens, all of it: every rank, connection, phase and counter, and
	 * the minute before it from the ring
	 */
	busy = force || s->snapshot_now || s->opts.dump_full ||
	       record_snapshot_busy(now, s->start_ns, s->last_change_ns,
				    findings_open_count(&s->findings) > 0 || s->job_exited ||
					    snapshot_in_setup(&s->snap));
	rec = record_snapshot(&s->snap, s->nstate, s->last_snapshot_ns);
	if (busy) {
		session_release(s);
		session_dump(s, rec);
		s->last_kept_ns = now;
	} else {
		bool keep = record_snapshot_kept(&s->snap, s->last_kept_ns, s->last_snapshot_ns);

		session_hold(s, rec, now, keep);
		if (keep)
			s->last_kept_ns = now;
	}
	s->last_snapshot_ns = now;
	s->snapshot_now = false;
	return true;
}

void session_state(struct session *s, bool force)
{
	json_t *rec = record_state(&s->snap);
	int err;

	if (force || findings_open_count(&s->findings) > 0 || !s->dump || s->dump_failed) {
		session_dump(s, rec);
		return;
	}
	/* a calm stretch's: thinned first under --max-dump-bytes */
	if (rec && (err = dump__write_calm(s->dump, rec)))
		dump_failed(s, err);
	json_decref(rec);
}

void session_dump_tick(struct session *s, uint64_t now)
{
	int err;

	if (s->dump && !s->dump_failed && (err = dump__tick(s->dump, now)))
		dump_failed(s, err);
}
