#!/bin/bash
# SPDX-License-Identifier: MIT
# A two-node torchrun on one GPU machine, a tracer per "node" (the issue's shape): two
# `nccltrace run`, each around `torchrun --nnodes=2 --node_rank=i --master_addr=127.0.0.1
# --nproc_per_node=1 tests/gpu/allreduce.py --one-gpu` (each rank its own NCCL_HOSTID, so NCCL
# takes them for two nodes and joins them with its network transport), rank 1 (node 1) asleep
# for STALL_FOR seconds in its training loop. Then each node's own report and the merged one;
# PASS when the merged report names rank 1 with its pid from the job's marker.
#   scripts/gpu-multinode.sh [NCCLTRACE]   (default build/nccltrace-static; $OUT for the dumps)
set -u
cd "$(dirname "$0")/.."
NT=${1:-build/nccltrace-static}
OUT=${OUT:-gpu-out}
STALL_FOR=${STALL_FOR:-15}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 NCCLTRACE_CACHE_DIR=/tmp/nccltrace-cache
for i in 0 1; do
	rm -f "$OUT/node$i.jsonl"
	"$NT" run --no-tui -t 3 --dump "$OUT/node$i.jsonl" -- python3 -m torch.distributed.run \
		--nnodes=2 --node_rank=$i --master_addr=127.0.0.1 --master_port=29563 \
		--nproc_per_node=1 tests/gpu/allreduce.py --one-gpu --iters 200 --stall-rank 1 \
		--stall-for "$STALL_FOR" >"$OUT/node$i.log" 2>&1 &
done
wait
for i in 0 1; do
	echo "== node $i alone:"
	"$NT" report --json "$OUT/node$i.jsonl" | python3 -c 'import json,sys; [print(" ", f["kind"], "rank", f["rank"], f["summary"]) for f in json.load(sys.stdin)["findings"]]'
done
echo "== merged:"
"$NT" report --json "$OUT/node0.jsonl" "$OUT/node1.jsonl" >"$OUT/merged.json"
python3 - "$OUT" <<'PY'
import json, re, sys
out = sys.argv[1]
rep = json.load(open(f"{out}/merged.json"))
pid = None
for line in open(f"{out}/node1.log", errors="replace"):
    m = re.search(r"STALL rank 1 pid (\d+)", line)
    if m:
        pid = int(m.group(1))
        break
for f in rep["findings"]:
    print(" ", f["kind"], "rank", f["rank"], f.get("host"), f["summary"])
ok = any(f["rank"] == 1 and f.get("pid") == pid and f["kind"] != "config" for f in rep["findings"])
print(("PASS" if ok else "FAIL") + f" merged report names rank 1 (pid {pid})")
sys.exit(0 if ok else 1)
PY
