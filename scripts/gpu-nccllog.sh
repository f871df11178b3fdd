#!/bin/bash
# SPDX-License-Identifier: MIT
# On the GPU machine: NCCL's own log as nccltrace turns it on, on real NCCL (the wheel's 2.28.9,
# and with NCCL_LIB_DIR a stripped build such as the 2.28.3 .deb's): every Channel, Init,
# "set by environment" and "Connected all rings" line of each rank's file must be a record in
# the dump (the parser handles NCCL's real lines), the job's output must hold no NCCL INFO line,
# and a rank late to its first collective (eager init, sockets forced) must be a
# ring_setup_blocked naming the transport. The log files are kept as a sample
# ($OUT/nccllog-sample.tar.gz) for the parser's unit tests.
#   scripts/gpu-nccllog.sh [NCCLTRACE]          (default build/nccltrace-static)
#   NCCL_LIB_DIR=/usr/lib/x86_64-linux-gnu scripts/gpu-nccllog.sh   (that libnccl.so.2 first)
set -u
cd "$(dirname "$0")/.." || exit 1
NT=${1:-build/nccltrace-static}
OUT=${OUT:-gpu-out/nccllog}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 NCCLTRACE_CACHE_DIR=/tmp/nccltrace-cache
TR="python3 -m torch.distributed.run --nproc_per_node=2 --master_port=29533 tests/gpu/allreduce.py"
LIB=()
[ -n "${NCCL_LIB_DIR:-}" ] && LIB=(LD_LIBRARY_PATH="$NCCL_LIB_DIR")
SOCK=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo)
bad=0

# count PID WHAT: the dump's nccl_log records of that kind for that pid
count() { jq -s "[.[] | select(.type==\"nccl_log\" and .pid==$2 and .what==\"$3\")] | length" "$1"; }

# compare NAME: each rank's file against the dump's records
compare() {
	local D=$OUT/$1.jsonl dir=$OUT/$1.nccl f pid lines recs
	for f in "$dir"/nccl.*.log; do
		[ -e "$f" ] || { echo "  no log file in $dir"; bad=1; return; }
		pid=${f%.log}
		pid=${pid##*.}
		for k in "channel: Channel [0-9]+(/[0-9]+)? : [0-9]+\[" \
			"init: Init (START|COMPLETE)$" \
			"env: NCCL_[A-Z0-9_]+ set (by environment )?to " \
			"rings_connected: Connected all rings"; do
			lines=$(grep -cE " NCCL INFO .*${k#*: }" "$f")
			recs=$(count "$D" "$pid" "${k%%:*}")
			if [ "$lines" != "$recs" ]; then
				echo "  MISMATCH pid $pid ${k%%:*}: $lines lines, $recs records"
				grep -E " NCCL INFO .*${k#*: }" "$f" | head -5 | sed 's/^/    /'
				bad=1
			fi
		done
		echo "  pid $pid: $(wc -l <"$f") lines, $(jq -s "[.[] | select(.type==\"nccl_log\" and .pid==$pid)] | length" "$D") records"
	done
	if grep -q "NCCL INFO" "$OUT/$1.out"; then
		echo "  NCCL INFO lines in the job's output"
		bad=1
	fi
}

run() { # NAME ENV... ; EXTRA: allreduce.py's arguments
	local name=$1
	shift
	echo "== $name"
	rm -rf "$OUT/$name.jsonl" "$OUT/$name.nccl"
	timeout -k 10 120 env "${LIB[@]}" "$@" "$NT" run -v --no-tui -t 3 --dump "$OUT/$name.jsonl" \
		-- $TR $EXTRA >"$OUT/$name.out" 2>&1
	echo "exit $?"
	grep -E "^nccltrace: (NCCL 2|reading NCCL|RING|STALL|INIT)" "$OUT/$name.out" | head -8
	compare "$name"
	"$NT" report "$OUT/$name.jsonl" | grep -E "NCCL log:|comm |via:|init  " | head -12
	pkill -9 -f 'allreduc[e].py' 2>/dev/null
	sleep 1
}

EXTRA="--iters 40" run nvlink-healthy PATH="$PATH"
EXTRA="--iters 40" run sockets-healthy "${SOCK[@]}"
EXTRA="--iters 10 --stall-rank 1 --stall-for 8 --stall-at first --eager-init" \
	run late-eager "${SOCK[@]}"
"$NT" report --json "$OUT/late-eager.jsonl" |
	jq -r '.findings[] | select(.kind=="ring_setup_blocked") | .evidence[] | select(test("NCCL log"))'
# the same without nccltrace's log (the job's own NCCL_DEBUG wins): init time to compare
EXTRA="--iters 40" run sockets-nolog "${SOCK[@]}" NCCL_DEBUG=VERSION
(cd "$OUT" && tar -czf nccllog-sample.tar.gz ./*.nccl)
echo "sample: $OUT/nccllog-sample.tar.gz"
[ $bad = 0 ] && echo "nccllog: every counted line is a record" || echo "nccllog: MISMATCHES above"
exit $bad
