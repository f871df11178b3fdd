#!/bin/bash
# SPDX-License-Identifier: MIT
# What nccltrace costs a real NCCL job (the 2-GPU machine): build/busbw's all_reduce bus
# bandwidth untraced, traced (default mode) and traced with --collectives, interleaved
# (the order rotates each repetition), over NVLink (8 B .. 1 GB) and sockets forced (8 B ..
# 64 MB). Prints, per transport and size, the median busbw of each mode, the ratios to untraced,
# the time per all_reduce; then nccltrace's CPU use and NCCL probe events per second.
#   make gpu                                  (here: build/nccltrace-static, build/busbw)
#   scripts/gpu-bench.sh [REPS]               (there; $OUT for the raw results)
# TRANSPORTS (default "nvlink sockets") and MODES (default "none default collectives") narrow a
# run; MAX_SOCKETS (64M) and MAX_NVLINK (1G) bound the sizes. Mode "alt" is the default mode
# with the build in $NT_ALT: an A/B of two builds of nccltrace, in one interleaved run.
# Mode "always" is the default mode with --tcp-hooks always (quiet mode off). PRE_S (default 3)
# runs busbw --pre: untimed all_reduces first, so that sizes are timed in a job's steady state.
# BUDGET_S stops starting repetitions after that many seconds (the summary covers those done).
# The profiler plugin (build/libnccl-profiler-nccltrace.so, next to nccltrace; `run` puts it in
# by default): mode "plugin" is the job untraced with only NCCL_PROFILER_PLUGIN set to it (the
# plugin's own cost), "noplugin" the default mode with NCCL_PROFILER_PLUGIN=none (nccltrace
# without it). MIN_SIZE (default 8) is busbw's smallest size: its cost is per collective, so
#   MODES="none plugin default noplugin" MIN_SIZE=8K scripts/gpu-bench.sh 9
# measures it from 8 KB up, interleaved. NCCL's own log, which `run` turns on at init-time
# subsystems: mode "log" is the job untraced with the log on as `run` sets it, "nolog" the
# default mode with the job's own NCCL_DEBUG=WARN (nccltrace then leaves the log off).
# GPUS=1 (default: the GPUs nvidia-smi lists): both ranks on GPU 0, each its own NCCL host
# (busbw --one-gpu), joined by NCCL's network transport: the sockets transport only, and the
# ranks time-slice the GPU, so read only ratios.
set -u
cd "$(dirname "$0")/.."
REPS=${1:-3}
NT=${NT:-build/nccltrace-static}
BW=${BW:-build/busbw}
OUT=${OUT:-gpu-out}
NT_ALT=${NT_ALT:-}
PLUGIN=${PLUGIN:-$(dirname "$NT")/libnccl-profiler-nccltrace.so}
GPUS=${GPUS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
ONE=()
[ "$GPUS" -lt 2 ] && ONE=(--one-gpu) && TRANSPORTS=${TRANSPORTS:-sockets}
read -r -a TRS <<<"${TRANSPORTS:-nvlink sockets}"
read -r -a modes <<<"${MODES:-none default collectives}"
mkdir -p "$OUT/bench"
NCCL_DIR=$(python3 -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib"))' 2>/dev/null)
[ -n "$NCCL_DIR" ] && export LD_LIBRARY_PATH=$NCCL_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_NVLS_ENABLE=0 NCCLTRACE_CACHE_DIR=/tmp/nccltrace-cache
SOCK=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo)
echo "libnccl: ${NCCL_DIR:-as the loader finds it}; $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"

run() { # TRANSPORT MODE REP
	local tr=$1 mode=$2 rep=$3 max=${MAX_NVLINK:-1G} f=$OUT/bench/$1-$2-$3
	local envs=(PATH="$PATH") bw=("$BW" "${ONE[@]}" --min "${MIN_SIZE:-8}")
	[ "$tr" = sockets ] && envs=("${SOCK[@]}") && max=${MAX_SOCKETS:-64M}
	case $mode in
	none) env "${envs[@]}" "${bw[@]}" --max $max --pre "${PRE_S:-3}" >"$f.txt" 2>"$f.err" ;;
	default) env "${envs[@]}" "$NT" run --no-tui --dump "$f.jsonl" -- "${bw[@]}" --max $max --pre "${PRE_S:-3}" >"$f.txt" 2>"$f.err" ;;
	collectives) env "${envs[@]}" "$NT" run --no-tui --collectives --dump "$f.jsonl" -- "${bw[@]}" --max $max --pre "${PRE_S:-3}" >"$f.txt" 2>"$f.err" ;;
	alt) env "${envs[@]}" "$NT_ALT" run --no-tui --dump "$f.jsonl" -- "${bw[@]}" --max $max --pre "${PRE_S:-3}" >"$f.txt" 2>"$f.err" ;;
	always) env "${envs[@]}" "$NT" run --no-tui --tcp-hooks always --dump "$f.jsonl" -- "${bw[@]}" --max $max --pre "${PRE_S:-3}" >"$f.txt" 2>"$f.err" ;;
	plugin) env "${envs[@]}" NCCL_PROFILER_PLUGIN="$PLUGIN" "${bw[@]}" --max $max --pre "${PRE_S:-3}" >"$f.txt" 2>"$f.err" ;;
	noplugin) env "${envs[@]}" NCCL_PROFILER_PLUGIN=none "$NT" run --no-tui --dump "$f.jsonl" -- "${bw[@]}" --max $max --pre "${PRE_S:-3}" >"$f.txt" 2>"$f.err" ;;
	log) env "${envs[@]}" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,BOOTSTRAP,NET NCCL_DEBUG_FILE="$f.nccl.%p.log" "${bw[@]}" --max $max --pre "${PRE_S:-3}" >"$f.txt" 2>"$f.err" ;;
	nolog) env "${envs[@]}" NCCL_DEBUG=WARN "$NT" run --no-tui --dump "$f.jsonl" -- "${bw[@]}" --max $max --pre "${PRE_S:-3}" >"$f.txt" 2>"$f.err" ;;
	esac || echo "run $tr $mode $rep failed: $(tail -2 "$f.err")"
}

