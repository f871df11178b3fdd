/* SPDX-License-Identifier: MIT */
/* Helpers shared by the unit tests; include after <cmocka.h>. */
#ifndef NT_TESTUTIL_H
#define NT_TESTUTIL_H

#include <arpa/inet.h>
#include <string.h>
#include "nccltrace.h"

/* A connection tuple from text addresses; fails the test on a bad address. */
static inline struct nt_tuple test_tuple(int family, const char *sa, int sp, const char *da, int dp)
{
	struct nt_tuple t;

	memset(&t, 0, sizeof(t));
	t.family = family;
	assert_int_equal(inet_pton(family, sa, t.saddr), 1);
	assert_int_equal(inet_pton(family, da, t.daddr), 1);
	t.sport = sp;
	t.dport = dp;
	return t;
}

#endif /* NT_TESTUTIL_H */
