#!/bin/bash
# SPDX-License-Identifier: MIT
# How report, convert and report --html cope with a long dump: a synthetic one of RANKS ranks
# traced for HOURS hours (a snapshot a second with 4 connections per rank, setup phases, a
# stall in the middle, optionally a collective launch every 100 ms per rank), timed; the HTML
# rendered by headless Chromium when there is one. Times and byte counts are printed %.0f: mawk,
# Debian's awk, prints %d of anything past 2^31 as 2147483647.
#   scripts/bench-postmortem.sh [RANKS] [HOURS] [COLLECTIVES_PER_S]
# KEEP=DIR keeps the dump and the page there.
set -eu
cd "$(dirname "$0")/.."
RANKS=${1:-8}
HOURS=${2:-1}
CPS=${3:-0}
NT=${NT:-build/nccltrace}
W=$(mktemp -d /tmp/nccltrace-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
D=$W/long.jsonl
awk -v R="$RANKS" -v H="$HOURS" -v CPS="$CPS" 'BEGIN {
	t0 = 1000000000000; S = int(H * 3600); sec = 1000000000;
	printf "{\"nccltrace\":1,\"version\":\"bench\",\"host\":\"bench\",\"start_ns\":%.0f,\"cmd\":[\"synthetic\"]}\n", t0;
	for (r = 0; r < R; r++) {
		pid = 1000 + r;
		printf "{\"type\":\"rank\",\"ts_ns\":%.0f,\"pid\":%d,\"rank\":%d}\n", t0 + sec, pid, r;
		split("init bootstrap topology|transport init|ring setup|transport setup|proxy connect", ph, "|");
		printf "{\"type\":\"nccl\",\"ts_ns\":%.0f,\"pid\":%d,\"tid\":%d,\"probe\":\"comm_init\",\"event\":\"enter\",\"phase\":\"init\"}\n", t0 + 2 * sec, pid, pid;
		printf "{\"type\":\"nccl\",\"ts_ns\":%.0f,\"pid\":%d,\"tid\":%d,\"probe\":\"bootstrap_init\",\"event\":\"enter\",\"phase\":\"bootstrap\"}\n", t0 + 2 * sec + 1000000, pid, pid;
		printf "{\"type\":\"nccl\",\"ts_ns\":%.0f,\"pid\":%d,\"tid\":%d,\"probe\":\"bootstrap_init\",\"event\":\"exit\",\"phase\":\"bootstrap\"}\n", t0 + 2 * sec + 90000000, pid, pid;
		printf "{\"type\":\"nccl\",\"ts_ns\":%.0f,\"pid\":%d,\"tid\":%d,\"probe\":\"comm_init\",\"event\":\"exit\",\"phase\":\"init\"}\n", t0 + 2 * sec + 150000000, pid, pid;
		printf "{\"type\":\"nccl\",\"ts_ns\":%.0f,\"pid\":%d,\"tid\":%d,\"probe\":\"ring_connect\",\"event\":\"enter\",\"phase\":\"ring setup\"}\n", t0 + 3 * sec, pid, pid;
		printf "{\"type\":\"nccl\",\"ts_ns\":%.0f,\"pid\":%d,\"tid\":%d,\"probe\":\"ring_connect\",\"event\":\"exit\",\"phase\":\"ring setup\"}\n", t0 + 3 * sec + 200000000, pid, pid;
	}
	for (s = 4; s < S; s++) {
		if (CPS > 0)
			for (k = 0; k < CPS; k++)
				for (r = 0; r < R; r++)
					printf "{\"type\":\"nccl\",\"ts_ns\":%.0f,\"pid\":%d,\"tid\":%d,\"probe\":\"enqueue\",\"event\":\"enter\",\"phase\":\"enqueue\",\"coll\":\"AllReduce\",\"comm_hash\":\"9f3c\",\"seq\":%d}\n", t0 + s * sec + k * (sec / CPS) + r * 1000, 1000 + r, 1000 + r, (s - 4) * CPS + k + 1;
		line = sprintf("{\"type\":\"snapshot\",\"ts_ns\":%.0f,\"procs\":[", t0 + s * sec);
		for (r = 0; r < R; r++)
			line = line sprintf("%s{\"pid\":%d,\"rank\":%d,\"state\":\"R\",\"nccl\":{\"comms\":[{\"comm_hash\":\"9f3c\",\"collectives\":{\"AllReduce\":%d}}]}}", r ? "," : "", 1000 + r, r, s * 10);
		line = line "],\"conns\":[";
		for (r = 0; r < R; r++)
			for (c = 0; c < 4; c++)
				line = line sprintf("%s{\"id\":\"%x\",\"pid\":%d,\"bytes_sent\":%.0f,\"bytes_recv\":%.0f,\"retrans\":0}", (r || c) ? "," : "", r * 16 + c, 1000 + r, s * 1048576, s * 1048576);
		print line "]}";
		if (s == int(S / 2))
			printf "{\"type\":\"finding\",\"event\":\"open\",\"id\":1,\"kind\":\"stall\",\"rank\":1,\"pid\":1001,\"peer_rank\":0,\"phase\":\"sleeping\",\"since_s\":5.0,\"summary\":\"rank 1 sleeps\",\"evidence\":[\"x\"],\"settings\":{},\"ts_ns\":%.0f}\n", t0 + s * sec;
		if (s == int(S / 2) + 60)
			printf "{\"type\":\"finding\",\"event\":\"close\",\"id\":1,\"kind\":\"stall\",\"rank\":1,\"pid\":1001,\"peer_rank\":0,\"phase\":\"sleeping\",\"since_s\":65.0,\"summary\":\"rank 1 sleeps\",\"evidence\":[\"x\"],\"settings\":{},\"ts_ns\":%.0f}\n", t0 + s * sec;
	}
	printf "{\"type\":\"footer\",\"ts_ns\":%.0f,\"exit_status\":0,\"lost\":{}}\n", t0 + S * sec;
}' >"$D"
echo "dump: $RANKS ranks, $HOURS h, $CPS collectives/s per rank: $(du -h "$D" | cut -f1), $(wc -l <"$D") records"
t() { # NAME CMD...: wall time and peak RSS
	local name=$1
	shift
	/usr/bin/time -f "$name: %e s, %M KiB peak RSS" "$@" >/dev/null 2>"$W/time" || { cat "$W/time"; exit 1; }
	tail -1 "$W/time"
}
t "report" "$NT" report "$D"
t "report --json" "$NT" report --json "$D"
t "convert" "$NT" convert "$D" -o "$W/long.trace.json"
echo "trace: $(du -h "$W/long.trace.json" | cut -f1), $(jq '.traceEvents | length' "$W/long.trace.json") events"
t "report --html" "$NT" report --html "$W/long.html" "$D"
echo "html: $(du -h "$W/long.html" | cut -f1)"
CHROMIUM=$(command -v chromium || true)
if [ -n "$CHROMIUM" ]; then
	# the browser's start and the page's own time: its script's end, layout done
	/usr/bin/time -f "chromium render: %e s, %M KiB peak RSS" timeout 120 "$CHROMIUM" \
		--headless --no-sandbox --disable-gpu --dump-dom "file://$W/long.html" \
		>"$W/dom.html" 2>"$W/time" || { cat "$W/time"; exit 1; }
	tail -1 "$W/time"
	echo "page drawn in: $(grep -o 'data-drawn-ms="[0-9]*"' "$W/dom.html" | grep -o '[0-9]*') ms"
	echo "rows rendered: $(grep -o 'class="row"' "$W/dom.html" | wc -l)"
fi
if [ -n "${KEEP:-}" ]; then
	mkdir -p "$KEEP"
	cp "$D" "$W/long.html" "$KEEP/"
fi
