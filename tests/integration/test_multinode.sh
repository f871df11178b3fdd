#!/bin/bash
# SPDX-License-Identifier: MIT
# A job across three emulated hosts: network namespaces on a bridge (veth pairs, addresses in
# 198.18.0.0/15, each its own hostname in a UTS namespace), one tracer per host, a 6-rank TCP ring
# split 2+2+2 in which rank 3 (host b) sleeps. Alone, no host's tracer can name it (host b's rank
# 2 waits on host a, host c's on host b). `watch` over the three tracers' /state names rank 3 on
# host b within threshold + 2 s of the wait's start, with host b's evidence; the merged `report`
# of the three dumps names it too, its page the ranks under their hosts' rows, each with its heat
# map; /metrics passes promtool; the token and listen rules hold.
# checks: 38
. "$(dirname "$0")/lib.sh"
[ -n "${KEEP_TMP:-}" ] && at_exit "cp -r $TMP /tmp/mn-keep"

# killed or interrupted, the namespaces and the background tracers go too (lib.sh's EXIT trap)
trap 'exit 143' TERM INT HUP
need_bpf multinode || end_checks
for tool in ip unshare curl; do
	if ! command -v $tool >/dev/null; then
		skip_rest multinode "$tool is missing (scripts/install-deps.sh installs it)"
		end_checks
	fi
done

THRESH=2
NS=nt$$
HOSTS=(a b c)
PORT=9464
ip netns add ${NS}sw 2>/dev/null || {
	skip_rest multinode "cannot create network namespaces here (ip netns add: not root?)"
	end_checks
}
at_exit "for h in sw a b c; do ip netns del ${NS}\$h 2>/dev/null; done"
ip -n ${NS}sw link add br0 type bridge && ip -n ${NS}sw link set br0 up
for i in 0 1 2; do
	h=${HOSTS[$i]}
	ip netns add ${NS}$h
	ip link add ${NS}h$h type veth peer name ${NS}s$h
	ip link set ${NS}h$h netns ${NS}$h
	ip link set ${NS}s$h netns ${NS}sw
	ip -n ${NS}sw link set ${NS}s$h master br0 up
	ip -n ${NS}$h addr add 198.18.0.$((i + 1))/24 dev ${NS}h$h
	ip -n ${NS}$h link set ${NS}h$h up
	ip -n ${NS}$h link set lo up
done
echo "tok-$$-$RANDOM" >"$TMP/token"
chmod 600 "$TMP/token"

# on HOST (a, b, c): CMD... in its namespaces, with its own hostname
on() {
	local h=$1
	shift
	ip netns exec ${NS}$h unshare --uts sh -c 'hostname "$0"; exec "$@"' "host-$h" "$@"
}
# bg_on HOST TAG CMD... &: the same in the background; CMD's own pid (ip netns exec may fork)
# goes to $TMP/TAG.pid, and it is ended with the script (stop_bg TAG) if it still runs
bg_on() {
	local h=$1 tag=$2
	shift 2
	exec ip netns exec ${NS}$h unshare --uts \
		sh -c 'hostname "$0"; echo $$ >"$1"; shift; exec "$@"' "host-$h" "$TMP/$tag.pid" "$@"
}
stop_bg() { [ -s "$TMP/$1.pid" ] && kill "$(cat "$TMP/$1.pid")" 2>/dev/null; true; }
at_exit "for h in a b c w; do stop_bg \$h; done"

ADDRS=198.18.0.1,198.18.0.1,198.18.0.2,198.18.0.2,198.18.0.3,198.18.0.3
# the rings' fixed ports (--port) lie below the kernel's ephemeral range (32768-60999 by
# default): a port there can be held by any outgoing connection, and a launcher that cannot
# listen leaves the other hosts' ranks waiting for it
for i in 0 1 2; do
	h=${HOSTS[$i]}
	# host a's interface name for every rank: hosts b and c have none of that name
	NCCL_SOCKET_IFNAME=${NS}ha bg_on $h $h "$NT" run --no-tui -t $THRESH --listen 198.18.0.$((i + 1)):$PORT \
		--token-file "$TMP/token" --dump "$TMP/$h.jsonl" -- "$RJ" --ranks 6 \
		--hosts $ADDRS --port 23300 --local-ranks $((2 * i))-$((2 * i + 1)) --duration 16 \
		--stall-rank 3 --stall-after 3 --stall-for 8 >"$TMP/$h.out" 2>&1 &
	eval "pid_$h=$!"
