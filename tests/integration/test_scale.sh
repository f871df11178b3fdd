#!/bin/bash
# SPDX-License-Identifier: MIT
# One culprit at scale: a 32-rank TCP ring on this machine's 2 cores (31 spinning processes: the
# scheduler leaves waiters unrun for long stretches), the faulty rank chosen at random per run;
# exactly one finding naming it, within the threshold + 1 s; no finding on healthy runs; two
# independent rings hung at once are two findings.
# One run per fault (sleep, stop, exit) and two healthy ones: the faulty rank is random, so the
# rate over many placements is the script run again and again (for i in $(seq 10); do
# tests/integration/test_scale.sh; done), not every make check.
# checks: 22
# lane: alone (16 and more ranks on 2 CPUs, their latencies measured)
. "$(dirname "$0")/lib.sh"
# its jobs spin on EAGAIN as NCCL does (lib.sh FIXTURE_IDLE_US)
export FIXTURE_IDLE_US=0

need_bpf scale || end_checks
kill_leftovers

THRESH=3
RANKS=32

# one_run NAME MODE RANK: the stall of RANK in MODE, graded against the job's own marker
one_run() {
	local name=$1 mode=$2 rank=$3 D=$TMP/$1.jsonl OUT=$TMP/$1.out f kind lo tl
	case $mode in
	sleep) kind=stall ;;
	stop) kind=peer_stopped ;;
	exit) kind=peer_dead ;;
	esac
	"$NT" run -t $THRESH --no-tui --dump "$D" -- "$RJ" --ranks $RANKS --duration 11 \
		--stall-rank "$rank" --stall-after 3 --stall-for 6 --stall-mode "$mode" >"$OUT" 2>&1
	kill_leftovers
	f=$(findings "$D")
	check "${name}_one_culprit" "findings: $(jq -c 'map({kind, rank})' <<<"$f")" -- \
		test "$(jq length <<<"$f")" -eq 1
	check "${name}_kind" "kind $(jq -r '.[0].kind' <<<"$f"), want $kind" -- \
		test "$(jq -r '.[0].kind' <<<"$f")" = "$kind"
	check "${name}_culprit" "named $(culprit "$f"), the job's marker: rank $rank pid $(marker_pid "$OUT")" -- \
		test "$(culprit "$f")" = "rank $rank pid $(marker_pid "$OUT")"
	# an exit is evidence at once; a stall needs the threshold of silence, from the faulty
	# rank's last send to its successor (a ring step before its fault, up to ~1.5 s with 31
	# spinning ranks on 2 cores): -t, or the adaptive one it reports where the ring's rhythm
	# opened it early (CI: 2.84 s after the wait began, below -t 3)
	lo=$(threshold_ms "$D" "$kind" $THRESH) tl=$(marker_quiet_ns "$OUT")
	[ "$mode" = exit ] && lo=0 tl=$(marker_ns "$OUT")
	check_latency "$name" "$(marker_ns "$OUT")" "$(opened_ns "$D" "$kind")" $lo \
		$(((THRESH + 1) * 1000)) "$tl"
}

modes=(sleep stop exit)
for i in 0 1 2; do
	one_run "run$i" "${modes[$i]}" $((RANDOM % (RANKS - 1) + 1))
done

# the waiters are all listed, as ranges (the sleep's finding)
f=$(findings "$TMP/run0.jsonl")
check waiters_complete "waiters $(jq '.[0].waiter_ranks | length' <<<"$f") of $((RANKS - 1))" -- \
	test "$(jq '.[0].waiter_ranks | length' <<<"$f")" -eq $((RANKS - 1))
check waiters_as_ranges "summary: $(jq -r '.[0].summary' <<<"$f")" -- \
	jqe '.[0].summary | test("ranks [0-9,]*[0-9]+-[0-9]+.* \\(31\\)")' <<<"$f"

