#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/soak.sh [SECONDS] [OUT]: a traced job for SECONDS (default 3600): the fake NCCL job, 4
# ranks, an all-reduce every 50 ms each, under `nccltrace run --no-tui`. Every 30 s one line of
# OUT (default build/soak.csv): elapsed s, the tracer's RSS (KiB), the dump's size (bytes), the
# tracer's CPU seconds so far. At the end: RSS and dump growth per hour, CPU per core.
# SOAK_BUILD: the build to take nccltrace, its libraries, the fake NCCL and the job from
# (default build/; a copy elsewhere keeps a test's pkill -f of build/nccljob off the soak)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${SOAK_BUILD:-$ROOT/build}
SECS=${1:-3600}
OUT=${2:-$ROOT/build/soak.csv}
D=$(mktemp -d /tmp/nccltrace-soak.XXXXXX)/soak.jsonl
ITERS=$((SECS * 20 + 200))
LD_LIBRARY_PATH=$B/fakenccl "$B/nccltrace" run --no-tui --dump "$D" -- \
	"$B/nccljob" --ranks 4 --iters $ITERS --count 1024 --step-delay 0.05 \
	--timeout $((SECS + 600)) >/dev/null 2>&1 &
nt=$!
tick=$(getconf CLK_TCK)
echo "elapsed_s,tracer_rss_kib,dump_bytes,tracer_cpu_s" >"$OUT"
t0=$(date +%s)
while kill -0 $nt 2>/dev/null; do
	now=$(($(date +%s) - t0))
	rss=$(awk '/^VmRSS:/ {print $2}' /proc/$nt/status 2>/dev/null || echo 0)
	cpu=$(awk -v t="$tick" '{printf "%.1f", ($14 + $15) / t}' /proc/$nt/stat 2>/dev/null || echo 0)
	echo "$now,$rss,$(stat -c %s "$D" 2>/dev/null || echo 0),$cpu" >>"$OUT"
	[ "$now" -ge "$SECS" ] && break
	sleep 30
done
kill -INT $nt 2>/dev/null || true
wait $nt 2>/dev/null || true
awk -F, 'NR == 2 { r0 = $2; d0 = $3 } NR > 1 { t = $1; r = $2; d = $3; c = $4; if ($2 > rmax) rmax = $2 }
	END { h = t / 3600; if (h <= 0) h = 1;
	      printf "soak %d s: tracer RSS %d KiB at 30 s, %d KiB at the end, %d KiB at most; dump %.1f MiB (%.1f MiB/h); tracer CPU %.1f s (%.2f%% of a core)\n",
		t, r0, r, rmax, d / 1048576, (d - d0) / 1048576 / h, c, 100 * c / t }' "$OUT"
echo "samples: $OUT; dump: $D"
