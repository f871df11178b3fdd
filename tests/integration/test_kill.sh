#!/bin/bash
# SPDX-License-Identifier: MIT
# A tracer killed with SIGKILL leaves no BPF program or link behind, the job runs on to its end,
# and the dump it leaves is readable.
. "$(dirname "$0")/lib.sh"

if ! why=$(bpf_usable); then
	skip kill "BPF not usable here: $why"
	exit 0
fi
if ! command -v bpftool >/dev/null; then
	skip kill "bpftool not installed"
	exit 0
fi

# Debian's bpftool does not name the holder of a program: count nccltrace's by name, and
# compare with what was there before (another tracer may be running)
nt_progs() { bpftool prog show 2>/dev/null | grep -cE 'name nt_(tp_send|tp_recv|set_state|fork|exec|exit)'; }
nt_links() { bpftool link show 2>/dev/null | grep -cE "tp '(sock_send_length|sock_recv_length|sched_process_fork)'"; }

# programs are freed shortly after their last fd closes (RCU): wait for the count to settle
settle() {
	local n prev=-1
	for _ in $(seq 1 30); do
		n=$(nt_progs)
		[ "$n" -eq "$prev" ] && [ "$n" -eq 0 ] && break
		prev=$n
		sleep 0.1
	done
}
settle
progs_before=$(nt_progs)
links_before=$(nt_links)
D=$TMP/killed.jsonl
"$NT" run --dump "$D" -- "$RJ" --ranks 3 --duration 5 >"$TMP/killed.out" 2>&1 &
ntpid=$!
sleep 2
during=$(nt_progs)
during_links=$(nt_links)
launcher=$(pgrep -P $ntpid | head -1)
kill -KILL $ntpid
wait $ntpid 2>/dev/null
settle
check programs_loaded "no nccltrace programs while running" -- test "$during" -ge $((progs_before + 6))
check links_attached "no nccltrace links while running" -- test "$during_links" -ge $((links_before + 3))
# the kernel detached and freed everything with the tracer's file descriptors
left=$(nt_progs)
check programs_gone "$((left - progs_before)) nccltrace programs still loaded after SIGKILL" -- \
	test "$left" -eq "$progs_before"
left=$(nt_links)
check links_gone "$((left - links_before)) links still attached after SIGKILL" -- \
	test "$left" -eq "$links_before"
# the job goes on and finishes normally
for _ in $(seq 1 100); do
	kill -0 "$launcher" 2>/dev/null || break
	sleep 0.1
done
check job_survives "the job did not finish its ring" -- grep -q "rank 0 done" "$TMP/killed.out"
check job_no_leftovers "demo processes left" -- no_leftovers
kill_leftovers
out=$("$NT" report --json "$D" 2>&1)
rc=$?
check killed_dump_readable "report failed ($rc): $out" -- test $rc -eq 0
check killed_dump_incomplete "report should say the dump has no footer" -- \
	jq -e '.complete == false' <<<"$out" >/dev/null
