#!/bin/bash
# SPDX-License-Identifier: MIT
# The tracer's intake is bounded, whatever the job does. The fake NCCL's socket net polls its
# non-blocking accept and connect in a tight loop until the peer arrives, as NCCL 2.28's proxy
# does (src/transport/net_socket.cc): with one rank late to the first collective, 8 and 16
# ranks give exactly one culprit, in time, with nothing lost and the calls counted in the
# kernel, not told one by one; the stripped build (no net symbol) names it too. A ring buffer
# shrunk until records are lost still names it, and says what was lost. A flood of every
# record class (NCCL probe hits, TCP state changes, processes) is held to the budget, counted as
# suppressed, and the tick keeps its period.
# checks: 67
# lane: alone (a flood of both CPUs: its drops and speed are measured)
. "$(dirname "$0")/lib.sh"
# its jobs spin on EAGAIN as NCCL does (lib.sh FIXTURE_IDLE_US)
export FIXTURE_IDLE_US=0

NJ=$ROOT/build/nccljob
FJ=$ROOT/build/floodjob
FAKE=$ROOT/build/fakenccl/libnccl.so.2
STRIPPED=$ROOT/build/fakenccl-stripped/libnccl.so.2
export NCCLTRACE_CACHE_DIR=$TMP/cache
THRESH=3

need_fixture flood "$NJ" "$FJ" "$FAKE" "$STRIPPED" || end_checks

footer() { tail -1 "$1" | jq -c 'select(.type=="footer")'; }
snapshot_count() { jq -s '[.[] | select(.type=="snapshot")] | length' "$1"; }
# the longest gap (ms) between two snapshots: the tick's own record, once a second while busy
snapshot_gap_ms() {
	jq -r 'select(.type=="snapshot") | .ts_ns' "$1" |
		awk 'NR > 1 && $1 - p > m { m = $1 - p } { p = $1 } END { print int(m / 1e6) }'
}

# late_rank NAME RANKS MAX_MB [LIB [TRACER-OPTS...]]: a random rank of RANKS sleeps before its
# first collective; the others block in the lazy ring connect (the proxies poll the net accept)
late_rank() {
	local name=$1 ranks=$2 max_mb=$3 lib=${4:-} D=$TMP/$1.jsonl OUT=$TMP/$1.out r f ft
	shift 4
	r=$((RANDOM % (ranks - 1) + 1))
	env ${lib:+LD_LIBRARY_PATH=$(dirname "$lib")} "$NT" run -t $THRESH --no-tui --dump "$D" "$@" -- \
		"$NJ" --ranks "$ranks" --iters 4 --fault ring-setup --fault-rank $r --fault-for 7 \
		--timeout 40 >"$OUT" 2>&1
	own_pkill "$NJ"
	f=$(findings "$D")
	ft=$(footer "$D")
	echo "# $name: $(jq -c '{lost, suppressed: .suppressed.total, poll_calls: .totals.poll_calls, tracer_cpu_s: .totals.tracer_cpu_s}' <<<"$ft"), dump $(($(stat -c %s "$D") / 1000)) kB"
	check "${name}_one_culprit" "findings: $(jq -c 'map({kind, rank})' <<<"$f")" -- \
		test "$(jq length <<<"$f")" -eq 1
	check "${name}_kind" "kind $(jq -r '.[0].kind' <<<"$f"), want ring_setup_blocked" -- \
		test "$(jq -r '.[0].kind' <<<"$f")" = ring_setup_blocked
	check "${name}_culprit" "named $(culprit "$f"), the job's marker: rank $r pid $(marker_pid "$OUT")" -- \
		test "$(culprit "$f")" = "rank $r pid $(marker_pid "$OUT")"
	detected "$name" "$OUT" "$D" ring_setup_blocked $THRESH
	# every other rank waits, in the setup or through it
	check "${name}_all_waiters" "waiters $(jq -c '.[0].waiter_ranks' <<<"$f"), want $((ranks - 1))" -- \
		test "$(jq '.[0].waiter_ranks | length' <<<"$f")" -eq $((ranks - 1))
	check "${name}_dump_small" "dump $(stat -c %s "$D") bytes, want < $max_mb MB" -- \
		test "$(stat -c %s "$D")" -lt $((max_mb * 1000000))
}

