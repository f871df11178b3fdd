#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/bench-intake.sh [NCCLTRACE] [RANKS]: what the tracer takes in, per rank and second, in
# each phase of a job on the fake NCCL (RANKS ranks, default 8): "setup" (init and the ring's
# first connect, the first 2 s), "stall" (one rank late to its first collective: its ring
# neighbours' proxies poll the net accept, as NCCL's do) and "steady" (a healthy job's
# all-reduces). Counts the records the dump got per window (the tracer's own intake, less the
# few it drops as empty) with the kernel's tallies from the footer: polled calls counted,
# ring-buffer drops, records suppressed. NCCLTRACE: another build to compare (default
# build/nccltrace).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NT=${1:-$ROOT/build/nccltrace}
RANKS=${2:-8}
T=$(mktemp -d /tmp/nccltrace-intake.XXXXXX)
trap 'rm -rf "$T"' EXIT

# rate DUMP FROM_S TO_S: records a rank and second whose ts_ns is FROM_S..TO_S after the first
rate() {
	jq -r 'select(.ts_ns != null) | .ts_ns' "$1" | sort -n |
		awk -v a="$2" -v b="$3" -v r="$RANKS" 'NR == 1 { t0 = $1 }
		($1 - t0) / 1e9 >= a && ($1 - t0) / 1e9 < b { n++ }
		END { printf "%.0f", n / (b - a) / r }'
}

summary() {
	tail -1 "$1" | jq -r '"drops \(.lost.ringbuf_drops), suppressed \(.suppressed.total // "-"), " +
		"polled calls counted \(.totals.poll_calls // "-"), tracer CPU \(.totals.tracer_cpu_s * 100 | floor / 100) s"'
}

D=$T/stall.jsonl
"$NT" run -t 3 --no-tui --dump "$D" -- "$ROOT/build/nccljob" --ranks "$RANKS" --iters 4 \
	--fault ring-setup --fault-rank 1 --fault-for 8 --timeout 40 >"$T/stall.out" 2>&1 || true
echo "stall: $RANKS ranks, rank 1 late 8 s: setup $(rate "$D" 0 2) records/s/rank, stall" \
	"$(rate "$D" 3 9) records/s/rank; dump $(($(stat -c %s "$D") / 1000)) kB; $(summary "$D")"
D=$T/steady.jsonl
"$NT" run -t 3 --no-tui --dump "$D" -- "$ROOT/build/nccljob" --ranks "$RANKS" --iters 400 \
	--step-delay 0.01 >"$T/steady.out" 2>&1 || true
echo "steady: $RANKS ranks, 400 all-reduces: steady $(rate "$D" 3 8) records/s/rank; dump" \
	"$(($(stat -c %s "$D") / 1000)) kB; $(summary "$D")"
