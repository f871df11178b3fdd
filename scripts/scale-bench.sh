#!/bin/bash
# SPDX-License-Identifier: MIT
# `watch` and the merged `report` at the scale of a big job, by replay (issue 52): N nodes of 8
# ranks served by one `nccltrace replay --nodes N` from real dumps of the fake NCCL job (node 0
# the dump where rank 1 sleeps 6 s mid-training, the others a healthy one), `watch` over all N
# /state endpoints as a user runs it, then the same with every node healthy; and `report` (text
# and --json) over N copies of a long healthy dump, each under its own host.
#   scripts/scale-bench.sh [N...]        (default 16 64 128 512; root, for the dumps it makes)
#   OUT=DIR (default scale-out): the dumps made, the logs, results.md (the table)
#   STALL=DUMP HEALTHY=DUMP: those dumps instead of new ones (8 ranks each)
#   LONG=DUMP: the long dump the merged report reads N copies of (make one of an hour with
#              `nccltrace run --dump LONG -- env LD_LIBRARY_PATH=build/fakenccl build/nccljob
#              --ranks 8 --iters 32000 --step-delay 0.1 --timeout 4000`); none: no report rows
#   REPORT_MAX=N: the report rows only up to N nodes (default 128)
# Per N: the bytes of one /state (node 0, mid-stall) and of a whole round; watch's round (wall,
# CPU, peak RSS: what watch tells when stopped); the time from the stall's start (its finding's
# opening less the wait it had seen, in the dump) to watch's first finding, its culprit (host and
# rank, from `watch --once --json` then), findings in all; the findings of the healthy replay.
set -u
cd "$(dirname "$0")/.."
NT=${NT:-build/nccltrace}
OUT=${OUT:-scale-out}
NS=${*:-16 64 128 512}
BASE=9500
REPORT_MAX=${REPORT_MAX:-128}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
now() { date +%s.%N; }

make_dump() { # NAME ARGS...: an 8-rank fake-NCCL job's dump
	local name=$1
	shift
	[ -s "$OUT/$name.jsonl" ] && return 0
	"$NT" run --no-tui --dump "$OUT/$name.jsonl" -- env LD_LIBRARY_PATH=build/fakenccl \
		build/nccljob --ranks 8 --step-delay 0.05 --timeout 60 "$@" >"$OUT/$name.log" 2>&1
}
if [ -z "${STALL:-}" ]; then
	make_dump stall --iters 150 --fault in-collective --fault-rank 1 --fault-for 6 || exit 1
	STALL=$OUT/stall.jsonl
fi
if [ -z "${HEALTHY:-}" ]; then
	make_dump healthy --iters 250 || exit 1
	HEALTHY=$OUT/healthy.jsonl
