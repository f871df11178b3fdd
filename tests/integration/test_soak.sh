#!/bin/bash
# SPDX-License-Identifier: MIT
# A tracer's --listen polled as hard as one client can for a whole job (issue 49): /state and
# /metrics answered in full at once and again, unknown paths, other methods, a bad token and
# none, garbage, an 8 KB header, readers that stop mid-answer, 100 connections at once
# (tests/fixtures/pollstorm.c). The job makes processes, connections and communicators come and
# go: 4 ranks of the fake NCCL with rank 1 stalled 4 s, then 3 ranks where rank 2 exits on an
# IB error, then 4 ranks again. The tracer lives (a page that read what a record freed between
# two ticks killed it: SIGSEGV in conn_json), names both faults, answers every page whole,
# keeps its memory and its tick, and makes each page once a tick whatever the polling.
# checks: 9
. "$(dirname "$0")/lib.sh"

need_fixture soak "$ROOT/build/nccljob" "$ROOT/build/pollstorm" || end_checks
"$NT" run --help 2>&1 | grep -q -- '--listen' || {
	skip_rest soak "this build has no --listen"
	end_checks
}
J=$ROOT/build/nccljob
TOK=$TMP/token
echo "soak-token-$RANDOM$RANDOM" >"$TOK"
chmod 600 "$TOK"
D=$TMP/soak.jsonl
JOB="$J --ranks 4 --iters 200 --step-delay 0.02 --fault in-collective --fault-rank 1 --fault-for 4 --timeout 60;
$J --ranks 3 --iters 40 --step-delay 0.02 --fault ib-error --fault-rank 2 --timeout 8;
$J --ranks 4 --iters 100 --step-delay 0.02 --timeout 60; exit 0"
"$NT" run --no-tui -t 3 --listen 127.0.0.1:0 --token-file "$TOK" --dump "$D" -- \
	env LD_LIBRARY_PATH="$ROOT/build/fakenccl" sh -c "$JOB" >"$TMP/run.out" 2>"$TMP/run.err" &
NTPID=$!
port_of() { sed -n 's|.*serving http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$TMP/run.err" | head -1; }
has_port() { test -n "$(port_of)"; }
wait_for 30 has_port
PORT=$(port_of)
# the tracer's resident memory twice a second while it runs
(while kill -0 $NTPID 2>/dev/null; do
	awk '/^VmRSS:/ { print $2 }' /proc/$NTPID/status 2>/dev/null
	sleep 0.5
done) >"$TMP/rss" &
RSSPID=$!
STORM=
[ -n "$PORT" ] && STORM=$("$ROOT/build/pollstorm" "$PORT" $NTPID "$TOK")
wait $NTPID
RC=$?
wait $RSSPID
echo "$STORM"
num() { sed -n "s/.* $1 \([0-9]*\).*/\1/p" <<<"$STORM"; }
FOOT=$("$NT" cat "$D" 2>/dev/null | jq -c 'select(.type=="footer") | .totals' | tail -1)
echo "footer totals: $FOOT"

check soak_tracer_lived "exit $RC (the job's is 0), port '$PORT', footer: ${FOOT:-none}; $(grep -m2 -iE 'error|fault' "$TMP/run.err" | tr '\n' ' ')" -- \
	test $RC -eq 0 -a -n "$FOOT"
check soak_pages_whole "state_ok $(num state_ok) metrics_ok $(num metrics_ok) bad_body $(num bad_body) (want 200 and more whole of each, none bad)" -- \
	test "$(num state_ok)" -ge 200 -a "$(num metrics_ok)" -ge 200 -a "$(num bad_body)" = 0
check soak_refusals_answered "4xx $(num 4xx) 5xx $(num 5xx) of $(num requests) requests (unknown paths, methods and tokens: 4xx, never 5xx)" -- \
	test "$(num 4xx)" -ge 100 -a "$(num 5xx)" = 0
check soak_burst_answered "burst_answers $(num burst_answers), slow readers $(num slow)" -- \
	test "$(num burst_answers)" -ge 40 -a "$(num slow)" -ge 20
# refused or cut short only in the tracer's last 2 s (it closes its listener, then writes its
# footer), never while it runs
check soak_not_refused "refused $(num refused), cut $(num cut), of which before the tracer's last 2 s: $(num refused_or_cut_early)" -- \
	test -n "$STORM" -a "$(num refused_or_cut_early)" = 0
F=$("$NT" report --json "$D" 2>/dev/null | jq -c '[.findings[] | [.kind, .rank]]')
check soak_faults_named "findings $F (want the stall of rank 1 and rank 2's IB error)" -- \
	jqe 'any(.[]; . == ["stall", 1]) and any(.[]; . == ["ib_error", 2])' <<<"$F"
# bounded: the last third of the run's samples no higher than its first third's peak and a half
# (the first third has every rank of the first job, its connections and the first pages)
RSS=$(awk '{ v[NR] = $1 } END { n = NR; a = 0; b = 0;
	for (i = 1; i <= n; i++) { if (i <= n / 3 && v[i] > a) a = v[i]; if (i > 2 * n / 3 && v[i] > b) b = v[i] }
	printf "%d %d %d", n, a, b }' "$TMP/rss")
read -r NRSS RSS_A RSS_B <<<"$RSS"
if [ -n "${NT_SANITIZER_LOGS:-}" ]; then
	skip soak_rss_bounded "sanitized tracer: ASan holds up to 256 MB of freed memory in quarantine (its RSS here: $RSS_A then $RSS_B KiB); the plain pass measures it"
else
	check soak_rss_bounded "$NRSS samples, peak of the first third $RSS_A KiB, of the last $RSS_B KiB" -- \
		test "${NRSS:-0}" -ge 10 -a "${RSS_B:-1}" -le $((${RSS_A:-0} * 3 / 2))
fi
TICKS=$(jq -r '.ticks // 0' <<<"${FOOT:-{\}}")
LATE=$(jq -r '.ticks_late // 0' <<<"${FOOT:-{\}}")
PAGES=$(jq -r '.pages // 0' <<<"${FOOT:-{\}}")
# a page made once a tick at most, however many answers: /state and /metrics, and a tick that
# forced a snapshot (the finding's)
check soak_pages_once_a_tick "$PAGES pages made for $(num requests) requests over $TICKS ticks" -- \
	test "$TICKS" -gt 0 -a "$PAGES" -gt 0 -a "$PAGES" -le $((TICKS * 2 + 20))
# the tick unharmed: a late one (over 1.5 periods after the last) is the loop busy elsewhere
check soak_tick_on_time "$LATE of $TICKS ticks late, the longest gap $(jq -r '.tick_gap_max_ms // "?"' <<<"${FOOT:-{\}}") ms, pages took $(jq -r '.page_s // "?"' <<<"${FOOT:-{\}}") s" -- \
	test "$TICKS" -gt 50 -a $((LATE * 5)) -le "$TICKS"
end_checks
