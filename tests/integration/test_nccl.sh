#!/bin/bash
# SPDX-License-Identifier: MIT
# NCCL probes on the fake NCCL library (tests/fixtures: NCCL 2.28.9's mangled names, argument
# types and struct layouts, real TCP between real processes): phases, communicators, sockets,
# settings, warnings, thread roles and collective counts reach the dump.
# checks: 92
# lane: long 150
. "$(dirname "$0")/lib.sh"

NJ=$ROOT/build/nccljob
FAKE=$ROOT/build/fakenccl/libnccl.so.2
STRIPPED=$ROOT/build/fakenccl-stripped/libnccl.so.2
export NCCLTRACE_CACHE_DIR=$TMP/cache

need_fixture nccl "$NJ" "$FAKE" || end_checks

# --- a healthy 3-rank job, with one setting from the environment and one from nccl.conf ---
D=$TMP/healthy.jsonl
printf 'NCCL_IB_TIMEOUT=19\n' >"$TMP/nccl.conf"
NCCL_P2P_DISABLE=1 NCCL_CONF_FILE=$TMP/nccl.conf "$NT" run -t 3 --dump "$D" -- \
	"$NJ" --ranks 3 --iters 12 --linger 0.6 >"$TMP/healthy.out" 2>&1
rc=$?
check healthy_exit "exit $rc: $(tail -3 "$TMP/healthy.out")" -- test $rc -eq 0
check healthy_no_findings "findings: $(findings "$D")" -- test "$(findings "$D" | jq length)" = 0
check lib_found "no nccl_lib record for the fake library" -- \
	jq_ok "select(.type==\"nccl_lib\" and .path==\"$FAKE\" and .offsets==\"DWARF\" and .core_missing==0)" "$D"
p1=$(rank_pid "$D" 1)
check attached_rank1 "probes not attached to rank 1 (pid $p1)" -- \
	jq_ok "select(.type==\"nccl_attach\" and .pid==$p1 and .probes > 20 and .failed==0)" "$D"
check phase_init "no comm_init enter/exit for rank 1" -- \
	jq_ok "select(.type==\"nccl\" and .pid==$p1 and .probe==\"comm_init\" and .event==\"exit\")" "$D"
check phase_bootstrap "bootstrap_init of rank 1 does not say rank 1 of 3" -- \
	jq_ok "select(.type==\"nccl\" and .pid==$p1 and .probe==\"bootstrap_init\" and .event==\"enter\" and .rank==1 and .nranks==3)" "$D"
hashes=$(jq -r 'select(.type=="nccl" and .probe=="bootstrap_init" and .event=="enter") | .comm_hash' "$D" | sort -u | wc -l)
n=$(jq -r 'select(.type=="nccl" and .probe=="bootstrap_init" and .event=="enter") | .pid' "$D" | sort -u | wc -l)
check comm_hash_agrees "$n ranks in bootstrap, $hashes distinct comm hashes" -- test "$n" = 3 -a "$hashes" = 1
check phase_ring_setup "no ring p2p setup (graph 0) in rank 1" -- \
	jq_ok "select(.type==\"nccl\" and .pid==$p1 and .probe==\"p2p_setup\" and .graph==0)" "$D"
check socket_bootstrap "no bootstrap socket connect" -- \
	jq_ok 'select(.type=="nccl" and .probe=="socket_connect" and .event=="exit" and .socket_type=="bootstrap")' "$D"
check setting_env "NCCL_P2P_DISABLE=1 not read" -- \
	jq_ok "select(.type==\"nccl_setting\" and .pid==$p1 and .name==\"NCCL_P2P_DISABLE\" and .value==\"1\")" "$D"
check setting_conf_file "NCCL_IB_TIMEOUT=19 from nccl.conf not seen" -- \
	jq_ok "select(.type==\"nccl_setting\" and .pid==$p1 and .name==\"NCCL_IB_TIMEOUT\" and .value==\"19\")" "$D"
check setting_unset_null "an unset setting is not null" -- \
	jq_ok "select(.type==\"nccl_setting\" and .pid==$p1 and .name==\"NCCL_SOCKET_IFNAME\" and .value==null)" "$D"
roles=$(jq -r "select(.type==\"nccl_thread\" and .pid==$p1) | .role" "$D" | sort | tr '\n' ' ')
check thread_roles "rank 1 thread roles: $roles" -- test "$roles" = "proxy_progress proxy_service "
check bootstrap_root_role "no bootstrap root thread in the launcher" -- \
	jq_ok 'select(.type=="nccl_thread" and .role=="bootstrap_root")' "$D"
