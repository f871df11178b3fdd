#!/bin/bash
# SPDX-License-Identifier: MIT
# NCCL 2.18-2.22's collective counter, comm->sharedRes->collOpCount (no seqNumber, no profiler
# plugin there), on the fake NCCL's 2.21.5 build, which keeps it where and when 2.21.5 does
# (+1 per collective at its launch, in a struct laid out as 2.21's): nccltrace reads it at the
# offsets of the library's DWARF from real processes under real BPF, their collectives over
# real TCP. A rank stopped before its 21st all-reduce is the stall the counts name; healthy jobs
# give nothing and exact counts; a rank slow at every step is the straggler; a broadcast where
# the others all-reduce, which totals cannot tell, names no wrong rank (and the right one with
# --collectives, whose probe gives each rank's function).
# checks: 29
# lane: long 48
. "$(dirname "$0")/lib.sh"

NJ=$ROOT/build/nccljob
V221=$ROOT/build/fakenccl-2.21.5/libnccl.so.2
THRESH=2
SRC="comm->sharedRes->collOpCount"
export NCCLTRACE_CACHE_DIR=$TMP/cache

# --- the offsets, from the library's DWARF (the fake's _Static_asserts pin them) ---
[ -e "$V221" ] && out=$("$NT" probes "$V221" 2>&1)
layout=$(awk '$1 ~ /^(ncclComm\.(seqNumber|sharedRes|persistentRefs)|ncclSharedResources\.(refCount|owner|collOpCount))$/ {printf "%s=%s ", $1, $2}' <<<"$out")
check probes_layout "$layout" -- test "$layout" = \
	"ncclComm.seqNumber=-1 ncclComm.sharedRes=1066208 ncclComm.persistentRefs=1066216 ncclSharedResources.refCount=0 ncclSharedResources.owner=8 ncclSharedResources.collOpCount=784 "
check probes_source "$(grep '^profiler:' <<<"$out")" -- \
	grep -q "^profiler: .*collective counts only from $SRC" <<<"$out"

need_fixture counters_old "$NJ" "$V221" || end_checks

# traced NAME [nccltrace options...] -- [nccljob options...]: the 2.21.5 build in place of the
# default, NCCL started at once after exec
traced() {
	local name=$1 nt=()
	shift
	while [ "$1" != -- ]; do
		nt+=("$1")
		shift
	done
	shift
	"$NT" run -t $THRESH "${nt[@]}" --dump "$TMP/$name.jsonl" -- \
		env LD_LIBRARY_PATH="$(dirname "$V221")" "$NJ" --import-delay 0 "$@" \
		>"$TMP/$name.out" 2>&1
}
# "pid:total ..." of each rank, its largest total in the dump's snapshots from SRC, by rank
totals() {
	jq -s -r --arg src "$SRC" '([.[] | select(.type=="rank") | {(.pid|tostring): .rank}] | add) as $r |
		[.[] | select(.type=="snapshot") | .procs[] | select(.nccl.comms[0].source == $src) |
		{pid, t: .nccl.comms[0].total}] | group_by(.pid) |
		map({r: $r[(.[0].pid|tostring)], t: (map(.t) | max)}) | sort_by(.r) |
		map("\(.r):\(.t)") | join(" ")' <(whole "$1")
}
# the comm hash the ranks' initTransportsRank saw (2.21 sets it after bootstrapInit)
comm_of() {
	jq -r 'select(.type=="nccl" and .probe=="init_transports" and .event=="enter") | .comm_hash' \
		"$1" | head -1
}
# evidence lines of the first finding matching REGEX
evidence_n() { jq -r --arg re "$2" '.[0].evidence | map(select(test($re))) | length' <<<"$1"; }

# --- rank 1 sleeps before its 21st all-reduce: the stall the counts name ---
traced stall -- --ranks 3 --iters 40 --step-delay 0 --fault in-collective --fault-rank 1 \
	--fault-for 5 --timeout 20
D=$TMP/stall.jsonl OUT=$TMP/stall.out
f=$(findings "$D")
hash=$(comm_of "$D")
check stall_kind "findings: $(kind_ranks "$f")" -- test "$(kind_ranks "$f")" = "stall 1"
check stall_culprit "named $(culprit "$f"), the job says rank 1 pid $(marker_pid "$OUT")" -- \
	test "$(culprit "$f")" = "rank 1 pid $(marker_pid "$OUT")"
check stall_comm "comm $(jq -r '.[0].comm_hash' <<<"$f"), the ranks' $hash" -- \
	test -n "$hash" -a "$(jq -r '.[0].comm_hash' <<<"$f")" = "$hash"
check stall_behind "rank 1's 20 not in the evidence: $(jq -c '.[0].evidence' <<<"$f")" -- \
	test "$(evidence_n "$f" "^rank 1 \\(pid [0-9]+\\) launched 20 collectives \\(all functions together\\) on comm $hash \\($SRC\\)")" = 1
