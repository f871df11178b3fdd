#!/bin/bash
# SPDX-License-Identifier: MIT
# nccltrace attach to a fake-NCCL job whose ring moves its collectives over shared memory (as
# NCCL's SHM transport, or NVLink: no socket carries them), started WITHOUT nccltrace, hung in
# steady state: a rank asleep before its all-reduce, the others inside theirs. Its
# communicators were made before the attach, so no init probe saw them: they are found by a
# scan of each rank's memory (startMagic/endMagic of struct ncclComm), and their counters
# (comm->seqNumber[]) name the rank behind, with the wait counted from the attach (its start
# is unknown without sockets). Healthy: no finding. NCCL 2.21 (no seqNumber): the collectives
# in all. Stripped, uncached (no endMagic offset): said so, no wrong culprit. The job runs on unharmed.
# checks: 18
. "$(dirname "$0")/lib.sh"

NJ=$ROOT/build/nccljob
need_fixture attachcomms "$NJ" || end_checks
THRESH=2
JOBS=()
at_exit 'for p in "${JOBS[@]}"; do kill -9 -- -"$p" "$p" 2>/dev/null; done'

# attach_shm NAME SECS JOB_ARGS...: the job (--net shm) in its own process group, attached SECS
# later with --once --json; D (dump), f (findings), rc, p (the faulty rank's pid, its marker)
attach_shm() {
	local name=$1 secs=$2
	shift 2
	D=$TMP/$name.jsonl
	setsid "$NJ" --net shm "$@" >"$TMP/$name.out" 2>&1 &
	JPID=$!
	JOBS+=("$JPID")
	sleep "$secs"
	"$NT" attach --once --json -t $THRESH --dump "$D" "$JPID" >"$TMP/$name.json" 2>"$TMP/$name.err"
	rc=$?
	f=$(jq -c '.findings' "$TMP/$name.json")
	p=$(marker_pid "$TMP/$name.out")
}
unharmed() {
	wait "$JPID"
	local st=$?
	check "$1_job_unharmed" "job exit $st: $(tail -1 "$TMP/$1.out")" -- test "$st" = 0
}
# scans NAME N: each of the job's N ranks had its one communicator found by the scan, uncapped
scans() {
	local got
	got=$(jq -s '[.[] | select(.type=="comm_scan" and .found == 1 and .new == 1 and
		(.capped | not))] | length' "$D")
	check "$1_scan_found" "$got of $2 ranks' communicators found by the scan: $(grep -h comm_scan "$D" | head -4)" -- \
		test "$got" -eq "$2"
}

# --- steady state hang over SHM, attached 4 s after the rank fell asleep ---
attach_shm shm 5 --ranks 3 --iters 20 --fault in-collective --fault-rank 1 --fault-for 12
check shm_culprit "exit $rc, $(kind_ranks "$f") $(culprit "$f"), the job says rank 1 pid $p: $(tail -3 "$TMP/shm.err")" -- \
	test $rc -eq 1 -a "$(kind_ranks "$f")" = "stall 1" -a "$(culprit "$f")" = "rank 1 pid $p"
check shm_from_counters "not named from the counters: $(jq -c '.[0].summary' <<<"$f")" -- \
	jqe '.[0].summary | test("rank 1 has not launched AllReduce #[0-9]+ on comm")' <<<"$f"
check shm_evidence_scan "no evidence of a comm found by a memory scan at attach: $(jq -c '.[0].evidence' <<<"$f")" -- \
	jqe '.[0].evidence | map(select(test("rank 1 .*launched AllReduce [0-9]+ on comm [0-9a-f]+ \\(comm->seqNumber; comm found by a memory scan at attach\\)"))) | length == 1' <<<"$f"
# the wait began before the attach (the marker); its start is unknown without sockets, so it
# counts from the attach, as a setup entered before it does (test_attach.sh)
since=$(jq -r '.[0].since_s' <<<"$f")
ago=$(awk -v m="$(marker_ns "$TMP/shm.out")" -v a="$(jq -r 'select(.type=="attach") | .realtime_ns' "$D")" \
	'BEGIN{printf "%.1f", (a - m) / 1e9}')
check shm_since_from_attach "since_s $since, want $THRESH..$((THRESH + 2)) (from the attach; the hang began $ago s before it)" -- \
	awk -v s="$since" -v t=$THRESH -v a="$ago" 'BEGIN{exit !(s >= t && s <= t + 2 && a >= 2)}'