# --- the look-alike's polling: counted in the kernel, never a record a call ---
# NAME RANKS MAX_MB CHANNELS: with NCCL_MIN_NCHANNELS=2 the proxy polls two listen comms' accepts
# in turn, as NCCL's does one per channel (a run told per object was a record a call: 8 ranks of
# the wheel's 2.28.9 on a GPU host, 1.5 M records over the budget in a setup hang)
for c in "late8 8 4 1" "late8ch2 8 4 2" "late16 16 8 1"; do
	set -- $c
	NCCL_MIN_NCHANNELS=$4 late_rank "$1" "$2" "$3" ""
	D=$TMP/$1.jsonl
	check "${1}_nothing_lost" "footer: $(footer "$D" | jq -c '{lost, suppressed}')" -- \
		jqe '.lost.ringbuf_drops == 0 and .suppressed.total == 0' <<<"$(footer "$D")"
	check "${1}_polls_counted" "poll calls $(footer "$D" | jq '.totals.poll_calls'), net records $(jq -s '[.[] | select(.type=="nccl" and (.probe | test("^net_socket")))] | length' "$D")" -- \
		jqe '.totals.poll_calls > 1000' <<<"$(footer "$D")"
	# two runs a connection, each told twice (start, end), with room for a connect and an
	# accept polled in turn at the start; the calls are counted in the tens of thousands
	check "${1}_no_record_a_call" "nccl_poll records: $(jq -s '[.[] | select(.type=="nccl_poll")] | length' "$D")" -- \
		jqe "[.[] | select(.type==\"nccl\" and (.probe | test(\"^net_socket\")))] | length == 0 and ([.[] | select(.type==\"nccl_poll\")] | length) <= 8 * $2 * $4" -s "$D"
done
# the waiter polls its accept: the finding says how long and how often
check late8_poll_evidence "evidence: $(findings "$TMP/late8.jsonl" | jq -c '.[0].evidence')" -- \
	jqe '.[0].evidence | map(select(test("polls ncclNetSocketAccept for [0-9.]+s, [0-9.]+[kM]? tries"))) | length >= 1' <<<"$(findings "$TMP/late8.jsonl")"

# --- NVIDIA's stripped build: no net-plugin symbol, no polling probed; named all the same ---
late_rank stripped8 8 4 "$STRIPPED"
check stripped8_no_polls "poll calls $(footer "$TMP/stripped8.jsonl" | jq '.totals.poll_calls')" -- \
	jqe '.totals.poll_calls == 0 and .lost.ringbuf_drops == 0' <<<"$(footer "$TMP/stripped8.jsonl")"

# --- healthy 8 ranks in steady state, quiet mode on: no finding. The receiving end of each ring
# connection is made inside ncclSocketReady (the async accept: never labelled by a socket call's
# record); its label comes from its creator's phase, net accept, so a connection idle while the
# hooks are off is not read as a wait (before: a false stall in 3 runs of 4) ---
for i in 1 2; do
	D=$TMP/healthy$i.jsonl
	"$NT" run -t $THRESH --no-tui --dump "$D" -- "$NJ" --ranks 8 --iters 250 --step-delay 0.01 \
		>"$TMP/healthy$i.out" 2>&1
	rc=$?
	check "healthy${i}_ran" "exit $rc: $(tail -2 "$TMP/healthy$i.out")" -- \
		grep -q 'nccljob: 8 ranks, 250 all-reduces of .* done' "$TMP/healthy$i.out"
	check "healthy${i}_no_finding" "findings: $(findings "$D" | jq -c 'map({kind, rank, summary})')" -- \
		test "$(findings "$D" | jq length)" -eq 0
