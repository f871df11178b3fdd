#!/bin/bash
# SPDX-License-Identifier: MIT
# The live dashboard, end to end in a real terminal (tmux): the demo ring with a stalled rank
# under the dashboard; the culprit row highlighted and the finding on screen within threshold
# + 1 s; the job's output in the log file, not on the screen; q then y stops the job, q then n
# leaves it running; the terminal is given back every time, after a SIGKILL too (by the
# watcher). --no-tui stays plain.
# checks: 41
. "$(dirname "$0")/lib.sh"

if ! command -v tmux >/dev/null; then
	skip_rest tui "tmux is not installed (scripts/install-deps.sh installs it)"
	end_checks
fi
need_bpf tui || end_checks
SOCK=$TMP/tmux.sock
t() { tmux -S "$SOCK" "$@"; }
at_exit 'tmux -S "$SOCK" kill-server >/dev/null 2>&1; kill_leftovers'
THRESH=2
# -t alone (--fixed-threshold): the latency bounds below are -t's; test_adaptive.sh tests the
# adaptive threshold

screen() { t capture-pane -p -J -t nt; }
screen_has() { screen | grep -qF -- "$1"; }
# the findings pane's line for a stall of rank 1 (the log pane has other STALL lines)
finding_shown() { screen | grep -qE '^[ >] STALL [0-9.]+s  rank 1 '; }
now_ns() { date +%s%N; }
# the ranks' command line starts with the demo job's path; the tmux server's names it later
ranks_running() { own_running "^$RJ "; }
ranks_gone() { ! ranks_running; }

# --- a stalled rank under the dashboard ---
D=$TMP/tui.jsonl
LOG=$TMP/tui.log
t new-session -d -s nt -x 120 -y 36 \
	"TERM=xterm-256color $NT run -t $THRESH --fixed-threshold --dump $D -- $RJ --ranks 4 --duration 60 --stall-rank 1 --stall-after 2 --stall-for 50; echo NT_EXIT=\$?; sleep 120"
# the server stays when a part below kills its session, and the ranks are killed by their own
# command line (ranks_running's), not the server's, which names the job too: else the next
# part's new-session could reach the server while it exits ("server exited unexpectedly", the
# part's checks failed, twice beside three scripts)
t set -s exit-empty off
kill_ranks() { own_pkill "^$RJ "; }
check dashboard_up "no dashboard: $(screen | head -3)" -- wait_for 10 screen_has "Ranks (4)"
check header "header: $(screen | head -1)" -- wait_for 5 screen_has "ranks 4/4"
check log_file "the job's output did not go to $LOG" -- wait_for 10 grep -q "STALL rank 1" "$LOG"
t0=$(marker_ns "$LOG")
wait_for $((THRESH + 3)) finding_shown
t1=$(now_ns)
check finding_on_screen "no STALL in the findings pane: $(screen | grep -A2 Findings)" -- finding_shown
# polled every 100 ms: 200 ms more at the top
check_latency finding "$t0" "$t1" $((THRESH * 1000)) $(((THRESH + 1) * 1000 + 200)) \
	"$(marker_quiet_ns "$LOG")"
culprit=$(t capture-pane -p -e -t nt | grep -aF -- '! 1 ' | head -1)
check culprit_marked "rank 1 row: $(screen | grep -F -- ' 1 ' | head -2)" -- test -n "$culprit"
check culprit_red "rank 1 row is not red: $(printf %q "$culprit")" -- grep -qP '\e\[[0-9;]*31m' <<<"$culprit"
check waiters_marked "no waiting rank marked" -- bash -c "tmux -S '$SOCK' capture-pane -p -t nt | grep -qE '^~ [023] '"
t capture-pane -p -t nt | head -20 >"$TMP/top.txt"
check no_job_output_on_screen "the job's own lines reached the screen outside the log pane" -- \
	lacks "$TMP/top.txt" -F 'ringjob:'
check log_pane "the log pane does not show the job's output" -- screen_has "ringjob: STALL rank 1"
# details and help
t send-keys -t nt Tab Tab Enter
check detail_view "no detail view: $(screen | head -4)" -- wait_for 3 screen_has "Evidence"
t send-keys -t nt Escape '?'
check help_view "no help" -- wait_for 3 screen_has "write a snapshot to the dump now"
t send-keys -t nt Escape
# a resize is followed
t resize-window -t nt -x 90 -y 28
check resize "the layout did not follow the resize" -- wait_for 3 bash -c \
	"tmux -S '$SOCK' capture-pane -p -t nt | awk 'NR==28' | grep -q 'q quit'"