nm=${#modes[@]}
if [[ " ${modes[*]} " == *" plugin "* && ! -r "$PLUGIN" ]]; then
	echo "gpu-bench: mode plugin needs the profiler plugin: $PLUGIN is not there (make gpu)" >&2
	exit 64
fi
if [[ " ${modes[*]} " == *" alt "* && ! -x "$NT_ALT" ]]; then
	echo "gpu-bench: mode alt needs NT_ALT, the other build of nccltrace" >&2
	exit 64
fi
done_reps=0
for rep in $(seq 1 "$REPS"); do
	if [ -n "${BUDGET_S:-}" ] && [ "$SECONDS" -ge "$BUDGET_S" ]; then
		echo "budget of ${BUDGET_S}s spent: stopping after $done_reps repetitions"
		break
	fi
	for tr in "${TRS[@]}"; do
		for k in $(seq 0 $((nm - 1))); do
			run "$tr" "${modes[$(((k + rep) % nm))]}" "$rep"
		done
	done
	echo "repetition $rep done (${SECONDS}s)"
	done_reps=$rep
done

python3 - "$OUT/bench" "$done_reps" "${TRS[*]}" "${modes[*]}" <<'PY'
import glob, json, os, statistics, sys
d, reps, trs, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
names = {"default": "default", "collectives": "--collectives", "alt": "default, NT_ALT build",
         "always": "--tcp-hooks always", "plugin": "plugin only, untraced",
         "noplugin": "default, NCCL_PROFILER_PLUGIN=none", "log": "NCCL's log only, untraced",
         "nolog": "default, the job's NCCL_DEBUG=WARN"}
def table(tr, mode):
    per = {}
    for rep in range(1, reps + 1):
        p = f"{d}/{tr}-{mode}-{rep}.txt"
        if not os.path.exists(p):
            continue
        for line in open(p):
            # busbw's rows only: NCCL prints its version on stdout at NCCL_DEBUG=WARN
            w = line.split()
            if len(w) != 5 or not w[0].isdigit():
                continue
            b, us, alg, bus, it = w
            per.setdefault(int(b), []).append((float(us), float(bus)))
    return {b: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for b, v in per.items()}
def size(b):
    for u, m in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if b >= m:
            return f"{b // m} {u}"
    return f"{b} B"
traced = [m for m in modes if m != "none"]
for tr in trs:
    t = {m: table(tr, m) for m in modes}
    if "none" not in t or not traced:
        continue
    print(f"\n{tr}: median of {reps} interleaved runs per mode")
    print("| size | busbw GB/s untraced | " + " | ".join(f"{names[m]} (ratio)" for m in traced)
          + " | us per all_reduce untraced | " + " | ".join(f"{names[m]} (added)" for m in traced) + " |")
    print("|---" * (3 + 2 * len(traced)) + "|")
    for b in sorted(t["none"]):
        n = t["none"][b]
        got = [t[m].get(b) for m in traced]
        if not all(got):
            continue
        # the ratio of times: busbw at a few bytes rounds to 0.00
        bw = " | ".join(f"{g[1]:.2f} ({n[0] / g[0]:.3f})" for g in got)
        us = " | ".join(f"{g[0]:.1f} ({100 * (g[0] / n[0] - 1):+.1f}%)" for g in got)
        print(f"| {size(b)} | {n[1]:.2f} | {bw} | {n[0]:.1f} | {us} |")
print("\nnccltrace itself (per traced run):")
for mode in traced:
    cpu, ev, quiet = [], [], []
    for p in glob.glob(f"{d}/*-{mode}-*.jsonl"):
        start = end = None; nccl = 0; tot = {}; setup = 0; quiet_from = None
        for line in open(p):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if "nccltrace" in r:
                start = r.get("start_ns"); setup = r.get("setup_cpu_s", 0)
            if r.get("type") == "nccl":
                nccl += 1
            if r.get("type") == "tcp_hooks" and not r.get("on") and quiet_from is None:
                quiet_from = r.get("ts_ns")
            if r.get("type") == "footer":
                end = r.get("ts_ns"); tot = r.get("totals", {})
        if start and end and end > start:
            dur = (end - start) / 1e9
            cpu.append(100 * (tot.get("tracer_cpu_s", 0) - setup) / dur)
            ev.append(nccl / dur)
            if quiet_from:
                quiet.append((quiet_from - start) / 1e9)
    if cpu:
        print(f"  {mode}: tracer CPU {statistics.median(cpu):.2f}% of one core after loading the BPF programs, "
              f"NCCL probe events {statistics.median(ev):.0f}/s over the job")
        print(f"    quiet mode (TCP hooks off) in {len(quiet)} of {len(cpu)} runs"
              + (f", from {statistics.median(quiet):.1f} s after the start (median)" if quiet else ""))
PY
