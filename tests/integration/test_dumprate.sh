#!/bin/bash
# SPDX-License-Identifier: MIT
# Dumps for long jobs (format 2): snapshots written as what changed since the last, and, while
# the job runs calm, one kept in the ring's half-span with the last span held in memory and
# written whole the moment a finding opens (the pre-trigger ring). The fake NCCL job, 4 ranks,
# a rank asleep for 5 s in the middle; the ring's span shortened to 6 s (NCCLTRACE_RING_S, the
# tests' knob: a minute by default) so that a calm stretch is thinned within seconds. The same
# run with --dump-detail full (every second written) gives the same finding; both footers say
# what the frames cost the tracer's CPU (dump_cpu_s). nccltrace cat
# makes every frame whole for jq; a frame cut from its key frame is a clear error at its line;
# a dump cut inside a frame (a tracer killed while writing) still reads; a dump of format 1
# reads as it did; cat's bad input is a one-line error. A third run side by side writes a ".zst"
# dump: zstd frames of a second's records, read as the others; cut in its middle, the frames
# before the cut read; a frame spoilt, an error at its place. A fourth, of 2 ranks at full
# detail, under --max-dump-bytes 256K: the file stays within it, and the footer and report say
# what was left out. Frames of another dump format (a delta frame in a format 1 dump, a dump of
# another format joined on) are errors at their line, with the records before them read. The
# end: a job that ends clean leaves its calm last span thinned (the ring's frames not kept are
# dropped), one the launcher kills (exit 124) has it written whole.
# checks: 34
# lane: long 60
. "$(dirname "$0")/lib.sh"

NJ=$ROOT/build/nccljob
need_fixture dumprate "$NJ" || end_checks
RING=6
A=$TMP/adaptive.jsonl
F=$TMP/full.jsonl
Z=$TMP/compressed.jsonl.zst

# the two runs side by side: the same job, the same fault, 4 ranks each
JOB=("$NJ" --ranks 4 --iters 800 --fault in-collective --fault-rank 2 --fault-for 5 --timeout 90)
NCCLTRACE_RING_S=$RING "$NT" run --no-tui -t 2 --dump "$A" -- "${JOB[@]}" >"$TMP/a.out" 2>&1 &
pa=$!
NCCLTRACE_RING_S=$RING "$NT" run --no-tui -t 2 --dump-detail full --dump "$F" -- "${JOB[@]}" \
	>"$TMP/f.out" 2>&1 &
pf=$!
NCCLTRACE_RING_S=$RING "$NT" run --no-tui -t 2 --dump "$Z" -- "${JOB[@]}" >"$TMP/z.out" 2>&1 &
pz=$!
BU=$TMP/budget.jsonl
NCCLTRACE_RING_S=$RING "$NT" run --no-tui -t 2 --dump-detail full --max-dump-bytes 256K \
	--dump "$BU" -- "$NJ" --ranks 2 --iters 800 --fault in-collective --fault-rank 1 \
	--fault-for 5 --timeout 90 >"$TMP/b.out" 2>&1 &
pb=$!
# a calm job killed by its launcher's timeout (exit 124): its last span is news
K=$TMP/killed.jsonl
NCCLTRACE_RING_S=$RING "$NT" run --no-tui -t 2 --dump "$K" -- "$NJ" --ranks 2 --iters 100000 \
	--timeout 16 >"$TMP/k.out" 2>&1 &
pk=$!
wait $pa
ra=$?
wait $pf
rf=$?
wait $pz
rz=$?
wait $pb
rb=$?
wait $pk
rk=$?
own_pkill "$NJ"

# --- the finding, in both ---
fa=$(findings "$A")
ff=$(findings "$F")
check adaptive_finding "exit $ra; findings $(jq -c 'map({kind, rank, pid})' <<<"$fa"); marker: rank 2 pid $(marker_pid "$TMP/a.out")" -- \
	test "$ra" = 0 -a "$(jq length <<<"$fa")" = 1 -a "$(culprit "$fa")" = "rank 2 pid $(marker_pid "$TMP/a.out")"
check full_finding "exit $rf; findings $(jq -c 'map({kind, rank, pid})' <<<"$ff"); marker: rank 2 pid $(marker_pid "$TMP/f.out")" -- \
	test "$rf" = 0 -a "$(jq length <<<"$ff")" = 1 -a "$(culprit "$ff")" = "rank 2 pid $(marker_pid "$TMP/f.out")"
