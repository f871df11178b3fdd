#!/bin/bash
# SPDX-License-Identifier: MIT
# What the traced job controls never reaches a terminal or a browser as code, and a dump
# survives the disk it is written to: a job named with escape sequences and markup, traced for
# real (a 3-rank ring, one rank asleep), gives a console, a text report and an HTML report
# without a control byte or a tag of its own; a dump whose strings carry escapes and C1 controls
# is reported clean; a full disk leaves one message, a job unharmed and a dump readable up to its
# last whole record; a dump directory that cannot be written stops nccltrace before the job runs.
# checks: 19
. "$(dirname "$0")/lib.sh"

need_bpf hostile || end_checks

# bytes a terminal would act on: C0 controls but newline, DEL, and C1 (raw or UTF-8 encoded)
ctl() { LC_ALL=C grep -c -aP '[\x00-\x09\x0b-\x1f\x7f-\x9f]|\xc2[\x80-\x9f]' "$1"; }

# a job whose file name is an OSC title sequence, run with an argument that is HTML markup
NAME=$'ring\e]0;PWNED\ajob'
ln -s "$RJ" "$TMP/$NAME"
# "<!--<script>" first: the HTML parser's escaped state, where "</script>" no longer ends the
# data and the page's own script is swallowed (a blank report, no finding)
MARKUP='<!--<script></script><img src=x onerror=alert(1)>'
D=$TMP/evil.jsonl
"$NT" run --no-tui -t 2 --dump "$D" -- sh -c 'exec "$0" --ranks 3 --stall-rank 1 --duration 6 \
	--stall-after 1 --stall-for 4 -q' "$TMP/$NAME" "$MARKUP" >"$TMP/run.out" 2>&1
rc=$?
check job_exit "exit $rc" -- test $rc -eq 0
check dump_has_raw "the dump does not keep the name (as JSON) for the check to mean anything" -- \
	grep -qF 'ring\u001B]0;PWNED\u0007job' "$D"
check console_clean "$(ctl "$TMP/run.out") control bytes on the console" -- test "$(ctl "$TMP/run.out")" = 0
check console_finding "no finding on the console: $(head -3 "$TMP/run.out")" -- \
	grep -q '^nccltrace: STALL' "$TMP/run.out"
"$NT" report "$D" >"$TMP/report.txt" 2>&1
check report_clean "$(ctl "$TMP/report.txt") control bytes in the text report" -- \
	test "$(ctl "$TMP/report.txt")" = 0
check report_names_it "the command is not shown, neutralized: $(grep '^command' "$TMP/report.txt")" -- \
	grep -qF 'ring?]0;PWNED?job' "$TMP/report.txt"
"$NT" report --html "$TMP/report.html" "$D" >/dev/null 2>&1
check html_written "no HTML report" -- grep -q '<script id="data"' "$TMP/report.html"
# the page's own two </script> and no other: the markup stays inside the data, as text
check html_no_tag "$(grep -o '</script>' "$TMP/report.html" | wc -l) </script> in the page" -- \
	test "$(grep -o '</script>' "$TMP/report.html" | wc -l)" = 2
data=$(perl -0ne 'print $1 if m{<script id="data" type="application/json">(.*?)</script>}s' "$TMP/report.html")
check html_data_no_lt "$(grep -o '<' <<<"$data" | wc -l) '<' in the page's data (${#data} bytes)" -- \
	bash -c 'test -n "$1" && ! grep -q "<" <<<"$1" && grep -qF "\\u003c!--\\u003cscript>" <<<"$1"' _ "$data"
CHROMIUM=$(command -v chromium || command -v chromium-browser)
if [ -n "$CHROMIUM" ]; then
	dom=$(timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --dump-dom \
		"file://$TMP/report.html" 2>/dev/null)
	# rendered: the markup shows as text in the page's heading, and made no element
	check html_shown_as_text "the command is not in the rendered page" -- \
		grep -qF '&lt;!--&lt;script&gt;&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;' <<<"$dom"
	# and the page's own script ran: the finding is drawn
	check html_finding_drawn "no STALL heading in the rendered page" -- \
		grep -q 'STALL rank 1' <<<"$dom"
	# (the data script holds it as JSON text: an element is what is outside the scripts)
	outside=$(perl -0pe 's{<script\b.*?</script>}{}gs' <<<"$dom")
	check html_no_element "the job's markup made an element: $(grep -o '<img[^>]*>' <<<"$outside")" -- \
		bash -c "! grep -q '<img' <<<\"\$1\"" _ "$outside"
else
	skip_n 3 html_rendered "no chromium here (scripts/install-deps.sh installs it)"
fi

# a dump from elsewhere whose finding, evidence and setting names carry escapes and C1 controls
jq -c 'if .type == "finding" then .summary = "a\u001b[2Jb\u009b31m" |
	.evidence += ["e\u001b]8;;http://x\u0007link"] | .settings["K\u001b[31m"] = {"value": "v\u0007"}
	else . end' "$D" >"$TMP/forged.jsonl"
"$NT" report "$TMP/forged.jsonl" >"$TMP/forged.txt" 2>&1
check forged_clean "$(ctl "$TMP/forged.txt") control bytes from a forged dump" -- \
	test "$(ctl "$TMP/forged.txt")" = 0
check forged_shown "the forged summary is not shown: $(grep '^#1' "$TMP/forged.txt")" -- \
	grep -qF 'a?[2Jb?31m' "$TMP/forged.txt"

# a full disk: tracing goes on, one message, the dump readable up to its last whole record
FULL=$TMP/full
mkdir -p "$FULL"
if mount -t tmpfs -o size=32k tmpfs "$FULL" 2>/dev/null; then
	at_exit "umount '$FULL' 2>/dev/null"
	"$NT" run --no-tui -t 2 --dump "$FULL/d.jsonl" -- "$RJ" --ranks 3 --stall-rank 1 \
		--duration 5 --stall-after 1 --stall-for 3 -q >"$TMP/full.out" 2>&1
	rc=$?
	check full_exit "exit $rc" -- test $rc -eq 0
	check full_one_message "messages: $(grep -c 'cannot write the trace dump' "$TMP/full.out")" -- \
		test "$(grep -c 'No space left on device; tracing continues' "$TMP/full.out")" = 1
	"$NT" report "$FULL/d.jsonl" >"$TMP/full.txt" 2>"$TMP/full.err"
	rc=$?
	check full_readable "report exit $rc: $(cat "$TMP/full.err")" -- \
		bash -c "test $rc -eq 0 && grep -q '^command: $RJ' '$TMP/full.txt'"
else
	skip_n 3 full "cannot mount a tmpfs here"
fi

# a dump directory that cannot be written: exit 73, and the job never ran
"$NT" run --dump "$TMP/no/such/dir/d.jsonl" -- touch "$TMP/ran" >"$TMP/nodir.out" 2>&1
rc=$?
check nodir_exit "exit $rc ($(cat "$TMP/nodir.out"))" -- error_is 73 $rc "$(cat "$TMP/nodir.out")"
check nodir_job_not_run "the job ran" -- test ! -e "$TMP/ran"
end_checks
