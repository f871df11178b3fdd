#!/bin/bash
# SPDX-License-Identifier: MIT
# The loader audit (user/plugin/nccltrace-audit.c): NCCL linked at exec is probed before the
# program's first NCCL call, even with no delay at all, on the full and the stripped fake; the
# job is never held longer than the audit allows, nor at all once the tracer is gone.
# checks: 18
. "$(dirname "$0")/lib.sh"

NJ=$ROOT/build/nccljob
AUDIT=$ROOT/build/libnccltrace-audit.so
STRIPPED_DIR=$ROOT/build/fakenccl-stripped

need_fixture audit "$NJ" "$AUDIT" || end_checks

# --- linked at exec, no delay: the rank calls ncclCommInitRank as its first action ---
D=$TMP/exec.jsonl
"$NT" run -t 2 --no-tui --dump "$D" -- "$NJ" --ranks 3 --iters 5 --import-delay 0 \
	>"$TMP/exec.out" 2>&1
rc=$?
check exec_runs "exit $rc: $(tail -3 "$TMP/exec.out")" -- test $rc -eq 0
check exec_env "LD_AUDIT not in the dump header's job_env" -- \
	jq_ok 'select(.nccltrace) | .job_env.LD_AUDIT | test("libnccltrace-audit.so$")' "$D"
nranks=$(jq -s '[.[] | select(.type == "rank")] | length' "$D")
nload=$(jq -s '[.[] | select(.type == "nccl_load")] | map(.pid) | unique | length' "$D")
# the launcher (linked too) and each rank asked at their load
check exec_loads "$nload processes asked at load, want 4 (launcher and 3 ranks)" -- \
	test "$nload" -eq $((nranks + 1))
# every rank's init entry (its first NCCL call) is seen: probes were live before it
ninit=$(jq -s '[.[] | select(.type == "nccl" and .event == "enter" and
	(.phase | startswith("init (ncclCommInitRank"))) | .pid] | unique | length' "$D")
check exec_init_seen "init seen in $ninit of $nranks ranks" -- test "$ninit" -eq "$nranks"
late=$(jq -s '
	([.[] | select(.type == "nccl_attach")] | group_by(.pid)
	 | map({key: (.[0].pid | tostring), value: (map(.ts_ns) | min)}) | from_entries) as $att
	| [.[] | select(.type == "nccl" and .event == "enter") | select(.ts_ns < $att[.pid | tostring])]
	| length' "$D")
check exec_no_call_before_attach "$late NCCL events before their process's attach" -- \
	test "$late" -eq 0

# --- the same on the stripped fake (only the public API): init still seen, faults named ---
D=$TMP/stripped.jsonl
LD_LIBRARY_PATH=$STRIPPED_DIR "$NT" run -t 2 --no-tui --dump "$D" -- "$NJ" --ranks 3 --iters 5 \
	--import-delay 0 --fault before-init --fault-rank 1 --fault-for 4 >"$TMP/stripped.out" 2>&1
rc=$?
check stripped_runs "exit $rc" -- test $rc -eq 0
f=$(findings "$D")
pid=$(marker_pid "$TMP/stripped.out")
check stripped_before_init "findings: $(kind_ranks "$f"), want init_blocked 1" -- \
	test "$(kind_ranks "$f")" = "init_blocked 1"
check stripped_culprit_pid "named pid $(jq -r '.[0].pid' <<<"$f"), the fault says $pid" -- \
	test "$(jq -r '.[0].pid' <<<"$f")" = "$pid"
detected stripped_before_init "$TMP/stripped.out" "$D" init_blocked 2

D=$TMP/stripped_ring.jsonl
LD_LIBRARY_PATH=$STRIPPED_DIR "$NT" run -t 2 --no-tui --dump "$D" -- "$NJ" --ranks 3 --iters 40 \
	--import-delay 0 --fault ring-setup --fault-rank 1 --fault-for 4 >"$TMP/sring.out" 2>&1
f=$(findings "$D")
check stripped_ring_setup "findings: $(kind_ranks "$f"), want ring_setup_blocked 1" -- \
	test "$(kind_ranks "$f")" = "ring_setup_blocked 1"
detected stripped_ring_setup "$TMP/sring.out" "$D" ring_setup_blocked 2
# the collective-call probes come off once the first collectives are done: of 40 all-reduces
# (80 calls with the fake's ncclGroupEnd inside each), a rank's calls are seen until its first 8
# returned, and the tick (200 ms, 4 more all-reduces here) that takes them off
most=$(jq -s '[.[] | select(.type == "nccl" and .event == "enter" and
	(.phase // "" | startswith("collective (")))] | group_by(.pid) | map(length) | max // 0' "$D")
check stripped_first_off "a rank had $most collective calls probed of 80" -- \
	test "$most" -ge 1 -a "$most" -le 20

# --- never harmful: a "tracer" that never answers holds a load at most 3 s ... ---
name=nt-audit-test-$$
python3 - "$name" 10 <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0" + sys.argv[1]); s.listen(16)
conns = []
end = time.time() + float(sys.argv[2])
s.settimeout(0.2)
while time.time() < end:
    try: conns.append(s.accept()[0])
    except socket.timeout: pass
PY
srv=$!
wait_for 5 sh -c "ss -xl | grep -q @$name"
t0=$(date +%s%N)
LD_AUDIT=$AUDIT NCCLTRACE_AUDIT=@$name "$NJ" --ranks 1 --iters 1 --import-delay 0 \
	>"$TMP/mute.out" 2>&1
rc=$?
dt=$((($(date +%s%N) - t0) / 1000000))
kill $srv 2>/dev/null
wait $srv 2>/dev/null
check mute_tracer_job_runs "exit $rc" -- test $rc -eq 0
# the launcher and its rank each wait their 3 s, no more
check mute_tracer_bounded "took $dt ms with a tracer that never answers" -- \
	test "$dt" -ge 5500 -a "$dt" -le 9000

# --- ... and not at all once the tracer is gone (its socket closed by the kernel) ---
t0=$(date +%s%N)
LD_AUDIT=$AUDIT NCCLTRACE_AUDIT=@nt-no-such-tracer-$$ "$NJ" --ranks 1 --iters 1 \
	--import-delay 0 >"$TMP/gone.out" 2>&1
rc=$?
dt=$((($(date +%s%N) - t0) / 1000000))
check gone_tracer_job_runs "exit $rc" -- test $rc -eq 0
check gone_tracer_no_wait "took $dt ms with no tracer" -- test "$dt" -le 2000

# --- the job's own LD_AUDIT wins ---
D=$TMP/own.jsonl
out=$(LD_AUDIT=/nonexistent/audit.so "$NT" run -v --no-tui --dump "$D" -- "$NJ" --ranks 1 \
	--iters 1 2>&1)
check own_audit_kept "nccltrace set LD_AUDIT over the job's" -- \
	jq_ok 'select(.nccltrace) | (.job_env.LD_AUDIT == null)' "$D"
check own_audit_said "not said: $out" -- contains "$out" "sets LD_AUDIT itself"
end_checks
