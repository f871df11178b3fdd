#!/bin/bash
# SPDX-License-Identifier: MIT
# NCCL's own log as an evidence source, on the fake NCCL (tests/fixtures/fakelog.c writes NCCL
# 2.28.9's lines where NCCL does, honouring NCCL_DEBUG, NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE;
# the 2.21.5 build 2.21's where they differ):
# nccltrace turns it on for the job into a directory of its own, owned by the job's user, reads
# each process's file as it grows, and puts the facts into the dump, the findings and report; a
# job's own NCCL_DEBUG is left alone, its own NCCL_DEBUG_FILE read.
# checks: 52
# lane: long 60
. "$(dirname "$0")/lib.sh"

NJ=$ROOT/build/nccljob
FAKE=$ROOT/build/fakenccl/libnccl.so.2
export NCCLTRACE_CACHE_DIR=$TMP/cache
NOBODY=$(id -u nobody)
NOGROUP=$(id -g nobody)
HOST=$(hostname | cut -d. -f1)
# sockets forced, as on a GPU machine: the settings that decide the transport are set
FORCE=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo)

need_fixture nccllog "$NJ" "$FAKE" || end_checks
# the job as nobody: from where nobody reaches the checkout (lib.sh user_root)
user_root nobody
UNJ=$UROOT/build/nccljob
[ "$UROOT" = "$ROOT" ] || export NCCLTRACE_LIBDIR=$UROOT/build

# rank_pids DUMP: "pid pid pid" of ranks 0, 1, 2
rank_pids() { echo "$(rank_pid "$1" 0) $(rank_pid "$1" 1) $(rank_pid "$1" 2)"; }

# --- a healthy 3-rank job as nobody: the log turned on by nccltrace, every rank's facts ---
D=$TMP/healthy.jsonl
env "${FORCE[@]}" SUDO_UID=$NOBODY SUDO_GID=$NOGROUP SUDO_USER=nobody "$NT" run --no-tui \
	--dump "$D" -- "$UNJ" --ranks 3 --iters 5 >"$TMP/healthy.stdout" 2>"$TMP/healthy.stderr"
rc=$?
check healthy_exit "exit $rc: $(tail -3 "$TMP/healthy.stderr")" -- test $rc -eq 0
DIR=$TMP/healthy.nccl
check dir_owner "$DIR: $(stat -c '%U:%G %a' "$DIR" 2>&1)" -- \
	test "$(stat -c '%u:%g %a' "$DIR" 2>/dev/null)" = "$NOBODY:$NOGROUP 750"
check env_names_dir "header job_env: $(jq -c 'select(.nccltrace) | .job_env' "$D")" -- \
	jq_ok "select(.nccltrace) | .job_env.NCCL_DEBUG_FILE == \"$DIR/nccl.%h.%p.log\"" "$D"
check env_init_only "header job_env: $(jq -c 'select(.nccltrace) | .job_env' "$D")" -- \
	jq_ok 'select(.nccltrace) | .job_env.NCCL_DEBUG == "INFO" and .job_env.NCCL_DEBUG_SUBSYS == "INIT,ENV,BOOTSTRAP,NET"' "$D"
read -r p0 p1 p2 <<<"$(rank_pids "$D")"
files_ok=1
for p in $p0 $p1 $p2; do
	f=$DIR/nccl.$HOST.$p.log
	[ "$(stat -c %u "$f" 2>/dev/null)" = "$NOBODY" ] || files_ok=0
done
check files_per_rank "no nccl.$HOST.PID.log of nobody's for ranks $p0 $p1 $p2: $(ls -ln "$DIR" 2>&1 | tr '\n' ' ')" -- \
	test $files_ok = 1
check job_output_clean "NCCL INFO lines in the job's stdout or stderr" -- \
	bash -c "! grep -q 'NCCL INFO' '$TMP/healthy.stdout' '$TMP/healthy.stderr'"
