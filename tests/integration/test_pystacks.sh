#!/bin/bash
# SPDX-License-Identifier: MIT
# Python stacks of the culprit and its waiters, read from outside (user/trace/pystack.c), under
# `nccltrace run` on a Python ring job doing real TCP (tests/fixtures/pyring.py, no torch) whose
# rank 1 sleeps in save_checkpoint() at a known line while the others wait in recv_exact(): the
# finding's summary names that file and line, the evidence gives the merged Python and native
# stack, the waiters' line and the divergence hypothesis, and report --json gives every Python
# frame. On Debian's python3.11 (a stripped, non-PIE binary: _PyRuntime from .dynsym) and on
# 3.13 where the machine has one (read through its _Py_DebugOffsets). An interpreter whose layout
# is unknown (3.8) is said in one line. A job started as another user (--user nobody). nccltrace
# SIGKILLed while it takes stacks leaves no rank stopped or traced.
# checks: 40
# lane: long 45
. "$(dirname "$0")/lib.sh"

JOB=$ROOT/tests/fixtures/pyring.py
need_fixture pystacks "$JOB" "$NT" || end_checks

# pythons: Debian's, then a 3.13 and a 3.8 if this machine has them (pyenv, /usr/local)
find_python() { ls /usr/local/bin/python"$1" /root/.pyenv/versions/"$1"*/bin/python"$1" 2>/dev/null | head -1; }
PY311=/usr/bin/python3.11
PY313=$(find_python 3.13)
PY38=$(find_python 3.8)

kill_job() { own_pkill "tests/fixtures/pyring.py"; }
at_exit kill_job

# marker OUT KIND: "rank pid file line" of the job's "pyring: KIND" line of rank 1 (STALL) or 2,
# wherever in a line it is (the tracer's stderr shares the file: a line of it may come first)
marker_of() { sed -n "s/.*pyring: $2 rank \([0-9]*\) pid \([0-9]*\) file \([^ ]*\) line \([0-9]*\).*/\1 \2 \3 \4/p" "$1" | head -1; }

# scenario NAME PYTHON: 13 checks
scenario() {
	local name=$1 py=$2 D=$TMP/$1.jsonl OUT=$TMP/$1.out rc f r pid file line wr wpid wfile wline
	"$NT" run --no-tui -t 2 --dump "$D" -- "$py" "$JOB" --steps 4000 --sleep-at 1500 \
		--sleep-for 6 >"$OUT" 2>&1
	rc=$?
	check "${name}_exit" "exit $rc: $(tail -3 "$OUT")" -- test $rc -eq 0
	read -r r pid file line < <(marker_of "$OUT" STALL)
	read -r wr wpid wfile wline < <(marker_of "$OUT" WAIT)
	f=$(findings "$D")
	check "${name}_culprit" "named $(culprit "$f"), the job says rank 1 pid $pid" -- \
		test "$(culprit "$f")" = "rank 1 pid $pid"
	# the summary names the line, and still what the process sleeps in
	check "${name}_summary_line" "summary: $(jq -r '.[0].summary' <<<"$f")" -- \
		contains "$(jq -r '.[0].summary' <<<"$f")" \
		"rank 1 (pid $pid) is in pyring.py:$line save_checkpoint, sleeping in clock_nanosleep"
	check "${name}_live" "the live finding does not name the line" -- \
		grep -q "^nccltrace: STALL .* is in pyring.py:$line save_checkpoint" "$OUT"
	# the culprit's evidence: Python and native frames merged, down to the sleep
	check "${name}_merged" "culprit stack line: $(jq -r '.[0].evidence[]' <<<"$f" | grep "pid $pid) main")" -- \
		jqe ".[0].evidence | map(select(test(\"^rank 1 \\\\(pid $pid\\\\) main thread .*: outside NCCL: .*pyring.py:$line save_checkpoint -> .*clock_nanosleep\"))) | length == 1" <<<"$f"
	# the waiters: their line, as the job says it waits
	check "${name}_waiters" "waiters' line: $(jq -r '.[0].evidence[]' <<<"$f" | grep 'in Python')" -- \
		jqe ".[0].evidence | map(select(test(\"^waiting, in Python: ranks 0,2,3: pyring.py:[0-9]+ ring_step -> pyring.py:$wline recv_exact\"))) | length == 1" <<<"$f"
	check "${name}_divergence" "first hypothesis: $(jq -r '.[0].hypotheses[0]' <<<"$f")" -- \
		contains "$(jq -r '.[0].hypotheses[0]' <<<"$f")" \
		"rank 1 is at pyring.py:$line (save_checkpoint), the others at pyring.py:$wline (recv_exact): the ranks took different paths"
	# report --json: every Python frame of the culprit's main thread, innermost first
	check "${name}_json_top" "culprit's Python frames: $(jq -c '.[0].stacks[] | select(.role=="culprit") | .python.frames[0]' <<<"$f")" -- \
		jqe ".[0].stacks | map(select(.role==\"culprit\" and .tid==$pid and .python.frames[0].file==\"$file\" and .python.frames[0].line==$line and .python.frames[0].func==\"save_checkpoint\")) | length == 1" <<<"$f"
	check "${name}_json_outer" "outermost frame not <module>" -- \
		jqe ".[0].stacks | map(select(.role==\"culprit\") | .python.frames[-1].func == \"<module>\") | any" <<<"$f"
	check "${name}_json_merged" "not merged" -- \
		jqe ".[0].stacks | map(select(.role==\"culprit\") | .python.merged) | all" <<<"$f"
	check "${name}_json_waiter" "waiter's Python stack: $(jq -c '.[0].stacks[] | select(.role=="waiter") | .python.frames[0]' <<<"$f")" -- \
		jqe ".[0].stacks | map(select(.role==\"waiter\" and .python.frames[0].line==$wline and .python.frames[1].func==\"ring_step\")) | length == 1" <<<"$f"
	check "${name}_report" "report does not list the Python frames" -- \
		bash -c "'$NT' report '$D' | grep -q 'py#0  $file:$line save_checkpoint'"
	check "${name}_version" "version: $(jq -r '.[0].stacks[0].python.version' <<<"$f")" -- \
		test "$(jq -r '.[0].stacks[0].python.version' <<<"$f")" = "$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
	kill_job
}

