#!/bin/bash
# SPDX-License-Identifier: MIT
# `nccltrace agent`: started first, it finds NCCL jobs started after it on their own (the fake
# NCCL job: one with rank 1 asleep 8 s in its collectives, one healthy, side by side) from the
# kernel's mmap records, groups each job's processes into one (its launcher maps libnccl before
# its ranks do; the ranks' MASTER_ADDR:MASTER_PORT/WORLD_SIZE names it), traces each as attach
# does: /state names the culprit within threshold + 2 s of the fault, the healthy job has no
# finding; /metrics has every job's samples with a job label; watch --job over the agent names
# the culprit, and without --job says which jobs there are; each job gets its dump (0640,
# named by host and job), the oldest dump of the directory is evicted past --max-dump-bytes and
# the eviction logged; a finished job's tracer leaves no BPF program or link; four short jobs in a
# row (two hung): four dumps, no link left; polled as hard as one client can while the hung job
# runs (tests/fixtures/pollstorm.c, its first 5 s), no job tracer dies and every page is whole; SIGKILL of the agent while it traces two jobs: they
# run to their ends unharmed, their tracers gone; SIGTERM: 0.
# Usage errors and non-root: one line, 64 and 77.
# lane: alone (the agent traces every NCCL job of the machine: other scripts' too)
# checks: 22
. "$(dirname "$0")/lib.sh"

NJ=$ROOT/build/nccljob
err=$("$NT" agent --bogus 2>&1)
rc=$?
check usage_unknown "exit $rc: $err" -- error_is 64 $rc "$err"
err=$("$NT" agent 4711 2>&1)
rc=$?
check usage_argument "exit $rc: $err" -- error_is 64 $rc "$err"
if command -v setpriv >/dev/null; then
	err=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$NT" agent --dump-dir "$TMP/never" 2>&1)
	rc=$?
	check non_root "exit $rc: $err" -- error_is 77 $rc "$err"
else
	skip non_root "setpriv (util-linux) not installed"
fi
need_bpf agent || end_checks
need_fixture agent "$NJ" || end_checks
if ! command -v bpftool >/dev/null; then
	skip_rest agent "bpftool not installed"
	end_checks
fi

THRESH=2
PORT=$((20000 + RANDOM % 20000))
DD=$TMP/dumps
mkdir -p "$DD"
# an old job's dump, past the budget with the new ones: the first evicted
head -c 300000 /dev/urandom >"$DD/nccltrace-old-job-20261101-000000-p1.jsonl.zst"
touch -d '2 days ago' "$DD/nccltrace-old-job-20261101-000000-p1.jsonl.zst"
"$NT" agent --dump-dir "$DD" -t $THRESH --listen 127.0.0.1:$PORT --max-dump-bytes 300K \
	>"$TMP/agent.log" 2>&1 &
AG=$!
at_exit "kill $AG 2>/dev/null"
wait_for 10 grep -qs "watching" "$TMP/agent.log"
(cd "$TMP" && exec "$NJ" --ranks 3 --iters 40 --fault in-collective --fault-rank 1 \
	--fault-for 8 >"$TMP/hung.out" 2>&1) &
HUNG=$!
(cd "$TMP" && exec "$NJ" --ranks 2 --iters 400 >"$TMP/healthy.out" 2>&1) &
HEALTHY=$!
# the agent's /state and /metrics polled as hard as one client can for the first 5 s of the
# hung job: its job tracers, which answer each fetch, died of it (issue 49)
sleep 5 &
"$ROOT/build/pollstorm" "$PORT" $! >"$TMP/storm.out" 2>&1 &
STORM=$!
# /state as the fault goes on: the first answer naming rank 1, and when
found_ns=
for _ in $(seq 1 120); do
	st=$(curl -s --max-time 2 "http://127.0.0.1:$PORT/state")
	if [ -n "$(jq -c '.jobs[] | .state.findings[]? | select(.kind == "stall" and .rank == 1)' <<<"$st" 2>/dev/null)" ]; then
		found_ns=$(date +%s%N)
		break
	fi
	sleep 0.25
done
fault_ns=$(marker_ns "$TMP/hung.out")
[ -n "$fault_ns" ] && [ -n "$found_ns" ] && echo "# /state named rank 1 $(( (found_ns - fault_ns) / 1000000 )) ms after the fault (want 0..$(( (THRESH + 2) * 1000 )))"
wait $STORM
check agent_polled "$(cat "$TMP/storm.out"); $(grep -m2 -E 'killed by signal|segfault' "$TMP/agent.log")" -- \
	bash -c '! grep -qE "killed by signal" "$1" && grep -qE "state_ok [1-9][0-9]+ .* bad_body 0 " "$2"' _ "$TMP/agent.log" "$TMP/storm.out"
