#!/bin/bash
# SPDX-License-Identifier: MIT
# How big a long job's dump grows (format 2): a synthetic job of RANKS ranks with CONNS
# connections each, traced for HOURS hours, every connection moving bytes every second (a
# training job's NCCL channels), HANGS stalls of 2 minutes spread over it, each a finding. Its
# snapshots, whole each second (format 1's frames with format 2's fields: counts that are 0
# left out), are written again by the tracer's own writer (build/dumpsize: dump__write,
# dump__hold, the rate rule of records.c): adaptively, at full rate, and adaptively into a .zst
# dump (a zstd frame a second). Prints bytes per rank-hour each way, then report's time and
# findings on the adaptive dump. The input is streamed (it is GBs), never stored.
#   scripts/bench-dumpsize.sh [RANKS] [CONNS] [HOURS] [HANGS]
set -eu
cd "$(dirname "$0")/.."
RANKS=${1:-8}
CONNS=${2:-100}
HOURS=${3:-1}
HANGS=${4:-3}
NT=${NT:-build/nccltrace}
W=$(mktemp -d /tmp/nccltrace-dumpsize.XXXXXX)
trap 'rm -rf "$W"' EXIT
make -s build/dumpsize >/dev/null

gen() {
	awk -v R="$RANKS" -v C="$CONNS" -v H="$HOURS" -v NH="$HANGS" 'BEGIN {
	t0 = 1000000000000; S = int(H * 3600); sec = 1000000000;
	printf "{\"nccltrace\":1,\"version\":\"bench\",\"host\":\"bench\",\"start_ns\":%.0f,\"cmd\":[\"synthetic\"]}\n", t0;
	for (r = 0; r < R; r++)
		printf "{\"type\":\"rank\",\"ts_ns\":%.0f,\"pid\":%d,\"rank\":%d}\n", t0 + sec, 1000 + r, r;
	# hang h: rank (h % R) stops at hs[h] for 120 s; the others wait
	for (h = 0; h < NH; h++) hs[h] = int(S * (h + 1) / (NH + 1));
	moved = 0;
	for (s = 2; s < S; s++) {
		hung = -1;
		for (h = 0; h < NH; h++) if (s >= hs[h] && s < hs[h] + 120) hung = h;
		if (hung < 0) moved = s;
		ts = t0 + s * sec;
		line = sprintf("{\"type\":\"snapshot\",\"ts_ns\":%.0f,\"procs\":[", ts);
		for (r = 0; r < R; r++)
			line = line sprintf("%s{\"pid\":%d,\"rank\":%d,\"comm\":\"python3\",\"state\":\"%s\",\"where\":\"%s\",\"cpu_busy\":%.6f,\"nccl\":{\"threads\":[{\"tid\":%d,\"role\":\"proxy_progress\"}],\"comms\":[{\"comm_hash\":\"9f3c\",\"rank\":%d,\"nranks\":%d,\"source\":\"comm->seqNumber\",\"total\":%d,\"collectives\":{\"AllReduce\":%d}}],\"warnings\":0,\"settings_read\":15}}", r ? "," : "", 1000 + r, r, hung >= 0 ? "S" : "R", hung >= 0 ? "futex" : "", hung >= 0 ? 0 : 0.9 + (s % 7) / 100, 2000 + r, r, R, moved * 10, moved * 10);
		line = line "],\"conns\":[";
		for (r = 0; r < R; r++)
			for (c = 0; c < C; c++) {
				b = moved * 1048576 + c * 4096;
				line = line sprintf("%s{\"id\":\"ffff8881%08x\",\"pid\":%d,\"tid\":%d,\"peer_pid\":%d,\"src\":\"10.0.%d.%d:%d\",\"dst\":\"10.0.%d.%d:%d\",\"state\":\"ESTABLISHED\",\"bytes_sent\":%.0f,\"bytes_recv\":%.0f,\"send_calls\":%d,\"recv_calls\":%d,\"recv_eagain\":%d,\"srtt_us\":%d,\"snd_cwnd\":10,\"last_send_age_s\":%.6f,\"last_recv_age_s\":%.6f,\"nccl\":\"net\",\"nccl_phase\":\"proxy_progress\"}", (r || c) ? "," : "", r * C + c, 1000 + r, 2000 + r, 1000 + (r + 1) % R, r, c % 250, 40000 + c, (r + 1) % R, c % 250, 50000 + c, b, b, moved * 16, moved * 16, moved * 3, 40 + (s * 7 + c) % 20, (s - moved) + 0.001 * (c % 9), (s - moved) + 0.002 * (c % 7));
			}
		print line "]}";
		for (h = 0; h < NH; h++) {
			if (s == hs[h] + 5)
				printf "{\"type\":\"finding\",\"event\":\"open\",\"id\":%d,\"kind\":\"stall\",\"rank\":%d,\"pid\":%d,\"phase\":\"sleeping\",\"since_s\":5.0,\"summary\":\"rank %d sleeps\",\"evidence\":[\"rank %d sleeps\"],\"settings\":{},\"ts_ns\":%.0f}\n", h + 1, h % R, 1000 + h % R, h % R, h % R, ts;
			if (s == hs[h] + 120)
				printf "{\"type\":\"finding\",\"event\":\"close\",\"id\":%d,\"kind\":\"stall\",\"rank\":%d,\"pid\":%d,\"phase\":\"sleeping\",\"since_s\":120.0,\"summary\":\"rank %d sleeps\",\"evidence\":[\"rank %d sleeps\"],\"settings\":{},\"ts_ns\":%.0f}\n", h + 1, h % R, 1000 + h % R, h % R, h % R, ts;
		}
	}
	printf "{\"type\":\"footer\",\"ts_ns\":%.0f,\"exit_status\":0,\"lost\":{}}\n", t0 + S * sec;
	}'
}

