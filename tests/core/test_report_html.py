"""report.html: self-contained, readable without scripts, and checked in a real browser.

The browser test drives Debian's chromium through PyPI's playwright (``executable_path`` set to
the system browser: nothing is downloaded). It fails when the browser cannot start, so CI
catches a missing browser (`make browser` installs it as root); a user without it can set
``ICML25_NO_BROWSER=1`` to skip that one test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import types
from pathlib import Path

import pytest

from icml25.core import results as res
from icml25.core.claims import Claim, Gate, Measurement, Null, Rule, gate_key, null_key
from icml25.core.html import interval_svg, render_html, write_html
from icml25.core.registry import Method
from icml25.core.runner import run_method
from icml25.methods import load_all

ROOT = Path(__file__).resolve().parents[2]


def _method(monkeypatch, name: str, slug: str, claims, reproduce) -> Method:
    mod = types.ModuleType(name)
    mod.CLAIMS = claims
    mod.reproduce = reproduce
    monkeypatch.setitem(sys.modules, name, mod)
    return Method(slug, f"Paper {slug}", "A. B.", "ICML 2025", "https://x.org", "s", 1.0, name)


def _figure(ctx, name):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1, 0.5])
    ctx.save_figure(fig, name)


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    """A tiny run of two fake methods with every kind of verdict, a control and figures."""
    thr = Rule(">=", 0.9, partial=0.7)
    claims_a = (
        Claim("wins", "it wins", "Tab. 1", "acc", thr, 0.95, null=Null(arm="no update")),
        Claim("hair", "by a hair", "Tab. 2", "acc", thr, null=Null(arm="no update")),
        Claim("fails", "it fails", "Fig. 3", "acc", thr, null=Null(exempt="a theorem")),
        Claim("gated", "gated", "Fig. 4", "acc", thr, null=Null(exempt="x"), gate=Gate("ceil")),
        Claim("far", "far away", "Sec. 5", "x", None, out_of_scale="1000 GPUs"),
        Claim("shuffle", "chance", "ours", "acc", Rule("<=", 0.6), kind="control"),
    )

    def repro_a(ctx):
        _figure(ctx, "curve")
        _figure(ctx, "bars")
        return {
            "wins": [0.95, 0.96, 0.97],
            null_key("wins"): [0.2, 0.3, 0.25],
            "hair": Measurement.with_interval(0.91, 0.9, 0.93, "bootstrap (40 items)"),
            null_key("hair"): [0.5, 0.9, 1.3],
            "fails": Measurement.exact(0.3),
            "gated": [0.1, 0.2, 0.3],
            gate_key("gated"): Measurement.exact(0.5),
            "shuffle": Measurement.bootstrap([[0.4, 0.5, 0.6, 0.5]]),
        }

    claims_b = (
        Claim("straddle", "unsure", "Tab. 1", "ratio", Rule("<=", 1.0), null=Null(arm="plain")),
    )

    def repro_b(ctx):
        _figure(ctx, "only")
        return {"straddle": [0.5, 1.5, 1.0], null_key("straddle"): [2.0, 2.1, 2.2]}

    entries = [
        run_method(
            _method(monkeypatch, "icml25_fake_html_a", "alpha", claims_a, repro_a),
            budget="quick",
            seeds=[0, 1, 2],
            out_dir=tmp_path,
        ),
        run_method(
            _method(monkeypatch, "icml25_fake_html_b", "beta", claims_b, repro_b),
            budget="quick",
            seeds=[0, 1, 2],
            out_dir=tmp_path,
        ),
    ]
    for e in entries:
        assert e["error"] is None, e["error"]
    results = json.loads(json.dumps(res.build_results(entries, "icml25 reproduce alpha beta")))
    res.write_results(results, tmp_path)
    write_html(results, tmp_path)
    return tmp_path


def test_page_is_self_contained_and_complete(run_dir):
    page = (run_dir / "report.html").read_text()
    # no resource from the network: no external scripts, styles or images
    assert not re.search(r"<script[^>]+src=", page)
    assert "<link" not in page
    assert not re.search(r'<img[^>]+src="(?!data:image/png;base64,)', page)
    assert page.count("<img") == 3  # every figure embedded
    assert page.count('<section id="m-') == 2
    verdicts = re.findall(r'<tr id="alpha--[^"]+" data-verdict="([^"]+)" data-method="alpha"', page)
    assert verdicts == [
        "reproduced",
        "reproduced",  # by a hair: the interval touches the threshold
        "not reproduced",
        "out of scale",
        "out of scale",
        "reproduced",  # the control, in its own table
    ]
    assert "null arm (no update) is inconclusive" not in page  # an unsure null does not block
    assert "gate failed: ceil = 0.5" in page
    assert "<h3>Controls</h3>" in page
    assert 'id="filters" hidden' in page  # the filters appear only with scripts


def test_panels_place_interval_threshold_and_null():
    claim = {
        "rule": "mean >= 0.9 (partial if >= 0.7)",
        "verdict": "reproduced",
        "measured": {"mean": 0.95, "std": 0.01, "n": 3, "values": [0.94, 0.95, 0.96]},
        "interval": {"level": 0.9, "low": 0.93, "high": 0.97, "method": "t (n=3)"},
        "null": {
            "arm": "x",
            "measured": {"mean": 0.2, "std": 0, "n": 1, "values": [0.2]},
            "interval": {"level": 0.9, "low": 0.1, "high": 0.3, "method": "t"},
            "verdict": "not reproduced",
        },
    }
    svg = interval_svg(claim, width=220)
    xs = {float(a) for a in re.findall(r'<line x1="([\d.]+)" x2="\1"', svg)}
    assert len(xs) == 2  # threshold and partial lines
    bar = re.search(r'<line x1="([\d.]+)" x2="([\d.]+)" y1="[\d.]+" y2="[\d.]+" stroke="#2e', svg)
    assert bar is not None
    thr_x = max(xs)  # 0.9 sits right of 0.7
    assert float(bar.group(1)) > thr_x  # the whole interval right of the threshold
    assert "<title>null arm</title>" in svg
    unbounded = dict(claim, interval={"level": 0.9, "low": "-inf", "high": "inf", "method": "none"})
    assert interval_svg(unbounded).count("<path") == 3  # two arrows and the null's diamond
    assert interval_svg(dict(claim, rule="out of scale: no", measured=None)) == ""


def test_schema_1_results_render_without_power_columns(run_dir):
    results = res.load_results(run_dir)
    results["schema"] = 1
    for m in results["methods"]:
        for c in m["claims"]:
            for key in ("interval", "null", "gate", "reason", "rule_verdict"):
                c.pop(key, None)
    page = render_html(results, run_dir)
    assert "<th>null arm</th>" not in page and page.count('<section id="m-') == 2


def test_tiny_budget_says_it_is_a_smoke_test(run_dir):
    results = res.load_results(run_dir)
    assert "smoke test" not in render_html(results, run_dir)
    for m in results["methods"]:
        m["budget"] = "tiny"
    assert "smoke test" in render_html(results, run_dir)


def test_collected_results_show_where_each_method_came_from(run_dir, tmp_path):
    out = tmp_path / "pub"
    results = res.collect([run_dir], out, "icml25 collect pub run", load_all())
    page = render_html(results, out)
    assert "Collected from 1 runs" in page
    for m in results["methods"]:
        assert f"<tr><td>{m['method']}</td><td><code>" in page
    assert "Collected from" not in render_html(res.load_results(run_dir), run_dir)


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return "/usr/bin/chromium"


BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def test_report_in_a_real_browser(run_dir):
    if os.environ.get("ICML25_NO_BROWSER") == "1":
        pytest.skip("ICML25_NO_BROWSER=1: the browser check was turned off")
    from playwright.sync_api import sync_playwright

    url = (run_dir / "report.html").as_uri()
    shots = ROOT / "runs" / "browser-test"
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        # fails (does not skip) when the browser cannot start: `make browser` installs it
        browser = p.chromium.launch(executable_path=_chromium(), args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url)
            assert errors == []
            widths = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.naturalWidth)")
            assert len(widths) == 3 and all(w > 0 for w in widths)
            assert page.locator("section[data-method]").count() == 2
            assert page.locator("#filters").is_visible()
            rows = page.locator("tr[data-verdict]")
            assert rows.count() == 7

            def visible(verdict: str) -> int:
                return page.locator(f'tr[data-verdict="{verdict}"]:visible').count()

            assert visible("reproduced") == 3
            page.uncheck('input[data-verdict="reproduced"]')
            assert visible("reproduced") == 0 and visible("inconclusive") == 1
            page.check('input[data-verdict="reproduced"]')
            assert visible("reproduced") == 3
            page.select_option("#method-filter", "beta")
            assert page.locator("section[data-method]:visible").count() == 1
            assert page.locator("tr[data-verdict]:visible").count() == 1
            page.select_option("#method-filter", "")
            page.screenshot(path=str(shots / "report.png"), full_page=True)
            assert (shots / "report.png").stat().st_size > 10_000

            # without scripts every row shows and the filters stay hidden
            plain = browser.new_context(java_script_enabled=False).new_page()
            plain.goto(url)
            assert plain.locator("tr[data-verdict]:visible").count() == 7
            assert not plain.locator("#filters").is_visible()
        finally:
            browser.close()
