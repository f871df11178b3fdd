#!/bin/bash
# SPDX-License-Identifier: MIT
# Post-mortem on a real dump (the fake NCCL job, a rank stalled in the middle of its
# collectives, --collectives): the text report's rank timelines, the Perfetto trace (valid,
# complete, slices never overlapping on a track, in time order), and the HTML timeline rendered
# by a real headless Chromium (its DOM: one row per rank, the stall on the culprit's row, the
# heat map of bytes moved under the phases, with a gap on the culprit's row; the stall's red span
# at the fault's time, amber spans on the rows that waited, exit marks; the wait-for graph at the
# finding, the culprit its root, its waiters the nodes, its edges' evidence; a rank's
# connections with their sparklines, the time cursor, both from the page's address).
# checks: 37
. "$(dirname "$0")/lib.sh"

NJ=$ROOT/build/nccljob
need_fixture postmortem "$NJ" || end_checks
D=$TMP/pm.jsonl
"$NT" run --no-tui -t 2 --collectives --dump "$D" -- "$NJ" --ranks 3 --iters 20 \
	--fault in-collective --fault-rank 1 --fault-for 3 >"$TMP/pm.out" 2>&1

# --- report: what ran, findings, each rank's timeline and connections ---
out=$("$NT" report "$D")
check report_ranks "no ranks section: $(tail -5 <<<"$out")" -- grep -q '^ranks:$' <<<"$out"
for r in 0 1 2; do
	check "report_rank${r}_timeline" "rank $r has no init in its timeline" -- \
		bash -c "sed -n '/^  rank $r /,/^  rank /p' <<<\"\$1\" | grep -qE '^ +[0-9.]+s  init '" _ "$out"
done
check report_conns "no connection totals" -- grep -qE '^  rank 1 \(pid [0-9]+\): [1-9][0-9]* connections, [0-9.]+ MiB sent' <<<"$out"
json=$("$NT" report --json "$D")
check report_json_ranks "no ranks in --json" -- jqe '(.ranks | length == 3) and (.ranks[0].timeline | length > 0) and (.findings | length == 1)' <<<"$json"

# --- convert: Chrome trace-event JSON for Perfetto ---
T=$TMP/pm.trace.json
out=$("$NT" convert "$D" -o "$T")
check convert_runs "$out" -- test -s "$T"
check convert_valid "not JSON with traceEvents" -- jqe '.traceEvents | length > 50' "$T"
check convert_fields "an event without ph/name/pid/tid/ts" -- \
	jqe '[.traceEvents[] | select((.ph|type)!="string" or (.name|type)!="string" or (.pid|type)!="number" or (.tid|type)!="number" or (.ts|type)!="number")] | length == 0' "$T"
check convert_time_order "timestamps go back" -- \
	jqe '[.traceEvents[].ts] as $t | [range(1; $t|length) | select($t[.] < $t[.-1])] | length == 0' "$T"
check convert_rank_names "no process per rank" -- \
	jqe '[.traceEvents[] | select(.ph=="M" and .name=="process_name") | .args.name | select(test("^rank [0-2] "))] | length == 3' "$T"
check convert_phases "no NCCL phase slices" -- \
	jqe '[.traceEvents[] | select(.ph=="X" and .name=="init")] | length == 3' "$T"
check convert_nesting "slices overlap on a track" -- jqe '
	[.traceEvents[] | select(.ph=="X")] | group_by([.pid, .tid])[] as $g |
	[range(0; $g|length) as $i | range(0; $g|length) as $j | select($i < $j) |
	 ($g[$i]) as $a | ($g[$j]) as $b |
	 select(($a.ts + $a.dur > $b.ts and $b.ts + $b.dur > $a.ts) and
	        ((($a.ts <= $b.ts and $b.ts + $b.dur <= $a.ts + $a.dur) or
	          ($b.ts <= $a.ts and $a.ts + $a.dur <= $b.ts + $b.dur)) | not))] | length == 0' "$T"
check convert_collectives "collectives are not async slices: one per rank and launch" -- \
	jqe '([.traceEvents[] | select(.ph=="b" and .cat=="collective")] | length == 60) and
	     ([.traceEvents[] | select(.ph=="e" and .cat=="collective")] | length == 60)' "$T"
# rank 0 and 2 waited for rank 1's late launch: their slice of that one lasts the stall
check convert_wait_slice "no collective slice as long as the stall" -- jqe '
	[.traceEvents[] | select(.cat=="collective")] | group_by(.id)[] | select(length == 2) |
	(.[1].ts - .[0].ts) | select(. > 2500000)' "$T"
check convert_counters "no byte-rate or collective counters" -- \
	jqe '([.traceEvents[] | select(.ph=="C" and .name=="TCP MB/s sent")] | length > 0) and
	     ([.traceEvents[] | select(.ph=="C" and (.name|startswith("collectives, comm")))] | length > 0)' "$T"