# the fake's commId is its commHash (2.26+): the same value the uprobes read from memory
hash=$(jq -r 'select(.type=="nccl" and .probe=="bootstrap_init" and .event=="enter") | .comm_hash' "$D" | head -1)
init_ok=1 chan_ok=1 rings_ok=1 env_ok=1 if_ok=1
for r in 0 1 2; do
	p=$(rank_pid "$D" $r)
	next=$(((r + 1) % 3)) prev=$(((r + 2) % 3))
	jq_ok "select(.type==\"nccl_log\" and .pid==$p and .what==\"init\" and .event==\"start\" and .rank==$r and .nranks==3 and .comm_id==\"$hash\")" "$D" &&
		jq_ok "select(.type==\"nccl_log\" and .pid==$p and .what==\"init\" and .event==\"complete\" and .rank==$r)" "$D" ||
		init_ok=0
	n=$(jq -s "[.[] | select(.type==\"nccl_log\" and .pid==$p and .what==\"channel\")] | length" "$D")
	[ "$n" = 2 ] &&
		jq_ok "select(.type==\"nccl_log\" and .pid==$p and .what==\"channel\" and .side==\"send\" and .from==$r and .to==$next and .channel==0 and .transport==\"NET/Socket/0\")" "$D" &&
		jq_ok "select(.type==\"nccl_log\" and .pid==$p and .what==\"channel\" and .side==\"receive\" and .from==$prev and .to==$r and .transport==\"NET/Socket/0\")" "$D" ||
		chan_ok=0
	jq_ok "select(.type==\"nccl_log\" and .pid==$p and .what==\"rings_connected\" and .pxn==0 and .gdr==0)" "$D" || rings_ok=0
	jq_ok "select(.type==\"nccl_log\" and .pid==$p and .what==\"env\" and .name==\"NCCL_P2P_DISABLE\" and .value==\"1\")" "$D" &&
		jq_ok "select(.type==\"nccl_log\" and .pid==$p and .what==\"env\" and .name==\"NCCL_SHM_DISABLE\" and .value==\"1\")" "$D" ||
		env_ok=0
	jq_ok "select(.type==\"nccl_log\" and .pid==$p and .what==\"iface\") | .ifaces[] | select(.what==\"NET/Socket\" and .name==\"lo\" and .addr==\"127.0.0.1<0>\")" "$D" || if_ok=0
done
check init_facts "Init START/COMPLETE of rank r of 3, commId $hash, not in the dump for every rank" -- test $init_ok = 1
check channel_facts "not exactly the ring's [send] to next and [receive] from prev via NET/Socket/0 per rank: $(jq -c 'select(.what=="channel") | [.pid,.from,.to,.side]' "$D" | tr '\n' ' ')" -- \
	test $chan_ok = 1
check rings_facts "no \"Connected all rings, use ring PXN 0 GDR 0\" for every rank" -- test $rings_ok = 1
check env_facts "NCCL_P2P_DISABLE=1 / NCCL_SHM_DISABLE=1 not logged by every rank" -- test $env_ok = 1
check iface_facts "no NET/Socket lo 127.0.0.1<0> for every rank" -- test $if_ok = 1
check version_fact "no version fact" -- \
	jq_ok "select(.type==\"nccl_log\" and .what==\"version\" and .pid==$p0 and .version==\"2.28.9+fakenccl\")" "$D"
out=$("$NT" report "$D")
check report_transport "report: $(grep -c 'via:' <<<"$out") via lines" -- \
	contains "$out" "via: rank 0 -> rank 1 NET/Socket/0 on channel 0 [send]"
check report_rings "report does not say the rings connected" -- \
	contains "$out" "comm $hash: rank 2 of 3, init complete, all rings connected"

# --- the cost: a steady collective loop writes nothing; init writes the same lines ---
lines_of() { # DUMP RANK: lines of that rank's log file
	wc -l <"${1%.jsonl}.nccl/nccl.$HOST.$(rank_pid "$1" "$2").log"
}
D2=$TMP/long.jsonl
env "${FORCE[@]}" "$NT" run --no-tui --dump "$D2" -- "$NJ" --ranks 3 --iters 400 --step-delay 0 \
	--count 1024 >/dev/null 2>&1
short=$(lines_of "$D" 0) long=$(lines_of "$D2" 0)
echo "# NCCL log of rank 0: $short lines after 5 all-reduces, $long after 400"
check steady_no_lines "rank 0 logged $short lines with 5 all-reduces, $long with 400" -- \
	test -n "$short" -a "$short" = "$long"

