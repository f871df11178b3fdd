// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/exits.h"
#include "present/convert.h"
#include "present/dump.h"
#include "present/convertmerge.h"
#include "present/html.h"

#define MAX_LANES 4 /* nesting depths drawn per rank */

static int collect_events(void *ctx, json_t *rec, int line)
{
	const char *type = json_string_value(json_object_get(rec, "type"));

	(void)line;
	if (type && !strcmp(type, "finding"))
		json_array_append_new(ctx, json_pack("{s:O,s:O,s:O,s:O?,s:O?}", "id",
						     json_object_get(rec, "id"), "event",
						     json_object_get(rec, "event"), "ts_ns",
						     json_object_get(rec, "ts_ns"), "since_s",
						     json_object_get(rec, "since_s"), "rank",
						     json_object_get(rec, "rank")));
	return 0;
}

/* One pass per part of the page (ranks, slices, stall spans, findings), in the page's order. */
json_t *html_data(json_t *report, json_t *trace, json_t *finding_events)
{
	json_t *ranks = json_object_get(report, "ranks"),
	       *ev = json_object_get(trace, "traceEvents");
	json_t *out = json_object(), *rows = json_array(), *slices = json_array(),
	       *stalls = json_array(), *e, *r;
	double end_s = 0,
	       start_ns = (double)json_integer_value(json_object_get(report, "start_ns"));
	size_t i, k;

	/* the end of the trace: the last event */
	json_array_foreach(ev, i, e)
	{
		double t = (json_number_value(json_object_get(e, "ts")) +
			    json_number_value(json_object_get(e, "dur"))) /
			   1e6;

		end_s = t > end_s ? t : end_s;
	}
	json_array_foreach(ranks, k, r)
	{
		json_int_t rank = json_integer_value(json_object_get(r, "rank"));
		json_int_t pid = json_integer_value(json_object_get(r, "pid"));
		double open[MAX_LANES + 8];
		int depth = 0;

		json_array_append_new(rows,
				      json_pack("{s:I,s:I,s:O?,s:O?,s:O?,s:O?,s:O?}", "rank", rank,
						"pid", pid, "ended", json_object_get(r, "ended"),
						"ended_s", json_object_get(r, "ended_s"), "host",
						json_object_get(r, "host"), "progress",
						json_object_get(r, "progress"), "conns",
						json_object_get(r, "conn_progress")));
		/* the main thread's phases, with their nesting depth (slices come in time order) */
		json_array_foreach(ev, i, e)
		{
			double ts, dur;

			if (strcmp(json_string_value(json_object_get(e, "ph")), "X") ||
			    json_integer_value(json_object_get(e, "pid")) != rank ||
			    json_integer_value(json_object_get(e, "tid")) != pid)
				continue;
			ts = json_number_value(json_object_get(e, "ts")) / 1e6;
			dur = json_number_value(json_object_get(e, "dur")) / 1e6;
			while (depth > 0 && open[depth - 1] <= ts)
				depth--;
			if (depth < MAX_LANES)
				json_array_append_new(
					slices, json_pack("[I,f,f,i,O]", (json_int_t)k, ts, dur,
							  depth, json_object_get(e, "name")));
			if (depth < (int)(sizeof(open) / sizeof(open[0])))
				open[depth++] = ts + dur;
		}
	}
	/* each finding's span: from when the wait began to its close (or the end) */
	json_array_foreach(finding_events, i, e)
	{
		json_t *f;
		double s, t_end = end_s;
		json_int_t id = json_integer_value(json_object_get(e, "id"));
		int row = -1;

		if (strcmp(json_string_value(json_object_get(e, "event")), "open"))
			continue;
		s = ((double)json_integer_value(json_object_get(e, "ts_ns")) - start_ns) / 1e9 -
		    json_number_value(json_object_get(e, "since_s"));
		json_array_foreach(finding_events, k,
				   f) if (json_integer_value(json_object_get(f, "id")) == id &&
					  !strcmp(json_string_value(json_object_get(f, "event")),
						  "close")) t_end =
			((double)json_integer_value(json_object_get(f, "ts_ns")) - start_ns) / 1e9;
		json_array_foreach(ranks, k,
				   r) if (json_is_integer(json_object_get(e, "rank")) &&
					  json_integer_value(json_object_get(r, "rank")) ==
						  json_integer_value(json_object_get(e, "rank")))
			row = (int)k;
		json_array_append_new(stalls,
				      json_pack("[i,f,f,I]", row, s < 0 ? 0 : s, t_end, id));
		end_s = t_end > end_s ? t_end : end_s;
	}
	/* the axis runs to the last thing drawn: a span or a rank's end past the last slice */
	json_array_foreach(ranks, k,
			   r) if (json_number_value(json_object_get(r, "ended_s")) > end_s) end_s =
		json_number_value(json_object_get(r, "ended_s"));
	json_object_set_new(out, "end_s", json_real(end_s));
	json_object_set_new(out, "ranks", rows);
	json_object_set_new(out, "slices", slices);
	json_object_set_new(out, "stalls", stalls);
	json_object_set(out, "findings", json_object_get(report, "findings"));
	json_object_set(out, "cmd", json_object_get(report, "cmd"));
	json_object_set(out, "host", json_object_get(report, "host"));
	json_object_set(out, "exit_status", json_object_get(report, "exit_status"));
	return out;
}

