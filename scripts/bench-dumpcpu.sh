#!/bin/bash
# SPDX-License-Identifier: MIT
# What writing the dump costs the tracer (root): tracers side by side on the same machine, each
# on its own fake NCCL job (RANKS ranks, ITERS all-reduces 50 ms apart, healthy: a minute at
# full rate, then calm), each writing its dump; per tracer the trace's length, the footer's
# tracer_cpu_s, its dump_cpu_s (the CPU spent on the snapshot and state frames: building them,
# holding the calm seconds in the ring, writing) and peak RSS, and the dump's size. Two lengths
# give the calm stretch's cost per hour, without the first minute and the ring's last one. A build from before
# dump_cpu_s was in the footer can be measured when it prints "DUMPCPU <seconds>" on its stderr.
#   scripts/bench-dumpcpu.sh [ITERS] [RANKS] [TRACER...]   (default: 2000 8 build/nccltrace)
set -eu
cd "$(dirname "$0")/.."
ITERS=${1:-2000}
RANKS=${2:-8}
shift $(($# > 2 ? 2 : $#))
TRACERS=("$@")
[ ${#TRACERS[@]} -gt 0 ] || TRACERS=(build/nccltrace)
NJ=$PWD/build/nccljob
W=$(mktemp -d /tmp/nccltrace-benchdumpcpu.XXXXXX)
trap 'rm -rf "$W"' EXIT
pids=()
for i in "${!TRACERS[@]}"; do
	t=$(realpath "${TRACERS[$i]}")
	(cd "$W" && exec "$t" run --no-tui --dump "$W/d$i.jsonl" -- "$NJ" --ranks "$RANKS" \
		--iters "$ITERS" --timeout $((ITERS / 5 + 300)) >"$W/out$i" 2>&1) &
	pids+=($!)
done
for i in "${!TRACERS[@]}"; do
	wait "${pids[$i]}" || echo "${TRACERS[$i]}: exit $?"
	jq -r --arg t "${TRACERS[$i]}" --arg b "$(stat -c %s "$W/d$i.jsonl")" \
		--arg start "$(head -1 "$W/d$i.jsonl" | jq .start_ns)" \
		--arg old "$(sed -n 's/^DUMPCPU //p' "$W/out$i" | tail -1)" \
		'select(.type == "footer") | (((.ts_ns - ($start | tonumber)) / 1e9) * 10 | round / 10) as $s | .totals |
		 "\($t): \($s) s, tracer_cpu_s \(.tracer_cpu_s) dump_cpu_s \(.dump_cpu_s // ($old | tonumber? // "-")) maxrss_kib \(.tracer_maxrss_kib) dump_bytes \($b)"' \
		"$W/d$i.jsonl"
done
