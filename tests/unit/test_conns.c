// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "model/conns.h"
#include "model/model.h"
#include "model/sockseed.h"
#include "testutil.h"

static struct nt_tuple tuple4(const char *sa, uint16_t sp, const char *da, uint16_t dp)
{
	return test_tuple(AF_INET, sa, sp, da, dp);
}

static struct nt_tuple tuple6(const char *sa, uint16_t sp, const char *da, uint16_t dp)
{
	return test_tuple(AF_INET6, sa, sp, da, dp);
}

static struct nt_tuple reverse(struct nt_tuple t)
{
	struct nt_tuple r = t;

	memcpy(r.saddr, t.daddr, 16);
	memcpy(r.daddr, t.saddr, 16);
	r.sport = t.dport;
	r.dport = t.sport;
	return r;
}

static struct snap_conn conn(int pid, struct nt_tuple t)
{
	struct snap_conn c;

	memset(&c, 0, sizeof(c));
	c.pid = pid;
	c.peer_pid = -1;
	c.c.t = t;
	c.c.tgid = pid;
	c.c.state = 1;
	return c;
}

static void test_is_reverse(void **state)
{
	struct nt_tuple a = tuple4("10.0.0.1", 40312, "10.0.0.2", 29500);
	struct nt_tuple b = reverse(a), x;

	(void)state;
	assert_true(conns_is_reverse(&a, &b));
	assert_true(conns_is_reverse(&b, &a));
	assert_false(conns_is_reverse(&a, &a));

	x = b;
	x.sport++;
	assert_false(conns_is_reverse(&a, &x));
	x = b;
	x.dport++;
	assert_false(conns_is_reverse(&a, &x));
	x = b;
	x.saddr[3] ^= 1;
	assert_false(conns_is_reverse(&a, &x));
	x = b;
	x.daddr[0] ^= 1;
	assert_false(conns_is_reverse(&a, &x));
	x = b;
	x.family = AF_INET6;
	assert_false(conns_is_reverse(&a, &x));

	a = tuple6("fd00::1", 5000, "fd00::2", 6000);
	b = reverse(a);
	assert_true(conns_is_reverse(&a, &b));
	b.daddr[15] ^= 1;
	assert_false(conns_is_reverse(&a, &b));
}

static void test_map_pair_ipv4(void **state)
{
	struct nt_tuple t = tuple4("127.0.0.1", 40312, "127.0.0.1", 29500);
	struct snap_conn c[3];

	(void)state;
	c[0] = conn(100, t);
	c[1] = conn(300, tuple4("127.0.0.1", 40999, "127.0.0.1", 29501));
	c[2] = conn(200, reverse(t));
	assert_int_equal(conns_map_peers(c, 3), 2);
	assert_int_equal(c[0].peer_pid, 200);
	assert_int_equal(c[2].peer_pid, 100);
	assert_int_equal(c[1].peer_pid, -1);
}

static void test_map_pair_ipv6(void **state)
{
	struct nt_tuple t = tuple6("::1", 51000, "::1", 29500);
	struct snap_conn c[2];

	(void)state;
	c[0] = conn(7, reverse(t));
	c[1] = conn(8, t);
	assert_int_equal(conns_map_peers(c, 2), 2);
	assert_int_equal(c[0].peer_pid, 8);
	assert_int_equal(c[1].peer_pid, 7);
}

static void test_family_must_match(void **state)
{
	/* same bytes and ports, but one end IPv4 and the other IPv6 */
	struct nt_tuple t = tuple4("10.0.0.1", 1000, "10.0.0.2", 2000);
	struct nt_tuple r = reverse(t);
	struct snap_conn c[2];

	(void)state;
	r.family = AF_INET6;
	c[0] = conn(1, t);
	c[1] = conn(2, r);
	assert_int_equal(conns_map_peers(c, 2), 0);
	assert_int_equal(c[0].peer_pid, -1);
	assert_int_equal(c[1].peer_pid, -1);
}

