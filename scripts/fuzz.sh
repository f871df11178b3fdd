#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/fuzz.sh SECONDS BIN...: run each libFuzzer target (build/fuzz/fuzz_NAME) for SECONDS
# from its committed seeds (tests/fuzz/corpus/NAME) and the corpus it grew before
# (build/fuzz/corpus/NAME, not in git); the library reader also from the fake NCCL's builds.
# FUZZ_JOBS targets run at a time (default: the CPUs). One line per target, in the order given:
# execs, execs/s, corpus size; a crash, a leak, a timeout or an out-of-memory keeps its
# reproducer in build/fuzz/crashes/NAME and fails the run.
# FUZZ_SEED (default 1) fixes libFuzzer's random seed, so that a run from the same seeds tries
# the same inputs: make check's pass is a regression test, not a lottery. FUZZ_SEED=0 draws one
# (exploring: make fuzz FUZZ_SEED=0 FUZZ_SECONDS=600).
set -u
SEED=${FUZZ_SEED:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECS=$1
shift
JOBS=${FUZZ_JOBS:-$(nproc)}

# fuzz_one BIN: one target; its line (and a failure's reproducer line) to BIN.result, exit 1
# on a failure
fuzz_one() {
	local bin=$1 name work crashes log seeds rc execs rate
	name=$(basename "$bin" | sed 's/^fuzz_//')
	work=$(dirname "$bin")/corpus/$name
	crashes=$(dirname "$bin")/crashes/$name
	log=$(dirname "$bin")/$name.log
	mkdir -p "$work" "$crashes"
	seeds=()
	# the committed seeds, where a target has any (git keeps no empty folder)
	[ -d "$ROOT/tests/fuzz/corpus/$name" ] && seeds+=("$ROOT/tests/fuzz/corpus/$name")
	if [ "$name" = elf ]; then
		# real ELF builds to start from: the stripped one and the release one are the small ones
		mkdir -p "$work.seeds"
		for lib in fakenccl-stripped fakenccl-2.28.3-release; do
			[ -f "$ROOT/build/$lib/libnccl.so.2" ] &&
				cp "$ROOT/build/$lib/libnccl.so.2" "$work.seeds/$lib.so"
		done
		seeds+=("$work.seeds")
	fi
	"$bin" -seed="$SEED" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$crashes/" "$work" "${seeds[@]}" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	if [ $rc -ne 0 ]; then
		{
			echo "fuzz_$name: FAILED (exit $rc) after ${execs:-?} execs: $(grep -m1 -E 'ERROR|SUMMARY|runtime error' "$log")"
			echo "  reproducer in $crashes, log $log"
		} >"$bin.result"
		return 1
	fi
	echo "fuzz_$name: ${execs:-?} execs in ${SECS}s (${rate:-?}/s), corpus $(ls "$work" | wc -l), 0 crashes" >"$bin.result"
}

failed=0 pids=()
for bin in "$@"; do
	# a free slot first: wait for the oldest of the running ones
	if [ ${#pids[@]} -ge "$JOBS" ]; then
		wait "${pids[0]}" || failed=1
		pids=("${pids[@]:1}")
	fi
	rm -f "$bin.result"
	fuzz_one "$bin" &
	pids+=($!)
done
for p in "${pids[@]}"; do
	wait "$p" || failed=1
done
for bin in "$@"; do
	cat "$bin.result" 2>/dev/null || { echo "$(basename "$bin"): no result"; failed=1; }
done
exit $failed
