#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end fault scenarios on real PyTorch + NCCL (the 2-GPU machine): each runs
# `nccltrace run -- python3 -m torch.distributed.run --nproc_per_node=2 tests/gpu/allreduce.py`
# with NVLink (default transports) and with sockets forced, checks the finding's kind, culprit
# rank and phase, and measures the detection latency from the stall marker the job prints.
# Needs python3 (the job's) and no other tool. Prints PASS/FAIL lines and a markdown table.
#   scripts/gpu-e2e.sh [NCCLTRACE]      (default build/nccltrace-static; $OUT for the dumps)
#   ONLY="nvlink-sleep sockets-stop" scripts/gpu-e2e.sh
set -u
cd "$(dirname "$0")/.."
NT=${1:-build/nccltrace-static}
OUT=${OUT:-gpu-out}
THRESH=3
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 NCCLTRACE_CACHE_DIR=/tmp/nccltrace-cache
SOCK=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo)
JOB="python3 -m torch.distributed.run --nproc_per_node=2 --master_port=29541 tests/gpu/allreduce.py"
ONLY=${ONLY:-}
want() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }
ROWS=()
passed=0
failed=0

# judge NAME WANT_KIND WANT_RANK: the dump's first finding (config ones apart unless wanted)
judge() {
	local name=$1 kind=$2 rank=$3 D=$OUT/$1.jsonl L=$OUT/$1.log
	python3 - "$NT" "$D" "$L" "$name" "$kind" "$rank" "$THRESH" <<'PY'
import json, re, subprocess, sys
nt, dump, log, name, kind, rank, thresh = sys.argv[1:8]
rep = json.loads(subprocess.run([nt, "report", "--json", dump], capture_output=True, text=True).stdout or "{}")
fs = rep.get("findings", [])
if kind != "config":
    fs = [f for f in fs if f["kind"] != "config"]
marker = None
for line in open(log, errors="replace"):
    m = re.search(r"STALL rank \d+ pid \d+ at_realtime_ns (\d+)", line)
    if m:
        marker = int(m.group(1))
        break
opened = {}
for line in open(dump, errors="replace"):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if r.get("type") == "finding" and r.get("event") == "open":
        opened.setdefault(r["id"], r.get("realtime_ns"))
if kind == "none":
    ok = not fs
    got = ", ".join(f["kind"] for f in fs) or "none"
    print(f"{'PASS' if ok else 'FAIL'} {name}: findings: {got}")
    print(f"ROW| {name} | none | {got} | | |")
    sys.exit(0 if ok else 1)
f = fs[0] if fs else None
ok = bool(f) and f["kind"] == kind and (rank == "-" or str(f.get("rank")) == rank)
lat = ""
if f and marker and opened.get(f["id"]):
    lat = f"{(opened[f['id']] - marker) / 1e9:.2f} s"
    if (opened[f["id"]] - marker) / 1e9 > float(thresh) + 1:
        ok = False
got = f"{f['kind']} rank {f.get('rank')}" if f else "no finding"
phase = f.get("phase", "") if f else ""
print(f"{'PASS' if ok else 'FAIL'} {name}: {got}, phase '{phase}', latency {lat or '-'}")
if f:
    print(f"    {f['summary']}")
print(f"ROW| {name} | {kind} rank {rank} | {got} | {phase[:60]} | {lat} |")
sys.exit(0 if ok else 1)
PY
}

# scenario NAME KIND RANK ENV... -- JOBARGS...
scenario() {
	local name=$1 kind=$2 rank=$3 envs=() out
	shift 3
	while [ "$1" != "--" ]; do
		envs+=("$1")
		shift
	done
	shift
	want "$name" || return 0
	rm -f "$OUT/$name.jsonl"
	env "${envs[@]}" timeout -k 10 "${LIMIT:-90}" "$NT" run --no-tui -t $THRESH --dump "$OUT/$name.jsonl" -- \
		$JOB "$@" >"$OUT/$name.log" 2>&1 &
	local job=$!
	# a stopped rank is continued 8 s after it stopped itself
	if [[ " $* " == *" stop "* ]]; then
		local pid="" n=0
		while [ -z "$pid" ] && [ $n -lt 600 ]; do
			pid=$(sed -n 's/.*STALL rank [0-9]* pid \([0-9]*\) .*/\1/p' "$OUT/$name.log" | head -1)
			sleep 0.1
			n=$((n + 1))
		done
		sleep 8
		[ -n "$pid" ] && kill -CONT "$pid" 2>/dev/null
	fi
	wait $job
	pkill -9 -f 'allreduc[e].py' 2>/dev/null
	sleep 1
	out=$(judge "$name" "$kind" "$rank")
	if [ $? -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
	grep -v '^ROW|' <<<"$out"
	ROWS+=("$(sed -n 's/^ROW|/|/p' <<<"$out")")
}

L="--iters 40 --stall-rank 1 --stall-for 8"
for tr in nvlink sockets; do
	if [ $tr = nvlink ]; then E=(PATH="$PATH"); else E=("${SOCK[@]}"); fi
	scenario $tr-healthy none - "${E[@]}" -- --iters 40
	scenario $tr-sleep stall 1 "${E[@]}" -- $L
	scenario $tr-stop peer_stopped 1 "${E[@]}" -- $L --stall-mode stop
	# the communicator exists (eager), rank 1 late to the first collective: lazy ring setup
	scenario $tr-before-first ring_setup_blocked 1 "${E[@]}" -- $L --stall-at first --eager-init
	# PyTorch creates the communicator at the first collective: rank 1 late to NCCL's init
	scenario $tr-before-init init_blocked 1 "${E[@]}" -- $L --stall-at first
	LIMIT=30 scenario $tr-mismatch collective_mismatch 1 "${E[@]}" -- --iters 20 --stall-rank 1 --stall-mode mismatch
	# steady state first (5 s of all_reduces every 20 ms): quiet mode is on when rank 1 sleeps
	scenario $tr-sleep-steady stall 1 "${E[@]}" -- --iters 500 --numel 1024 --stall-rank 1 --stall-for 8
	if want $tr-sleep-steady; then
		q=$(grep -c '"type":"tcp_hooks","ts_ns":[0-9]*,"on":false' "$OUT/$tr-sleep-steady.jsonl")
		echo "    $tr-sleep-steady: quiet mode went on $q time(s)"
	fi
done
scenario env-typo config - NCCL_SOCKET_IFNAMES=lo -- --iters 5

echo
echo "| scenario | expected | found | phase | opened after the stall (threshold ${THRESH} s) |"
echo "|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
echo
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
