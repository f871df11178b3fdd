#!/bin/bash
# SPDX-License-Identifier: MIT
# The job runs as the invoking user (SUDO_UID/SUDO_GID or --user), and the dump belongs to them.
# checks: 7
. "$(dirname "$0")/lib.sh"

need_bpf privs || end_checks
NOBODY=$(id -u nobody)
NOGROUP=$(id -g nobody)

out=$(SUDO_UID=$NOBODY SUDO_GID=$NOGROUP SUDO_USER=nobody "$NT" run --dump "$TMP/sudo.jsonl" -- \
	sh -c 'id -u; id -g; id -G' 2>/dev/null)
check sudo_uid "job ran as $(echo $out)" -- test "$(echo $out)" = "$NOBODY $NOGROUP $NOGROUP"
check sudo_dump_owner "dump owned by $(stat -c %u:%g "$TMP/sudo.jsonl")" -- \
	test "$(stat -c %u:%g "$TMP/sudo.jsonl")" = "$NOBODY:$NOGROUP"
check dump_mode "dump mode $(stat -c %a "$TMP/sudo.jsonl")" -- \
	test "$(stat -c %a "$TMP/sudo.jsonl")" = 640
# the job cannot get root back: it ran, and its shell (Debian's dash: exit 2) was refused the
# file, rather than nccltrace failing for some other reason
err=$("$NT" run --user nobody --dump "$TMP/user.jsonl" -- sh -c 'exec 3>/etc/nccltrace-test-root' 2>&1)
rc=$?
refused() { [ $rc -eq 2 ] && [ ! -e /etc/nccltrace-test-root ] &&
	contains "$err" "/etc/nccltrace-test-root: Permission denied"; }
check user_no_root "exit $rc, want 2 from the job's sh refused /etc: $err" -- refused
rm -f /etc/nccltrace-test-root
out=$("$NT" run --user nobody --dump "$TMP/user2.jsonl" -- id -un 2>/dev/null)
check user_option "job ran as $out" -- test "$out" = nobody
err=$("$NT" run --user no-such-user-x --dump "$TMP/u3.jsonl" -- true 2>&1)
rc=$?
check user_unknown "exit $rc ($err)" -- test $rc -eq 64
# root without sudo stays root
out=$(env -u SUDO_UID -u SUDO_GID "$NT" run --dump "$TMP/root.jsonl" -- id -u 2>/dev/null)
check root_stays_root "job ran as uid $out" -- test "$out" = 0
end_checks
