#!/bin/bash
# SPDX-License-Identifier: MIT
# A real 4-rank TCP ring with one rank stalled in each way: the right process is named, with the
# right kind, within the stall threshold + 1 s of the stall (marked by the job itself).
. "$(dirname "$0")/lib.sh"

if ! why=$(bpf_usable); then
	skip stall "BPF not usable here: $why"
	exit 0
fi

THRESH=2
LIMIT_NS=$(((THRESH + 1) * 1000000000))

# scenario NAME KIND WANT_EXIT RINGJOB-ARGS...
scenario() {
	local name=$1 kind=$2 want_exit=$3
	shift 3
	local D=$TMP/$name.jsonl OUT=$TMP/$name.out rc
	"$NT" run -t $THRESH --dump "$D" -- "$RJ" --ranks 4 --stall-rank 1 "$@" >"$OUT" 2>&1
	rc=$?
	kill_leftovers
	check "${name}_exit" "exit $rc, want $want_exit" -- test $rc -eq "$want_exit"
	local f p1 got_kind got_rank got_pid t0 t1
	f=$(findings "$D")
	p1=$(rank_pid "$D" 1)
	got_kind=$(jq -r '.[0].kind' <<<"$f")
	got_rank=$(jq -r '.[0].rank' <<<"$f")
	got_pid=$(jq -r '.[0].pid' <<<"$f")
	check "${name}_one_finding" "findings: $f" -- test "$(jq length <<<"$f")" -eq 1
	check "${name}_kind" "kind $got_kind, want $kind" -- test "$got_kind" = "$kind"
	check "${name}_culprit" "named rank $got_rank pid $got_pid, want rank 1 pid $p1" -- \
		test "$got_rank" = 1 -a "$got_pid" = "$p1"
	check "${name}_evidence" "no evidence naming pid $p1" -- \
		jq -e ".[0].evidence | map(select(test(\"$p1\"))) | length > 0" <<<"$f" >/dev/null
	t0=$(stall_ns "$OUT")
	t1=$(opened_ns "$D" "$kind")
	if [ -n "$t0" ] && [ -n "$t1" ]; then
		local lat=$((t1 - t0))
		echo "# $name: detected $((lat / 1000000)) ms after the stall (threshold ${THRESH}s)"
		check "${name}_latency" "detected $((lat / 1000000)) ms after the stall" -- \
			test $lat -le $LIMIT_NS
	else
		fail "${name}_latency" "no stall marker ($t0) or no finding ($t1)"
	fi
	check "${name}_live_stderr" "finding not printed live" -- \
		grep -q "^nccltrace: $(tr 'a-z_' 'A-Z-' <<<"$kind")" "$OUT"
	check "${name}_no_leftovers" "demo processes left behind" -- no_leftovers
}

scenario sleep stall 0 --duration 9 --stall-after 1.5 --stall-for 5 --stall-mode sleep
# the stopped rank resumes after --stall-for; the finding must close in the dump then
scenario stop peer_stopped 0 --duration 9 --stall-after 1.5 --stall-for 5 --stall-mode stop
check stop_closed "the finding did not close when the rank resumed" -- \
	jq_ok 'select(.type=="finding" and .event=="close" and .kind=="peer_stopped")' "$TMP/stop.jsonl"
scenario exit peer_dead 3 --duration 9 --stall-after 1.5 --stall-mode exit
scenario blocking stall 0 --blocking --duration 9 --stall-after 1.5 --stall-for 5 --stall-mode sleep
check blocking_evidence "blocked receive not in evidence" -- \
	jq_ok 'select(.type=="finding") | .evidence | map(select(test("blocked in receive"))) | length > 0' \
	"$TMP/blocking.jsonl"
