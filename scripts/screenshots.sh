#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/screenshots.sh [OUTDIR]: the README's pictures, made again from a real run: the demo's
# ring (4 ranks, rank 1 asleep 8 s from 4 s in) under nccltrace in a 160x34 tmux terminal; the
# dashboard 9 s in (the stall named) as docs/dashboard.png, the terminal's text and colours
# drawn by headless Chromium; the HTML report of the run's dump as docs/report.png, rank 1's
# connections open and the time cursor in the finding. Needs root
# (BPF), tmux and chromium (scripts/install-deps.sh installs both). OUTDIR: default docs/.
set -eu
cd "$(dirname "$0")/.."
OUT=${1:-docs}
T=$(mktemp -d /tmp/nccltrace-shots.XXXXXX)
S=nt-shots-$$
trap 'tmux kill-session -t "$S" 2>/dev/null || true; rm -rf "$T"' EXIT
for tool in tmux chromium; do
	command -v "$tool" >/dev/null || { echo "screenshots: $tool is needed" >&2; exit 1; }
done
tmux new-session -d -s "$S" -x 160 -y 34 "TERM=xterm-256color build/nccltrace run \
	--stall-threshold 3 --dump $T/demo.jsonl -- build/ringjob --ranks 4 --duration 16 \
	--stall-rank 1 --stall-after 4 --stall-for 8 --stall-mode sleep; sleep 60"
sleep 9
tmux capture-pane -t "$S" -e -p >"$T/pane.ans"
# the pane's text, its SGR colours as spans: the 8 colours and bold nccltrace's dashboard uses
python3 - "$T/pane.ans" "$T/pane.html" <<'PY'
import html, re, sys
colours = ["#000", "#c33", "#3a3", "#c90", "#36c", "#a3a", "#3aa", "#ccc"]
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
out, fg, bg, bold, open_ = [], None, None, False, False
for part in re.split(r"(\x1b\[[0-9;]*m)", text):
    m = re.fullmatch(r"\x1b\[([0-9;]*)m", part)
    if not m:
        out.append(html.escape(part))
        continue
    for c in [int(x) for x in (m.group(1) or "0").split(";") if x]:
        if c == 0:
            fg, bg, bold = None, None, False
        elif c == 1:
            bold = True
        elif 30 <= c <= 37:
            fg = colours[c - 30]
        elif 40 <= c <= 47:
            bg = colours[c - 40]
        elif c == 39:
            fg = None
        elif c == 49:
            bg = None
    if open_:
        out.append("</span>")
    style = ";".join(s for s in [fg and "color:" + fg, bg and "background:" + bg,
                                 bold and "font-weight:bold"] if s)
    out.append('<span style="%s">' % style)
    open_ = True
if open_:
    out.append("</span>")
open(sys.argv[2], "w").write(
    '<!doctype html><meta charset="utf-8"><body style="margin:0;background:#111;color:#ddd">'
    '<pre style="font:13px/1.25 DejaVu Sans Mono,monospace;margin:8px">' + "".join(out) +
    "</pre>")
PY
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1330,600 \
	--screenshot="$OUT/dashboard.png" "file://$T/pane.html" >/dev/null 2>&1
# the run's end, then its report
for _ in $(seq 30); do
	[ -n "$(tail -c 200 "$T/demo.jsonl" 2>/dev/null | grep '"type":"footer"')" ] && break
	sleep 1
done
build/nccltrace report --html "$T/demo.html" "$T/demo.jsonl" >/dev/null
# the page as a link to the moment gives it: rank 1's connections open, the cursor a second
# into the finding
t=$(build/nccltrace report --json "$T/demo.jsonl" |
	jq -r '((.findings[0].opened_ns - .start_ns) / 1e9 + 1) * 100 | floor / 100')
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1100,1000 \
	--screenshot="$OUT/report.png" "file://$T/demo.html#rank=1&t=$t" >/dev/null 2>&1
echo "screenshots: $OUT/dashboard.png, $OUT/report.png"
