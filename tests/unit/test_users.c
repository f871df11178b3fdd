// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "trace/users.h"

static void test_parse_passwd(void **state)
{
	struct nt_user u;

	(void)state;
	assert_int_equal(
		users_parse_passwd("alice:x:1001:1002:Alice,,,:/home/alice:/bin/bash\n", &u), 0);
	assert_string_equal(u.name, "alice");
	assert_int_equal(u.uid, 1001);
	assert_int_equal(u.gid, 1002);
	assert_int_equal(
		users_parse_passwd("nobody:x:65534:65534::/nonexistent:/usr/sbin/nologin", &u), 0);
	assert_int_equal(u.uid, 65534);
	/* malformed lines are refused, not half-parsed */
	assert_int_not_equal(users_parse_passwd("", &u), 0);
	assert_int_not_equal(users_parse_passwd(":x:1:1::/:/bin/sh", &u), 0);
	assert_int_not_equal(users_parse_passwd("bob:x:abc:1::/:/bin/sh", &u), 0);
	assert_int_not_equal(users_parse_passwd("bob:x:12", &u), 0);
	assert_int_not_equal(users_parse_passwd("bob", &u), 0);
}

static void test_group_has(void **state)
{
	gid_t g = 0;

	(void)state;
	assert_true(users_group_has("video:x:44:alice,bob\n", "bob", &g));
	assert_int_equal(g, 44);
	assert_true(users_group_has("video:x:44:alice,bob", "alice", &g));
	/* a prefix of a member is not a member */
	assert_false(users_group_has("video:x:44:alice,bob", "ali", &g));
	assert_false(users_group_has("video:x:44:alice,bob", "bo", &g));
	assert_false(users_group_has("video:x:44:", "alice", &g));
	assert_false(users_group_has("broken", "alice", &g));
	assert_false(users_group_has("video:x:zz:alice", "alice", &g));
}

static void test_lookup_root(void **state)
{
	struct nt_user u;

	(void)state;
	/* every Debian system has root as uid 0 */
	assert_int_equal(users_by_uid(0, &u), 0);
	assert_string_equal(u.name, "root");
	assert_int_equal(users_by_name("root", &u), 0);
	assert_int_equal(u.uid, 0);
	assert_int_not_equal(users_by_name("no-such-user-nccltrace", &u), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_passwd),
		cmocka_unit_test(test_group_has),
		cmocka_unit_test(test_lookup_root),
	};

	return cmocka_run_group_tests_name("users", tests, NULL, NULL);
}
