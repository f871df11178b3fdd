/* SPDX-License-Identifier: MIT */
/* Helpers shared by the unit tests; include after <cmocka.h>. */
#ifndef NT_TESTUTIL_H
#define NT_TESTUTIL_H

#include <arpa/inet.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "nccltrace.h"

/* A fresh directory for a test's files (a cmocka setup), and path a file in it */
struct test_tmp {
	char dir[64];
	char path[128];
};

static inline int test_tmp_setup(void **state)
{
	struct test_tmp *t = calloc(1, sizeof(*t));

	if (!t)
		return -1;
	snprintf(t->dir, sizeof(t->dir), "/tmp/nccltrace-test-XXXXXX");
	if (!mkdtemp(t->dir)) {
		free(t);
		return -1;
	}
	snprintf(t->path, sizeof(t->path), "%s/trace.jsonl", t->dir);
	*state = t;
	return 0;
}

/* the directory and every file in it gone (the cmocka teardown) */
static inline int test_tmp_teardown(void **state)
{
	struct test_tmp *t = *state;
	struct dirent *de;
	DIR *d = opendir(t->dir);

	if (d) {
		while ((de = readdir(d))) {
			char p[512];

			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			snprintf(p, sizeof(p), "%s/%s", t->dir, de->d_name);
			unlink(p);
		}
		closedir(d);
	}
	rmdir(t->dir);
	free(t);
	return 0;
}

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