static void test_ignores_listeners_and_port_zero(void **state)
{
	struct nt_tuple t = tuple4("10.0.0.1", 29500, "10.0.0.2", 41000);
	struct nt_tuple z = tuple4("10.0.0.1", 29600, "0.0.0.0", 0);
	struct snap_conn c[4];

	(void)state;
	/* a listener whose tuple happens to be the reverse of a connection: not an end of it */
	c[0] = conn(10, t);
	c[0].c.flags = NT_CONN_LISTENER;
	c[1] = conn(20, reverse(t));
	/* port 0: a socket that is not connected */
	c[2] = conn(30, z);
	c[3] = conn(40, reverse(z));
	/* c[1] goes to the listener's address and port: its owner is the peer (see below) */
	assert_int_equal(conns_map_peers(c, 4), 1);
	assert_int_equal(c[0].peer_pid, -1);
	assert_int_equal(c[1].peer_pid, 10);
	assert_int_equal(c[2].peer_pid, -1);
	assert_int_equal(c[3].peer_pid, -1);
}

/*
 * A connection whose accepted end was never seen (the peer never accepted nor read: it is
 * stuck) goes to the traced listener it connected to.
 */
static void test_listener_is_peer(void **state)
{
	struct nt_tuple l = tuple4("10.0.0.2", 43000, "0.0.0.0", 0);
	struct nt_tuple any = tuple4("0.0.0.0", 44000, "0.0.0.0", 0);
	struct snap_conn c[6];

	(void)state;
	c[0] = conn(10, l);
	c[0].c.flags = NT_CONN_LISTENER;
	c[1] = conn(20, tuple4("10.0.0.1", 51000, "10.0.0.2", 43000));
	/* a wildcard listener: a loopback destination reaches it, a remote one need not */
	c[2] = conn(30, any);
	c[2].c.flags = NT_CONN_LISTENER;
	c[3] = conn(40, tuple4("127.0.0.1", 52000, "127.0.0.1", 44000));
	c[4] = conn(50, tuple4("10.0.0.1", 53000, "10.9.9.9", 44000));
	/* a connect nobody answered yet is about its address, not a process */
	c[5] = conn(60, tuple4("10.0.0.1", 54000, "10.0.0.2", 43000));
	c[5].c.state = 2; /* TCP_SYN_SENT */
	conns_map_peers(c, 6);
	assert_int_equal(c[1].peer_pid, 10);
	assert_int_equal(c[3].peer_pid, 30);
	assert_int_equal(c[4].peer_pid, -1);
	assert_int_equal(c[5].peer_pid, -1);
	assert_int_equal(c[0].peer_pid, -1);
}

static void test_keeps_known_peer(void **state)
{
	struct nt_tuple t = tuple4("10.0.0.1", 40000, "10.0.0.2", 29500);
	struct snap_conn c[2];

	(void)state;
	c[0] = conn(100, t);
	c[1] = conn(200, reverse(t));
	assert_int_equal(conns_map_peers(c, 2), 2);
	/* the peer exits: its end leaves the table, but who it was still matters */
	assert_int_equal(conns_map_peers(c, 1), 1);
	assert_int_equal(c[0].peer_pid, 200);
}

static void test_self_connection(void **state)
{
	/* a process connected to its own listener: both ends are its own */
	struct nt_tuple t = tuple4("127.0.0.1", 45000, "127.0.0.1", 29500);
	/* TCP self-connect: one socket whose other end is itself */
	struct nt_tuple s = tuple4("127.0.0.1", 46000, "127.0.0.1", 46000);
	struct snap_conn c[3];

	(void)state;
	c[0] = conn(555, t);
	c[1] = conn(555, reverse(t));
	c[2] = conn(556, s);
	assert_int_equal(conns_map_peers(c, 3), 3);
	assert_int_equal(c[0].peer_pid, 555);
	assert_int_equal(c[1].peer_pid, 555);
	assert_int_equal(c[2].peer_pid, 556);
}

