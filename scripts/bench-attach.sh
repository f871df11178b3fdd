#!/bin/bash
# SPDX-License-Identifier: MIT
# The cost of `nccltrace attach` to the job: a healthy fake-NCCL job (4 ranks, all-reduces every
# 10 ms) run untraced and with one `attach --once` (attach, 1.5 s traced, detach) in its middle,
# REPS pairs; the job's wall time each way, and from each attach's dump: how long the attach
# took, the threads whose stacks it took, their pauses (each thread stopped alone), the pause of
# a whole process's threads together, and the uprobes attached.
#
#   scripts/bench-attach.sh [REPS]      (default 5; root)
set -u
cd "$(dirname "$0")/.."
REPS=${1:-5}
NT=build/nccltrace
NJ=build/nccljob
TMP=$(mktemp -d /tmp/bench-attach.XXXXXX)
trap 'pkill -9 -f "$NJ" 2>/dev/null; rm -rf "$TMP"' EXIT
for f in "$NT" "$NJ"; do
	[ -x "$f" ] || {
		echo "bench-attach: $f not built: run make" >&2
		exit 1
	}
done
JOB=("$NJ" --ranks 4 --iters 400 --step-delay 0.01 --import-delay 0)

now_ms() { date +%s%3N; }
med() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

for i in $(seq 1 "$REPS"); do
	t0=$(now_ms)
	"${JOB[@]}" >/dev/null 2>&1
	echo $(($(now_ms) - t0)) >>"$TMP/base"
	t0=$(now_ms)
	"${JOB[@]}" >/dev/null 2>&1 &
	job=$!
	sleep 1.5
	a0=$(now_ms)
	"$NT" attach --once --dump "$TMP/a$i.jsonl" "$job" >/dev/null 2>&1
	echo $(($(now_ms) - a0)) >>"$TMP/nt"
	wait $job
	echo $(($(now_ms) - t0)) >>"$TMP/att"
	jq -r 'select(.type=="attach") | "\(.took_s * 1000) \(.threads) \(.max_proc_stopped_ns / 1000) \(.max_stopped_ns / 1000)"' \
		"$TMP/a$i.jsonl" >>"$TMP/rec"
	jq -r 'select(.type=="stack" and .stopped_ns > 0) | .stopped_ns / 1000' "$TMP/a$i.jsonl" >>"$TMP/pause"
	jq -s '[.[] | select(.type=="nccl_attach") | .probes] | add' "$TMP/a$i.jsonl" >>"$TMP/probes"
done
b=$(med <"$TMP/base")
a=$(med <"$TMP/att")
echo "| job (4 ranks, 400 all-reduces) | untraced, s (median) | with one attach --once, s (median) | added, ms |"
echo "|---|---|---|---|"
echo "| fake NCCL | $(awk -v v="$b" 'BEGIN{printf "%.2f", v/1000}') | $(awk -v v="$a" 'BEGIN{printf "%.2f", v/1000}') | $((a - b)) |"
echo
echo "| attach took, ms (median) | threads | pause per thread, µs (median / max) | pause per process (its threads together), µs (max) | uprobes attached | attach --once wall, s (median) |"
echo "|---|---|---|---|---|---|"
echo "| $(cut -d' ' -f1 "$TMP/rec" | med | awk '{printf "%.0f", $1}') | $(cut -d' ' -f2 "$TMP/rec" | med) | $(med <"$TMP/pause" | awk '{printf "%.0f", $1}') / $(sort -n "$TMP/pause" | tail -1 | awk '{printf "%.0f", $1}') | $(cut -d' ' -f3 "$TMP/rec" | sort -n | tail -1 | awk '{printf "%.0f", $1}') | $(med <"$TMP/probes") | $(med <"$TMP/nt" | awk '{printf "%.2f", $1/1000}') |"
