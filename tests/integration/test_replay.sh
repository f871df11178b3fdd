#!/bin/bash
# SPDX-License-Identifier: MIT
# `nccltrace replay`: a dump served as its tracer served it live. A 4-rank fake-NCCL job in which
# rank 1 sleeps 6 s, traced with --listen and its /state fetched ten times a second: the replay of
# its dump, held at each moment a state record was written, serves the page the live tracer
# served then (the whole "state", host, loopback, command, threshold; the findings then open).
# /state?since=SEQ answers with what changed (a delta frame) on the live tracer and on the
# replay. Then the scale by replay: 16 nodes out of the stall dump and a healthy one (64 ranks),
# `watch` over the 16 /state endpoints names rank 1 on node 0 and nothing else, each node its
# ranks at an offset and its own loopback; 16 healthy nodes: no finding. Bad input: one line,
# the right exit status.
# checks: 24
. "$(dirname "$0")/lib.sh"

trap 'exit 143' TERM INT HUP
need_fixture replay "$ROOT/build/nccljob" "$ROOT/build/fakenccl/libnccl.so.2" || end_checks
if ! command -v curl >/dev/null; then
	skip_rest replay "curl is missing (scripts/install-deps.sh installs it)"
	end_checks
fi
if ! "$NT" run --listen 127.0.0.1:0 -- true >/dev/null 2>&1; then
	skip_rest replay "this build has no --listen (the static one): make builds one that has"
	end_checks
fi
export LD_LIBRARY_PATH=$ROOT/build/fakenccl
PORT=$((20000 + $$ % 20000))
BASE=$((PORT + 10))

# --- the job, live: its pages as fetched
D=$TMP/stall.jsonl
mkdir -p "$TMP/pages"
"$NT" run --no-tui -t 3 --listen 127.0.0.1:$PORT --dump "$D" -- "$ROOT/build/nccljob" --ranks 4 \
	--iters 150 --step-delay 0.05 --fault in-collective --fault-rank 1 --fault-for 6 \
	--timeout 60 >"$TMP/stall.out" 2>&1 &
T=$!
wait_for 10 curl -sf -o /dev/null "http://127.0.0.1:$PORT/state"
# twenty a second from one curl (one process, one connection: a tick of 200 ms is fetched
# about four times, however loaded the machine), 100 pages a batch
i=0
b=0
delta_live=
while kill -0 $T 2>/dev/null; do
	args=()
	for k in $(seq $i $((i + 99))); do args+=(-o "$TMP/pages/$k.json" "http://127.0.0.1:$PORT/state"); done
	curl -s -m 10 --rate 20/s "${args[@]}"
	i=$((i + 100))
	b=$((b + 1))
	# once mid-job: a client's two answers, the second what changed since the first
	if [ $b = 1 ]; then
		curl -s -m 1 "http://127.0.0.1:$PORT/state?since=0" >"$TMP/live-whole.json"
		s=$(jq -r .seq "$TMP/live-whole.json")
		curl -s -m 1 "http://127.0.0.1:$PORT/state?since=$s" >"$TMP/live-delta.json"
		delta_live=$(jq -r '"\(.delta) \(.since)"' "$TMP/live-delta.json" 2>/dev/null)
	fi
done
wait $T
i=$(find "$TMP/pages" -name '*.json' -size +0 | wc -l)
own_pkill "$ROOT/build/nccljob"
check live_pages "$i pages fetched" -- test "$i" -ge 50
check live_since_delta "the second answer: delta/since '$delta_live' (seq $s), $(wc -c <"$TMP/live-delta.json") bytes against $(wc -c <"$TMP/live-whole.json")" -- \
	test "$delta_live" = "true $s" -a "$(wc -c <"$TMP/live-delta.json")" -lt \
	"$(wc -c <"$TMP/live-whole.json")"

