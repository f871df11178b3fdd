#!/bin/bash
# SPDX-License-Identifier: MIT
# The job's slowdown while its stacks are read (docs/benchmarks.md): a 4-rank Python TCP ring
# (tests/fixtures/pyring.py) steps as fast as it can; its step rate is measured with nothing
# reading it, then while build/pycost reads the Python stacks of all four ranks (process_vm_readv,
# nothing stopped) at 1/s (what a session does for a waiting process) and 50/s, then the same
# with each rank's main thread also stopped and unwound (the native stack, ptrace).
#   scripts/bench-pystacks.sh [SECONDS] [ROUNDS] [PYTHON]   (default 4 s per phase, 3 rounds,
#   python3; root for the native stacks)
set -u
cd "$(dirname "$0")/.."
SECS=${1:-4}
ROUNDS=${2:-3}
PY=${3:-python3}
COST=build/pycost
TMP=$(mktemp -d /tmp/bench-pystacks.XXXXXX)
trap 'pkill -9 -f "pyring.py --steps 100000000" 2>/dev/null; rm -rf "$TMP"' EXIT
[ -x "$COST" ] || {
	echo "bench-pystacks: $COST not built: run make build/pycost" >&2
	exit 1
}
"$PY" tests/fixtures/pyring.py --steps 100000000 --sleep-rank -1 --report-every 500 >"$TMP/job.out" 2>&1 &
for _ in $(seq 100); do
	[ "$(grep -c READY "$TMP/job.out")" -ge 4 ] && break
	sleep 0.1
done
PIDS=$(sed -n 's/^pyring: READY rank [0-9]* pid \([0-9]*\)$/\1/p' "$TMP/job.out" | tr '\n' ' ')
sleep 1

# rate FROM_NS TO_NS: steps per second between two times, from the job's PROGRESS lines
rate() {
	awk -v a="$1" -v b="$2" '$2=="PROGRESS" && $6>=a && $6<=b {if (!n++) {s0=$4; t0=$6}; s1=$4; t1=$6}
		END {if (n > 1) printf "%.0f\n", (s1 - s0) / ((t1 - t0) / 1e9); else print 0}' "$TMP/job.out"
}
now() { date +%s%N; }
# phase NAME [PYCOST-ARGS]: the step rate while it runs, into $TMP/NAME.rates; the reads' line
phase() {
	local name=$1 t0 t1
	shift
	t0=$(now)
	if [ $# -gt 0 ]; then
		"$COST" "$@" "$SECS" $PIDS >>"$TMP/$name.reads"
	else
		sleep "$SECS"
	fi
	t1=$(now)
	rate "$t0" "$t1" >>"$TMP/$name.rates"
}
median() { sort -n "$1" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
NAMES=(none py1 py50 nat1 nat50)
ARGS=("" "1" "50" "--native 1" "--native 50")
LABEL=("nothing" "Python stacks, 1/s" "Python stacks, 50/s" "Python + native (main thread stopped), 1/s"
	"Python + native (main thread stopped), 50/s")
# interleaved rounds: the machine's load changes over a minute, each phase sees the same
for _ in $(seq "$ROUNDS"); do
	for i in "${!NAMES[@]}"; do
		# shellcheck disable=SC2086
		phase "${NAMES[$i]}" ${ARGS[$i]}
	done
done
echo "python: $("$PY" -c 'import sys; print(sys.version.split()[0])'), ranks: $PIDS, $ROUNDS rounds of $SECS s, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| reading | steps/s (median; each round) | change | reads (last round) |"
echo "|---|---|---|---|"
BASE=$(median "$TMP/none.rates")
for i in "${!NAMES[@]}"; do
	n=${NAMES[$i]}
	r=$(median "$TMP/$n.rates")
	echo "| ${LABEL[$i]} | $r ($(tr '\n' ' ' <"$TMP/$n.rates" | sed 's/ $//')) | $(awk -v r="$r" -v b="$BASE" 'BEGIN {printf "%+.1f %%", (r - b) / b * 100}') | $( [ -f "$TMP/$n.reads" ] && tail -1 "$TMP/$n.reads" | sed 's/^pycost: //') |"
done