static const char page_head[] =
	"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	"<meta name=\"generator\" content=\"nccltrace\">\n<title>nccltrace report</title>\n"
	"<style>\n"
	"body{font:13px/1.4 system-ui,sans-serif;margin:16px;color:#222;background:#fff}\n"
	"h1{font-size:18px;margin:0 0 4px}h2{font-size:15px;margin:18px 0 6px}\n"
	".meta{color:#555;margin:0 0 12px;font-family:monospace}\n"
	"#timeline{position:relative;border:1px solid #ccc}\n"
	".row{position:relative;height:56px;border-top:1px solid #eee}\n"
	".row:first-of-type{border-top:0}\n"
	".label{position:absolute;left:0;top:0;width:150px;height:100%;padding:4px 6px;"
	"box-sizing:border-box;background:#fafafa;border-right:1px solid "
	"#ddd;font-family:monospace}\n"
	".track{position:absolute;left:150px;right:0;top:0;bottom:0}\n"
	".slice{position:absolute;height:11px;min-width:1px;border-radius:2px;opacity:.9}\n"
	".heat{position:absolute;top:0;height:100%;image-rendering:pixelated}\n"
	".stall{position:absolute;top:0;bottom:0;background:rgba(220,0,0,.18);"
	"border-left:2px solid #d00;border-right:2px solid #d00;cursor:pointer}\n"
	".stall.global{background:rgba(220,120,0,.12)}\n"
	".wait{position:absolute;top:0;bottom:0;background:rgba(235,160,0,.16);"
	"border-left:2px solid #e9a000}\n"
	".mark{position:absolute;top:0;bottom:0;width:0;border-left:2px dashed #555;"
	"font-size:10px;color:#555;white-space:nowrap}\n"
	".mark.killed{border-left-color:#d00;color:#d00}.mark span{position:absolute;left:2px}"
	".mark.end span{left:auto;right:4px}\n"
	".wfg text.at{fill:#d00}\n"
	".host{padding:3px 6px;background:#eef2f7;border-top:1px solid #ccd;font-weight:600;"
	"font-family:monospace}\n"
	".label{cursor:pointer}.label:hover{background:#eef}\n"
	/* past 64 ranks a row is a few pixels: the heat map, the spans and thin phases */
	".dense .row{height:7px;border-top:0}.dense .label{font-size:7px;line-height:7px;"
	"padding:0 6px}.dense .label br,.dense .label small{display:none}\n"
	".dense .slice{height:2px}.dense .mark{font-size:0}.dense .host{padding:1px 6px}\n"
	"#cursor{position:absolute;top:0;bottom:0;border-left:1px solid #000;z-index:5;"
	"pointer-events:none}\n#cursor span{position:absolute;top:-16px;left:2px;font-size:11px;"
	"background:#fff;padding:0 2px;white-space:nowrap}\n"
	".conns{padding:4px 8px 6px 160px;background:#f7f9fc;border-top:1px solid #eee;"
	"font-family:monospace;font-size:12px}\n.conns .conn{display:flex;gap:10px;"
	"align-items:center}\n.spark polyline{fill:none;stroke:#1e6ec8;stroke-width:1.2}\n"
	".spark{background:#fff;border:1px solid #dde}\n"
	".finding.at-cursor{outline:2px solid #d00}"
	".wfg line.hit{stroke:transparent;stroke-width:10}\n"
	".axis{position:relative;height:18px;margin-left:150px;font-size:11px;color:#666}\n"
	".tick{position:absolute;top:0;border-left:1px solid #bbb;padding-left:2px}\n"
	".finding{border:1px solid #ddd;border-left:4px solid #d00;padding:6px 10px;margin:6px 0}\n"
	".finding.closed{border-left-color:#aaa}\n"
	".finding .k{font-weight:600}.finding ul{margin:4px 0 0 18px;padding:0}\n"
	".finding .hyp{color:#333;font-style:italic}.finding .stk{color:#666;cursor:help}\n"
	".wfg{display:block;margin:6px 0 2px}.wfg text{font:12px monospace}\n"
	".wfg .culprit rect{fill:#fdd;stroke:#d00}.wfg .waiter rect{fill:#fff3d6;stroke:#d90}\n"
	".wfg line{stroke:#888;stroke-width:1.5}\n"
	".legend span{display:inline-block;margin-right:12px}"
	".legend i{display:inline-block;width:10px;height:10px;margin-right:4px}\n"
	"</style></head><body>\n"
	"<h1>nccltrace report</h1>\n<p class=\"meta\" id=\"meta\"></p>\n"
	"<div class=\"axis\" id=\"axis\"></div>\n<div id=\"timeline\"><div id=\"cursor\" "
	"hidden><span></span></div></div>\n"
	"<p class=\"legend\" id=\"legend\"></p>\n"
	"<h2>Findings</h2>\n<div id=\"findings\"></div>\n"
	"<script id=\"data\" type=\"application/json\">";

