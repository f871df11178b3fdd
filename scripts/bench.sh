#!/bin/bash
# SPDX-License-Identifier: MIT
# Overhead of nccltrace on the demo ring: throughput of ringjob with and without tracing, in
# interleaved A/B pairs (so drift of the machine hits both alike), and nccltrace's own CPU use
# (from the dump footer). Not a test: it prints a table for docs/benchmarks.md.
#
#   scripts/bench.sh [REPS] [DURATION] [RANKS]     (as root; defaults 5 5 2)
set -eu
cd "$(dirname "$0")/.."
REPS=${1:-5}
DUR=${2:-5}
RANKS=${3:-2}
NT=build/nccltrace
RJ=build/ringjob
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

rate() { sed -n 's/.*, \([0-9.]*\) MB\/s.*/\1/p' "$1"; }
steps() { sed -n 's/.*done: \([0-9]*\) steps.*/\1/p' "$1"; }

median() { tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

summarize() { # NAME BASE-LIST TRACED-LIST CPU-LIST EVENTS-LIST
	local ratios mb mt lo hi
	ratios=$(paste -d' ' <(tr ' ' '\n' <<<"$2") <(tr ' ' '\n' <<<"$3") | awk '{printf "%.4f ", $2/$1}')
	mb=$(median <<<"$2")
	mt=$(median <<<"$3")
	lo=$(tr ' ' '\n' <<<"$ratios" | grep . | sort -g | head -1)
	hi=$(tr ' ' '\n' <<<"$ratios" | grep . | sort -g | tail -1)
	printf '| %s | %.1f | %.1f | %.3f (%.3f-%.3f) | %.1f%% | %.2f M/s |\n' "$1" "$mb" "$mt" \
		"$(median <<<"${ratios% }")" "$lo" "$hi" "$(awk -v c="$(median <<<"$4")" -v d="$DUR" 'BEGIN {print c/d*100}')" \
		"$(awk -v e="$(median <<<"$5")" -v d="$DUR" 'BEGIN {print e/d/1e6}')"
}

run_mode() { # MODE-NAME EXTRA-ARGS...
	local name=$1
	shift
	local base=() traced=() cpu=() ev=()
	for i in $(seq 1 "$REPS"); do
		"$RJ" -q --ranks "$RANKS" --duration "$DUR" "$@" >"$TMP/a.out"
		base+=("$(rate "$TMP/a.out")")
		rm -f "$TMP/b.jsonl"
		"$NT" run --dump "$TMP/b.jsonl" -- "$RJ" -q --ranks "$RANKS" --duration "$DUR" "$@" \
			>"$TMP/b.out" 2>/dev/null
		traced+=("$(rate "$TMP/b.out")")
		# steady state: without loading and verifying the programs at start
		cpu+=("$(jq -s -r '(.[] | select(.type=="footer") | .totals.tracer_cpu_s) - .[0].setup_cpu_s' "$TMP/b.jsonl")")
		ev+=("$(jq -r 'select(.type=="footer") | .totals.send_events + .totals.recv_events' "$TMP/b.jsonl")")
	done
	summarize "$name" "${base[*]}" "${traced[*]}" "${cpu[*]}" "${ev[*]}"
}

echo "Per-call cost: build/callcost (one process, a TCP pair on 127.0.0.1), $REPS interleaved pairs"
echo
echo "| call | ns untraced (median) | ns traced (median) | added ns |"
echo "|---|---|---|---|"
ea=() et=() xa=() xt=()
for i in $(seq 1 "$REPS"); do
	out=$(build/callcost 1000000)
	ea+=("$(sed 's/.*eagain_ns=\([0-9.]*\).*/\1/' <<<"$out")")
	xa+=("$(sed 's/.*xfer_ns=\([0-9.]*\).*/\1/' <<<"$out")")
	rm -f "$TMP/c.jsonl"
	out=$("$NT" run --dump "$TMP/c.jsonl" -- build/callcost 1000000 2>/dev/null)
	et+=("$(sed 's/.*eagain_ns=\([0-9.]*\).*/\1/' <<<"$out")")
	xt+=("$(sed 's/.*xfer_ns=\([0-9.]*\).*/\1/' <<<"$out")")
done
m1=$(median <<<"${ea[*]}") m2=$(median <<<"${et[*]}")
printf '| receive returning EAGAIN (the proxy spin) | %.0f | %.0f | %+.0f |\n' "$m1" "$m2" "$(awk -v a="$m1" -v b="$m2" 'BEGIN {print b-a}')"
m1=$(median <<<"${xa[*]}") m2=$(median <<<"${xt[*]}")
printf '| send or receive of 64 bytes | %.0f | %.0f | %+.0f |\n' "$m1" "$m2" "$(awk -v a="$m1" -v b="$m2" 'BEGIN {print b-a}')"
echo
echo "Throughput: ringjob --ranks $RANKS --duration $DUR, $REPS interleaved pairs, $(nproc) CPUs, $(uname -r)"
echo
echo "| mode | MB/s untraced (median) | MB/s traced (median) | traced/untraced (min-max) | nccltrace CPU (steady state) | send+recv calls with data (BPF) |"
echo "|---|---|---|---|---|---|"
run_mode "non-blocking (EAGAIN spin), 64 KiB steps"
run_mode "non-blocking, 1 MiB steps" --size 1048576
run_mode "blocking, 64 KiB steps" --blocking

# NCCL probes in a steady collective loop (the fake NCCL of tests/fixtures): uprobe events per
# collective per rank, from the dump, in the default mode and with --collectives (the event
# counts of a short and a long run differ only by the collectives in between); and the time per
# collective of a 1-rank job, where a collective is only the enqueue and a thread handoff, so
# that the cost of the probes stands out.
if [ -x build/nccljob ]; then
	count() { jq -s '[.[] | select(.type=="nccl" or .type=="nccl_setting" or .type=="nccl_thread" or .type=="nccl_warning")] | length' "$1"; }
	us() { sed -n 's/.*, \([0-9.]*\) us each.*/\1/p'; }
	echo
	echo "NCCL probes in a steady loop (fake NCCL): uprobe events per collective per rank (2 ranks),"
	echo "and microseconds per collective of a 1-rank job ($REPS interleaved runs, median)"
	echo
	echo "| mode | events per collective per rank | us per collective, 1 rank (untraced -> traced) |"
	echo "|---|---|---|"
	for mode in default --collectives; do
		opt=()
		[ "$mode" = default ] || opt=("$mode")
		for iters in 20 220; do
			rm -f "$TMP/n$iters.jsonl"
			"$NT" run "${opt[@]}" --dump "$TMP/n$iters.jsonl" -- build/nccljob --ranks 2 \
				--iters $iters --step-delay 0 >/dev/null 2>&1
		done
		a=$(count "$TMP/n20.jsonl")
		b=$(count "$TMP/n220.jsonl")
		base=() traced=()
		for i in $(seq 1 "$REPS"); do
			base+=("$(build/nccljob --ranks 1 --iters 20000 --count 1 --step-delay 0 \
				--import-delay 0 | us)")
			rm -f "$TMP/u.jsonl"
			traced+=("$("$NT" run "${opt[@]}" --dump "$TMP/u.jsonl" -- build/nccljob --ranks 1 \
				--iters 20000 --count 1 --step-delay 0 --import-delay 1 2>/dev/null | us)")
		done
		printf '| %s | %s | %.2f -> %.2f |\n' "$mode" \
			"$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f", (b-a)/200/2}')" \
			"$(median <<<"${base[*]}")" "$(median <<<"${traced[*]}")"
	done
