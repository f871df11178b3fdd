# SPDX-License-Identifier: MIT
# Shared helpers of the integration tests: real BPF programs, real processes, real TCP.
# Each test prints "PASS name", "FAIL name: why" or "SKIP name: why"; one SKIP line for a block
# of N checks says so: "SKIP name (N checks): why". A script declares near its top how many
# checks it runs ("# checks: N") and ends with end_checks; scripts/run-tests.sh fails a script
# whose lines do not add up to N, or that exits nonzero.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# NT_TRACER: another build of nccltrace to test (make asan-check: the sanitizers' one)
NT=${NT_TRACER:-$ROOT/build/nccltrace}
RJ=$ROOT/build/ringjob
# The jobs' waits (the fake NCCL's and the ring demo's) sleep this many microseconds after a
# call that found nothing to do (tests/fixtures/fakenccl.c fakeIdle): NCCL spins there, but on 2
# CPUs spinning jobs take them from the tracer under test and from the scripts beside it. A few
# thousand EAGAINs a second per waiter are still there to be seen. The scripts about busy-polling
# jobs (test_flood, test_scale) set it to 0: they spin as NCCL does.
export FIXTURE_IDLE_US=${FIXTURE_IDLE_US-200}
TMP=$(mktemp -d /tmp/nccltrace-test.XXXXXX)
chmod 755 "$TMP"

# the script's declared count; empty when lib.sh is sourced by something else
CHECKS=
[ -f "$0" ] && CHECKS=$(sed -n 's/^# checks: \([0-9][0-9]*\)$/\1/p' "$0" | head -1)
NRESULTS=0
ENDED=
AT_EXIT=()

