#!/bin/bash
# SPDX-License-Identifier: MIT
# The bundle (scripts/bundle.sh, make bundle): nccltrace with its own loader and libraries, for
# GPU nodes that have none of them. Run in a mount namespace where the libraries nccltrace
# needs and the job does not (libbpf, libelf, libdw, jansson, libmicrohttpd, libcurl) are
# hidden, as on such a node: the plain build cannot start there; the bundle traces a real ring,
# names the stalled rank, serves /metrics and /state, and its watch names the rank too; the
# user's LD_PRELOAD and LD_LIBRARY_PATH reach the job as they were and never the tracer.
# checks: 12
. "$(dirname "$0")/lib.sh"

need_bpf bundle || end_checks
B=$TMP/bundle
out=$("$ROOT/scripts/bundle.sh" "$ROOT/build" "$B" 2>&1)
check made "bundle.sh: $out" -- test -x "$B/nccltrace" -a -f "$B/lib/libnccl-profiler-nccltrace.so"
if ! command -v unshare >/dev/null || ! unshare -m true 2>/dev/null; then
	skip_rest hidden "no mount namespace here (unshare -m): the hidden-libraries run needs one"
	end_checks
fi

# the host's copies of nccltrace's own libraries, hidden below by /dev/null binds
hide=()
for l in libbpf.so.1 libelf.so.1 libdw.so.1 libjansson.so.4 libmicrohttpd.so.12 libcurl.so.4; do
	p=$(ldd "$ROOT/build/nccltrace" | awk -v l=$l '$1 == l { print $3 }')
	[ -n "$p" ] && hide+=("$(readlink -f "$p")")
