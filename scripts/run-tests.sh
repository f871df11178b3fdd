#!/bin/bash
# SPDX-License-Identifier: MIT
# Runs the unit tests (cmocka, TAP output) and the integration tests (tests/integration/test_*.sh,
# which print "PASS name", "FAIL name: why" or "SKIP name: why" lines, "SKIP name (N checks):
# why" for a block), and ends with one line: "N passed, N failed, N skipped". Each integration
# script declares its checks ("# checks: N"); one that reports more or fewer, or exits nonzero,
# fails. The integration tests as a whole skip only when asked (SKIP_INTEGRATION=1): without
# root or BPF they fail. Exit status 1 if anything failed. NT_SUMMARY=FILE (with NT_PASS=label)
# also appends the failures and the count line there: make check prints them last, so that
# a CI log's tail names what failed, whatever followed.
# A script (and a unit test binary) has NT_SCRIPT_TIMEOUT seconds (default 900): one that runs
# past them is killed, with every process it started (found by a marker in their environment,
# which follows them into sessions of their own), and fails as "timeout", so that a hang costs
# one script and names it instead of running CI past its own limit. Each script's line
# "took Ns" says how long it ran.
# NT_SANITIZER_LOGS=DIR (the sanitized pass): each script's ASan, LeakSanitizer and UBSan
# reports go to files under DIR/SCRIPT (log_path) instead of the stderr most tracer calls
# ignore, and a script that leaves one fails as "sanitizer", whatever its checks said.
set -u
limit=${NT_SCRIPT_TIMEOUT:-900}

passed=0 failed=0 skipped=0
failures=()

run_unit() {
	local bin=$1 out
	out=$(CMOCKA_MESSAGE_OUTPUT=TAP timeout -k 15 "$limit" "$bin" 2>&1)
	local rc=$?
	printf '%s\n' "$out" | sed "s|^|$(basename "$bin"): |"
	local ok nok skp
	ok=$(printf '%s\n' "$out" | grep -c '^ok ')
	# cmocka's TAP says "not ok N # SKIP name" for a skip()
	skp=$(printf '%s\n' "$out" | grep -cE '^not ok [0-9]+ # SKIP')
	nok=$(($(printf '%s\n' "$out" | grep -c '^not ok ') - skp))
	passed=$((passed + ok))
	failed=$((failed + nok))
	skipped=$((skipped + skp))
	if [ "$nok" -gt 0 ]; then
		failures+=("$(basename "$bin"): $nok failed")
	elif [ "$rc" -ne 0 ] || [ "$ok" -eq 0 ]; then
		# a crash or a binary that ran nothing counts as a failure
		failed=$((failed + 1))
		failures+=("$(basename "$bin"): exit $rc, $ok tests ran")
	fi
}

# the number of checks a script declares, empty if none
declared() { sed -n 's/^# checks: \([0-9][0-9]*\)$/\1/p' "$1" | head -1; }

# runner_fail SCRIPT CHECK WHY: a failure the runner finds itself, in the scripts' form
runner_fail() {
	echo "$1: FAIL $2: $3"
	failed=$((failed + 1))
	failures+=("$1: $2: $3")
}