# the same finding: kind, rank, and since (from each dump's start) within a second
sa=$(jq -r '.[0] | "\(.kind) \(.rank)"' <<<"$fa")
sf=$(jq -r '.[0] | "\(.kind) \(.rank)"' <<<"$ff")
# since_s: how long the finding's wait had lasted as it opened
da=$(jq -r '.[0].since_s' <<<"$fa")
df=$(jq -r '.[0].since_s' <<<"$ff")
check same_finding "adaptive: $sa, since_s $da; full: $sf, since_s $df" -- \
	awk -v a="$da" -v f="$df" -v x="$sa" -v y="$sf" 'BEGIN { d = a - f; exit !(x == y && x ~ /^[a-z_]+ [0-9]+$/ && d < 1 && d > -1) }'

# --- what each wrote ---
t0=$(head -1 "$A" | jq .start_ns)
open=$(jq -r 'select(.type=="finding" and .event=="open") | .ts_ns' "$A" | head -1)
# seconds from the start of each snapshot in the adaptive dump
mapfile -t snaps < <(whole "$A" | jq -r "select(.type==\"snapshot\") | (.ts_ns - $t0) / 1e9")
o=$(awk -v o="${open:-0}" -v t="$t0" 'BEGIN { printf "%.3f", (o - t) / 1e9 }')
echo "# adaptive: snapshots at ${snaps[*]}; the finding opened at $o s"
# the pre-trigger ring: the span before the finding at full resolution, the job calm then
win=$(printf '%s\n' "${snaps[@]}" | awk -v o="$o" -v r=$RING '$1 >= o - r + 1 && $1 < o' | wc -l)
gap=$(printf '%s\n' "${snaps[@]}" | awk -v o="$o" -v r=$RING '$1 >= o - r + 1 && $1 <= o + 0.5 {
	if (n++ && $1 - p > m) m = $1 - p; p = $1 } END { printf "%d", m * 1000 }')
check pre_trigger "$win snapshots in the $((RING - 1)) s before the finding (want $((RING - 2)) or more), the longest gap $gap ms (want <= 1500)" -- \
	test "$win" -ge $((RING - 2)) -a "$gap" -le 1500
# before that window, from the start + span (calm) to the window: one kept in RING/2 s
calm=$(printf '%s\n' "${snaps[@]}" | awk -v o="$o" -v r=$RING '$1 >= r + 1 && $1 < o - r - 1' | wc -l)
span=$(awk -v o="$o" -v r=$RING 'BEGIN { printf "%d", o - 2 * r - 2 }')
check calm_thinned "$calm snapshots in the $span s of calm before the window (want at most $((span * 2 / RING + 2)), and fewer than $span)" -- \
	test "$span" -ge 4 -a "$calm" -le $((span * 2 / RING + 2)) -a "$calm" -lt "$span"
ft=$(tail -1 "$A")
check footer_thinned "footer: $(jq -c .snapshots <<<"$ft")" -- \
	jqe '.type == "footer" and .snapshots.thinned > 0 and .snapshots.held > .snapshots.thinned' <<<"$ft"
# what the frames cost the tracer: a part of its CPU, in both footers
check footer_dump_cpu "adaptive: $(jq -c '.totals | {dump_cpu_s, tracer_cpu_s}' <<<"$ft"); full: $(tail -1 "$F" | jq -c '.totals | {dump_cpu_s, tracer_cpu_s}')" -- \
	jqe -s 'map(.totals | .dump_cpu_s > 0 and .dump_cpu_s < .tracer_cpu_s) == [true, true]' < <(tail -qn1 "$A" "$F")
# full: a snapshot every second from start to end, none held (a gap under 2 s: a tick slips by a
# few ms on 2 loaded CPUs under ASan, 1518 ms seen; the calm rate would leave RING/2 = 3 s)
# (a gap needs two snapshots: fewer, and there is no gap to measure, no pass)
fts=$(whole "$F" | jq -r 'select(.type=="snapshot") | .ts_ns')
nfs=$(grep -c . <<<"$fts")
fgap=$(awk 'NR > 1 && $1 - p > m { m = $1 - p } { p = $1 } END { printf "%d", m / 1e6 }' <<<"$fts")
check full_every_second "--dump-detail full: $nfs snapshots (want at least 2), the longest gap between them $fgap ms; footer $(tail -1 "$F" | jq -c .snapshots)" -- \
	test "$nfs" -ge 2 -a "${fgap:-99999}" -lt 2000 -a "$(tail -1 "$F" | jq .snapshots.held)" = 0