done
check healthy_went_quiet "no tcp_hooks off record" -- \
	jq_ok 'select(.type=="tcp_hooks" and .on==false)' "$TMP/healthy1.jsonl"

# --- records lost on purpose (a 4 KiB ring buffer): the phases are the kernel's stacks ---
late_rank tiny8 8 4 "" --ringbuf-kb 4
check tiny8_lost "footer: $(footer "$TMP/tiny8.jsonl" | jq -c '.lost')" -- \
	jqe '.lost.ringbuf_drops > 0' <<<"$(footer "$TMP/tiny8.jsonl")"
check tiny8_says_lost "evidence: $(findings "$TMP/tiny8.jsonl" | jq -c '.[0].evidence[-1]')" -- \
	jqe '.[0].evidence | map(select(test("^records not received: [1-9][0-9]* lost"))) | length == 1' <<<"$(findings "$TMP/tiny8.jsonl")"

# --- a flood of every class, held to the budget ---
D=$TMP/flood.jsonl
"$NT" run -t $THRESH --no-tui --dump "$D" -- "$FJ" --nccl "$FAKE" --conn --proc 5 \
	>"$TMP/flood.out" 2>&1
rc=$?
ft=$(footer "$D")
echo "# flood: $(grep floodjob: "$TMP/flood.out"); $(jq -c '{lost, suppressed, cpu: .totals.tracer_cpu_s, rss_kib: .totals.tracer_maxrss_kib}' <<<"$ft"), dump $(($(stat -c %s "$D") / 1000)) kB, longest gap between snapshots $(snapshot_gap_ms "$D") ms"
check flood_ran "exit $rc: $(tail -2 "$TMP/flood.out")" -- \
	grep -qE 'floodjob: pid [0-9]+: [1-9][0-9]* NCCL calls, [1-9][0-9]* connections, [1-9][0-9]* processes' "$TMP/flood.out"
# a healthy job: a connection whose close record was over the budget is closed all the same (the
# conns map is the truth: each tick's walk closes what left it; before, a connect left "unanswered")
check flood_no_finding "findings: $(findings "$D" | jq -c 'map({kind, summary})')" -- \
	test "$(findings "$D" | jq length)" -eq 0
check flood_nccl_suppressed "suppressed: $(jq -c '.suppressed' <<<"$ft")" -- \
	jqe '.suppressed.nccl > 0 and .suppressed.by_probe.api_get_last_error == .suppressed.nccl' <<<"$ft"
check flood_conn_suppressed "suppressed: $(jq -c '.suppressed' <<<"$ft")" -- \
	jqe '.suppressed.conn > 0' <<<"$ft"
# 5 s of flood at most: the budget's records (a few MB), not the flood's (~10^6 records)
check flood_dump_bounded "dump $(stat -c %s "$D") bytes" -- test "$(stat -c %s "$D")" -lt 12000000
# the tracer's own speed and memory are the plain build's: the sanitizers' is several times
# slower (it drops records a flood's budget sends) and keeps freed memory in quarantine
if [ -n "${NT_TRACER:-}" ]; then
	skip_n 3 flood_speed "the tracer's speed and memory under a flood: the plain build's (NT_TRACER=$NT)"
else
	check flood_no_drops "lost: $(jq -c '.lost' <<<"$ft")" -- jqe '.lost.ringbuf_drops == 0' <<<"$ft"
	check flood_memory_flat "tracer maxrss $(jq '.totals.tracer_maxrss_kib' <<<"$ft") KiB" -- \
		jqe '.totals.tracer_maxrss_kib < 131072' <<<"$ft"
	check flood_tick_period "$(snapshot_count "$D") snapshots, the longest gap $(snapshot_gap_ms "$D") ms" -- \
		test "$(snapshot_gap_ms "$D")" -le 2500 -a "$(snapshot_count "$D")" -ge 4
