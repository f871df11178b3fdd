#!/bin/bash
# SPDX-License-Identifier: MIT
# Build NCCL from its public source for nccltrace's tests (issue 50): any tag or branch of
# NVIDIA/nccl, `make src.lib` for sm_90 only, host code with symbols and DWARF (NCCL builds it
# with -g), and beside it a stripped copy as NVIDIA's .deb ships (.dynsym only).
#   scripts/build-nccl.sh REF        e.g. v2.30.7-1, v2.29.7-1, dev
# The result, out of git: $NCCL_CACHE/REF/{libnccl.so.2, stripped/libnccl.so.2, info, build.log}
# (NCCL_CACHE defaults to .cache/nccl in this checkout, ignored by git and kept by `make clean`,
# so `run` can carry it to a GPU machine). A REF already built is not built again.
#   NCCL_GIT     where the source comes from: a git directory (a clone or mirror) or a URL
#                (default https://github.com/NVIDIA/nccl.git, cloned bare into the cache once)
#   ONLY_FUNCS   the device functions compiled (NCCL's own filter, src/device/generate.py);
#                default what the GPU tests run: AllReduce Sum f32, Broadcast, AllGather,
#                SendRecv. Any other collective or type fails in NCCL with "invalid usage".
#                ONLY_FUNCS=all builds every one (an hour on 2 cores).
#   CUDA_HOME    default /usr/local/cuda (CUDA 13.0's nvcc here and on the GPU machine)
#   JOBS         make's -j (default the cores)
set -eu
cd "$(dirname "$0")/.."
die() { echo "build-nccl: $*" >&2; exit 1; }
[ $# = 1 ] || die "usage: scripts/build-nccl.sh REF (a tag or branch of NVIDIA/nccl, e.g. v2.30.7-1)"
REF=$1
[[ $REF =~ ^[A-Za-z0-9._/-]+$ ]] || die "bad ref '$REF'"
CACHE=${NCCL_CACHE:-.cache/nccl}
CACHE=$(mkdir -p "$CACHE" && cd "$CACHE" && pwd)
OUTD=$CACHE/${REF//\//_}
if [ -f "$OUTD/info" ] && [ -f "$OUTD/libnccl.so.2" ]; then
	cat "$OUTD/info"
	exit 0
fi
CUDA=${CUDA_HOME:-/usr/local/cuda}
[ -x "$CUDA/bin/nvcc" ] || die "no nvcc at $CUDA/bin/nvcc (set CUDA_HOME)"
CUDA=$(cd "$CUDA" && pwd)
FUNCS=${ONLY_FUNCS-"AllReduce Sum f32 * *|Broadcast * *|AllGather * *|SendRecv"}
[ "$FUNCS" = all ] && FUNCS=
GIT=${NCCL_GIT:-https://github.com/NVIDIA/nccl.git}
if [ ! -d "$GIT" ]; then
	if [ ! -d "$CACHE/nccl.git" ]; then
		git clone -q --bare "$GIT" "$CACHE/nccl.git" || die "cannot clone $GIT"
	fi
	GIT=$CACHE/nccl.git
fi
git --git-dir="$GIT" rev-parse -q --verify "$REF^{commit}" >/dev/null ||
	die "no ref '$REF' in $GIT"
W=$(mktemp -d "$CACHE/.work.XXXXXX")
trap 'rm -rf "$W"' EXIT
git --git-dir="$GIT" archive "$REF" | tar -x -C "$W" || die "git archive $REF failed"
mkdir "$W/out"
# A CUDA_HOME without another NCCL's headers: /usr/local/cuda/include may hold a wheel's nccl.h
# and nccl_device/, which shadow the tree's own and break its build.
mkdir -p "$W/cuda/include"
for e in "$CUDA"/*; do
	[ "$(basename "$e")" = include ] || ln -s "$e" "$W/cuda/$(basename "$e")"
done
for e in "$CUDA"/include/*; do
	case $(basename "$e") in nccl*) ;; *) ln -s "$e" "$W/cuda/include/$(basename "$e")" ;; esac
done
JOBS=${JOBS:-$(nproc)}
T0=$(date +%s)
echo "build-nccl: $REF, ONLY_FUNCS='${FUNCS:-all}', -j$JOBS (the log: $OUTD/build.log)" >&2
mkdir -p "$OUTD"
if ! make -C "$W" -j"$JOBS" src.lib BUILDDIR="$W/out" CUDA_HOME="$W/cuda" \
	NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" ONLY_FUNCS="$FUNCS" \
	>"$OUTD/build.log" 2>&1; then
	tail -5 "$OUTD/build.log" >&2
	die "make src.lib failed for $REF (the log: $OUTD/build.log)"
fi
S=$(($(date +%s) - T0))
LIB=$(ls "$W"/out/lib/libnccl.so.*.*.* 2>/dev/null | head -1)
[ -n "$LIB" ] || die "the build made no libnccl.so (the log: $OUTD/build.log)"
cp "$LIB" "$OUTD/libnccl.so.2"
mkdir -p "$OUTD/stripped"
strip --strip-all -o "$OUTD/stripped/libnccl.so.2" "$OUTD/libnccl.so.2"
V=$(basename "$LIB")
{
	echo "ref: $REF ($(git --git-dir="$GIT" rev-parse --short "$REF^{commit}"))"
	echo "version: ${V#libnccl.so.}"
	echo "only_funcs: ${FUNCS:-all}"
	echo "build: ${S} s, -j$JOBS on $(nproc) cores of $(hostname)"
	echo "debug: $OUTD/libnccl.so.2 ($(du -m "$OUTD/libnccl.so.2" | cut -f1) MB," \
		"$(readelf -S "$OUTD/libnccl.so.2" | grep -c '\.debug_') .debug sections)"
	echo "stripped: $OUTD/stripped/libnccl.so.2 ($(du -m "$OUTD/stripped/libnccl.so.2" | cut -f1) MB)"
} >"$OUTD/info"
cat "$OUTD/info"
