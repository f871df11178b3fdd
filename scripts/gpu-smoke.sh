#!/bin/bash
# SPDX-License-Identifier: MIT
# On the 2-GPU machine: real PyTorch + NCCL under a static nccltrace, healthy and with rank 1
# stalled mid-loop, over NVLink and with sockets forced. Dumps and logs go to $OUT (or ./gpu-out).
#   scripts/gpu-smoke.sh [NCCLTRACE]   (default build/nccltrace-static)
#   ONLY="late-lazy late-eager" scripts/gpu-smoke.sh   runs only those scenarios
set -u
cd "$(dirname "$0")/.."
NT=${1:-build/nccltrace-static}
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 NCCLTRACE_CACHE_DIR=/tmp/nccltrace-cache
TR="python3 -m torch.distributed.run --nproc_per_node=2 --master_port=29531 tests/gpu/allreduce.py"
run() { # NAME ENV... -- ARGS
	local name=$1
	shift
	echo "== $name"
	# a hang that never ends (a mismatch) is ended by timeout: SIGTERM, forwarded to the job
	timeout -k 10 "${LIMIT:-120}" env "$@" "$NT" run -v -t 3 --dump "$OUT/$name.jsonl" -- \
		$TR $EXTRA >"$OUT/$name.log" 2>&1
	echo "exit $?"
	grep -E "^nccltrace: [A-Z]|STALL|NCCL 2|attach mode|likely:" "$OUT/$name.log" | head -10
	pkill -9 -f allreduce.py 2>/dev/null
	sleep 1
}
SOCK=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo)
ONLY=${ONLY:-}
want() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }
want nvlink-healthy && { EXTRA="--iters 40"; run nvlink-healthy PATH="$PATH"; }
want sockets-healthy && { EXTRA="--iters 40"; run sockets-healthy "${SOCK[@]}"; }
want sockets-stall && { EXTRA="--iters 40 --stall-rank 1 --stall-for 8"; run sockets-stall "${SOCK[@]}"; }
want nvlink-stall && { EXTRA="--iters 40 --stall-rank 1 --stall-for 8"; run nvlink-stall PATH="$PATH"; }
# rank 1 late to the first collective: PyTorch creates the communicator there (lazy), so the
# others wait in NCCL init; with --eager-init the communicator exists and they wait in NCCL's
# lazy ring setup instead
want late-lazy && { EXTRA="--iters 10 --stall-rank 1 --stall-for 8 --stall-at first"; run late-lazy "${SOCK[@]}"; }
want late-eager && { EXTRA="--iters 10 --stall-rank 1 --stall-for 8 --stall-at first --eager-init"; run late-eager "${SOCK[@]}"; }
want late-eager-nvlink && { EXTRA="--iters 10 --stall-rank 1 --stall-for 8 --stall-at first --eager-init"; run late-eager-nvlink PATH="$PATH"; }
# from NCCL's counters alone (no sockets between the GPUs): a rank that broadcasts where the
# other all-reduces, and a rank 0.3 s late to every collective
want nvlink-mismatch && { EXTRA="--iters 20 --stall-rank 1 --stall-mode mismatch"; LIMIT=25 run nvlink-mismatch PATH="$PATH"; }
want nvlink-slow && { EXTRA="--iters 60 --stall-rank 1 --stall-mode slow --stall-for 0.3"; run nvlink-slow PATH="$PATH"; }
# doctor on the machine's own environment and torchrun, names from the wheel's library
if want doctor; then
	echo "== doctor"
	NCCL_SOCKET_IFNAMES=lo NCCL_SOCKET_TIMEOUT=5 "$NT" doctor -- $(command -v torchrun || echo torchrun) \
		--nproc_per_node=2 tests/gpu/allreduce.py >"$OUT/doctor.log" 2>&1
	echo "exit $?"
	cat "$OUT/doctor.log"
fi
# the dashboard in a pseudo-terminal (script(1)) on real torchrun over NVLink, then the
# post-mortem commands on its dump
if want tui; then
	echo "== tui"
	TR1="$TR --iters 40 --stall-rank 1 --stall-for 8"
	script -qfec "stty rows 40 cols 140; TERM=xterm-256color $NT run -t 3 --dump $OUT/tui.jsonl -- $TR1" \
		/dev/null >"$OUT/tui.raw" 2>&1
	echo "exit $?; dashboard frames with the ranks pane: $(grep -ac 'Ranks (' "$OUT/tui.raw")"
	grep -ao "STALL [0-9.]*s  rank 1 has not launched[^;]*" "$OUT/tui.raw" | head -1
	tail -c 400 "$OUT/tui.raw" | tr -d '\033' | tail -3
	"$NT" report "$OUT/tui.jsonl" | sed -n '/^ranks:/,$p' | head -12
	"$NT" convert "$OUT/tui.jsonl" -o "$OUT/tui.trace.json"
	"$NT" report --html "$OUT/tui.html" "$OUT/tui.jsonl"
	pkill -9 -f 'allreduc[e].py' 2>/dev/null
fi
