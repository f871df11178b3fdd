#!/bin/bash
# SPDX-License-Identifier: MIT
# NCCL's profiler plugin as an evidence source: nccltrace's plugin (build/libnccl-profiler-
# nccltrace.so), loaded by the fake NCCL's loader as NCCL 2.28.9 loads it (v5), into real
# processes traced with real BPF. Counts on a stripped library, a size-mismatched all_reduce
# that completes, a job's own plugin left alone, a stall named from the plugin's counters.
# STRIPPED may name another stripped build of the fake (a hidden-visibility one, say).
# checks: 46
# lane: long 56
. "$(dirname "$0")/lib.sh"

NJ=$ROOT/build/nccljob
FAKE=$ROOT/build/fakenccl/libnccl.so.2
STRIPPED=${STRIPPED:-$ROOT/build/fakenccl-stripped/libnccl.so.2}
PLUGIN=$ROOT/build/libnccl-profiler-nccltrace.so
USERPROF=$ROOT/build/userprof/libnccl-profiler-userprof.so
THRESH=2
export NCCLTRACE_CACHE_DIR=$TMP/cache
# the stripped runs: no offsets cached from the unstripped build (they share its build-id)
STRIPPED_CACHE=$TMP/cache-stripped

# --- nccltrace probes: the plugin API of the library (its ncclProfiler_vN strings) ---
out=$("$NT" probes "$FAKE" 2>&1)
check probes_profiler_api "no profiler plugin API v5 named: $(grep profiler <<<"$out")" -- \
	grep -q '^profiler: *plugin API v5 ' <<<"$out"
REAL=$(d=$(command -v nvcc) && dirname "$(dirname "$(readlink -f "$d")")")/lib/libnccl.so.2
# the first plugin API each NCCL looks for (reference/nccl-versions.md): v5 in 2.28, v6 from 2.29
api_of() {
	case $1 in
	2.2[0-2].*|2.1[0-9].*) echo 0 ;;
	2.23.*) echo 1 ;;
	2.24.*|2.25.*) echo 2 ;;
	2.26.*) echo 3 ;;
	2.27.*) echo 4 ;;
	2.28.*) echo 5 ;;
	*) echo 6 ;;
	esac
}
if [ -r "$REAL" ]; then
	out=$("$NT" probes "$REAL" 2>&1)
	v=$(sed -n 's/^version: *//p' <<<"$out")
	api=$(api_of "$v")
	if [ -z "$v" ] || [ "$api" -lt 1 ]; then
		skip probes_real_profiler_api "the real $REAL is NCCL '${v:-unknown}': no profiler plugin API before 2.23"
	else
		check probes_real_profiler_api "the real $REAL (NCCL $v, want v$api): $(grep profiler <<<"$out")" -- \
			grep -q "^profiler: *plugin API v$api (ncclProfiler_v$api first)" <<<"$out"
	fi
else
	skip probes_real_profiler_api "no CUDA toolkit libnccl.so.2 here"
fi

need_fixture profiler "$NJ" "$FAKE" "$STRIPPED" "$PLUGIN" "$USERPROF" || end_checks

# nt_run LIB-DIR-OR-EMPTY ARGS...: nccltrace run, on the stripped library when given its dir
nt_run() {
	local dir=$1
	shift
	if [ -n "$dir" ]; then
		LD_LIBRARY_PATH=$dir NCCLTRACE_CACHE_DIR=$STRIPPED_CACHE "$NT" run "$@"
	else
		"$NT" run "$@"
	fi
}
SDIR=$(dirname "$STRIPPED")