coll=$(jq -s "[.[] | select(.type==\"snapshot\") | .procs[] | select(.pid==$p1) | .nccl.comms[0].collectives.AllReduce // 0] | max" <(whole "$D"))
check collective_counts "rank 1 AllReduce count $coll, want 12 (from comm->seqNumber)" -- test "$coll" = 12
check conn_labels "no connection labelled with its NCCL socket type" -- \
	jq_ok 'select(.type=="snapshot") | .conns[] | select(.nccl != null) | .nccl | test("bootstrap|net|proxy")' <(whole "$D")
# the default mode has no per-collective probe
check no_enqueue_default "enqueue probe fired without --collectives" -- \
	no_record 'select(.type=="nccl" and .probe=="enqueue")' "$D"

# --- --collectives: one event per collective with type and count ---
D=$TMP/coll.jsonl
"$NT" run --collectives --dump "$D" -- "$NJ" --ranks 2 --iters 5 --count 4096 >/dev/null 2>&1
n=$(jq -s '[.[] | select(.type=="nccl" and .probe=="enqueue")] | length' "$D")
check collectives_mode "$n enqueue events, want 10 (2 ranks x 5)" -- test "$n" = 10

# --- a WARN reaches the dump with NCCL_DEBUG unset ---
D=$TMP/warn.jsonl
env -u NCCL_DEBUG "$NT" run --dump "$D" -- "$NJ" --ranks 2 --iters 3 --fault warn --fault-rank 1 \
	>/dev/null 2>&1
check warning_text "WARN text not captured" -- \
	jq_ok 'select(.type=="nccl_warning") | .text | test("test warning from rank 1")' "$D"

# --- silent setup blocking, which NCCL never reports: the right kind, rank 1, in time ---
THRESH=2
setup_fault() { # FAULT KIND
	local D=$TMP/$1.jsonl OUT=$TMP/$1.out f
	"$NT" run -t $THRESH --dump "$D" -- "$NJ" --ranks 3 --iters 6 --fault "$1" --fault-rank 1 \
		--fault-for 5 --timeout 12 >"$OUT" 2>&1
	f=$(findings "$D")
	check "${1}_kind" "findings: $f" -- test "$(jq -r '.[0].kind' <<<"$f")" = "$2"
	check "${1}_rank" "named $(culprit "$f"), the job says rank 1 pid $(marker_pid "$OUT")" -- \
		test "$(culprit "$f")" = "rank 1 pid $(marker_pid "$OUT")"
	check "${1}_one" "$(jq length <<<"$f") findings" -- test "$(jq length <<<"$f")" = 1
	detected "$1" "$OUT" "$D" "$2" $THRESH
	own_pkill "$NJ"
}
setup_fault ring-setup ring_setup_blocked
setup_fault before-init init_blocked
setup_fault never-join peer_dead
# the settings that govern the wait, and why it lasts: grounded in the lazy ring connect
check ring_setup_settings "NCCL_RUNTIME_CONNECT not among the settings: $(findings "$TMP/ring-setup.jsonl" | jq -c '.[0].settings')" -- \
	test "$(first_setting "$(findings "$TMP/ring-setup.jsonl")" NCCL_RUNTIME_CONNECT)" = "1 default"
check ring_setup_hypothesis "no lazy-connect hypothesis" -- \
	jq_ok 'select(.type=="finding") | .hypotheses[0] | test("rings connect at the first collective \\(NCCL_RUNTIME_CONNECT=1")' "$TMP/ring-setup.jsonl"

# --- a refused connect: NCCL's retries, the window its settings give, its WARN, a fake name ---
D=$TMP/refused.jsonl
NCCL_SOCKET_RETRY_CNT=5 NCCL_SOCKET_TIMEOUT=30 "$NT" run -t $THRESH --dump "$D" -- "$NJ" --ranks 3 \
	--iters 4 --fault refused --fault-rank 1 --timeout 8 >"$TMP/refused.out" 2>&1
f=$(findings "$D" | jq -c 'map(select(.kind != "config"))')
check refused_config "no config finding for NCCL_SOCKET_TIMEOUT before launch: $(findings "$D" | jq -c 'map(.kind)')" -- \
	jq_ok 'select(.type=="finding" and .kind=="config" and .settings.NCCL_SOCKET_TIMEOUT.value=="30" and .severity=="warning")' "$D"