rh=$(awk -v r="$RANKS" -v h="$HOURS" 'BEGIN { print r * h }')
mb() { awk -v b="$1" -v rh="$rh" 'BEGIN { printf "%.0f bytes, %.2f MB per rank-hour", b, b / rh / 1e6 }'; }
echo "synthetic: $RANKS ranks x $CONNS connections, $HOURS h, $HANGS hangs of 120 s"
for mode in adaptive full zst; do
	extra=()
	out=$W/$mode.jsonl
	[ $mode = full ] && extra=(full)
	[ $mode = zst ] && out=$W/adaptive.jsonl.zst
	gen | tee >(wc -c >"$W/in.$mode") | /usr/bin/time -f "%e s %M KiB" -o "$W/time.$mode" \
		build/dumpsize /dev/stdin "$out" "${extra[@]}" >"$W/out.$mode"
	sleep 0.2
	echo "$mode: $(mb "$(stat -c %s "$out")"); $(cat "$W/out.$mode"); writer $(cat "$W/time.$mode")"
done
echo "whole snapshots each second (the input): $(mb "$(cat "$W/in.full")")"
/usr/bin/time -f "%e s %M KiB" -o "$W/time.report" "$NT" report --json "$W/adaptive.jsonl" >"$W/report.json"
echo "report --json on the adaptive dump: $(cat "$W/time.report"); findings: $(jq -c '[.findings[] | {kind, rank, since_s}]' "$W/report.json")"
"$NT" report --json "$W/full.jsonl" >"$W/report-full.json"
if cmp -s <(jq -c '[.findings[] | {kind, rank, since_s, evidence}]' "$W/report.json") \
	<(jq -c '[.findings[] | {kind, rank, since_s, evidence}]' "$W/report-full.json"); then
	echo "the full-rate dump's findings: the same kinds, ranks, since_s and evidence"
else
	echo "the full-rate dump's findings DIFFER: $(jq -c '[.findings[] | {kind, rank, since_s}]' "$W/report-full.json")"
fi
