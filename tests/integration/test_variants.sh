#!/bin/bash
# SPDX-License-Identifier: MIT
# checks: 132
# lane: long 160
# The fake NCCL in the shapes real builds have, each put in place of the default the ways users
# do (LD_LIBRARY_PATH, LD_PRELOAD), under a job linked to libnccl that starts NCCL at once:
#   default  2.28.9 with symbols and DWARF (the wheel's shape)
#   release  2.28.3 as NVIDIA's .deb: -fvisibility=hidden, no -g, stripped: only the API
#   v221     2.21.5 with symbols and DWARF, 2.21's internal names, layouts and call order
#   v230     2.30.7 with symbols and DWARF: 2.29's ncclSocket.socketDescriptor and pointer
#            ncclIbListenComm.stage, 2.30's names and WARN line (healthy, two faults, a WARN)
# First what each library is (nm, readelf, nccltrace probes), then the fault matrix under
# nccltrace with real BPF: each fault gives, on each version, the kind of finding that NCCL's
# behaviour there calls for, naming the faulty rank and pid (the job's own fault marker), within
# threshold..threshold + 1 s of the marker (a mismatch seen in the arguments: from 0), and only
# that finding; where the build gives nothing to see a fault by, no wrong culprit; healthy runs
# give none. A case nccltrace cannot meet yet fails with what it found: the expectations stay.
# VARIANTS_IMPORT_DELAY=0.5 gives NCCL half a second after exec, to tell the cases that fail
# for the exec race from the others (the default, 0, is what the checks are about).
. "$(dirname "$0")/lib.sh"

NJ=$ROOT/build/nccljob
DEFAULT=$ROOT/build/fakenccl/libnccl.so.2
RELEASE=$ROOT/build/fakenccl-2.28.3-release/libnccl.so.2
V221=$ROOT/build/fakenccl-2.21.5/libnccl.so.2
V230=$ROOT/build/fakenccl-2.30.7/libnccl.so.2
export NCCLTRACE_CACHE_DIR=$TMP/cache
THRESH=2
DELAY=${VARIANTS_IMPORT_DELAY:-0}
SKIPPING="" # the reason, when the runs under nccltrace cannot happen here

# text_lacks TEXT REGEX: no line of TEXT matches (lib.sh's lacks reads a file)
text_lacks() { ! grep -qE -- "$2" <<<"$1"; }
# all_words TEXT WORD...: each WORD is a word of TEXT
all_words() {
	local t=" $1 " w
	shift
	for w; do [[ "$t" == *" $w "* ]] || return 1; done
}

# make builds them all: one missing is a broken build, not a reason to skip
for f in "$NJ" "$DEFAULT" "$RELEASE" "$V221" "$V230"; do
	if [ ! -e "$f" ]; then
		fail variants_fixtures "fixture not built: run make ($f)"
		skip_rest variants "a fixture is missing (the failure above)"
		end_checks
	fi
done

# --- the libraries themselves (no BPF needed) ---

# release: only the API in .dynsym, each ncclX a weak alias of pncclX (NCCL_API), no symbols,
# no DWARF, no ncclLastError, a build-id of its own
dyn=$(nm -D --defined-only "$RELEASE" 2>&1)
check release_dynsym_api_only "other exported symbols: $(awk '$3 !~ /^(p?nccl|fakenccl)[A-Z]/' <<<"$dyn" | head -5)" -- \
	test -n "$dyn" -a -z "$(awk '$3 !~ /^(p?nccl|fakenccl)[A-Z]/' <<<"$dyn")"