tracers=$(jq -r '[.jobs[].tracer] | join(" ")' <<<"$st" 2>/dev/null)
ids=$(for t in $tracers; do held_ids "$t"; done)
# bounded on both sides (as lib.sh's check_latency): a finding named before the fault is a false
# alarm, not a fast one
check state_culprit "fault at ${fault_ns:-none}, /state named rank 1 at ${found_ns:-never} (want 0..$(( (THRESH + 2) * 1000 )) ms after it): $(jq -c '[.jobs[] | {rule, id, findings: [.state.findings[]? | {kind, rank, pid}]}]' <<<"$st" 2>&1 | head -c 500)" -- \
	bash -c '[ -n "$1" ] && [ -n "$2" ] && [ "$2" -ge "$1" ] && [ $(( ($2 - $1) / 1000000 )) -le $(( ($3 + 2) * 1000 )) ] &&
		[ -n "$5" ] && jq -e "[.jobs[] | .state.findings[]? | select(.kind == \"stall\" and .rank == 1 and .pid == $4)] | length == 1" <<<"$5" >/dev/null' \
	_ "$fault_ns" "$found_ns" "$THRESH" "$(marker_pid "$TMP/hung.out")" "$st"
check state_jobs "jobs: $(jq -c '[.jobs[] | {rule, id, pid}]' <<<"$st" 2>&1)" -- \
	jqe '(.jobs | length == 2) and ([.jobs[].rule] | unique == ["MASTER_ADDR"]) and
	     ([.jobs[].id] | sort == ["127.0.0.1:29500/2", "127.0.0.1:29500/3"])' <<<"$st"
check state_healthy "the healthy job's findings: $(jq -c '[.jobs[] | select(.id | endswith("/2")) | .state.findings]' <<<"$st" 2>&1)" -- \
	jqe '[.jobs[] | select(.id | endswith("/2")) | .state.findings | length] == [0]' <<<"$st"
curl -s --max-time 3 "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics.txt"
check metrics_jobs "$(grep -E 'agent_jobs|job=' "$TMP/metrics.txt" | head -4)" -- \
	bash -c 'grep -qx "nccltrace_agent_jobs 2" "$1" && grep -q "job=\"MASTER_ADDR=127.0.0.1:29500/3\"" "$1" &&
		grep -q "job=\"MASTER_ADDR=127.0.0.1:29500/2\"" "$1"' _ "$TMP/metrics.txt"
if command -v promtool >/dev/null; then
	check metrics_promtool "$(promtool check metrics <"$TMP/metrics.txt" 2>&1 | head -3)" -- \
		sh -c "promtool check metrics <'$TMP/metrics.txt'"
else
	skip metrics_promtool "promtool not installed"
fi
# watch over the agent: --job names the hung one; without it, an agent of two jobs says so
"$NT" watch --once --json --job MASTER_ADDR=127.0.0.1:29500/3 127.0.0.1:$PORT >"$TMP/watch.json" 2>"$TMP/watch.err"
check watch_job "watch --job: $(jq -c '[.findings[] | {kind, rank}]' "$TMP/watch.json" 2>&1) $(head -2 "$TMP/watch.err")" -- \
	jqe '[.findings[] | select(.kind == "stall" and .rank == 1)] | length == 1' "$TMP/watch.json"
err=$("$NT" watch --once --json 127.0.0.1:$PORT 2>&1 >/dev/null)
check watch_which_job "watch without --job: $err" -- \
	bash -c 'grep -q "an agent of 2 jobs: name one with --job (MASTER_ADDR=127.0.0.1:29500/" <<<"$1"' _ "$err"
wait $HUNG
rc_hung=$?
wait $HEALTHY
rc_healthy=$?
check jobs_unharmed "exit $rc_hung and $rc_healthy" -- test $rc_hung -eq 0 -a $rc_healthy -eq 0
wait_for 15 bash -c "[ \$(grep -c ' ended (its tracer' '$TMP/agent.log') -ge 2 ]"
check job_ended "$(grep ' ended ' "$TMP/agent.log" | head -3)" -- \
	test "$(grep -c ' ended (its tracer exit 0)' "$TMP/agent.log")" -eq 2
left=$(ids_left "$ids")
check tracers_freed "the jobs' tracers held $(wc -l <<<"$ids") programs and links; $left left" -- \
	test "$(grep -c "^link_id" <<<"$ids")" -ge 3 -a "$left" = 0
