"""biastest inspection page in headless Chromium (no console errors, the expected rows, filters), the report
figure, and the CLI from pairs to page on a tiny random GPT-2."""

from __future__ import annotations

import json

import pandas as pd
from click.testing import CliRunner
from test_report_browser import need_browser

from tools.browser_check import check_html
from unstereo.biastest.figure import plot_scores
from unstereo.biastest.page import write_page
from unstereo.biastest.stats import stereotyped, summarize
from unstereo.cli import cli


def judged_table(n_models=2):
    rows = []
    for m in range(n_models):
        for i in range(7):
            attr = ["nurse", "engineer", "poet </script> & co"][i % 3]
            rows.append({"pair_id": f"s:released:{i}", "spec": "s", "attribute": attr, "group_term_a": "she",
                         "group_term_b": "he", "sentence_a": f"She, the {attr}, left {i}.",
                         "sentence_b": f"He, the {attr}, left {i}.", "stereotype": "a" if i % 2 else "b",
                         "source": "released" if i < 5 else "template", "model": f"m{m}",
                         "score_a": -1.0 - 0.1 * i * (m + 1), "score_b": -1.5, "logp_a": -10.0, "logp_b": -12.0})  # fmt: skip
    df = pd.DataFrame(rows)
    pairs = df.drop(columns=["model", "score_a", "score_b", "logp_a", "logp_b"])
    return pd.concat([stereotyped(pairs[df.model == m], df[df.model == m]).assign(
        model=m, logp_a=-10.0, logp_b=-12.0) for m in df.model.unique()], ignore_index=True)  # fmt: skip


PROBE = """(() => {
  const rows = () => document.querySelectorAll('#sentences tbody tr').length;
  const out = {all: document.body.dataset.rows, shown: rows(), bars: document.querySelectorAll('#bars .track').length,
               summary: document.querySelectorAll('#summary tbody tr').length};
  const sel = document.getElementById('f-model'); sel.value = 'm1'; sel.onchange(); out.m1 = document.body.dataset.rows;
  const q = document.getElementById('f-text'); q.value = '</script>'; q.oninput(); out.text = document.body.dataset.rows;
  q.value = ''; q.oninput(); sel.value = ''; sel.onchange();
  const pref = document.getElementById('f-pref'); pref.value = '1'; pref.onchange(); out.stereo = document.body.dataset.rows;
  document.querySelector('#sentences thead th[data-k="score_a"]').click();
  out.sorted = [...document.querySelectorAll('#sentences tbody tr')].map((tr) => Number(tr.cells[8].textContent));
  out.csv = csvText(filtered);
  return out;
})()"""


def test_page_in_headless_chromium(tmp_path):
    browser = need_browser()
    judged = judged_table()
    summary, boot = summarize(judged, rounds=30, per_attribute=2, seed=0)
    from unstereo.biastest.stats import compare

    page = write_page(tmp_path / "page.html", summary, judged, compare(boot), meta={"models": ["m0", "m1"]})
    assert (
        "</script> & co" not in page.read_text().split('id="data">')[1].split("</script>")[0]
    )  # escaped in JSON
    res = check_html(page, browser=browser, screenshot=tmp_path / "page.png", evaluate=PROBE)
    assert res.ok, res.summary()
    v = res.value
    assert v["all"] == str(len(judged)) == "14" and v["shown"] == 14
    assert v["summary"] == 2  # one row per (model, specification), a column group per source
    assert v["bars"] == 4  # m0 / s / first source: 3 attribute terms + the whole specification
    assert v["m1"] == "7" and v["text"] == "2"  # model m1 and the attribute with "</script>": i = 2, 5
    assert v["stereo"] == str(int((judged.stereotyped == 1).sum()))
    assert v["sorted"] == sorted(v["sorted"])
    import csv
    import io

    exported = list(csv.DictReader(io.StringIO(v["csv"])))  # the filtered rows (stereotype preferred), sorted
    assert len(exported) == int(v["stereo"]) and {r["stereotyped"] for r in exported} == {"1"}
    assert all(r["sentence_a"].startswith("She, the ") for r in exported)  # commas quoted
    assert (tmp_path / "page.png").read_bytes()[:4] == b"\x89PNG"


def test_report_figure(tmp_path):
    summary, _ = summarize(judged_table(), rounds=5, per_attribute=2, seed=0)
    out = plot_scores(summary, tmp_path / "f.png")
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_cli_pairs_score_summary(tmp_path):
    """From a user specification to the page through the CLI, on a tiny random GPT-2 saved to a folder."""
    from _scoring_models import tiny_gpt2, word_tokenizer

    tok = word_tokenizer()
    model_dir = tmp_path / "tiny"
    tiny_gpt2(len(tok)).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    spec = {"name": "toy", "social_groups": {"F": ["she", "mary"], "M": ["he", "i"]},
            "attributes": {"X": ["book", "dog"], "Y": ["race", "city"]}, "templates": ["[T] gave a [A] ."]}  # fmt: skip
    (tmp_path / "toy.json").write_text(json.dumps(spec))
    r = CliRunner()
    res = r.invoke(cli, ["biastest", "pairs", str(tmp_path / "toy.json"), "-o", str(tmp_path / "p.parquet"),
                         "--sources", "template", "--sources", "released"])  # fmt: skip
    assert res.exit_code == 0, res.output
    pairs = pd.read_parquet(tmp_path / "p.parquet")
    assert len(pairs) == 8 and set(pairs.source) == {"template"}  # a user spec has no released pairs
    res = r.invoke(cli, ["biastest", "score", str(model_dir), str(tmp_path / "p.parquet"), "-o",
                         str(tmp_path / "s.parquet"), "--name", "tiny", "--device", "cpu"])  # fmt: skip
    assert res.exit_code == 0, res.output
    scores = pd.read_parquet(tmp_path / "s.parquet")
    assert list(scores.columns[:3]) == ["pair_id", "score_a", "score_b"] and (scores.model == "tiny").all()
    assert (scores.score_a == scores.logp_a / scores.ntok_a).all()
    res = r.invoke(cli, ["biastest", "summary", "--pairs", str(tmp_path / "p.parquet"), "--scores",
                         str(tmp_path / "s.parquet"), "-o", str(tmp_path / "out"), "--bootstrap-rounds", "5"])  # fmt: skip
    assert res.exit_code == 0, res.output
    summary = pd.read_parquet(tmp_path / "out" / "summary.parquet")
    assert len(summary) == 1 + 4 and set(summary.attribute) == {"*", "book", "dog", "race", "city"}
    for name in (
        "page.html",
        "summary.html",
        "stereotype_score.png",
        "comparison.parquet",
        "sentences.parquet",
    ):
        assert (tmp_path / "out" / name).stat().st_size > 0
    bad = r.invoke(cli, ["biastest", "score", str(model_dir), str(tmp_path / "p.parquet")])
    assert bad.exit_code != 0 and "-o" in bad.output


def test_cli_pairs_bad_spec_names_key(tmp_path):
    (tmp_path / "bad.yaml").write_text("name: x\nsocial_groups: {F: [she]}\nattributes: {A: [a], B: [b]}\n")
    res = CliRunner().invoke(
        cli, ["biastest", "pairs", str(tmp_path / "bad.yaml"), "-o", str(tmp_path / "p.parquet")]
    )
    assert res.exit_code != 0 and "social_groups" in str(res.exception or res.output)