# pids of the ranks of a dump, sorted
rank_pids() { jq -r 'select(.type=="rank") | .pid' "$1" | sort -n | tr '\n' ' '; }
# the largest count of FUNC that snapshots show for pid's first communicator, and its source
max_count() {
	jq -s -r "[.[] | select(.type==\"snapshot\") | .procs[] | select(.pid==$2) | .nccl.comms[0] |
		select(. != null)] | (map(.collectives.$3 // 0) | max | tostring) + \" \" +
		(map(.source) | last // \"none\")" <(whole "$1")
}

# --- a healthy 3-rank job on the fake with DWARF: the plugin in every rank, seqNumber kept ---
D=$TMP/healthy.jsonl
"$NT" run -t $THRESH --dump "$D" -- "$NJ" --ranks 3 --iters 12 --linger 0.5 >"$TMP/healthy.out" 2>&1
rc=$?
check healthy_exit "exit $rc: $(tail -3 "$TMP/healthy.out")" -- test $rc -eq 0
check job_env_plugin "job_env: $(jq -c 'select(.nccltrace) | .job_env' "$D")" -- \
	jq_ok "select(.nccltrace) | .job_env.NCCL_PROFILER_PLUGIN == \"$PLUGIN\"" "$D"
pids=$(rank_pids "$D")
loaded=$(jq -r "select(.type==\"nccl_profiler\" and .path==\"$PLUGIN\") | .pid" "$D" | sort -n | tr '\n' ' ')
check plugin_in_every_rank "plugin found in pids '$loaded', ranks are '$pids'" -- \
	test -n "$pids" -a "$loaded" = "$pids"
hashes=$(jq -r 'select(.type=="nccl_profiler_comm" and .api==5 and .nranks==3) | .comm_hash' "$D" | sort -u)
probe_hash=$(jq -r 'select(.type=="nccl" and .probe=="bootstrap_init" and .event=="enter") | .comm_hash' "$D" | head -1)
check plugin_comm_hash "plugin comms (v5, 3 ranks): '$hashes', bootstrap says $probe_hash" -- \
	test "$hashes" = "$probe_hash" -a "$(jq -r 'select(.type=="nccl_profiler_comm") | .rank' "$D" | sort | tr '\n' ' ')" = "0 1 2 "
p1=$(rank_pid "$D" 1)
check seqnumber_kept "rank 1: $(max_count "$D" "$p1" AllReduce), want 12 from comm->seqNumber" -- \
	test "$(max_count "$D" "$p1" AllReduce)" = "12 comm->seqNumber"
n=$(jq -s "[.[] | select(.type==\"snapshot\") | .procs[] | select(.pid==$p1) | .nccl.profiler.comms[0].collectives // 0] | max" <(whole "$D"))
check plugin_counts_too "the plugin counted $n collectives on rank 1, want 12" -- test "$n" = 12
check healthy_no_findings "findings: $(findings "$D")" -- test "$(findings "$D" | jq length)" = 0

# --- the stripped library: no DWARF, no internal symbols; the counts come from the plugin ---
D=$TMP/stripped.jsonl
nt_run "$SDIR" -t $THRESH --dump "$D" -- "$NJ" --ranks 3 --iters 12 --linger 0.5 >"$TMP/stripped.out" 2>&1
rc=$?
check stripped_exit "exit $rc: $(tail -3 "$TMP/stripped.out")" -- test $rc -eq 0
check stripped_is_stripped "not the stripped library: $(jq -c 'select(.type=="nccl_lib") | [.path, .offsets]' "$D")" -- \
	jq_ok "select(.type==\"nccl_lib\" and .path==\"$STRIPPED\" and .offsets==\"none\")" "$D"
ok=0
for r in 0 1 2; do
	[ "$(max_count "$D" "$(rank_pid "$D" $r)" AllReduce)" = "12 NCCL profiler plugin" ] && ok=$((ok + 1))
done
check stripped_counts "$ok of 3 ranks show AllReduce 12 from the plugin ($(max_count "$D" "$(rank_pid "$D" 1)" AllReduce))" -- \
	test $ok = 3
check stripped_no_findings "findings: $(findings "$D")" -- test "$(findings "$D" | jq length)" = 0

# --- a size-mismatched all_reduce at collective #21 that completes: named by default ---
mismatch() { # NAME RANKS LIB-DIR-OR-EMPTY
	local D=$TMP/$1.jsonl OUT=$TMP/$1.out f lat closed exits
	nt_run "$3" -t $THRESH --dump "$D" -- "$NJ" --ranks "$2" --iters 40 \
		--step-delay 0.02 --fault count-mismatch-completes --fault-rank 1 --linger 1 \
		>"$OUT" 2>&1
	rc=$?
	f=$(findings "$D")
	check "${1}_completes" "exit $rc: $(tail -3 "$OUT")" -- \
		grep -q "40 all-reduces of 65536 floats done" "$OUT"
	check "${1}_kind" "findings: $f" -- \
		test "$(kind_ranks "$f")" = "collective_mismatch 1"
	check "${1}_args" "summary: $(jq -r '.[0].summary' <<<"$f")" -- \
		jqe '.[0].summary | test("rank 1 in AllReduce #21 \\(count 32768 float32\\), ranks? [0-9,]+ in AllReduce #21 \\(count 65536 float32\\); collective 21 of the communicator; the job went on")' <<<"$f"
	check "${1}_source" "evidence: $(jq -c '.[0].evidence' <<<"$f")" -- \
		jqe '.[0].evidence | map(select(test("^rank 1 launched AllReduce #21, count 32768 float32, as collective 21 of comm [0-9a-f]+, other arguments than in its previous one \\(NCCL profiler plugin\\)"))) | length == 1' <<<"$f"
	# nothing to wait for: the arguments differ. Within threshold + 1 s of the marker.
	check_latency "$1" "$(marker_ns "$OUT")" "$(opened_ns "$D" collective_mismatch)" 0 \
		$(((THRESH + 1) * 1000))
	# it stays open while the job goes on and ends: closed only when tracing ends
	closed=$(jq -r 'select(.type=="finding" and .event=="close") | .ts_ns' "$D" | head -1)
	exits=$(jq -r 'select(.type=="proc" and .event=="exit") | .ts_ns' "$D" | sort -n | tail -1)
	check "${1}_stays_open" "closed at ${closed:-never}, the job's last exit at $exits" -- \
		test -n "$closed" -a -n "$exits" -a "${closed:-0}" -ge "${exits:-1}"
	own_pkill "$NJ"
}
mismatch mismatch3 3 ""
# two ranks on the stripped library: no majority; rank 1 is the one that changed its count
mismatch mismatch2_stripped 2 "$SDIR"

# --- healthy jobs: never a finding ---
healthy() { # NAME LIB-DIR-OR-EMPTY nccljob options...
	local name=$1 dir=$2 D=$TMP/$1.jsonl
	shift 2
	nt_run "$dir" -t $THRESH --dump "$D" -- "$NJ" "$@" >"$TMP/$name.out" 2>&1
	local rc=$?
	# the job ran to its end (exit 0): a job that never started has no finding either
	check "${name}_no_findings" "exit $rc, findings: $(findings "$D")" -- \
		test "$rc" = 0 -a "$(findings "$D" | jq length)" = 0
}
healthy h_busy4 "" --ranks 4 --iters 200 --step-delay 0 --count 1024
healthy h_busy2_stripped "$SDIR" --ranks 2 --iters 300 --step-delay 0 --count 256
healthy h_slow3 "" --ranks 3 --iters 8 --step-delay 0.4
healthy h_idle_end_stripped "$SDIR" --ranks 3 --iters 10 --linger 3
healthy h_small2 "" --ranks 2 --iters 30 --step-delay 0.01 --count 4096

# --- the job's own NCCL_PROFILER_PLUGIN: kept, and nccltrace says so ---
D=$TMP/own.jsonl
rm -f "$TMP/userprof.log"
LD_LIBRARY_PATH=$(dirname "$USERPROF") USERPROF_LOG=$TMP/userprof.log NCCL_PROFILER_PLUGIN=userprof \
	"$NT" run -t $THRESH --dump "$D" -- "$NJ" --ranks 2 --iters 4 >"$TMP/own.out" 2>&1
rc=$?
check own_exit "exit $rc: $(tail -3 "$TMP/own.out")" -- test $rc -eq 0
check own_plugin_loaded "the job's own plugin was not loaded in both ranks: $(cat "$TMP/userprof.log" 2>/dev/null)" -- \
	test "$(sort "$TMP/userprof.log" 2>/dev/null | tr '\n' ,)" = "userprof init rank 0 of 2,userprof init rank 1 of 2,"
check own_not_overridden "nccltrace set NCCL_PROFILER_PLUGIN: $(jq -c 'select(.nccltrace) | .job_env' "$D")" -- \
	jq_ok 'select(.nccltrace) | .job_env | has("NCCL_PROFILER_PLUGIN") | not' "$D"
check own_rank_env "rank 1 does not run with NCCL_PROFILER_PLUGIN=userprof" -- \
	jq_ok 'select(.type=="rank" and .rank==1) | .env.NCCL_PROFILER_PLUGIN == "userprof"' "$D"
check own_said_stderr "not said on stderr: $(grep -i profiler "$TMP/own.out")" -- \
	grep -q "^nccltrace: NCCL_PROFILER_PLUGIN=userprof is the job's own: nccltrace's profiler plugin is not loaded" "$TMP/own.out"
check own_said_dump "not in the dump header: $(jq -c 'select(.nccltrace) | .job_env_notes' "$D")" -- \
	jq_ok 'select(.nccltrace) | .job_env_notes | any(test("NCCL_PROFILER_PLUGIN=userprof is the job.s own"))' "$D"
check own_no_ours "nccltrace's plugin found anyway" -- \
	bash -c "! jq -e 'select(.type==\"nccl_profiler\")' '$D' >/dev/null"

# --- the plugin is not there (nccltrace copied alone): said, and the job runs without it ---
D=$TMP/nolib.jsonl
NCCLTRACE_LIBDIR=$TMP/none "$NT" run -t $THRESH --dump "$D" -- "$NJ" --ranks 2 --iters 3 >"$TMP/nolib.out" 2>&1
rc=$?
check nolib_runs "exit $rc: $(tail -3 "$TMP/nolib.out")" -- test $rc -eq 0
check nolib_said "not said: $(grep -i profiler "$TMP/nolib.out")" -- \
	grep -q "^nccltrace: no NCCL profiler plugin at $TMP/none/libnccl-profiler-nccltrace.so" "$TMP/nolib.out"

# --- rank 1 sleeps before its 21st collective, 2 ranks over sockets, stripped library ---
D=$TMP/stall.jsonl
nt_run "$SDIR" -t $THRESH --dump "$D" -- "$NJ" --ranks 2 --iters 40 \
	--step-delay 0 --fault in-collective --fault-rank 1 --fault-for 5 --timeout 20 >"$TMP/stall.out" 2>&1
f=$(findings "$D")
check stall_kind "findings: $f" -- test "$(kind_ranks "$f")" = "stall 1"
check stall_counters "no counts from the plugin in the evidence: $(jq -c '.[0].evidence' <<<"$f")" -- \
	jqe '.[0].evidence | map(select(test("^rank 1 \\(pid [0-9]+\\) launched AllReduce 20 on comm [0-9a-f]+ \\(NCCL profiler plugin\\)"))) | length == 1' <<<"$f"
check stall_waiter "rank 0 not shown ahead: $(jq -c '.[0].evidence' <<<"$f")" -- \
	jqe '.[0].evidence | map(select(test("^rank 0 \\(pid [0-9]+\\) launched AllReduce 21 on comm [0-9a-f]+ \\(NCCL profiler plugin\\)"))) | length == 1' <<<"$f"
detected stall "$TMP/stall.out" "$D" stall $THRESH
own_pkill "$NJ"

# --- rank 1 late to the first collective, stripped: ring setup from the plugin's API events ---
D=$TMP/setup.jsonl
nt_run "$SDIR" -t $THRESH --dump "$D" -- "$NJ" --ranks 3 --iters 6 \
	--fault ring-setup --fault-rank 1 --fault-for 5 --timeout 12 >"$TMP/setup.out" 2>&1
f=$(findings "$D")
check setup_kind "findings: $f" -- test "$(kind_ranks "$f")" = "ring_setup_blocked 1"
check setup_evidence "the waiters' place not from the plugin: $(jq -c '.[0].evidence' <<<"$f")" -- \
	jqe '.[0].evidence | map(select(test("^rank [02] \\(pid [0-9]+\\) in NCCL transport setup for [0-9.]+s, now in ncclGroupEnd before its first launch \\(NCCL profiler plugin\\)"))) | length == 2' <<<"$f"
detected setup "$TMP/setup.out" "$D" ring_setup_blocked $THRESH
own_pkill "$NJ"
end_checks
