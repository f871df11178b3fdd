#!/bin/bash
# SPDX-License-Identifier: MIT
# Installed like a system tool: `make install DESTDIR=... PREFIX=/usr` gives the tree (the binary
# in sbin, the job's libraries in lib/nccltrace, which the installed binary finds and puts into a
# job), nccltrace(8) renders with man -l without a warning and has every command, the systemd
# unit passes systemd-analyze verify, the bash completion completes commands and each command's
# options as its --help lists them, --version says what it knows; `make deb` builds a package
# that lintian passes without an error or a warning, that installs into a scratch dpkg root and
# removes from it leaving nothing.
# checks: 14
. "$(dirname "$0")/lib.sh"

I=$TMP/i
out=$(make -s -C "$ROOT" install PREFIX=/usr DESTDIR="$I" OUTPUT="$ROOT/build" 2>&1)
check install_tree "$out; $(cd "$I" && find . -type f | sort | tr '\n' ' ')" -- bash -c '
	cd "$1" && test -x usr/sbin/nccltrace &&
	test "$(stat -c %a usr/lib/nccltrace/libnccl-profiler-nccltrace.so)" = 644 &&
	test -f usr/lib/nccltrace/libnccltrace-audit.so && test -x usr/lib/nccltrace/nccltrace-nvml &&
	test -f usr/share/man/man8/nccltrace.8.gz &&
	test -f usr/share/bash-completion/completions/nccltrace &&
	grep -qx "ExecStart=/usr/sbin/nccltrace agent --dump-dir /var/lib/nccltrace" usr/lib/systemd/system/nccltrace-agent.service &&
	test -f usr/share/doc/nccltrace/copyright' _ "$I"

# the page: no warning from groff, every command its section
if ! command -v man >/dev/null; then
	skip_n 3 man "man is not installed (scripts/install-deps.sh installs man-db)"
fi
command -v man >/dev/null && page=$(LC_ALL=C.UTF-8 MANWIDTH=100 man --warnings -l "$I/usr/share/man/man8/nccltrace.8.gz" 2>"$TMP/man.err")
command -v man >/dev/null && check man_renders "man: $(head -3 "$TMP/man.err") $(head -2 <<<"$page")" -- \
	bash -c '[ ! -s "$1" ] && grep -q "^NAME" <<<"$2" && grep -q "^EXIT STATUS" <<<"$2" && grep -q "^DUMP FORMAT" <<<"$2"' _ "$TMP/man.err" "$page"
command -v man >/dev/null && check man_commands "sections: $(grep -E '^   [a-z]+$' <<<"$page" | tr -d ' ' | tr '\n' ' ')" -- \
	test "$(grep -E '^   [a-z]+$' <<<"$page" | tr -d ' ' | tr '\n' ' ')" = "run attach agent report convert cat watch replay doctor probes "
command -v man >/dev/null && check man_options "run's --max-dump-bytes and agent's --dump-dir in the page" -- \
	bash -c 'grep -q -- "--max-dump-bytes SIZE" <<<"$1" && grep -q -- "--dump-dir DIR" <<<"$1"' _ "$page"

# the unit, as systemd reads it (its ExecStart at the tree's binary, its man page there)
if command -v systemd-analyze >/dev/null; then
	sed "s|/usr/sbin/nccltrace|$I/usr/sbin/nccltrace|" "$I/usr/lib/systemd/system/nccltrace-agent.service" \
		>"$TMP/nccltrace-agent.service"
	err=$(MANPATH=$I/usr/share/man systemd-analyze verify "$TMP/nccltrace-agent.service" 2>&1)
	check unit_verify "systemd-analyze verify: $err" -- test -z "$err"
else
	skip unit_verify "systemd-analyze not installed (scripts/install-deps.sh installs systemd)"
fi

