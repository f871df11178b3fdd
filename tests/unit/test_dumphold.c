// SPDX-License-Identifier: MIT
/*
 * A snapshot as the dump's pre-trigger ring holds it (records.h record_snapshot_hold): the
 * connections it writes, their identities for the delta frames, and a held second sharing the
 * copies of those unchanged since the one before
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include "present/dumpdelta.h"
#include "present/records.h"
#include "nccltrace.h"

/* the identity (DELTA_ID) of the one connection of sn's held snapshot, and its record */
static json_t *held_conn(const struct snapshot *sn, uint64_t last_ns, char *id, size_t len)
{
	size_t bytes = 0;
	struct held_snapshot *last = NULL,
			     *h = record_snapshot_hold(sn, NULL, last_ns, &last, &bytes);
	json_t *rec, *c;

	assert_non_null(h);
	assert_ptr_equal(last, h);
	assert_true(bytes >= sizeof(struct snap_conn));
	rec = record_snapshot_held(h);
	held_snapshot_free(h);
	held_snapshot_free(last);
	assert_int_equal(json_array_size(json_object_get(rec, "conns")), 1);
	c = json_incref(json_array_get(json_object_get(rec, "conns"), 0));
	json_decref(rec);
	snprintf(id, len, "%s", json_string_value(json_object_get(c, DELTA_ID)) ?: "");
	assert_int_equal(strlen(id), 32);
	return c;
}

/*
 * A held snapshot's connections: those closed before the last snapshot left out; each written
 * with an identity that changes with what is written of it, ages as moments, and only so
 */
static void test_snapshot_held(void **state)
{
	const uint64_t s = NT_NSEC_PER_SEC;
	struct snap_conn c[2] = {{.id = 0xab, .pid = 7, .peer_pid = -1},
				 {.id = 0xcd, .pid = 7, .closed = true, .closed_ns = 50 * s}};
	struct snapshot sn = {.now_ns = 100 * s, .conns = c, .nconns = 2};
	char id0[40], id[40];
	json_t *o;

	(void)state;
	c[0].c.bytes_sent = 10;
	c[0].c.last_send_ns = 99 * s;
	o = held_conn(&sn, 60 * s, id0, sizeof(id0));
	assert_string_equal(json_string_value(json_object_get(o, "id")), "ab");
	assert_true(json_real_value(json_object_get(o, "last_send_age_s")) == 1.0);
	json_decref(o);
	/* a second later, nothing moved but its age; the model's walk is not written */
	sn.now_ns = 101 * s;
	c[0].walk = 9;
	o = held_conn(&sn, 60 * s, id, sizeof(id));
	assert_string_equal(id, id0);
	assert_true(json_real_value(json_object_get(o, "last_send_age_s")) == 2.0);
	json_decref(o);
	/* a byte more, a retransmit, or blocked in a receive: another */
	c[0].c.bytes_sent = 11;
	json_decref(held_conn(&sn, 60 * s, id, sizeof(id)));
	assert_string_not_equal(id, id0);
	c[0].c.bytes_sent = 10;
	c[0].c.retrans = 1;
	json_decref(held_conn(&sn, 60 * s, id, sizeof(id)));
	assert_string_not_equal(id, id0);
	c[0].c.retrans = 0;
	c[0].blocked = SNAP_BLOCK_RECV;
	json_decref(held_conn(&sn, 60 * s, id, sizeof(id)));
	assert_string_not_equal(id, id0);
	c[0].blocked = SNAP_BLOCK_NONE;
	json_decref(held_conn(&sn, 60 * s, id, sizeof(id)));
	assert_string_equal(id, id0);
}

/* a held second's record, built as if nothing had been held before it */
static json_t *held_alone(const struct snapshot *sn)
{
	size_t bytes;
	struct held_snapshot *last = NULL, *h = record_snapshot_hold(sn, NULL, 0, &last, &bytes);
	json_t *rec = record_snapshot_held(h);

	held_snapshot_free(h);
	held_snapshot_free(last);
	return rec;
}

/*
 * A held second shares the copy of each connection nothing written of which changed since the
 * second before (its bytes count only the copies), for the ring's span at most; its record is
 * the same as an unshared one's, after the second it shares from was freed (the ring drops the
 * oldest first), and after the holder let go of the last
 */
static void test_snapshot_shared(void **state)
{
	const uint64_t s = NT_NSEC_PER_SEC;
	struct snap_conn c[3] = {{.id = 0x10, .pid = 7, .peer_pid = -1},
				 {.id = 0x20, .pid = 7, .peer_pid = -1},
				 {.id = 0x30, .pid = 8, .peer_pid = -1}};
	struct snapshot sn = {.now_ns = 100 * s, .conns = c, .nconns = 3};
	struct held_snapshot *last = NULL, *h1, *h2, *h3, *h4;
	size_t b1, b2, b3, b4;
	json_t *rec, *want;

	(void)state;
	for (int i = 0; i < 3; i++) {
		c[i].c.bytes_sent = 100 * (i + 1);
		c[i].c.last_send_ns = 99 * s;
	}
	h1 = record_snapshot_hold(&sn, NULL, 0, &last, &b1);
	/* a second later one connection moved: two shared */
	sn.now_ns = 101 * s;
	c[1].c.bytes_sent++;
	c[1].c.last_send_ns = 101 * s;
	c[2].walk = 4; /* the model's, not written */
	h2 = record_snapshot_hold(&sn, NULL, 0, &last, &b2);
	assert_non_null(h1);
	assert_non_null(h2);
	assert_true(b2 < b1);
	held_snapshot_free(h1);
	rec = record_snapshot_held(h2);
	want = held_alone(&sn);
	assert_true(json_equal(rec, want));
	assert_int_equal(json_integer_value(json_object_get(
				 json_array_get(json_object_get(rec, "conns"), 1), "bytes_sent")),
			 201);
	json_decref(rec);
	json_decref(want);
	/* all three moved: all copied, as many bytes as the first */
	sn.now_ns = 102 * s;
	for (int i = 0; i < 3; i++)
		c[i].c.bytes_recv = 5;
	h3 = record_snapshot_hold(&sn, NULL, 0, &last, &b3);
	assert_int_equal(b3, b1);
	/* nothing moved for longer than the ring's span: copied again, not shared so long */
	sn.now_ns = 102 * s + 61 * s;
	h4 = record_snapshot_hold(&sn, NULL, 0, &last, &b4);
	assert_int_equal(b4, b1);
	held_snapshot_free(h4);
	held_snapshot_free(last);
	/* h2 and h3 still read whole after their successors are gone */
	rec = record_snapshot_held(h3);
	sn.now_ns = 102 * s;
	want = held_alone(&sn);
	assert_true(json_equal(rec, want));
	json_decref(rec);
	json_decref(want);
	held_snapshot_free(h3);
	held_snapshot_free(h2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_snapshot_held),
		cmocka_unit_test(test_snapshot_shared),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