fi
# the stall's start in the dump: its first finding's opening less the wait it had seen then
STALL_TS=$("$NT" cat "$STALL" | jq -r 'select(.type == "finding" and .event == "open") |
	(.ts_ns - .since_s * 1e9 | floor)' | head -1)
[ -n "$STALL_TS" ] || { echo "scale-bench: $STALL has no finding" >&2; exit 1; }
dur() { "$NT" cat "$1" | jq -s '[.[] | select(.type == "state") | .ts_ns] |
	(max - min) / 1e9 | ceil'; }
DUR=$(($(dur "$STALL") > $(dur "$HEALTHY") ? $(dur "$STALL") : $(dur "$HEALTHY")))

eps() { for k in $(seq 0 $(($1 - 1))); do echo -n "127.0.0.1:$((BASE + k)) "; done; }

# replay_watch N TAG DUMPS...: replay N nodes, watch them for the dumps' length + 3 s
replay_watch() {
	local n=$1 tag=$2 R W
	shift 2
	"$NT" replay --nodes "$n" --listen 127.0.0.1:$BASE "$@" 2>"$OUT/replay-$tag-$n.log" &
	R=$!
	for _ in $(seq 50); do
		curl -s -o /dev/null "http://127.0.0.1:$((BASE + n - 1))/state" && break
		sleep 0.1
	done
	# shellcheck disable=SC2046
	"$NT" watch --no-tui $(eps "$n") 2>"$OUT/watch-$tag-$n.err" \
		> >(while IFS= read -r l; do echo "$(now) $l"; done >"$OUT/watch-$tag-$n.log") &
	W=$!
	if [ "$tag" = stall ]; then
		# mid-stall: the culprit as watch names it, and what the /state pages weigh
		local at r0 ft
		r0=$(sed -n 's/.*replaying .* (ts_ns \([0-9]*\)) at realtime_ns \([0-9]*\).*/\1 \2/p' \
			"$OUT/replay-$tag-$n.log" | head -1)
		ft=${r0% *}
		r0=${r0#* }
		at=$(awk -v s="$STALL_TS" -v f="$ft" -v r="$r0" 'BEGIN { printf "%.3f", (r + s - f) / 1e9 + 4.5 }')
		sleep "$(awk -v a="$at" -v n="$(now)" 'BEGIN { d = a - n; print (d > 0 ? d : 0) }')"
		# shellcheck disable=SC2046
		"$NT" watch --once --json $(eps "$n") >"$OUT/once-$n.json" 2>/dev/null
		curl -s "http://127.0.0.1:$BASE/state" | wc -c >"$OUT/bytes-$n"
		for k in $(seq 0 $((n - 1))); do curl -s "http://127.0.0.1:$((BASE + k))/state"; done |
			wc -c >>"$OUT/bytes-$n"
		echo "$((r0 + STALL_TS - ft))" >"$OUT/stall-real-$n"
	fi
	local left=$((DUR + 3))
	[ "$tag" = stall ] && left=$((left - 5))
	sleep "$left"
	kill -TERM "$W" 2>/dev/null
	sleep 1
	kill -TERM "$R"
	wait "$R" 2>/dev/null
}

ROWS=()
for n in $NS; do
	replay_watch "$n" stall "$STALL" "$HEALTHY"
	replay_watch "$n" healthy "$HEALTHY"
	cost=$(sed -n 's/.*watch: \(.*\)/\1/p' "$OUT/watch-stall-$n.err")
	first=$(grep -m1 -E '^[0-9.]+ nccltrace: [A-Z_]+ [0-9.]+s' "$OUT/watch-stall-$n.log")
	opened=$(grep -cE '^[0-9.]+ nccltrace: [A-Z_]+ [0-9.]+s' "$OUT/watch-stall-$n.log")
	falsef=$(grep -cE '^[0-9.]+ nccltrace: [A-Z_]+ [0-9.]+s' "$OUT/watch-healthy-$n.log")
	# and watch's own part: from the moment the replay served the state whose wait it names
	# (the stall's start + the age the finding gives) to watch's line
	age=$(sed -n 's/^[0-9.]* nccltrace: [A-Z_]* \([0-9.]*\)s.*/\1/p' <<<"$first")
	lat=$(awk -v t="${first%% *}" -v s="$(cat "$OUT/stall-real-$n")" -v a="${age:-0}" \
		'BEGIN { if (t == "") print "none"; else printf "%.1f s (watch: %.2f s)", t - s / 1e9, t - s / 1e9 - a }')
	culprit=$(jq -r '[.findings[] | "\(.kind) rank \(.rank) on \(.host)"] | join("; ")' \
		"$OUT/once-$n.json" 2>/dev/null)
	read -r b1 ball < <(tr '\n' ' ' <"$OUT/bytes-$n")
	ROWS+=("| $n × 8 = $((n * 8)) | $((b1 / 1024)) KB / $((ball / 1024)) KB | $cost | $lat | ${culprit:-none} | $opened | $falsef |")
done

RROWS=()
if [ -n "${LONG:-}" ]; then
	hours=$(awk -v d="$(dur "$LONG")" 'BEGIN { printf "%.2f", d / 3600 }')
	for n in $NS; do
		[ "$n" -le "$REPORT_MAX" ] || continue
		rm -rf "$OUT/long" && mkdir -p "$OUT/long"
		# node k: the dump under host node-k, its loopback its own (its ranks as written)
		head -1 "$LONG" >"$OUT/long/head"
		for k in $(seq 0 $((n - 1))); do
			{ sed -e "s/\"host\":\"[^\"]*\"/\"host\":\"node-$k\"/" \
				-e "s/\"loopback\":\"\\([^\"]*\\)\"/\"loopback\":\"\\1#$k\"/" "$OUT/long/head"
			  tail -n +2 "$LONG"; } >"$OUT/long/node-$k.jsonl"
		done
		size=$(du -sm "$OUT/long" | cut -f1)
		/usr/bin/time -o "$OUT/time" -f '%e s, %M KB' "$NT" report "$OUT"/long/node-*.jsonl \
			>"$OUT/report-$n.txt" 2>/dev/null
		t1=$(tail -1 "$OUT/time")
		/usr/bin/time -o "$OUT/time" -f '%e s, %M KB' "$NT" report --json \
			"$OUT"/long/node-*.jsonl >"$OUT/report-$n.json" 2>/dev/null
		t2=$(tail -1 "$OUT/time")
		nf=$(jq '.findings | length' "$OUT/report-$n.json" 2>/dev/null)
		RROWS+=("| $n × $hours h | $size MB | $t1 | $t2 | ${nf:-?} |")
		rm -rf "$OUT/long"
	done
fi

{
	echo "| nodes × ranks | one /state / a round's | watch (told when stopped) | stall → watch's first finding (watch's own part) | culprit (watch --once, mid-stall) | findings opened | healthy: findings |"
	echo "|---|---|---|---|---|---|---|"
	printf '%s\n' "${ROWS[@]}"
	if [ ${#RROWS[@]} -gt 0 ]; then
		echo
		echo "| merged report: nodes × length | dumps | report (wall, peak RSS) | report --json | findings |"
		echo "|---|---|---|---|---|"
		printf '%s\n' "${RROWS[@]}"
	fi
} | tee "$OUT/results.md"