done

# the live view from host a, and when it first names rank 3 on host b (looked at every 50 ms)
WANT='STALL .*rank 3 (pid [0-9]*, host-b)'
bg_on a w "$NT" watch --no-tui --token-file "$TMP/token" 198.18.0.1:$PORT 198.18.0.2:$PORT \
	198.18.0.3:$PORT >"$TMP/watch.out" 2>"$TMP/watch.err" &
(
	for _ in $(seq 400); do
		grep -q "$WANT" "$TMP/watch.out" && date +%s%N >"$TMP/watch.seen" && break
		sleep 0.05
	done
) &
SEEN=$!

# the dashboard of watch in a real terminal (tmux), from host a
SOCK=$TMP/tmux.sock
at_exit "tmux -S '$SOCK' kill-server >/dev/null 2>&1"
tmux -S "$SOCK" new-session -d -s w -x 150 -y 40 \
	"TERM=xterm-256color ip netns exec ${NS}a $NT watch --token-file $TMP/token 198.18.0.1:$PORT 198.18.0.2:$PORT 198.18.0.3:$PORT; sleep 60"

# a round of watch --once --json while the wait lasts
wait_for 12 grep -qs "STALL rank 3" "$TMP/b.out"
# host b's /metrics once its finding is open (the job's marker says the stall began: the
# finding comes a threshold later, and lasts until the rank wakes 8 s after the marker)
(
	for _ in $(seq 60); do
		on b curl -s -H "Authorization: Bearer $(cat "$TMP/token")" \
			http://198.18.0.2:$PORT/metrics >"$TMP/metrics.txt"
		grep -q '^nccltrace_findings{host="host-b",kind="stall"} 1$' "$TMP/metrics.txt" && break
		sleep 0.1
	done
) &
MET=$!
sleep $((THRESH + 2))
wait $MET
on a "$NT" watch --once --json --token-file "$TMP/token" 198.18.0.1:$PORT 198.18.0.2:$PORT \
	198.18.0.3:$PORT >"$TMP/once.json" 2>"$TMP/once.err"
