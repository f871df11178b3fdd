#!/bin/bash
# SPDX-License-Identifier: MIT
# A two-node torchrun on one GPU machine, a tracer per "node" (the issue's shape): two
# `nccltrace run`, each around `torchrun --nnodes=2 --node_rank=i --master_addr=127.0.0.1
# --nproc_per_node=1 tests/gpu/allreduce.py --one-gpu` (each rank its own NCCL_HOSTID, so NCCL
# takes them for two nodes and joins them with its network transport), rank 1 (node 1) asleep
# for STALL_FOR seconds in its training loop. Then each node's own report and the merged one;
# PASS when the merged report names rank 1 with its pid from the job's marker, and node 0's
# tracer alone names the rank it waits on (rank 1, from its NCCL log), never as the cause.
#   scripts/gpu-multinode.sh [NCCLTRACE]   (default the bundle, build/nccltrace-bundle/nccltrace
#   (make bundle), else build/nccltrace-static; $OUT for the dumps;
#   LIBNCCL=/path/libnccl.so.2: that NCCL, preloaded, instead of the wheel's;
#   NPROC=4: ranks per node (default 1; rank 1 is then on node 0, beside ranks 0, 2 and 3);
#   LIVE=1: a live `watch` over both tracers for the whole job, as a user runs it, and each
#   tracer polled as hard as one client can (build/pollstorm, tests/fixtures/pollstorm.c; curl
#   without it) (issue 49: a tracer polled between ticks died of SIGSEGV); PASS when no tracer
#   died and watch's first finding named rank 1)
set -u
cd "$(dirname "$0")/.."
NT=${1:-build/nccltrace-bundle/nccltrace}
[ -n "${1:-}" ] || [ -x "$NT" ] || NT=build/nccltrace-static
OUT=${OUT:-gpu-out}
STALL_FOR=${STALL_FOR:-15}
NPROC=${NPROC:-1}
LIVE=${LIVE:-0}
mkdir -p "$OUT"
# JUDGE_ONLY=1: no run; judge the dumps and logs already in $OUT (fetched from a GPU machine)
if [ "${JUDGE_ONLY:-0}" = 1 ]; then
	RC=("$(sed -n 's/^== tracer 0 exit //p' "$OUT/exits" 2>/dev/null)" \
		"$(sed -n 's/^== tracer 1 exit //p' "$OUT/exits" 2>/dev/null)")
	SN=1
	[ "$NPROC" -gt 1 ] && SN=0
else
rm -f "$OUT/watch.json" "$OUT/watch-live.log"
export NCCL_NVLS_ENABLE=0 NCCLTRACE_CACHE_DIR=/tmp/nccltrace-cache
[ -n "${LIBNCCL:-}" ] && export LD_PRELOAD=$LIBNCCL
# each tracer serves /state on loopback where the build has --listen (not the static one)
LISTEN=0
"$NT" run --listen 127.0.0.1:0 -- true >/dev/null 2>&1 && LISTEN=1
for i in 0 1; do
	rm -f "$OUT/node$i.jsonl"
	L=()
	[ $LISTEN = 1 ] && L=(--listen 127.0.0.1:$((9460 + i)))
	"$NT" run --no-tui -t 3 "${L[@]}" --dump "$OUT/node$i.jsonl" -- python3 -m torch.distributed.run \
		--nnodes=2 --node_rank=$i --master_addr=127.0.0.1 --master_port=29563 \
		--nproc_per_node="$NPROC" tests/gpu/allreduce.py --one-gpu --iters 200 --stall-rank 1 \
		--stall-for "$STALL_FOR" >"$OUT/node$i.log" 2>&1 &
	TRACER[$i]=$!
done
# rank 1's node: 1 with one rank per node, else 0
SN=1
[ "$NPROC" -gt 1 ] && SN=0
if [ $LIVE = 1 ] && [ $LISTEN = 1 ]; then
	sleep 3
	"$NT" watch --no-tui 127.0.0.1:9460 127.0.0.1:9461 >"$OUT/watch-live.log" 2>&1 &
	WATCH=$!
	# and each tracer polled as hard as one client can (build/pollstorm), until it ends
	for i in 0 1; do
		if [ -x build/pollstorm ]; then
			build/pollstorm $((9460 + i)) "${TRACER[$i]}" >"$OUT/storm$i.txt" 2>&1 &
		else
			(while kill -0 "${TRACER[$i]}" 2>/dev/null; do
				curl -s -m 2 -o /dev/null "http://127.0.0.1:$((9460 + i))/state"
			done) &
		fi
	done
fi
# the live view of both: watch --once over the two tracers, threshold + 2 s into the stall
if [ $LISTEN = 1 ]; then
	for _ in $(seq 240); do
		grep -qs "STALL rank 1" "$OUT/node$SN.log" && break
		sleep 0.5
	done
	sleep 5
	"$NT" watch --once --json 127.0.0.1:9460 127.0.0.1:9461 >"$OUT/watch.json" 2>"$OUT/watch.err"
	echo "== watch --once: exit $?"