calls=$(jq -s '[.[] | select(.type=="snapshot")] | last | [.conns[] | .send_calls + .recv_calls +
	.send_eagain + .recv_eagain] | add // 0' <(whole "$D"))
check shm_no_socket_traffic "$calls socket calls of the job after the attach, want 0 (the ring is on SHM)" -- \
	test "$calls" -eq 0
scans shm 3
ms=$(jq -s '[.[] | select(.type=="comm_scan") | .took_s] | max * 1000' "$D")
mib=$(jq -s '[.[] | select(.type=="comm_scan") | .bytes] | max / 1048576' "$D")
echo "# scan: at most $ms ms and $mib MiB per process"
check shm_scan_told "the attach line does not count the communicators found: $(head -1 "$TMP/shm.err")" -- \
	grep -q "3 communicators from before (memory scan" "$TMP/shm.err"
unharmed shm

# --- healthy over SHM: the counters move, no finding, the window not extended ---
start=$(date +%s.%N)
# 8 s of steps: the job outlives the attach and its window (with 3 s, it ended inside the window
# of a sanitized tracer beside other scripts, the attach having taken 3.6 s: the trace ended
# with it, 0.5 s after its first snapshot)
attach_shm healthy 1.5 --ranks 3 --iters 400 --step-delay 0.02
took=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e - s - 1.5}')
check healthy_no_findings "exit $rc, findings $f, attach took $took s" -- \
	test $rc -eq 0 -a "$f" = "[]"
# the window, from the dump's own clock: 1.5 s, not extended to the threshold. It starts when the
# tracing loop does (cmd/attach.c trace_attached), after the stacks and the scan: less than the
# threshold from the first tick's snapshot to the footer, and at least 1.5 s from the dump's
# start (its header) to the footer; the window ended the trace, not the job (the footer's
# exit_status -1: detached, the job going on)
win=$(jq -s '(.[-1].ts_ns - ([.[] | select(.type=="snapshot")][0].ts_ns)) / 1e6 | floor' <(whole "$D"))
all=$(jq -s '(.[-1].ts_ns - .[0].start_ns) / 1e6 | floor' "$D")
ended=$(jq -r 'select(.type=="footer") | .exit_status' "$D")
check healthy_window "traced for $win ms from the first snapshot (want < $((THRESH * 1000))), $all ms from the start (want >= 1500), footer exit_status $ended (want -1: the window ended it); attach took $took s" -- \
	test "$win" -lt $((THRESH * 1000)) -a "$all" -ge 1500 -a "$ended" = -1
scans healthy 3
unharmed healthy

# --- NCCL 2.21 (no seqNumber; comm->sharedRes->collOpCount): the rank behind in all ---
LD_LIBRARY_PATH=$ROOT/build/fakenccl-2.21.5 attach_shm v221 4 --ranks 3 --iters 20 \
	--import-delay 0 --fault in-collective --fault-rank 1 --fault-for 14
check v221_culprit "exit $rc, $(kind_ranks "$f") $(culprit "$f"), the job says rank 1 pid $p" -- \
	test $rc -eq 1 -a "$(kind_ranks "$f")" = "stall 1" -a "$(culprit "$f")" = "rank 1 pid $p"
scans v221 3
unharmed v221

# --- stripped (no DWARF), its build-id's offsets not cached: no endMagic offset, said so; no
# wrong culprit (with the cache of its build-id, the unstripped build's, it is named as above) ---
mkdir -p "$TMP/no-cache"
NCCLTRACE_CACHE_DIR=$TMP/no-cache LD_LIBRARY_PATH=$ROOT/build/fakenccl-stripped attach_shm stripped 4 \
	--ranks 3 --iters 20 --fault in-collective --fault-rank 1 --fault-for 14
check stripped_said "no word of the scan it could not do: $(grep -m1 endMagic "$TMP/stripped.err")" -- \
	grep -q "has no ncclComm.endMagic offset" "$TMP/stripped.err"
check stripped_no_wrong_culprit "exit $rc, $(kind_ranks "$f") $(culprit "$f"), the job says rank 1 pid $p" -- \
	test "$f" = "[]" -o "$(culprit "$f")" = "rank 1 pid $p"
unharmed stripped
end_checks