echo "# sizes: adaptive $(stat -c %s "$A") B, full $(stat -c %s "$F") B"
# the end: snapshots in the last span before the footer, less its last 1.5 s (where the ranks
# close their connections: a frame that says one closed is kept)
tail_snaps() {
	local end
	end=$(tail -1 "$1" | jq .ts_ns)
	whole "$1" | jq -r "select(.type==\"snapshot\") | ($end - .ts_ns) / 1e9" |
		awk -v r=$RING '$1 > 1.5 && $1 <= r' | wc -l
}
ea=$(tail_snaps "$A")
check clean_end "exit $ra (clean), footer $(tail -1 "$A" | jq -c .snapshots): $ea snapshots in the last $RING s before the footer but its last 1.5 (want at most 2: one kept in $((RING / 2)) s)" -- \
	test "$ra" = 0 -a "$ea" -le 2
ek=$(tail_snaps "$K")
check killed_end "exit $rk (killed by the job's timeout), footer $(tail -1 "$K" | jq -c .snapshots): $ek snapshots in the last $RING s before the footer but its last 1.5 (want $((RING - 3)) or more: the ring whole)" -- \
	test "$rk" = 124 -a "$ek" -ge $((RING - 3))

# --- format 2: key frames, then deltas that refer to them ---
check format_2 "header: $(head -1 "$A" | jq -c '{nccltrace}')" -- jqe '.nccltrace == 2' < <(head -1 "$A")
first=$(grep -m1 '^{"type":"snapshot"' "$A")
nd=$(grep -c '^{"type":"snapshot".*"delta":true' "$A")
check deltas_written "first snapshot key: $(jq .key <<<"$first"); $nd delta snapshots" -- \
	test "$(jq .key <<<"$first")" = true -a "$nd" -ge 10
refs=$(grep '^{"type":"snapshot".*"delta":true' "$A" | jq '[.conns[] | select(type != "object")] | length' | awk '{ s += $1 } END { print s + 0 }')
check deltas_refer "$refs connections written as references to the frame before" -- test "$refs" -gt 10
# a connection's identity (what the writer tells its sameness by) is never written
ids=$(cat "$A" "$F" | grep -c 'u0001' || true)
check no_identities "$ids lines with a control character's escape" -- test "$ids" = 0
# cat: every frame whole, every element an object, the connections of the last one as many
# as the report's ranks hold
c=$(whole "$A")
check cat_whole "cat: $(grep -c '"delta"' <<<"$c") records still marked delta, $(jq -s '[.[] | select(.type=="snapshot") | .conns[] | select(type != "object")] | length' <<<"$c") references left" -- \
	jqe -s '([.[] | select(has("delta") or has("key"))] | length == 0) and
		([.[] | select(.type=="snapshot") | (.procs + .conns)[] | select(type != "object")] | length == 0) and
		([.[] | select(.type=="snapshot")] | length) > 20' <<<"$c"
check cat_same_count "cat gave $(wc -l <<<"$c") records of $(wc -l <"$A") lines" -- \
	test "$(wc -l <<<"$c")" = "$(grep -c . "$A")"

# --- bad dumps ---
# the first key frame gone: the next delta cannot be made whole; the error names its line
B=$TMP/nokey.jsonl
kl=$(grep -n -m1 '^{"type":"snapshot"' "$A" | cut -d: -f1)
sed "${kl}d" "$A" >"$B"
dl=$(grep -n -m1 '^{"type":"snapshot".*"delta":true' "$B" | cut -d: -f1)
err=$("$NT" report "$B" 2>&1 >/dev/null)
rc=$?
check nokey_error "exit $rc: $err" -- \
	bash -c '[ "$1" != 0 ] && grep -q "nokey.jsonl:$2: a snapshot delta frame with no key frame before it" <<<"$3" && [ "$(wc -l <<<"$3")" = 1 ]' _ "$rc" "$dl" "$err"
n=$("$NT" cat "$B" 2>/dev/null | wc -l)
"$NT" cat "$B" >/dev/null 2>&1
rc=$?
check nokey_cat "cat: exit $rc, $n records out (the $((dl - 1)) before the bad one)" -- \
	test "$rc" = 65 -a "$n" = $((dl - 1))
# cut inside a delta frame (a tracer killed as it wrote): the records before it read
C=$TMP/cut.jsonl
cl=$(grep -n '^{"type":"snapshot".*"delta":true' "$A" | sed -n 5p | cut -d: -f1)
{
	head -n $((cl - 1)) "$A"
	sed -n "${cl}p" "$A" | head -c 200
} >"$C"
out=$("$NT" report --json "$C" 2>"$TMP/cut.err")
rc=$?
# jqe: a report with no output is no pass
r4=$(jqe '.ranks | length == 4' <<<"$out" && echo yes || echo no)
check cut_reads "exit $rc, $(head -c 300 "$TMP/cut.err"); its report has 4 ranks: $r4 ($(jq -c '.ranks | length' <<<"$out" 2>&1 | head -c 100))" -- \
	bash -c '[ "$1" = 0 ] && grep -q "the last record was cut short" "$2" && [ "$3" = yes ]' _ "$rc" "$TMP/cut.err" "$r4"
