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

static inline void assert_contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("'%s' does not contain '%s'", hay, needle);
}

#ifdef NT_DIAGNOSE_H
/* Some evidence line of the finding contains s */
static inline bool evidence_has(const struct finding *f, const char *s)
{
	for (int i = 0; i < f->nevidence; i++)
		if (strstr(f->evidence[i], s))
			return true;
	return false;
}
#endif

#endif /* NT_TESTUTIL_H */
