#!/bin/bash
# SPDX-License-Identifier: MIT
# The GPU as a suspect on the GPU machine, on real NVML and real PyTorch + NCCL (8 ranks as 8
# hosts on one GPU, sockets forced): what nccltrace-nvml reads against nvidia-smi; the same
# 200-iteration torchrun job untraced, under `run` (NVML on, then off: the slow tick's cost),
# under the agent; ROUNDS times (default 1) in turn, each with its loop's time (the job's own
# clock, after init); each rank's GPU as the run's dump and report --json give it; doctor.
# Results in $OUT/c.tgz, summary.txt first.
#   [ROUNDS=N] [ITERS=K] scripts/gpu-nvml.sh (make static: build/nccltrace-static, build/nccltrace-nvml and
#                               the plugins carried)
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-out}
export NCCL_NVLS_ENABLE=0 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo
export NCCLTRACE_CACHE_DIR=/tmp/ntc
O=$OUT/c
mkdir -p "$O"
S=$O/summary.txt
P=tests/gpu/allred
J="${P}uce.py" # (split: a pkill -f of it must not match this script's own line)
NT=build/nccltrace-static
ARGS=(--nproc_per_node=8 "$J" --one-gpu --iters "${ITERS:-200}" --numel 2048)

build/nccltrace-nvml --once >"$O/helper.txt" 2>&1
echo "rc=$?" >>"$O/helper.txt"
nvidia-smi --query-gpu=index,uuid,pci.bus_id,name,utilization.gpu,clocks.sm,clocks.max.sm,pcie.link.gen.current,pcie.link.width.current,pcie.link.gen.max,pcie.link.width.max,persistence_mode,driver_version --format=csv >>"$O/helper.txt" 2>&1

# job NAME PORT [PREFIX...]: the job, its loop's time into the summary
job() {
	local name=$1 port=$2
	shift 2
	timeout 200 "$@" python3 -m torch.distributed.run --master_port="$port" "${ARGS[@]}" \
		>"$O/$name.log" 2>&1
	echo "$name: rc $? $(grep -o 'the loop in .*' "$O/$name.log")" >>"$S"
}
agent_job() { # NAME PORT: under an agent started before it
	"$NT" agent --dump-dir "/tmp/ag-$1" -t 3 >"$O/agent-$1.log" 2>&1 &
	local ag=$!
	sleep 2
	job "$1" "$2"
	sleep 2
	kill -TERM $ag
	wait $ag
}
for r in $(seq 1 "${ROUNDS:-1}"); do
	job "untraced$r" $((29620 + 4 * r))
	job "run$r" $((29621 + 4 * r)) "$NT" run -v -t 3 -o "$O/run$r.jsonl" --
	job "run-nonvml$r" $((29622 + 4 * r)) env NCCLTRACE_NVML=/nonexistent "$NT" run -v -t 3 \
		-o "$O/run-nonvml$r.jsonl" --
	agent_job "agent$r" $((29623 + 4 * r))
done
pkill -9 -f "[a]llreduce.py"
grep -h "GPUs:" "$O/run1.log" "$O/run-nonvml1.log" >>"$S"
"$NT" report --json "$O/run1.jsonl" | python3 -c '
import json, sys
d = json.load(sys.stdin)
g = [(r.get("rank"), (r.get("gpu") or {}).get("index"), (r.get("gpu") or {}).get("uuid"),
      (r.get("gpu") or {}).get("how")) for r in d["ranks"] if (r.get("rank") or -1) >= 0]
print("ranks with their GPU:", len([x for x in g if x[2]]), "of", len(g), g[:2])
print("findings:", [f["kind"] for f in d["findings"]])' >>"$S" 2>&1
for d in "$O"/run*.jsonl /tmp/ag-agent*/*.zst; do
	echo "tracer of $d: $("$NT" cat "$d" | tail -1 | python3 -c 'import json,sys; t=json.load(sys.stdin)["totals"]; print("cpu", t["tracer_cpu_s"], "s, NVML helper", t.get("nvml_helper_cpu_s"), "s, maxrss", t.get("tracer_maxrss_kib"), "KiB, send/recv events", t["send_events"], t["recv_events"])')" >>"$S"
done
"$NT" doctor >"$O/doctor.txt" 2>&1
cp /tmp/ag-agent1/*.zst "$O/" 2>/dev/null
cd "$OUT" && tar czf c.tgz c && rm -rf c