static const char page_tail[] =
	"</script>\n<script>\n"
	"'use strict';\n"
	"const D = JSON.parse(document.getElementById('data').textContent);\n"
	"const el = (t, c, txt) => { const e = document.createElement(t); if (c) e.className = c;"
	" if (txt !== undefined) e.textContent = txt; return e; };\n"
	"const color = s => { let h = 0; for (const c of s) h = (h * 31 + c.charCodeAt(0)) >>> 0;"
	" return 'hsl(' + (h % 360) + ',55%,55%)'; };\n"
	"const pct = t => (100 * t / Math.max(D.end_s, 1e-9)) + '%';\n"
	"const fmt = s => s < 1 ? (s * 1000).toFixed(1) + ' ms' : s < 120 ? s.toFixed(2) + ' s' :"
	" (s / 60).toFixed(1) + ' min';\n"
	"document.getElementById('meta').textContent = (D.cmd || []).join(' ') + '  \\u2014  host '"
	" + (D.host || '?') + ', ' + fmt(D.end_s) + ' traced, exit status ' +"
	" (D.exit_status === undefined ? '(none: the tracer did not finish)' : D.exit_status);\n"
	/* a row per rank, grouped by host under a header row where there are several; the
	 * label opens the rank's connections */
	"const tl = document.getElementById('timeline'), rows = [], rowOf = new Map(),"
	" dense = D.ranks.length > 64;\nif (dense) document.body.classList.add('dense');\n"
	"const hosts = [...new Set(D.ranks.map(r => r.host).filter(h => h))];\n"
	"const order = D.ranks.map((r, k) => k); if (hosts.length > 1) order.sort((a, b) =>"
	" hosts.indexOf(D.ranks[a].host) - hosts.indexOf(D.ranks[b].host) || a - b);\n"
	"let lastHost;\n"
	"order.forEach(k => { const r = D.ranks[k]; if (hosts.length > 1 && r.host !== lastHost) {"
	" lastHost = r.host; const n = D.ranks.filter(x => x.host === r.host).length;"
	" const h = el('div', 'host', 'host ' + r.host + ' (' + n + (n > 1 ? ' ranks)' : ' "
	"rank)'));"
	" h.dataset.host = r.host; tl.appendChild(h); }"
	" const row = el('div', 'row'); row.dataset.rank = r.rank; if (r.host) row.dataset.host ="
	" r.host; const lab = el('div', 'label', 'rank ' + r.rank); lab.appendChild(el('br'));"
	" lab.appendChild(el('small', null, 'pid ' + r.pid + (r.ended ? ', ' + r.ended : '')));"
	" lab.title = 'its connections'; lab.onclick = () => toggleConns(k);"
	" row.appendChild(lab); const tr = el('div', 'track'); row.appendChild(tr);"
	" tl.appendChild(row); rows[k] = tr; if (!rowOf.has(r.rank)) rowOf.set(r.rank, k); });\n"
	/* where each rank ended: exited, or killed (red) */
	"D.ranks.forEach((r, k) => { if (typeof r.ended_s !== 'number') return;"
	" const m = el('div', 'mark' + (/signal/.test(r.ended || '') ? ' killed' : '') +"
	" (r.ended_s > 0.92 * D.end_s ? ' end' : '')); m.appendChild(el('span', null,"
	" /signal/.test(r.ended || '') ? 'killed' : 'exit')); m.style.left = pct(r.ended_s);"
	" m.dataset.s = r.ended_s.toFixed(3); m.title = (r.ended || 'ended') + ' at ' +"
	" fmt(r.ended_s); rows[k].appendChild(m); });\n"
	/* the heat map under the phases: one canvas a row, a pixel a column, stretched: where the
	 * rank's connections moved bytes (or, where its NCCL uses no socket, it ran collectives),
	 * the darker the more against the job's most of that unit; nothing where nothing moved;
	 * the column's rate on hover (one element a row: 512 rows load) */
	"const pv = p => p ? p.bytes_per_s || p.collectives_per_s || [] : [];\n"
	"const most = key => D.ranks.reduce((m, r) => r.progress && r.progress[key] ?"
	" r.progress[key].reduce((a, v) => v > a ? v : a, m) : m, 0);\n"
	"const hmax = most('bytes_per_s'), cmax = most('collectives_per_s');\n"
	"D.ranks.forEach((r, k) => { const p = r.progress, vs = pv(p), n = vs.length,"
	" byColl = !!(p && !p.bytes_per_s), top = byColl ? cmax : hmax;"
	" if (!n || top <= 0) return; const c = el('canvas', 'heat'); c.width = n; c.height = 1;"
	" c.style.left = pct(p.from_s); c.style.width = pct(n * p.column_s);"
	" if (byColl) c.dataset.unit = 'collectives';"
	" const g = c.getContext('2d'), cols = [];"
	" vs.forEach((v, i) => { if (!(v > 0)) return; cols.push(i);"
	" g.fillStyle = (byColl ? 'rgba(120,60,180,' : 'rgba(30,110,200,') + (0.08 + 0.5 * v /"
	" top).toFixed(3) + ')'; g.fillRect(i, 0, 1, 1); }); c.dataset.cols = cols.join(',');"
	" c.onmousemove = e => { const i = Math.min(n - 1, Math.floor(n * e.offsetX /"
	" c.clientWidth)); c.title = (byColl ? vs[i].toFixed(1) + ' collectives/s' :"
	" (vs[i] / 1048576).toFixed(2) + ' MiB/s') + ' from ' + fmt(p.from_s + i * p.column_s); };"
	" rows[k].appendChild(c); });\n"
	"const names = new Set();\n"
	"D.slices.forEach(([r, s, d, depth, name]) => { const e = el('div', 'slice');"
	" e.style.left = pct(s); e.style.width = pct(d); e.style.top = (dense ? 2 * depth : 4 + 12 "
	"* depth) + 'px';"
	" e.style.background = color(name); e.title = name + ': ' + fmt(d) + ' from ' + fmt(s);"
	" rows[r].appendChild(e); names.add(name); });\n"
	/* each finding's span on its culprit's row (red), and on each rank that waited on it
	 * (amber): from when the wait began to its close */
	"D.stalls.forEach(([r, s, t, id]) => { const f = D.findings.find(x => x.id === id) || {};"
	" const e = el('div', 'stall' + (r < 0 ? ' global' : '')); e.dataset.finding = id;"
	" e.dataset.s = s.toFixed(3); e.dataset.t = t.toFixed(3);"
	" e.style.left = pct(s); e.style.width = pct(Math.max(t - s, 0));"
	" e.title = (f.kind || '') + ': ' + (f.summary || '');"
	" e.onclick = () => { setCursor(s); document.getElementById('f' + id).scrollIntoView(); };"
	" if (r >= 0) rows[r].appendChild(e); else { e.style.position = 'absolute';"
	" tl.appendChild(e); }"
	" (f.waiter_ranks || []).forEach(w => { const k = rowOf.get(w); if (w === f.rank ||"
	" k === undefined || k === r) return; const a = el('div', 'wait'); a.dataset.finding = id;"
	" a.dataset.s = s.toFixed(3); a.dataset.t = t.toFixed(3); a.style.left = pct(s);"
	" a.style.width = pct(Math.max(t - s, 0)); a.title = 'rank ' + w + ' waits on rank ' +"
	" f.rank + ': ' + (f.summary || ''); rows[k].appendChild(a); }); });\n"
	"const ax = document.getElementById('axis'), step = (() => { const t = D.end_s / 8;"
	" const p = Math.pow(10, Math.floor(Math.log10(Math.max(t, 1e-6))));"
	" return [1, 2, 5, 10].map(m => m * p).find(m => m >= t); })();\n"
	"for (let t = 0; t <= D.end_s; t += step) { const k = el('div', 'tick', fmt(t));"
	" k.style.left = pct(t); ax.appendChild(k); }\n"
	"const lg = document.getElementById('legend');"
	" if (hmax > 0) { const s = el('span'); const i = el('i');"
	" i.style.background = 'rgba(30,110,200,.58)'; s.appendChild(i); s.appendChild("
	"document.createTextNode('bytes moved a second (the darker, the more; blank: nothing; "
	"most ' + (hmax / 1048576).toFixed(1) + ' MiB/s)')); lg.appendChild(s); }"
	" if (cmax > 0) { const s = el('span'); const i = el('i');"
	" i.style.background = 'rgba(120,60,180,.58)'; s.appendChild(i); s.appendChild("
	"document.createTextNode('collectives a second, where a rank\\'s NCCL uses no socket (most "
	"'"
	" + cmax.toFixed(1) + ')')); lg.appendChild(s); }"
	" [...names].sort().forEach(n => { const s = el('span'); const i = el('i');"
	" i.style.background = color(n); s.appendChild(i); "
	"s.appendChild(document.createTextNode(n));"
	" lg.appendChild(s); });\n"
	"const fl = document.getElementById('findings');\n"
	"if (!D.findings.length) fl.appendChild(el('p', null, 'None: no rank waited on another"
	" longer than the threshold.'));\n"
	/* a finding's stacks, as its box's hover text: each thread's Python frames (merged with
	 * the native ones where they were), then its native frames, innermost first */
	"function stacksText(f) { return (f.stacks || []).map(s => { const py = s.python || {};"
	" const nat = (s.frames || []).map(x => x.symbol || ((x.module || '').split('/').pop() +"
	" '+0x' + (x.offset || 0).toString(16) + (x.near ? ' (near ' + x.near + ')' : '')));"
	" return 'stack of the ' + s.role + ', pid ' + s.pid + ' thread ' + s.tid +"
	" (s.syscall ? ', blocked in ' + s.syscall : '') + ':' +"
	" (py.error ? '\\n  python: ' + py.error : '') +"
	" (py.text ? '\\n  ' + py.text : '') +"
	" (py.frames || []).map(p => '\\n  py ' + p.file + ':' + p.line + ' ' + p.func).join('') +"
	" nat.map(n => '\\n  ' + n).join(''); }).join('\\n'); }\n"
	/* "0,2-4,7": ranks as ranges */
	"const ranges = rs => { const a = [...rs].sort((x, y) => x - y), out = [];"
	" for (let i = 0; i < a.length; i++) { let j = i; while (j + 1 < a.length &&"
	" a[j + 1] === a[j] + 1) j++; out.push(j > i ? a[i] + '-' + a[j] : '' + a[i]); i = j; }"
	" return out.join(','); };\n"
	/* the wait-for graph at the finding: its waiters (the longest apart, on its connection),
	 * each edge to the culprit with what it waits on and for how long */
	"const SVG = 'http://www.w3.org/2000/svg';\n"
	"const sv = (t, a, txt) => { const e = document.createElementNS(SVG, t);"
	" for (const k in a) e.setAttribute(k, a[k]); if (txt !== undefined) e.textContent = txt;"
	" return e; };\n"
	"function waitGraph(f) { if (f.rank === null || f.rank === undefined) return null;"
	" const ws = (f.waiter_ranks || []).filter(r => r !== f.rank); if (!ws.length) return null;"
	" const rest = ws.filter(r => r !== f.peer_rank), nodes = [];"
	" if (ws.includes(f.peer_rank)) nodes.push({ranks: [f.peer_rank], what: (f.conn ? f.conn +"
	" ', ' : '') + 'no progress ' + fmt(f.since_s || 0), label: 'rank ' + f.peer_rank +"
	" ' (longest)'});"
	" if (rest.length) nodes.push({ranks: rest, what: 'wait ' +"
	" (f.kind === 'ring_setup_blocked' ? 'in the setup' : 'in it'),"
	" label: (rest.length > 1 ? 'ranks ' : 'rank ') + ranges(rest) +"
	" ' (' + rest.length + ')'});"
	" const h = 30 + 46 * nodes.length, g = sv('svg', {class: 'wfg', width: 760, height: h,"
	" 'data-root': f.rank});"
	" const root = sv('g', {class: 'node culprit', 'data-rank': f.rank});"
	" root.appendChild(sv('rect', {x: 520, y: h / 2 - 14, width: 220, height: 28, rx: 4}));"
	" root.appendChild(sv('text', {x: 530, y: h / 2 + 4}, 'rank ' + f.rank + ' (pid ' + f.pid +"
	" ')')); g.appendChild(root);"
	" nodes.forEach((n, i) => { const y = 22 + 46 * i, w = sv('g', {class: 'node waiter',"
	" 'data-ranks': n.ranks.join(',')}); w.appendChild(sv('rect', {x: 4, y: y - 14, width: 230,"
	" height: 28, rx: 4})); w.appendChild(sv('text', {x: 12, y: y + 4}, n.label));"
	" g.appendChild(w); const ed = sv('g', {class: 'edge', 'data-ranks': n.ranks.join(',')});"
	" ed.appendChild(sv('title', {}, n.label + ' waits on rank ' + f.rank + ': ' + n.what +"
	" (f.evidence || []).map(x => '\\n' + x).join('')));"
	" ed.appendChild(sv('line', {x1: 234, y1: y, x2: 520, y2: h / 2}));"
	" ed.appendChild(sv('line', {class: 'hit', x1: 234, y1: y, x2: 520, y2: h / 2}));"
	" ed.appendChild(sv('text', {class: 'what', x: 244, y: y + (y < h / 2 ? -4 : 14)},"
	" n.what)); g.appendChild(ed); });"
	" g.appendChild(sv('text', {class: 'at', x: 520, y: h / 2 + 32}, '')); return g; }\n"
	"D.findings.forEach(f => { const b = el('div', 'finding' + (f.event === 'close' ? ' closed'"
	" : '')); b.id = 'f' + f.id; const h = el('div'); h.appendChild(el('span', 'k',"
	" (f.kind || '').toUpperCase() + (f.rank !== null && f.rank !== undefined ? ' rank ' +"
	" f.rank : '') + ' '));"
	" h.appendChild(document.createTextNode(fmt(f.since_s || 0) + ': ' + f.summary));"
	" const st = stacksText(f); if (st) { b.title = st; h.appendChild(el('span', 'stk',"
	" ' [stacks on hover]')); }"
	" b.appendChild(h); const ul = el('ul'); (f.evidence || []).forEach(x =>"
	" ul.appendChild(el('li', null, x))); (f.hypotheses || []).forEach((x, i) =>"
	" ul.appendChild(el('li', 'hyp', (i ? 'or: ' : 'likely: ') + x))); b.appendChild(ul);"
	" const wg = waitGraph(f); if (wg) b.insertBefore(wg, ul);"
	" fl.appendChild(b); });\n"
	/* the time cursor, shared by the rows and the graphs: where the mouse is over the
	 * timeline (or a span clicked, or #t=SECONDS in the address); each finding open then is
	 * outlined, and its graph's edges say how long its waiters had waited by then */
	"const cur = document.getElementById('cursor');\n"
	"function setCursor(t) { t = Math.max(0, Math.min(t, D.end_s)); cur.hidden = false;"
	" cur.style.left = 'calc(150px + (100% - 150px) * ' + (t / Math.max(D.end_s, 1e-9)) + ')';"
	" cur.dataset.s = t.toFixed(3); cur.firstChild.textContent = fmt(t);"
	" D.stalls.forEach(([r, s, e, id]) => { const b = document.getElementById('f' + id);"
	" if (!b) return; const on = s <= t && t <= e; b.classList.toggle('at-cursor', on);"
	" b.querySelectorAll('.wfg text.at').forEach(x => x.textContent = on ? 'at ' + fmt(t) +"
	" ': waiting ' + fmt(t - s) : ''); }); }\n"
	"tl.addEventListener('mousemove', e => { const b = tl.getBoundingClientRect(),"
	" x = e.clientX - b.left - 150; if (x >= 0 && b.width > 150) setCursor(D.end_s * x /"
	" (b.width - 150)); });\n"
	/* a rank's connections under its row: the busiest, each with its bytes a second as a
	 * sparkline over the dump */
	"const mib = b => (b / 1048576).toFixed(1) + ' MiB';\n"
	"function toggleConns(k) { const r = D.ranks[k], row = rows[k].parentNode,"
	" open = row.nextSibling && row.nextSibling.className === 'conns' ? row.nextSibling : null;"
	" if (open) { open.remove(); return; } const p = el('div', 'conns'); p.dataset.rank = "
	"r.rank;"
	" const cp = r.conns, cs = cp ? cp.conns : [];"
	" if (!cs.length) p.appendChild(el('div', null, 'rank ' + r.rank + ': no connection moved"
	" bytes in the dump'));"
	" else p.appendChild(el('div', null, 'rank ' + r.rank + ', its busiest connections:"
	" bytes a second from ' + fmt(cp.from_s) + ' to ' + fmt(cp.from_s + cp.column_s *"
	" cs[0].bytes_per_s.length) + ', ' + fmt(cp.column_s) + ' a point'));"
	" const top = cs.reduce((m, c) => c.bytes_per_s.reduce((a, v) => v > a ? v : a, m), 1);"
	" cs.forEach(c => { const d = el('div', 'conn'); d.dataset.conn = c.id;"
	" const n = c.bytes_per_s.length, g = sv('svg', {class: 'spark', width: 160, height: 22});"
	" g.appendChild(sv('polyline', {points: c.bytes_per_s.map((v, i) => (n > 1 ? 160 * i /"
	" (n - 1) : 0).toFixed(1) + ',' + (21 - 20 * v / top).toFixed(1)).join(' ')}));"
	" g.appendChild(sv('title', {}, c.bytes_per_s.map(v => mib(v) + '/s').join(' ')));"
	" d.appendChild(g); d.appendChild(el('span', null, (c.src || '?') + ' -> ' + (c.dst || '?')"
	" + (c.peer_pid ? ' (peer pid ' + c.peer_pid + ')' : '') + ', ' + mib(c.bytes_sent) +"
	" ' sent, ' + mib(c.bytes_recv) + ' received')); p.appendChild(d); });"
	" if (cp && cp.more) p.appendChild(el('div', null, 'and ' + cp.more + ' more'));"
	" row.after(p); }\n"
	"const Q = new URLSearchParams(location.hash.slice(1));\n"
	"if (Q.has('rank')) { const k = rowOf.get(+Q.get('rank')); if (k !== undefined)"
	" toggleConns(k); }\n"
	"if (Q.has('t') && isFinite(+Q.get('t'))) setCursor(+Q.get('t'));\n"
	/* how long the page took, its layout included (benchmarks read it) */
	"void document.body.offsetHeight; document.body.dataset.drawnMs ="
	" Math.round(performance.now());\n"
	"</script>\n</body></html>\n";