# --- compressed: a ".zst" dump is zstd frames, about one a second ---
frames=$(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$Z" | wc -l)
check zst_frames "$(stat -c %s "$Z") bytes, $frames zstd frames; first bytes $(head -c 4 "$Z" | od -An -tx1 | tr -d ' ')" -- \
	test "$(head -c 4 "$Z" | od -An -tx1 | tr -d ' ')" = 28b52ffd -a "$frames" -ge 10
fz=$(findings "$Z")
check zst_finding "exit $rz; findings $(jq -c 'map({kind, rank, pid})' <<<"$fz"); marker: rank 2 pid $(marker_pid "$TMP/z.out")" -- \
	test "$rz" = 0 -a "$(jq length <<<"$fz")" = 1 -a "$(culprit "$fz")" = "rank 2 pid $(marker_pid "$TMP/z.out")"
# cat reads it from a file and from a pipe alike
zc=$(whole "$Z")
zp=$(cat "$Z" | "$NT" cat /dev/stdin | md5sum)
zs=$(md5sum <<<"$zc")
zok=$(jq -s '(.[0].nccltrace == 2) and (.[-1].type == "footer") and ([.[] | select(.type=="snapshot")] | length > 20) and ([.[] | select(has("delta"))] | length == 0)' <<<"$zc")
check zst_cat "cat: $(wc -l <<<"$zc") records, $(jq -s '[.[] | select(.type=="snapshot")] | length' <<<"$zc") snapshots, the last a $(tail -1 <<<"$zc" | jq -r .type), whole: $zok; from a pipe the same: $([ "$zp" = "$zs" ] && echo yes || echo no)" -- \
	test "$zok" = true -a "$zp" = "$zs"
# cut in its middle (a tracer killed while writing a frame): the frames before it read
ZC=$TMP/cut.jsonl.zst
head -c $(($(stat -c %s "$Z") / 2)) "$Z" >"$ZC"
out=$("$NT" report --json "$ZC" 2>"$TMP/zcut.err")
rc=$?
r4=$(jqe '.ranks | length == 4' <<<"$out" && echo yes || echo no)
check zst_cut "exit $rc, $(head -c 300 "$TMP/zcut.err"); its report has 4 ranks: $r4 ($(jq -c '.ranks | length' <<<"$out" 2>&1 | head -c 100))" -- \
	bash -c '[ "$1" = 0 ] && grep -q "its last compressed frame was cut short" "$2" && [ "$3" = yes ]' _ "$rc" "$TMP/zcut.err" "$r4"
# a frame's start overwritten: an error at its place, one line
ZB=$TMP/bad.jsonl.zst
cp "$Z" "$ZB"
at=$(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$Z" | sed -n 4p | cut -d: -f1)
printf 'XXXX' | dd of="$ZB" bs=1 seek="${at:-0}" conv=notrunc 2>/dev/null
err=$("$NT" report "$ZB" 2>&1 >/dev/null)
rc=$?
check zst_corrupt "frame 4 at byte $at spoilt: exit $rc, $err" -- \
	bash -c '[ "$1" = 65 ] && [ "$(wc -l <<<"$2")" = 1 ] && grep -q "bad.jsonl.zst:[0-9]*: corrupt compressed data after the [0-9]* records before it" <<<"$2"' _ "$rc" "$err"

# --- the budget: never past it; what it left out said in the footer and the report ---
bsz=$(stat -c %s "$BU")
bft=$(tail -1 "$BU")
# jqe: an empty dump (no footer at all) is no pass
bfk=$(jqe '.type == "footer" and .budget.bytes == 262144 and .budget.written <= 262144' <<<"$bft" && echo yes || echo no)
check budget_kept "exit $rb; $bsz bytes under a budget of 262144; footer $(jq -c .budget <<<"$bft" 2>&1) (within it: $bfk)" -- \
	bash -c '[ "$1" = 0 ] && [ "$2" -le 262144 ] && [ "$3" = yes ]' _ "$rb" "$bsz" "$bfk"
# at full detail 2 ranks write more than that in the job's 45 s: it was met, and said
check budget_met "footer: $(jq -c '.budget | {frames_dropped, records_dropped, met_ns}' <<<"$bft" 2>&1)" -- \
	jqe '.budget.met_ns > 0 and .budget.frames_dropped + .budget.records_dropped > 0' <<<"$bft"
br=$("$NT" report "$BU" 2>&1)
rc=$?
bj=$("$NT" report --json "$BU" 2>/dev/null)
bjk=$(jqe '.budget.bytes == 262144' <<<"$bj" && echo yes || echo no)
check budget_report "exit $rc: $(grep 'dump budget' <<<"$br"); --json: $(jq -c .budget <<<"$bj" 2>&1 | head -c 200) (256K: $bjk)" -- \
	bash -c '[ "$1" = 0 ] && grep -q "^dump budget (--max-dump-bytes): 256.0 KiB, .* written; [0-9]* calm frames thinned; met [0-9]* s into the trace: [0-9]* frames and [0-9]* records after that are not in the dump" <<<"$2" && [ "$3" = yes ]' _ "$rc" "$br" "$bjk"
out=$("$NT" run --max-dump-bytes 100K -- true 2>&1)
rc=$?
check budget_bad "exit $rc: $out" -- \
	bash -c '[ "$1" = 64 ] && [ "$(wc -l <<<"$2")" = 1 ] && grep -q "max-dump-bytes .100K.: expected bytes, at least 256K" <<<"$2"' _ "$rc" "$out"

# format 1 (a real dump of an older nccltrace, the fuzzers' seed): cat gives its records as
# they are, and report reads it
V1=$ROOT/tests/fuzz/corpus/dump/ring.jsonl
check v1_cat "cat of a format 1 dump: $("$NT" cat "$V1" 2>&1 | head -c 200 | head -1)" -- \
	bash -c 'cmp -s <("$1" cat "$2" | jq -c .) <(jq -c . "$2") && [ "$(head -1 "$2" | jq .nccltrace)" = 1 ]' _ "$NT" "$V1"
check v1_report "report of a format 1 dump: $("$NT" report --json "$V1" 2>&1 | jq -c '[.findings[] | {kind, rank}]' 2>&1)" -- \
	jqe '[.findings[] | select(.kind == "stall" and .rank == 1)] | length == 1' < <("$NT" report --json "$V1")
# frames of another format: a delta frame in a format 1 dump, a format 1 dump joined onto a
# format 2 one; each an error at its line, the records before it given
X=$TMP/v1delta.jsonl
{ cat "$V1"; grep -m1 '^{"type":"snapshot".*"delta":true' "$A"; } >"$X"
n1=$(wc -l <"$V1")
err=$("$NT" report "$X" 2>&1 >/dev/null)
rc=$?
got=$("$NT" cat "$X" 2>/dev/null | wc -l)
check other_format_delta "exit $rc: $err; cat gave $got of the $n1 records before it" -- \
	bash -c '[ "$1" = 65 ] && [ "$(wc -l <<<"$2")" = 1 ] && grep -q "v1delta.jsonl:$(($3 + 1)): a frame of dump format 2 (written as what changed) in a format 1 dump" <<<"$2" && [ "$4" = "$3" ]' _ "$rc" "$err" "$n1" "$got"
J=$TMP/joined.jsonl
cat "$A" "$V1" >"$J"
na=$(wc -l <"$A")
err=$("$NT" report "$J" 2>&1 >/dev/null)
rc=$?
check other_format_joined "exit $rc: $err" -- \
	bash -c '[ "$1" = 65 ] && [ "$(wc -l <<<"$2")" = 1 ] && grep -q "joined.jsonl:$(($3 + 1)): the header of a format 1 dump inside a format 2 one (two dumps joined?)" <<<"$2"' _ "$rc" "$err" "$na"
# cat's bad input: one line, a status of its own
out=$("$NT" cat 2>&1)
rc=$?
out2=$("$NT" cat "$TMP/none.jsonl" 2>&1)
rc2=$?
check cat_usage "no dump: exit $rc, $out; a missing one: exit $rc2, $out2" -- \
	bash -c '[ "$1" = 64 ] && [ "$3" = 66 ] && [ "$(wc -l <<<"$2")" = 1 ] && [ "$(wc -l <<<"$4")" = 1 ] && grep -q "usage: nccltrace cat DUMP" <<<"$2" && grep -q "cannot read .*none.jsonl: No such file" <<<"$4"' _ "$rc" "$out" "$rc2" "$out2"
out=$("$NT" run --dump-detail some -- true 2>&1)
rc=$?
check bad_detail "exit $rc: $out" -- \
	bash -c '[ "$1" = 64 ] && [ "$(wc -l <<<"$2")" = 1 ] && grep -q "dump-detail .some.: expected adaptive or full" <<<"$2"' _ "$rc" "$out"
end_checks