# every page fetched at the tick of a state record: held there, the replay serves it again
"$NT" cat "$D" | jq -r 'select(.type == "state") | .ts_ns' >"$TMP/ts"
FIRST=$(head -1 "$TMP/ts")
# the pages of a state record's tick: at most 4 with a finding open and 4 without
for f in "$TMP"/pages/*.json; do
	jq -r '"\(.state.now_ns) \(input_filename) \(.findings | length > 0)"' "$f" 2>/dev/null
done | sort -u -k1,1 | join - <(sort "$TMP/ts") >"$TMP/matched.all"
{ grep ' true$' "$TMP/matched.all" | head -4; grep ' false$' "$TMP/matched.all" | head -4; } |
	cut -d' ' -f1,2 >"$TMP/matched"
same=0
differ=0
NORM='del(.realtime_ns, .boot_to_realtime_ns, .replay, .seq, .findings)'
while read -r ts page; do
	from=$(awk -v a="$ts" -v b="$FIRST" 'BEGIN { printf "%.9f", (a - b) / 1e9 }')
	"$NT" replay --speed 0 --from "$from" --listen 127.0.0.1:$BASE "$D" 2>"$TMP/r.err" &
	R=$!
	wait_for 5 curl -sf -o "$TMP/rep.json" "http://127.0.0.1:$BASE/state"
	kill -TERM $R
	wait $R
	rrc=$?
	if [ -n "$(diff <(jq -S "$NORM" "$page") <(jq -S "$NORM" "$TMP/rep.json"))" ] ||
		[ "$(jq -c '[.findings[] | [.id, .kind, .rank]]' "$page")" != \
		"$(jq -c '[.findings[] | [.id, .kind, .rank]]' "$TMP/rep.json")" ]; then
		differ=$((differ + 1))
		cp "$page" "$TMP/differ-live.json"
		cp "$TMP/rep.json" "$TMP/differ-replay.json"
	else
		same=$((same + 1))
	fi
	# a stall's page: its finding, in the live page and the replay's
	jq -e '.findings | length > 0' "$page" >/dev/null && stalled=$page
done <"$TMP/matched"
check replay_same_page "$same pages the same, $differ not: $(diff <(jq -S "$NORM" "$TMP/differ-live.json" 2>/dev/null) <(jq -S "$NORM" "$TMP/differ-replay.json" 2>/dev/null) | head -c 600)" -- \
	test "$same" -ge 2 -a "$differ" -eq 0
check replay_stops "exit $rrc on SIGTERM; $(head -c 300 "$TMP/r.err")" -- test "$rrc" -eq 0
check replay_stall_finding "a live page of the stall matched: ${stalled:-none}" -- test -n "${stalled:-}"
check replay_says_replay "replay: $(jq -c .replay "$TMP/rep.json")" -- \
	jqe ".replay.dump == \"$D\" and .replay.node == 0" <"$TMP/rep.json"

# what changed on the replay: the same state again, nothing but references
"$NT" replay --speed 0 --from 1 --listen 127.0.0.1:$BASE "$D" 2>/dev/null &
R=$!
wait_for 5 curl -sf -o "$TMP/rw.json" "http://127.0.0.1:$BASE/state?since=0"
s=$(jq -r .seq "$TMP/rw.json")
curl -s "http://127.0.0.1:$BASE/state?since=$s" >"$TMP/rd.json"
kill -TERM $R
wait $R
check replay_since_delta "$(jq -c '{delta, since, conns: .state.conns}' "$TMP/rd.json" | head -c 300)" -- \
	jqe ".delta == true and .since == $s and (.state.conns | all(type != \"object\"))" <"$TMP/rd.json"

# --- the scale: 16 nodes out of the stall dump (node 0) and a healthy one
H=$TMP/healthy.jsonl
"$NT" run --no-tui -t 3 --dump "$H" -- "$ROOT/build/nccljob" --ranks 4 --iters 150 \
	--step-delay 0.05 --timeout 60 >"$TMP/healthy.out" 2>&1
own_pkill "$ROOT/build/nccljob"
check healthy_dump "findings: $(findings "$H" | jq -c 'map({kind, rank})')" -- \
	test "$(findings "$H" | jq length)" -eq 0
EPS=$(for k in $(seq 0 15); do echo -n "127.0.0.1:$((BASE + k)) "; done)
HOST=$(jq -r 'select(.nccltrace) | .host' "$D" | head -1)
"$NT" replay --nodes 16 --listen 127.0.0.1:$BASE "$D" "$H" 2>"$TMP/r16.err" &
R=$!
wait_for 5 curl -sf -o /dev/null "http://127.0.0.1:$((BASE + 15))/state"
# shellcheck disable=SC2086
"$NT" watch --no-tui $EPS >"$TMP/w16.out" 2>"$TMP/w16.err" &
W=$!
# mid-stall (the dump's finding opened OPEN s after its first state): watch --once as well
OPEN=$("$NT" cat "$D" | jq -r "select(.type == \"finding\" and .event == \"open\") |
	(.ts_ns - $FIRST) / 1e9 | ceil" | head -1)
sleep $((OPEN + 1))
# shellcheck disable=SC2086
"$NT" watch --once --json $EPS >"$TMP/once16.json" 2>"$TMP/once16.err"
curl -s "http://127.0.0.1:$((BASE + 5))/state" >"$TMP/node5.json"
DUR=$("$NT" cat "$D" | jq -s '[.[] | select(.type == "state") | .ts_ns] | (max - min) / 1e9 | ceil')
sleep $((DUR - OPEN))
kill -TERM $W
wait $W
kill -TERM $R
wait $R
check scale16_culprit "watch --once: $(jq -c '[.findings[] | {kind, rank, host}]' "$TMP/once16.json")" -- \
	jqe ".findings | length == 1 and .[0].rank == 1 and .[0].host == \"$HOST-0\" and
	(.[0].kind == \"stall\")" <"$TMP/once16.json"
opened=$(grep -cE '^nccltrace: [A-Z_]+ [0-9.]+s' "$TMP/w16.out")
check scale16_one_finding "watch opened $opened: $(grep -E '^nccltrace: ' "$TMP/w16.out" | head -3)" -- \
	test "$opened" -eq 1
check scale16_first_names_rank1 "$(grep -m1 -E '^nccltrace: [A-Z_]+ [0-9.]+s' "$TMP/w16.out")" -- \
	grep -qE "^nccltrace: STALL [0-9.]+s.* rank 1 " "$TMP/w16.out"
check scale16_offsets "node 5: $(jq -c '[.state.procs[] | [.rank, .world_size]]' "$TMP/node5.json")" -- \
	jqe '[.state.procs[] | select(.rank != null and .rank >= 0)] | length == 4 and
	(map(.rank) | sort == [20, 21, 22, 23]) and all(.world_size == 64)' <"$TMP/node5.json"
check scale16_host_loopback "node 5: $(jq -c '{host, loopback}' "$TMP/node5.json")" -- \
	jqe ".host == \"$HOST-5\" and (.loopback | endswith(\"#5\"))" <"$TMP/node5.json"
check watch_cost_told "watch's stderr: $(head -c 300 "$TMP/w16.err")" -- \
	grep -qE 'watch: [0-9]+ rounds in .* of CPU a round .* peak RSS' "$TMP/w16.err"

# 16 healthy nodes: nothing
"$NT" replay --nodes 16 --listen 127.0.0.1:$BASE "$H" 2>/dev/null &
R=$!
wait_for 5 curl -sf -o /dev/null "http://127.0.0.1:$((BASE + 15))/state"
# more tracers than are listed one by one, one of them not there: the count, and that one
# shellcheck disable=SC2086
"$NT" watch --once $EPS 127.0.0.1:$((BASE + 16)) >"$TMP/once17.txt" 2>&1
check once_many_tracers "$(tail -3 "$TMP/once17.txt")" -- \
	bash -c 'grep -qx "16 of 17 tracers answered" "$1" && grep -q "^  127.0.0.1:$2: " "$1" &&
	! grep -q "^127.0.0.1:" "$1"' _ "$TMP/once17.txt" $((BASE + 16))
# shellcheck disable=SC2086
"$NT" watch --no-tui $EPS >"$TMP/wh.out" 2>/dev/null &
W=$!
sleep 8
kill -TERM $W
wait $W
kill -TERM $R
wait $R
check scale16_healthy_quiet "$(grep -E '^nccltrace: ' "$TMP/wh.out" | head -3)" -- \
	test "$(grep -cE '^nccltrace: [A-Z_]+ [0-9.]+s' "$TMP/wh.out")" -eq 0

# --- the merged text of a job too big to read rank by rank: 17 copies of the stall dump, each
# its own host (68 ranks): each culprit's rank in full, the others a line per host and state
mkdir -p "$TMP/many"
head -1 "$D" >"$TMP/many/head"
for k in $(seq 0 16); do
	{ sed -e "s/\"host\":\"[^\"]*\"/\"host\":\"h$k\"/" \
		-e "s/\"loopback\":\"\([^\"]*\)\"/\"loopback\":\"\1#$k\"/" "$TMP/many/head"
	  tail -n +2 "$D"; } >"$TMP/many/n$k.jsonl"
done
"$NT" report "$TMP"/many/n*.jsonl >"$TMP/many.txt" 2>&1
"$NT" report --json "$TMP"/many/n*.jsonl >"$TMP/many.json" 2>/dev/null
full=$(sed -n '/^ranks: /,$p' "$TMP/many.txt" | grep -c '^  rank [0-9]* (pid ')
named=$(jq '[.findings[] | select(.rank != null) | "\(.host) \(.rank)"] | unique | length' "$TMP/many.json")
grouped=$(sed -n 's/^  h[0-9]*: \([0-9]*\) ranks\{0,1\} (.*/\1/p' "$TMP/many.txt" |
	awk '{ s += $1 } END { print s + 0 }')