/*
 * The JSON inside the page's data script, with no '<' at all (written \u003c, the same string to
 * JSON.parse): the job's text can then neither end the script ("</script>") nor put the HTML
 * parser in its escaped states ("<!--<script>", where a "</script>" no longer ends the data and
 * the page's own script is swallowed). Only strings hold a '<' in JSON.
 */
static int put_script_data(const char *js, FILE *f)
{
	for (const char *p = js; *p;) {
		size_t n = strcspn(p, "<");

		if (n && fwrite(p, 1, n, f) != n)
			return -1;
		p += n;
		if (*p == '<') {
			if (fputs("\\u003c", f) < 0)
				return -1;
			p++;
		}
	}
	return 0;
}

/* the page of report, its trace and finding events (all taken over) */
static int write_page(const char *out, json_t *report, json_t *trace, json_t *events, char *err,
		      size_t errlen)
{
	json_t *data = html_data(report, trace, events);
	char *js;
	FILE *f;
	int fd, bad;

	json_decref(trace);
	json_decref(events);
	js = json_dumps(data, JSON_COMPACT | JSON_ESCAPE_SLASH);
	json_decref(data);
	if (!js) {
		snprintf(err, errlen, "out of memory");
		return EXIT_OSERR;
	}
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		snprintf(err, errlen, "cannot write %s: %s", out, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(js);
		return EXIT_CANTCREAT;
	}
	bad = fputs(page_head, f) < 0 || put_script_data(js, f) < 0 || fputs(page_tail, f) < 0;
	free(js);
	if (fclose(f) || bad) {
		snprintf(err, errlen, "cannot write %s", out);
		return EXIT_IOERR;
	}
	return 0;
}