# --- a job without NCCL: its empty directory is gone at the end ---
"$NT" run --no-tui --dump "$TMP/ring.plain.jsonl" -- "$RJ" --ranks 2 --duration 1 >/dev/null 2>&1
check empty_dir_removed "$TMP/ring.plain.nccl is left: $(ls -la "$TMP/ring.plain.nccl" 2>&1 | head -3)" -- \
	test ! -e "$TMP/ring.plain.nccl" -a -s "$TMP/ring.plain.jsonl"

# --- a directory a run before left (its dump removed): the next free one, the log still read ---
mkdir -p "$TMP/again.nccl"
D=$TMP/again.jsonl
env "${FORCE[@]}" "$NT" run --no-tui --dump "$D" -- "$NJ" --ranks 2 --iters 2 >/dev/null \
	2>"$TMP/again.err"
check leftover_dir_next "header job_env: $(jq -c 'select(.nccltrace) | .job_env.NCCL_DEBUG_FILE' "$D"); $(grep -i "nccl's log" "$TMP/again.err")" -- \
	jq_ok "select(.nccltrace) | .job_env.NCCL_DEBUG_FILE == \"$TMP/again-2.nccl/nccl.%h.%p.log\"" "$D"
check leftover_dir_read "no NCCL log facts in the dump, or $TMP/again.nccl touched: $(ls -A "$TMP/again.nccl" | head -2)" -- \
	test -z "$(ls -A "$TMP/again.nccl")" -a -n "$(jq -c 'select(.type=="nccl_log" and .what=="version")' "$D" 2>/dev/null)"

# --- the job's own NCCL_DEBUG=WARN: left alone, nothing set, no directory ---
D=$TMP/warn.jsonl
NCCL_DEBUG=WARN "$NT" run -v --no-tui --dump "$D" -- "$NJ" --ranks 2 --iters 2 >/dev/null \
	2>"$TMP/warn.err"
check user_warn_no_dir "nccltrace made $TMP/warn.nccl" -- test ! -e "$TMP/warn.nccl"
check user_warn_nothing_set "header job_env: $(jq -c 'select(.nccltrace) | .job_env' "$D")" -- \
	jq_ok 'select(.nccltrace) | .job_env // {} | keys | map(select(startswith("NCCL_DEBUG"))) | length == 0' "$D"
check user_warn_said "-v does not say the job's log goes to its stdout" -- \
	grep -q "the job sets NCCL_DEBUG=WARN: it goes to the job's stdout, which nccltrace does not parse" "$TMP/warn.err"

# --- the job's own NCCL_DEBUG_FILE, relative to its directory: read as the job's user ---
OWN=$TMP/own
mkdir -p "$OWN" && chown nobody:"$(id -gn nobody)" "$OWN"
D=$TMP/own.jsonl
(cd "$OWN" && NCCL_DEBUG=INFO NCCL_DEBUG_FILE=mine.%h.%p.log SUDO_UID=$NOBODY SUDO_GID=$NOGROUP \
	SUDO_USER=nobody "$NT" run --no-tui --dump "$D" -- "$UNJ" --ranks 3 --iters 3 >/dev/null 2>&1)
n=0
for r in 0 1 2; do
	p=$(rank_pid "$D" $r)
	jq_ok "select(.type==\"nccl_log\" and .pid==$p and .what==\"file\" and .path==\"$OWN/mine.$HOST.$p.log\")" "$D" &&
		jq_ok "select(.type==\"nccl_log\" and .pid==$p and .what==\"init\" and .event==\"complete\" and .rank==$r)" "$D" &&
		n=$((n + 1))
done
check user_file_read "$n of 3 ranks' own files read: $(jq -c 'select(.what=="file") | .path' "$D" | tr '\n' ' ')" -- \
	test $n = 3
check user_file_nothing_set "nccltrace added to the job's own log settings: $(jq -c 'select(.nccltrace) | .job_env' "$D")" -- \
	jq_ok 'select(.nccltrace) | .job_env // {} | keys | map(select(startswith("NCCL_DEBUG"))) | length == 0' "$D"
