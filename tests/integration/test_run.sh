#!/bin/bash
# SPDX-License-Identifier: MIT
# nccltrace run: exit status, errors, dump contents of a healthy job, signal forwarding.
# checks: 29
. "$(dirname "$0")/lib.sh"

need_bpf run || end_checks

# --- a healthy 4-rank ring: no finding, a complete dump ---
D=$TMP/healthy.jsonl
"$NT" run -t 2 --dump "$D" -- "$RJ" --ranks 4 --duration 4 >"$TMP/healthy.out" 2>"$TMP/healthy.err"
rc=$?
check healthy_exit_0 "exit $rc" -- test $rc -eq 0
n=$(findings "$D" | jq 'length')
check healthy_no_findings "$n findings: $(findings "$D")" -- test "$n" = 0
check healthy_header "no header with attach_mode" -- \
	jq_ok 'select(.nccltrace==2) | .attach_mode | test("tracepoint|fentry|kprobe")' "$D"
check healthy_footer "footer missing or exit_status wrong" -- \
	jq_ok 'select(.type=="footer") | .exit_status==0' "$D"
nranks=$(jq -r 'select(.type=="rank") | .rank' "$D" | sort -u | tr '\n' ' ')
check healthy_ranks "ranks seen: $nranks" -- test "$nranks" = "0 1 2 3 "
# every rank's pid is a child of the launcher, and ranks differ
p1=$(rank_pid "$D" 1)
check rank_pid_forked "rank 1 pid $p1 not in a fork event" -- \
	jq_ok "select(.type==\"proc\" and .event==\"fork\" and .pid==$p1)" "$D"
# bytes were counted both ways, and the ring's connections were joined to their peers
sent=$(jq -s '[.[] | select(.type=="snapshot") | .conns[] | select(.listener|not) | .bytes_sent] | max' <(whole "$D"))
check healthy_bytes "max bytes_sent $sent" -- test "${sent:-0}" -gt 100000
peer=$(jq -s "[.[] | select(.type==\"snapshot\") | .conns[] | select(.pid==$p1 and .peer_pid!=null) | .peer_pid] | unique | length" <(whole "$D"))
check peer_mapping "rank 1 has $peer distinct traced peers (want 2: next and previous)" -- test "$peer" = 2
check allowlist_only "a non-allow-listed variable reached the dump" -- \
	lacks "$D" -e '"PATH"' -e '"HOME"'
check env_recorded "RINGJOB/WORLD_SIZE env not in rank records" -- \
	jq_ok 'select(.type=="rank" and .rank==0) | .env.WORLD_SIZE=="4"' "$D"
check state_events "no conn_state events" -- \
	jq_ok 'select(.type=="conn_state" and .new=="ESTABLISHED")' "$D"

# --- default dump names: four runs in one directory, in one second or two, four dumps ---
mkdir -p "$TMP/names"
names_rc=""
for i in 1 2 3 4; do
	(cd "$TMP/names" && "$NT" run --no-tui -- true 2>>"$TMP/names.err")
	names_rc+="$? "
done
ndumps=$(find "$TMP/names" -maxdepth 1 -name 'nccltrace-*.jsonl' | wc -l)
check default_names_unique "exits $names_rc, $ndumps dumps: $(ls "$TMP/names" | tr '\n' ' ') $(grep -m1 'cannot create' "$TMP/names.err")" -- \
	test "$names_rc" = "0 0 0 0 " -a "$ndumps" -eq 4
# a name the user gave that exists is still refused, the job not started
err=$("$NT" run --dump "$TMP/x0.jsonl" -- true 2>&1 && "$NT" run --dump "$TMP/x0.jsonl" -- touch "$TMP/x0.ran" 2>&1)
rc=$?
check given_name_refused "exit $rc ($err)" -- \
	test $rc -eq 73 -a ! -e "$TMP/x0.ran" -a -n "$(contains "$err" 'never overwritten' && echo y)"

