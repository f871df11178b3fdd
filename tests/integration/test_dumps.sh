#!/bin/bash
# SPDX-License-Identifier: MIT
# The sanitizers' build reads every trace dump the plain pass left (make check keeps them:
# NT_KEEP_DUMPS, then NT_DUMPS_FROM): report, report --json, report --html, convert, doctor and cat
# each give what the plain build gives from the same dump (exit status and every byte), and any
# ASan, LeakSanitizer or UBSan report fails the script (scripts/run-tests.sh reads their logs).
# Dumps of every kind the scripts make: stalls, setup hangs, multi-host, IB, floods, corrupt and
# truncated ones, .zst ones. The tracer's runs are the other scripts'; this is the readers'
# sanitized pass, over far more dumps than re-running the scripts would give. A check per reader
# and script whose dumps it reads (SCRIPTS: the 25 that leave dumps), so that a failure names
# both; each reads at least one dump of that script.
# checks: 163
# lane: long 300 (the sanitized pass: every dump read twice, at nice 19; 142 s alone on 2 CPUs
# over 241 dumps, 208 s when it rendered every dump of 32 KB or less with LeakSanitizer on)
. "$(dirname "$0")/lib.sh"

PLAIN=$ROOT/build/nccltrace
FROM=${NT_DUMPS_FROM:-}

if [ "$(readlink -f "$NT")" = "$(readlink -f "$PLAIN")" ]; then
	skip_rest dumps "the sanitized pass's: it reads the plain pass's dumps with another build (NT_TRACER)"
	end_checks
fi
if [ -z "$FROM" ] || [ ! -d "$FROM" ]; then
	fail dumps_kept "no dumps to read: NT_DUMPS_FROM='$FROM' (make check keeps the plain pass's)"
	skip_rest dumps "no dumps"
	end_checks
fi

# the scripts that leave dumps (test_probes and this one leave none)
SCRIPTS=(test_adaptive test_agent test_attach test_attachcomms test_audit test_bundle test_counters_old
	test_doctor test_dumprate test_flood test_hostile test_ib test_kill test_multinode
	test_install test_nccl test_nccllog test_postmortem test_privs test_profiler test_pystacks test_report
	test_run test_scale test_stall test_tui test_variants)
READERS=(report json html convert doctor cat)
mapfile -t DUMPS < <(find "$FROM" \( -name '*.jsonl' -o -name '*.jsonl.zst' \) -type f | sort)
nscripts=$(printf '%s\n' "${DUMPS[@]}" | sed 's|/[^/]*$||' | sort -u | wc -l)
check dumps_kept "${#DUMPS[@]} dumps from $nscripts scripts, want at least 40 from ${#SCRIPTS[@]}" -- \
	test "${#DUMPS[@]}" -ge 40 -a "$nscripts" -ge ${#SCRIPTS[@]}

# one DUMP KIND: the plain and the tested build on one dump, their exit status and output
# (stdout, stderr, the file written) into $TMP/KIND/{plain,tested}.N; prints the dump's name if
# they differ
one() {
	local d=$1 kind=$2 b out
	local asan=${ASAN_OPTIONS:-}
	if ! grep -qxF -- "$d" "$TMP/leak-checked"; then
		case $asan in
		*detect_leaks=1*) asan=${asan//detect_leaks=1/detect_leaks=0} ;;
		*detect_leaks=*) ;;
		*) asan=${asan:+$asan:}detect_leaks=0 ;;
		esac
	fi
	for b in plain tested; do
		local bin=$PLAIN
		[ $b = tested ] && bin=$NT
		out=$TMP/$kind/$b.$$.$BASHPID
		case $kind in
		report) "$bin" report "$d" >"$out" 2>&1 ;;
		json) ASAN_OPTIONS=$asan "$bin" report --json "$d" >"$out" 2>&1 ;;
		html) "$bin" report --html "$out.html" "$d" >"$out" 2>&1 ;;
		convert) "$bin" convert "$d" -o "$out.trace" >"$out" 2>&1 ;;
		doctor) "$bin" doctor "$d" >"$out" 2>&1 ;;
		cat) "$bin" cat "$d" >"$out" 2>&1 ;;
		esac
		echo "exit $?" >>"$out"
		for f in "$out.html" "$out.trace"; do
			[ -f "$f" ] && cat "$f" >>"$out" && rm -f "$f"
		done
		# the paths each build wrote to are its own
		sed -i "s|$TMP/$kind/$b\.[0-9.]*|OUT|g" "$out"
	done
	cmp -s "$TMP/$kind/plain.$$.$BASHPID" "$TMP/$kind/tested.$$.$BASHPID" || echo "$d"
	rm -f "$TMP/$kind/plain.$$.$BASHPID" "$TMP/$kind/tested.$$.$BASHPID"
}
export -f one
export PLAIN NT TMP