check refused_config_stderr "config finding not on stderr" -- \
	grep -q "CONFIG warning NCCL_SOCKET_TIMEOUT=30: NCCL has no socket or connect timeout" "$TMP/refused.out"
check refused_kind "findings: $f" -- test "$(jq -r '.[0].kind + " " + (.[0].rank|tostring)' <<<"$f")" = "peer_dead 1"
check refused_retries "no retry hypothesis: $(jq -c '.[0].hypotheses' <<<"$f")" -- \
	jqe '.[0].hypotheses[0] | test("connects fail .* gives up after 5 retries, 1.5 s of sleeps \\(NCCL_SOCKET_RETRY_CNT=5")' <<<"$f"
check refused_setting_read "NCCL_SOCKET_RETRY_CNT not as NCCL read it" -- \
	test "$(first_setting "$f" NCCL_SOCKET_RETRY_CNT)" = "5 read"
check refused_warn "NCCL's WARN not in the evidence" -- \
	jqe '.[0].evidence | map(select(test("NCCL WARN on rank 1 .*exceeded error retry count"))) | length == 1' <<<"$f"
check refused_fake_name "NCCL_SOCKET_TIMEOUT not called out" -- \
	jqe '(.[0].settings.NCCL_SOCKET_TIMEOUT.source == "not read") and (.[0].hypotheses | map(select(test("NCCL_SOCKET_TIMEOUT=30 is set, but NCCL has no socket or connect timeout"))) | length == 1)' <<<"$f"
own_pkill "$NJ"

# --- collectives that do not match, and a straggler: NCCL's own counters name the rank ---
coll_fault() { # NAME FAULT KIND RANK TIMEOUT [nccltrace options...]
	local name=$1 fault=$2 kind=$3 rank=$4 timeout=$5 D=$TMP/$1.jsonl OUT=$TMP/$1.out f
	shift 5
	"$NT" run -t $THRESH "$@" --dump "$D" -- "$NJ" --ranks 3 --iters 24 --fault "$fault" \
		--fault-rank "$rank" --fault-for 0.3 --timeout "$timeout" >"$OUT" 2>&1
	f=$(findings "$D")
	check "${name}_kind" "findings: $f" -- test "$(jq -r '.[0].kind' <<<"$f")" = "$kind"
	check "${name}_rank" "named $(culprit "$f"), the job says rank $rank pid $(marker_pid "$OUT")" -- \
		test "$(culprit "$f")" = "rank $rank pid $(marker_pid "$OUT")"
	check "${name}_one" "$(jq length <<<"$f") findings" -- test "$(jq length <<<"$f")" = 1
	check "${name}_comm" "no communicator named" -- \
		test "$(jq -r '.[0].comm_hash' <<<"$f")" = \
		"$(jq -r 'select(.type=="nccl" and .probe=="bootstrap_init" and .event=="enter") | .comm_hash' "$D" | head -1)"
	# a straggler is slow, never stopped: no time at which it should have been named. A
	# mismatch is seen in the arguments, from the profiler plugin's records: nothing to wait for
	case $kind in
	collective_mismatch)
		check_latency "$name" "$(marker_ns "$OUT")" "$(opened_ns "$D" "$kind")" 0 \
			$(((THRESH + 1) * 1000)) ;;
	stall) detected "$name" "$OUT" "$D" "$kind" $THRESH ;;
	esac
	own_pkill "$NJ"
}
coll_fault mismatch mismatch collective_mismatch 1 6
coll_fault count_mismatch count-mismatch collective_mismatch 2 6 --collectives
coll_fault straggler slow straggler 1 30
check mismatch_phase "the odd rank's collective is not named" -- \
	jq_ok 'select(.type=="finding" and .kind=="collective_mismatch") | .summary | test("rank 1 in Broadcast #1, ranks 0,2 in AllReduce #[0-9]+")' "$TMP/mismatch.jsonl"
check count_mismatch_args "the counts are not named" -- \
	jq_ok 'select(.type=="finding") | .summary | test("rank 2 in AllReduce #[0-9]+ \\(count 32768 float32\\)")' "$TMP/count_mismatch.jsonl"

# --- quiet mode: per-call TCP hooks off while every communicator moves, back on at a stop ---
D=$TMP/quiet.jsonl
"$NT" run -t $THRESH --dump "$D" -- "$NJ" --ranks 3 --iters 160 --step-delay 0.03 \
	--fault in-collective --fault-rank 1 --fault-for 5 --timeout 30 >"$TMP/quiet.out" 2>&1
