#!/bin/bash
# SPDX-License-Identifier: MIT
# The cost of taking stacks from outside (user/trace/stacks.c): how long each thread is stopped,
# how long a process's threads are stopped in all per take, and the taker's CPU, on three
# processes: the stack fixture (build/stackjob), a python3 with ~60 shared libraries and 17
# threads, and a rank of the fake NCCL job waiting inside ncclAllReduce. Each takes every
# thread of the process REPS times in a row (build/stacktake --loop).
#
#   scripts/bench-stacks.sh [REPS]      (default 50; root, for ptrace of any process)
set -u
cd "$(dirname "$0")/.."
REPS=${1:-50}
TAKE=build/stacktake
TMP=$(mktemp -d /tmp/bench-stacks.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; pkill -9 -f build/nccljob; rm -rf "$TMP"' EXIT

for f in "$TAKE" build/stackjob/stackjob build/nccljob; do
	[ -x "$f" ] || {
		echo "bench-stacks: $f not built: run make" >&2
		exit 1
	}
done

# nth percentile (0-100) of the numbers in file $1
pct() { sort -n "$1" | awk -v p="$2" '{v[NR]=$1} END {i=int((NR-1)*p/100)+1; print v[i]}'; }
us() { awk -v n="$1" 'BEGIN {printf "%.0f", n / 1000}'; }

# measure NAME PID: one table row
measure() {
	local name=$1 pid=$2 out=$TMP/$1.out libs threads
	libs=$(awk '$6 ~ /\.so/ {print $6}' /proc/"$pid"/maps | sort -u | wc -l)
	threads=$(ls /proc/"$pid"/task | wc -l)
	"$TAKE" --loop 1 "$pid" >"$TMP/$name.first" 2>&1
	"$TAKE" --loop "$REPS" "$pid" >"$out" 2>&1
	awk '$1=="thread" {split($4, s, "="); if (s[2] > 0) print s[2]}' "$out" >"$TMP/$name.stopped"
	awk '$1=="thread" {split($5, s, "="); if (s[2] > 0) print s[2]}' "$out" >"$TMP/$name.held"
	# per take of the process: its threads' pauses together
	awk -v n="$threads" '$1=="thread" {split($4, s, "="); sum += s[2]; if (++k % n == 0) {print sum; sum = 0}}' \
		"$out" >"$TMP/$name.proc"
	local first_stop first_report cpu takes
	first_stop=$(awk '$1=="thread" {split($4, s, "="); t += s[2]} END {print t}' "$TMP/$name.first")
	first_report=$(sed -n 's/.*report_ns=\([0-9]*\).*/\1/p' "$TMP/$name.first")
	cpu=$(sed -n 's/.*cpu_ns=\([0-9]*\).*/\1/p' "$out")
	takes=$(sed -n 's/.*stats takes=\([0-9]*\).*/\1/p' "$out")
	printf '| %s | %s | %s | %s (+%s report) | %s / %s / %s | %s | %s | %s |\n' "$name" "$threads" "$libs" \
		"$(us "$first_stop")" "$(us "$first_report")" \
		"$(us "$(pct "$TMP/$name.stopped" 50)")" "$(us "$(pct "$TMP/$name.stopped" 90)")" \
		"$(us "$(pct "$TMP/$name.stopped" 100)")" "$(us "$(pct "$TMP/$name.held" 50)")" \
		"$(us "$(pct "$TMP/$name.proc" 50)")" "$(awk -v c="$cpu" -v t="$takes" 'BEGIN {printf "%.0f", c / t / 1000}')"
}

echo "| process | threads | shared libraries | first take: pause of all threads, µs | pause per thread, µs (median / p90 / max) | held per thread, µs (median) | pause per process and take, µs (median) | taker CPU per thread, µs |"
echo "|---|---|---|---|---|---|---|---|"

build/stackjob/stackjob --timeout 120 >"$TMP/sj.out" 2>&1 &
PIDS+=($!)
sleep 0.5
measure stackjob "${PIDS[-1]}"

python3 - >"$TMP/py.out" 2>&1 <<'EOF' &
import ssl, sqlite3, ctypes, decimal, lzma, bz2, zlib, hashlib, json, socket, select, asyncio
import multiprocessing, curses, readline, uuid, csv, array, math, cmath, struct, binascii, pickle
import datetime, unicodedata, xml.etree.ElementTree, mmap, fcntl, termios, grp, resource, queue
import random, statistics, zoneinfo, threading, time
ev = threading.Event()
for _ in range(16):
    threading.Thread(target=ev.wait, daemon=True).start()
time.sleep(120)
EOF
PIDS+=($!)
sleep 1.5
measure python3 "${PIDS[-1]}"

# rank 0 of a 2-rank fake NCCL job, waiting in ncclAllReduce for rank 1, which sleeps
build/nccljob --ranks 2 --iters 4 --fault in-collective --fault-rank 1 --fault-for 60 \
	--timeout 100 >"$TMP/nj.out" 2>&1 &
PIDS+=($!)
sleep 3
r0=$(pgrep -P "${PIDS[-1]}" | sort -n | head -1)
measure nccljob-rank "$r0"
