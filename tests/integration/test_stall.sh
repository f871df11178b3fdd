#!/bin/bash
# SPDX-License-Identifier: MIT
# A real 4-rank TCP ring with one rank stalled in each way: the process that stalled (its pid as
# the job itself prints it) is named, with the right kind, between the stall threshold and the
# threshold + 1 s after the stall (marked by the job itself); a rank that exits is named within
# 1 s.
# checks: 34
. "$(dirname "$0")/lib.sh"

need_bpf stall || end_checks

THRESH=2
# -t alone (--fixed-threshold): the latency bounds below are -t's; test_adaptive.sh tests the
# adaptive threshold

# scenario NAME KIND WANT_EXIT LO_MS HI_MS RINGJOB-ARGS...
scenario() {
	local name=$1 kind=$2 want_exit=$3 lo=$4 hi=$5
	shift 5
	local D=$TMP/$name.jsonl OUT=$TMP/$name.out rc
	"$NT" run -t $THRESH --fixed-threshold --dump "$D" -- "$RJ" --ranks 4 --stall-rank 1 "$@" >"$OUT" 2>&1
	rc=$?
	check "${name}_exit" "exit $rc, want $want_exit" -- test $rc -eq "$want_exit"
	local f p got_kind
	f=$(findings "$D")
	p=$(marker_pid "$OUT")
	got_kind=$(jq -r '.[0].kind' <<<"$f")
	check "${name}_one_finding" "findings: $f" -- test "$(jq length <<<"$f")" -eq 1
	check "${name}_kind" "kind $got_kind, want $kind" -- test "$got_kind" = "$kind"
	check "${name}_culprit" "named $(culprit "$f"), the job says rank 1 pid $p stalled" -- \
		test "$(culprit "$f")" = "rank 1 pid $p"
	check "${name}_evidence" "no evidence naming pid $p" -- \
		jqe ".[0].evidence | map(select(test(\"\\\\b$p\\\\b\"))) | length > 0" <<<"$f"
	# a threshold's silence counts from the rank's last send (a ring step before its fault); an
	# exit (lo 0) is evidence at once, from the fault
	local tl
	tl=$(marker_quiet_ns "$OUT")
	[ "$lo" = 0 ] && tl=$(marker_ns "$OUT")
	check_latency "$name" "$(marker_ns "$OUT")" "$(opened_ns "$D" "$kind")" "$lo" "$hi" "$tl"
	check "${name}_live_stderr" "finding not printed live" -- \
		grep -q "^nccltrace: $(tr 'a-z_' 'A-Z-' <<<"$kind")" "$OUT"
	# the job's processes are gone with it: look, then clean up for the next scenario
	check "${name}_no_leftovers" "demo processes left behind: $(own_pids "$RJ" | head -3)" -- \
		no_leftovers
	kill_leftovers
}

T=$((THRESH * 1000))
scenario sleep stall 0 $T $((T + 1000)) --duration 9 --stall-after 1.5 --stall-for 5 \
	--stall-mode sleep
# the stopped rank resumes after --stall-for; the finding must close in the dump then
scenario stop peer_stopped 0 $T $((T + 1000)) --duration 9 --stall-after 1.5 --stall-for 5 \
	--stall-mode stop
check stop_closed "the finding did not close when the rank resumed" -- \
	jq_ok 'select(.type=="finding" and .event=="close" and .kind=="peer_stopped")' "$TMP/stop.jsonl"
# an exit needs no threshold: the tracer sees it happen
scenario exit peer_dead 3 0 1000 --duration 9 --stall-after 1.5 --stall-mode exit
scenario blocking stall 0 $T $((T + 1000)) --blocking --duration 9 --stall-after 1.5 \
	--stall-for 5 --stall-mode sleep
check blocking_evidence "blocked receive not in evidence" -- \
	jq_ok 'select(.type=="finding") | .evidence | map(select(test("blocked in receive"))) | length > 0' \
	"$TMP/blocking.jsonl"
end_checks
