#!/bin/bash
# SPDX-License-Identifier: MIT
# The GPU as a suspect on the GPU machine, on real NVML and real PyTorch + NCCL (8 ranks as 8
# hosts on one GPU, sockets forced): what nccltrace-nvml reads against nvidia-smi; the same
# 200-iteration torchrun job untraced, under `run` (NVML on, then off: the slow tick's cost),
# under the agent (AGAIN=1: untraced and under the agent again), each with its loop's time (the job's
# own clock, after init); each rank's GPU as the run's dump and report --json give it; doctor.
# Results in $OUT/c.tgz, summary.txt first.
#   scripts/gpu-nvml.sh        (make static: build/nccltrace-static, build/nccltrace-nvml and
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
ARGS=(--nproc_per_node=8 "$J" --one-gpu --iters 200 --numel 2048)

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
job untraced1 29621
job run 29622 "$NT" run -v -t 3 -o "$O/run.jsonl" --
job run-nonvml 29623 env NCCLTRACE_NVML=/nonexistent "$NT" run -v -t 3 -o "$O/run2.jsonl" --
agent_job agent1 29624
[ -n "${AGAIN:-}" ] && job untraced2 29625 && agent_job agent2 29626
pkill -9 -f "[a]llreduce.py"
grep -h "GPUs:" "$O/run.log" "$O/run2.log" >>"$S"
"$NT" report --json "$O/run.jsonl" | python3 -c '
import json, sys
d = json.load(sys.stdin)
g = [(r.get("rank"), (r.get("gpu") or {}).get("index"), (r.get("gpu") or {}).get("uuid"),
      (r.get("gpu") or {}).get("how")) for r in d["ranks"] if (r.get("rank") or -1) >= 0]
print("ranks with their GPU:", len([x for x in g if x[2]]), "of", len(g), g[:2])
print("findings:", [f["kind"] for f in d["findings"]])' >>"$S" 2>&1
for d in "$O"/run.jsonl "$O"/run2.jsonl /tmp/ag-agent*/*.zst; do
	echo "tracer of $d: $("$NT" cat "$d" | tail -1 | python3 -c 'import json,sys; t=json.load(sys.stdin)["totals"]; print("cpu", t["tracer_cpu_s"], "s, send/recv events", t["send_events"], t["recv_events"])')" >>"$S"
done
"$NT" doctor >"$O/doctor.txt" 2>&1
cd "$OUT" && tar czf c.tgz c && rm -rf c