check convert_finding "no finding marker on rank 1" -- \
	jqe '[.traceEvents[] | select(.ph=="i" and .name=="stall opened" and .pid==1)] | length == 1' "$T"
# errors: one line, sysexits
err=$("$NT" convert "$TMP/missing.jsonl" -o "$TMP/x.json" 2>&1)
check convert_missing "exit $?: $err" -- test $? -eq 66
{ head -3 "$D"; echo '{"type": broken'; } >"$TMP/corrupt.jsonl"
err=$("$NT" convert "$TMP/corrupt.jsonl" -o "$TMP/x.json" 2>&1)
rc=$?
check convert_corrupt "exit $rc: $err" -- error_is 65 $rc "$err"
err=$("$NT" convert "$D" 2>&1)
check convert_no_output "exit $?: $err" -- test $? -eq 64

# --- the HTML timeline, in a real browser ---
H=$TMP/pm.html
out=$("$NT" report --html "$H" "$D")
check html_written "$out" -- test -s "$H"
check html_self_contained "the page loads something from elsewhere" -- \
	lacks "$H" -iE '(src|href)="(https?:)?//'
CHROMIUM=$(command -v chromium || command -v chromium-browser)
if [ -z "$CHROMIUM" ]; then
	skip_rest html_rendered "no chromium here (scripts/install-deps.sh installs it)"
	end_checks
fi
# (a line: hover texts hold newlines)
dom=$(timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --dump-dom "file://$H" 2>/dev/null | tr '\n' ' ')
check html_rows "rows in the rendered page: $(grep -o 'class="row" data-rank="[0-9]*"' <<<"$dom" | tr '\n' ' ')" -- \
	test "$(grep -o 'class="row" data-rank="[0-9]*"' <<<"$dom" | tr '\n' ' ')" = 'class="row" data-rank="0" class="row" data-rank="1" class="row" data-rank="2" '
check html_stall_on_culprit "the stall is not on rank 1's row" -- \
	bash -c "sed 's/class=\"row\"/\n&/g' <<<\"\$1\" | grep '^class=\"row\" data-rank=\"1\"' | grep -q 'class=\"stall\"'" _ "$dom"
check html_stall_not_elsewhere "a stall on another rank's row" -- \
	bash -c "! sed 's/class=\"row\"/\n&/g' <<<\"\$1\" | grep -E '^class=\"row\" data-rank=\"[02]\"' | grep -q 'class=\"stall\"'" _ "$dom"
check html_phases "no phase slices drawn" -- test "$(grep -o 'class="slice"' <<<"$dom" | wc -l)" -ge 9
check html_finding "the finding is not listed" -- grep -q 'STALL rank 1' <<<"$dom"
# the heat map under the phases: cells where each rank moved bytes, and on the culprit's row a
# gap (columns with nothing moved) between its first cell and its last: the stall
# (a canvas a row; the columns it drew, in its data-cols)
heat_cols() { sed 's/class="row"/\n&/g' <<<"$dom" | grep "^class=\"row\" data-rank=\"$1\"" |
	grep -o '<canvas class="heat"[^>]*data-cols="[0-9,]*"' | grep -o '"[0-9,]*"$' | tr -d '"' |
	tr ',' ' '; }
check html_heat_rows "heat cells per row: 0: $(heat_cols 0)/ 1: $(heat_cols 1)/ 2: $(heat_cols 2)" -- \
	test -n "$(heat_cols 0)" -a -n "$(heat_cols 1)" -a -n "$(heat_cols 2)"
# the wait-for graph at the finding: the culprit its root, its waiters the nodes, every one of
# them, each drawn once
wfg=$(grep -o '<svg class="wfg"[^>]*>.*</svg>' <<<"$dom" | head -1)
check html_wait_graph "graph: ${wfg:0:600}" -- bash -c '
	grep -q "data-root=\"1\"" <<<"$1" && grep -q "class=\"node culprit\" data-rank=\"1\"" <<<"$1" &&
	test "$(grep -o "class=\"node waiter\" data-ranks=\"[0-9,]*\"" <<<"$1" | grep -o "[0-9,]*\"$" |
		tr -d "\"" | tr "," "\n" | sort -n | paste -sd,)" = 0,2' _ "$wfg"
check html_heat_gap "rank 1's heat columns: $(heat_cols 1)" -- \
	awk '{ if (NF >= 2 && $NF - $1 + 1 > NF) ok = 1 } END { exit !ok }' <<<"$(heat_cols 1)"
