#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/bundle.sh [BUILD [OUTDIR]]: nccltrace with everything it loads, for GPU nodes that
# have none of its libraries (default BUILD build, OUTDIR BUILD/nccltrace-bundle). The full
# build (--listen, watch, which the static one lacks: Debian ships no static p11-kit for
# libmicrohttpd's GnuTLS, nor most of libcurl's libraries) with its shared libraries, glibc's
# own loader and libc among them, in OUTDIR/lib, and OUTDIR/nccltrace, a script that starts
# it through that loader with that folder alone: the host's libraries and glibc version do not
# matter (x86-64 Linux, any distribution). The job nccltrace starts is exec'd as usual, with the
# host's loader and libraries, and no variable of the bundle in its environment. The user's
# LD_PRELOAD and LD_LIBRARY_PATH go to the job as they were, never into nccltrace. The libraries
# nccltrace puts into the job sit beside its binary (OUTDIR/lib), where it looks for them.
#   make bundle && scp -r build/nccltrace-bundle gpu-node:/opt/nccltrace
#   sudo /opt/nccltrace/nccltrace run -- torchrun ...
set -euo pipefail
B=${1:-build}
D=${2:-$B/nccltrace-bundle}
bin=$B/nccltrace
[ -x "$bin" ] || { echo "bundle: $bin is missing (make builds it)" >&2; exit 66; }
interp=$(readelf -l "$bin" | sed -n 's/.*Requesting program interpreter: \(.*\)\]$/\1/p')
[ -x "$interp" ] || { echo "bundle: $bin names no loader readelf could read" >&2; exit 65; }
rm -rf "$D"
mkdir -p "$D/lib"
cp "$bin" "$D/lib/nccltrace"
for so in "$B"/libnccl-profiler-nccltrace.so "$B"/libnccltrace-audit.so "$B"/nccltrace-nvml; do
	[ -f "$so" ] || { echo "bundle: $so is missing (make builds it)" >&2; exit 66; }
	cp "$so" "$D/lib/"
done
cp -L "$interp" "$D/lib/$(basename "$interp")"
# every library the loader resolves for it, under the name it asks for (the soname)
"$interp" --list "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' |
	while read -r name path; do cp -L "$path" "$D/lib/$name"; done
cat >"$D/nccltrace" <<EOF
#!/bin/sh
# nccltrace $(git -C "$(dirname "$0")" describe --always --dirty 2>/dev/null || echo ""), with its own loader and libraries (scripts/bundle.sh)
d=\$(dirname "\$(readlink -f "\$0")")/lib
# the job's loader settings are the job's: the bundle's loader would load LD_PRELOAD into
# nccltrace, against the bundle's glibc. nccltrace takes them back (NCCLTRACE_JOB_*) and the job
# gets them as they were.
if [ "\${LD_PRELOAD+set}" = set ]; then
	NCCLTRACE_JOB_LD_PRELOAD=\$LD_PRELOAD
	export NCCLTRACE_JOB_LD_PRELOAD
	unset LD_PRELOAD
fi
if [ "\${LD_LIBRARY_PATH+set}" = set ]; then
	NCCLTRACE_JOB_LD_LIBRARY_PATH=\$LD_LIBRARY_PATH
	export NCCLTRACE_JOB_LD_LIBRARY_PATH
	unset LD_LIBRARY_PATH
fi
# how nccltrace starts itself again (the agent's attaches): this script
NCCLTRACE_SELF=\$(readlink -f "\$0")
export NCCLTRACE_SELF
exec "\$d/$(basename "$interp")" --library-path "\$d" --argv0 "\$0" "\$d/nccltrace" "\$@"
EOF
chmod 755 "$D/nccltrace"
echo "bundle: $D ($(ls "$D/lib" | wc -l) files, $(du -sh "$D" | cut -f1)): run $D/nccltrace"
