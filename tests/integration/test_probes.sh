#!/bin/bash
# SPDX-License-Identifier: MIT
# nccltrace probes: the real libnccl.so.2 of the CUDA toolkit (when installed) resolves the core
# probes with offsets from its DWARF; bad input gives clear errors. Needs no root.
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
	check real_dwarf "offsets not from DWARF: $(grep offsets: <<<"$out")" -- \
		grep -qE '^offsets: +DWARF$' <<<"$out"
	check real_build_id "no build-id" -- grep -qE '^build-id: +[0-9a-f]{40}$' <<<"$out"
	# the reference's checked offsets of 2.28.9 (only when that is the version here)
	if grep -q '^version: *2.28.9' <<<"$out"; then
		check real_socket_connect_addr "ncclSocketConnect not at 0xed7a0" -- \
			grep -qE '^socket_connect +ok +0xed7a0 ' <<<"$out"
		check real_comm_seq_offset "comm->seqNumber not at 0x106a10" -- \
			grep -qE '^ncclComm.seqNumber +1075728$' <<<"$out"
	fi
	check real_cached "no offsets cache written" -- test -n "$(ls "$TMP/cache" 2>/dev/null)"
	out=$("$NT" probes "$REAL" 2>&1)
	check real_cache_used "second run did not use the cache" -- grep -q 'DWARF (cached)' <<<"$out"
else
	skip real_nccl "no libnccl.so.2 from a CUDA toolkit on this machine"
fi

err=$("$NT" probes /nonexistent/libnccl.so.2 2>&1)
rc=$?
check missing_lib "exit $rc ($err)" -- test $rc -eq 66
err=$("$NT" probes /etc/passwd 2>&1)
rc=$?
check not_elf "exit $rc ($err)" -- test $rc -eq 65 -a "$(wc -l <<<"$err")" -eq 1
err=$("$NT" probes /bin/true 2>&1)
rc=$?
check not_nccl "exit $rc ($err)" -- test $rc -eq 65
err=$("$NT" probes 2>&1)
rc=$?
check no_lib "exit $rc ($err)" -- test $rc -eq 64