check user_file_no_dir "nccltrace made $TMP/own.nccl" -- test ! -e "$TMP/own.nccl"

# the same through `env NAME=VALUE CMD`: the launcher's own file, named only after its exec, too
D=$TMP/prefix.jsonl
(cd "$OWN" && SUDO_UID=$NOBODY SUDO_GID=$NOGROUP SUDO_USER=nobody "$NT" run --no-tui --dump "$D" -- \
	env NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$OWN/pre.%p.log" "$UNJ" --ranks 3 --iters 3 >/dev/null 2>&1)
n=$(jq -s '[.[] | select(.type=="nccl_log" and .what=="file" and (.path | startswith("'"$OWN"'/pre.")))] | length' "$D")
check user_file_env_prefix "$n of 4 files read (the launcher, 3 ranks)" -- test "$n" = 4

# --- a job that writes anything into its log file: read on, bounded, never followed away ---
cat >"$TMP/hostile.sh" <<'EOS'
#!/bin/sh
h=$(hostname | cut -d. -f1)
f=$(printf '%s' "$NCCL_DEBUG_FILE" | sed "s/%h/$h/; s/%p/$$/")
{
	head -c 65536 /dev/urandom
	printf '\n'
	head -c 5000 /dev/zero | tr '\0' A
	printf '\n%s:%d:%d [0] x.cc:1 NCCL WARN \033]0;pwned\007\033[2J boom\n' "$h" $$ $$
	printf '%s:%d:%d [0] NCCL INFO ncclCommInitRank comm 0x10 rank 0 nranks 2 ' "$h" $$ $$
} >"$f"
sleep 0.7
printf 'cudaDev 0 nvmlDev 0 busId 1b000 commId 0xabc - Init START\n' >>"$f"
sleep 0.7
# truncated and written again, as NCCL's fopen("w") after an exec does
printf '%s:%d:%d [0] NCCL INFO ncclCommInitRank comm 0x20 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xdef - Init START\n' "$h" $$ $$ >"$f"
sleep 0.7
# a link where another process of the job's log would be
sh -c 'ln -s /etc/shadow "${1%/*}/nccl.$2.$$.log"; sleep 0.7' sh "$f" "$h"
# a process whose host name is not ours (a container's): its file is found by its pid
sh -c 'printf "c7:%d:%d [0] NCCL INFO ncclCommInitRank comm 0x30 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 0 commId 0x1 - Init START\n" $$ $$ >"${1%/*}/nccl.container-7.$$.log"; sleep 1.5' sh "$f"
EOS
D=$TMP/hostile.jsonl
SUDO_UID=$NOBODY SUDO_GID=$NOGROUP SUDO_USER=nobody "$NT" run --no-tui --dump "$D" -- \
	sh "$TMP/hostile.sh" >/dev/null 2>"$TMP/hostile.err"
rc=$?
check hostile_exit "exit $rc: $(tail -2 "$TMP/hostile.err")" -- test $rc -eq 0
check hostile_split_line "the line written in two parts is not one Init START" -- \
	test "$(jq -s '[.[] | select(.what=="init" and .comm=="0x10" and .rank==0)] | length' "$D")" = 1
check hostile_truncated "the file written again from its start was not read again" -- \
	jq_ok 'select(.what=="init" and .comm=="0x20" and .rank==1)' "$D"
check hostile_warn_printable "the WARN's escape sequences reached the dump: $(jq -c 'select(.what=="warn") | .text' "$D")" -- \
	jq_ok 'select(.what=="warn") | .text == "?]0;pwned??[2J boom"' "$D"
check hostile_no_link "a link was read, or not said: $(grep -c 'symbolic link' "$TMP/hostile.err") warnings, $(jq -s '[.[] | select(.type=="nccl_log") | .pid] | unique | length' "$D") pids" -- \
	test "$(grep -c "a symbolic link, not NCCL's file" "$TMP/hostile.err")" = 1 -a \
	"$(jq -s '[.[] | select(.type=="nccl_log") | .pid] | unique | length' "$D")" = 2
check hostile_other_host "the file under another host name was not found by its pid" -- \
	jq_ok 'select(.what=="file" and (.path | test("/nccl\\.container-7\\.[0-9]+\\.log$")))' "$D"

# --- ring setup blocked by rank 1: the finding names the transport and what decided it ---
THRESH=2
D=$TMP/ring.jsonl
env "${FORCE[@]}" "$NT" run -t $THRESH --no-tui --dump "$D" -- "$NJ" --ranks 3 --iters 6 \
	--fault ring-setup --fault-rank 1 --fault-for 5 --timeout 12 >"$TMP/ring.out" 2>&1
f=$(findings "$D")
check ring_kind "findings: $(kind_ranks "$f")" -- test "$(kind_ranks "$f")" = "ring_setup_blocked 1"
check ring_transport "no NET/Socket/0 link in the evidence: $(jq -c '.[0].evidence' <<<"$f")" -- \
	jqe '.[0].evidence | map(select(test("^NCCL log: rank [0-2] -> rank [0-2] via NET/Socket/0 on channel 0 \\(\\[(send|receive)\\] on rank [02] "))) | length == 1' <<<"$f"
check ring_one_sided "no one-sided connection naming rank 1: $(jq -c '.[0].evidence' <<<"$f")" -- \
	jqe '.[0].evidence | map(select(test("set up on one side only: 0 -> 1 via NET/Socket/0 on channel 0: \\[send\\] by rank 0, no \\[receive\\] by rank 1; 1 -> 2 via NET/Socket/0 on channel 0: \\[receive\\] by rank 2, no \\[send\\] by rank 1"))) | length == 1' <<<"$f"
check ring_no_rings "no missing \"Connected all rings\": $(jq -c '.[0].evidence' <<<"$f")" -- \
	jqe '.[0].evidence | map(select(test("ranks 0,2 set up channels, no \"Connected all rings\"; rank 1 logged no Channel line"))) | length == 1' <<<"$f"
check ring_decided_by "the settings the log shows are not named: $(jq -c '.[0].evidence' <<<"$f")" -- \
	jqe '.[0].evidence | map(select(test("NET/Socket/0, with NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE=1, NCCL_SOCKET_IFNAME=lo set by environment; Using network Socket .*NET/Socket on lo 127.0.0.1<0>"))) | length == 1' <<<"$f"
check ring_settings "settings: $(jq -c '.[0].settings' <<<"$f")" -- \
	test "$(first_setting "$f" NCCL_P2P_DISABLE) $(first_setting "$f" NCCL_SHM_DISABLE) $(first_setting "$f" NCCL_SOCKET_IFNAME)" = "1 read 1 read lo read"
detected ring "$TMP/ring.out" "$D" ring_setup_blocked $THRESH
out=$("$NT" report "$D")
check ring_report "report does not show rank 0's transport to rank 1" -- \
	contains "$out" "via: rank 0 -> rank 1 NET/Socket/0 on channel 0 [send]"
own_pkill "$NJ"

# --- a launcher nccltrace does not know (no RANK): the rank as NCCL's log tells it ---
D=$TMP/norank.jsonl
"$NT" run -v -t $THRESH --no-tui --dump "$D" -- "$NJ" --ranks 3 --iters 40 --rank-var NCCLJOB_RANK \
	--fault in-collective --fault-rank 1 --fault-for 5 >"$TMP/norank.out" 2>&1
f=$(findings "$D")
check norank_told "-v does not name the ranks from NCCL's log" -- \
	test "$(grep -c "is rank [0-2] of 3 (from NCCL's log" "$TMP/norank.out")" = 3
check norank_stall "findings: $(kind_ranks "$f")" -- test "$(kind_ranks "$f")" = "stall 1"
check norank_report "report --json ranks: $("$NT" report --json "$D" | jq -c '.ranks | map([.rank, .rank_source])' 2>&1)" -- \
	jqe '.ranks | map(select(.rank_source == "NCCL log")) | map(.rank) | sort == [0,1,2]' <<<"$("$NT" report --json "$D")"
own_pkill "$NJ"

# --- NCCL 2.21's log (build/fakenccl-2.21.5): rings connected inside init, before Init COMPLETE
# and without PXN/GDR, commId not the commHash, the ring's ranks padded, "Bootstrap : Using", and
# NCCL_P2P_DISABLE=1 logged as "NCCL_P2P_LEVEL set by environment to LOC" (graph/paths.cc at
# v2.21.5-1): a stall, its settings as the environment has them ---
V221=$ROOT/build/fakenccl-2.21.5/libnccl.so.2
D=$TMP/v221.jsonl
env "${FORCE[@]}" LD_LIBRARY_PATH=$(dirname "$V221") NCCLTRACE_CACHE_DIR=$TMP/cache221 "$NT" run \
	-t $THRESH --no-tui --dump "$D" -- "$NJ" --ranks 3 --iters 40 --fault in-collective \
	--fault-rank 1 --fault-for 5 >"$TMP/v221.out" 2>&1
f=$(findings "$D")
check v221_stall "findings: $(kind_ranks "$f") ($(jq -r 'select(.type=="nccl_log" and .what=="version") | .version' "$D" | head -1))" -- \
	test "$(kind_ranks "$f")" = "stall 1"
id=$(jq -r 'select(.type=="nccl_log" and .what=="init" and .event=="start" and .rank==2) | .comm_id' "$D" | head -1)
out=$("$NT" report "$D")
check v221_rings_in_init "report: $(grep "comm $id" <<<"$out" | tr '\n' ' ')" -- \
	test "$(grep -c "comm $id: rank [0-2] of 3, init complete, all rings connected" <<<"$out")" = 3
n=$(jq -s '[.[] | select(.type=="nccl_log" and .what=="channel" and .transport=="NET/Socket/0")] | length' "$D")
check v221_channels "$n Channel lines via NET/Socket/0, want 6" -- test "$n" = 6
check v221_ring_padded "rank 0's ring: $(jq -c 'select(.what=="ring") | .ranks' "$D")" -- \
	jq_ok "select(.type==\"nccl_log\" and .what==\"ring\" and .pid==$(rank_pid "$D" 0) and .ranks==[0,1,2])" "$D"
n=$(jq -s '[.[] | select(.type=="nccl_log" and .what=="iface") | .ifaces[] | select(.what=="Bootstrap" and .name=="lo")] | length' "$D")
check v221_bootstrap "$n \"Bootstrap : Using lo\" facts, want one per process (the launcher, 3 ranks)" -- \
	test "$n" = 4
check v221_p2p_disable "the settings the log shows: $(jq -c '.[0].evidence' <<<"$f")" -- \
	jqe '.[0].evidence | map(select(test("NET/Socket/0, with NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE=1, NCCL_SOCKET_IFNAME=lo set by environment;"))) | length == 1' <<<"$f"
check v221_p2p_level_unset "NCCL_P2P_LEVEL: $(first_setting "$f" NCCL_P2P_LEVEL)" -- \
	test "$(first_setting "$f" NCCL_P2P_LEVEL)" = "null unset"
own_pkill "$NJ"

# --- a stripped library (no probes): what NCCL read, nccl.conf too, from its own log ---
STRIPPED=$ROOT/build/fakenccl-stripped/libnccl.so.2
printf 'NCCL_IB_TIMEOUT=19\n' >"$TMP/nccl.conf"
D=$TMP/stripped.jsonl
NCCL_CONF_FILE=$TMP/nccl.conf LD_LIBRARY_PATH=$(dirname "$STRIPPED") "$NT" run -t $THRESH --no-tui \
	--dump "$D" -- "$NJ" --ranks 3 --iters 40 --fault in-collective --fault-rank 1 --fault-for 5 \
	>/dev/null 2>&1
f=$(findings "$D")
check stripped_stall "findings: $(kind_ranks "$f")" -- test "$(kind_ranks "$f")" = "stall 1"
check stripped_conf_from_log "NCCL_IB_TIMEOUT: $(first_setting "$f" NCCL_IB_TIMEOUT)" -- \
	test "$(first_setting "$f" NCCL_IB_TIMEOUT)" = "19 log"
check stripped_transport "no transport in the evidence: $(jq -c '.[0].evidence' <<<"$f")" -- \
	jqe '.[0].evidence | map(select(test("^NCCL log: rank [0-2] -> rank [0-2] via NET/Socket/0"))) | length == 1' <<<"$f"
own_pkill "$NJ"
end_checks