# d writes a snapshot at once. No field tells it from the periodic ones, which come 1 s or more
# apart (user/run.c tick()): d pressed right after a periodic one writes the next snapshot
# less than 1 s after it, and within 0.5 s of the key
snaps() { grep -c '"type":"snapshot"' "$D"; }
snaps_over() { [ "$(snaps)" -gt "$1" ]; }
wait_for 3 snaps_over "$(snaps)"
n=$(snaps)
at_key=$(now_ns)
t send-keys -t nt d
wait_for 2 snaps_over "$n"
boot=$(head -1 "$D" | jq -r .boot_to_realtime_ns)
mapfile -t ts < <(jq -R -r 'fromjson? | select(.type=="snapshot") | .ts_ns' "$D")
gap=$(((${ts[n]:-0} - ${ts[n - 1]:-0}) / 1000000))
after=$(((${ts[n]:-0} + boot - at_key) / 1000000))
echo "# d: a snapshot $gap ms after the one before, $after ms after the key"
check snapshot_key "the snapshot after d came $gap ms after the one before (periodic: 1000 ms or more), $after ms after the key" -- \
	test ${#ts[@]} -gt "$n" -a "$gap" -lt 1000 -a "$after" -ge 0 -a "$after" -le 500
# q asks, y stops the job; the terminal comes back
t send-keys -t nt q
check quit_asks "no question on q: $(screen | tail -1)" -- wait_for 3 screen_has "Stop the job too?"
t send-keys -t nt y
check quit_stops_job "nccltrace did not end after q, y: $(screen | tail -3)" -- wait_for 20 screen_has "NT_EXIT="
check quit_exit_status "exit: $(screen | grep NT_EXIT)" -- bash -c "tmux -S '$SOCK' capture-pane -p -t nt | grep -qE 'NT_EXIT=(143|0|15)'"
check terminal_restored "still in the alternate screen" -- test "$(t display -p -t nt '#{alternate_on}')" = 0
check summary_printed "no summary on the terminal: $(screen | tail -4)" -- screen_has "trace dump: $D; job output: $LOG"
check findings_reprinted "the finding is not repeated on the terminal" -- screen_has "nccltrace: STALL  rank 1"
check job_gone "ranks left behind: $(own_pids -x ringjob | head -3)" -- wait_for 5 ranks_gone
check dump_complete "no footer in the dump" -- jq_ok 'select(.type=="footer")' "$D"
check log_owner_mode "log mode $(stat -c %a "$LOG")" -- test "$(stat -c %a "$LOG")" = 640
t kill-session -t nt

# --- q, n: stop tracing, leave the job running ---
# (20 s for the dashboard: a sanitized tracer beside other scripts once took more than 10, and
# its q then came before the dashboard read keys)
D=$TMP/detach.jsonl
t new-session -d -s nt -x 100 -y 30 \
	"TERM=xterm $NT run --dump $D -- $RJ --ranks 2 --duration 30; echo NT_EXIT=\$?; sleep 60"
wait_for 20 screen_has "Ranks (2)"
t send-keys -t nt q
wait_for 6 screen_has "Stop the job too?"
t send-keys -t nt n
check detach_exit "nccltrace did not end on q, n: $(screen | tail -3)" -- wait_for 10 screen_has "NT_EXIT=0"
check detach_job_runs "the job stopped with the tracer" -- ranks_running
check detach_said "not told the job goes on" -- screen_has "stopped tracing; the job (pid"
check detach_restored "still in the alternate screen" -- test "$(t display -p -t nt '#{alternate_on}')" = 0
kill_ranks
t kill-session -t nt

# --- SIGTERM to nccltrace: forwarded to the job, the terminal given back ---
D=$TMP/term.jsonl
t new-session -d -s nt -x 100 -y 30 \
	"TERM=xterm $NT run --dump $D -- $RJ --ranks 2 --duration 30; echo NT_EXIT=\$?; sleep 60"
wait_for 20 screen_has "Ranks (2)"
pkill -TERM -f "^$NT run --dump $D"
check sigterm_exit "nccltrace did not end on SIGTERM: $(screen | tail -3)" -- wait_for 10 screen_has "NT_EXIT="
check sigterm_restored "still in the alternate screen" -- test "$(t display -p -t nt '#{alternate_on}')" = 0
check sigterm_job_gone "the job outlived SIGTERM" -- wait_for 5 ranks_gone
check sigterm_dump_complete "no footer" -- jq_ok 'select(.type=="footer")' "$D"
t kill-session -t nt

# --- SIGKILL to nccltrace: no handler runs, its watcher gives the terminal back ---
# (its exit, with its BPF programs and links let go, was seen to take over 10 s under the
# sanitizers on a loaded machine)
# The shell may see the tracer die before its watcher has restored the modes and left the
# alternate screen (seen under the sanitizers): a line it printed then went with the alternate
# screen (sigkill_exit failed once in CI so, its NT_EXIT line lost, the modes line after it
# shown). So it prints nothing until the watcher is gone, 5 s at most. This run's watcher: the
# tracer's command line, the tracer dead (another script's dashboard may run beside this one).
D=$TMP/kill.jsonl
t new-session -d -s nt -x 100 -y 30 \
	"TERM=xterm $NT run --dump $D -- $RJ --ranks 2 --duration 30; rc=\$?; for i in \$(seq 50); do pgrep -f '^$NT run --dump $D' >/dev/null || break; sleep 0.1; done; echo NT_EXIT=\$rc; stty -a | tr ' ' '\n' | grep -xE -- '-?(echo|icanon)' | tr '\n' ' '; echo TTY_MODES; sleep 60"
wait_for 20 screen_has "Ranks (2)"
# the terminal watcher of this run: the tracer's command line, its own name (another script's
# dashboard may run beside this one)
watcher_here() {
	local p
	for p in $(pgrep -f "^$NT run --dump $D"); do
		[ "$(cat /proc/$p/comm 2>/dev/null)" = nccltrace-tty ] && return 0
	done
	return 1
}
no_watcher_here() { ! watcher_here; }
# (the watcher names itself after its fork: in a loaded sanitized lane that may come late)
check sigkill_watcher "no terminal watcher while the dashboard runs" -- wait_for 5 watcher_here
# the tracer itself: the watcher has the same command line (a pkill -f kills both) and is its
# child; by its name too
here=$(pgrep -f "^$NT run --dump $D")
for p in $here; do
	pp=$(awk '{print $4}' /proc/$p/stat 2>/dev/null)
	grep -qx "$pp" <<<"$here" && continue
	[ "$(cat /proc/$p/comm 2>/dev/null)" = nccltrace ] && kill -KILL "$p"
done
wait_for 30 screen_has "NT_EXIT=137"
check sigkill_exit "the shell did not get the terminal back: $(screen | grep -v '^$' | tail -3)" -- \
	screen_has "NT_EXIT=137"
check sigkill_restored "still in the alternate screen" -- \
	wait_for 3 test "$(t display -p -t nt '#{alternate_on}')" = 0
check sigkill_modes "terminal modes after the kill: $(screen | grep TTY_MODES)" -- \
	wait_for 6 screen_has "icanon echo TTY_MODES"
check sigkill_watcher_gone "the watcher outlived its work" -- wait_for 3 no_watcher_here
kill_ranks
t kill-session -t nt

# --- --no-tui, and a terminal curses cannot drive: plain output, no log file ---
D=$TMP/plain.jsonl
t new-session -d -s nt -x 100 -y 30 \
	"$NT run --no-tui --dump $D -- $RJ --ranks 2 --duration 2; echo NT_EXIT=\$?; sleep 60"
check no_tui_plain "no plain output: $(screen | tail -3)" -- wait_for 15 screen_has "NT_EXIT=0"
check no_tui_job_output "the job's output is not passed through" -- screen_has "ringjob: all 2 ranks finished"
check no_tui_no_log "a log file was made" -- test ! -e "$TMP/plain.log"
t kill-session -t nt
D=$TMP/dumb.jsonl
t new-session -d -s nt -x 100 -y 30 \
	"TERM=dumb $NT run --dump $D -- $RJ --ranks 2 --duration 2; echo NT_EXIT=\$?; sleep 60"
check dumb_falls_back "no fallback: $(screen | tail -4)" -- wait_for 15 screen_has "NT_EXIT=0"
check dumb_says_why "not told why" -- screen_has "no dashboard: TERM is dumb; plain output"
t kill-session -t nt
end_checks
