// SPDX-License-Identifier: MIT
/*
 * Several hosts' snapshots as one job: the JSON form read back (times moved onto another
 * clock), pids two hosts share kept apart, connections between hosts joined by address (and
 * loopback ones never), and the diagnosis of the merged job naming a culprit that no host's
 * snapshot alone can.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include "diagnose/diagnose.h"
#include "model/snapmerge.h"
#include "model/snapskew.h"
#include "present/jobview.h"
#include "present/records.h"

#define SEC NT_NSEC_PER_SEC
#define NOW (5000 * SEC)

/* one host of a 4-rank ring 0 -> 1 -> 2 -> 3 -> 0: ranks lo, lo + 1 at 198.18.0.(host + 1) */
struct host {
	struct snapshot s;
	struct snap_proc procs[2];
	struct snap_conn conns[6];
};

static void ip(uint8_t *a, int rank)
{
	a[0] = 198, a[1] = 18, a[2] = 0, a[3] = (uint8_t)(rank / 2 + 1);
}

/* rank r's end of its connection to rank peer: out (it connected) or in (it accepted) */
static void add_conn(struct host *h, int r, int peer, bool out, bool spin)
{
	struct snap_conn *c = &h->conns[h->s.nconns++];
	bool same = r / 2 == peer / 2;

	memset(c, 0, sizeof(*c));
	c->id = 0x1000 + h->s.nconns;
	c->pid = 100 + r % 2; /* both hosts number their ranks' pids alike */
	c->peer_pid = same ? 100 + peer % 2 : -1;
	c->c.tgid = (uint32_t)c->pid;
	c->c.t.family = AF_INET;
	ip(c->c.t.saddr, r);
	ip(c->c.t.daddr, peer);
	c->c.t.sport = (uint16_t)(out ? 40000 + r : 47200 + r);
	c->c.t.dport = (uint16_t)(out ? 47200 + peer : 40000 + peer);
	c->c.state = 1;
	c->c.first_ns = NOW - 60 * SEC;
	c->c.last_send_ns = c->c.last_recv_ns = NOW - 8 * SEC;
	c->c.last_send_try_ns = c->c.last_recv_try_ns = c->c.last_send_ns;
	if (spin) {
		c->c.recv_eagain = 100000;
		c->c.last_eagain_ns = c->c.last_recv_try_ns = NOW - SEC / 20;
	}
}

/* host 0 (ranks 0, 1) or host 1 (2, 3); rank 2 sleeps, every other rank waits on its prev */
static void host_init(struct host *h, int host)
{
	memset(h, 0, sizeof(*h));
	h->s.now_ns = NOW;
	h->s.procs = h->procs;
	h->s.conns = h->conns;
	for (int i = 0; i < 2; i++) {
		struct snap_proc *p = &h->procs[h->s.nprocs++];
		int r = host * 2 + i;

		p->pid = 100 + i;
		p->ppid = 1;
		p->rank = r;
		p->world_size = 4;
		memcpy(p->comm, "ringjob", 8);
		p->state = r == 2 ? 'S' : 'R';
		p->cpu_busy_ns = r == 2 ? 0 : SEC;
		if (r == 2)
			memcpy(p->where, "clock_nanosleep", 16);
		add_conn(h, r, (r + 1) % 4, true, false);
		add_conn(h, r, (r + 3) % 4, false, r != 2);
	}
	/* a loopback connection on each host with the same ports: never joined across hosts */
	{
		struct snap_conn *c = &h->conns[h->s.nconns++];

		memset(c, 0, sizeof(*c));
		c->pid = 100;
		c->peer_pid = -1;
		c->c.t.family = AF_INET;
		c->c.t.saddr[0] = c->c.t.daddr[0] = 127;
		c->c.t.saddr[3] = c->c.t.daddr[3] = 1;
		c->c.t.sport = (uint16_t)(host ? 5001 : 5000);
		c->c.t.dport = (uint16_t)(host ? 5000 : 5001);
		c->c.state = 1;
	}
}

static const struct diag_config cfg = {.stall_threshold_ns = 2 * SEC, .active_window_ns = SEC};