# the completion: commands, then each command's options exactly as its --help lists them
comp() { bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _nccltrace; echo "${COMPREPLY[*]}"' _ \
	"$I/usr/share/bash-completion/completions/nccltrace" "$@"; }
check completion_commands "nccltrace a<TAB>: $(comp nccltrace a)" -- test "$(comp nccltrace a)" = "attach agent"
bad=
for c in run attach agent report convert watch replay doctor probes; do
	want=$("$NT" "$c" --help | grep -oE '^ +(-[a-zA-Z], )?--[a-z-]+' | grep -oE -- '--[a-z-]+' | sort | tr '\n' ' ')
	got=$(comp nccltrace "$c" -- | tr ' ' '\n' | grep -- '^--' | sort | tr '\n' ' ')
	[ "$want" = "$got" ] || bad="$bad $c: help '$want', completion '$got';"
done
check completion_options "${bad:-the options of every command}" -- test -z "$bad"

# the installed binary finds its libraries in ../lib/nccltrace and puts them into the job
if bpf_usable; then
	# (not the sanitized pass's NCCLTRACE_LIBDIR: the installed tree's own)
	env -u NCCLTRACE_LIBDIR "$I/usr/sbin/nccltrace" run --no-tui --dump "$TMP/inst.jsonl" -- env \
		>"$TMP/inst.out" 2>&1
	check installed_libdir "$(grep -E 'NCCL_PROFILER_PLUGIN|LD_AUDIT|nccltrace:' "$TMP/inst.out" | head -4)" -- \
		grep -qx "NCCL_PROFILER_PLUGIN=$I/usr/sbin/../lib/nccltrace/libnccl-profiler-nccltrace.so" "$TMP/inst.out"
else
	skip installed_libdir "BPF is not usable here (not root?)"
fi
# and its NVML helper there (a fake NVML: doctor lists its GPU)
printf 'driver 580.95.05\ngpu 0\n' >"$TMP/nvml.state"
out=$(env -u NCCLTRACE_LIBDIR NCCLTRACE_NVML="$ROOT/build/fakenvml/libnvidia-ml.so.1" \
	FAKENVML_STATE="$TMP/nvml.state" "$I/usr/sbin/nccltrace" doctor 2>&1)
check installed_helper "$(grep GPU <<<"$out")" -- grep -q '^info *GPU NVML: NVML 580.95.05, 1 GPU$' <<<"$out"
v=$("$I/usr/sbin/nccltrace" --version)
check version "$v" -- bash -c 'grep -q "^nccltrace [0-9a-f]" <<<"$1" && grep -qx "dump format 2 (reads 1-2)" <<<"$1" &&
	grep -q "^NCCL: probes by name for 2.18-2.30" <<<"$1" && grep -q "^NCCL profiler plugin: API v1-v7" <<<"$1"' _ "$v"

# the package: made, installed into a scratch dpkg root (its libraries' packages are the
# machine's, not the scratch root's: --force-depends), removed leaving none of its files
deb=$(make -s -C "$ROOT" deb OUTPUT="$ROOT/build" 2>&1 | tail -1)
check deb_built "make deb: $deb; $(dpkg-deb -f "$deb" Package Depends 2>&1 | tr '\n' ' ')" -- bash -c '
	test "$(dpkg-deb -f "$1" Package)" = nccltrace && dpkg-deb -f "$1" Depends | grep -q libbpf1 &&
	[ "$(dpkg-deb -c "$1" | grep -c "\./usr/sbin/nccltrace$")" = 1 ]' _ "$deb"
if command -v lintian >/dev/null; then
	lintian --fail-on error,warning "$deb" >"$TMP/lintian.out" 2>&1
	rc=$?
	out=$(grep -v "running with root privileges" "$TMP/lintian.out")
	check deb_lintian "lintian (exit $rc): $(grep -E '^[EW]:' <<<"$out" | sort -u | head -5)" -- \
		bash -c '[ "$1" -eq 0 ] && ! grep -qE "^[EW]:" <<<"$2"' _ "$rc" "$out"
else
	skip deb_lintian "lintian not installed (scripts/install-deps.sh installs it)"
fi
R=$TMP/root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates"
: >"$R/var/lib/dpkg/status"
: >"$R/var/lib/dpkg/available"
dpk() { dpkg --root="$R" --force-not-root --force-depends --force-script-chrootless "$@"; }
out=$(dpk -i "$deb" 2>&1)
check deb_installs "$(tail -2 <<<"$out"); $(dpk -s nccltrace 2>&1 | grep Status)" -- bash -c '
	dpkg --root="$1" -s nccltrace 2>/dev/null | grep -q "Status: install ok installed" &&
	test -x "$1/usr/sbin/nccltrace" -a -f "$1/usr/lib/nccltrace/libnccl-profiler-nccltrace.so"' _ "$R"
out=$(dpk -r nccltrace 2>&1)
check deb_removes "$(tail -2 <<<"$out"); left: $(find "$R/usr" -type f 2>/dev/null | head -3)" -- bash -c '
	! dpkg --root="$1" -s nccltrace 2>/dev/null | grep -q "Status: install ok installed" &&
	test -z "$(find "$1/usr" -type f 2>/dev/null)"' _ "$R"
end_checks
