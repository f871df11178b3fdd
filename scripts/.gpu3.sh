set -u
export NCCL_NVLS_ENABLE=0 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCLTRACE_CACHE_DIR=/tmp/ntc
P=tests/gpu/allred; J="${P}uce.py"
mkdir -p $OUT/d
job() { timeout 200 python3 -m torch.distributed.run --nproc_per_node=8 --master_port=$1 $J --one-gpu --iters 200 --numel 2048 2>&1 | grep "done" | sed "s/^/$2 /"; }
job 29621 untraced1
build/nccltrace-static agent --dump-dir /tmp/ag -t 3 > $OUT/d/agent.log 2>&1 & AG=$!; sleep 2
job 29622 agent1
sleep 2; kill -TERM $AG; wait $AG
job 29623 untraced2
build/nccltrace-static run -t 3 -o /tmp/r.jsonl -- python3 -m torch.distributed.run --nproc_per_node=8 --master_port=29624 $J --one-gpu --iters 200 --numel 2048 2>&1 | grep "done" | sed "s/^/run /"
build/nccltrace-static agent --dump-dir /tmp/ag2 -t 3 > $OUT/d/agent2.log 2>&1 & AG=$!; sleep 2
job 29625 agent2
sleep 2; kill -TERM $AG; wait $AG
pkill -9 -f "[a]llreduce.py"
tail -3 $OUT/d/agent2.log
for d in /tmp/ag/*.zst /tmp/ag2/*.zst /tmp/r.jsonl; do echo "$d: $(build/nccltrace-static cat $d | tail -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["totals"])')"; done
