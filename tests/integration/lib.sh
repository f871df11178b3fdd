# SPDX-License-Identifier: MIT
# Shared helpers of the integration tests: real BPF programs, real processes, real TCP.
# Each test prints "PASS name", "FAIL name: why" or "SKIP name: why".

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
NT=$ROOT/build/nccltrace
RJ=$ROOT/build/ringjob
TMP=$(mktemp -d /tmp/nccltrace-test.XXXXXX)
chmod 755 "$TMP"
trap 'rm -rf "$TMP"' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }

# check NAME CONDITION-DESCRIPTION -- command...: PASS if the command succeeds
check() {
	local name=$1 why=$2
	shift 3
	if "$@"; then pass "$name"; else fail "$name" "$why"; fi
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

# jq -e without the output: a condition for check
jqe() { jq -e "$@" >/dev/null; }

# "VALUE SOURCE" of setting NAME of the first finding in FINDINGS (JSON)
first_setting() { jq -r ".[0].settings.$2 | \"\\(.value) \\(.source)\"" <<<"$1"; }

# need_fixture NAME FILE...: BPF works here and the fixtures are built; else a skip (with the
# reason) or a failure for NAME, and status 1
need_fixture() {
	local name=$1 why f
	shift
	if ! why=$(bpf_usable); then
		skip "$name" "BPF not usable here: $why"
		return 1
	fi
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

# pid of rank R in a dump
rank_pid() { jq -r "select(.type==\"rank\" and .rank==$2) | .pid" "$1" | head -1; }

# the STALL marker the demo job prints: "ringjob: STALL rank R pid P mode M at_realtime_ns T"
stall_ns() { sed -n 's/.*STALL rank .* at_realtime_ns \([0-9]*\).*/\1/p' "$1" | head -1; }

# realtime_ns at which finding KIND opened in dump
opened_ns() {
	jq -r "select(.type==\"finding\" and .event==\"open\" and .kind==\"$2\") | .realtime_ns" "$1" |
		head -1
}

# processes of the demo job left behind?
no_leftovers() { ! pgrep -f "$RJ" >/dev/null; }

kill_leftovers() { pkill -9 -f "$RJ" 2>/dev/null; true; }

# jq_ok FILTER FILE: the filter yields true for some record
# (jq -e alone judges only the last record)
jq_ok() { jq -s -e "[.[] | $1] | any" "$2" >/dev/null 2>&1; }

# contains HAYSTACK NEEDLE
contains() { grep -qF -- "$2" <<<"$1"; }