# the spans: red on the culprit's row from when the wait began, within a snapshot (1 s) of the
# fault (the job's marker, on the dump's clock); amber on each row that waited on it, the same
# span; a mark where each rank exited
row_of() { sed 's/class="row"/\n&/g' <<<"$1" | grep "^class=\"row\" data-rank=\"$2\""; }
span_s() { grep -o "class=\"$2\" data-finding=\"1\" data-s=\"[0-9.]*\" data-t=\"[0-9.]*\"" <<<"$1" |
	head -1 | sed -E 's/.*data-s="([0-9.]*)" data-t="([0-9.]*)"/\1 \2/'; }
export -f row_of span_s
fault_s=$(awk -v m="$(marker_ns "$TMP/pm.out")" -v h="$(head -1 "$D" | jq -r '"\(.boot_to_realtime_ns) \(.start_ns)"')" \
	'BEGIN { split(h, x, " "); printf "%.3f", (m - x[1] - x[2]) / 1e9 }')
red=$(span_s "$(row_of "$dom" 1)" stall)
check html_stall_time "red span ${red:-none} s, fault at $fault_s s" -- \
	awk -v r="$red" -v f="$fault_s" 'BEGIN { split(r, x, " "); d = x[1] - f; exit !(r != "" && d < 1.0 && d > -1.0 && x[2] > x[1]) }'
check html_wait_amber "amber spans: rank 0 $(span_s "$(row_of "$dom" 0)" wait), rank 2 $(span_s "$(row_of "$dom" 2)" wait), rank 1 $(span_s "$(row_of "$dom" 1)" wait)" -- \
	bash -c 'test "$(span_s "$(row_of "$1" 0)" wait)" = "$2" -a "$(span_s "$(row_of "$1" 2)" wait)" = "$2" -a -z "$(span_s "$(row_of "$1" 1)" wait)"' _ "$dom" "$red"
check html_exit_marks "marks: $(grep -o 'class="mark[^"]*"[^>]*title="[^"]*"' <<<"$dom" | tr '\n' ';')" -- \
	test "$(grep -o 'class="mark\( end\)\?" data-s="[0-9.]*" title="exited with status 0 at [^"]*"' <<<"$dom" | wc -l)" -eq 3
# the graph's edges carry the finding's evidence on hover
ev1=$("$NT" report --json "$D" | jq -r '.findings[0].evidence[0]' | sed 's/&/\&amp;/g; s/</\&lt;/g; s/>/\&gt;/g')
check html_edge_evidence "edge titles: $(grep -o '<g class="edge"[^>]*><title>[^<]*' <<<"$wfg" | head -c 400)" -- \
	bash -c 'grep -o "<g class=\"edge\"[^>]*><title>[^<]*" <<<"$1" | grep -qF -- "$2"' _ "$wfg" "$ev1"
# the address opens a rank's connections (#rank=1: each with its sparkline) and puts the
# time cursor (#t=S): the finding open then is outlined, its edges say how long by then
mid=$(awk -v r="$red" 'BEGIN { split(r, x, " "); printf "%.2f", (x[1] + x[2]) / 2 }')
dom2=$(timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --dump-dom "file://$H#rank=1&t=$mid" 2>/dev/null | tr '\n' ' ')
panel=$(grep -o '<div class="conns" data-rank="1">.*' <<<"$dom2" | sed 's/<div class="row".*//')
check html_rank_conns "panel: ${panel:0:500}" -- bash -c '
	test "$(grep -o "<div class=\"conn\" data-conn=\"[0-9a-f]*\"><svg class=\"spark\"[^>]*><polyline points=\"[0-9., ]*\"" <<<"$1" | wc -l)" -ge 2 &&
	grep -q "127.0.0.1:[0-9]* -&gt; 127.0.0.1:[0-9]* (peer pid [0-9]*)" <<<"$1"' _ "$panel"
check html_cursor_on "cursor at $mid: $(grep -o 'id="cursor" data-s="[0-9.]*"' <<<"$dom2"), finding: $(grep -o 'class="finding[^"]*"' <<<"$dom2")" -- bash -c '
	grep -q "class=\"finding[a-z ]* at-cursor\" id=\"f1\"" <<<"$1" && grep -q "<text class=\"at\"[^>]*>at [0-9.]* s: waiting [0-9.]* s<" <<<"$1"' _ "$dom2"
dom3=$(timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --dump-dom "file://$H#t=0.05" 2>/dev/null | tr '\n' ' ')
check html_cursor_off "before the stall: $(grep -o 'class="finding[^"]*"' <<<"$dom3")" -- bash -c '
	grep -q "class=\"finding[a-z ]*\" id=\"f1\"" <<<"$1" && ! grep -q "class=\"finding[a-z ]*at-cursor" <<<"$1" && grep -q "<text class=\"at\"[^>]*></text>" <<<"$1"' _ "$dom3"
end_checks