static void test_roundtrip_shift(void **state)
{
	struct host h;
	struct snapstore *st;
	json_t *o;
	char err[128];

	(void)state;
	host_init(&h, 1);
	h.procs[0].nccl_warning = "NET/Socket : peer closed";
	o = snapjson_from_snapshot(&h.s);
	st = snapjson_parse(o, -3 * (int64_t)SEC, err, sizeof(err));
	json_decref(o);
	assert_non_null(st);
	assert_int_equal(st->s.nprocs, 2);
	assert_int_equal(st->s.nconns, 5);
	assert_int_equal(st->s.now_ns, NOW - 3 * SEC);
	assert_int_equal(st->s.procs[0].rank, 2);
	assert_int_equal(st->s.procs[0].state, 'S');
	assert_string_equal(st->s.procs[0].where, "clock_nanosleep");
	assert_string_equal(st->s.procs[0].nccl_warning, "NET/Socket : peer closed");
	/* times move, 0 ("never") stays, counts do not */
	assert_int_equal(st->s.conns[0].c.last_send_ns, NOW - 11 * SEC);
	assert_int_equal(st->s.conns[0].c.last_eagain_ns, 0);
	assert_int_equal(st->s.conns[1].c.recv_eagain, 0);
	assert_int_equal(st->s.conns[3].c.recv_eagain, 100000);
	assert_memory_equal(&st->s.conns[0].c.t, &h.conns[0].c.t, sizeof(h.conns[0].c.t));
	snapstore_free(st);
	{
		json_t *a = json_array();

		assert_null(snapjson_parse(a, 0, err, sizeof(err)));
		json_decref(a);
	}
	assert_non_null(strstr(err, "not a snapshot"));
}

/* a finding's culprit, rank and host */
static int culprit_of(const struct snapshot *s, const struct finding *f, const char **host)
{
	const struct snap_proc *p = snapshot_proc(s, f->pid);

	*host = p ? p->host : NULL;
	return f->rank;
}

/*
 * Times after the snapshot's now (read live after it, or another host's): a rank whose setup
 * began a moment after now is not "in setup for centuries", a waiter past any threshold whose
 * culprit is a rank merely outside NCCL. Clamped in the tracer's snapshot and in every one
 * read back.
 */
static void test_clamp_later_times(void **state)
{
	struct host h;
	struct snapstore *st;
	struct finding out[4];
	json_t *o;
	char err[128];

	(void)state;
	host_init(&h, 0);
	h.s.nconns = 0;
	/* rank 0 outside NCCL; rank 1 entered its ring setup 5 ms after the tick's now */
	h.procs[1].nccl_setup = SNAP_SETUP_TRANSPORT;
	h.procs[1].nccl_setup_since_ns = NOW + 5000000;
	snprintf(h.procs[1].nccl_phase, sizeof(h.procs[1].nccl_phase), "ncclTransportP2pSetup");
	h.procs[1].nccl_since_ns = NOW + 5000000;
	h.procs[1].world_size = h.procs[0].world_size = 2;
	o = snapjson_from_snapshot(&h.s);
	snapshot_clamp(&h.s);
	assert_int_equal(h.procs[1].nccl_setup_since_ns, NOW);
	assert_int_equal(h.procs[1].nccl_since_ns, NOW);
	assert_int_equal(diagnose(&h.s, &cfg, out, 4), 0);
	/* read back, shifted onto another clock: clamped to that clock's now */
	st = snapjson_parse(o, 7 * (int64_t)SEC, err, sizeof(err));
	json_decref(o);
	assert_non_null(st);
	assert_int_equal(st->s.procs[1].nccl_setup_since_ns, NOW + 7 * SEC);
	assert_int_equal(diagnose(&st->s, &cfg, out, 4), 0);
	/* a time before now is left as it is, and 0 ("never") stays 0 */
	assert_int_equal(st->s.procs[0].nccl_setup_since_ns, 0);
	snapstore_free(st);
	/* the same rank 3 s into its setup, really: rank 0 is named (the check above can fail) */
	h.procs[1].nccl_setup_since_ns = NOW - 3 * SEC;
	assert_int_equal(diagnose(&h.s, &cfg, out, 4), 1);
	assert_int_equal(out[0].kind, FINDING_RING_SETUP_BLOCKED);
	assert_int_equal(out[0].rank, 0);
}