done
# hidden CMD...: CMD in a mount namespace of its own where those libraries are empty files
cat >"$TMP/hidden.sh" <<'EOF'
n=$1
shift
for ((i = 0; i < n; i++)); do mount --bind /dev/null "$1" || exit 70; shift; done
exec "$@"
EOF
hidden() { unshare -m --propagation private bash "$TMP/hidden.sh" ${#hide[@]} "${hide[@]}" "$@"; }

out=$(hidden "$ROOT/build/nccltrace" --version 2>&1)
check plain_cannot "the plain build started with its libraries hidden (${#hide[@]} hidden): $out" -- \
	grep -q "error while loading shared libraries" <<<"$out"
out=$(hidden "$B/nccltrace" --version 2>&1)
check version "bundle --version: $out" -- grep -q "^nccltrace " <<<"$out"

PORT=$((20000 + RANDOM % 20000))
D=$TMP/ring.jsonl
hidden "$B/nccltrace" run --no-tui -t 2 --fixed-threshold --listen 127.0.0.1:$PORT --dump "$D" -- \
	"$RJ" --ranks 4 --stall-rank 1 --duration 9 --stall-after 1.5 --stall-for 5 \
	--stall-mode sleep >"$TMP/ring.out" 2>&1 &
TRACER=$!
at_exit "kill $TRACER 2>/dev/null"
# once the finding is live: the tracer's endpoints, and watch (the bundle's) over it
wait_for 20 grep -q "^nccltrace: STALL" "$TMP/ring.out"
curl -s --max-time 2 "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics.txt"
check metrics "no nccltrace_findings{...kind=\"stall\"} 1 in /metrics: $(head -c 300 "$TMP/metrics.txt")" -- \
	grep -qE '^nccltrace_findings\{.*kind="stall".*\} 1$' "$TMP/metrics.txt"
hidden "$B/nccltrace" watch --once --json 127.0.0.1:$PORT >"$TMP/watch.json" 2>"$TMP/watch.err"
p=$(marker_pid "$TMP/ring.out")
check watch "watch named $(jq -c '[.findings[] | [.kind, .rank, .pid]]' "$TMP/watch.json" 2>&1) $(head -2 "$TMP/watch.err"), the job says rank 1 pid $p" -- \
	jqe ".findings | map(select(.kind == \"stall\" and .rank == 1 and .pid == $p)) | length == 1" \
	"$TMP/watch.json"
wait $TRACER
rc=$?
check exit "exit $rc: $(tail -3 "$TMP/ring.out")" -- test $rc -eq 0
f=$(findings "$D")
check culprit "named $(culprit "$f"), the job says rank 1 pid $p" -- \
	test "$(kind_ranks "$f")" = "stall 1" -a "$(culprit "$f")" = "rank 1 pid $p"
# the job runs with the host's loader and libraries: of the bundle it has only the libraries
# nccltrace puts into it (found beside the bundle's binary), nothing else in its environment or
# its memory
hidden "$B/nccltrace" run --no-tui -- sh -c 'env; cat /proc/$$/maps' >"$TMP/job.txt" 2>/dev/null
check job_libs "the bundle's audit module is not in the job: $(grep -m3 -E 'LD_AUDIT|audit' "$TMP/job.txt")" -- \
	grep -q "^LD_AUDIT=$B/lib/libnccltrace-audit.so$" "$TMP/job.txt"
check job_clean "the job saw more of the bundle: $(grep -F "$B" "$TMP/job.txt" | grep -v nccltrace-audit | head -2)" -- \
	bash -c "grep -q 'libc.so.6\$' '$TMP/job.txt' && ! grep -F '$B' '$TMP/job.txt' | grep -qv 'libnccltrace-audit.so\|libnccl-profiler-nccltrace.so'"
# the user's loader settings are the job's (LD_PRELOAD to run a job on another NCCL): a library
# in LD_PRELOAD is in the job's memory and never in the tracer's, and the job gets LD_PRELOAD and
# LD_LIBRARY_PATH as they were, with no NCCLTRACE_JOB_* variable of the bundle's script
LB=$ROOT/build/loadedby/libloadedby.so
LP="/nonexistent/a:$TMP/b"
LD_PRELOAD=$LB LD_LIBRARY_PATH=$LP NCCLTRACE_NVML=$ROOT/build/fakenvml/libnvidia-ml.so.1 \
	hidden "$B/nccltrace" run --no-tui -- sh -c '
	echo "job $$"; echo "preload=$LD_PRELOAD"; echo "libpath=$LD_LIBRARY_PATH"
	env | grep NCCLTRACE_JOB_; echo "maps $(grep -c libloadedby /proc/$$/maps)"; sleep 2' \
	>"$TMP/pre.out" 2>&1 &
W=$!
wait_for 10 grep -q "^maps " "$TMP/pre.out"
# the tracer: the bundle's loader running this bundle's binary ($! is the subshell around it)
T=$(pgrep -f -- "$B/lib/nccltrace run --no-tui -- sh -c" | head -1)
tracer_maps=$(grep -c libloadedby "/proc/${T:-0}/maps" 2>&1)
check preload_not_tracer "the tracer (pid ${T:-none}, $(tr '\0' ' ' <"/proc/${T:-0}/cmdline" 2>/dev/null | head -c 120)) maps LD_PRELOAD's library $tracer_maps times" -- \
	test -n "$T" -a "$tracer_maps" = 0
# nor its NVML helper (the fake NVML keeps it running), which nccltrace starts itself
H=$(pgrep -P "${T:-0}" -f nccltrace-nvml | head -1)
helper_maps=$(grep -c libloadedby "/proc/${H:-0}/maps" 2>&1)
check preload_not_helper "the NVML helper (pid ${H:-none}) maps LD_PRELOAD's library $helper_maps times" -- \
	test -n "$H" -a "$helper_maps" = 0
wait $W
check preload_job "the job: $(tr '\n' ';' <"$TMP/pre.out" | head -c 400)" -- bash -c '
	grep -qxF "preload=$2" "$1" && grep -qxF "libpath=$3" "$1" && grep -qx "maps [1-9][0-9]*" "$1" &&
	! grep -q NCCLTRACE_JOB_ "$1"' _ "$TMP/pre.out" "$LB" "$LP"
kill_leftovers
end_checks
