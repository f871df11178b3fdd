#!/bin/bash
# SPDX-License-Identifier: MIT
# Stacks of waiting threads, taken from outside (user/trace/stacks.c), on real processes with
# real ptrace: known call chains in a library with symbols, in one stripped to .dynsym, in one
# with DWARF but no .symtab, and in the program; a SIGSTOPped process, threads that exit, a zombie leader, another tracer, and the
# taker killed with SIGKILL in the middle of takes. Then under nccltrace on the fake NCCL job:
# the stacks of the culprit and of a waiting rank in the finding's evidence, the dump and the
# report, with the full and the stripped library.
# checks: 22
# lane: long 40
. "$(dirname "$0")/lib.sh"

SJ=$ROOT/build/stackjob/stackjob
TAKE=$ROOT/build/stacktake
NJ=$ROOT/build/nccljob
FAKE=$ROOT/build/fakenccl/libnccl.so.2
STRIPPED=$ROOT/build/fakenccl-stripped/libnccl.so.2
export NCCLTRACE_CACHE_DIR=$TMP/cache

for f in "$SJ" "$TAKE" "$NJ" "$FAKE" "$STRIPPED"; do
	if [ ! -e "$f" ]; then
		fail stacks "fixture not built: run make ($f)"
		end_checks
	fi
done

# the stackjobs and nccljobs left are killed through lib.sh's at_exit, not a trap of the
# script's own: lib.sh's on_exit (its EXIT trap) then still keeps the dumps (NT_KEEP_DUMPS, for
# the sanitized pass), removes TMP and holds the script to end_checks
JOBS=()
kill_jobs() {
	local p
	for p in "${JOBS[@]}"; do kill -9 "$p" 2>/dev/null; done
	own_pkill "$NJ"
}
at_exit kill_jobs

# start_job OUT ARGS...: a stackjob in the background; sets PID ACC STR EPO (its thread ids)
start_job() {
	local out=$1 i
	shift
	"$SJ" "$@" >"$out" 2>&1 &
	JOBS+=($!)
	for i in $(seq 100); do
		grep -q "ready" "$out" && break
		sleep 0.05
	done
	read -r PID ACC STR EPO < <(sed -n 's/.*ready pid \([0-9]*\) accept \([0-9]*\) strip \([0-9]*\) main [0-9]* epoll \([0-9]*\).*/\1 \2 \3 \4/p' "$out")
}

# "module:symbol ..." of the first N frames of thread TID in a stacktake output
chain() { awk -v t="$2" -v n="$3" '$1=="frame" && $2==t && $3<n {printf "%s%s:%s", ($3?" ":""), $4, $5}' "$1"; }

counter() { tr -d '\n' <"$1" | sed 's/^0*//'; }

# --- known call chains, innermost first, each with its module ---
start_job "$TMP/job.out" --counter "$TMP/count" --timeout 120
"$TAKE" "$PID" "$PID" "$ACC" "$STR" "$EPO" >"$TMP/take.out" 2>&1
got=$(chain "$TMP/take.out" "$ACC" 5)
# the take's own line for the thread says why where it has no frames
tline() { grep -m1 "^thread $2 \|^error" "$1"; }
check take_symtab_chain "accept thread: $got ($(tline "$TMP/take.out" "$ACC"))" -- test "$got" = \
	"libc.so.6:accept libstksym.so:stk_sym_inner libstksym.so:stk_sym_middle libstksym.so:stk_sym_outer stackjob:accept_thread"