t0=$(marker_ns "$TMP/quiet.out")
boot=$(jq -r 'select(.nccltrace) | .boot_to_realtime_ns' "$D")
off=$(jq -r 'select(.type=="tcp_hooks" and .on==false) | .ts_ns' "$D" | head -1)
on=$(jq -r "select(.type==\"tcp_hooks\" and .on==true and .ts_ns > ${off:-0}) | .ts_ns" "$D" | head -1)
check quiet_off "hooks never went off while the ranks all-reduced: $(grep -c tcp_hooks "$D") records" -- \
	test -n "$off" -a -n "$t0" -a "$((${off:-0} + ${boot:-0}))" -lt "${t0:-0}"
# after the stop (less the marker's slack), not a record from before it
d_on=$((${on:-0} + ${boot:-0} - ${t0:-0}))
check quiet_back_on "hooks not back on within 0..1 s of the stop: $((d_on / 1000000)) ms (off $off, on $on, fault $t0)" -- \
	test -n "$on" -a -n "$t0" -a "$d_on" -ge $((-MARKER_SLACK_MS * 1000000)) -a "$d_on" -lt 1000000000
check quiet_why "the reason is not rank 1's stop: $(jq -c 'select(.type=="tcp_hooks" and .on)' "$D" | head -1)" -- \
	jq_ok 'select(.type=="tcp_hooks" and .on==true) | .why | test("rank 1.s collectives stopped")' "$D"
f=$(findings "$D")
check quiet_stall "findings: $(kind_ranks "$f")" -- \
	test "$(kind_ranks "$f")" = "stall 1"
detected quiet "$TMP/quiet.out" "$D" stall $THRESH
# the socket evidence comes back with the hooks: a waiter's receive calls got EAGAIN again
check quiet_socket_evidence "no EAGAIN evidence after the hooks came back" -- \
	jq_ok 'select(.type=="finding" and .event=="close") | .evidence[] | test("receive calls got EAGAIN|blocked in receive")' "$D"
own_pkill "$NJ"
D=$TMP/always.jsonl
"$NT" run --tcp-hooks always --dump "$D" -- "$NJ" --ranks 2 --iters 120 --step-delay 0.03 \
	>/dev/null 2>&1
check quiet_always "--tcp-hooks always still went quiet" -- lacks "$D" -F tcp_hooks
check quiet_always_bytes "--tcp-hooks always: no bytes counted" -- \
	jq_ok 'select(.type=="snapshot") | .conns[] | select(.bytes_sent > 1000000)' <(whole "$D")

# --- an InfiniBand completion error, as NCCL's IB transport WARNs it: ib_error with the settings ---
D=$TMP/ib.jsonl
NCCL_IB_TIMEOUT=14 NCCL_IB_RETRY_CNT=3 "$NT" run -t $THRESH --dump "$D" -- "$NJ" --ranks 3 --iters 10 \
	--fault ib-error --fault-rank 1 --timeout 8 >"$TMP/ib.out" 2>&1
f=$(findings "$D")
check ib_error_kind "findings: $(jq -c 'map(.kind)' <<<"$f")" -- \
	test "$(kind_ranks "$f")" = "ib_error 1"
check ib_error_status "$(jq -r '.[0].summary' <<<"$f")" -- \
	jqe '.[0].summary | test("IBV_WC_RETRY_EXC_ERR\\(12\\) from peer 127.0.0.1<[0-9]+> on mlx5_0 \\(RoCE\\)")' <<<"$f"
check ib_error_window "$(jq -c '.[0].hypotheses' <<<"$f")" -- \
	jqe '.[0].hypotheses[0] | test("tried for 0.3 s .*NCCL_IB_TIMEOUT=14, NCCL_IB_RETRY_CNT=3")' <<<"$f"
check ib_error_settings "NCCL_IB_TIMEOUT not as NCCL read it" -- \
	test "$(first_setting "$f" NCCL_IB_TIMEOUT)" = "14 read"
check ib_error_exit "the rank's exit is not in the evidence" -- \
	jqe '.[0].evidence | map(select(test("exited with status 5 afterwards"))) | length == 1' <<<"$f"
own_pkill "$NJ"