fi
check flood_report_says "report: $("$NT" report "$D" 2>&1 | grep suppressed)" -- \
	grep -qE '^suppressed: [1-9][0-9]* records over the tracer.s budget.*by probe: api_get_last_error [1-9]' \
	<<<"$("$NT" report "$D" 2>&1)"

# a budget of 64 NCCL records a second (16 TCP, 16 process): every class over it
D=$TMP/budget.jsonl
"$NT" run -t $THRESH --no-tui --record-budget 64 --dump "$D" -- "$FJ" --nccl "$FAKE" --conn --proc 4 \
	>"$TMP/budget.out" 2>&1
ft=$(footer "$D")
echo "# budget 64: $(jq -c '{lost, suppressed}' <<<"$ft"), dump $(($(stat -c %s "$D") / 1000)) kB"
for cls in nccl conn proc; do
	check "budget_${cls}_suppressed" "suppressed: $(jq -c '.suppressed' <<<"$ft")" -- \
		jqe ".suppressed.$cls > 0" <<<"$ft"
done
check budget_warned "no warning on stderr: $(grep -c 'over the budget' "$TMP/budget.out")" -- \
	grep -q 'records over the budget of 64 NCCL records a second' "$TMP/budget.out"
# bounded, and there: none at all is no pass (the flood's TCP records not traced, or every one
# suppressed)
check budget_records_bounded "$(jq -s '[.[] | select(.type=="conn_state")] | length' "$D") TCP records in 4 s, want 1..$((4 * 2 * 16))" -- \
	jqe '[.[] | select(.type=="conn_state")] | length | . > 0 and . <= 4 * 2 * 16' -s "$D"
# a token bucket, not a window of a second: at most an eighth of a second's records at once (a
# window let a flood send its second's 4096 NCCL records in a few ms, over the ring buffer)
burst=$(jq -r 'select(.type=="conn_state") | .ts_ns' "$D" |
	awk '{ t[NR] = $1; while (t[NR] - t[j + 1] > 125e6) j++; if (NR - j > m) m = NR - j } END { print m + 0 }')
check budget_burst_bounded "$burst TCP records in 125 ms, want 1..4 (16 a second: 2 at once, 2 more in 125 ms; 0: no TCP record to measure)" -- \
	test "$burst" -ge 1 -a "$burst" -le 4
out=$("$NT" run --record-budget 0 -- true 2>&1)
rc=$?
check budget_bad_value "exit $rc: $out" -- error_is 64 $rc "$out"

# no budget and a small ring buffer: records are lost, the tick is not starved by them
D=$TMP/starve.jsonl
"$NT" run -t $THRESH --no-tui --record-budget 1000000 --ringbuf-kb 64 --dump "$D" -- \
	"$FJ" --nccl "$FAKE" --threads 2 5 >"$TMP/starve.out" 2>&1
ft=$(footer "$D")
echo "# no budget, 64 KiB: $(jq -c '{lost, suppressed}' <<<"$ft"), longest gap between snapshots $(snapshot_gap_ms "$D") ms"
check starve_footer "no footer: $(tail -c 300 "$D")" -- jqe '.type == "footer"' <<<"$ft"
# the scenario's point: the flood outruns the 64 KiB ring buffer, the records it could not hold
# are lost and counted in the footer (not suppressed: the budget is far above the flood)
check starve_lost "footer: $(jq -c '{lost, suppressed: .suppressed.total}' <<<"$ft" 2>&1), want ring-buffer drops > 0" -- \
	jqe '.lost.ringbuf_drops > 0' <<<"$ft"
check starve_tick_period "$(snapshot_count "$D") snapshots, the longest gap $(snapshot_gap_ms "$D") ms" -- \
	test "$(snapshot_gap_ms "$D")" -le 2500 -a "$(snapshot_count "$D")" -ge 4
end_checks
