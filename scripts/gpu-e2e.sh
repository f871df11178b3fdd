#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end fault scenarios on real PyTorch + NCCL (the 2-GPU machine): each runs
# `nccltrace run -- python3 -m torch.distributed.run --nproc_per_node=2 tests/gpu/allreduce.py`
# with NVLink (default transports) and with sockets forced, checks the finding's kind, culprit
# rank and phase, and measures the detection latency from the stall marker the job prints; the
# sleeping rank's finding must name allreduce.py's line it sleeps at (its Python stack).
# The attach scenarios start the job without nccltrace and `nccltrace attach --once` to it after
# the fault: the latency is from the attach (2 s at most), since_s beside the stall's true age.
# Needs python3 (the job's) and no other tool. Prints PASS/FAIL lines and a markdown table.
#   scripts/gpu-e2e.sh [NCCLTRACE]      (default build/nccltrace-static; $OUT for the dumps)
#   ONLY="nvlink-sleep sockets-stop" scripts/gpu-e2e.sh
#   GPUS=1: both ranks on GPU 0, each its own NCCL "host" (NCCL_HOSTID), joined by NCCL's
#           network transport as across nodes: the sockets scenarios only (default: the GPUs
#           nvidia-smi lists, 2 at most)
#   LIBNCCL=PATH: that libnccl.so.2 in the job (LD_PRELOAD), e.g. NVIDIA's stripped .deb build
#           in the multiarch directory; TAG=deb names the scenarios deb-...
#   RANKS=N: N ranks (torchrun --nproc_per_node=N; default 2); more ranks than GPUs puts every
#           rank on GPU 0 as its own NCCL host (sockets scenarios only)
#   REPEAT=K: each scenario K times (NAME, NAME.2, ...): the rate, at scale, is what counts
#   Each row: the finding, its latency, the dump's size and the records lost and suppressed;
#   a second culprit (another non-config finding naming another rank) fails the scenario.
set -u
cd "$(dirname "$0")/.."
NT=${1:-build/nccltrace-static}
OUT=${OUT:-gpu-out}
THRESH=3
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 NCCLTRACE_CACHE_DIR=/tmp/nccltrace-cache
SOCK=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo)
GPUS=${GPUS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
RANKS=${RANKS:-2}
REPEAT=${REPEAT:-1}
JOB="python3 -m torch.distributed.run --nproc_per_node=$RANKS --master_port=29541 tests/gpu/allreduce.py"
[ "$GPUS" -lt "$RANKS" ] && JOB="$JOB --one-gpu" && GPUS=1
PRE=()
[ -n "${LIBNCCL:-}" ] && PRE=(LD_PRELOAD="$LIBNCCL")
TAG=${TAG:+$TAG-}
ONLY=${ONLY:-}
want() { [ -z "$ONLY" ] || [[ " $ONLY " == *" ${1#"$TAG"} "* ]]; }
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
since = {}
attached = None
for line in open(dump, errors="replace"):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if r.get("type") == "finding" and r.get("event") == "open":
        opened.setdefault(r["id"], r.get("realtime_ns"))
        since.setdefault(r["id"], r.get("since_s"))
    if r.get("type") == "attach":
        attached = r.get("realtime_ns")
import os
lost = rep.get("lost") or {}
sup = rep.get("suppressed") or {}
# the probes over the budget, most first: which function floods
byp = sorted((sup.get("by_probe") or {}).items(), key=lambda kv: -kv[1])[:3]
supt = f"{sup.get('total', '?')}" + (" (" + ", ".join(f"{k} {v}" for k, v in byp) + ")" if byp else "")
extra = f"{os.path.getsize(dump) / 1e6:.1f} MB | {lost.get('ringbuf_drops', '?')} | {supt}"
if kind == "none":
    ok = not fs
    got = ", ".join(f["kind"] for f in fs) or "none"
    print(f"{'PASS' if ok else 'FAIL'} {name}: findings: {got}")
    print(f"ROW| {name} | none | {got} | | | {extra} |")
    sys.exit(0 if ok else 1)
f = fs[0] if fs else None
ok = bool(f) and f["kind"] == kind and (rank == "-" or str(f.get("rank")) == rank)
# one culprit, named once: no other finding names another rank
others = sorted({str(g.get("rank")) for g in fs[1:] if str(g.get("rank")) != str(f.get("rank"))}) if f else []
if others:
    ok = False
lat = ""
if f and attached and opened.get(f["id"]):
    # nccltrace attach: within 2 s of the attach (a setup entered before it counts from it:
    # the threshold after it, and + 1 s); since_s against the stall's true age from the marker
    after = (opened[f["id"]] - attached) / 1e9
    # the threshold after it, too, where only counters found by the memory scan tell the wait
    # (their counts unchanged "at least since the attach": 8 ranks waiting in cudaSynchronize)
    from_attach = any("at least (since the attach)" in e for e in f.get("evidence", []))
    limit = float(thresh) + 1 if kind in ("ring_setup_blocked", "init_blocked") or from_attach else 2
    age = (opened[f["id"]] - marker) / 1e9 if marker else None
    lat = f"{after:.2f} s after the attach, since_s {since[f['id']]:.1f}" + (
        f" (stall {age:.1f} s old)" if age is not None else "")
    if after > limit:
        ok = False
elif f and marker and opened.get(f["id"]):
    lat = f"{(opened[f['id']] - marker) / 1e9:.2f} s"
    if (opened[f["id"]] - marker) / 1e9 > float(thresh) + 1:
        ok = False
got = f"{f['kind']} rank {f.get('rank')}" if f else "no finding"
if others:
    got += f" (and rank {', '.join(others)})"
phase = f.get("phase", "") if f else ""
print(f"{'PASS' if ok else 'FAIL'} {name}: {got}, phase '{phase}', latency {lat or '-'}")
if f:
    print(f"    {f['summary']}")
print(f"ROW| {name} | {kind} rank {rank} | {got} | {phase[:60]} | {lat} | {extra} |")
sys.exit(0 if ok else 1)
PY
}

