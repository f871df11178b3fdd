#!/bin/bash
# SPDX-License-Identifier: MIT
# Runs the unit tests (cmocka, TAP output) and the integration tests (tests/integration/test_*.sh,
# which print "PASS name", "FAIL name: why" or "SKIP name: why" lines), and ends with one line:
# "N passed, N failed, N skipped". Exit status 1 if anything failed.
set -u

passed=0 failed=0 skipped=0
failures=()

run_unit() {
	local bin=$1 out
	out=$(CMOCKA_MESSAGE_OUTPUT=TAP "$bin" 2>&1)
	local rc=$?
	printf '%s\n' "$out" | sed "s|^|$(basename "$bin"): |"
	local ok nok
	ok=$(printf '%s\n' "$out" | grep -c '^ok ')
	nok=$(printf '%s\n' "$out" | grep -c '^not ok ')
	passed=$((passed + ok))
	failed=$((failed + nok))
	if [ "$nok" -gt 0 ]; then
		failures+=("$(basename "$bin"): $nok failed")
	elif [ "$rc" -ne 0 ] || [ "$ok" -eq 0 ]; then
		# a crash or a binary that ran nothing counts as a failure
		failed=$((failed + 1))
		failures+=("$(basename "$bin"): exit $rc, $ok tests ran")
	fi
}

run_integration() {
	local dir=$1 t line
	if [ "$(id -u)" -ne 0 ]; then
		echo "integration: SKIP all: needs root to load BPF programs (run 'make check' as root)"
		skipped=$((skipped + 1))
		return
	fi
	for t in "$dir"/test_*.sh; do
		[ -e "$t" ] || continue
		while IFS= read -r line; do
			case "$line" in
			__rc=0) continue ;;
			__rc=*)
				# a script that dies without saying FAIL still fails
				failed=$((failed + 1))
				failures+=("$(basename "$t" .sh): exited ${line#__rc=}")
				continue
				;;
			esac
			echo "$(basename "$t" .sh): $line"
			case "$line" in
			PASS\ *) passed=$((passed + 1)) ;;
			FAIL\ *)
				failed=$((failed + 1))
				failures+=("$(basename "$t" .sh): ${line#FAIL }")
				;;
			SKIP\ *) skipped=$((skipped + 1)) ;;
			esac
		done < <(bash "$t" 2>&1; echo "__rc=$?")
	done
}

mode=
while [ $# -gt 0 ]; do
	case "$1" in
	--unit) mode=unit ;;
	--integration) mode=integration ;;
	*)
		if [ "$mode" = unit ]; then run_unit "$1"; else run_integration "$1"; fi
		;;
	esac
	shift
done

if [ ${#failures[@]} -gt 0 ]; then
	echo
	echo "failures:"
	printf '  %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
