#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/bench-threshold.sh [RUNS]: the adaptive stall threshold against its goals, RUNS times
# each (default 30), under `nccltrace run --no-tui` with the default -t 5:
#   latency: a ring whose steps come every 20 ms, and the fake NCCL's all-reduces every 20 ms,
#     stop on rank 1 for 3 s: ms from the job's own fault marker to the finding's opening, and
#     whether the culprit was right (p50, p90, max);
#   false alarms (findings of any kind) in healthy runs: steady 20 ms steps; every rank pausing
#     3 s every 10 s; a rank 20 % slower; bursts with 1.5 s idle between; steady steps with the
#     machine's every core kept busy by another process;
#   the tracer's CPU with the 100 ms tick: 8 ranks of steady 20 ms steps, per the dump's footer.
# One line per case; the per-run numbers in build/bench-threshold/results.jsonl. CASES="pauses
# bursts" runs only those (ring_stall nccl_stall steady pauses straggler bursts loaded cpu).
set -u
CASES=${CASES:-ring_stall nccl_stall steady pauses straggler bursts loaded cpu}
want() { [[ " $CASES " == *" $1 "* ]]; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${1:-30}
NT=$ROOT/build/nccltrace RJ=$ROOT/build/ringjob NJ=$ROOT/build/nccljob
OUTD=$ROOT/build/bench-threshold
T=$(mktemp -d /tmp/nccltrace-thr.XXXXXX)
HOGS=()
trap 'kill "${HOGS[@]}" 2>/dev/null; rm -rf "$T"' EXIT
mkdir -p "$OUTD"
: >"$OUTD/results.jsonl"

# one traced run: dump $T/run.jsonl, output $T/run.out
traced() {
	rm -f "$T/run.jsonl"
	"$NT" run --no-tui --dump "$T/run.jsonl" -- "$@" >"$T/run.out" 2>&1
}

# latency CASE JOB...: ms from the fault marker to the first finding, and the culprit's pid
latency() {
	local name=$1 lat=() ok=0
	shift
	for ((i = 0; i < RUNS; i++)); do
		traced "$@"
		local m p o
		m=$(grep -m1 -oE 'at_realtime_ns [0-9]+' "$T/run.out" | cut -d' ' -f2)
		p=$(grep -m1 -E '(STALL|FAULT) ' "$T/run.out" | sed 's/.* pid \([0-9]*\) .*/\1/')
		o=$(jq -c 'select(.type=="finding" and .event=="open")' "$T/run.jsonl" | head -1)
		if [ -n "$m" ] && [ -n "$o" ]; then
			lat+=($((($(jq -r .realtime_ns <<<"$o") - m) / 1000000)))
			[ "$(jq -r .pid <<<"$o")" = "$p" ] && ok=$((ok + 1))
		fi
		jq -c --arg c "$name" --arg m "${m:-0}" '{case: $c, marker_ns: ($m | tonumber),
			open: .}' <<<"${o:-null}" >>"$OUTD/results.jsonl"
	done
	local sorted n
	sorted=$(printf '%s\n' "${lat[@]}" | sort -n)
	n=${#lat[@]}
	if [ "$n" -eq 0 ]; then
		echo "$name: no finding in $RUNS runs"
		return
	fi
	echo "$name: $n/$RUNS named, $ok right culprits; ms after the fault: p50" \
		"$(sed -n "$(((n + 1) / 2))p" <<<"$sorted"), p90 $(sed -n "$(((n * 9 + 9) / 10))p" <<<"$sorted")," \
		"max $(tail -1 <<<"$sorted")"
}

# alarms CASE JOB...: runs with any finding, of RUNS
alarms() {
	local name=$1 bad=0
	shift
	for ((i = 0; i < RUNS; i++)); do
		traced "$@"
		local n
		n=$(jq -s '[.[] | select(.type=="finding" and .event=="open")] | length' "$T/run.jsonl")
		[ "$n" -gt 0 ] && bad=$((bad + 1))
		jq -c --arg c "$name" '{case: $c, findings: [.[] | select(.type=="finding" and
			.event=="open") | {kind, rank, early, threshold_s}]}' -s "$T/run.jsonl" \
			>>"$OUTD/results.jsonl"
	done
	echo "$name: $bad false alarms in $RUNS healthy runs"
}

STEP=(--ranks 4 --step-every 0.02 -q)
want ring_stall && latency ring_stall "$RJ" "${STEP[@]}" --duration 12 --stall-rank 1 --stall-after 6 --stall-for 3
want nccl_stall && latency nccl_stall "$NJ" --ranks 3 --iters 300 --step-delay 0.02 --fault in-collective \
	--fault-rank 1 --fault-for 3 --timeout 40
want steady && alarms steady "$RJ" "${STEP[@]}" --duration 10
want pauses && alarms pauses "$RJ" "${STEP[@]}" --duration 22 --pause-every 10 --pause-for 3
want straggler && alarms straggler "$RJ" "${STEP[@]}" --duration 10 --slow-rank 2
want bursts && alarms bursts "$RJ" "${STEP[@]}" --duration 12 --pause-every 2 --pause-for 1.5
if want loaded; then
	for ((c = 0; c < $(nproc); c++)); do
		(while :; do :; done) &
		HOGS+=($!)
	done
	alarms loaded "$RJ" "${STEP[@]}" --duration 10
	kill "${HOGS[@]}" 2>/dev/null
	HOGS=()
	wait 2>/dev/null
fi
want cpu || exit 0
traced "$RJ" --ranks 8 --step-every 0.02 -q --duration 20
jq -r 'select(.type=="footer") | "cpu: 8 ranks of 20 ms steps for 20 s: tracer \(.totals.tracer_cpu_s *
	100 | floor / 100) s of CPU, \(.totals.tracer_cpu_s / 20 * 1000 | floor / 10) % of one core"' \
	"$T/run.jsonl"