fi

# NCCL's profiler plugin (nccltrace's, which `run` puts into the job): the calls NCCL 2.28.9
# makes per collective, in a loop (build/profcost), and the 1-rank fake job untraced without
# the plugin (NCCL_PROFILER_PLUGIN=none) and with it, interleaved.
if [ -x build/profcost ] && [ -x build/nccljob ]; then
	us() { sed -n 's/.*, \([0-9.]*\) us each.*/\1/p'; }
	echo
	echo "NCCL profiler plugin: ns per collective (build/profcost, median of 7 rounds, $REPS runs),"
	echo "and microseconds per collective of a 1-rank fake job without and with it ($REPS pairs)"
	echo
	echo "| what | median | min-max |"
	echo "|---|---|---|"
	c=() s=() z=() none=() with=()
	for i in $(seq 1 "$REPS"); do
		out=$(build/profcost)
		c+=("$(sed 's/^coll_ns=\([0-9.]*\).*/\1/' <<<"$out")")
		s+=("$(sed 's/.*coll_start_ns=\([0-9.]*\).*/\1/' <<<"$out")")
		z+=("$(sed 's/.*noop_coll_ns=\([0-9.]*\).*/\1/' <<<"$out")")
		none+=("$(NCCL_PROFILER_PLUGIN=none build/nccljob --ranks 1 --iters 20000 --count 1 \
			--step-delay 0 --import-delay 0 | us)")
		with+=("$(NCCL_PROFILER_PLUGIN=$PWD/build/libnccl-profiler-nccltrace.so build/nccljob \
			--ranks 1 --iters 20000 --count 1 --step-delay 0 --import-delay 0 | us)")
	done
	row() { printf '| %s | %s | %s-%s |\n' "$1" "$(median <<<"$2")" \
		"$(tr ' ' '\n' <<<"$2" | sort -g | head -1)" "$(tr ' ' '\n' <<<"$2" | sort -g | tail -1)"; }
	row "ns per collective: all of NCCL's calls into the plugin" "${c[*]}"
	row "ns per Coll startEvent alone" "${s[*]}"
	row "ns per collective, the same calls into a plugin that does nothing" "${z[*]}"
	row "us per collective, 1-rank fake job, NCCL_PROFILER_PLUGIN=none" "${none[*]}"
	row "us per collective, 1-rank fake job, with the plugin" "${with[*]}"
fi