check stall_ahead "ranks 0 and 2's 21 not in the evidence: $(jq -c '.[0].evidence' <<<"$f")" -- \
	test "$(evidence_n "$f" "^ranks 0,2 \\(2\\) launched 21 collectives \\(all functions together\\) on comm $hash \\($SRC\\)")" = 1
check stall_dump_counts "counts in the dump: $(totals "$D")" -- test "$(totals "$D")" = "0:40 1:40 2:40"
detected stall "$OUT" "$D" stall $THRESH
own_pkill "$NJ"

# --- healthy: busy, slow, idle at the end; nothing found, every launch counted once ---
n=0
for spec in "0 30 0" "0.2 12 0" "0.05 20 3"; do
	set -- $spec
	n=$((n + 1))
	traced healthy$n -- --ranks 3 --step-delay "$1" --iters "$2" --linger "$3" --timeout 30
	rc=$?
	D=$TMP/healthy$n.jsonl
	check healthy${n}_exit "exit $rc: $(tail -2 "$TMP/healthy$n.out")" -- test $rc -eq 0
	check healthy${n}_none "findings: $(kind_ranks "$(findings "$D")")" -- \
		test "$(findings "$D" | jq length)" = 0
	check healthy${n}_counts "counts: $(totals "$D"), want $2 each from $SRC" -- \
		test "$(totals "$D")" = "0:$2 1:$2 2:$2"
done

# --- rank 1 sleeps 0.3 s before every all-reduce: the straggler, from the totals ---
traced straggler -- --ranks 3 --iters 24 --fault slow --fault-rank 1 --fault-for 0.3 --timeout 30
D=$TMP/straggler.jsonl OUT=$TMP/straggler.out
f=$(findings "$D")
check straggler_kind "findings: $(kind_ranks "$f")" -- test "$(kind_ranks "$f")" = "straggler 1"
check straggler_culprit "named $(culprit "$f"), the job says rank 1 pid $(marker_pid "$OUT")" -- \
	test "$(culprit "$f")" = "rank 1 pid $(marker_pid "$OUT")"
check straggler_source "the counts' source not in the evidence: $(jq -c '.[0].evidence' <<<"$f")" -- \
	test "$(evidence_n "$f" "^rank 1 alone behind in [0-9]+ of [0-9]+ samples.*\\($SRC sampled every tick\\)")" = 1
check straggler_comm "comm $(jq -r '.[0].comm_hash' <<<"$f"), the ranks' $(comm_of "$D")" -- \
	test "$(jq -r '.[0].comm_hash' <<<"$f")" = "$(comm_of "$D")"
own_pkill "$NJ"

# --- rank 1 broadcasts its 21st collective where ranks 0 and 2 all-reduce: every rank has
# launched 21, and totals cannot say who is in which function. The job hangs until the launcher
# kills it: no finding may name rank 0 or 2 while the ranks live (before, the sockets named
# rank 2, whose proxy peeks at rank 1's broadcast without a byte of progress) ---
traced mismatch -- --ranks 3 --iters 40 --step-delay 0 --fault mismatch --fault-rank 1 --timeout 8
D=$TMP/mismatch.jsonl OUT=$TMP/mismatch.out
died=$(jq -s '[.[] | select(.type=="proc" and .event=="exit") | .ts_ns] | min // 0' "$D")
wrong=$(jq -c -s --argjson t "$died" '[.[] | select(.type=="finding" and .event=="open" and
	.ts_ns < $t and .rank != 1) | {kind, rank, summary}]' "$D")
check mismatch_ran "no marker, or no exit: $(marker "$OUT"), first exit $died" -- \
	test -n "$(marker_pid "$OUT")" -a "$died" != 0
check mismatch_counted "counts: $(totals "$D"), want 21 each (the broadcast counted as 2.21 counts it)" -- \
	test "$(totals "$D")" = "0:21 1:21 2:21"
check mismatch_no_wrong_culprit "named while the ranks lived: $wrong" -- test "$wrong" = "[]"
own_pkill "$NJ"

# --- the same with --collectives: the probe on ncclEnqueueCheck tells each rank's function ---
traced mismatch_args --collectives -- --ranks 3 --iters 40 --step-delay 0 --fault mismatch \
	--fault-rank 1 --timeout 8
D=$TMP/mismatch_args.jsonl OUT=$TMP/mismatch_args.out
f=$(findings "$D")
check mismatch_args_kind "findings: $(kind_ranks "$f")" -- \
	test "$(kind_ranks "$f")" = "collective_mismatch 1"
check mismatch_args_culprit "named $(culprit "$f"), the job says rank 1 pid $(marker_pid "$OUT")" -- \
	test "$(culprit "$f")" = "rank 1 pid $(marker_pid "$OUT")"
check mismatch_args_summary "$(jq -r '.[0].summary' <<<"$f")" -- \
	jqe '.[0].summary | test("rank 1 in Broadcast as collective 21 \\(count 65536 float32 root 0\\), ranks 0,2 in AllReduce as collective 21 \\(count 65536 float32\\)")' <<<"$f"
detected mismatch_args "$OUT" "$D" collective_mismatch $THRESH
own_pkill "$NJ"
end_checks