# --- exit status passthrough ---
"$NT" run --dump "$TMP/x1.jsonl" -- sh -c 'exit 7' 2>/dev/null
rc=$?
check exit_status_passthrough "exit $rc, want 7" -- test $rc -eq 7
"$NT" run --dump "$TMP/x2.jsonl" -- sh -c 'kill -TERM $$' 2>/dev/null
rc=$?
check exit_signal_128 "exit $rc, want 143" -- test $rc -eq 143
check footer_status "footer exit_status not 143" -- \
	jq_ok 'select(.type=="footer") | .exit_status==143' "$TMP/x2.jsonl"

# --- nccltrace's own errors: one line, sysexits ---
err=$("$NT" run --dump "$TMP/x3.jsonl" -- /nonexistent/cmd 2>&1)
rc=$?
check cmd_not_found "exit $rc ($err)" -- test $rc -eq 127
check cmd_not_found_msg "message: $err" -- contains "$err" "cannot run '/nonexistent/cmd'"
err=$("$NT" run --bogus -- true 2>&1)
rc=$?
check unknown_option "exit $rc ($err)" -- error_is 64 $rc "$err"
err=$("$NT" run 2>&1)
rc=$?
check no_command "exit $rc ($err)" -- test $rc -eq 64
err=$("$NT" run -t abc -- true 2>&1)
rc=$?
check bad_threshold "exit $rc ($err)" -- test $rc -eq 64
err=$("$NT" frobnicate 2>&1)
rc=$?
check unknown_subcommand "exit $rc ($err)" -- test $rc -eq 64
echo keep >"$TMP/exists.jsonl"
err=$("$NT" run --dump "$TMP/exists.jsonl" -- true 2>&1)
rc=$?
check dump_exists "exit $rc ($err)" -- test $rc -eq 73 -a "$(cat "$TMP/exists.jsonl")" = keep
ln -s "$TMP/target" "$TMP/link.jsonl"
"$NT" run --dump "$TMP/link.jsonl" -- true 2>/dev/null
rc=$?
check dump_symlink "exit $rc; symlink followed" -- test $rc -eq 73 -a ! -e "$TMP/target"
if command -v setpriv >/dev/null; then
	err=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$NT" run --dump /tmp/never.jsonl -- true 2>&1)
	rc=$?
	check non_root "exit $rc ($err)" -- error_is 77 $rc "$err"
else
	skip non_root "setpriv (util-linux) not installed"
fi

# --- signals reach the job's process group; nccltrace returns the job's status ---
"$NT" run --dump "$TMP/sig.jsonl" -- sh -c 'sleep 31 & wait' 2>/dev/null &
ntpid=$!
sleep 1
kill -TERM $ntpid
wait $ntpid
rc=$?
check sigterm_forwarded "exit $rc, want 143" -- test $rc -eq 143
no_sleep31() { ! own_running -fx 'sleep 31'; }
check sigterm_no_orphan "the job's sleep survived" -- no_sleep31
check sigterm_dump_complete "no footer after SIGTERM" -- \
	jq_ok 'select(.type=="footer")' "$TMP/sig.jsonl"
# a SIGTERM while nccltrace still loads its programs (the job not started yet): the same exit
# status and a whole dump, never a tracer killed with the dump unfinished
early=""
# blocks SIGTERM: PID's SigBlk has bit 15 (before, the signal's default action is the exec'd
# tracer's fate, not its code's: a loaded machine once took 0.1 s to get there)
term_blocked() {
	local m
	m=$(awk '/^SigBlk:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
	[ -n "$m" ] && (((0x$m & 0x4000) != 0))
}
for d in 0.1 0.3 0.6; do
	"$NT" run --dump "$TMP/early-$d.jsonl" -- sh -c 'sleep 31 & wait' 2>"$TMP/early-$d.err" &
	ntpid=$!
	wait_for 5 term_blocked $ntpid
	sleep $d
	kill -TERM $ntpid
	wait $ntpid
	rc=$?
	jq_ok 'select(.type=="footer")' "$TMP/early-$d.jsonl" && [ $rc -eq 143 ] ||
		early+="at ${d}s: exit $rc, $(jq -s '[.[] | select(.type=="footer")] | length' "$TMP/early-$d.jsonl" 2>&1) footers, $(tail -1 "$TMP/early-$d.err"); "
done
for p in $(own_pids -fx 'sleep 31'); do kill "$p"; done
check sigterm_early_dump_complete "$early" -- test -z "$early"
end_checks