# NT_KEEP_DUMPS=DIR (make check's plain pass): every trace dump (.jsonl, .jsonl.zst) the script
# left in TMP is copied to DIR/SCRIPT/ before TMP goes, for test_dumps.sh to read with the
# sanitizers' build
keep_dumps() {
	local d f
	[ -n "${NT_KEEP_DUMPS:-}" ] && [ -f "$0" ] || return 0
	d=$NT_KEEP_DUMPS/$(basename "$0" .sh)
	rm -rf "$d"
	mkdir -p "$d"
	while IFS= read -r -d '' f; do
		cp "$f" "$d/$(tr / _ <<<"${f#"$TMP"/}")" 2>/dev/null
	done < <(find "$TMP" \( -name '*.jsonl' -o -name '*.jsonl.zst' \) -type f -print0 2>/dev/null)
}

# user_root USER: sets UROOT to the checkout as USER reaches it, for a job run as USER: ROOT
# where USER can read the build there; else ROOT bound (mount --bind) at a directory of its own
# under /tmp, outside TMP, unmounted when the script exits. A checkout in root's 0700 home (where
# root's git clone puts it) is unreachable to any other user: the job and the libraries the
# tracer puts into it (NCCLTRACE_LIBDIR=$UROOT/build) come from there instead. Returns 1, UROOT
# ROOT, if the bind fails.
user_root() {
	local d
	UROOT=$ROOT
	runuser -u "$1" -- test -r "$ROOT/build/nccljob" 2>/dev/null && return 0
	d=$(mktemp -d /tmp/nccltrace-checkout.XXXXXX) || return 1
	chmod 755 "$d"
	if ! mount --bind "$ROOT" "$d"; then
		rmdir "$d"
		return 1
	fi
	# rmdir, never rm -r: what is still mounted there is the checkout
	at_exit "umount -l '$d'; rmdir '$d'"
	echo "# $ROOT is not readable by $1: its jobs run from a bind mount at $d"
	UROOT=$d
}

# at_exit COMMAND: run COMMAND (eval'd) when the script exits, before TMP goes
at_exit() { AT_EXIT+=("$1"); }

# The last check's status must not become the script's: a script that declares its checks exits
# 0 through end_checks only, and any other way out (an early exit 0, falling off the end) is 70
on_exit() {
	local rc=$? c
	for c in "${AT_EXIT[@]}"; do eval "$c"; done
	keep_dumps
	rm -rf "$TMP"
	if [ -n "$CHECKS" ] && [ -z "$ENDED" ] && [ $rc -eq 0 ]; then
		echo "$(basename "$0"): ended without reaching end_checks" >&2
		rc=70
	fi
	exit $rc
}
trap on_exit EXIT

# the last line of every script, and the way out after skip_rest
end_checks() {
	ENDED=1
	exit 0
}

pass() {
	NRESULTS=$((NRESULTS + 1))
	echo "PASS $1"
}
fail() {
	NRESULTS=$((NRESULTS + 1))
	echo "FAIL $1: $2"
}
skip() {
	NRESULTS=$((NRESULTS + 1))
	echo "SKIP $1: $2"
}
# skip_n N NAME WHY: a block of N checks switched off
skip_n() {
	if [ "$1" -eq 1 ]; then
		skip "$2" "$3"
	else
		NRESULTS=$((NRESULTS + $1))
		echo "SKIP $2 ($1 checks): $3"
	fi
}
# skip_rest NAME WHY: every check of the script not reported yet
skip_rest() { skip_n $((${CHECKS:-1} - NRESULTS)) "$1" "$2"; }

# check NAME CONDITION-DESCRIPTION -- command...: PASS if the command succeeds
check() {
	local name=$1 why=$2
	shift 3
	if "$@"; then pass "$name"; else fail "$name" "$why"; fi
}

# wait_for SECONDS COMMAND...: poll every 100 ms
wait_for() {
	local n=$(($1 * 10))
	shift
	while [ $n -gt 0 ]; do
		"$@" && return 0
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}

# Can this kernel run nccltrace at all? Prints the reason and returns 1 if not.
bpf_usable() {
	local out rc
	out=$("$NT" run --dump "$TMP/probe.jsonl" -- true 2>&1)
	rc=$?
	rm -f "$TMP/probe.jsonl"
	if [ $rc -eq 69 ] || [ $rc -eq 77 ]; then
		echo "$out" | tail -1
		return 1
	fi
	return 0
}

# jqe FILTER [FILE]: the filter's last output is neither false nor null. No input (an empty
# string, a missing or empty file) is a failure: jq -e alone exits 0 on no input at all, which
# would pass a check on a finding that never came
jqe() {
	local out
	out=$(jq -c "$@" 2>/dev/null) || return 1
	out=$(tail -n 1 <<<"$out")
	[ -n "$out" ] && [ "$out" != false ] && [ "$out" != null ]
}

# "VALUE SOURCE" of setting NAME of the first finding in FINDINGS (JSON)
first_setting() { jq -r ".[0].settings.$2 | \"\\(.value) \\(.source)\"" <<<"$1"; }

# need_bpf NAME: BPF works here; else the rest of the script is skipped (with the reason) and
# status 1
need_bpf() {
	local why
	if ! why=$(bpf_usable); then
		skip_rest "$1" "BPF not usable here: $why"
		return 1
	fi
}

# need_fixture NAME FILE...: BPF works here and the fixtures are built; else a skip (with the
# reason) or a failure for NAME, and status 1
need_fixture() {
	local name=$1 f
	shift
	need_bpf "$name" || return 1
	for f in "$@"; do
		if [ ! -e "$f" ]; then
			fail "$name" "fixture not built: run make ($f)"
			return 1
		fi
	done
}

# "kind rank,kind rank" of findings (JSON from findings())
kind_ranks() { jq -r 'map(.kind + " " + (.rank|tostring)) | join(",")' <<<"$1"; }

# findings of a dump as JSON
findings() { "$NT" report --json "$1" | jq -c '.findings'; }

# "rank R pid P" that the first finding in FINDINGS (JSON) names
culprit() { jq -r '.[0] | "rank \(.rank) pid \(.pid)"' <<<"$1"; }

# pid of rank R in a dump
rank_pid() { jq -r "select(.type==\"rank\" and .rank==$2) | .pid" "$1" | head -1; }

# The ground truth a finding is graded against is the job's own marker, printed by the faulty
# rank as it stalls: "ringjob: STALL rank R pid P mode M at_realtime_ns T" (tests/demo/ringworker.c)
# or "nccljob: FAULT KIND rank R pid P at_realtime_ns T" (tests/fixtures/nccljob.c), in FILE
marker() { grep -m1 -E '(ringjob: STALL|nccljob: FAULT) .*pid [0-9]+ .*at_realtime_ns [0-9]+' "$1"; }
marker_ns() { marker "$1" | sed 's/.* at_realtime_ns \([0-9]*\).*/\1/'; }
# When the wait on the faulty rank began: ringjob's rank last sent to its successor up to a ring
# step before its fault (last_send_realtime_ns); else the fault itself
marker_quiet_ns() {
	local q
	q=$(marker "$1" | sed -n 's/.* last_send_realtime_ns \([0-9]*\).*/\1/p')
	if [ -n "$q" ] && [ "$q" != 0 ]; then echo "$q"; else marker_ns "$1"; fi
}
marker_pid() { marker "$1" | sed 's/.* pid \([0-9]*\) .*/\1/'; }

# realtime_ns at which finding KIND opened in dump
opened_ns() {
	jq -r "select(.type==\"finding\" and .event==\"open\" and .kind==\"$2\") | .realtime_ns" "$1" |
		head -1
}

# The faulty rank prints its marker as it stalls, which can come a little after the others
# started waiting on it: nccljob's ring-setup waiters enter the setup up to 7 ms before the
# marker. A threshold-bound lower limit allows that much, with room under load.
MARKER_SLACK_MS=50

# check_latency NAME T0 T1 LO_MS HI_MS [T0_LO]: T1 - T0 (realtime ns: fault marker, finding) is
# at most HI_MS, and T1 - T0_LO (the wait's start, T0 if not given) at least LO_MS: bounded on
# both sides, a finding that opens too early is a false alarm. A LO_MS above 0 (a threshold) is
# MARKER_SLACK_MS less.
check_latency() {
	local name=$1 t0=$2 t1=$3 lo=$4 hi=$5 tl=${6:-$2} d dl
	if [ -z "$t0" ] || [ -z "$t1" ] || [ -z "$tl" ]; then
		fail "${name}_latency" "no fault marker ($t0) or no finding ($t1)"
		return
	fi
	[ "$lo" -gt 0 ] && lo=$((lo - MARKER_SLACK_MS))
	d=$(((t1 - t0) / 1000000))
	dl=$(((t1 - tl) / 1000000))
	echo "# $name: detected $d ms after the fault, $dl ms after the wait began (want $lo..$hi ms)"
	check "${name}_latency" "detected $d ms after the fault, $dl ms after the wait began, want $lo..$hi ms" -- \
		test $((t1 - tl)) -ge $((lo * 1000000)) -a $((t1 - t0)) -le $((hi * 1000000))
}

# The threshold (ms) finding KIND opened with in DUMP where it opened early, below -t (the
# adaptive threshold: the job's own rhythm), else empty
opened_early_ms() {
	jq -r "select(.type==\"finding\" and .event==\"open\" and .kind==\"$2\" and .early==true) |
		.threshold_s * 1000 | floor" "$1" | head -1
}

# threshold_ms DUMP KIND THRESH [fixed]: the threshold (ms) finding KIND in DUMP is held to: -t (THRESH,
# seconds), or the threshold it reports where it opened early (at least 1 s, the floor of the
# adaptive one)
threshold_ms() {
	local thr=$(($3 * 1000)) early
	# --fixed-threshold: -t by definition, whatever the finding says of itself
	[ "${4:-}" = fixed ] && echo "$thr" && return
	early=$(opened_early_ms "$1" "$2")
	[ -n "$early" ] && [ "$early" -ge 1000 ] && [ "$early" -lt "$thr" ] && thr=$early
	echo "$thr"
}

# detected NAME OUT DUMP KIND THRESH [fixed]: finding KIND opened in DUMP at least its threshold
# (threshold_ms; -t where the run had --fixed-threshold: say fixed) after the wait on the faulty
# rank began, and at most that + 1 s after its fault (markers in OUT)
detected() {
	local thr
	thr=$(threshold_ms "$3" "$4" "$5" "${6:-}")
	check_latency "$1" "$(marker_ns "$2")" "$(opened_ns "$3" "$4")" "$thr" \
		$((thr + 1000)) "$(marker_quiet_ns "$2")"
}

# own_pids PATTERN | own_pids PGREP-ARGS...: the pids of processes whose command line matches
# PATTERN (pgrep -f; or those pgrep's arguments choose) that
# this script started: scripts/run-tests.sh runs scripts side by side (lanes), each with its
# own marker NT_TEST_RUN in the environment of everything it starts (the jobs, their sessions
# of their own, the user nobody's); run by hand, without a marker, every match
own_pids() {
	local p a=("$@")
	[ $# -eq 1 ] && a=(-f "$1")
	for p in $(pgrep "${a[@]}"); do
		if [ -n "${NT_TEST_RUN:-}" ]; then
			{ tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null |
				grep -qxF "NT_TEST_RUN=$NT_TEST_RUN" || continue
		fi
		echo "$p"
	done
}
# own_pkill PATTERN: SIGKILL own_pids PATTERN
own_pkill() {
	local p
	for p in $(own_pids "$1"); do kill -9 "$p" 2>/dev/null; done
	true
}
# own_running PATTERN | own_running PGREP-ARGS...: one of own_pids is there
own_running() { [ -n "$(own_pids "$@")" ]; }

# processes of the demo job left behind?
no_leftovers() { ! own_running "$RJ"; }

kill_leftovers() { own_pkill "$RJ"; }

# jq_ok FILTER FILE: the filter yields true for some record
# (jq -e alone judges only the last record)
# whole DUMP: its records, with each snapshot and state whole (nccltrace cat: the dump writes
# them as what changed since the last one, which jq alone cannot read)
whole() { "$NT" cat "$1"; }

jq_ok() { jq -s -e "[.[] | $1] | any" "$2" >/dev/null 2>&1; }

# A negative check proves nothing on a missing or empty file: nonempty FILE says it has
# something in it
nonempty() {
	grep -q '[^[:space:]]' "$1" 2>/dev/null && return 0
	echo "# $1 is missing or empty" >&2
	return 1
}
# lacks FILE GREP-ARGS...: FILE is not empty, and grep finds no match in it
lacks() { nonempty "$1" && ! grep -q "${@:2}" "$1"; }
# no_record FILTER FILE: FILE is not empty, and none of its records matches FILTER (a file jq
# cannot read is no pass either)
no_record() {
	nonempty "$2" || return 1
	jq -s -e "[.[] | $1] | any" "$2" >/dev/null 2>&1
	[ $? -eq 1 ]
}

# one_line TEXT: an error message of exactly one line, and not a blank one ($(...) has dropped
# the final newline; wc -l would count "" as one line)
one_line() { [ -n "${1//[[:space:]]/}" ] && [ "$1" = "${1%%$'\n'*}" ]; }
# error_is WANT RC TEXT: exit status RC is WANT, and the message TEXT one line
error_is() { [ "$2" -eq "$1" ] && one_line "$3"; }

# contains HAYSTACK NEEDLE
contains() { grep -qF -- "$2" <<<"$1"; }

# held_threads PID...: the threads of these processes that are stopped (T, t) or traced
# (TracerPid not 0), as "tid:state:tracer ..."; empty when none
held_threads() {
	local p t s tp out=""
	for p in "$@"; do
		for t in /proc/"$p"/task/*; do
			s=$(awk '/^State:/{print $2}' "$t/status" 2>/dev/null)
			tp=$(awk '/^TracerPid:/{print $2}' "$t/status" 2>/dev/null)
			if [ "$s" = T ] || [ "$s" = t ] || { [ -n "$tp" ] && [ "$tp" != 0 ]; }; then
				out+="${t##*/}:$s:$tp "
			fi
		done
	done
	echo "$out"
}

# Debian's bpftool does not name the holder of a program: the tracer's own programs and links
# are read by id from its fdinfo (other tracers may run beside this test)
held_ids() { grep -hE '^(prog|link)_id:' /proc/$1/fdinfo/* 2>/dev/null | sort -u | tr -d ' \t'; }
# how many of the ids are still loaded, once the kernel has freed what it frees (RCU)
ids_left() {
	local left id
	for _ in $(seq 1 30); do
		left=0
		for id in $1; do
			bpftool "${id%%_id:*}" show id "${id#*:}" >/dev/null 2>&1 && left=$((left + 1))
		done
		[ $left = 0 ] && break
		sleep 0.1
	done
	echo $left
}
