#!/bin/bash
# SPDX-License-Identifier: MIT
# What `nccltrace agent` costs (root): its own CPU (utime + stime of the agent process, not its
# jobs' tracers) over SECONDS with no job, then beside one healthy fake NCCL job, then beside one
# hung job (rank 1 asleep); then JOBS short jobs in a row (every third hung), each given its
# dump, with the agent's RSS after the first and the last, and the BPF programs and links the
# machine holds before and after (none of a finished job's may be left).
#   scripts/bench-agent.sh [SECONDS] [JOBS]
set -eu
cd "$(dirname "$0")/.."
SECS=${1:-30}
JOBS=${2:-20}
NT=${NT:-build/nccltrace}
NJ=$PWD/build/nccljob
W=$(mktemp -d /tmp/nccltrace-benchagent.XXXXXX)
trap 'kill ${AG:-} 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
tick=$(getconf CLK_TCK)
cpu() { awk -v t="$tick" '{ printf "%.3f", ($14 + $15) / t }' "/proc/$1/stat"; }
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
bpf_ids() { { bpftool prog show; bpftool link show; } 2>/dev/null | grep -cE '^[0-9]+:' || true; }
before=$(bpf_ids)
"$NT" agent --dump-dir "$W/d" -t 2 >"$W/agent.log" 2>&1 &
AG=$!
sleep 2
span() { # NAME: the agent's CPU over SECS seconds, as a share of one CPU
	local c0 c1
	c0=$(cpu $AG)
	sleep "$SECS"
	c1=$(cpu $AG)
	awk -v n="$1" -v a="$c0" -v b="$c1" -v s="$SECS" \
		'BEGIN { printf "%s: agent %.3f s CPU in %d s (%.3f %% of one CPU)\n", n, b - a, s, 100 * (b - a) / s }'
}
span "no job"
(cd "$W" && exec "$NJ" --ranks 2 --iters 1000000 >"$W/healthy.out" 2>&1) &
JOB=$!
sleep 3
span "one healthy job"
kill $JOB
wait $JOB 2>/dev/null || true
(cd "$W" && exec "$NJ" --ranks 3 --iters 40 --fault in-collective --fault-rank 1 \
	--fault-for $((SECS + 10)) >/dev/null 2>&1) &
JOB=$!
sleep 5
span "one hung job (its finding open)"
kill $JOB
wait $JOB 2>/dev/null || true
sleep 3
for i in $(seq 1 "$JOBS"); do
	if [ $((i % 3)) = 0 ]; then
		(cd "$W" && exec "$NJ" --ranks 2 --iters 20 --fault in-collective --fault-rank 1 \
			--fault-for 3 >/dev/null 2>&1)
	else
		(cd "$W" && exec "$NJ" --ranks 2 --iters 30 >/dev/null 2>&1)
	fi
	[ "$i" = 1 ] && sleep 2 && echo "rss after job 1: $(rss $AG) KiB"
done
sleep 3
echo "rss after job $JOBS: $(rss $AG) KiB"
echo "dumps: $(ls "$W/d" | wc -l) for $((JOBS + 2)) jobs; jobs ended: $(grep -c ' ended (its tracer' "$W/agent.log")"
echo "bpf programs and links on the machine: $before before, $(bpf_ids) after"
