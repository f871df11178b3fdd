#!/bin/bash
# SPDX-License-Identifier: MIT
# InfiniBand/RoCE verbs, mocked faithfully (no HCA here): the fake NCCL's IB transport
# (NCCL 2.28.9's mangled names, its wrap_ibv_* wrappers, ncclIbConnect/ncclIbAccept with the
# real ncclIbHandle layout) dlopens a fake libibverbs.so.1 built from the real
# <infiniband/verbs.h> structs and exporting rdma-core's versioned symbols. Real processes, real
# BPF uprobes. The fake HCA logs every verb (FAKEVERBS_DEBUG=1): the dump must agree with it.
# checks: 35
. "$(dirname "$0")/lib.sh"

NJ=$ROOT/build/nccljob
FAKEV=$ROOT/build/fakeverbs/libibverbs.so.1
REALV=/usr/lib/x86_64-linux-gnu/libibverbs.so.1
export NCCLTRACE_CACHE_DIR=$TMP/cache

# --- nccltrace probes on the real Debian libibverbs: the default-version functions ---
if [ -r "$REALV" ]; then
	out=$("$NT" probes "$REALV" 2>&1)
	rc=$?
	check probes_real_rc "exit $rc: $(tail -2 <<<"$out")" -- test $rc -eq 0
	ok=$(grep -cE '^ibv_[a-z_]+ +ok ' <<<"$out")
	check probes_real_all "$ok of 6 verbs probes resolved: $out" -- test "$ok" = 6
	# the address of ibv_modify_qp@@IBVERBS_1.1, not of the IBVERBS_1.0 compat one
	want=$(readelf -W --dyn-syms "$REALV" | awk '$8 == "ibv_modify_qp@@IBVERBS_1.1" {print $2}' |
		sed 's/^0*//')
	got=$(awk '$1 == "ibv_modify_qp" {print $3}' <<<"$out" | sed 's/^0x//')
	check probes_real_version "ibv_modify_qp at 0x$got, @@IBVERBS_1.1 is at 0x$want" -- \
		test -n "$want" -a "$got" = "$want"
	check probes_real_offsets "verbs.h offsets not shown" -- \
		grep -qE '^ibv_qp_attr.timeout +130$' <<<"$out"
else
	skip_n 4 probes_real "no $REALV (scripts/install-deps.sh installs libibverbs1)"
fi
out=$("$NT" probes "$FAKEV" 2>&1)
want=$(readelf -W --dyn-syms "$FAKEV" | awk '$8 == "ibv_create_qp@@IBVERBS_1.1" {print $2}' | sed 's/^0*//')
got=$(awk '$1 == "ibv_create_qp" {print $3}' <<<"$out" | sed 's/^0x//')
check probes_fake_version "fake ibv_create_qp at 0x$got, @@IBVERBS_1.1 at 0x$want (1.0 aborts)" -- \
	test -n "$want" -a "$got" = "$want"

need_fixture ib "$NJ" "$FAKEV" || end_checks

# --- a healthy job over IB: every QP's life, with the settings NCCL put in its attributes ---
D=$TMP/ib.jsonl
FAKEVERBS_DEBUG=1 NCCL_IB_TIMEOUT=14 NCCL_IB_RETRY_CNT=3 NCCL_IB_GID_INDEX=1 \
	"$NT" run -t 3 --dump "$D" -- "$NJ" --ranks 3 --iters 8 --net ib --linger 1.5 >"$TMP/ib.out" 2>&1