static void test_merge_joins_hosts(void **state)
{
	struct host a, b;
	struct snapmerge_in in[2];
	struct snapstore *m;
	static struct finding f[8];
	const struct snap_proc *p;
	const char *host;
	char name[64];
	int n;

	(void)state;
	host_init(&a, 0);
	host_init(&b, 1);
	/* host a alone: rank 0 waits on an address nobody there owns, never on rank 2 */
	n = diagnose(&a.s, &cfg, f, 8);
	assert_true(n >= 1);
	assert_int_not_equal(f[0].rank, 2);
	in[0] = (struct snapmerge_in){&a.s, "host-a"};
	in[1] = (struct snapmerge_in){&b.s, "host-b"};
	m = snapmerge(in, 2);
	assert_non_null(m);
	assert_int_equal(m->s.nprocs, 4);
	assert_int_equal(m->s.nconns, 10);
	/* pid 100 on both hosts: the second host's is moved past pid_max, its own kept */
	p = &m->s.procs[2];
	assert_int_equal(p->pid, 100 + SNAPMERGE_PID_STRIDE);
	assert_int_equal(p->host_pid, 100);
	assert_string_equal(p->host, "host-b");
	snap_proc_name(p, p->pid, name, sizeof(name));
	assert_string_equal(name, "rank 2 (pid 100, host-b)");
	/* rank 1's connection out to rank 2 is joined to rank 2's accepted end on host b */
	assert_int_equal(m->s.conns[2].peer_pid, 100 + SNAPMERGE_PID_STRIDE);
	assert_int_equal(m->s.conns[5].peer_pid, 100 + SNAPMERGE_PID_STRIDE + 1);
	/* the loopback ones, whose ports match across hosts, are not */
	assert_int_equal(m->s.conns[4].peer_pid, -1);
	assert_int_equal(m->s.conns[9].peer_pid, -1);
	/* two tracers on one kernel and network namespace share 127.0.0.1: joined then */
	{
		struct snapmerge_in same[2] = {{&a.s, "host-a", "boot1/net:[42]"},
					       {&b.s, "host-b", "boot1/net:[42]"}};
		struct snapstore *m2 = snapmerge(same, 2);

		assert_non_null(m2);
		assert_int_equal(m2->s.conns[4].peer_pid, 100 + SNAPMERGE_PID_STRIDE);
		assert_int_equal(m2->s.conns[9].peer_pid, 100);
		snapstore_free(m2);
		same[1].loopback = "boot1/net:[43]";
		m2 = snapmerge(same, 2);
		assert_int_equal(m2->s.conns[4].peer_pid, -1);
		snapstore_free(m2);
	}
	/* the job as one: rank 2 on host b, whom ranks of both hosts wait on */
	n = diagnose(&m->s, &cfg, f, 8);
	assert_int_equal(n, 1);
	assert_int_equal(culprit_of(&m->s, &f[0], &host), 2);
	assert_string_equal(host, "host-b");
	assert_true(f[0].nwaiters == 3);
	assert_non_null(strstr(f[0].summary, "host-b"));
	snapstore_free(m);
}

/* the tracker over merged snapshots: the report's finding, with the hosts named */
static void test_jobview(void **state)
{
	struct host a, b;
	struct snapmerge_in in[2] = {{&a.s, "host-a"}, {&b.s, "host-b"}};
	struct snapstore *m;
	struct jobview v;
	json_t *open, *f0;

	(void)state;
	host_init(&a, 0);
	host_init(&b, 1);
	assert_int_equal(jobview_init(&v, 2), 0);
	m = snapmerge(in, 2);
	jobview_step(&v, m, 1000, 0);
	open = jobview_open_findings(&v);
	assert_int_equal(json_array_size(open), 1);
	f0 = json_array_get(open, 0);
	assert_string_equal(json_string_value(json_object_get(f0, "kind")), "stall");
	assert_int_equal(json_integer_value(json_object_get(f0, "rank")), 2);
	assert_string_equal(json_string_value(json_object_get(f0, "host")), "host-b");
	assert_int_equal(json_integer_value(json_object_get(f0, "realtime_ns")), NOW + 1000);
	json_decref(open);
	jobview_close(&v, m, NOW + SEC);
	open = jobview_open_findings(&v);
	assert_int_equal(json_array_size(open), 0);
	json_decref(open);
	snapstore_free(m);
	jobview_free(&v);
}

/*
 * The two hosts at now: rank 2 asleep (the others wait on it), or all moving (quiet): every
 * connection's progress a tenth of a second before now, nobody spinning
 */
static struct snapstore *merged_at(struct host *a, struct host *b, uint64_t now, bool quiet)
{
	struct host *h[2] = {a, b};
	struct snapmerge_in in[2] = {{&a->s, "host-a"}, {&b->s, "host-b"}};

