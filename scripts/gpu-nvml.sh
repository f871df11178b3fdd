#!/bin/bash
# SPDX-License-Identifier: MIT
# The GPU as a suspect on the GPU machine, on real NVML and real PyTorch + NCCL (8 ranks as 8
# hosts on one GPU, sockets forced): what nccltrace-nvml reads against nvidia-smi; the same
# 200-iteration torchrun job untraced, under `run` (NVML on, then NVML off: the slow tick's
# cost), under the agent, and untraced again, with their wall times; each rank's GPU as the
# run's dump and report --json give it; doctor. Results in $OUT/c.tgz (summary.txt first).
#   scripts/gpu-nvml.sh        (build/nccltrace-static, build/nccltrace-nvml and the plugins
#                               carried: make static)
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-out}
export NCCL_NVLS_ENABLE=0 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCLTRACE_CACHE_DIR=/tmp/ntc
mkdir -p $OUT/c; O=$OUT/c
P=tests/gpu/allred; J="${P}uce.py"
build/nccltrace-nvml --once > $O/helper.txt 2>&1; echo "rc=$?" >> $O/helper.txt
nvidia-smi --query-gpu=index,uuid,pci.bus_id,name,utilization.gpu,clocks.sm,clocks.max.sm,pcie.link.gen.current,pcie.link.width.current,pcie.link.gen.max,pcie.link.width.max,persistence_mode,driver_version --format=csv >> $O/helper.txt 2>&1
t() { python3 -c 'import time; print(time.time())'; }
job() { local s=$(t); "$@"; local rc=$?; echo "rc=$rc wall=$(python3 -c "print(round($(t)-$s,2))")"; }
echo "untraced1 $(job timeout 200 python3 -m torch.distributed.run --nproc_per_node=8 --master_port=29611 $J --one-gpu --iters 200 --numel 2048 > $O/u1.log 2>&1)" >> $O/summary.txt
echo "run $(job timeout 200 build/nccltrace-static run -v -t 3 -o $O/run.jsonl -- python3 -m torch.distributed.run --nproc_per_node=8 --master_port=29612 $J --one-gpu --iters 200 --numel 2048 > $O/run.log 2>&1)" >> $O/summary.txt
echo "run-nonvml $(job timeout 200 env NCCLTRACE_NVML=/nonexistent build/nccltrace-static run -v -t 3 -o $O/run2.jsonl -- python3 -m torch.distributed.run --nproc_per_node=8 --master_port=29615 $J --one-gpu --iters 200 --numel 2048 > $O/run2.log 2>&1)" >> $O/summary.txt
build/nccltrace-static agent --dump-dir /tmp/ag -t 3 > $O/agent.log 2>&1 & AG=$!
sleep 2
echo "agent $(job timeout 200 python3 -m torch.distributed.run --nproc_per_node=8 --master_port=29613 $J --one-gpu --iters 200 --numel 2048 > $O/a.log 2>&1)" >> $O/summary.txt
sleep 3; kill -TERM $AG; wait $AG
echo "untraced2 $(job timeout 200 python3 -m torch.distributed.run --nproc_per_node=8 --master_port=29614 $J --one-gpu --iters 200 --numel 2048 > $O/u2.log 2>&1)" >> $O/summary.txt
pkill -9 -f "[a]llreduce.py"
grep -h "GPUs:" $O/run.log >> $O/summary.txt
python3 - $O/run.jsonl >> $O/summary.txt <<'PY'
import json,sys
seen={}
import subprocess
out=subprocess.run(["build/nccltrace-static","cat",sys.argv[1]],capture_output=True,text=True).stdout
for l in out.splitlines():
    try: r=json.loads(l)
    except: continue
    for p in r.get("procs",[]) if isinstance(r.get("procs"),list) else []:
        g=p.get("gpu")
        if g and p.get("rank",-1)>=0: seen[p["rank"]]=(p.get("pid"),g.get("index"),g.get("uuid"),g.get("bus"),g.get("how"),g.get("util"),g.get("numa"))
for k in sorted(seen): print("rank",k,seen[k])
print("ranks with a GPU:",len(seen))
PY
tail -3 $O/run.log >> $O/summary.txt
build/nccltrace-static report --json $O/run.jsonl | python3 -c 'import json,sys; d=json.load(sys.stdin); print([(r.get("rank"), (r.get("gpu") or {}).get("uuid"), (r.get("gpu") or {}).get("how")) for r in d["ranks"]]); print("findings", [f["kind"] for f in d["findings"]])' >> $O/summary.txt 2>&1
build/nccltrace-static doctor > $O/doctor.txt 2>&1
cp /tmp/ag/*.zst $O/ 2>/dev/null
cd $OUT && tar czf c.tgz c && rm -rf c
