#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/manpage.sh NCCLTRACE OUT [SBINDIR LIBDIR UNITDIR]: nccltrace(8) from
# dist/nccltrace.8.in, each command's section made from that command's own --help (preformatted),
# so that the page covers every command and option the binary has.
set -eu
cd "$(dirname "$0")/.."
NT=$1
OUT=$2
SBINDIR=${3:-/usr/sbin}
LIBDIR=${4:-/usr/lib/nccltrace}
UNITDIR=${5:-/usr/lib/systemd/system}
# roff's escapes: a backslash is \e, a line that starts with . or ' starts with \&, a - is \-
esc() { sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }
cmds=$(mktemp)
trap 'rm -f "$cmds"' EXIT
for c in run attach agent report convert cat watch replay doctor probes; do
	printf '.SS %s\n.nf\n' "$c"
	"$NT" "$c" --help | esc
	printf '.fi\n'
done >"$cmds"
version=$("$NT" --version | head -1 | cut -d' ' -f2)
sed -e "s|@VERSION@|$version|; s|@DATE@|$(date -u +%Y-%m-%d)|" \
	-e "s|@SBINDIR@|$SBINDIR|g; s|@LIBDIR@|$LIBDIR|g; s|@UNITDIR@|$UNITDIR|g" \
	-e "/^@COMMANDS@\$/{r $cmds" -e 'd}' dist/nccltrace.8.in >"$OUT"