# kill_marked MARKER: SIGKILL every process whose environment holds MARKER (NT_TEST_RUN=...);
# prints how many there were
kill_marked() {
	local e pid n=0
	for e in /proc/[0-9]*/environ; do
		pid=${e#/proc/}
		pid=${pid%/environ}
		if { tr '\0' '\n' <"$e"; } 2>/dev/null | grep -qxF "$1"; then
			kill -9 "$pid" 2>/dev/null && n=$((n + 1))
		fi
	done
	echo $n
}

# sanitizer_reports DIR: status 0 and one line (how many reports, the first one's summary line
# and file) if the sanitizers left a report in DIR; the reports stay there
sanitizer_reports() {
	local f n=0 first=
	for f in "$1"/*; do
		[ -s "$f" ] || continue
		n=$((n + 1))
		[ -n "$first" ] || first=$f
	done
	[ "$n" -eq 0 ] && return 1
	echo "$n report(s), the first: $(grep -m1 -E '^SUMMARY:|runtime error' "$first" || head -1 "$first") ($first)"
}

# start_script SCRIPT: runs SCRIPT in the background, its output to LANE_DIR/NAME.out and its
# exit status, what it left running and how long it took to LANE_DIR/NAME.meta; ASYNC_PID is
# the runner's pid
start_script() {
	local t=$1 name start marker
	name=$(basename "$t" .sh)
	start=$(date +%s)
	marker="NT_TEST_RUN=$name-$$-$start"
	local san=() sandir=
	if [ -n "${NT_SANITIZER_LOGS:-}" ]; then
		sandir=$NT_SANITIZER_LOGS/$name
		rm -rf "$sandir"
		mkdir -p "$sandir"
		# one log_path for both: the sanitizers share it (the last one set wins)
		san=("ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}log_path=$sandir/report"
			"UBSAN_OPTIONS=${UBSAN_OPTIONS:-}${UBSAN_OPTIONS:+:}print_stacktrace=1:log_path=$sandir/report")
	fi
	(
		env "$marker" "${san[@]}" timeout -k 15 "$limit" bash "$t" >"$LANE_DIR/$name.out" 2>&1 </dev/null
		r=$?
		# the CPU seconds its processes used (user + system, those waited for; a job left
		# running is not in it)
		# (times in this shell: a command substitution's fork has no children of its own)
		times >"$LANE_DIR/$name.times"
		cpu=$(tail -1 "$LANE_DIR/$name.times" | awk '{ for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } printf "%.0f", s }')
		# what the script left behind (a killed one's tracer, its job in a session of its
		# own) is killed here
		echo "$r $(kill_marked "$marker") $(($(date +%s) - start)) $cpu" >"$LANE_DIR/$name.meta"
	) &
	ASYNC_PID=$!
	MARKERS[$ASYNC_PID]=$marker
}

# finish_script SCRIPT [ALONE_AGAIN]: its output (as SCRIPT: LINE) and counts, once start_script's
# run ended. A script that failed beside others (NT_LANES > 1, not "# lane: alone") for no
# timeout and no sanitizer report is not counted: its lines are printed as SCRIPT[lane]: LINE
# and it goes on RERUN, to run again alone once the lanes are done (ALONE_AGAIN=1), where it
# counts; the checks it failed beside others are said in the summary (FLAKY) whatever the
# second run gives, each with its message and what docs/tests.md's table says of its cause
declare -a RERUN=() FLAKY=()
declare -A LANE_FAILS=()
finish_script() {
	local t=$1 again=${2:-0} name want line n got=0 rc left took cpu msg
	local p=0 f=0 s=0 fl=() out=() hard=0 why
	name=$(basename "$t" .sh)
	want=$(declared "$t")
	read -r rc left took cpu <"$LANE_DIR/$name.meta"
	while IFS= read -r line; do
		out+=("$line")
		case "$line" in
		PASS\ *)
			p=$((p + 1))
			got=$((got + 1))
			;;
		FAIL\ *)
			f=$((f + 1))
			got=$((got + 1))
			fl+=("${line#FAIL }")
			;;
		SKIP\ *)
			n=1
			[[ $line =~ ^SKIP\ [^\ :]+\ \(([0-9]+)\ checks\): ]] && n=${BASH_REMATCH[1]}
			s=$((s + n))
			got=$((got + n))
			;;
		esac
	done <"$LANE_DIR/$name.out"
	msg="took ${took}s, cpu ${cpu}s"
	[ "$left" -gt 0 ] && msg+=", killed $left processes it left behind"
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		fl+=("timeout: ran past ${limit}s and was killed (NT_SCRIPT_TIMEOUT)")
		hard=1
	else
		# a script that dies without saying FAIL still fails
		[ "$rc" = 0 ] || fl+=("exit: exited ${rc:-?}")
		if [ -n "${NT_SANITIZER_LOGS:-}" ] && why=$(sanitizer_reports "$NT_SANITIZER_LOGS/$name"); then
			fl+=("sanitizer: $why")
			hard=1
		fi
		if [ -z "$want" ]; then
			fl+=("count: declares no count (a line '# checks: N')")
		elif [ "$got" -ne "$want" ]; then
			fl+=("count: reported $got checks, declares $want")
		fi
	fi
	if [ ${#fl[@]} -gt 0 ] && [ "$again" = 0 ] && [ "$hard" = 0 ] && [ "${NT_LANES:-1}" -gt 1 ] &&
		[ "$(lane_of "$t")" != alone ]; then
		printf '%s\n' "${out[@]}" | sed "s|^|$name[lane]: |"
		echo "$name[lane]: $msg; failed beside other scripts: runs again alone after the lanes"
		RERUN+=("$t")
		LANE_FAILS[$name]=$(printf '%s\n' "${fl[@]}")
		return
	fi
	[ ${#out[@]} -eq 0 ] || printf '%s\n' "${out[@]}" | sed "s|^|$name: |"
	echo "$name: $msg"
	passed=$((passed + p))
	skipped=$((skipped + s))
	for line in "${fl[@]}"; do
		case "$line" in
		timeout:* | exit:* | sanitizer:* | count:*)
			runner_fail "$name" "${line%%:*}" "${line#*: }"
			;;
		*)
			failed=$((failed + 1))
			failures+=("$name: $line")
			;;
		esac
	done
	if [ "$again" = 1 ]; then
		local alone=passed check
		[ ${#fl[@]} -eq 0 ] || alone=failed
		while IFS= read -r line; do
			[ -n "$line" ] || continue
			check=${line%%:*}
			line=${line#*: }
			FLAKY+=("$name $check (alone: $alone): ${line:0:240} [$(known_cause "$name" "$check")]")
		done <<<"${LANE_FAILS[$name]}"
	fi
}

# known_cause SCRIPT CHECK: what docs/tests.md's table of checks that failed once says of it
# ("| SCRIPT | CHECK | seen | cause |"), or that it is not there yet
TESTS_MD=$(cd "$(dirname "$0")/.." && pwd)/docs/tests.md
known_cause() {
	local cause
	cause=$(awk -F'|' -v s="$1" -v c="$2" '{ gsub(/[ `]/, "", $2); gsub(/[ `]/, "", $3) }
		$2 == s && $3 == c { sub(/^ +/, "", $5); sub(/ +$/, "", $5); print $5; exit }' "$TESTS_MD" 2>/dev/null)
	if [ -z "$cause" ]; then
		echo "new: not in docs/tests.md's table of checks that failed once (add it, cause unknown until found)"
	elif [ "$cause" = unknown ]; then
		echo "again, cause unknown (docs/tests.md): an intermittent bug to find, not to run again"
	else
		echo "known: $cause"
	fi
}

# Lanes: NT_LANES scripts at a time (default 1), each script's lines printed together as it
# ends. A script that declares "# lane: alone" (it loads the machine, or measures what a
# neighbour would disturb) runs with no other beside it: those first, one after another; then
# the others, those that declare "# lane: long N" first, the longest first (N: about how many
# seconds it runs), so that no long one starts last.
declare -A RUNNING=() MARKERS=()
reap_one() {
	local pid
	wait -n -p pid "${!RUNNING[@]}"
	finish_script "${RUNNING[$pid]}"
	unset "RUNNING[$pid]" "MARKERS[$pid]"
}
# the runner stopped (^C, a SIGTERM): what its running scripts started goes with it
stop_lanes() {
	local m
	trap - INT TERM
	for m in "${MARKERS[@]}"; do kill_marked "$m" >/dev/null; done
	exit 130
}
trap stop_lanes INT TERM
lane_of() { sed -n 's/^# lane: \([a-z]*\)\( .*\)\{0,1\}$/\1/p' "$1" | head -1; }
# a long script's seconds ("# lane: long N"), 0 if it gives none
long_secs() { sed -n 's/^# lane: long \([0-9][0-9]*\).*/\1/p' "$1" | head -1 | grep . || echo 0; }
lanes_run() {
	local t lanes=${NT_LANES:-1} alone=() long=() rest=()
	for t in "$@"; do
		case $(lane_of "$t") in
		alone) alone+=("$t") ;;
		long) long+=("$(long_secs "$t") $t") ;;
		*) rest+=("$t") ;;
		esac
	done
	LANE_DIR=$(mktemp -d /tmp/nccltrace-lanes.XXXXXX)
	for t in "${alone[@]}"; do
		start_script "$t"
		RUNNING[$ASYNC_PID]=$t
		reap_one
	done
	[ ${#long[@]} -eq 0 ] || mapfile -t long < <(printf '%s\n' "${long[@]}" | sort -rn | cut -d' ' -f2-)
	for t in "${long[@]}" "${rest[@]}"; do
		while [ ${#RUNNING[@]} -ge "$lanes" ]; do reap_one; done
		start_script "$t"
		RUNNING[$ASYNC_PID]=$t
	done
	while [ ${#RUNNING[@]} -gt 0 ]; do reap_one; done
	for t in "${RERUN[@]}"; do
		start_script "$t"
		RUNNING[$ASYNC_PID]=$t
		wait "$ASYNC_PID"
		finish_script "$t" 1
		unset "RUNNING[$ASYNC_PID]" "MARKERS[$ASYNC_PID]"
	done
	RERUN=()
	rm -rf "$LANE_DIR"
}

run_integration() {
	local dir=$1 t why d n=0
	if [ "${SKIP_INTEGRATION:-}" = 1 ]; then
		for t in "$dir"/test_*.sh; do
			[ -e "$t" ] || continue
			d=$(declared "$t")
			[ -n "$d" ] || runner_fail "$(basename "$t" .sh)" count "declares no count (a line '# checks: N')"
			n=$((n + ${d:-0}))
		done
		echo "integration: SKIP all ($n checks): SKIP_INTEGRATION=1"
		skipped=$((skipped + n))
		return
	fi
	# CI must never pass by skipping them
	if [ "$(id -u)" -ne 0 ]; then
		runner_fail integration all "needs root to load BPF programs (run 'make check' as root, or SKIP_INTEGRATION=1 to skip them)"
		return
	fi
	if ! why=$(bash -c '. "$1/lib.sh" && bpf_usable' _ "$dir"); then
		runner_fail integration all "BPF not usable here: $why (SKIP_INTEGRATION=1 to skip them)"
		return
	fi
	local todo=()
	for t in "$dir"/test_*.sh; do
		[ -e "$t" ] || continue
		# SKIP_SCRIPTS="test_a test_b": scripts this pass leaves out, said with SKIP_SCRIPTS_WHY
		if [[ " ${SKIP_SCRIPTS:-} " == *" $(basename "$t" .sh) "* ]]; then
			d=$(declared "$t")
			echo "$(basename "$t" .sh): SKIP $(basename "$t" .sh) (${d:-0} checks): ${SKIP_SCRIPTS_WHY:-left out of this pass}"
			skipped=$((skipped + ${d:-0}))
			continue
		fi
		todo+=("$t")
	done
	lanes_run "${todo[@]}"
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

if [ ${#FLAKY[@]} -gt 0 ]; then
	echo
	echo "checks that failed beside other scripts (NT_LANES=${NT_LANES:-1}), their scripts run again alone:"
	printf '  %s\n' "${FLAKY[@]}"
fi
if [ ${#failures[@]} -gt 0 ]; then
	echo
	echo "failures:"
	printf '  %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed, $skipped skipped"
if [ -n "${NT_SUMMARY:-}" ]; then
	{
		echo "${NT_PASS:-tests}: $passed passed, $failed failed, $skipped skipped"
		[ ${#failures[@]} -eq 0 ] || printf '  %s\n' "${failures[@]}"
		[ ${#FLAKY[@]} -eq 0 ] || printf '  (failed once) %s\n' "${FLAKY[@]}"
	} >>"$NT_SUMMARY"
fi
[ "$failed" -eq 0 ]