unaliased=$(awk '$2=="W" && $3 ~ /^nccl/ {w[$3]=$1} $2=="T" && $3 ~ /^pnccl/ {t[substr($3,2)]=$1}
	END {for (n in w) if (t[n] != w[n]) print n}' <<<"$dyn")
check release_weak_aliases "not a weak alias of its pnccl: $unaliased" -- \
	test -z "$unaliased" -a "$(grep -c ' W nccl' <<<"$dyn")" -gt 10 -a \
	"$(grep -c ' W nccl' <<<"$dyn")" = "$(grep -c ' T pnccl' <<<"$dyn")"
check release_last_error_hidden "ncclLastError exported" -- text_lacks "$dyn" ncclLastError
sections=$(readelf -S -W "$RELEASE" 2>&1)
check release_stripped "symbols or DWARF left: $(grep -oE '\.(symtab|debug_[a-z]+)' <<<"$sections" | tr '\n' ' ')" -- \
	text_lacks "$sections" '\.(symtab|debug_info) '
# resolved_as TAG "PROBE SYMBOL"...: `probes` ($out) resolved each probe by that symbol; says
# which it did not
resolved_as() {
	local tag=$1 want ok=0
	shift
	for want in "$@"; do
		set -- $want
		awk -v p="$1" -v s="$2" '$1==p && $2=="ok" && $4==s {f=1} END {exit !f}' <<<"$out" ||
			{ ok=1 && echo "# $tag: want $1 ok as $2: $(grep "^$1 " <<<"$out")"; }
	done
	return $ok
}
bid() { readelf -n "$1" 2>/dev/null | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p'; }
check release_build_id "build-id '$(bid "$RELEASE")', the default's '$(bid "$DEFAULT")'" -- \
	test -n "$(bid "$RELEASE")" -a "$(bid "$RELEASE")" != "$(bid "$DEFAULT")"
out=$("$NT" probes "$RELEASE" 2>&1)
rc=$?
# every probe of the table on the public API (user/nccl/nccllib.c: NP_PUBLIC) that the build
# exports, and nothing else: init, destroy and abort, ncclGetLastError, and, as the build has no
# internal transport-setup symbols, the collectives and group calls it has (those of the first
# collectives); nothing internal
ok=$(awk '$2=="ok" {print $1}' <<<"$out" | sort | tr '\n' ' ')
check release_probes_public_only "resolved: $ok" -- \
	test "$ok" = "api_all_gather api_all_reduce api_broadcast api_comm_init_rank api_comm_init_rank_config api_get_last_error api_group_end api_group_start comm_abort comm_destroy "
check release_probes_offsets "$(grep -E '^(version|offsets):' <<<"$out" | tr '\n' ' ')" -- \
	grep -qE '^offsets: +none' <<<"$out"
check release_probes_version "$(grep -E '^version:' <<<"$out")" -- grep -qE '^version: +2\.28\.3$' <<<"$out"
check release_probes_exit "exit $rc: the core probes cannot resolve" -- test $rc -eq 1

# v221: 2.21's names where nccltrace looks, none of 2.22+'s, its layouts in the DWARF
out=$("$NT" probes "$V221" 2>&1)
rc=$?
check v221_probes_exit "exit $rc: $(grep -E 'missing .*\[core\]' <<<"$out")" -- test $rc -eq 0
check v221_probes_version "$(grep -E '^(version|offsets):' <<<"$out" | tr '\n' ' ')" -- \
	grep -qE '^version: +2\.21\.5$' <<<"$out"
check v221_probes_names "a probe not resolved by its 2.21 name (see above)" -- resolved_as v221 \
	"bootstrap_init _Z13bootstrapInitP19ncclBootstrapHandleP8ncclComm" \
	"init_transports _ZL18initTransportsRankP8ncclCommS0_" \
	"topo_get_system _Z17ncclTopoGetSystemP8ncclCommPP14ncclTopoSystem" \
	"p2p_setup _Z21ncclTransportP2pSetupP8ncclCommP13ncclTopoGraphiPi" \
	"env _Z10ncclGetEnvPKc" \
	"net_socket_connect _Z20ncclNetSocketConnectiPvPS_PP24ncclNetDeviceHandle_v7_t" \
	"ib_connect _Z13ncclIbConnectiPvPS_PP24ncclNetDeviceHandle_v7_t"
missing=$(awk '$2=="missing" {print $1}' <<<"$out" | tr '\n' ' ')
check v221_probes_absent "ring/tree connect and the retry check must be missing; missing: $missing" -- \
	all_words "$missing" ring_connect tree_connect connect_retry
syms=$(nm "$V221" 2>&1)
check v221_no_later_names "2.22+ names in .symtab: $(grep -oE '_Z[0-9]+(ncclEnvPluginGetEnv|ncclTransportRingConnect|socketConnectCheck)[A-Za-z0-9_.]*' <<<"$syms" | tr '\n' ' ')" -- \
	text_lacks "$syms" 'ncclEnvPluginGetEnv|ncclTransportRingConnect|socketConnectCheck'
layout=$(awk '$1 ~ /^(ncclSocket\.(addr|state|type)|bootstrapState\.(rank|nranks)|ncclComm\.seqNumber|ncclIbListenComm\.stage)$/ {printf "%s=%s ", $1, $2}' <<<"$out")
check v221_layout "$layout" -- test "$layout" = \
	"ncclSocket.addr=16 ncclSocket.state=60 ncclSocket.type=80 ncclComm.seqNumber=-1 bootstrapState.rank=300 bootstrapState.nranks=304 ncclIbListenComm.stage=96 "

# v230: 2.29-2.30's names (nccl-versions.md §1), and every offset from its DWARF, the socket's
# fd (named socketDescriptor from 2.29) too: before, that one name lost them all
out=$("$NT" probes "$V230" 2>&1)
rc=$?
check v230_probes_exit "exit $rc: $(grep -E 'missing .*\[core\]' <<<"$out")" -- test $rc -eq 0
check v230_probes_version "$(grep -E '^(version|offsets):' <<<"$out" | tr '\n' ' ')" -- \
	grep -qE '^version: +2\.30\.7$' <<<"$out"
check v230_probes_names "a probe not resolved by its 2.30 name (see above)" -- resolved_as v230 \
	"bootstrap_init _Z13bootstrapInitiPvP8ncclCommS1_" \
	"socket_accept _Z16ncclSocketAcceptP10ncclSocketS0_b" \
	"debug_log _Z20ncclDebugLogInternal17ncclDebugLogLevelmPKcS1_iS1_z" \
	"role_ib_async _Z21ncclIbAsyncThreadMainPv"
check v230_offsets_dwarf "$(grep -E '^offsets:' <<<"$out")" -- grep -qE '^offsets: +DWARF' <<<"$out"
layout=$(awk '$1 ~ /^(ncclSocket\.(fd|addr|state|type)|ncclComm\.(rank|seqNumber)|bootstrapState\.rank|ncclIbListenComm\.stage)$/ {printf "%s=%s ", $1, $2}' <<<"$out")
check v230_layout "$layout$(grep -E '^ncclIbListenComm\.stage' <<<"$out")" -- \
	test "$layout" = "ncclSocket.fd=0 ncclSocket.addr=12 ncclSocket.state=52 ncclSocket.type=72 ncclComm.rank=1066192 ncclComm.seqNumber=1075728 bootstrapState.rank=476 ncclIbListenComm.stage=104 " -a \
	-n "$(grep -E '^ncclIbListenComm\.stage +104 \(a pointer' <<<"$out")"

# the job: linked to libnccl at exec, through a DT_RUNPATH that LD_LIBRARY_PATH overrides
dyn=$(readelf -d "$NJ" 2>&1)
check nccljob_linked "no NEEDED libnccl.so.2 with a RUNPATH and no RPATH: $(grep -E 'NEEDED|PATH' <<<"$dyn" | tr -s ' ' | tr '\n' ';')" -- \
	test "$(grep -cE 'NEEDED.*\[libnccl\.so\.2\]|\(RUNPATH\)|\(RPATH\)' <<<"$dyn")" = 2 -a \
	"$(grep -c '(RPATH)' <<<"$dyn")" = 0

# --- under nccltrace ---
[ -z "$SKIPPING" ] && ! why=$(bpf_usable) && SKIPPING="BPF not usable here: $why"

# traced NAME LOADER LIB OUT DUMP [nccljob options...]: the job with LIB in place of the default
traced() {
	local loader=$2 lib=$3 out=$4 dump=$5
	shift 5
	local load=(LD_LIBRARY_PATH="$(dirname "$lib")")
	[ "$loader" = preload ] && load=(LD_PRELOAD="$lib")
	"$NT" run -t $THRESH --dump "$dump" -- env "${load[@]}" "$NJ" --ranks 3 --iters 6 \
		--import-delay "$DELAY" "$@" >"$out" 2>&1
}

# healthy NAME LOADER LIB: no finding, exit 0, and the library probed is LIB
healthy() {
	local name=$1 D=$TMP/$1.jsonl OUT=$TMP/$1.out rc f
	if [ -n "$SKIPPING" ]; then
		for c in exit lib none; do skip "${name}_$c" "$SKIPPING"; done
		return
	fi
	traced "$@" "$OUT" "$D"
	rc=$?
	f=$(findings "$D")
	check "${name}_exit" "exit $rc: $(tail -2 "$OUT")" -- test $rc -eq 0
	check "${name}_lib" "probed: $(jq -r 'select(.type=="nccl_lib") | .path' "$D" | tr '\n' ' ')" -- \
		jq_ok "select(.type==\"nccl_lib\" and .path==\"$3\")" "$D"
	check "${name}_none" "findings: $(kind_ranks "$f")" -- test "$(jq length <<<"$f")" = 0
}

# fault NAME LIB FAULT KIND [nccljob options...]: the finding KIND on rank 1 and its pid, in
# time, alone
fault() {
	local name=$1 lib=$2 fault=$3 kind=$4 D=$TMP/$1.jsonl OUT=$TMP/$1.out f pid t0 t1 first
	shift 4
	if [ -n "$SKIPPING" ]; then
		for c in kind rank pid latency one; do skip "${name}_$c" "$SKIPPING"; done
		return
	fi
	# no step delay: the marker comes as the rank's last collective returns
	traced "$name" ldpath "$lib" "$OUT" "$D" --fault "$fault" --fault-rank 1 --fault-for 4.5 \
		--step-delay 0 --timeout 8 "$@"
	f=$(findings "$D")
	pid=$(marker_pid "$OUT")
	t0=$(marker_ns "$OUT")
	# the first finding opened: the one the checks judge, whatever its kind
	first=$(jq -c -s '[.[] | select(.type=="finding" and .event=="open")] | sort_by(.realtime_ns) | .[0] // {}' "$D")
	t1=$(jq -r '.realtime_ns // empty' <<<"$first")
	echo "# $name: found $(kind_ranks "$f" | sed 's/^$/nothing/'), marker pid ${pid:-?}"
	check "${name}_kind" "want $kind, found: $(kind_ranks "$f" | sed 's/^$/nothing/')" -- \
		test "$(jq -r '.kind' <<<"$first")" = "$kind"
	check "${name}_rank" "want rank 1, found $(jq -r '.rank' <<<"$first")" -- \
		test "$(jq -r '.rank' <<<"$first")" = 1
	check "${name}_pid" "want pid ${pid:-?} (the marker's), found $(jq -r '.pid' <<<"$first")" -- \
		test -n "$pid" -a "$(jq -r '.pid' <<<"$first")" = "$pid"
	# a threshold's silence at least (the rank's last byte moved just before it printed the
	# marker: lib.sh's slack); a mismatch is seen in the arguments (the profiler plugin's
	# records): nothing to wait for
	local lo=$((THRESH * 1000))
	[ "$kind" = collective_mismatch ] && lo=0
	check_latency "$name" "$t0" "$t1" $lo $(((THRESH + 1) * 1000))
	check "${name}_one" "want 1 finding, found $(jq length <<<"$f"): $(kind_ranks "$f")" -- \
		test "$(jq length <<<"$f")" = 1
	own_pkill "$NJ"
}

# no_wrong_culprit NAME LIB FAULT: a fault this build gives nccltrace nothing to see by (the
# job hangs until its timeout): no finding, or only ones about rank 1 and its pid; never
# another rank, never a rank without its pid
no_wrong_culprit() {
	local name=$1 lib=$2 fault=$3 D=$TMP/$1.jsonl OUT=$TMP/$1.out f pid rc
	if [ -n "$SKIPPING" ]; then
		for c in hung culprit; do skip "${name}_$c" "$SKIPPING"; done
		return
	fi
	traced "$name" ldpath "$lib" "$OUT" "$D" --fault "$fault" --fault-rank 1 --fault-for 4.5 \
		--step-delay 0 --timeout 8
	rc=$?
	f=$(findings "$D")
	pid=$(marker_pid "$OUT")
	echo "# $name: found $(kind_ranks "$f" | sed 's/^$/nothing/'), marker pid ${pid:-?}"
	check "${name}_hung" "exit $rc, want 124 (the job's timeout), marker pid '${pid}'" -- \
		test $rc -eq 124 -a -n "$pid"
	check "${name}_culprit" "a wrong culprit: $(jq -c 'map({kind, rank, pid})' <<<"$f")" -- \
		jqe --argjson pid "${pid:-0}" 'all(.[]; .rank == 1 and .pid == $pid)' <<<"$f"
	own_pkill "$NJ"
}

# NAME LIB KIND-OF-RING-SETUP MISMATCH: the matrix of one variant. ring-setup: rank 1 late to
# its first collective. From 2.22 rings connect there (NCCL_RUNTIME_CONNECT=1): the others block
# in ring setup. Before, init connected them (init.cc at v2.21.5-1: ncclTransportP2pSetup(comm,
# &ringGraph, 0) inside initTransportsRank): the others are in the collective, waiting for rank
# 1's data on the ring's connection, a stall. A mismatch (rank 1 broadcasts where the others
# all-reduce) is a collective_mismatch where something tells each rank's function: the profiler
# plugin from 2.23 (MISMATCH collective_mismatch). 2.21 has neither the plugin nor
# comm->seqNumber, and its collOpCount counts all functions together: every rank waits inside
# NCCL (their stacks say so) and no culprit may be named (MISMATCH none)
matrix() {
	local v=$1 lib=$2 ring=$3 mismatch=$4
	healthy "${v}_healthy" ldpath "$lib"
	fault "${v}_before_init" "$lib" before-init init_blocked
	fault "${v}_ring_setup" "$lib" ring-setup "$ring"
	fault "${v}_in_collective" "$lib" in-collective stall
	fault "${v}_never_join" "$lib" never-join peer_dead
	if [ "$mismatch" = none ]; then
		no_wrong_culprit "${v}_mismatch" "$lib" mismatch
	else
		fault "${v}_mismatch" "$lib" mismatch "$mismatch"
	fi
}
matrix default "$DEFAULT" ring_setup_blocked collective_mismatch
matrix release "$RELEASE" ring_setup_blocked collective_mismatch
matrix v221 "$V221" stall none

# 2.30: the two faults whose evidence is the socket and comm fields, and what a healthy run
# reads there (the socket's fd and peer, the comm's hash and rank at bootstrap)
healthy v230_healthy ldpath "$V230"
if [ -n "$SKIPPING" ]; then
	for c in socket_fields comm_fields; do skip "v230_$c" "$SKIPPING"; done
else
	D=$TMP/v230_healthy.jsonl
	check v230_socket_fields "socket_connect exits: $(jq -c 'select(.type=="nccl" and .probe=="socket_connect" and .event=="exit") | {fd, addr, socket_type}' "$D" | head -2 | tr '\n' ' ')" -- \
		jq_ok 'select(.type=="nccl" and .probe=="socket_connect" and .event=="exit" and .fd > 0 and (.addr // "" | test(":[0-9]+$")) and .socket_type == "bootstrap")' "$D"
	check v230_comm_fields "bootstrap_init entries: $(jq -c 'select(.type=="nccl" and .probe=="bootstrap_init" and .event=="enter") | {comm_hash, rank, nranks}' "$D" | head -3 | tr '\n' ' ')" -- \
		jq_ok 'select(.type=="nccl" and .probe=="bootstrap_init" and .event=="enter" and .rank==1 and .nranks==3 and (.comm_hash // "" | test("^[0-9a-f]{16}$")) and .comm_hash != "0000000000000000")' "$D"
fi
fault v230_ring_setup "$V230" ring-setup ring_setup_blocked
fault v230_in_collective "$V230" in-collective stall
# 2.30's WARN: through ncclDebugLogInternal's probe (ncclLastError) and in NCCL's log, whose
# line now names the function ("init.c:N (fakencclTestWarn) NCCL WARN")
name=v230_warn
if [ -n "$SKIPPING" ]; then
	for c in probe log; do skip "${name}_$c" "$SKIPPING"; done
else
	D=$TMP/$name.jsonl OUT=$TMP/$name.out
	traced "$name" ldpath "$V230" "$OUT" "$D" --fault warn --fault-rank 1
	check "${name}_probe" "nccl_warning: $(jq -c 'select(.type=="nccl_warning") | .text' "$D" | head -2 | tr '\n' ' ')" -- \
		jq_ok 'select(.type=="nccl_warning") | .text | test("test warning from rank 1")' "$D"
	check "${name}_log" "nccl_log warn: $(jq -c 'select(.type=="nccl_log" and .what=="warn") | {where, text}' "$D" | head -2 | tr '\n' ' ')" -- \
		jq_ok 'select(.type=="nccl_log" and .what=="warn" and (.where | test("init\\.c:[0-9]+$")) and .text == "NET/Socket : test warning from rank 1")' "$D"
	own_pkill "$NJ"
fi

# as on the GPU machine, where the system's NCCL is put in with LD_PRELOAD
healthy default_preload preload "$DEFAULT"
healthy release_preload preload "$RELEASE"
healthy v221_preload preload "$V221"

# 2.21 has no connect retries to speak of: a refused non-blocking connect is retried once on
# the same socket, where Linux answers ECONNABORTED, and fails (misc/socket.cc at v2.21.5-1
# socketStartConnect; NVIDIA/nccl#1515): rank 1's init fails at once with NCCL's WARN, and
# none of 2.24's retry settings (NCCL_SOCKET_RETRY_CNT, never read by 2.21) explains anything
name=v221_refused
if [ -n "$SKIPPING" ]; then
	for c in kind pid warn no_retry_settings; do skip "${name}_$c" "$SKIPPING"; done
else
	D=$TMP/$name.jsonl OUT=$TMP/$name.out
	traced "$name" ldpath "$V221" "$OUT" "$D" --fault refused --fault-rank 1 --timeout 8
	f=$(findings "$D")
	pid=$(marker_pid "$OUT")
	echo "# $name: found $(kind_ranks "$f" | sed 's/^$/nothing/')"
	check "${name}_kind" "want peer_dead 1, found: $(kind_ranks "$f" | sed 's/^$/nothing/')" -- \
		test "$(kind_ranks "$f")" = "peer_dead 1"
	check "${name}_pid" "want pid ${pid:-?}, found $(jq -r '.[0].pid' <<<"$f")" -- \
		test -n "$pid" -a "$(jq -r '.[0].pid' <<<"$f")" = "$pid"
	check "${name}_warn" "NCCL's WARN not in the evidence: $(jq -c '.[0].evidence' <<<"$f")" -- \
		jqe '.[0].evidence | map(select(test("Software caused connection abort"))) | length == 1' <<<"$f"
	check "${name}_no_retry_settings" "2.24's retries offered for 2.21: $(jq -c '[.[0].hypotheses[]? | select(test("NCCL_SOCKET_RETRY"))]' <<<"$f")" -- \
		jqe '.[0] != null and ([.[0].hypotheses[]? | select(test("NCCL_SOCKET_RETRY"))] | length == 0)' <<<"$f"
	own_pkill "$NJ"
fi
end_checks