	for (int k = 0; k < 2; k++) {
		host_init(h[k], k);
		h[k]->s.now_ns = now;
		for (int i = 0; i < h[k]->s.nconns; i++) {
			struct nt_conn *c = &h[k]->conns[i].c;

			c->first_ns += now - NOW;
			c->last_send_ns = c->last_recv_ns = c->last_send_try_ns =
				c->last_recv_try_ns =
					quiet ? now - SEC / 10 : c->last_send_ns + (now - NOW);
			if (quiet)
				c->recv_eagain = c->last_eagain_ns = 0;
			else if (c->last_eagain_ns)
				c->last_eagain_ns += now - NOW;
		}
		for (int i = 0; quiet && i < h[k]->s.nprocs; i++) {
			h[k]->procs[i].state = 'R';
			h[k]->procs[i].where[0] = '\0';
		}
	}
	return snapmerge(in, 2);
}

/* the findings a job view opened over steps at NOW + i s: quiet[i], stale by stale_s[i] */
static size_t opened(const bool *quiet, const int *stale_s, int n)
{
	struct host a, b;
	struct jobview v;
	size_t k;

	assert_int_equal(jobview_init(&v, 2), 0);
	for (int i = 0; i < n; i++) {
		struct snapstore *m = merged_at(&a, &b, NOW + (uint64_t)i * SEC, quiet[i]);

		assert_non_null(m);
		jobview_step(&v, m, 0, (uint64_t)stale_s[i] * SEC);
		snapstore_free(m);
	}
	k = json_array_size(v.latest);
	jobview_free(&v);
	return k;
}

/*
 * A merged report steps through states taken as of each second, a host's up to the seconds
 * since its last state record, its ages short by as much: a stall that read below the
 * threshold in a step whose states were 2 s old (a tick that slipped) is still one finding;
 * where they were fresh, the second's absence closes it and its return is a second finding
 */
static void test_jobview_stale(void **state)
{
	const bool quiet[4] = {false, true, true, false};
	const int slipped[4] = {0, 2, 2, 0}, fresh[4] = {0};
	struct host a, b;
	static struct finding f[8];
	struct snapstore *m = merged_at(&a, &b, NOW + SEC, true);

	(void)state;
	/* quiet: nothing to find */
	assert_int_equal(diagnose(&m->s, &cfg, f, 8), 0);
	snapstore_free(m);
	assert_int_equal(opened(quiet, slipped, 4), 1);
	assert_int_equal(opened(quiet, fresh, 4), 2);
}