got=$(chain "$TMP/take.out" "$PID" 5)
check take_main_chain "main thread: $got" -- bash -c "[[ '$got' == 'libc.so.6:clock_nanosleep'*' libc.so.6:__nanosleep stackjob:main_wait_inner stackjob:main_wait stackjob:main' ]]"
# the stripped library: its hidden functions as module+offset, inside their real ranges (from
# the unstripped copy), never as the exported neighbour just below them
# [start end) of symbol $2 in library $1, as decimal numbers, from its .symtab
range() { nm -S "$1" | while read -r a z t n; do [ "$n" = "$2" ] && echo $((16#$a)) $((16#$a + 16#$z)); done; }
# the module, symbol and offset (decimal) of frame $3 of thread $2 in stacktake output $1
frame_at() { awk -v t="$2" -v i="$3" '$1=="frame" && $2==t && $3==i {print $4, $5, $6}' "$1"; }
in_range() { [ -n "$1" ] && [ "$1" -ge "$2" ] && [ "$1" -lt "$3" ]; }
read -r b0 b1 < <(range "$ROOT/build/stackjob/libstkstrip-full.so" stk_strip_hidden_b)
read -r a0 a1 < <(range "$ROOT/build/stackjob/libstkstrip-full.so" stk_strip_hidden_a)
read -r _ _ o1 < <(frame_at "$TMP/take.out" "$STR" 1)
read -r _ _ o2 < <(frame_at "$TMP/take.out" "$STR" 2)
got=$(chain "$TMP/take.out" "$STR" 4)
stripped_ok() {
	[ "$got" = "libc.so.6:read libstkstrip.so:- libstkstrip.so:- libstkstrip.so:stk_strip_entry" ] &&
		in_range $((o1)) "$b0" "$b1" && in_range $((o2)) "$a0" "$a1" &&
		! awk '$1=="frame" {print $5}' "$TMP/take.out" | grep -q stk_strip_neighbor
}
check take_stripped_internal "strip thread: $got ($o1 in [$b0,$b1)? $o2 in [$a0,$a1)?; $(tline "$TMP/take.out" "$STR"))" -- stripped_ok
# ... and beside it, as a landmark, the nearest export below with the offset from it
nb=$(nm -D --defined-only "$ROOT/build/stackjob/libstkstrip.so" | awk '$3=="stk_strip_neighbor" {print $1}')
near_ok() {
	local n1 n2
	n1=$(awk -v t="$STR" '$1=="frame" && $2==t && $3==1 {print $7, $8}' "$TMP/take.out")
	n2=$(awk -v t="$STR" '$1=="frame" && $2==t && $3==2 {print $7, $8}' "$TMP/take.out")
	[ "$n1" = "stk_strip_neighbor $(printf '0x%x' $((o1 - 16#$nb)))" ] &&
		[ "$n2" = "stk_strip_neighbor $(printf '0x%x' $((o2 - 16#$nb)))" ]
}
check take_stripped_near "frames 1,2 near: $(awk -v t="$STR" '$1=="frame" && $2==t && ($3==1 || $3==2) {print $7, $8}' "$TMP/take.out" | tr '\n' ';') (stk_strip_neighbor at 0x$nb)" -- near_ok
sc=$(awk '$1=="thread" {print $3}' "$TMP/take.out" | tr '\n' ' ')
check take_syscalls "syscalls: $sc" -- test "$sc" = "syscall=clock_nanosleep syscall=accept syscall=read syscall=epoll_wait "
# a stop would end epoll_wait with EINTR: that thread is left alone
check epoll_not_stopped "$(grep "^thread $EPO " "$TMP/take.out")" -- \
	grep -q "^thread $EPO syscall=epoll_wait stopped_ns=0 held_ns=0 frames=0 error=thread $EPO is in epoll_wait, which a stop would end with EINTR: not stopped" "$TMP/take.out"
c0=$(counter "$TMP/count")
sleep 0.1
check take_leaves_running "held after the take: '$(held_threads "$PID")', counter $c0 -> $(counter "$TMP/count")" -- \
	test -z "$(held_threads "$PID")" -a "$(counter "$TMP/count")" -gt "$c0"

# --- the taker killed by SIGKILL in the middle of takes, 30 times: never a thread left held ---
bad=""
for i in $(seq 30); do
	"$TAKE" --loop 0 --quiet "$PID" >/dev/null 2>&1 &
	t=$!
	sleep "0.0$((RANDOM % 90 + 10))"
	kill -9 "$t"
	wait "$t" 2>/dev/null
	h=$(held_threads "$PID")
	[ -n "$h" ] && bad+="kill $i: $h; "
done
c0=$(counter "$TMP/count")
sleep 0.2
c1=$(counter "$TMP/count")
check sigkill_never_leaves_held "${bad:-counter $c0 -> $c1}" -- test -z "$bad" -a "$c1" -gt "$c0"
# every blocking call of the job went on as if nothing happened (the kernel restarts them)
check no_call_interrupted "$(grep returned "$TMP/job.out")" -- bash -c "! grep -q returned '$TMP/job.out'"
kill -9 "$PID" 2>/dev/null

# --- a process stopped by SIGSTOP stays stopped (group-stop), and untraced ---
start_job "$TMP/stop.out" --timeout 60
kill -STOP "$PID"
sleep 0.1
"$TAKE" "$PID" >"$TMP/stopped.out" 2>&1
sleep 0.1
states=$(for t in /proc/"$PID"/task/*; do awk '/^State:/{printf "%s", $2} /^TracerPid:/{printf "%s ", $2}' "$t/status"; done)
check stopped_stays_stopped "states+tracers after a take: $states; $(grep -c '^frame' "$TMP/stopped.out") frames" -- \
	bash -c "! grep -qv '^T0\$' <<<'$(tr ' ' '\n' <<<"$states" | sed '/^$/d')' && grep -q 'stackjob main_wait_inner' '$TMP/stopped.out'"
kill -CONT "$PID"

kill -9 "$PID" 2>/dev/null

# --- threads exiting during takes: every take completes ---
start_job "$TMP/churn.out" --churn --counter "$TMP/count2" --timeout 60
"$TAKE" --loop 200 "$PID" >"$TMP/churn-take.out" 2>&1
rc=$?
gone=$(grep -cE "error=thread [0-9]+ (is gone|exited during the take|: gone)" "$TMP/churn-take.out")
echo "# churn: $(grep -c '^thread' "$TMP/churn-take.out") threads taken, $gone gone meanwhile; $(tail -1 "$TMP/churn-take.out")"
check exiting_threads "rc $rc, held '$(held_threads "$PID")': $(grep -v '^frame\|^thread' "$TMP/churn-take.out" | head -3)" -- \
	test $rc -eq 0 -a -z "$(held_threads "$PID")" -a -d /proc/"$PID"
kill -9 "$PID" 2>/dev/null

# --- a thread still held from a take that gave up waiting, taken again: its stop is awaited, it
# is not seized twice (that fails as "traced by pid N (stacktake) already", and lost the whole
# process's take: exiting_threads failed so once, beside other scripts). The job starved of CPU
# (SCHED_IDLE, on one CPU with a busy loop) stops late every time; takes that wait 0 ms, and no
# release between them (as when a stop comes after nccltrace's tick)
start_job "$TMP/held.out" --timeout 60
cpu=$(($(nproc) - 1))
taskset -a -p -c "$cpu" "$PID" >/dev/null && chrt -i -a -p 0 "$PID"
taskset -c "$cpu" bash -c 'while :; do :; done' &
JOBS+=($!)
busy=$!
"$TAKE" --loop 10 --stop-wait-us 0 --no-poll "$PID" "$PID" >"$TMP/held-take.out" 2>&1
rc=$?
kill -9 $busy
late=$(grep -c "error=thread $PID did not stop" "$TMP/held-take.out")
check retake_held "rc $rc, $late takes of 10 gave up waiting (want 2 or more), held '$(held_threads "$PID")': $(grep '^error' "$TMP/held-take.out" | head -2)" -- \
	test $rc -eq 0 -a "$late" -ge 2 -a -z "$(held_threads "$PID")" -a -d /proc/"$PID"
kill -9 "$PID" 2>/dev/null

# --- no .symtab but DWARF: the hidden functions named from it ---
LD_LIBRARY_PATH=$ROOT/build/stackjob/dwarf start_job "$TMP/dwarf.out" --timeout 60
"$TAKE" "$PID" "$STR" >"$TMP/dwarf-take.out" 2>&1
got=$(chain "$TMP/dwarf-take.out" "$STR" 4)
check take_dwarf_names "strip thread, DWARF only: $got; $(grep -o '/[^ ]*libstkstrip.so' /proc/"$PID"/maps | head -1)" -- \
	bash -c "[ '$got' = 'libc.so.6:read libstkstrip.so:stk_strip_hidden_b libstkstrip.so:stk_strip_hidden_a libstkstrip.so:stk_strip_entry' ] &&
	grep -q 'build/stackjob/dwarf/libstkstrip.so' /proc/$PID/maps"
kill -9 "$PID" 2>/dev/null

# --- a zombie leader: no stack for it, the other threads' stacks still ---
start_job "$TMP/zombie.out" --leader-exit --timeout 60
sleep 0.1
"$TAKE" "$PID" "$PID" "$ACC" >"$TMP/zombie-take.out" 2>&1
check zombie_leader "$(head -c 600 "$TMP/zombie-take.out")" -- bash -c "
	grep -q 'thread $PID .*error=thread $PID is a zombie: no stack' '$TMP/zombie-take.out' &&
	grep -q 'frame $ACC 3 libstksym.so stk_sym_outer' '$TMP/zombie-take.out'"
kill -9 "$PID" 2>/dev/null

# --- another tracer on the thread: no stack, one line saying who ---
start_job "$TMP/eperm.out" --timeout 60
strace -p "$ACC" -o /dev/null &
ST=$!
JOBS+=($ST)
for i in $(seq 50); do
	[ "$(awk '/^TracerPid:/{print $2}' /proc/"$PID"/task/"$ACC"/status)" = "$ST" ] && break
	sleep 0.05
done
out=$("$TAKE" "$PID" "$ACC" 2>&1)
rc=$?
check another_tracer "rc $rc: $out" -- bash -c "[ $rc -eq 1 ] && [ \$(grep -c . <<<'$out') -eq 2 ] &&
	grep -q '^error pid $PID is traced by pid $ST (strace) already' <<<'$out'"
kill "$ST" 2>/dev/null
wait "$ST" 2>/dev/null
kill -9 "$PID" 2>/dev/null

# --- under nccltrace: the stacks of the culprit and of a waiting rank in the finding ---
if ! why=$(bpf_usable); then
	for n in ring_setup_evidence ring_setup_records ring_setup_job_unharmed report_culprit_stack \
		stripped_evidence session_another_tracer healthy_no_stacks; do
		skip "$n" "BPF not usable here: $why"
	done
	end_checks
fi

# (the waiters spin as NCCL's do, lib.sh FIXTURE_IDLE_US: their stacks are NCCL's polling, with
# no nap in it)
D=$TMP/ring.jsonl
FIXTURE_IDLE_US=0 "$NT" run -t 2 --dump "$D" -- "$NJ" --ranks 3 --iters 6 --fault ring-setup --fault-rank 1 \
	--fault-for 5 --timeout 14 >"$TMP/ring.out" 2>&1
rc=$?
f=$(findings "$D")
p1=$(rank_pid "$D" 1)
ev=$(jq -c '.[0].evidence' <<<"$f")
# the culprit sleeps in the job's own code; the longest waiter is inside the all-reduce's lazy
# ring connect, unwound through the probes' uretprobe trampolines down to main()
check ring_setup_evidence "evidence: $ev" -- jqe '.[0].kind == "ring_setup_blocked" and
	(.[0].evidence | any(test("rank 1 \\(pid [0-9]+\\) main thread \\(stack unwound [0-9.]+s ago\\): outside NCCL, blocked in clock_nanosleep: clock_nanosleep <- .* <- nap <- main \\[nccljob\\]"))) and
	(.[0].evidence | any(test("rank [02] \\(pid [0-9]+\\) main thread \\(stack unwound [0-9.]+s ago\\): inside [^ ]+ <- .* <- ncclAllReduce, (blocked in [a-z0-9_]+|running); called from main \\[nccljob\\]")))' <<<"$f"
# both records, the culprit's and a waiter's (one check: both sides inside it)
ring_setup_records() {
	jq_ok "select(.type==\"stack\" and .pid==$p1 and .tid==$p1 and .syscall==\"clock_nanosleep\" and .stopped_ns > 0 and .held_ns >= .stopped_ns and (.frames | map(.symbol) | index(\"main\")) != null)" "$D" &&
		jq_ok "select(.type==\"stack\" and .pid!=$p1 and .nccl_api==\"ncclAllReduce\" and (.frames | map(.symbol) | (index(\"pncclAllReduce\") != null and index(\"main\") != null and index(\"_Z21ncclTransportP2pSetupP8ncclCommP13ncclTopoGraphi\") != null)))" "$D"
}
check ring_setup_records "stack records: $(jq -c 'select(.type=="stack") | [.pid, .tid, .nccl_call, (.frames | map(.symbol) | join(","))]' "$D" | head -4)" -- \
	ring_setup_records
check ring_setup_job_unharmed "exit $rc: $(tail -2 "$TMP/ring.out")" -- \
	bash -c "[ $rc -eq 0 ] && grep -q '3 ranks, 6 all-reduces of .* done' '$TMP/ring.out'"
out=$("$NT" report "$D")
# (the report as an argument: its text has quotes of its own)
check report_culprit_stack "$(grep -A4 'stack of the' <<<"$out" | head -12)" -- bash -c '
	grep -q "stack of the culprit, pid $1 thread $1, blocked in clock_nanosleep" <<<"$2" &&
	grep -qE "^ +#2 +nap\\+0x[0-9a-f]+ \\(nccljob\\)" <<<"$2"' _ "$p1" "$out"
own_pkill "$NJ"

# stripped to .dynsym: the waiter's internal frame is libnccl.so.2+OFFSET, inside the function
# that really holds it (ncclEnqueueCheck, from the unstripped copy), and ncclAllReduce outside
D=$TMP/stripped.jsonl
LD_LIBRARY_PATH=$(dirname "$STRIPPED") "$NT" run -t 2 --dump "$D" -- "$NJ" --ranks 3 --iters 40 \
	--fault in-collective --fault-rank 1 --fault-for 5 --timeout 20 >"$TMP/stripped.out" 2>&1
f=$(findings "$D")
off=$(jq -r '.[0].evidence[] | select(test("inside libnccl.so.2\\+0x")) | capture("inside libnccl.so.2\\+0x(?<o>[0-9a-f]+)").o' <<<"$f" | head -1)
read -r e0 e1 < <(range "$FAKE" _Z16ncclEnqueueCheckP8ncclInfo)
stripped_evidence_ok() {
	in_range "$((16#${off:-x}))" "$e0" "$e1" 2>/dev/null &&
		jqe '.[0].rank == 1 and (.[0].evidence | any(test("main thread \\(stack unwound [0-9.]+s ago\\): inside libnccl.so.2\\+0x[0-9a-f]+ <- ncclAllReduce, blocked in futex; called from main \\[nccljob\\]")))' <<<"$f"
}
check stripped_evidence "offset 0x$off in ncclEnqueueCheck [$e0,$e1)? evidence: $(jq -c '.[0].evidence' <<<"$f")" -- \
	stripped_evidence_ok
own_pkill "$NJ"

# another tracer (strace) on the culprit: said once, in the evidence, and the trace goes on
D=$TMP/traced.jsonl
"$NT" run -t 2 --dump "$D" -- "$NJ" --ranks 3 --iters 6 --fault in-collective --fault-rank 1 \
	--fault-for 6 --timeout 20 >"$TMP/traced.out" 2>&1 &
NTP=$!
for i in $(seq 100); do
	p1=$(sed -n 's/.*FAULT in-collective rank 1 pid \([0-9]*\).*/\1/p' "$TMP/traced.out")
	[ -n "$p1" ] && break
	sleep 0.05
done
[ -n "$p1" ] && strace -p "$p1" -o /dev/null 2>/dev/null &
ST=$!
JOBS+=($ST)
wait "$NTP"
kill "$ST" 2>/dev/null
f=$(findings "$D")
session_traced_ok() {
	[ "$(grep -c "cannot take the stacks of pid $p1: pid $p1 is traced by pid [0-9]* (strace) already" "$TMP/traced.out")" = 1 ] &&
		jqe ".[0].kind == \"stall\" and .[0].rank == 1 and (.[0].evidence | any(test(\"rank 1 \\\\(pid $p1\\\\) main thread \\\\(stack unwound [0-9.]+s ago\\\\): no stack: pid $p1 is traced by pid [0-9]+ \\\\(strace\\\\)\")))" <<<"$f"
}
check session_another_tracer "$(grep 'cannot take' "$TMP/traced.out"); $(jq -c '.[0] | [.kind, .rank, .evidence]' <<<"$f")" -- \
	session_traced_ok
own_pkill "$NJ"

# a healthy job: no thread of it is ever stopped
D=$TMP/healthy.jsonl
"$NT" run -t 2 --dump "$D" -- "$NJ" --ranks 3 --iters 12 --linger 0.6 >/dev/null 2>&1
rc=$?
# from a job that ran (exit 0, its dump's footer written): one that never started has no stack
check healthy_no_stacks "exit $rc, $(jq -c 'select(.type=="stack") | [.pid, .tid]' "$D" | head -3)" -- \
	test "$rc" = 0 -a "$(jq -s '[.[] | select(.type=="stack")] | length' "$D")" = 0 -a \
	"$(jq -s '[.[] | select(.type=="footer")] | length' "$D")" = 1
end_checks
