#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/deb.sh ROOT OUTDIR GITVERSION: the Debian package of make install's tree at ROOT
# (PREFIX=/usr), with dpkg-deb: DEBIAN/control, its Depends the packages of the shared libraries
# the binary names (DT_NEEDED, found with dpkg -S, as dpkg-shlibdeps does without versions). The
# agent's unit is installed, not enabled: the admin enables it. Prints the package's path.
set -euo pipefail
ROOT=$1
OUT=$2
GV=$3
arch=$(dpkg --print-architecture)
# a Debian version: digits first; the git hash after a tilde (sorts before the release)
ver="0.1~git$(tr -c 'A-Za-z0-9.+~\n' '.' <<<"$GV")"
bin=$ROOT/usr/sbin/nccltrace
# the libraries the binary names (DT_NEEDED), not what they load in turn
needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
deps=$(for n in $needed; do
	lib=$(ldd "$bin" | awk -v n="$n" '$1 == n && $3 ~ /^\// { print $3 }')
	[ -n "$lib" ] || continue
	dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null || true
done | cut -d: -f1 | sort -u | paste -sd, | sed 's/,/, /g')
[ -n "$deps" ] || { echo "deb: no package found for the binary's libraries (dpkg -S)" >&2; exit 69; }
MAINT=${DEB_MAINTAINER:-nccltrace developers <nccltrace@users.noreply.github.com>}
# as Debian ships binaries: stripped (the tree of make install keeps its symbols)
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
	"$bin" "$ROOT"/usr/lib/nccltrace/*.so "$ROOT"/usr/lib/nccltrace/nccltrace-nvml
mkdir -p "$ROOT/DEBIAN"
cat >"$ROOT/DEBIAN/control" <<CTL
Package: nccltrace
Version: $ver
Architecture: $arch
Maintainer: $MAINT
Depends: $deps
Section: admin
Priority: optional
Description: why a multi-process NCCL job is stuck, from outside it
 nccltrace traces NCCL jobs (PyTorch distributed and any program on libnccl)
 with BPF programs on the kernel's TCP path and uprobes on NCCL, and names the
 rank the others wait on, its phase, the connection and the likely cause.
 'nccltrace agent' (nccltrace-agent.service) traces every NCCL job of a node.
CTL
gzip -9n <<CHL >"$ROOT/usr/share/doc/nccltrace/changelog.gz"
nccltrace ($ver) unstable; urgency=medium

  * Built from git $GV; the source's history is its git log.

 -- $MAINT  $(date -R)
CHL
# the copyright as Debian writes it: MIT, and GPL-2 for the BPF programs inside the binary
{
	printf 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n'
	printf 'Upstream-Name: nccltrace\n\nFiles: *\nCopyright: 2026 The nccltrace authors\n'
	printf 'License: Expat\n'
	sed -n '/^Permission is hereby granted/,/^SOFTWARE\.$/p' "$(dirname "$0")/../LICENSE" |
		sed 's/^$/./; s/^/ /'
	printf '\nFiles: bpf/*\nCopyright: 2026 The nccltrace authors\nLicense: GPL-2\n'
	printf ' On Debian systems, the complete text of the GNU General Public License version 2\n'
	printf " can be found in '/usr/share/common-licenses/GPL-2'.\n"
} >"$ROOT/usr/share/doc/nccltrace/copyright"
find "$ROOT" -type d -exec chmod 0755 {} +
(cd "$ROOT" && find usr -type f -print0 | sort -z | xargs -0 md5sum >DEBIAN/md5sums)
deb="$OUT/nccltrace_${ver}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$ROOT" "$deb" >/dev/null
echo "$deb"