fi
RC=()
for i in 0 1; do
	wait "${TRACER[$i]}"
	RC[$i]=$?
done
# SIGTERM: a background job of a non-interactive shell ignores SIGINT
[ -n "${WATCH:-}" ] && { kill -TERM "$WATCH" 2>/dev/null; wait "$WATCH"; }
wait
printf '== tracer %s exit %s\n' 0 "${RC[0]}" 1 "${RC[1]}" >"$OUT/exits"
fi
echo "== tracers' exit: node 0 ${RC[0]:-unknown}, node 1 ${RC[1]:-unknown} (the job's own; 139 a SIGSEGV)"
for i in 0 1; do
	echo "== node $i alone:"
	"$NT" report --json "$OUT/node$i.jsonl" | python3 -c 'import json,sys; [print(" ", f["kind"], "rank", f["rank"], f["summary"]) for f in json.load(sys.stdin)["findings"]]'
done
echo "== merged:"
"$NT" report --json "$OUT/node0.jsonl" "$OUT/node1.jsonl" >"$OUT/merged.json"
python3 - "$OUT" "$SN" "$NPROC" "${RC[0]:--1}" "${RC[1]:--1}" <<'PY'
import json, re, sys
out, sn, nproc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rcs = [int(x) for x in sys.argv[4:6]]
rep = json.load(open(f"{out}/merged.json"))
pid = None
for line in open(f"{out}/node{sn}.log", errors="replace"):
    m = re.search(r"STALL rank 1 pid (\d+)", line)
    if m:
        pid = int(m.group(1))
        break
for f in rep["findings"]:
    print(" ", f["kind"], "rank", f["rank"], f.get("host"), f["summary"])
ok = any(f["rank"] == 1 and f.get("pid") == pid and f["kind"] != "config" for f in rep["findings"])
print(("PASS" if ok else "FAIL") + f" merged report names rank 1 (pid {pid})")
alone = [json.loads(l) for l in open(f"{out}/node0.jsonl", errors="replace") if '"finding"' in l]
alone = [f for f in alone if f.get("type") == "finding" and f.get("kind") != "config"]
if nproc == 1:
    ok0 = bool(alone) and all(f.get("remote_rank") == 1 and f.get("rank") is None for f in alone)
    print(("PASS" if ok0 else "FAIL") + " node 0 alone: waits on rank 1 (remote_rank), no culprit: " +
          "; ".join(sorted({f["summary"] for f in alone}))[:300])
else:
    ok0 = any(f.get("rank") == 1 for f in alone)
    print(("PASS" if ok0 else "FAIL") + " node 0 alone names its rank 1: " +
          "; ".join(sorted({f["summary"] for f in alone}))[:300])
okrc = all(0 <= rc < 128 for rc in rcs)
if min(rcs) < 0:
    # judged afterwards without the exits: a tracer that ended of itself wrote its footer
    foot = [any('"type":"footer"' in l for l in open(f"{out}/node{i}.jsonl", errors="replace")) for i in (0, 1)]
    okrc = all(foot)
    print(("PASS" if okrc else "FAIL") + f" no tracer died (exits not kept; footers {foot})")
else:
    print(("PASS" if okrc else "FAIL") + f" no tracer died (exits {rcs[0]}, {rcs[1]})")
try:
    lines = open(f"{out}/watch-live.log", errors="replace").read().splitlines()
    at = [i for i, l in enumerate(lines) if l.startswith("nccltrace: ") and
          not l.startswith("nccltrace: CONFIG") and re.search(r"nccltrace: [A-Z-]+ ", l)]
    first = lines[at[0]] if at else ""
    # its culprit is rank 1 (the summary's subject), its evidence names rank 1's pid
    block = []
    for l in lines[at[0] + 1:] if at else []:
        if l.startswith("nccltrace: "):
            break
        block.append(l)
    okl = bool(re.search(r"(s, early|s)  rank 1 ", first)) and \
        any(re.search(rf"rank 1 \(pid {pid}\b", l) for l in block)
    print(("PASS" if okl else "FAIL") + f" live watch's first finding names rank 1 (pid {pid}): {first.strip()[:240]}")
except FileNotFoundError:
    okl = True
okw = True
try:
    w = json.load(open(f"{out}/watch.json"))
    for f in w["findings"]:
        print("  watch:", f["kind"], "rank", f["rank"], f.get("host"), f["summary"])
    okw = any(f["rank"] == 1 and f.get("pid") == pid and f["kind"] != "config" for f in w["findings"])
    print(("PASS" if okw else "FAIL") + f" watch names rank 1 (pid {pid})")
except FileNotFoundError:
    print("SKIP watch: this nccltrace has no --listen (the static build)")
except ValueError as e:
    okw = False
    print(f"FAIL watch printed no JSON: {e}")
sys.exit(0 if ok and ok0 and okw and okrc and okl else 1)
PY