static void test_unrelated_stay_unmapped(void **state)
{
	struct snap_conn c[3];

	(void)state;
	c[0] = conn(1, tuple4("10.0.0.1", 1000, "10.0.0.2", 2000));
	/* same ports, other address */
	c[1] = conn(2, tuple4("10.0.0.2", 2000, "10.0.0.3", 1000));
	/* addresses swapped, ports not */
	c[2] = conn(3, tuple4("10.0.0.2", 1000, "10.0.0.1", 2000));
	assert_int_equal(conns_map_peers(c, 3), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(c[i].peer_pid, -1);
	assert_int_equal(conns_map_peers(NULL, 0), 0);
}

static void test_many_pairs(void **state)
{
	enum { NPAIRS = 300 };
	struct snap_conn *c = calloc(2 * NPAIRS, sizeof(*c));
	int order[2 * NPAIRS];

	(void)state;
	assert_non_null(c);
	for (int i = 0; i < 2 * NPAIRS; i++)
		order[i] = i;
	/* a fixed shuffle, so the two ends of a pair are far apart */
	srand(42);
	for (int i = 2 * NPAIRS - 1; i > 0; i--) {
		int j = rand() % (i + 1), tmp = order[i];

		order[i] = order[j];
		order[j] = tmp;
	}
	for (int p = 0; p < NPAIRS; p++) {
		char a[32];
		struct nt_tuple t;

		snprintf(a, sizeof(a), "10.1.%d.%d", p / 200, p % 200 + 1);
		t = tuple4(a, 30000 + p, "10.2.0.1", 29500);
		c[order[2 * p]] = conn(1000 + p, t);
		c[order[2 * p + 1]] = conn(5000 + p, reverse(t));
	}
	assert_int_equal(conns_map_peers(c, 2 * NPAIRS), 2 * NPAIRS);
	for (int p = 0; p < NPAIRS; p++) {
		assert_int_equal(c[order[2 * p]].peer_pid, 5000 + p);
		assert_int_equal(c[order[2 * p + 1]].peer_pid, 1000 + p);
	}
	free(c);
}

/* the open connection of the model under id, or NULL */
static const struct snap_conn *open_conn(struct model *m, uint64_t id)
{
	struct snapshot s = {0};

	model__snapshot(m, 1, &s);
	for (int i = 0; i < s.nconns; i++)
		if (s.conns[i].id == id && !s.conns[i].closed)
			return &s.conns[i];
	return NULL;
}

/*
 * A connect told by its record (SYN_SENT), its close record over the budget or lost: gone from
 * the kernel's map at the next walk, it is closed then; before, a connect "unanswered" for ever
 * (a false conn_error in a healthy flood). What the walk sees stays open, and so does a seed.
 */
static void test_walk_closes_what_left_the_map(void **state)
{
	const uint64_t gone = 0xffff888100001000ULL, kept = 0xffff888100002000ULL,
		       seed = sockseed_id(4242);
	struct model *m = model__new();
	struct nt_conn c = {.tgid = 100, .state = 2 /* SYN_SENT */, .first_ns = 10};

	(void)state;
	assert_non_null(m);
	c.t = tuple4("127.0.0.1", 0, "127.0.0.1", 60121);
	model__conn_update(m, gone, &c, false); /* from a record, between two ticks */
	model__conn_update(m, kept, &c, false);
	model__conn_update(m, seed, &c, false); /* sock_diag's, at the attach */
	model__conns_walk_begin(m);
	c.state = 1;				/* ESTABLISHED */
	model__conn_update(m, kept, &c, false); /* the map has it */
	assert_int_equal(model__conns_walk_end(m, 5000), 1);
	assert_null(open_conn(m, gone));
	assert_non_null(open_conn(m, kept));
	assert_non_null(open_conn(m, seed));
	/* a new connection told between walks is open until a walk misses it */
	model__conn_update(m, gone + 64, &c, false);
	assert_non_null(open_conn(m, gone + 64));
	model__conns_walk_begin(m);
	model__conn_update(m, kept, &c, false);
	assert_int_equal(model__conns_walk_end(m, 6000), 1);
	assert_null(open_conn(m, gone + 64));
	model__free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_is_reverse),
		cmocka_unit_test(test_map_pair_ipv4),
		cmocka_unit_test(test_map_pair_ipv6),
		cmocka_unit_test(test_family_must_match),
		cmocka_unit_test(test_ignores_listeners_and_port_zero),
		cmocka_unit_test(test_listener_is_peer),
		cmocka_unit_test(test_keeps_known_peer),
		cmocka_unit_test(test_self_connection),
		cmocka_unit_test(test_unrelated_stay_unmapped),
		cmocka_unit_test(test_many_pairs),
		cmocka_unit_test(test_walk_closes_what_left_the_map),
	};

	return cmocka_run_group_tests_name("conns", tests, NULL, NULL);
}
