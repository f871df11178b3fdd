#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/fuzz-many.sh SECONDS "NAME:WORKERS ..." [OUTDIR]: libFuzzer targets of build/fuzz
# (make fuzz builds them) run at once, each on WORKERS processes (-jobs, -workers) for SECONDS,
# from its grown corpus and committed seeds, a random seed each: the long runs of
# docs/reliability.md, on a machine with cores to spare. One line per target: the execs of all
# its workers summed, and the crash files (reproducers in OUTDIR/crash-NAME; logs in OUTDIR/NAME).
#   scripts/fuzz-many.sh 560 "dump:10 prof:6"    (OUTDIR: build/fuzz/many)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECS=${1:?seconds}
SPECS=${2:?NAME:WORKERS ...}
OUT=${3:-$ROOT/build/fuzz/many}
mkdir -p "$OUT"
for spec in $SPECS; do
	n=${spec%%:*} w=${spec##*:}
	bin=$ROOT/build/fuzz/fuzz_$n
	[ -x "$bin" ] || { echo "fuzz-many: $bin is missing (make fuzz builds it)" >&2; exit 66; }
	mkdir -p "$OUT/$n" "$OUT/crash-$n" "$ROOT/build/fuzz/corpus/$n"
	seeds=("$ROOT/build/fuzz/corpus/$n")
	[ -d "$ROOT/tests/fuzz/corpus/$n" ] && seeds+=("$ROOT/tests/fuzz/corpus/$n")
	[ -d "$ROOT/build/fuzz/corpus/$n.seeds" ] && seeds+=("$ROOT/build/fuzz/corpus/$n.seeds")
	(cd "$OUT/$n" && "$bin" -jobs="$w" -workers="$w" -max_total_time="$SECS" -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$OUT/crash-$n/" \
		"${seeds[@]}" >"$OUT/$n.main.log" 2>&1) &
done
wait
failed=0
for spec in $SPECS; do
	n=${spec%%:*}
	e=$(cat "$OUT/$n"/fuzz-*.log 2>/dev/null | sed -n 's/^stat::number_of_executed_units: *//p' |
		awk '{s += $1} END {print s + 0}')
	c=$(ls "$OUT/crash-$n" | wc -l)
	[ "$c" -gt 0 ] && failed=1
	echo "fuzz_$n: $e execs in ${SECS}s over $(ls "$OUT/$n"/fuzz-*.log 2>/dev/null | wc -l) workers, $c crash files"
done
exit $failed
