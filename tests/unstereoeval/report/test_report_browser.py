"""The report in headless Chromium: the checker on hand-made pages and on a real (tiny) Snakemake report; the
report's captions render without docutils warnings; the fairness-curve y-label."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _paths import REPO

from tools.browser_check import check_html, find_browser

ROOT = REPO
# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def need_browser() -> str:
    browser = find_browser()
    if browser is None:
        reason = "no Chromium on PATH (Debian package `chromium`; scripts/install-system-deps.sh installs it)"
        if os.environ.get("UNSTEREO_STRICT"):
            pytest.fail(f"strict mode: {reason}")
        pytest.skip(reason)
    return browser


def test_captions_render_without_docutils_messages():
    docutils_core = pytest.importorskip("docutils.core")
    # the model card's (shared) and every method's own, in its package folder (src/unstereo/<package>/captions)
    captions = sorted((ROOT / "workflow" / "report").glob("*.rst"))
    captions += sorted((ROOT / "src" / "unstereo").glob("*/captions/*.rst"))
    assert captions
    for rst in captions:
        # halt_level 2: any warning (e.g. "Undefined substitution referenced") raises
        docutils_core.publish_parts(
            rst.read_text(encoding="utf-8"),
            writer="html",
            settings_overrides={"report_level": 2, "halt_level": 2, "warning_stream": False},
        )
    with pytest.raises(Exception, match="Undefined substitution"):
        docutils_core.publish_parts(
            "eps on |FM| at", writer="html",
            settings_overrides={"report_level": 2, "halt_level": 2, "warning_stream": False},
        )  # fmt: skip


def test_fairness_curve_y_label(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt
    import pandas as pd

    from unstereo.models.registry import DEFAULT_REGISTRY, load_registry
    from unstereo.unstereoeval.report.figures import OTHER, figure_data, plot_fairness_curves, y_label

    assert y_label(OTHER, [OTHER]) == "US"
    assert y_label("OPT", ["OPT", OTHER]) == "US\nOPT"
    curves = pd.DataFrame(
        [{"model": m, "benchmark": "USE-5", "eta": float("inf"), "eps": e, "us": e / 2}
         for m in ("smollm2", "gemma3-270m") for e in (0.0, 1.0, 2.0)]
    )  # fmt: skip
    figs = []
    monkeypatch.setattr(plt, "close", lambda fig=None: figs.append(fig))
    plot_fairness_curves(figure_data(curves, load_registry(DEFAULT_REGISTRY)), tmp_path / "fc")
    assert [ax.get_ylabel() for ax in figs[0].axes] == ["US"]


def test_checker_on_hand_made_pages(tmp_path):
    browser = need_browser()
    good = tmp_path / "good.html"
    uri = "data:image/png;base64," + base64.b64encode(PNG).decode()
    good.write_text(f"<html><body><p>fine</p><img src='{uri}'></body></html>")
    res = check_html(good, browser=browser, screenshot=tmp_path / "good.png")
    assert res.ok, res.summary()
    assert not res.snakemake_report and (tmp_path / "good.png").read_bytes()[:4] == b"\x89PNG"

    bad = tmp_path / "bad.html"
    bad.write_text(
        "<html><body><img src='missing.png'><script>console.error('boom'); "
        "setTimeout(() => { throw new Error('kaput'); }, 0);</script></body></html>"
    )
    res = check_html(bad, browser=browser)
    assert not res.ok
    assert res.broken_images == ["missing.png"]
    errors = " | ".join(res.console_errors)
    assert "boom" in errors and "kaput" in errors


SNAKEFILE = """
rule all:
    input: "fig.png", "table.html"

rule fig:
    output: report("fig.png", caption="caption.rst", category="Figures")
    shell: "cp {src} {{output}}"

rule table:
    output: report("table.html", caption="caption.rst", category="Tables", subcategory="Generic")
    shell: "echo '<html><body><table><tr><td>1</td></tr></table></body></html>' > {{output}}"
"""


def _tiny_report(tmp_path: Path, png: bytes) -> Path:
    tmp_path.mkdir(parents=True)
    (tmp_path / "src.png").write_bytes(png)
    (tmp_path / "caption.rst").write_text("A caption with ``|FM|``.\n")
    (tmp_path / "Snakefile").write_text(SNAKEFILE.format(src=tmp_path / "src.png"))
    snakemake = [
        sys.executable,
        "-m",
        "snakemake",
        "--cores",
        "1",
        "-d",
        str(tmp_path),
        "-s",
        str(tmp_path / "Snakefile"),
    ]
    subprocess.run(snakemake, check=True, capture_output=True, timeout=300)
    subprocess.run([*snakemake, "--report", "report.html"], check=True, capture_output=True, timeout=300)
    return tmp_path / "report.html"


def test_checker_command_in_a_fresh_process(tmp_path):
    """`python -m tools.browser_check` in a new interpreter, where the debugging pipe's own descriptors
    are 3 and 4 (the same numbers the browser reads): it must still hand the pipe over (it once started the
    browser without it and died of a broken pipe)."""
    need_browser()
    page = tmp_path / "page.html"
    page.write_text("<html><body><p>fine</p></body></html>")
    run = subprocess.run(
        [sys.executable, "-m", "tools.browser_check", str(page), "--screenshot", str(tmp_path / "p.png")],
        capture_output=True, text=True, timeout=300, close_fds=True,
    )  # fmt: skip
    assert run.returncode == 0 and "OK" in run.stdout, run.stdout + run.stderr[-2000:]
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_checker_walks_a_snakemake_report(tmp_path):
    browser = need_browser()
    res = check_html(_tiny_report(tmp_path / "good", PNG), browser=browser)
    assert res.snakemake_report and res.ok, res.summary()
    assert {"Figures / Other", "Tables / Generic"} <= set(res.sections)  # "Other": the default subcategory
    assert (res.images_checked, res.html_checked) == (1, 1)

    res = check_html(_tiny_report(tmp_path / "bad", b"not a png"), browser=browser)
    assert not res.ok and any("fig.png: does not load" in p for p in res.problems), res.summary()
