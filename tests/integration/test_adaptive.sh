#!/bin/bash
# SPDX-License-Identifier: MIT
# The adaptive stall threshold, on real jobs with real BPF: a ring whose steps come every 20 ms
# and the fake NCCL's all-reduces every 20 ms each stop on one rank. The culprit is named early,
# at the threshold the job's own rhythm gives (10 x its p99 gap, at least 1 s), well before -t
# (5 s); a stop shorter than -t closes as transient, a longer one becomes sure; with
# --fixed-threshold a stop shorter than -t is no finding at all. And no false alarm: pauses of
# every rank at once (an evaluation), a rank 20 % slower (a straggler), a job idle between
# bursts. The 30-run tallies and the latency distribution are scripts/bench-threshold.sh's.
# checks: 26
# lane: long 131 (it learns a job's rhythm: beside napping neighbours, see lib.sh FIXTURE_IDLE_US)
. "$(dirname "$0")/lib.sh"

NJ=$ROOT/build/nccljob
need_fixture adaptive "$RJ" "$NJ" || end_checks

# the default -t: the adaptive threshold's ceiling
CEIL=5

# run NAME [NCCLTRACE-OPTS...] -- JOB...: the job under nccltrace; dump NAME.jsonl, output .out
run() {
	local name=$1
	shift
	local opts=()
	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	"$NT" run "${opts[@]}" --dump "$TMP/$name.jsonl" -- "$@" >"$TMP/$name.out" 2>&1
}

# the first open finding of a dump, as JSON
first_open() { jq -c 'select(.type=="finding" and .event=="open")' "$1" | head -1; }

# fast_stall NAME FOR [NCCLTRACE-OPTS...]: rank 1 of a 20 ms ring sleeps FOR seconds after 6 s
# (the rhythm learned)
fast_stall() {
	local name=$1 for=$2
	shift 2
	run "$name" "$@" -- "$RJ" --ranks 4 --duration $((6 + for + 3)) --step-every 0.02 \
		--stall-rank 1 --stall-after 6 --stall-for "$for" -q
	kill_leftovers
}

# --- a short stop of a fast ring: named early, at 1 s, and transient ---
fast_stall short 3
D=$TMP/short.jsonl
o=$(first_open "$D")
p=$(marker_pid "$TMP/short.out")
check short_culprit "named $(jq -r '"rank \(.rank) pid \(.pid)"' <<<"$o"), the job says pid $p: $o" -- \
	test "$(jq -r '"rank \(.rank) pid \(.pid)"' <<<"$o")" = "rank 1 pid $p"
check short_early "not opened early: $o" -- jqe '.early == true' <<<"$o"
check short_threshold "threshold $(jq -r .threshold_s <<<"$o"), want 1.0 to 2.0 s" -- \
	jqe '.threshold_s >= 1 and .threshold_s < 2' <<<"$o"
check short_why "the threshold's reason names no rhythm: $(jq -r .threshold_why <<<"$o")" -- \
	jqe '.threshold_why | test("data every [0-9]+ ms \\(p99 gap [0-9]+ ms\\)")' <<<"$o"
check short_evidence "no threshold line in the evidence" -- \
	jqe '.evidence | map(select(test("^threshold .*early: younger than -t"))) | length == 1' <<<"$o"
check_latency short "$(marker_ns "$TMP/short.out")" "$(opened_ns "$D" stall)" \
	"$(jq -r '.threshold_s * 1000 | floor' <<<"$o")" \
	"$(jq -r '.threshold_s * 1000 + 1000 | floor' <<<"$o")" "$(marker_quiet_ns "$TMP/short.out")"
check short_transient "the 3 s stop did not close as transient" -- \
	jq_ok 'select(.type=="finding" and .event=="close") | .transient == true' "$D"
check short_transient_said "the console did not say transient" -- \
	grep -q "over after .*(transient" "$TMP/short.out"
check short_once "named more than once: $(jq -c 'select(.type=="finding" and .event=="open") | .kind' "$D" | tr '\n' ' ')" -- \
	test "$(jq -c 'select(.type=="finding" and .event=="open")' "$D" | wc -l)" -eq 1
# the moment it opened, the whole job: a snapshot record within a tick
t_open=$(jq -r 'select(.type=="finding" and .event=="open") | .ts_ns' "$D" | head -1)
check short_snapshot "no snapshot record at the finding's opening ($t_open)" -- \
	jq_ok "select(.type==\"snapshot\") | .ts_ns >= ${t_open:-0} and .ts_ns - ${t_open:-0} < 300000000" <(whole "$D")

# --- a long stop: early, then sure at -t, never transient ---
fast_stall long 8
D=$TMP/long.jsonl
check long_early "not opened early" -- jqe '.early == true' <<<"$(first_open "$D")"
check long_sure "no update saying it is sure (early false)" -- \
	jq_ok 'select(.type=="finding" and .event=="update") | .early == false' "$D"
# the first update that says so (a later one, further past -t, would pass whenever it became sure)
sure=$(jq -c 'select(.type=="finding" and .event=="update" and .early==false)' "$D" | head -1)
check long_sure_at_ceiling "it became sure at $(jq -r .since_s <<<"$sure") s, want -t ($CEIL s) to 1 s after" -- \
	jqe ".since_s >= $CEIL and .since_s < $CEIL + 1" <<<"$sure"
check long_not_transient "the 8 s stop closed as transient" -- \
	jq_ok 'select(.type=="finding" and .event=="close") | .transient == false' "$D"