int html_write(const char *out, json_t *report, const char *dump, char *err, size_t errlen)
{
	json_t *trace = convert_dump(dump, true, err, errlen), *events = json_array();

	if (!trace) {
		json_decref(events);
		return EXIT_DATAERR;
	}
	if (dump_read(dump, collect_events, events, err, errlen)) {
		json_decref(trace);
		json_decref(events);
		return EXIT_DATAERR;
	}
	return write_page(out, report, trace, events, err, errlen);
}

int html_write_merged(const char *out, json_t *report, char **dumps, int n, char *err,
		      size_t errlen)
{
	json_t *trace = convert_dumps(dumps, n, true, err, errlen), *events = json_array(), *f;
	size_t i;

	if (!trace) {
		json_decref(events);
		return EXIT_DATAERR;
	}
	/* each merged finding's span: its latest record says when the wait began, and its close */
	json_array_foreach(json_object_get(report, "findings"), i, f)
	{
		json_t *ev = json_pack("{s:O,s:s,s:O,s:O,s:O?}", "id", json_object_get(f, "id"),
				       "event", "open", "ts_ns", json_object_get(f, "ts_ns"),
				       "since_s", json_object_get(f, "since_s"), "rank",
				       json_object_get(f, "rank"));

		json_array_append_new(events, ev);
		if (!strcmp(json_string_value(json_object_get(f, "event")) ?: "", "close")) {
			ev = json_deep_copy(ev);
			json_object_set_new(ev, "event", json_string("close"));
			json_array_append_new(events, ev);
		}
	}
	return write_page(out, report, trace, events, err, errlen);
}
