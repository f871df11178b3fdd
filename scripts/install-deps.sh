#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the Debian 12 packages nccltrace needs to build and test. Idempotent: installs only
# what is missing, and runs apt-get update only when something is. python3.11 is the one CPython
# Debian 12 packages (apt-cache search: no other python3.X): the Python stack reader's tests run
# on it, and on every other CPython the machine has (tests/unit/test_pystack.c). clang's
# sanitizer and libFuzzer runtimes (make check's sanitized pass and fuzzers) are
# libclang-rt-14-dev, only a recommendation of clang: this script installs none. man-db,
# systemd and lintian: the installed tree's checks (man -l on nccltrace(8), systemd-analyze
# verify on the agent's unit, lintian on the .deb).
set -eu

PKGS="make gcc g++ clang libclang-rt-14-dev llvm libbpf-dev bpftool libelf-dev zlib1g-dev libzstd-dev libjansson-dev
libdw-dev liblzma-dev libbz2-dev libcmocka-dev libncurses-dev pkg-config jq iproute2 procps
tmux chromium time strace libibverbs-dev libibverbs1 python3 python3.11 libmicrohttpd-dev
libcurl4-openssl-dev prometheus curl man-db systemd lintian"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages:$missing; run this script as root" >&2
	exit 1
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
