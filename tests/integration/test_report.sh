#!/bin/bash
# SPDX-License-Identifier: MIT
# nccltrace report on good, corrupt, truncated and missing dumps: clear errors, never a crash.
# checks: 14
. "$(dirname "$0")/lib.sh"

need_bpf report || end_checks
D=$TMP/r.jsonl
"$NT" run -t 1 --dump "$D" -- "$RJ" --ranks 2 --duration 5 --stall-rank 0 --stall-after 1 \
	--stall-for 3 >/dev/null 2>&1
out=$("$NT" report --json "$D")
check report_json_contract "fields missing: $out" -- jqe '.findings[0] |
	has("kind") and has("rank") and has("peer_rank") and has("phase") and has("since_s") and
	has("summary") and (.evidence|type=="array") and (.settings|type=="object")' <<<"$out"
check report_text "text report has no finding line" -- bash -c "'$NT' report '$D' | grep -q '^#1 stall'"

# the progress strips: the culprit's row moves, then nothing by the time its finding opens (a
# column of 0 at or before the next after the opening's); its row says #1, the findings row 1
progress_gap() {
	jqe '((.findings[0].opened_ns - .start_ns) / 1e9) as $at | .ranks[] | select(.rank == 0) |
		.progress as $p | (($at - $p.from_s) / $p.column_s | floor) as $c |
		[range(1; [$c + 2, ($p.bytes_per_s | length)] | min) |
			select($p.bytes_per_s[.] == 0 and ($p.bytes_per_s[0:.] | max) > 0)] | length > 0' <<<"$out"
}
check progress_gap "rank 0's progress: $(jq -c '.ranks[] | select(.rank == 0) | .progress' <<<"$out"), opened $(jq '.findings[0].opened_ns - .start_ns' <<<"$out") ns in" -- \
	progress_gap
txt=$(LANG=C "$NT" report "$D")
check progress_rows "report: $(grep -A4 '^progress' <<<"$txt")" -- \
	bash -c 'grep -qE "^  rank 0 #1 +\|[ .:=+*#@-]+\|$" <<<"$1" && grep -qE "^  rank 1 +\|" <<<"$1" &&
		grep -qE "^  findings +\| *1 *\|" <<<"$1"' _ "$txt"

# 70 ranks (synthetic: a snapshot a second for 12 s, rank 33's bytes stop at 6 s): rows of two
# ranks each, drawn as the least of the two, so rank 33's row goes blank and the others do not
# (%.0f: mawk's %d stops at 2^31). The ranks are named in reverse (ranks that start together are
# named in any order): the rows are in rank order all the same
awk 'BEGIN { t0 = 1000000000000; s = 1000000000
	printf "{\"nccltrace\":1,\"version\":\"t\",\"host\":\"h\",\"start_ns\":%.0f,\"cmd\":[\"x\"]}\n", t0
	for (r = 69; r >= 0; r--) printf "{\"type\":\"rank\",\"ts_ns\":%.0f,\"pid\":%d,\"rank\":%d}\n", t0, 1000 + r, r
	for (k = 1; k <= 12; k++) {
		printf "{\"type\":\"snapshot\",\"ts_ns\":%.0f,\"procs\":[],\"conns\":[", t0 + k * s
		for (r = 0; r < 70; r++) printf "%s{\"id\":\"c%d\",\"pid\":%d,\"bytes_sent\":%d,\"bytes_recv\":0,\"listener\":false}", r ? "," : "", r, 1000 + r, (r == 33 && k > 6 ? 6 : k) * 1000000
		printf "]}\n"
	}
	printf "{\"type\":\"footer\",\"ts_ns\":%.0f,\"exit_status\":0}\n", t0 + 13 * s }' >"$TMP/r70.jsonl"
txt=$(LANG=C "$NT" report "$TMP/r70.jsonl" 2>&1)
check progress_groups "report: $(grep -A3 '^progress' <<<"$txt"; grep -E '^  ranks 3[2-5]-' <<<"$txt")" -- \
	bash -c 'test "$(grep -cE "^  ranks [0-9]+-[0-9]+ +\|" <<<"$1")" -eq 35 &&
		grep -qE "^  ranks 32-33 +\|@{10} +\|$" <<<"$1" && grep -qE "^  ranks 34-35 +\|@{22}\|$" <<<"$1"' _ "$txt"
check ranks_in_order "ranks in --json: $("$NT" report --json "$TMP/r70.jsonl" | jq -c '[.ranks[].rank]' | head -c 200)" -- \
	jqe '[.ranks[].rank] == [range(70)]' <<<"$("$NT" report --json "$TMP/r70.jsonl")"