/* a state record each second while something may be wrong, each 30 s while all moves */
static void test_state_due(void **state)
{
	struct host h;

	(void)state;
	host_init(&h, 1);
	/* rank 2's bytes stopped 8 s ago: every second */
	assert_true(record_state_due(&h.s, 0, 0));
	assert_false(record_state_due(&h.s, 0, NOW - SEC / 2));
	assert_true(record_state_due(&h.s, 0, NOW - SEC));
	/* every rank moving: every 30 s */
	for (int i = 0; i < h.s.nconns; i++)
		h.conns[i].c.last_recv_ns = NOW - SEC / 10;
	assert_false(record_state_due(&h.s, 0, NOW - 2 * SEC));
	assert_true(record_state_due(&h.s, 0, NOW - 30 * SEC));
	/* a finding open: every second again */
	assert_true(record_state_due(&h.s, 1, NOW - 2 * SEC));
	/* quiet mode counts no bytes: NCCL's counters move, or the hooks would be back */
	h.conns[0].c.last_recv_ns = h.conns[0].c.last_send_ns = NOW - 9 * SEC;
	h.conns[1].c.last_recv_ns = h.conns[1].c.last_send_ns = NOW - 9 * SEC;
	h.conns[4].c.last_recv_ns = h.conns[4].c.last_send_ns = NOW - 9 * SEC;
	assert_true(record_state_due(&h.s, 0, NOW - 2 * SEC));
	h.s.tcp_quiet = true;
	assert_false(record_state_due(&h.s, 0, NOW - 2 * SEC));
	/*
	 * rank 2 asleep, its only recent bytes NCCL RAS's keep-alives: still every second (a
	 * merge of a two-node torchrun found nothing when its host wrote every 30 s)
	 */
	h.s.tcp_quiet = false;
	for (int i = 0; i < h.s.nconns; i++)
		h.conns[i].c.last_recv_ns = h.conns[i].c.last_send_ns =
			h.conns[i].pid == 100 ? NOW - 9 * SEC : NOW - SEC / 10;
	assert_true(record_state_due(&h.s, 0, NOW - 2 * SEC));
	{
		struct snap_conn *ras = &h.conns[h.s.nconns++];

		*ras = h.conns[0];
		ras->ras = true;
		ras->c.last_recv_ns = ras->c.last_send_ns = NOW - SEC / 10;
	}
	assert_true(record_state_due(&h.s, 0, NOW - 2 * SEC));
	/* the same bytes on a data connection: rank 2 moves */
	h.conns[h.s.nconns - 1].ras = false;
	assert_false(record_state_due(&h.s, 0, NOW - 2 * SEC));
	/*
	 * NCCL's counters say it first: rank 2's unchanged for 3 s, its sockets busy (PyTorch's
	 * TCPStore) as in a two-node torchrun whose rank slept between collectives
	 */
	{
		struct snap_comm cm[2] = {{.pid = 100, .seq_ok = true, .changed_ns = NOW - 3 * SEC},
					  {.pid = 101, .seq_ok = true, .changed_ns = NOW}};

		h.s.comms = cm;
		h.s.ncomms = 2;
		assert_true(record_state_due(&h.s, 0, NOW - 2 * SEC));
		/* moving: its sockets' silence is no sign either */
		cm[0].changed_ns = NOW - SEC / 5;
		h.conns[h.s.nconns - 1].ras = true;
		assert_false(record_state_due(&h.s, 0, NOW - 2 * SEC));
		h.s.comms = NULL;
		h.s.ncomms = 0;
	}
	/* a connection new since the last record: due, for the merge to join it */
	for (int i = 0; i < h.s.nconns; i++)
		h.conns[i].c.last_recv_ns = h.conns[i].c.last_send_ns = NOW - SEC / 10;
	assert_false(record_state_due(&h.s, 0, NOW - 2 * SEC));
	h.conns[0].c.first_ns = NOW - SEC;
	assert_true(record_state_due(&h.s, 0, NOW - 2 * SEC));
}

/* host b's clock 3 s ahead: its ends of the connections with host a say so */
static void test_skew(void **state)
{
	struct host a, b;
	int64_t lo, hi;

	(void)state;
	host_init(&a, 0);
	host_init(&b, 1);
	/* rank 1 (a) -> rank 2 (b): 1000 bytes sent at NOW - 8 s, received 1 ms later */
	a.conns[2].c.bytes_sent = b.conns[1].c.bytes_recv = 1000;
	a.conns[2].c.last_send_ns = NOW - 8 * SEC;
	b.conns[1].c.last_recv_ns = NOW - 8 * SEC + SEC / 1000 + 3 * SEC;
	/* rank 3 (b) -> rank 0 (a): sent at NOW - 7 s, received 2 ms later */
	b.conns[2].c.bytes_sent = a.conns[1].c.bytes_recv = 500;
	b.conns[2].c.last_send_ns = NOW - 7 * SEC + 3 * SEC;
	a.conns[1].c.last_recv_ns = NOW - 7 * SEC + 2 * SEC / 1000;
	assert_true(snapskew_bounds(&a.s, &b.s, &lo, &hi));
	/* delta within [3 s - 2 ms, 3 s + 1 ms]: corrected by its lower bound */
	assert_int_equal(lo, 3 * SEC - 2 * SEC / 1000);
	assert_int_equal(hi, 3 * SEC + SEC / 1000);
	assert_int_equal(snapskew_correction(lo, hi), lo);
	/* no skew beyond the hooks' own microseconds: none taken */
	assert_int_equal(snapskew_correction(-50000, 20000), 0);
	assert_int_equal(snapskew_correction(INT64_MIN, -5 * SEC), -5 * SEC);
	/* the pairs disagree: nothing can be said */
	assert_int_equal(snapskew_correction(2 * SEC, SEC), 0);
	/* counts that differ (bytes in flight) bound nothing */
	b.conns[1].c.bytes_recv = 999;
	b.conns[2].c.bytes_sent = 499;
	assert_false(snapskew_bounds(&a.s, &b.s, &lo, &hi));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_shift),
		cmocka_unit_test(test_clamp_later_times),
		cmocka_unit_test(test_merge_joins_hosts),
		cmocka_unit_test(test_jobview),
		cmocka_unit_test(test_jobview_stale),
		cmocka_unit_test(test_state_due),
		cmocka_unit_test(test_skew),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
