#!/bin/bash
# SPDX-License-Identifier: MIT
# nccltrace probes: the real libnccl.so.2 of the CUDA toolkit (when installed) resolves the core
# probes with offsets from its DWARF; bad input gives clear errors. Needs no root.
# checks: 18
. "$(dirname "$0")/lib.sh"

export NCCLTRACE_CACHE_DIR=$TMP/cache
REAL=""
if command -v nvcc >/dev/null; then
	REAL=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")/lib/libnccl.so.2
fi
[ -n "$REAL" ] && [ -r "$REAL" ] || REAL=$(ls /usr/local/cuda*/lib*/libnccl.so.2 2>/dev/null | head -1)

if [ -n "$REAL" ] && [ -r "$REAL" ]; then
	out=$("$NT" probes "$REAL" 2>&1)
	rc=$?
	check real_core_resolved "exit $rc: $out" -- test $rc -eq 0
	check real_version "no version: $(grep version: <<<"$out")" -- \
		grep -qE '^version: +2\.[0-9]+\.[0-9]+' <<<"$out"
	# NVIDIA's release builds (the .deb, NGC) carry no DWARF: there the offsets come from
	# elsewhere and the DWARF checks cannot run
	DWARF=$(readelf -S "$REAL" 2>/dev/null | grep -q '\.debug_info' && echo y)
	if [ -n "$DWARF" ]; then
		check real_dwarf "offsets not from DWARF: $(grep offsets: <<<"$out")" -- \
			grep -qE '^offsets: +DWARF$' <<<"$out"
	else
		skip real_dwarf "$REAL has no DWARF (.debug_info): a stripped release build"
	fi
	check real_build_id "no build-id" -- grep -qE '^build-id: +[0-9a-f]{40}$' <<<"$out"
	# the reference's checked offsets of 2.28.9 (only when that is the version here)
	if grep -q '^version: *2.28.9' <<<"$out"; then
		check real_socket_connect_addr "ncclSocketConnect not at 0xed7a0" -- \
			grep -qE '^socket_connect +ok +0xed7a0 ' <<<"$out"
		check real_comm_seq_offset "comm->seqNumber not at 0x106a10" -- \
			grep -qE '^ncclComm.seqNumber +1075728$' <<<"$out"
	else
		skip_n 2 real_reference_offsets "the reference offsets are 2.28.9's, $REAL is $(sed -n 's/^version: *//p' <<<"$out")"
	fi
	if [ -n "$DWARF" ]; then
		check real_cached "no offsets cache written" -- test -n "$(ls "$TMP/cache" 2>/dev/null)"
		out=$("$NT" probes "$REAL" 2>&1)
		check real_cache_used "second run did not use the cache" -- grep -q 'DWARF (cached)' <<<"$out"
	else
		skip_n 2 real_cache "$REAL has no DWARF: no offsets of its own to cache"
	fi
else
	skip_n 8 real_nccl "no libnccl.so.2 from a CUDA toolkit on this machine"
fi

# --- what tells each fact, by build: NVIDIA-like stripped 2.28.3, and 2.21.5 with DWARF ---
REL=$ROOT/build/fakenccl-2.28.3-release/libnccl.so.2 V221=$ROOT/build/fakenccl-2.21.5/libnccl.so.2
if [ -r "$REL" ] && [ -r "$V221" ]; then
	out=$("$NT" probes "$REL" 2>&1)
	check sources_stripped_counts "$(grep -A9 '^sources' <<<"$out")" -- \
		grep -qE "^  collective counts +nccltrace's profiler plugin$" <<<"$out"
	check sources_stripped_phases "$(grep '^  phases' <<<"$out")" -- \
		grep -qE "^  phases +public API probes \(ncclCommInitRank\*, the first collectives until they return\); the profiler plugin's API events" <<<"$out"
	check sources_stripped_no_roles "$(grep '^  socket roles' <<<"$out")" -- \
		grep -qE '^  socket roles +none on this build$' <<<"$out"
	out=$("$NT" probes "$V221" 2>&1)
	check sources_221_totals "$(grep '^  collective counts' <<<"$out")" -- \
		grep -qE '^  collective counts +comm->sharedRes->collOpCount \(all functions together\)' <<<"$out"
else
	# make builds them: one missing is a broken build, not a reason to skip
	for c in stripped_counts stripped_phases stripped_no_roles 221_totals; do
		fail "sources_$c" "the fake NCCL's variants are not built (make): $REL, $V221"
	done
fi
# doctor for a job: its library (a preloaded one first) and what tells each fact there
if [ -n "$REAL" ] && [ -r "$REAL" ]; then
	mkdir -p "$TMP/pre" && cp "$REAL" "$TMP/pre/libnccl.so.2"
	out=$(env -u NCCL_SOCKET_IFNAME LD_PRELOAD="$TMP/pre/libnccl.so.2" "$NT" doctor -- true 2>&1)
	check doctor_preloaded "$(head -2 <<<"$out")" -- \
		grep -qE "NCCL names from NCCL [0-9.]+ at $TMP/pre/libnccl.so.2$" <<<"$out"
	if [ -n "$DWARF" ]; then
		check doctor_sources "$(head -4 <<<"$out")" -- \
			grep -qE "^  collective counts +comm->seqNumber, read from memory; nccltrace's profiler plugin" <<<"$out"
	else
		skip doctor_sources "$REAL has no DWARF: comm->seqNumber is not read there"
	fi
else
	skip_n 2 doctor_sources "no libnccl.so.2 from a CUDA toolkit on this machine"
fi

err=$("$NT" probes /nonexistent/libnccl.so.2 2>&1)
rc=$?
check missing_lib "exit $rc ($err)" -- test $rc -eq 66
err=$("$NT" probes /etc/passwd 2>&1)
rc=$?
check not_elf "exit $rc ($err)" -- error_is 65 $rc "$err"
err=$("$NT" probes /bin/true 2>&1)
rc=$?
check not_nccl "exit $rc ($err)" -- test $rc -eq 65
err=$("$NT" probes 2>&1)
rc=$?
check no_lib "exit $rc ($err)" -- test $rc -eq 64
end_checks
