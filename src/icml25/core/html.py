"""``report.html``: one self-contained page for a run's results (no network, no CDN).

CSS is inline and the figures are embedded as data URIs, so the file can be mailed, archived
or opened from a USB stick. Everything is in the HTML: without JavaScript every section and
row shows; a few lines of script add filters (by verdict, by method) on top. Printing hides the
filters.

Interval plots: each claim row carries a small panel of its own (a *forest plot* read down the
table): the claim's 90% interval as a bar with its mean as a dot, the rule's threshold as a solid
line, the partial threshold dashed, the side of the threshold that passes tinted, and the null
arm (hollow diamond, grey bar) on the same axis. Each panel has its own scale, chosen to show
the interval, the thresholds and the null arm, so "by a hair" (a bar touching the line) and "by
a mile" (a bar far from it) look different whatever the units. An unbounded interval is drawn
to the panel's edges with arrows; an exact value is a dot.
"""

from __future__ import annotations

import base64
import html
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

from icml25.core.claims import VERDICTS
from icml25.core.results import (
    gate_text,
    kind_of,
    measured_text,
    null_text,
    published_text,
    quick_summary,
    tally_text,
    time_line,
    verdict_counts,
)
from icml25.core.runner import atomic_write_bytes

COLOURS = {
    "reproduced": "#2e7d32",
    "partial": "#c9a400",
    "not reproduced": "#c62828",
    "inconclusive": "#8e24aa",
    "out of scale": "#9e9e9e",
    "error": "#000000",
}
ORDER = [*VERDICTS, "error"]

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#222}
header,main{max-width:1400px;margin:0 auto;padding:0 16px}
h1{margin:16px 0 4px}h2{margin:28px 0 4px;border-top:1px solid #ddd;padding-top:12px}
.meta{color:#555;font-size:12px}
td.disagrees{background:#fde0dc;font-weight:600}
table{border-collapse:collapse;width:100%;font-size:12.5px}
th,td{border-bottom:1px solid #e5e5e5;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f6f6f6;position:sticky;top:0}
.v{font-weight:600;white-space:nowrap}
.chip{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px}
.why{font-weight:400;color:#555;font-size:11.5px;display:block;white-space:normal}
.layout{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
.tables{flex:1 1 100%;min-width:0;overflow-x:auto}
.figs{flex:1 1 100%;display:flex;flex-wrap:wrap;gap:10px}.figs figure{flex:0 1 460px}
.figs img{max-width:100%;border:1px solid #eee}
.figs figure{margin:0}.figs figcaption{font-size:11px;color:#666}
nav.toc a{margin-right:10px;white-space:nowrap}
#filters{background:#fafafa;border:1px solid #e5e5e5;padding:6px 10px;margin:10px 0}
#filters label{margin-right:10px;white-space:nowrap}
.small{font-size:11.5px;color:#555}
pre{background:#f6f6f6;padding:8px;overflow:auto;font-size:11px}
@media print{#filters{display:none}th{position:static}.tables{overflow:visible}}
"""

SCRIPT = """
(function(){
  var box=document.getElementById('filters'); box.hidden=false;
  function apply(){
    var on={}; box.querySelectorAll('input[data-verdict]').forEach(function(c){
      on[c.dataset.verdict]=c.checked;});
    var m=document.getElementById('method-filter').value;
    document.querySelectorAll('tr[data-verdict]').forEach(function(r){
      var show=on[r.dataset.verdict]!==false && (m===''||r.dataset.method===m);
      r.hidden=!show;});
    document.querySelectorAll('section[data-method]').forEach(function(s){
      s.hidden=(m!==''&&s.dataset.method!==m);});
  }
  box.addEventListener('change',apply);
  document.getElementById('method-filter').addEventListener('change',function(e){
    apply(); if(e.target.value){location.hash='m-'+e.target.value;}});
})();
"""


def claim_anchor(method: str, claim_id: str) -> str:
    """The ``id`` of a claim's row: ``report.html#<method>--<claim id>``."""
    return f"{method}--{claim_id}"


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _num(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v


def _parse_rule(rule: str) -> tuple[str, float, float | None] | None:
    """``"mean >= 0.9 (partial if >= 0.7)"`` -> (">=", 0.9, 0.7); None for out-of-scale text."""
    m = re.match(r"mean (>=|<=|>|<) (\S+)(?: \(partial if \S+ (\S+)\))?$", rule or "")
    if not m:
        return None
    thr = _num(m.group(2))
    if thr is None:
        return None
    return m.group(1), thr, _num(m.group(3)) if m.group(3) else None


def interval_svg(claim: dict[str, Any], width: int = 220, height: int = 26) -> str:
    """The claim's panel: interval, mean, thresholds, pass side and null arm (module docstring)."""
    rule = _parse_rule(claim.get("rule", ""))
    measured = claim.get("measured")
    if rule is None or measured is None:
        return ""
    op, thr, partial = rule
    mean = _num(measured.get("mean"))
    iv = claim.get("interval") or {}
    low, high = _num(iv.get("low")), _num(iv.get("high"))
    if mean is None:
        return ""
    if low is None or high is None:
        low = high = mean
    null = claim.get("null") or {}
    nm = null.get("measured") if isinstance(null, dict) else None
    niv = null.get("interval") if isinstance(null, dict) else None
    nmean = _num(nm.get("mean")) if nm else None
    nlow = _num(niv.get("low")) if niv else nmean
    nhigh = _num(niv.get("high")) if niv else nmean
    finite = [
        v
        for v in (low, high, mean, thr, partial, nmean, nlow, nhigh)
        if v is not None and math.isfinite(v)
    ]
    if not finite:
        return ""
    lo, hi = min(finite), max(finite)
    span = hi - lo if hi > lo else max(abs(hi), 1.0)
    lo, hi = lo - 0.12 * span, hi + 0.12 * span
    pad = 6

    def x(v: float) -> float:
        v = min(max(v, lo), hi)
        return pad + (v - lo) / (hi - lo) * (width - 2 * pad)

    colour = COLOURS.get(str(claim.get("verdict")), "#444")
    parts = [
        f'<svg class="forest" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="interval against threshold">'
    ]
    up = op in (">=", ">")
    tx = x(thr)
    rx, rw = (tx, width - pad - tx) if up else (pad, tx - pad)
    parts.append(
        f'<rect x="{rx:.1f}" y="2" width="{rw:.1f}" height="{height - 4}" fill="#e8f5e9"/>'
    )
    parts.append(f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="1" y2="{height - 1}" stroke="#333"/>')
    if partial is not None:
        px = x(partial)
        parts.append(
            f'<line x1="{px:.1f}" x2="{px:.1f}" y1="1" y2="{height - 1}" stroke="#777" '
            'stroke-dasharray="3,2"/>'
        )
    if nmean is not None and math.isfinite(nmean):
        y = height * 0.75
        a, b = (nlow if nlow is not None else nmean), (nhigh if nhigh is not None else nmean)
        parts.append(
            f'<line x1="{x(a):.1f}" x2="{x(b):.1f}" y1="{y}" y2="{y}" stroke="#999" '
            'stroke-width="2"/>'
        )
        cx = x(nmean)
        parts.append(
            f'<path d="M{cx:.1f} {y - 4} L{cx + 4:.1f} {y} L{cx:.1f} {y + 4} L{cx - 4:.1f} {y} Z" '
            'fill="#fff" stroke="#666"><title>null arm</title></path>'
        )
    y = height * 0.38
    if math.isfinite(mean):
        a = low if math.isfinite(low) else lo
        b = high if math.isfinite(high) else hi
        parts.append(
            f'<line x1="{x(a):.1f}" x2="{x(b):.1f}" y1="{y}" y2="{y}" stroke="{colour}" '
            'stroke-width="4" stroke-linecap="butt"/>'
        )
        for edge, bound, sign in ((x(a), low, -1), (x(b), high, 1)):
            if not math.isfinite(bound):
                parts.append(
                    f'<path d="M{edge + 6 * sign:.1f} {y} L{edge:.1f} {y - 4} L{edge:.1f} {y + 4} '
                    f'Z" fill="{colour}"/>'
                )
        parts.append(
            f'<circle cx="{x(mean):.1f}" cy="{y}" r="3.5" fill="#fff" stroke="{colour}" '
            'stroke-width="2"><title>mean</title></circle>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _verdict_cell(c: dict[str, Any]) -> str:
    v = str(c["verdict"])
    why = c.get("reason")
    out = f'<span class="chip" style="background:{COLOURS.get(v, "#444")}"></span>{_e(v)}'
    if why and v != "error":
        out += f'<span class="why">{_e(why)}</span>'
    return out


def _rows(m: dict[str, Any], kind: str, schema2: bool) -> str:
    out = []
    for c in m["claims"]:
        if kind_of(c) != kind:
            continue
        paper = "—" if c.get("paper_value") is None else c["paper_value"]
        cells = [
            f'<td title="{_e(c.get("statement", ""))}"><b>{_e(c["id"])}</b>'
            f'<div class="small">{_e(c.get("where", ""))}</div></td>',
            f"<td>{_e(paper)}</td>",
            f"<td>{_e(measured_text(c.get('measured'), c.get('interval')))}"
            f'<div class="small">{_e(c.get("metric", ""))}</div></td>',
            f"<td>{interval_svg(c)}</td>",
            f"<td>{_e(c.get('rule', ''))}</td>",
        ]
        if schema2:
            cells += [f"<td>{_e(null_text(c))}</td>", f"<td>{_e(gate_text(c))}</td>"]
        cells.append(f'<td class="v">{_verdict_cell(c)}</td>')
        if any(x.get("published") for x in m["claims"]):
            flag = ' class="disagrees"' if (c.get("published") or {}).get("disagrees") else ""
            cells.append(f"<td{flag}>{_e(published_text(c))}</td>")
        out.append(
            f'<tr id="{_e(claim_anchor(m["method"], c["id"]))}" '
            f'data-verdict="{_e(c["verdict"])}" data-method="{_e(m["method"])}">'
            + "".join(cells)
            + "</tr>"
        )
    return "\n".join(out)


def _table(m: dict[str, Any], kind: str, schema2: bool) -> str:
    rows = _rows(m, kind, schema2)
    if not rows:
        return ""
    head = [kind, "paper", "measured [90% interval]", "interval vs rule", "rule"]
    if schema2:
        head += ["null arm", "gate"]
    head.append("verdict")
    if any(c.get("published") for c in m["claims"]):
        head.append("published full run")
    title = (
        "<h3>Claims</h3>"
        if kind == "claim"
        else "<h3>Controls</h3><p class='small'>Checks the reproduction adds; not claims of "
        "the paper and not counted in the tally.</p>"
    )
    return (
        f'{title}<table class="{kind}s"><thead><tr>'
        + "".join(f"<th>{_e(h)}</th>" for h in head)
        + f"</tr></thead><tbody>\n{rows}\n</tbody></table>"
    )


def _figure(run_dir: Path, fig: str) -> str:
    path = run_dir / fig
    if not path.is_file():
        return f'<p class="small">figure {_e(fig)} is missing</p>'
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (
        f'<figure><img alt="{_e(Path(fig).stem)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{_e(Path(fig).name)}</figcaption></figure>"
    )


def summary_svg(results: dict[str, Any], width: int = 640) -> str:
    """One stacked bar per method: how many of its claims got each verdict."""
    methods = results["methods"]
    row_h, label_w = 18, 170
    height = row_h * len(methods) + 24
    most = max((sum(1 for c in m["claims"] if kind_of(c) == "claim") for m in methods), default=1)
    scale = (width - label_w - 40) / max(most, 1)
    parts = [
        f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        'aria-label="verdicts per method">'
    ]
    for i, m in enumerate(methods):
        y = 4 + i * row_h
        parts.append(
            f'<a href="#m-{_e(m["method"])}"><text x="{label_w - 6}" y="{y + 12}" '
            f'text-anchor="end" font-size="12">{_e(m["method"])}</text></a>'
        )
        counts = Counter(
            "error" if m.get("error") else c["verdict"]
            for c in m["claims"]
            if kind_of(c) == "claim"
        )
        xpos = float(label_w)
        for v in ORDER:
            if counts[v]:
                w = counts[v] * scale
                parts.append(
                    f'<rect x="{xpos:.1f}" y="{y}" width="{w:.1f}" height="{row_h - 4}" '
                    f'fill="{COLOURS[v]}"><title>{_e(m["method"])}: {counts[v]} {v}</title></rect>'
                )
                xpos += w
        parts.append(
            f'<text x="{xpos + 4:.1f}" y="{y + 12}" font-size="11">{sum(counts.values())}</text>'
        )
    legend_y = height - 6
    xpos = 4.0
    for v in ORDER[:-1]:
        parts.append(
            f'<rect x="{xpos}" y="{legend_y - 9}" width="10" height="10" fill="{COLOURS[v]}"/>'
            f'<text x="{xpos + 13}" y="{legend_y}" font-size="11">{v}</text>'
        )
        xpos += 13 + 6.5 * len(v) + 14
    parts.append("</svg>")
    return "".join(parts)


def render_html(results: dict[str, Any], run_dir: Path) -> str:
    """The page for ``results`` (figures read from ``run_dir``)."""
    env = results["environment"]
    schema2 = results.get("schema", 1) >= 2
    methods = results["methods"]
    counts = verdict_counts(results)
    per_method = "; ".join(
        f"{m['method']}: "
        + ", ".join(
            f"{n} {v}"
            for v, n in Counter(
                c["verdict"] for c in m["claims"] if kind_of(c) == "claim"
            ).most_common()
        )
        for m in methods
    )
    budget = {m["budget"] for m in methods}
    smoke = (
        "<p><b>This is a smoke test (budget <code>tiny</code>): its numbers and verdicts mean "
        "nothing.</b> It checks that every reproduction runs end to end.</p>"
        if budget == {"tiny"}
        else ""
    )
    summary = quick_summary(results)
    if summary is not None:
        smoke += f"<p>{_e(summary.replace('**', ''))}</p>"
    sources = results.get("sources") or []
    provenance = (
        "<details><summary>Collected from "
        f"{len({s['source'] for s in sources})} runs (nothing re-run): where each method comes "
        "from</summary><table><tr><th>method</th><th>command</th><th>commit</th><th>schema</th>"
        "<th>claim texts rebuilt</th></tr>"
        + "".join(
            f"<tr><td>{_e(s['method'])}</td><td><code>{_e(s['command'])}</code></td>"
            f"<td><code>{_e((s['commit'] or '?')[:9])}</code></td><td>{_e(s['schema'])}</td>"
            f"<td>{_e(s.get('texts_from_code', 0))}</td></tr>"
            for s in sources
        )
        + "</table><p class='small'>Schema-1 runs were made before the power audit: their "
        "claims are re-judged with t intervals from their seeds, without null arms, so none "
        "counts as reproduced. Claim texts rebuilt: texts (sizes, wording) taken from the code at "
        "collection for claims whose id, rule, null arm and gate are unchanged since the run "
        "(issue 56).</p></details>"
        if sources
        else ""
    )
    verdict_boxes = "".join(
        f'<label><input type="checkbox" data-verdict="{_e(v)}" checked> '
        f'<span class="chip" style="background:{COLOURS[v]}"></span>{_e(v)} ({counts[v]})</label>'
        for v in ORDER
    )
    options = "".join(
        f'<option value="{_e(m["method"])}">{_e(m["method"])}</option>' for m in methods
    )
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>icml25 reproduction report</title>",
        f"<style>{CSS}</style></head><body><header>",
        "<h1>icml25 reproduction report</h1>",
        f'<p class="meta">Command <code>{_e(results["command"])}</code> · created '
        f"{_e(results['created'])} · commit {_e(env.get('git_commit') or 'not a git checkout')}"
        f" · Python {_e(env.get('python'))} on {_e(env.get('platform'))}</p>",
        smoke,
        provenance,
        f"<p><b>Verdicts of the papers' claims:</b> {_e(tally_text(results))}.</p>",
        f"<p class='small'>{_e(time_line(results).replace('**', ''))}</p>",
        summary_svg(results),
        f'<p class="small">Per method: {_e(per_method)}.</p>',
        "<p class='small'>Each measurement carries a two-sided 90% interval (t over seeds, a "
        "bootstrap over items, or exact). A verdict needs the whole interval past a threshold; "
        "an interval that straddles one is <i>inconclusive</i>. The method is compared with its "
        "null arm (the method without its mechanism) as a paired contrast: a claim whose null "
        "arm also passes the rule is decided only when the contrast excludes 0, and a contrast "
        "on the wrong side makes it <i>not reproduced</i>; a failed gate (the setting cannot "
        "show the effect) makes it <i>out of scale</i>. In each panel: the bar "
        "is the interval, the dot its mean, the solid line the threshold, the dashed line the "
        "partial threshold, the tint the passing side, the diamond the null arm.</p>",
        '<nav class="toc">'
        + "".join(f'<a href="#m-{_e(m["method"])}">{_e(m["method"])}</a>' for m in methods)
        + "</nav>",
        f'<div id="filters" hidden>Show verdicts: {verdict_boxes} &nbsp; Method: '
        f'<select id="method-filter"><option value="">all</option>{options}</select></div>',
        "</header><main>",
    ]
    for m in methods:
        paper = m["paper"]
        figs = "".join(_figure(run_dir, f) for f in m.get("figures", []))
        notes = "".join(f"<li>{_e(n)}</li>" for n in m.get("notes", []))
        error = (
            f"<p><b>The run crashed:</b></p><pre>{_e(m['error'])}</pre>" if m.get("error") else ""
        )
        out += [
            f'<section id="m-{_e(m["method"])}" data-method="{_e(m["method"])}">',
            f"<h2>{_e(m['method'])}: {_e(paper['title'])}</h2>",
            f'<p class="meta">{_e(paper["authors"])}. <i>{_e(paper["venue"])}</i>. '
            f'<a href="{_e(paper["url"])}">{_e(paper["url"])}</a> · budget '
            f"<code>{_e(m['budget'])}</code> · seeds {_e(m['seeds'])} · "
            f"{float(m.get('wall_s', 0)):.1f} s</p>",
            '<div class="layout"><div class="tables">',
            _table(m, "claim", schema2),
            _table(m, "control", schema2),
            f"<ul class='small'>{notes}</ul>" if notes else "",
            error,
            f'</div><div class="figs">{figs}</div></div>',
            "</section>",
        ]
    out += ["</main>", f"<script>{SCRIPT}</script>", "</body></html>"]
    return "\n".join(x for x in out if x)


def write_html(results: dict[str, Any], out_dir: Path, path: Path | None = None) -> Path:
    """Write ``report.html`` (into ``out_dir``, or to ``path``), figures read from ``out_dir``;
    through a temporary file and a rename, so an interrupted write leaves the earlier page."""
    target = path or out_dir / "report.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(target, render_html(results, out_dir).encode("utf-8"))
    return target
