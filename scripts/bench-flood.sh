#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/bench-flood.sh [NCCLTRACE] [RUNS] [BUSY]: RUNS (default 10) floods of every class under
# `nccltrace run` (tests/fixtures/floodjob.c, 5 s: ncclGetLastError in a tight loop, loopback TCP
# connections, processes), with BUSY (default 0) spinning shells beside them as a loaded CI
# machine has. Per run: the ring-buffer drops, the records suppressed, the dump and the longest
# gap between snapshots; then how many runs lost records. NCCLTRACE: another build to compare
# (default build/nccltrace; the fixtures are this tree's).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NT=${1:-$ROOT/build/nccltrace}
RUNS=${2:-10}
BUSY=${3:-0}
T=$(mktemp -d /tmp/nccltrace-flood.XXXXXX)
spin=()
cleanup() {
	[ ${#spin[@]} -eq 0 ] || kill "${spin[@]}" 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
for _ in $(seq "$BUSY"); do
	(while :; do :; done) &
	spin+=($!)
done

lossy=0
for i in $(seq "$RUNS"); do
	D=$T/flood$i.jsonl
	"$NT" run -t 3 --no-tui --dump "$D" -- "$ROOT/build/floodjob" \
		--nccl "$ROOT/build/fakenccl/libnccl.so.2" --conn --proc 5 >"$T/flood$i.out" 2>&1 || true
	gap=$(jq -r 'select(.type=="snapshot") | .ts_ns' "$D" |
		awk 'NR > 1 && $1 - p > m { m = $1 - p } { p = $1 } END { print int(m / 1e6) }')
	drops=$(tail -1 "$D" | jq '.lost.ringbuf_drops')
	[ "$drops" -eq 0 ] || lossy=$((lossy + 1))
	echo "run $i: drops $drops, suppressed $(tail -1 "$D" | jq '.suppressed.total')," \
		"dump $(($(stat -c %s "$D") / 1000)) kB, longest gap between snapshots $gap ms"
done
echo "flood: $lossy of $RUNS runs lost records ($BUSY busy shells beside)"