ONCE_RC=$?
CODE=$(on a curl -s -o /dev/null -w '%{http_code}' http://198.18.0.2:$PORT/state)
tmux -S "$SOCK" capture-pane -p -J -t w >"$TMP/tui.txt" 2>&1

wait $pid_a
rc_a=$?
wait $pid_b
rc_b=$?
wait $pid_c
rc_c=$?
stop_bg w
kill $SEEN 2>/dev/null
P=$(marker_pid "$TMP/b.out")
cat "$TMP"/[abc].jsonl >"$TMP/all.jsonl"

check hosts_named "hostnames: $(jq -r .host "$TMP/a.jsonl" "$TMP/b.jsonl" "$TMP/c.jsonl" 2>/dev/null | grep -v null | head -3 | tr '\n' ' ')" -- \
	test "$(for h in a b c; do head -1 "$TMP/$h.jsonl" | jq -r .host; done | tr '\n' ' ')" = "host-a host-b host-c "
check jobs_ok "launchers exited $rc_a $rc_b $rc_c, want 0 0 0" -- test "$rc_a$rc_b$rc_c" = 000
# the problem a tracer per host has alone: nobody names rank 3
check alone_blind "a host's own tracer named rank 3: $(jq -c 'select(.type=="finding" and .rank==3) | .summary' "$TMP/all.jsonl" | sort -u | head -3)" -- \
	no_record 'select(.type=="finding" and .rank==3)' "$TMP/all.jsonl"

# watch --once --json
F=$(jq -c '.findings' "$TMP/once.json" 2>/dev/null)
check once_exit "watch --once exited $ONCE_RC: $(cat "$TMP/once.err")" -- test "$ONCE_RC" -eq 0
check once_hosts "hosts: $(jq -c .hosts "$TMP/once.json")" -- \
	jqe '[.hosts[].host] == ["host-a","host-b","host-c"]' "$TMP/once.json"
check once_culprit "findings: $F" -- \
	jqe "length == 1 and .[0].kind == \"stall\" and .[0].rank == 3 and .[0].pid == $P and .[0].host == \"host-b\"" <<<"$F"
check once_evidence "no evidence from host b's /proc naming pid $P: $F" -- \
	jqe ".[0].evidence | map(select(test(\"/proc/$P/stat state S\"))) | length == 1" <<<"$F"
# ranks of the other hosts wait on it: host a's and host c's, joined by address
check once_waiters "waiters: $(jq -c '.[0].summary' <<<"$F")" -- \
	jqe '.[0].summary | test("ranks 0-2,4,5 \\(5\\) wait on it")' <<<"$F"
check once_contract "a finding without the report's fields: $F" -- \
	jqe '.[0] | has("kind") and has("rank") and has("peer_rank") and has("phase") and has("since_s") and has("summary") and has("evidence") and has("settings")' <<<"$F"

# the live view: a finding naming rank 3 on host b, within threshold + 2 s of the wait's start;
# not before 1 s, the adaptive threshold's floor (watch diagnoses the merged states with the
# rhythms they carry, so a ring that moved at every tick is called stalled from 1 s on, not -t)
check watch_names "watch printed: $(head -c 600 "$TMP/watch.out") $(sort -u "$TMP/watch.err" | head -c 300)" -- \
	grep -q "$WANT" "$TMP/watch.out"
check_latency watch "$(marker_ns "$TMP/b.out")" "$(cat "$TMP/watch.seen" 2>/dev/null)" 1000 \
	$(((THRESH + 2) * 1000)) "$(marker_quiet_ns "$TMP/b.out")"

# the dashboard: every host's ranks, each with its host, rank 3 marked as the one waited on
check tui_ranks "dashboard: $(head -12 "$TMP/tui.txt")" -- grep -q "Ranks (6)" "$TMP/tui.txt"
check tui_hosts "rank rows: $(grep -E '^[ !~] +[0-5] ' "$TMP/tui.txt" | head -6)" -- \
	test "$(grep -oE '^[ !~] +[0-5] +host-[abc]' "$TMP/tui.txt" | awk '{print $NF}' | sort -u | tr '\n' ' ')" = "host-a host-b host-c "
check tui_culprit "rank 3's row: $(grep -E '^[ !~] +3 ' "$TMP/tui.txt")" -- grep -qE '^! +3 +host-b' "$TMP/tui.txt"

# the merged post-mortem
R=$("$NT" report --json "$TMP/a.jsonl" "$TMP/b.jsonl" "$TMP/c.jsonl")
check report_culprit "merged findings: $(jq -c '[.findings[] | {kind, rank, host, summary}]' <<<"$R")" -- \
	jqe "[.findings[] | select(.rank == 3 and .pid == $P and .host == \"host-b\" and .kind == \"stall\")] | length == 1" <<<"$R"
check report_only_culprit "other culprits: $(jq -c '[.findings[] | select(.rank != 3) | .summary]' <<<"$R")" -- \
	jqe '[.findings[] | select(.rank != 3)] | length == 0' <<<"$R"
check report_clock "merged: $(jq -c .merged <<<"$R")" -- \
	jqe '(.merged.dumps | length == 3) and (.merged.clock | test("NTP")) and ([.ranks[].host] | unique == ["host-a","host-b","host-c"])' <<<"$R"
TXT=$("$NT" report "$TMP/a.jsonl" "$TMP/b.jsonl" "$TMP/c.jsonl")
check report_text "text report: $(head -c 400 <<<"$TXT")" -- \
	grep -q "rank 3 (pid $P, host-b) is sleeping" <<<"$TXT"

# host c's clock 3 s ahead (its anchor edited): the connections' two ends show it, and it is
# corrected; the finding stays
{
	head -1 "$TMP/c.jsonl" | jq -c '.boot_to_realtime_ns += 3000000000'
	tail -n +2 "$TMP/c.jsonl"
} >"$TMP/c-skew.jsonl"
RS=$("$NT" report --json "$TMP/a.jsonl" "$TMP/b.jsonl" "$TMP/c-skew.jsonl")
check skew_measured "merged: $(jq -c '.merged.dumps[] | {host, skew_s, skew_measured}' <<<"$RS")" -- \
	jqe '.merged.dumps[2] | .skew_s > 2.9 and .skew_s < 3.01 and .skew_measured.against != null' <<<"$RS"
check skew_culprit "findings: $(jq -c '[.findings[] | {rank, host}]' <<<"$RS")" -- \
	jqe '([.findings[] | select(.rank == 3 and .host == "host-b")] | length == 1) and ([.findings[] | select(.rank != 3)] | length == 0)' <<<"$RS"

# the merged trace and page: every host's ranks on one axis, the stall on rank 3's row
"$NT" convert "$TMP/a.jsonl" "$TMP/b.jsonl" "$TMP/c.jsonl" -o "$TMP/trace.json" >/dev/null
check convert_hosts "process names: $(jq -c '[.traceEvents[] | select(.name=="process_name") | .args.name]' "$TMP/trace.json" 2>&1 | head -c 300)" -- \
	jqe "[.traceEvents[] | select(.name==\"process_name\") | .args.name | select(test(\"^rank [0-5] .* on host-[abc]\$\"))] | length == 6" "$TMP/trace.json"
"$NT" report --html "$TMP/r.html" "$TMP/a.jsonl" "$TMP/b.jsonl" "$TMP/c.jsonl" >/dev/null
check html_stall_row "stalls (row, from, to, finding): $(grep -oE '"stalls":\[(\[[^]]*\],?)*\]' "$TMP/r.html" | head -c 300); rows: $(grep -o '"ranks":\[[^]]*\]' "$TMP/r.html" | grep -o '"rank":[0-9-]*' | tr '\n' ' '); findings: $(kind_ranks "$("$NT" report --json "$TMP/a.jsonl" "$TMP/b.jsonl" "$TMP/c.jsonl" | jq -c '.findings')")" -- \
	grep -q '"stalls":\[\[3,' "$TMP/r.html"
# every host's ranks in the text report's strips too, each on one grid
out=$("$NT" report "$TMP/a.jsonl" "$TMP/b.jsonl" "$TMP/c.jsonl")
check report_strips_hosts "strips: $(grep -E '^  rank [0-9]' <<<"$out" | grep '|' | head -8)" -- \
	test "$(grep -cE '^  rank [0-5]( #[0-9]+)* +\|' <<<"$out")" -eq 6
CHROMIUM=$(command -v chromium || command -v chromium-browser)
if [ -n "$CHROMIUM" ]; then
	dom=$(timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --dump-dom "file://$TMP/r.html" 2>/dev/null)
	# the rows under their host's header row, in the dumps' order: "H host-a", "R 0 host-a", ...
	seq=$(grep -oE 'class="(host" data-host="[^"]*|row" data-rank="[0-9]+" data-host="[^"]*)"' <<<"$dom" |
		sed -E 's/class="host" data-host="([^"]*)"/H \1/; s/class="row" data-rank="([0-9]+)" data-host="([^"]*)"/R \1 \2/')
	check html_host_groups "$(tr '\n' ';' <<<"$seq")" -- bash -c '
		test "$(grep -c "^H " <<<"$1")" -eq 3 && test "$(grep -c "^R " <<<"$1")" -eq 6 &&
		awk "/^H /{h=\$2; n++} /^R /{if (\$3 != h) bad=1} END{exit bad || n != 3}" <<<"$1" &&
		test "$(grep "^H " <<<"$1" | cut -d" " -f2 | paste -sd,)" = "$(jq -r "[.merged.dumps[].host] | join(\",\")" <<<"$2")"' _ "$seq" "$RS"
	# every host's rows have their heat map, each on the one axis
	check html_heat_every_host "rows with a heat map: $(sed 's/class="row"/\n&/g' <<<"$dom" | grep '^class="row"' | grep -c '<canvas class="heat"')" -- \
		test "$(sed 's/class="row"/\n&/g' <<<"$dom" | grep '^class="row"' | grep -c '<canvas class="heat"')" -eq 6
else
	skip_n 2 html_rendered "no chromium here (scripts/install-deps.sh installs it)"
fi

# /metrics of host b, by promtool's rules
if command -v promtool >/dev/null; then
	check metrics_promtool "promtool: $(promtool check metrics <"$TMP/metrics.txt" 2>&1 | head -3)" -- \
		sh -c "promtool check metrics <'$TMP/metrics.txt'"
else
	skip metrics_promtool "promtool is missing (Debian's prometheus package; scripts/install-deps.sh installs it)"
fi
check metrics_labels "metrics: $(grep -m2 nccltrace_rank_phase "$TMP/metrics.txt")" -- \
	grep -q "^nccltrace_rank_phase{host=\"host-b\",rank=\"3\",pid=\"$P\",phase=\"none\"} 1$" "$TMP/metrics.txt"
check metrics_finding "metrics: $(grep "^nccltrace_findings" "$TMP/metrics.txt" | tr "\n" " "), b says: $(grep -m1 STALL "$TMP/b.out")" -- \
	grep -q '^nccltrace_findings{host="host-b",kind="stall"} 1$' "$TMP/metrics.txt"

# doctor across the hosts' dumps: each rank's NCCL_SOCKET_IFNAME against its own host's interfaces
D=$("$NT" doctor --json "$TMP/a.jsonl" "$TMP/b.jsonl" "$TMP/c.jsonl")
check doctor_ifname "problems: $(jq -c '[.problems[] | select(.variable=="NCCL_SOCKET_IFNAME") | {rank, what}]' <<<"$D")" -- \
	jqe '[.problems[] | select(.variable=="NCCL_SOCKET_IFNAME" and (.what | test("no interface of host host-[bc]"))) | .rank] | sort == [2,3,4,5]' <<<"$D"
# the same name on every rank is no difference across ranks, and none is named a cause
check report_no_ifname_cause "hypotheses: $(jq -c '[.findings[].hypotheses[]]' <<<"$R")" -- \
	jqe '[.findings[].hypotheses[] | select(test("NCCL_SOCKET_IFNAME|NCCL_DEBUG_FILE"))] | length == 0' <<<"$R"

# the token and the listen rules
check token_required "/state without the token answered $CODE, want 401" -- test "$CODE" = 401
OUT=$("$NT" run --listen 198.18.0.1:$PORT -- true 2>&1)
RC=$?
check listen_needs_token "exit $RC: $OUT" -- error_is 64 $RC "$OUT"
# watch's errors: nobody answering is 69, a bad option 64, each one line
OUT=$("$NT" watch --once 127.0.0.1:1 2>&1)
RC=$?
check watch_unreachable "exit $RC: $OUT" -- error_is 69 $RC "$OUT"
OUT=$("$NT" watch --json 127.0.0.1:1 2>&1)
RC=$?
check watch_usage "exit $RC: $OUT" -- error_is 64 $RC "$OUT"

# three tracers on one machine (one kernel, one network namespace: they share 127.0.0.1), as
# a two-node torchrun on one GPU machine: a 4-rank ring on loopback split 2+1+1, rank 2 asleep
# with its own tracer. Alone, its tracer sees nobody wait; merged, the loopback ends are joined
L=127.0.0.1,127.0.0.1,127.0.0.1,127.0.0.1
k=0
LO_PIDS=()
for part in 0-1 2-2 3-3; do
	"$NT" run --no-tui -t $THRESH --listen 127.0.0.1:$((PORT + 10 + k)) \
		--dump "$TMP/lo-$part.jsonl" -- "$RJ" --ranks 4 --hosts $L \
		--port 23500 --local-ranks $part --duration 12 --stall-rank 2 --stall-after 3 \
		--stall-for 6 >"$TMP/lo-$part.out" 2>&1 &
	LO_PIDS+=($!)
	k=$((k + 1))
done
# watch of the three, one hostname: named as report names them, the culprit on the second
wait_for 12 grep -qs "STALL rank 2" "$TMP/lo-2-2.out"
sleep $((THRESH + 2))
"$NT" watch --once --json 127.0.0.1:$((PORT + 10)) 127.0.0.1:$((PORT + 11)) \
	127.0.0.1:$((PORT + 12)) >"$TMP/lo-once.json" 2>"$TMP/lo-once.err"
wait "${LO_PIDS[@]}"
P2=$(marker_pid "$TMP/lo-2-2.out")
H=$(hostname)
check one_host_watch "watch: $(jq -c '[.hosts[].host], [.findings[] | {kind, rank, pid, host}]' "$TMP/lo-once.json" 2>&1 | tr '\n' ' ') $(head -c 200 "$TMP/lo-once.err")" -- \
	jqe "([.hosts[].host] == [\"$H\", \"$H#2\", \"$H#3\"]) and ([.findings[] | select(.kind == \"stall\" and .rank == 2 and .pid == $P2 and .host == \"$H#2\")] | length == 1) and (.findings | length == 1)" "$TMP/lo-once.json"
check one_host_blind "rank 2's own tracer: $(jq -c 'select(.type=="finding") | .summary' "$TMP/lo-2-2.jsonl" | head -2)" -- \
	no_record 'select(.type=="finding")' "$TMP/lo-2-2.jsonl"
RL=$("$NT" report --json "$TMP/lo-0-1.jsonl" "$TMP/lo-2-2.jsonl" "$TMP/lo-3-3.jsonl")
check one_host_merged "merged: $(jq -c '[.findings[] | {kind, rank, pid, host}]' <<<"$RL")" -- \
	jqe "([.findings[] | select(.kind == \"stall\" and .rank == 2 and .pid == $P2)] | length == 1) and (.findings | length == 1)" <<<"$RL"
# rank 2's tracer with a tick that slipped: each of its state records left out in turn, and each
# pair in a row (a gap of 2-3 s, as a loaded lane gives). The merged view takes that host's state
# as of each second, its ages short by the gap: the stall is still named once
"$NT" cat "$TMP/lo-2-2.jsonl" >"$TMP/lo-2-2.whole.jsonl"
mapfile -t TS < <(jq -r 'select(.type == "state") | .ts_ns' "$TMP/lo-2-2.whole.jsonl")
SLIP=""
for ((i = 0; i + 1 < ${#TS[@]}; i++)); do
	for drop in "${TS[$i]}" "${TS[$i]},${TS[$((i + 1))]}"; do
		jq -c "select(.type != \"state\" or ([.ts_ns] | inside([$drop]) | not))" \
			"$TMP/lo-2-2.whole.jsonl" >"$TMP/lo-2-2.slip.jsonl"
		n=$("$NT" report --json "$TMP/lo-0-1.jsonl" "$TMP/lo-2-2.slip.jsonl" \
			"$TMP/lo-3-3.jsonl" | jq '[.findings[] | select(.kind == "stall" and .rank == 2)] | length')
		[ "$n" = 1 ] || SLIP="$SLIP $drop: $n;"
	done
done
check one_host_slipped "${#TS[@]} state records; rank 2 named other than once without:${SLIP:- none}" -- \
	test -n "${TS[2]:-}" -a -z "$SLIP"
end_checks