# same KIND WHAT: every dump through one(), as many at a time as CPUs, at the lowest priority
# (nice 19): the CPUs' idle time, beside scripts whose timings a busy neighbour would stretch;
# then a check per script. report --json (the reader and the diagnosis on every record) reads
# every dump; the other five render what it read, from each script's smallest dump and, for
# each record type and each finding kind (or other "kind") that only a bigger one has, the
# smallest dump that has it: every type, kind and script is rendered, and the bigger dumps (up
# to 10 MB: floods, scaled rings) hold the same records many times over
# a record's type starts its line, a frame's too; a .zst dump's lines are cat's
types_of() {
	case $1 in
	*.zst) "$PLAIN" cat "$1" 2>/dev/null ;;
	*) cat "$1" ;;
	esac | grep -aoE '^\{"type":"[a-z_]*"|"kind":"[a-z_]*"' | sort -u
}
SMALL=()
covered=""
declare -A seen=()
while read -r size d; do
	t=$(types_of "$d")
	s=${d#"$FROM"/}
	s=${s%%/*}
	if [ -z "${seen[$s]:-}" ] || [ -n "$(comm -23 <(echo "$t") <(echo "$covered"))" ]; then
		SMALL+=("$d")
		seen[$s]=1
		covered=$(printf '%s\n%s\n' "$covered" "$t" | sort -u | grep .)
	fi
done < <(printf '%s\n' "${DUMPS[@]}" | xargs -d '\n' stat -c '%s %n' | sort -n)
echo "# renders over ${#SMALL[@]} of ${#DUMPS[@]} dumps, $(wc -l <<<"$covered") record types and kinds"
# LeakSanitizer costs 0.1 s at each exit on 2 CPUs (a third of the pass): it checks every reader
# over the dumps rendered; report --json over the others runs with ASan and UBSan alone
printf '%s\n' "${SMALL[@]}" >"$TMP/leak-checked"
same() {
	local kind=$1 what=$2 diff list=("${SMALL[@]}") s n bad
	[ "$kind" = json ] && list=("${DUMPS[@]}")
	mkdir -p "$TMP/$kind"
	diff=$(printf '%s\0' "${list[@]}" | nice -n 19 xargs -0 -P "$(nproc)" -I{} bash -c 'one "$1" "$2"' _ {} "$kind")
	for s in "${SCRIPTS[@]}"; do
		n=$(printf '%s\n' "${list[@]}" | grep -c "^$FROM/$s/")
		bad=$(grep "^$FROM/$s/" <<<"$diff")
		check "${kind}_${s#test_}" "$what on $n dumps of $s: differs on $(grep -c . <<<"$bad"), e.g. ${bad%%$'\n'*}" -- \
			test "$n" -gt 0 -a -z "$bad"
	done
}

same report "nccltrace report"
same json "nccltrace report --json"
same html "nccltrace report --html"
same convert "nccltrace convert"
same doctor "nccltrace doctor DUMP"
same cat "nccltrace cat"
end_checks
