#!/bin/bash
# SPDX-License-Identifier: MIT
# A tracer killed with SIGKILL leaves no BPF program or link behind, the job runs on to its end,
# and the dump it leaves is readable.
# At KILL_MOMENTS random moments (default 10; docs/reliability.md has 100): start, probe attach,
# steady state, an open finding with its stacks, the job's exit. Each time no BPF program left,
# the job finishing with its own status, none of its processes stopped or traced, the dump
# readable (every other one a .zst dump).
# checks: 14
. "$(dirname "$0")/lib.sh"

need_bpf kill || end_checks
if ! command -v bpftool >/dev/null; then
	skip_rest kill "bpftool not installed"
	end_checks
fi

D=$TMP/killed.jsonl
"$NT" run --dump "$D" -- "$RJ" --ranks 3 --duration 5 >"$TMP/killed.out" 2>&1 &
ntpid=$!
sleep 2
ids=$(held_ids $ntpid)
# the job's launcher: the tracer's child that is not its NVML helper (nccltrace-nvml)
launcher=$(pgrep -P $ntpid | while read -r c; do
	[ "$(cat /proc/"$c"/comm 2>/dev/null)" != nccltrace-nvml ] && echo "$c"
done | head -1)
kill -KILL $ntpid
wait $ntpid 2>/dev/null
check programs_loaded "no nccltrace programs while running: $ids" -- \
	test "$(grep -c '^prog_id' <<<"$ids")" -ge 6
check links_attached "no nccltrace links while running: $ids" -- \
	test "$(grep -c '^link_id' <<<"$ids")" -ge 3
# the kernel detached and freed everything with the tracer's file descriptors
left=$(ids_left "$(grep '^prog_id' <<<"$ids")")
check programs_gone "$left nccltrace programs still loaded after SIGKILL" -- test "$left" -eq 0
left=$(ids_left "$(grep '^link_id' <<<"$ids")")
check links_gone "$left links still attached after SIGKILL" -- test "$left" -eq 0
# the job goes on and finishes normally
for _ in $(seq 1 100); do
	kill -0 "$launcher" 2>/dev/null || break
	sleep 0.1
done
check job_survives "the job did not finish its ring" -- grep -q "rank 0 done" "$TMP/killed.out"
check job_no_leftovers "demo processes left" -- no_leftovers
kill_leftovers
out=$("$NT" report --json "$D" 2>&1)
rc=$?
check killed_dump_readable "report failed ($rc): $out" -- test $rc -eq 0
check killed_dump_incomplete "report should say the dump has no footer" -- \
	jqe '.complete == false' <<<"$out"
# --- SIGKILL at random moments ---
N=${KILL_MOMENTS:-10}
bad_progs=() bad_job=() bad_ptrace=() bad_dump=() started=0 held=0 zst=0
# no process of the job (the demo ranks, its shell) stopped or traced by a dead tracer: stopped
# is State T (stopped) or t (tracing stop), as lib.sh's held_threads has it
job_free() {
	local p
	for p in $(own_pids "$RJ"); do
		for st in /proc/$p/task/*/status; do
			grep -qE '^State:\s+[tT]' "$st" 2>/dev/null && return 1
			grep -qE '^TracerPid:\s+[1-9]' "$st" 2>/dev/null && return 1
		done
	done
	return 0
}
for i in $(seq 1 "$N"); do
	# every other one a .zst dump: killed inside a frame's write, the frames before it read
	D=$TMP/m$i.jsonl S=$TMP/m$i.status
	[ $((i % 2)) = 0 ] && D=$D.zst && zst=$((zst + 1))
	# a ring with a rank asleep 1.5 s past a 1 s threshold: a finding opens, stacks are taken
	"$NT" run --no-tui -t 1 --dump "$D" -- sh -c "'$RJ' --ranks 3 --duration 3 --stall-rank 1 \
		--stall-after 0.5 --stall-for 1.5 -q; echo \$? >'$S'" >"$TMP/m$i.out" 2>&1 &
	ntpid=$!
	at=$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", r / 32767 * 4 }')
	sleep "$at"
	ids=$(held_ids $ntpid)
	kill -KILL $ntpid 2>/dev/null
	wait $ntpid 2>/dev/null
	free=1
	for _ in $(seq 1 50); do
		job_free || free=0
		own_running "$RJ" || break
		sleep 0.1
	done
	[ $free = 1 ] || bad_ptrace+=("$at")
	left=$(ids_left "$ids")
	[ -n "$ids" ] && held=$((held + 1))
	[ $left = 0 ] || bad_progs+=("$at:$left")
	# killed before the launch: no job, nothing to harm; else it ended with its own status
	if [ -e "$S" ] || grep -q "ringjob" "$TMP/m$i.out"; then
		started=$((started + 1))
		for _ in $(seq 1 50); do [ -s "$S" ] && break; sleep 0.1; done
		[ "$(cat "$S" 2>/dev/null)" = 0 ] || bad_job+=("$at:$(cat "$S" 2>/dev/null)")
	fi
	if [ -s "$D" ] && ! "$NT" report --json "$D" >/dev/null 2>&1; then bad_dump+=("$at"); fi
	kill_leftovers
done
echo "# killed at $N random moments in 0..4 s ($zst writing a .zst dump): the tracer held BPF programs at $held, the job had started at $started"
check moments_progs "BPF programs or links left after kills at (moment:count) ${bad_progs[*]}" -- \
	test ${#bad_progs[@]} = 0
check moments_held "the tracer never held a BPF program when killed ($N runs)" -- test "$held" -gt 0
check moments_job "the job harmed (moment:status) ${bad_job[*]}" -- test ${#bad_job[@]} = 0
check moments_job_started "the job never started in $N runs" -- test "$started" -gt 0
check moments_ptrace "a job process stopped or traced after kills at ${bad_ptrace[*]} s" -- \
	test ${#bad_ptrace[@]} = 0
check moments_dump "dumps unreadable after kills at ${bad_dump[*]} s" -- test ${#bad_dump[@]} = 0
end_checks
