#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/bench-load.sh [RANKS] [SECONDS]: nccltrace under load: the demo ring with RANKS ranks
# (default 64) busy-polling non-blocking sockets for SECONDS (default 20), as NCCL's proxy threads
# do, under `nccltrace run --no-tui`. Prints the socket operations the job made (calls and
# EAGAINs, from the dump's connection figures) per second, the events lost (the dump's footer),
# the tracer's CPU and peak memory, and the dump's size.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RANKS=${1:-64}
SECS=${2:-20}
T=$(mktemp -d /tmp/nccltrace-load.XXXXXX)
trap 'rm -rf "$T"' EXIT
D=$T/load.jsonl
start=$(date +%s.%N)
"$ROOT/build/nccltrace" run --no-tui --dump "$D" -- "$ROOT/build/ringjob" --ranks "$RANKS" \
	--duration "$SECS" -q >"$T/out" 2>&1
end=$(date +%s.%N)
ops=$(jq -c 'select(.type == "snapshot") | .conns[]? |
	{id, n: (.send_calls + .recv_calls + .send_eagain + .recv_eagain)}' <("$ROOT/build/nccltrace" cat "$D") |
	jq -s 'group_by(.id) | map(max_by(.n).n) | add')
tail -1 "$D" | jq -r --arg ops "$ops" --arg t "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" --arg r "$RANKS" \
	--arg size "$(stat -c %s "$D")" '
	"load: \($r) ranks for \($t | tonumber | floor) s: \($ops | tonumber) socket operations " +
	"(\(($ops | tonumber) / ($t | tonumber) / 1e6 * 100 | floor / 100) M/s); lost: " +
	"\(.lost.ringbuf_drops) ring-buffer drops, \(.lost.conns_map_full) connections and " +
	"\(.lost.traced_map_full) processes not tracked; tracer CPU \(.totals.tracer_cpu_s * 100 | floor / 100) s " +
	"(\(.totals.tracer_cpu_s / ($t | tonumber) * 1000 | floor / 10) % of a core), peak RSS " +
	"\(.totals.tracer_maxrss_kib) KiB; dump \(($size | tonumber) / 1048576 * 10 | floor / 10) MiB"'