# --- healthy jobs, busy, idle, slow, with and without --collectives: never a finding ---
healthy=0
for spec in "2 0 1024 0" "3 0.05 65536 0" "4 0 262144 0" "2 0.2 4096 2.5" "3 0 1024 2.5" \
	"4 0.05 16384 0" "2 0.4 65536 0" "3 0.01 262144 0" "4 0.1 1024 2.5" "2 0 65536 0"; do
	set -- $spec
	healthy=$((healthy + 1))
	D=$TMP/healthy$healthy.jsonl
	opt=()
	[ $((healthy % 3)) = 0 ] && opt=(--collectives)
	"$NT" run -t 2 "${opt[@]}" --dump "$D" -- "$NJ" --ranks "$1" --step-delay "$2" \
		--count "$3" --linger "$4" --iters 15 --import-delay 0.1 >/dev/null 2>&1
	rc=$?
	check "healthy_run_$healthy" "ranks $1 step $2 count $3 linger $4 ${opt[*]}: exit $rc, findings $(findings "$D")" -- \
		test $rc = 0 -a "$(findings "$D" | jq length)" = 0
done

# --- ring setup connecting to an address that never answers (SYNs dropped), or refuses ---
D=$TMP/unreachable.jsonl
"$NT" run -t $THRESH --dump "$D" -- "$NJ" --ranks 3 --iters 4 --fault unreachable --fault-rank 1 \
	--timeout 6 >"$TMP/unreachable.out" 2>&1
f=$(findings "$D")
check unreachable_kind "findings: $f" -- \
	test "$(jq -r '.[0].kind + " " + (.[0].rank|tostring)' <<<"$f")" = "ring_setup_blocked 1"
check unreachable_syn_evidence "no SYN retransmits in the evidence" -- \
	jqe '.[0].evidence | map(select(test("[1-9][0-9]* SYN retransmits"))) | length > 0' <<<"$f"
check unreachable_local_port "the connect's local port is missing" -- \
	jqe '.[0].conn | test("^127.0.0.1:[1-9][0-9]*->")' <<<"$f"
check unreachable_hypothesis "no dropped-packets hypothesis: $(jq -c '.[0].hypotheses' <<<"$f")" -- \
	jqe '.[0].hypotheses[0] | test("are dropped .* SYN timeout")' <<<"$f"
detected unreachable "$TMP/unreachable.out" "$D" ring_setup_blocked $THRESH
own_pkill "$NJ"
D=$TMP/refused-default.jsonl
"$NT" run -t $THRESH --dump "$D" -- "$NJ" --ranks 3 --iters 4 --fault refused --fault-rank 1 \
	--timeout 6 >"$TMP/refused-default.out" 2>&1
f=$(findings "$D")
check refused_retrying_kind "findings: $f" -- \
	test "$(jq -r '.[0].kind + " " + (.[0].rank|tostring)' <<<"$f")" = "ring_setup_blocked 1"
check refused_retrying_summary "$(jq -r '.[0].summary' <<<"$f")" -- \
	jqe '.[0].summary | test("its connects to 127.0.0.1:[0-9]+ fail and NCCL retries them silently \\([0-9]+ so far\\); waiting for it: ranks 0,2")' <<<"$f"
check refused_retrying_window "no retry window: $(jq -c '.[0].hypotheses' <<<"$f")" -- \
	jqe '.[0].hypotheses[0] | test("gives up after 34 retries, 59.5 s of sleeps")' <<<"$f"
detected refused_retrying "$TMP/refused-default.out" "$D" ring_setup_blocked $THRESH
own_pkill "$NJ"

# --- a stripped library: warned about, socket tracing and diagnosis go on ---
out=$("$NT" probes "$STRIPPED" 2>&1)
rc=$?
check stripped_probes_exit "exit $rc: $out" -- test $rc -eq 1
D=$TMP/stripped.jsonl
LD_LIBRARY_PATH=$(dirname "$STRIPPED") "$NT" run -t 2 --dump "$D" -- "$NJ" --ranks 3 --iters 40 \
	--fault in-collective --fault-rank 1 --fault-for 5 >"$TMP/stripped.out" 2>&1
rc=$?
check stripped_runs "exit $rc" -- test $rc -eq 0
check stripped_warned "no warning about missing probes" -- grep -q "core NCCL probe" "$TMP/stripped.out"
check stripped_still_diagnosed "the stalled rank was not named: $(findings "$D")" -- \
	test "$(findings "$D" | jq -r '.[0].rank')" = 1
kill_leftovers
own_pkill "$NJ"
end_checks