# split_args ENV... -- JOBARGS...: ENVS (PRE's and the ENV=VALUE given), ARGS (the job's)
split_args() {
	ENVS=("${PRE[@]}")
	while [ "$1" != "--" ]; do
		ENVS+=("$1")
		shift
	done
	shift
	ARGS=("$@")
}

# stall_pid NAME: the faulty rank's pid, from its marker in the job's log (waits up to 60 s)
stall_pid() {
	local pid="" n=0
	while [ -z "$pid" ] && [ $n -lt 600 ]; do
		pid=$(sed -n 's/.*STALL rank [0-9]* pid \([0-9]*\) .*/\1/p' "$OUT/$1.log" | head -1)
		sleep 0.1
		n=$((n + 1))
	done
	echo "$pid"
}

# verdict NAME KIND RANK: the job's leftovers gone, the dump judged, counted, its table row kept
verdict() {
	local out
	pkill -9 -f 'allreduc[e].py' 2>/dev/null
	sleep 1
	out=$(judge "$1" "$2" "$3")
	if [ $? -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
	grep -v '^ROW|' <<<"$out"
	ROWS+=("$(sed -n 's/^ROW|/|/p' <<<"$out")")
}

# scenario NAME KIND RANK ENV... -- JOBARGS...: REPEAT times (NAME, NAME.2, ...)
scenario() {
	local k
	for k in $(seq 1 "$REPEAT"); do
		scenario_once "$1$([ "$k" -gt 1 ] && echo ".$k")" "${@:2}"
	done
}

scenario_once() {
	local name=$TAG$1 kind=$2 rank=$3 pid
	shift 3
	split_args "$@"
	want "${name%.[0-9]*}" || return 0
	rm -f "$OUT/$name.jsonl"
	env "${ENVS[@]}" timeout -k 10 "${LIMIT:-90}" "$NT" run --no-tui -t $THRESH --dump "$OUT/$name.jsonl" -- \
		$JOB "${ARGS[@]}" >"$OUT/$name.log" 2>&1 &
	local job=$!
	# a stopped rank is continued 8 s after it stopped itself
	if [[ " ${ARGS[*]} " == *" stop "* ]]; then
		pid=$(stall_pid "$name")
		sleep 8
		[ -n "$pid" ] && kill -CONT "$pid" 2>/dev/null
	fi
	wait $job
	verdict "$name" "$kind" "$rank"
}

# attach_scenario NAME KIND RANK ENV... -- JOBARGS...: the job started WITHOUT nccltrace;
# `nccltrace attach --once` 4 s after the faulty rank's marker, by the pid of the job's
# launcher; a stopped rank is continued after the attach
attach_scenario() {
	local name=$TAG$1 kind=$2 rank=$3 pid
	shift 3
	split_args "$@"
	want "$name" || return 0
	rm -f "$OUT/$name.jsonl"
	env "${ENVS[@]}" timeout -k 10 "${LIMIT:-90}" $JOB "${ARGS[@]}" >"$OUT/$name.log" 2>&1 &
	local job=$!
	pid=$(stall_pid "$name")
	sleep 4
	"$NT" attach --once --json -t $THRESH --dump "$OUT/$name.jsonl" "$job" \
		>"$OUT/$name.attach.json" 2>"$OUT/$name.attach.log"
	echo "    $name: attach exit $?; $(head -1 "$OUT/$name.attach.log")"
	[ -n "$pid" ] && kill -CONT "$pid" 2>/dev/null
	wait $job
	echo "    $name: the job exited $? (its own status)"
	verdict "$name" "$kind" "$rank"
}

# pyline NAME: the sleeping rank's finding names the job's own line, where allreduce.py sleeps
# (its summary, and the culprit's Python stack in report --json), read from outside
SLEEP_LINE=$(grep -n 'time.sleep(a.stall_for)' tests/gpu/allreduce.py | head -1 | cut -d: -f1)
pyline() {
	local name=$TAG$1 out
	want "$name" || return 0
	out=$(python3 - "$NT" "$OUT/$name.jsonl" "$name" "$SLEEP_LINE" <<'PY'
import json, subprocess, sys
nt, dump, name, line = sys.argv[1:5]
rep = json.loads(subprocess.run([nt, "report", "--json", dump], capture_output=True, text=True).stdout or "{}")
fs = [f for f in rep.get("findings", []) if f["kind"] != "config"]
f = fs[0] if fs else {}
want = "allreduce.py:%s" % line
py = [s.get("python") or {} for s in f.get("stacks", []) if s.get("role") == "culprit"]
frames = [p for s in py for p in s.get("frames", [])[:8]]
ok = want in f.get("summary", "") and any(p["file"].endswith("allreduce.py") and str(p["line"]) == line for p in frames)
why = "; ".join(s.get("error") or "" for s in py if s.get("error")) or (f.get("summary", "no finding"))
print(f"{'PASS' if ok else 'FAIL'} {name}-pyline: {want} {'named' if ok else 'not named: ' + why}")
sys.exit(0 if ok else 1)
PY
)
	if [ $? -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
	echo "$out"
}

L="--iters 40 --stall-rank 1 --stall-for 8"
TRANSPORTS="nvlink sockets"
[ "$GPUS" -lt 2 ] && TRANSPORTS=sockets
for tr in $TRANSPORTS; do
	if [ $tr = nvlink ]; then E=(PATH="$PATH"); else E=("${SOCK[@]}"); fi
	scenario $tr-healthy none - "${E[@]}" -- --iters 40
	scenario $tr-sleep stall 1 "${E[@]}" -- $L
	pyline $tr-sleep
	scenario $tr-stop peer_stopped 1 "${E[@]}" -- $L --stall-mode stop
	# the communicator exists (eager), rank 1 late to the first collective: lazy ring setup
	scenario $tr-before-first ring_setup_blocked 1 "${E[@]}" -- $L --stall-at first --eager-init
	# PyTorch creates the communicator at the first collective: rank 1 late to NCCL's init
	scenario $tr-before-init init_blocked 1 "${E[@]}" -- $L --stall-at first
	LIMIT=30 scenario $tr-mismatch collective_mismatch 1 "${E[@]}" -- --iters 20 --stall-rank 1 --stall-mode mismatch
	# all_reduce #21 of 4194304 floats, 2109497 on rank 1: completes with corrupt data; the
	# profiler plugin names it by default (no --collectives)
	scenario $tr-size-mismatch collective_mismatch 1 "${E[@]}" -- --iters 40 --numel 4194304 --stall-rank 1 --stall-mode count
	# rank 1 skips all_reduce #21, ends its loop one short and exits: the others wait for ever
	LIMIT=45 scenario $tr-skip peer_dead 1 "${E[@]}" -- --iters 40 --stall-rank 1 --stall-mode skip
	# steady state first (5 s of all_reduces every 20 ms): quiet mode is on when rank 1 sleeps
	scenario $tr-sleep-steady stall 1 "${E[@]}" -- --iters 500 --numel 1024 --stall-rank 1 --stall-for 8
	# attach to a job already hung: rank 1 late to the first collective (eager init), and a
	# rank stopped mid-loop
	attach_scenario $tr-attach-before-first ring_setup_blocked 1 "${E[@]}" -- --iters 40 \
		--stall-rank 1 --stall-for 16 --stall-at first --eager-init
	attach_scenario $tr-attach-stop peer_stopped 1 "${E[@]}" -- $L --stall-mode stop
	# and to a rank asleep mid-loop (its NCCL RAS thread goes on with its keep-alives), 16 s: at
	# 8 ranks the attach takes 2.5 s (stacks, memory scan) and counters wait the threshold from it
	attach_scenario $tr-attach-sleep stall 1 "${E[@]}" -- --iters 40 --stall-rank 1 --stall-for 16
	if want $TAG$tr-sleep-steady; then
		q=$(grep -c '"type":"tcp_hooks","ts_ns":[0-9]*,"on":false' "$OUT/$TAG$tr-sleep-steady.jsonl")
		echo "    $TAG$tr-sleep-steady: quiet mode went on $q time(s)"
	fi
done
scenario env-typo config - NCCL_SOCKET_IFNAMES=lo -- --iters 5

echo
echo "| scenario | expected | found | phase | opened after the stall (threshold ${THRESH} s) | dump | drops | suppressed |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
echo
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
