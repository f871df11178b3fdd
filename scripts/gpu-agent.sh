#!/bin/bash
# SPDX-License-Identifier: MIT
# `nccltrace agent` on the GPU machine, on real PyTorch + NCCL: the agent is started first, then
# real torchrun jobs are started on their own, one after another: RANKS ranks (every rank on
# GPU 0 as its own NCCL host where there are more ranks than GPUs; sockets forced), rank 3
# asleep STALL s in the middle of its loop, REPEAT times; then a healthy 2-rank job. For each:
# was the job found and traced, its dump's first finding (kind, rank), one culprit, and the
# finding's latency from the job's own marker (threshold + 2 s at most: the agent's attach comes
# at the job's first mapping of libnccl, before the fault). Prints PASS/FAIL lines, the agent's
# own CPU, and leaves the dumps in $OUT/agent.
#   scripts/gpu-agent.sh [NCCLTRACE]    (default build/nccltrace-static; $OUT: gpu-out)
#   LIBNCCL=PATH: that libnccl.so.2 in the jobs (LD_PRELOAD), e.g. NVIDIA's stripped .deb build
# 8 ranks on one H100 run a collective in about 177 ms (each rank's context time-sliced, a
# cudaSynchronize an iteration): 600 iterations, the stall at 300, take about two minutes.
# Run it with no other agent or job of its own left on the machine (the agent takes them).
set -u
cd "$(dirname "$0")/.."
NT=${1:-build/nccltrace-static}
OUT=${OUT:-gpu-out}
RANKS=${RANKS:-8}
REPEAT=${REPEAT:-3}
STALL=${STALL:-10}
THRESH=3
export NCCL_NVLS_ENABLE=0 NCCLTRACE_CACHE_DIR=/tmp/nccltrace-cache
export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
ONE=
[ "$GPUS" -lt "$RANKS" ] && ONE=--one-gpu
PRE=(env)
[ -n "${LIBNCCL:-}" ] && PRE=(env LD_PRELOAD="$LIBNCCL")
D=$OUT/agent
mkdir -p "$D"
"$NT" agent --dump-dir "$D" -t $THRESH >"$OUT/agent.log" 2>&1 &
AG=$!
sleep 2
P=tests/gpu/allred
JOBPY="${P}uce.py" # (the name split: a pkill -f of it must not match this script's own line)
passed=0
failed=0

# judge NAME KIND RANK LOG DUMP...: the dumps' first finding against the job's marker
judge() {
	python3 - "$NT" "$THRESH" "$@" <<'PY'
import json, re, subprocess, sys
nt, thresh, name, kind, rank, log = sys.argv[1:7]
dumps = sys.argv[7:]
marker = None
for line in open(log, errors="replace"):
    m = re.search(r"STALL rank \d+ pid \d+ at_realtime_ns (\d+)", line)
    if m:
        marker = int(m.group(1))
        break
fs, opened = [], {}
for d in dumps:
    rep = json.loads(subprocess.run([nt, "report", "--json", d], capture_output=True,
                                    text=True).stdout or "{}")
    fs += [f for f in rep.get("findings", []) if f["kind"] != "config"]
    for line in subprocess.run([nt, "cat", d], capture_output=True, text=True).stdout.splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("type") == "finding" and r.get("event") == "open":
            opened.setdefault((d, r["id"]), r.get("realtime_ns"))
if kind == "none":
    ok = bool(dumps) and not fs
    print(f"{'PASS' if ok else 'FAIL'} {name}: {len(dumps)} dump(s), findings: "
          f"{', '.join(f['kind'] + ' rank ' + str(f.get('rank')) for f in fs) or 'none'}")
    sys.exit(0 if ok else 1)
f = fs[0] if fs else None
ok = bool(f) and f["kind"] == kind and str(f.get("rank")) == rank
others = sorted({str(g.get("rank")) for g in fs[1:] if str(g.get("rank")) != str(f.get("rank"))}) if f else []
lat = None
if f and marker:
    t = min((v for (d, i), v in opened.items() if i == f["id"] and v), default=None)
    lat = (t - marker) / 1e9 if t else None
if others or lat is None or lat > float(thresh) + 2:
    ok = False
print(f"{'PASS' if ok else 'FAIL'} {name}: {len(dumps)} dump(s); "
      f"{(f['kind'] + ' rank ' + str(f.get('rank'))) if f else 'no finding'}"
      f"{' (and rank ' + ', '.join(others) + ')' if others else ''}, latency "
      f"{'-' if lat is None else f'{lat:.2f} s'}" + (f"\n    {f['summary']}" if f else ""))
sys.exit(0 if ok else 1)
PY
}

# run_job NAME KIND RANK ARGS...: the job on its own, its new dumps judged once its tracer ended
run_job() {
	local name=$1 kind=$2 rank=$3 before n0 new
	shift 3
	before=$(ls "$D")
	n0=$(grep -c ' ended (its tracer' "$OUT/agent.log")
	"${PRE[@]}" python3 -m torch.distributed.run "$@" >"$OUT/$name.log" 2>&1
	for _ in $(seq 1 60); do
		[ "$(grep -c ' ended (its tracer' "$OUT/agent.log")" -gt "$n0" ] && break
		sleep 0.5
	done
	sleep 1
	new=$(comm -13 <(echo "$before") <(ls "$D") | sed "s|^|$D/|")
	if judge "$name" "$kind" "$rank" "$OUT/$name.log" $new; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
}

for k in $(seq 1 "$REPEAT"); do
	run_job "agent-stall$RANKS.$k" stall 3 --nproc_per_node="$RANKS" --master_port=$((29600 + k)) \
		"$JOBPY" $ONE --iters 600 --numel 2048 --stall-rank 3 --stall-for "$STALL"
done
run_job agent-healthy2 none - --nproc_per_node=2 --master_port=29650 "$JOBPY" --one-gpu \
	--iters 300 --numel 2048
tick=$(getconf CLK_TCK)
echo "agent CPU: $(awk -v t="$tick" '{ printf "%.2f s", ($14 + $15) / t }' /proc/$AG/stat) in $(ps -o etimes= -p $AG | tr -d ' ') s, RSS $(awk '/^VmRSS/ { print $2 }' /proc/$AG/status) KiB"
kill -TERM $AG
wait $AG
echo "agent exit $?"
pkill -9 -f "[a]llreduce.py" 2>/dev/null
echo "agent: $passed passed, $failed failed"