# --- --fixed-threshold: the 3 s stop is no stall at all ---
fast_stall fixed 3 --fixed-threshold
D=$TMP/fixed.jsonl
check fixed_silent "findings with --fixed-threshold: $(findings "$D")" -- \
	test "$(findings "$D" | jq length)" -eq 0
check fixed_stalled "the job did not stall (no marker)" -- test -n "$(marker_ns "$TMP/fixed.out")"
# a floor above the rhythm's: the 3 s stop waits for it
fast_stall floor 3 --min-threshold 2.5
o=$(first_open "$TMP/floor.jsonl")
check floor_threshold "threshold $(jq -r .threshold_s <<<"$o"), want 2.5 (--min-threshold)" -- \
	jqe '.threshold_s == 2.5 and (.threshold_why | test("at --min-threshold"))' <<<"$o"

# --- the fake NCCL: all-reduces every 20 ms, rank 1 does not launch #150 for 5 s ---
# The rhythm is the communicator's counters as the ticks see them: ticks late under load (the
# sanitizers' build on 2 busy cores) stretch the learned gap, and the threshold with it (10 x):
# a loaded run once opened no finding for a 3 s stop. A ceiling of 8 s leaves the 5 s stop room
# to be named early all the same, and to close as transient (shorter than -t)
run nccl -t 8 -- "$NJ" --ranks 3 --iters 300 --step-delay 0.02 --fault in-collective --fault-rank 1 \
	--fault-for 5 --timeout 40
D=$TMP/nccl.jsonl
o=$(first_open "$D")
p=$(marker_pid "$TMP/nccl.out")
check nccl_culprit "named $(jq -r '"rank \(.rank) pid \(.pid)"' <<<"$o"), the job says pid $p: $o" -- \
	test "$(jq -r '"rank \(.rank) pid \(.pid)"' <<<"$o")" = "rank 1 pid $p"
check nccl_early "not opened early, at the communicator's rhythm: $o" -- \
	jqe '.early == true and (.threshold_why | test("collectives every [0-9]+ ms .* on comm"))' <<<"$o"
check_latency nccl "$(marker_ns "$TMP/nccl.out")" "$(opened_ns "$D" stall)" \
	"$(jq -r '.threshold_s * 1000 | floor' <<<"$o")" \
	"$(jq -r '.threshold_s * 1000 + 1000 | floor' <<<"$o")"
check nccl_transient "the 5 s stop did not close as transient" -- \
	jq_ok 'select(.type=="finding" and .event=="close") | .transient == true' "$D"
check nccl_exit "the job did not finish: $(tail -2 "$TMP/nccl.out")" -- \
	grep -q "^nccltrace: 1 finding" "$TMP/nccl.out"

# --- no false alarm: healthy jobs with a rhythm of their own (once each: their rate over many
# runs is the script run again and again, not every make check) ---
# rhythm_shown OUT WHAT: the job ran to its end (rank 0's last line) and its rhythm was what the
# case is about: pauses (rank 0 made at least one), slow (a 20 % slower rank held the ring
# below 90 % of the 500 steps 10 s of 20 ms steps give)
rhythm_shown() {
	local line steps pauses
	line=$(grep "rank 0 done" "$1") || return 1
	steps=$(sed -n 's/.*done: \([0-9]*\) steps.*/\1/p' <<<"$line")
	pauses=$(sed -n 's/.*, \([0-9]*\) pauses$/\1/p' <<<"$line")
	case $2 in
	pauses) [ "${pauses:-0}" -ge 1 ] ;;
	slow) [ "${steps:-500}" -lt 450 ] ;;
	esac
}
# healthy NAME WHAT RINGJOB-ARGS...: no finding of any kind, from a job that ran (exit 0) with
# its rhythm (rhythm_shown WHAT)
healthy() {
	local name=$1 what=$2 rc
	shift 2
	run "$name" -- "$RJ" --ranks 4 --step-every 0.02 -q "$@"
	rc=$?
	check "${name}_no_alarm" "exit $rc, $(grep "rank 0 done" "$TMP/$name.out"), findings: $(findings "$TMP/$name.jsonl")" -- \
		test "$rc" -eq 0 -a "$(findings "$TMP/$name.jsonl" | jq length)" -eq 0 -a \
		"$(rhythm_shown "$TMP/$name.out" "$what" && echo y)" = y
	kill_leftovers
}
# every rank pauses 2.5 s at once, every 4 s: nobody waits on anybody
healthy pauses pauses --duration 13 --pause-every 4 --pause-for 2.5
# rank 2 takes 20 % longer each step: the others wait on it 4 ms a step, never a stall
healthy straggler slow --duration 10 --slow-rank 2
# bursts of 20 ms steps, then 1.5 s idle, all together
healthy bursts pauses --duration 12 --pause-every 2 --pause-for 1.5
# the fake NCCL's straggler: rank 1 sleeps 24 ms before each all-reduce (20 % of the step)
run nslow -- "$NJ" --ranks 3 --iters 150 --step-delay 0.1 --fault slow --fault-rank 1 \
	--fault-for 0.024 --timeout 40
rc=$?
check nslow_no_stall "exit $rc, a straggler called stalled: $(findings "$TMP/nslow.jsonl")" -- \
	test "$rc" -eq 0 -a "$(findings "$TMP/nslow.jsonl" | jq '[.[] | select(.kind=="stall")] | length')" -eq 0

end_checks