for i in 1 2; do
	D=$TMP/healthy$i.jsonl
	"$NT" run -t $THRESH --no-tui --dump "$D" -- "$RJ" --ranks $RANKS --duration 7 \
		>"$TMP/healthy$i.out" 2>&1
	rc=$?
	kill_leftovers
	# and the ring ran to its end (exit 0, rank 0's last line): one that never started has no
	# finding either
	check "healthy${i}_no_finding" "exit $rc, $(grep -c 'rank 0 done' "$TMP/healthy$i.out") done lines, findings: $(findings "$D" | jq -c 'map({kind, rank, summary})')" -- \
		test "$rc" -eq 0 -a "$(grep -c 'rank 0 done' "$TMP/healthy$i.out")" -eq 1 -a \
		"$(findings "$D" | jq length)" -eq 0
done

# --- the fake NCCL at 16 ranks: a rank asleep before its 21st all-reduce, named by the
# collective counters (comm->seqNumber), and no other rank: 16 ranks and their proxy threads
# time-share 2 cores, so NCCL's data connections fall silent for seconds while the counts move
# (-t alone, --fixed-threshold: the adaptive socket threshold may open it from a socket first,
# before the counters, whose evidence this case checks; test_adaptive tests adaptation)
r=$((RANDOM % 15 + 1))
D=$TMP/fake16.jsonl
{
	"$NT" run -t $THRESH --fixed-threshold --no-tui --dump "$D" -- "$ROOT/build/nccljob" \
		--ranks 16 --iters 40 \
		--fault in-collective --fault-rank $r --fault-for 6 --timeout 60 >"$TMP/fake16.out" 2>&1
	own_pkill "$ROOT/build/nccljob"
	f=$(findings "$D")
	check fake16_one_culprit "findings: $(jq -c 'map({kind, rank})' <<<"$f")" -- \
		test "$(jq length <<<"$f")" -eq 1
	check fake16_culprit "named $(culprit "$f"), the job's marker: rank $r pid $(marker_pid "$TMP/fake16.out")" -- \
		test "$(culprit "$f")" = "rank $r pid $(marker_pid "$TMP/fake16.out")"
	# the counters name it, whichever rule opened the finding: its count one behind, the other
	# fifteen's together, as it opened (its last update may come from the tick where the rank
	# has just launched again, its counts even, its stack not yet taken anew)
	o=$(jq -c 'select(.type=="finding" and .event=="open")' "$D" | head -1)
	check fake16_by_counters "evidence at the opening: $(jq -c '.evidence' <<<"$o")" -- \
		jqe ".evidence | (map(select(test(\"^rank $r \\\\(pid [0-9]+\\\\) launched AllReduce 20 on comm\"))) | length == 1) and (map(select(test(\"^ranks [0-9,-]+ \\\\(15\\\\) launched AllReduce 21 on comm [0-9a-f]+ \\\\(comm->seqNumber\\\\)\"))) | length == 1)" <<<"$o"
	detected fake16 "$TMP/fake16.out" "$D" stall $THRESH fixed
}

# --- two independent rings, one hang in each: two culprits, each with its own waiters ---
D=$TMP/two.jsonl
"$NT" run -t $THRESH --no-tui --dump "$D" -- sh -c "
	'$RJ' --ranks 8 --duration 12 --stall-rank 3 --stall-after 3 --stall-for 6 >'$TMP/a.out' 2>&1 &
	'$RJ' --ranks 8 --duration 12 --stall-rank 5 --stall-after 4 --stall-for 6 >'$TMP/b.out' 2>&1 &
	wait" >"$TMP/two.out" 2>&1
kill_leftovers
f=$(findings "$D")
pids=$(jq -r 'map(.pid) | sort | map(tostring) | join(",")' <<<"$f")
want=$(printf '%s\n%s\n' "$(marker_pid "$TMP/a.out")" "$(marker_pid "$TMP/b.out")" | sort -n | paste -sd,)
check two_rings_two_culprits "named pids $pids, the markers say $want" -- test "$pids" = "$want"
check two_rings_own_waiters "waiter counts: $(jq -c 'map(.waiter_ranks | length)' <<<"$f")" -- \
	jqe 'length == 2 and all(.[]; (.waiter_ranks | length) == 7)' <<<"$f"
end_checks