# the same 70 ranks as two hosts' dumps, hy's started 2 s after hx's and its rank 40 stopping at
# 6 s: merged, a row a host on one grid; hy's row blank before its dump began, and from rank 40's
# stop on (longer than hx's blank end, where its dump ended 2 s before hy's)
for h in hx:0:34:0 hy:35:69:2; do
	IFS=: read -r name r0 r1 off <<<"$h"
	awk -v H="$name" -v R0="$r0" -v R1="$r1" -v OFF="$off" 'BEGIN { t0 = 1000000000000; s = 1000000000
	printf "{\"nccltrace\":1,\"version\":\"t\",\"host\":\"%s\",\"start_ns\":%.0f,\"boot_to_realtime_ns\":%.0f,\"cmd\":[\"x\"]}\n", H, t0, OFF * s
	for (r = R0; r <= R1; r++) printf "{\"type\":\"rank\",\"ts_ns\":%.0f,\"pid\":%d,\"rank\":%d}\n", t0, 1000 + r, r
	for (k = 1; k <= 12; k++) {
		printf "{\"type\":\"snapshot\",\"ts_ns\":%.0f,\"procs\":[],\"conns\":[", t0 + k * s
		for (r = R0; r <= R1; r++) printf "%s{\"id\":\"c%d\",\"pid\":%d,\"bytes_sent\":%d,\"bytes_recv\":0,\"listener\":false}", (r > R0 ? "," : ""), r, 1000 + r, (r == 40 && k > 6 ? 6 : k) * 1000000
		printf "]}\n"
		# a merge replays the state records
		printf "{\"type\":\"state\",\"ts_ns\":%.0f,\"state\":{\"now_ns\":%.0f,\"procs\":[],\"conns\":[],\"comms\":[]}}\n", t0 + k * s, t0 + k * s
	}
	printf "{\"type\":\"footer\",\"ts_ns\":%.0f,\"exit_status\":0}\n", t0 + 13 * s }' >"$TMP/$name.jsonl"
done
txt=$(LANG=C "$NT" report "$TMP/hx.jsonl" "$TMP/hy.jsonl" 2>&1)
check progress_hosts "report: $(grep -A3 '^progress' <<<"$txt")" -- bash -c '
	x=$(grep -E "^  hx \(35\) +\|" <<<"$1" | cut -d"|" -f2); y=$(grep -E "^  hy \(35\) +\|" <<<"$1" | cut -d"|" -f2)
	test "$(grep -cE "^  (hx|hy) \(35\) +\|" <<<"$1")" -eq 2 && grep -q "a row a host" <<<"$1" &&
	test "${x:0:1}" != " " -a "${y:0:1}" = " " && test -n "${x// }" -a -n "${y// }" &&
	x_end=${x##*[^ ]}; y_end=${y##*[^ ]}; test ${#y_end} -gt ${#x_end}' _ "$txt"

# corrupt in the middle
{ head -3 "$D"; echo '{"type": broken'; tail -n +4 "$D"; } >"$TMP/corrupt.jsonl"
err=$("$NT" report --json "$TMP/corrupt.jsonl" 2>&1)
rc=$?
check corrupt_exit "exit $rc" -- test $rc -eq 65
check corrupt_names_line "message: $err" -- contains "$err" "corrupt.jsonl:4:"
# cut short in the middle of its last line (a full disk, a tracer killed while writing): the
# records before the cut are read, and the cut is said once
head -c $(($(stat -c %s "$D") - 20)) "$D" >"$TMP/cut.jsonl"
out=$("$NT" report --json "$TMP/cut.jsonl" 2>"$TMP/cut.err")
rc=$?
# read, and its findings there: jqe fails on no output at all (bare jq -e passes it)
truncated_read() { [ "$rc" -eq 0 ] && jqe '.findings | length >= 1' <<<"$out"; }
check truncated_read "exit $rc ($(cat "$TMP/cut.err")), findings $(jq -c '.findings | length' <<<"$out" 2>&1)" -- \
	truncated_read
check truncated_said "stderr: $(cat "$TMP/cut.err")" -- \
	bash -c "test \$(grep -c 'cut.jsonl:$(wc -l <"$D"): the last record was cut short' '$TMP/cut.err') = 1"
head -c 4096 /dev/urandom >"$TMP/random.jsonl"
"$NT" report "$TMP/random.jsonl" >/dev/null 2>&1
rc=$?
check random_exit "exit $rc" -- test $rc -eq 65
: >"$TMP/empty.jsonl"
"$NT" report "$TMP/empty.jsonl" >/dev/null 2>&1
rc=$?
check empty_exit "exit $rc" -- test $rc -eq 65
"$NT" report "$TMP/missing.jsonl" >/dev/null 2>&1
rc=$?
check missing_exit "exit $rc" -- test $rc -eq 66
end_checks
