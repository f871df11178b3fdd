#!/bin/bash
# SPDX-License-Identifier: MIT
# nccltrace attach: jobs started WITHOUT nccltrace (the ring demo and the fake-NCCL job, real
# TCP between real processes), a fault injected, attached after the stall began. The culprit is
# named with the stall's true age (since_s from the job's own marker, not from the attach),
# within 2 s of the attach; the job runs on and ends with its own status; a detach, or a SIGKILL
# of nccltrace at any moment of the attach, leaves no thread stopped or traced and no BPF
# program; a healthy job gives no finding; bad pids and missing privileges give one line and
# their sysexits code.
# checks: 62
# lane: long 170
. "$(dirname "$0")/lib.sh"

NJ=$ROOT/build/nccljob
need_fixture attach "$NJ" || end_checks
THRESH=2
JOBS=()
at_exit 'for p in "${JOBS[@]}"; do kill -9 -- -"$p" "$p" 2>/dev/null; done; kill_leftovers; own_pkill "$NJ"'

# nccltrace's BPF programs (by name) that no live process holds: left behind. Every program and
# link (uprobes included) of a nccltrace is held by its file descriptors only, so one held by
# nobody is one the kernel failed to free; those of another nccltrace running here are held
orphan_progs() {
	local held id out=""
	held=$(cat /proc/[0-9]*/fdinfo/* 2>/dev/null | awk '/^prog_id:/{print $2}' | sort -u)
	for id in $(bpftool prog show 2>/dev/null | awk -F: '/ name nt_/{print $1}'); do
		grep -qx "$id" <<<"$held" || out+="$id "
	done
	echo "$out"
}
# programs go shortly after their last fd closes (RCU): wait until none is left unheld
progs_back() {
	for _ in $(seq 1 40); do
		[ -z "$(orphan_progs)" ] && return 0
		sleep 0.1
	done
	return 1
}

tree() { echo "$1" $(pgrep -P "$1"); }

# start_job OUT CMD...: the job in its own process group, its launcher's pid in JPID
start_job() {
	local out=$1
	shift
	setsid "$@" >"$out" 2>&1 &
	JPID=$!
	JOBS+=("$JPID")
}
# job_status: wait for the job, its exit status in st
job_status() {
	wait "$JPID"
	st=$?
}

# attach_once NAME SECS WHO -- JOB...: the job started without nccltrace, `attach --once --json`
# SECS later to WHO (launcher, or rank:N for its Nth child); D (dump), f (findings), rc, p (the
# faulty rank's pid from the job's marker), pids (the job's processes before the attach)
attach_once() {
	local name=$1 secs=$2 who=$3 target
	shift 4
	D=$TMP/$name.jsonl
	start_job "$TMP/$name.out" "$@"
	sleep "$secs"
	pids=$(tree "$JPID")
	target=$JPID
	[ "$who" != launcher ] && target=$(pgrep -P "$JPID" | sed -n "${who#rank:}p")
	"$NT" attach --once --json -t $THRESH --dump "$D" "$target" >"$TMP/$name.json" 2>"$TMP/$name.err"
	rc=$?
	f=$(jq -c '.findings' "$TMP/$name.json")
	p=$(marker_pid "$TMP/$name.out")
	TARGET=$target
}

# named NAME KIND RANK: attach_once's verdict: exit 1, one finding KIND naming rank RANK, the pid
# the job's own marker gives
named() {
	check "$1_culprit" "exit $rc, $(kind_ranks "$f") $(culprit "$f"), the job says rank $3 pid $p" -- \
		test $rc -eq 1 -a "$(kind_ranks "$f")" = "$2 $3" -a "$(culprit "$f")" = "rank $3 pid $p"
}

# unharmed NAME: the job ended with its own status, 0
unharmed() {
	job_status
	check "$1_job_unharmed" "job exit $st: $(tail -1 "$TMP/$1.out")" -- test "$st" = 0
}

# graded against the job's own marker: the finding's since_s at its opening is the wait's age
# then (from the marker's last send, or the fault), within 0.6 s; and older than the attach by
# at least 1 s (so not counted from it); opened within 2 s of the attach
grade() {
	local name=$1 D=$2 OUT=$3 kind=$4 lo=${5:-1} f opened since quiet attach_rt age from_attach
	f=$(jq -c "select(.type==\"finding\" and .event==\"open\" and .kind==\"$kind\")" "$D" | head -1)
	opened=$(jq -r '.realtime_ns' <<<"$f")
	since=$(jq -r '.since_s' <<<"$f")
	quiet=$(marker_quiet_ns "$OUT")
	attach_rt=$(jq -r 'select(.type=="attach") | .realtime_ns' "$D")
	if [ -z "$f" ] || [ -z "$quiet" ] || [ -z "$attach_rt" ]; then
		fail "${name}_since" "no finding ($f), marker ($quiet) or attach record ($attach_rt)"
		fail "${name}_latency" "no finding, marker or attach record"
		return
	fi
	age=$(awk -v o="$opened" -v q="$quiet" 'BEGIN{printf "%.3f", (o - q) / 1e9}')
	from_attach=$(awk -v o="$opened" -v a="$attach_rt" 'BEGIN{printf "%.3f", (o - a) / 1e9}')
	echo "# $name: since_s $since at opening, the wait began $age s before, the attach $from_attach s before"
	check "${name}_since" "since_s $since, the wait's true age $age s (attach $from_attach s before)" -- \
		awk -v s="$since" -v a="$age" -v f="$from_attach" -v lo="$lo" \
		'BEGIN{d = s - a; exit !(d < 0.6 && d > -0.6 && s > f + lo)}'
	check "${name}_latency" "opened $from_attach s after the attach, want <= 2" -- \
		awk -v f="$from_attach" 'BEGIN{exit !(f >= 0 && f <= 2)}'
}

# --- ring demo, a rank asleep since 1 s after start, attached 4.5 s later by the launcher's pid ---
attach_once sleep 5.5 launcher -- "$RJ" --ranks 4 --duration 14 --stall-rank 1 --stall-after 1 \
	--stall-for 9
held=$(held_threads $pids)
check sleep_exit "exit $rc, want 1 (a problem found): $(tail -2 "$TMP/sleep.err")" -- test $rc -eq 1
check sleep_one_finding "findings: $f" -- test "$(jq length <<<"$f")" -eq 1
check sleep_kind "kind $(jq -r '.[0].kind' <<<"$f"), want stall" -- test "$(jq -r '.[0].kind' <<<"$f")" = stall
check sleep_culprit "named $(culprit "$f"), the job says rank 1 pid $p" -- test "$(culprit "$f")" = "rank 1 pid $p"
check sleep_evidence "no evidence naming pid $p" -- \
	jqe ".[0].evidence | map(select(test(\"\\\\b$p\\\\b\"))) | length > 0" <<<"$f"
grade sleep "$D" "$TMP/sleep.out" stall 2
check sleep_taken_told "which processes were taken, and why, not said: $(head -1 "$TMP/sleep.err")" -- \
	grep -q "attached to the job of launcher pid $JPID: .* 5 processes of its tree" "$TMP/sleep.err"
check sleep_stacks_at_attach "no stack of every process at the attach" -- \
	test "$(jq -s "[.[] | select(.type==\"stack\") | .pid] | unique | length" "$D")" -ge 5
check sleep_detached_clean "held after the detach: '$held'" -- test -z "$held"
check sleep_no_progs "nccltrace programs held by nobody after the detach: $(orphan_progs)" -- progs_back
job_status
check sleep_job_unharmed "job exit $st: $(tail -1 "$TMP/sleep.out")" -- \
	test "$st" = 0 -a "$(grep -c 'rank 0 done' "$TMP/sleep.out")" -eq 1

# --- a rank's pid, blocking receives (no call on the waiting socket after the attach) ---
attach_once blocking 5 rank:3 -- "$RJ" --ranks 4 --duration 14 --blocking --stall-rank 1 \
	--stall-after 1 --stall-for 9
r2=$TARGET
check rank_pid_climbs "a rank's pid ($r2) did not lead to its launcher $JPID: $(head -1 "$TMP/blocking.err")" -- \
	grep -q "launcher pid $JPID: pid $JPID (ringjob), without a rank variable, is the parent of rank [0-9] (pid $r2)" "$TMP/blocking.err"
named blocking stall 1
check blocking_evidence "blocked receive not in evidence: $f" -- \
	jqe '.[0].evidence | map(select(test("blocked in receive"))) | length > 0' <<<"$f"
grade blocking "$D" "$TMP/blocking.out" stall 2
unharmed blocking

# --- a rank stopped (SIGSTOP) mid-loop: it stays stopped after the detach, the job resumes it ---
attach_once stop 5 launcher -- "$RJ" --ranks 4 --duration 16 --stall-rank 2 --stall-mode stop \
	--stall-after 1 --stall-for 11
named stop peer_stopped 2
grade stop "$D" "$TMP/stop.out" peer_stopped 2
state=$(awk '/^State:/{print $2}' /proc/"$p"/status 2>/dev/null)
tracer=$(awk '/^TracerPid:/{print $2}' /proc/"$p"/status 2>/dev/null)
check stop_left_stopped "rank 2 state $state tracer $tracer after the detach: the job's own stop, kept" -- \
	test "$state" = T -a "$tracer" = 0
unharmed stop

# --- the fake NCCL: a rank asleep before its all-reduce, the others inside theirs ---
attach_once coll 5 launcher -- "$NJ" --ranks 3 --iters 20 --fault in-collective --fault-rank 1 \
	--fault-for 9
named coll stall 1
check coll_probes_live "NCCL probes not attached at once in every rank" -- \
	test "$(jq -s '[.[] | select(.type=="nccl_attach" and .probes > 20) | .pid] | unique | length' "$D")" -ge 3
check coll_phase_from_stack "a waiter's NCCL call not taken from its stack: $(jq -c '.[0].evidence' <<<"$f" | head -c 300)" -- \
	jqe '.[0].evidence | map(select(test("inside .*ncclAllReduce"))) | length > 0' <<<"$f"
grade coll "$D" "$TMP/coll.out" stall 2
unharmed coll

# --- the job's own NCCL log file, written since its start, is read from its start ---
NCCL_DEBUG=INFO NCCL_DEBUG_FILE=$TMP/own.%h.%p.log attach_once ownlog 3 launcher -- "$NJ" --ranks 2 \
	--iters 200 --step-delay 0.02
check ownlog_read "no fact of the job's own NCCL log in the dump" -- \
	jq_ok 'select(.type=="nccl_log" and .what=="init" and .event=="complete")' "$D"
job_status

# --- the fake NCCL: a rank asleep before its first collective, the others in ring setup ---
attach_once setup 4 launcher -- "$NJ" --ranks 3 --iters 5 --fault ring-setup --fault-rank 1 \
	--fault-for 10
named setup ring_setup_blocked 1
# the setup's entry was before the attach: in it from the attach on, never more
since=$(jq -r '.[0].since_s' <<<"$f")
check setup_since_from_attach "since_s $since: a setup entered before the attach counts from it ($THRESH..$((THRESH + 2)) s)" -- \
	awk -v s="$since" -v t=$THRESH 'BEGIN{exit !(s >= t && s <= t + 2)}'
check setup_phase_seeded "no thread of a waiter in transport setup from its stack" -- \
	jq_ok 'select(.type=="snapshot") | .procs[] | .nccl.threads[]? | select(.phase != null) | .phase | test("socket accept|proxy call")' <(whole "$D")
unharmed setup

# --- real NCCL's shape at 8 ranks (--stream: a collective returns once launched, the rank then
# waits on its "GPU" in cuStreamSynchronize), rank 5 late to its first collective: ranks 4 and 6
# wait in their ring setup, the others got through it and wait on the GPU (rank 7 too, or it
# waits in its setup for rank 6, by the order they connected in). A build with
# its names but no DWARF (from source without -g): the communicators made before the attach
# are not found, no counter says who launched. Only rank 5 may be named, never the first rank
# outside NCCL ---
LD_LIBRARY_PATH=$ROOT/build/fakenccl-nodebug attach_once gpuwait 4 launcher -- "$NJ" --ranks 8 \
	--iters 3 --stream --fault ring-setup --fault-rank 5 --fault-for 12 --timeout 40
named gpuwait ring_setup_blocked 5
check gpuwait_evidence "the ranks through the setup not said, from their stacks: $(jq -c '.[0].evidence' <<<"$f" | head -c 600)" -- \
	jqe '.[0].evidence | map(select(test("through it before the attach: ranks 0-3(,7)? .*waiting on the GPU"))) | length == 1' <<<"$f"
unharmed gpuwait

# --- the fake NCCL stripped to .dynsym: the stacks name only the public calls ---
STRIPPED_DIR=$ROOT/build/fakenccl-stripped
LD_LIBRARY_PATH=$STRIPPED_DIR attach_once stripped-coll 5 launcher -- "$NJ" --ranks 3 --iters 20 \
	--fault in-collective --fault-rank 1 --fault-for 9
named stripped-coll stall 1
job_status
# inside ncclAllReduce with no internal frame to say it is the first: taken for a later
# collective, so a ring setup blocked before the attach names nobody, never a wrong rank
LD_LIBRARY_PATH=$STRIPPED_DIR attach_once stripped-setup 4 launcher -- "$NJ" --ranks 3 --iters 5 \
	--fault ring-setup --fault-rank 1 --fault-for 10
check stripped-setup_no_wrong_culprit "exit $rc, $(kind_ranks "$f") $(culprit "$f"), the job says rank 1 pid $p" -- \
	test "$f" = "[]" -o "$(culprit "$f")" = "rank 1 pid $p"
job_status

# --- healthy jobs: exit 0, no finding ---
for job in ring nccl; do
	if [ $job = ring ]; then
		attach_once healthy-$job 2 launcher -- "$RJ" --ranks 4 --duration 6
	else
		attach_once healthy-$job 2 launcher -- "$NJ" --ranks 3 --iters 150 --step-delay 0.02
	fi
	check healthy_${job}_exit "exit $rc, want 0: $(tail -2 "$TMP/healthy-$job.err")" -- test $rc -eq 0
	check healthy_${job}_no_findings "findings: $f" -- test "$f" = "[]"
	unharmed healthy-$job
done

# --- the live mode: the job's end ends the trace, with the job's status (a rank exits 3) ---
D=$TMP/live.jsonl
start_job "$TMP/live.out" "$RJ" --ranks 3 --duration 10 --stall-rank 2 --stall-after 3 --stall-mode exit
sleep 1
timeout 20 "$NT" attach --no-tui -t $THRESH --dump "$D" "$JPID" >"$TMP/live.nt" 2>&1
rc=$?
job_status
check live_exit_is_jobs "attach exit $rc, the job's $st (want 3)" -- test $rc -eq 3 -a "$st" = 3
check live_peer_dead "no peer_dead of rank 2: $(findings "$D")" -- \
	test "$(kind_ranks "$(findings "$D")" | cut -d, -f1)" = "peer_dead 2"
check live_footer "the dump has no footer with the job's status" -- \
	jq_ok 'select(.type=="footer") | .exit_status == 3' "$D"

# --- a signal to nccltrace detaches; the job never gets it ---
start_job "$TMP/sig.out" "$RJ" --ranks 3 --duration 8
sleep 1
"$NT" attach --no-tui --dump "$TMP/sig.jsonl" "$JPID" >"$TMP/sig.nt" 2>&1 &
ntpid=$!
sleep 2
kill -INT $ntpid
wait $ntpid
rc=$?
check sigint_detaches "exit $rc, want 0: $(tail -1 "$TMP/sig.nt")" -- \
	test $rc -eq 0 -a "$(grep -c 'detached; the job' "$TMP/sig.nt")" -eq 1
job_status
check sigint_not_forwarded "job exit $st: $(tail -1 "$TMP/sig.out")" -- \
	test "$st" = 0 -a "$(grep -c 'rank 0 done' "$TMP/sig.out")" -eq 1

# --- the dashboard (tmux as the terminal): the culprit shown, q detaches at once ---
if command -v tmux >/dev/null; then
	SOCK=$TMP/tmux.sock
	at_exit 'tmux -S "$SOCK" kill-server >/dev/null 2>&1'
	screen() { tmux -S "$SOCK" capture-pane -p -J -t nt; }
	screen_has() { screen | grep -qF -- "$1"; }
	start_job "$TMP/tui.out" "$RJ" --ranks 4 --duration 16 --stall-rank 1 --stall-after 1 --stall-for 10
	sleep 4
	tmux -S "$SOCK" new-session -d -s nt -x 120 -y 36 \
		"TERM=xterm-256color $NT attach -t $THRESH --dump $TMP/tui.jsonl $JPID; echo NT_EXIT=\$?; sleep 60"
	check tui_up "no dashboard: $(screen | head -3)" -- wait_for 10 screen_has "Ranks (4)"
	check tui_finding "no STALL of rank 1 on the dashboard: $(screen | grep -A2 Findings)" -- \
		wait_for 4 bash -c "tmux -S '$SOCK' capture-pane -p -J -t nt | grep -qE 'STALL [0-9.]+s  rank 1 '"
	tmux -S "$SOCK" send-keys -t nt q
	check tui_q_detaches "q did not detach at once (no question: the job is not nccltrace's): $(screen | tail -3)" -- \
		wait_for 5 screen_has "NT_EXIT=0"
	unharmed tui
else
	skip_n 4 tui "tmux is not installed (scripts/install-deps.sh installs it)"
fi

# --- SIGKILL of nccltrace during the attach, at several moments: nothing held, nothing loaded ---
# 30 s of steps: the nine kills below take about 13 s alone, and outlasted a 14 s job (700 steps)
# beside three other scripts (sigkill_job_runs: 0 of 5 alive, the job done)
start_job "$TMP/kill.out" "$NJ" --ranks 4 --iters 1500 --step-delay 0.02 --timeout 120
sleep 2
pids=$(tree "$JPID")
pids="$pids $(for c in $(pgrep -P "$JPID"); do pgrep -P "$c"; done)"
bad=""
landed=""
mid=0
# "stack": as soon as the dump has its first stack record, in the middle of the takes
for d in 0.05 0.15 0.25 0.35 0.45 0.6 0.8 1.2 stack; do
	K=$TMP/kill-$d.jsonl
	"$NT" attach --no-tui --dump "$K" "$JPID" >/dev/null 2>&1 &
	ntpid=$!
	if [ $d = stack ]; then
		for _ in $(seq 1 1000); do
			grep -q '"type":"stack"' "$K" 2>/dev/null && break
			sleep 0.005
		done
	else
		sleep "$d"
	fi
	kill -KILL $ntpid
	wait $ntpid 2>/dev/null
	h=$(held_threads $pids)
	[ -n "$h" ] && bad+="at ${d}s: held $h; "
	progs_back || bad+="at ${d}s: programs $(orphan_progs)held by nobody; "
	# where the kill landed: before the stacks, during them (stack records, no attach record), after
	ns=$(jq -s '[.[] | select(.type=="stack")] | length' "$K" 2>/dev/null)
	na=$(jq -s '[.[] | select(.type=="attach")] | length' "$K" 2>/dev/null)
	landed+="${d}s:${ns:-0}stacks/${na:-0}attach "
	[ "${ns:-0}" -gt 0 ] && [ "${na:-0}" -eq 0 ] && mid=$((mid + 1))
done
echo "# SIGKILL moments (stack records, attach record when killed): $landed"
# nothing held, and at least one kill landed in the middle of the stack takes (stack records, no
# attach record yet), the moment that holds threads stopped
check sigkill_nothing_held "${bad:-nothing held}; $mid kills during the stack takes, want 1 or more ($landed)" -- \
	test -z "$bad" -a "$mid" -ge 1
alive=0
for p in $pids; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
check sigkill_job_runs "$alive of $(wc -w <<<"$pids") job processes alive after the kills" -- \
	test "$alive" -eq "$(wc -w <<<"$pids")"
job_status
check sigkill_job_unharmed "job exit $st, want 0: $(tail -2 "$TMP/kill.out")" -- test "$st" = 0

# --- bad input: one line, sysexits code ---
true &
gone=$!
wait $gone
out=$("$NT" attach $gone 2>&1)
rc=$?
check nonexistent_pid "exit $rc, '$out'" -- \
	test $rc -eq 66 -a "$(wc -l <<<"$out")" -eq 1 -a "$out" = "nccltrace: no process with pid $gone"
out=$("$NT" attach 12ab 2>&1)
rc=$?
check bad_pid "exit $rc, '$out'" -- test $rc -eq 64 -a "$(wc -l <<<"$out")" -eq 1
out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$NT" attach 1 2>&1)
rc=$?
check not_root "exit $rc, '$out'" -- \
	bash -c "[ $rc -eq 77 ] && [ $(wc -l <<<"$out") -eq 1 ] && [[ '$out' == *'needs root'* ]]"
out=$("$NT" attach $$ 2>&1)
rc=$?
check own_ancestor "exit $rc, '$out'" -- test $rc -eq 64 -a "$(wc -l <<<"$out")" -eq 1
check no_progs_at_end "nccltrace programs held by nobody: $(orphan_progs)" -- progs_back
end_checks