check report_groups_many_ranks "$(grep '^ranks: ' "$TMP/many.txt"); $full in full, $named culprits named, ${grouped:-0} in groups" -- \
	test "$(grep -c '^ranks: 68, more than 64' "$TMP/many.txt")" -eq 1 -a "$full" -eq "$named" \
	-a "$named" -ge 1 -a "$((full + ${grouped:-0}))" -eq 68

# --- bad input: one line each, the right status
out=$("$NT" replay 2>&1)
rc=$?
check bad_no_dump "exit $rc: $out" -- error_is 64 $rc "$out"
out=$("$NT" replay "$TMP/none.jsonl" 2>&1)
rc=$?
check bad_missing "exit $rc: $out" -- error_is 66 $rc "$out"
printf 'garbage\n' >"$TMP/bad.jsonl"
out=$("$NT" replay "$TMP/bad.jsonl" 2>&1)
rc=$?
check bad_corrupt "exit $rc: $out" -- error_is 65 $rc "$out"
head -1 "$D" >"$TMP/nostate.jsonl"
out=$("$NT" replay "$TMP/nostate.jsonl" 2>&1)
rc=$?
check bad_no_states "exit $rc: $out" -- error_is 65 $rc "$out"
out=$("$NT" replay --nodes 1 "$D" "$H" 2>&1)
rc=$?
check bad_fewer_nodes "exit $rc: $out" -- error_is 64 $rc "$out"
out=$("$NT" replay --speed -1 "$D" 2>&1)
rc=$?
check bad_speed "exit $rc: $out" -- error_is 64 $rc "$out"
# a port taken: 69, and nothing left listening
"$NT" replay --listen 127.0.0.1:$BASE "$H" 2>/dev/null &
R=$!
wait_for 5 curl -sf -o /dev/null "http://127.0.0.1:$BASE/state"
out=$("$NT" replay --listen 127.0.0.1:$BASE "$D" 2>&1)
rc=$?
kill -TERM $R
wait $R
check bad_port_taken "exit $rc: $out" -- error_is 69 $rc "$out"
end_checks