dumps=$(ls "$DD" | grep -v old-job)
hd=$(ls "$DD"/*-127.0.0.1_29500_3-* "$DD"/*pid_* 2>/dev/null | head -1)
check dumps_per_job "dumps: $dumps" -- bash -c '
	[ "$(grep -cE "^nccltrace-$(hostname)-[A-Za-z0-9._-]+-[0-9]{8}-[0-9]{6}-p[0-9]+\.jsonl\.zst$" <<<"$1")" -eq 2 ] &&
	for f in "$2"/nccltrace-*; do [ "$(stat -c %a "$f")" = 640 ] || exit 1; done' _ "$dumps" "$DD"
hungdump=$(for f in "$DD"/nccltrace-"$(hostname)"-*; do
	[ "$("$NT" report --json "$f" 2>/dev/null | jq '.findings | length')" = 1 ] && echo "$f"
done | head -1)
check dump_culprit "the hung job's dump: ${hungdump:-none}: $(findings "${hungdump:-/dev/null}" 2>&1 | head -c 200)" -- \
	test "$(kind_ranks "$(findings "$hungdump")")" = "stall 1"
check evicted "$(grep evicted "$TMP/agent.log")" -- bash -c '
	[ ! -e "$1/nccltrace-old-job-20261101-000000-p1.jsonl.zst" ] &&
	grep -q "evicted $1/nccltrace-old-job-20261101-000000-p1.jsonl.zst (300000 bytes" "$2"' _ "$DD" "$TMP/agent.log"
check finding_logged "$(grep -m1 STALL "$TMP/agent.log")" -- \
	grep -qE "^nccltrace agent: job MASTER_ADDR=127.0.0.1:29500/3: STALL [0-9.]+s  rank 1 " "$TMP/agent.log"

# short jobs in a row, every other one hung 2 s: each gets its dump, each tracer ends with its
# job, and no BPF link is left on the machine (this script runs alone); the agent's memory
links() { bpftool link show 2>/dev/null | grep -cE '^[0-9]+:' || true; }
n0=$(grep -c ' ended (its tracer' "$TMP/agent.log")
rss0=$(awk '/^VmRSS/ { print $2 }' /proc/$AG/status)
for i in 1 2 3 4; do
	if [ $((i % 2)) = 0 ]; then
		(cd "$TMP" && exec "$NJ" --ranks 2 --iters 12 --fault in-collective --fault-rank 1 \
			--fault-for 2 >/dev/null 2>&1)
	else
		(cd "$TMP" && exec "$NJ" --ranks 2 --iters 12 >/dev/null 2>&1)
	fi
done
wait_for 15 bash -c "[ \$(grep -c ' ended (its tracer' '$TMP/agent.log') -ge $((n0 + 4)) ]"
echo "# the agent's RSS: $rss0 KiB before 4 short jobs, $(awk '/^VmRSS/ { print $2 }' /proc/$AG/status) KiB after"
# each ended job's dump: in the directory, or evicted by the budget (and logged so)
kept=0
for d in $(grep ' ended (its tracer exit 0)' "$TMP/agent.log" | tail -n +$((n0 + 1)) | sed 's/.*: dump \([^,]*\), .*/\1/'); do
	{ [ -s "$d" ] || grep -qF "evicted $d " "$TMP/agent.log"; } && kept=$((kept + 1))
done
check short_jobs "jobs ended: $(($(grep -c ' ended (its tracer exit 0)' "$TMP/agent.log") - n0)) of 4, their dumps kept or evicted: $kept; links left: $(links)" -- \
	bash -c '[ $(($(grep -c " ended (its tracer exit 0)" "$1") - $2)) -eq 4 ] && [ "$3" -eq 4 ] &&
		[ "$(bpftool link show 2>/dev/null | grep -cE "^[0-9]+:")" = 0 ]' _ "$TMP/agent.log" "$n0" "$kept"

# SIGKILL of the agent while it traces two jobs: they run on to their ends, their tracers detach
(cd "$TMP" && exec "$NJ" --ranks 2 --iters 300 >"$TMP/k.out" 2>&1) &
KJ=$!
(cd "$TMP" && exec "$NJ" --ranks 3 --iters 300 >"$TMP/k2.out" 2>&1) &
KJ2=$!
n=$(grep -c 'traced by pid' "$TMP/agent.log")
wait_for 10 bash -c "[ \$(grep -c 'traced by pid' '$TMP/agent.log') -ge $((n + 2)) ]"
kt=$(grep 'traced by pid' "$TMP/agent.log" | tail -2 | sed 's/.*traced by pid \([0-9]*\).*/\1/' | tr '\n' ' ')
sleep 1
kill -KILL $AG
wait $AG 2>/dev/null
wait_for 10 bash -c "for t in $kt; do kill -0 \$t 2>/dev/null && exit 1; done; exit 0"
check sigkill_tracers_gone "the jobs' tracers (pids $kt): $(for t in $kt; do kill -0 "$t" 2>/dev/null && echo "$t still runs"; done)" -- \
	bash -c "for t in $kt; do kill -0 \$t 2>/dev/null && exit 1; done; [ -n '$kt' ]"
wait $KJ
rc=$?
wait $KJ2
rc2=$?
check sigkill_jobs_unharmed "exit $rc and $rc2: $(tail -1 "$TMP/k.out"); $(tail -1 "$TMP/k2.out")" -- \
	bash -c '[ "$1" -eq 0 ] && [ "$2" -eq 0 ] && grep -q "300 all-reduces" "$3" && grep -q "300 all-reduces" "$4"' \
	_ $rc $rc2 "$TMP/k.out" "$TMP/k2.out"

# SIGTERM: every job's tracer detaches, exit 0
"$NT" agent --dump-dir "$DD" >"$TMP/agent2.log" 2>&1 &
AG=$!
wait_for 10 grep -qs "watching" "$TMP/agent2.log"
kill -TERM $AG
wait $AG
rc=$?
check sigterm_exit "exit $rc: $(tail -2 "$TMP/agent2.log")" -- \
	bash -c '[ "$1" -eq 0 ] && grep -q "stopping (signal 15)" "$2"' _ $rc "$TMP/agent2.log"
end_checks