rc=$?
check healthy_exit "exit $rc: $(grep -v fakeverbs "$TMP/ib.out" | tail -3)" -- test $rc -eq 0
check healthy_no_findings "findings: $(findings "$D")" -- test "$(findings "$D" | jq length)" = 0
want=$(sed -n 's/.*ibv_create_qp(.* qp_num 0x\([0-9a-f]*\) state RESET.*/\1/p' "$TMP/ib.out" |
	while read -r h; do echo $((16#$h)); done | sort -n | tr '\n' ' ')
got=$(jq -r 'select(.type=="ib_qp" and .event=="create") | .qp_num' "$D" | sort -n | tr '\n' ' ')
check qp_created "QPs in the dump ($got) are not the HCA's ($want)" -- \
	test -n "$want" -a "$got" = "$want"
n_rts=$(grep -c 'ibv_modify_qp(qp .*RTR->RTS.* = 0' "$TMP/ib.out")
got=$(jq -s '[.[] | select(.type=="ib_qp" and .event=="modify" and .to=="RTS" and .timeout==14 and .retry_cnt==3 and .rnr_retry==7)] | length' "$D")
check qp_rts "$got RTS transitions with timeout 14, retry_cnt 3, rnr_retry 7; the HCA made $n_rts" -- \
	test "$n_rts" -gt 0 -a "$got" = "$n_rts"
# RTR: the destination is a QP another rank created; the GID index is NCCL_IB_GID_INDEX's
bad=$(jq -s '[.[] | select(.type=="ib_qp" and .event=="create") | {(.qp_num|tostring): .pid}] | add as $own |
	[.[] | select(.type=="ib_qp" and .event=="modify" and .to=="RTR") |
	 select(($own[(.dest_qp_num|tostring)] // .pid) == .pid or .sgid_index != 1 or .path_mtu != 4096)] | length' "$D")
n_rtr=$(jq -s '[.[] | select(.type=="ib_qp" and .to=="RTR")] | length' "$D")
check qp_rtr "$bad of $n_rtr RTR transitions lack a peer's QP, GID index 1 or MTU 4096" -- \
	test "$n_rtr" -gt 0 -a "$bad" = 0
n_destroy=$(grep -c 'ibv_destroy_qp(qp ' "$TMP/ib.out")
got=$(jq -s '[.[] | select(.type=="ib_qp" and .event=="destroy" and .state=="RTS")] | length' "$D")
check qp_destroyed "$got QPs destroyed at RTS in the dump, $n_destroy by the HCA" -- \
	test "$n_destroy" -gt 0 -a "$got" = "$n_destroy"
check ib_device "no ib_device mlx5_0" -- jq_ok 'select(.type=="ib_device" and .dev=="mlx5_0")' "$D"
check ib_mr "no 128 KiB memory registration" -- jq_ok 'select(.type=="ib_mr" and .length==131072)' "$D"
# the job lingers 1.5 s with its QPs at RTS before ncclCommDestroy: a snapshot (1 Hz in the first
# minute) falls in that window (without it, half the runs here ended between two snapshots)
check snapshot_qps "no snapshot with a rank's QPs at RTS" -- \
	jq_ok 'select(.type=="snapshot") | .procs[] | .nccl.ib.qps // [] | map(select(.state=="RTS")) | length > 0' <(whole "$D")
check report_ib "report's IB lines: $("$NT" report --json "$D" | jq -c '[.ranks[].ib]')" -- \
	jqe '[.ranks[].ib | select(.qps >= 2 and .rts == .qps and .destroyed == .qps and .timeout == 14)] | length == 3' < <("$NT" report --json "$D")
# no NCCL socket carries the job's data: its progress is its collectives a second, the strips say so
check progress_collectives "progress: $("$NT" report --json "$D" | jq -c '[.ranks[].progress]' | head -c 400)" -- \
	jqe '[.ranks[].progress | select(.bytes_per_s == null and (.collectives_per_s | max) > 0)] | length == 3' < <("$NT" report --json "$D")
check progress_collectives_text "$(LANG=C "$NT" report "$D" | grep -A3 '^progress')" -- \
	bash -c 'grep -q "^progress: collectives a second each rank ran" <<<"$1" && test "$(grep -cE "^  rank [0-2] +\|[ .:=+*#@-]*[.:=+*#@-][ .:=+*#@-]*\|$" <<<"$1")" -eq 3' _ "$(LANG=C "$NT" report "$D")"
"$NT" convert "$D" -o "$TMP/ib.trace.json" >/dev/null 2>&1
got=$(jq '[.traceEvents[] | select(.cat=="verbs" and .ph=="i" and (.name | test("^QP 0x[0-9a-f]+ -> RTS$")) and .tid != 0 and .args.timeout == 14)] | length' "$TMP/ib.trace.json")
check convert_qps "$got RTS instants in the Perfetto trace, the HCA made $n_rts" -- test "$got" = "$n_rts"
check no_poll_events "ncclIbConnect/Accept calls reached the dump one by one" -- \
	no_record 'select(.type=="nccl" and (.probe=="ib_connect" or .probe=="ib_accept"))' "$D"
own_pkill "$NJ"

# --- the HCA raises IBV_EVENT_QP_FATAL on rank 1's QP: ib_error with the QP, its peer, settings ---
D=$TMP/async.jsonl
NCCL_IB_TIMEOUT=14 NCCL_IB_RETRY_CNT=3 "$NT" run -t 2 --dump "$D" -- "$NJ" --ranks 3 --iters 10 \
	--net ib --fault ib-async --fault-rank 1 --fault-for 2 --timeout 20 >"$TMP/async.out" 2>&1
f=$(findings "$D")
check async_kind "findings: $(kind_ranks "$f")" -- \
	test "$(kind_ranks "$f")" = "ib_error 1"
qpn=$(jq -r 'select(.type=="ib_event" and .event=="IBV_EVENT_QP_FATAL") | .qp_num' "$D" | head -1)
check async_event "no ib_event IBV_EVENT_QP_FATAL in the dump" -- test -n "$qpn"
check async_summary "$(jq -r '.[0].summary' <<<"$f")" -- \
	jqe ".[0].summary | test(\"raised IBV_EVENT_QP_FATAL on QP $(printf '0x%x' "${qpn:-0}") .*timeout 14, retry_cnt 3\")" <<<"$f"
check async_peer "the QP's other end is not named" -- \
	jqe '.[0].evidence | map(select(test("other end, QP 0x[0-9a-f]+, is rank [02] "))) | length == 1' <<<"$f"
check async_report "report does not show the event on rank 1" -- \
	grep -q "HCA event IBV_EVENT_QP_FATAL on QP $(printf '0x%x' "${qpn:-0}")" < <("$NT" report "$D")
"$NT" convert "$D" -o "$TMP/async.trace.json" >/dev/null 2>&1
check async_convert "no IBV_EVENT_QP_FATAL instant on rank 1's process in the trace" -- \
	jqe '[.traceEvents[] | select(.cat=="verbs" and .name=="IBV_EVENT_QP_FATAL" and .pid==1 and .s=="p")] | length == 1' "$TMP/async.trace.json"
check async_setting "NCCL_IB_TIMEOUT not as NCCL read it" -- \
	test "$(first_setting "$f" NCCL_IB_TIMEOUT)" = "14 read"
check async_hypothesis "$(jq -c '.[0].hypotheses' <<<"$f")" -- \
	jqe '.[0].hypotheses[0] | test("moved QP 0x[0-9a-f]+ to the error state")' <<<"$f"
own_pkill "$NJ"

# --- a completion error over a real IB connection: its peer address is a rank's socket ---
D=$TMP/ibwarn.jsonl
"$NT" run -t 2 --dump "$D" -- "$NJ" --ranks 3 --iters 10 --net ib --fault ib-error --fault-rank 1 \
	--timeout 20 >"$TMP/ibwarn.out" 2>&1
f=$(findings "$D")
check warn_kind "findings: $(kind_ranks "$f")" -- \
	test "$(kind_ranks "$f")" = "ib_error 1"
check warn_peer_rank "peer rank $(jq -r '.[0].peer_rank' <<<"$f"): $(jq -c '.[0].evidence' <<<"$f")" -- \
	jqe '(.[0].peer_rank == 2) and (.[0].evidence | map(select(test("^peer 127.0.0.1<[0-9]+> is rank 2 "))) | length == 1)' <<<"$f"
own_pkill "$NJ"

# --- rank 1 blocks inside ncclIbAccept: the silent IB ring-setup hang, named in time ---
D=$TMP/handshake.jsonl
THRESH=2
"$NT" run -t $THRESH --dump "$D" -- "$NJ" --ranks 3 --iters 4 --net ib --fault ib-handshake \
	--fault-rank 1 --fault-for 6 --timeout 20 >"$TMP/hs.out" 2>&1
f=$(findings "$D")
check handshake_kind "findings: $(kind_ranks "$f")" -- \
	test "$(kind_ranks "$f")" = "ring_setup_blocked 1"
check handshake_culprit "named $(culprit "$f"), the job says rank 1 pid $(marker_pid "$TMP/hs.out")" -- \
	test "$(culprit "$f")" = "rank 1 pid $(marker_pid "$TMP/hs.out")"
check handshake_phase "$(jq -r '.[0].phase' <<<"$f")" -- \
	jqe '.[0].phase | test("blocked inside ncclIbAccept \\(IB handshake stage [A-Za-z]+\\)")' <<<"$f"
check handshake_qps "no waiter QP short of RTS in the evidence" -- \
	jqe '.[0].evidence | map(select(test("QP 0x[0-9a-f]+ on mlx5_0 at INIT for [0-9.]+s: never reached RTS"))) | length >= 1' <<<"$f"
check handshake_settings "IB settings not listed" -- \
	jqe '.[0].settings | has("NCCL_IB_GID_INDEX")' <<<"$f"
detected handshake "$TMP/hs.out" "$D" ring_setup_blocked $THRESH
own_pkill "$NJ"
end_checks