scenario py311 "$PY311"
# the HTML report: the stacks on the finding's hover, Python frames first
CHROMIUM=$(command -v chromium || command -v chromium-browser)
if [ -n "$CHROMIUM" ] && "$NT" report --html "$TMP/py311.html" "$TMP/py311.jsonl" >/dev/null; then
	read -r _ pid file line < <(marker_of "$TMP/py311.out" STALL)
	dom=$(timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --dump-dom \
		"file://$TMP/py311.html" 2>/dev/null | tr '\n' '|')
	check html_hover "the finding's hover: $(grep -o 'class="finding[^>]*title="[^"]\{0,200\}' <<<"$dom")" -- \
		contains "$dom" "title=\"stack of the culprit, pid $pid thread $pid, blocked in clock_nanosleep:|  ... -&gt; pyring.py:$line save_checkpoint -&gt; "
else
	skip html_hover "no chromium here, or report --html failed (scripts/install-deps.sh installs chromium)"
fi
if [ -n "$PY313" ]; then
	scenario py313 "$PY313"
else
	skip_n 13 py313 "no CPython 3.13 on this machine (pyenv or /usr/local): its _Py_DebugOffsets are read by the unit tests where one is"
fi

# --- a job started as another user: read as root, which ptrace's rules allow ---
# (its script from where nobody reaches the checkout: lib.sh user_root)
user_root nobody
D=$TMP/nobody.jsonl
"$NT" run --no-tui --user nobody -t 2 --dump "$D" -- "$PY311" "$UROOT/${JOB#"$ROOT"/}" --steps 4000 --sleep-at 1500 \
	--sleep-for 5 >"$TMP/nobody.out" 2>&1
rc=$?
read -r _ pid _ line < <(marker_of "$TMP/nobody.out" STALL)
f=$(findings "$D")
check user_exit "exit $rc: $(tail -2 "$TMP/nobody.out")" -- test $rc -eq 0
check user_summary_line "summary: $(jq -r '.[0].summary' <<<"$f"), the marker: pid $pid line $line" -- \
	contains "$(jq -r '.[0].summary' <<<"$f")" "rank 1 (pid $pid) is in pyring.py:$line save_checkpoint"
kill_job

# --- a version whose layout this reader does not know: said in one line, never guessed ---
if [ -n "$PY38" ]; then
	D=$TMP/py38.jsonl
	"$NT" run --no-tui -t 2 --dump "$D" -- "$PY38" "$JOB" --steps 3000 --sleep-at 1000 \
		--sleep-for 5 >"$TMP/py38.out" 2>&1
	f=$(findings "$D")
	check py38_unknown "culprit line: $(jq -r '.[0].evidence[1]' <<<"$f")" -- \
		jqe '.[0].evidence | map(select(test("CPython 3.8: Python stack unknown; "))) | length > 0' <<<"$f"
	check py38_no_guess "a Python line was named for 3.8: $(jq -r '.[0].summary' <<<"$f")" -- \
		bash -c "! grep -q 'pyring.py:' <<<'$(jq -r '.[0].summary' <<<"$f")'"
	kill_job
else
	skip_n 2 py38 "no CPython 3.8 on this machine: the unknown-version line is checked by the unit tests"
fi

# --- nccltrace SIGKILLed while it takes stacks (every second while the finding is open) ---
# threads of the job's processes that are stopped (T, t) or traced: "status-file:state:tracer"
held() {
	local p
	for p in $(own_pids "$JOB"); do
		grep -H -E '^(State|TracerPid):' /proc/"$p"/task/*/status 2>/dev/null
	done | awk '{f = $1; sub(/:(State|TracerPid):$/, "", f)} /State:/ {s[f] = $2} /TracerPid:/ {t[f] = $2}
		END {for (f in s) if (s[f] == "T" || s[f] == "t" || t[f] != 0) printf "%s:%s:%s ", f, s[f], t[f]}'
}
for at in 0 0.35 1.2; do
	D=$TMP/kill$at.jsonl
	"$NT" run --no-tui -t 2 --dump "$D" -- "$PY311" "$JOB" --steps 4000 --sleep-at 1000 \
		--sleep-for 8 >"$TMP/kill$at.out" 2>&1 &
	ntpid=$!
	wait_for 15 grep -qs '"type":"finding"' "$D"
	check "kill_${at}_taking" "no finding (so no takes) before the kill" -- \
		grep -qs '"type":"stack"' "$D"
	sleep "$at"
	kill -9 $ntpid
	wait $ntpid 2>/dev/null
	sleep 0.2
	h=$(held)
	check "kill_${at}_not_held" "threads left stopped or traced: $h" -- test -z "$h"
	check "kill_${at}_job_runs" "the job's ranks are gone or not running" -- \
		test "$(own_pids "$JOB" | wc -l)" -ge 4
	kill_job
done

end_checks
