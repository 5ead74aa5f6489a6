"""Report stage: table builders on a synthetic metrics table with known answers, renderers, the reproduction
check, Figure 6, the CLI, and (with the reference data) the full reproduction of the published tables."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _paths import REPO
from click.testing import CliRunner

from unstereo.models.registry import DEFAULT_REGISTRY, attach, load_registry
from unstereo.render.formats import to_latex, to_markdown, write_table_files
from unstereo.tables import write_table
from unstereo.unstereoeval.report.compare import (
    compare,
    load_known,
    load_published,
    reproduction_markdown,
    stale_known,
    summarize,
    without_table,
)
from unstereo.unstereoeval.report.figures import figure_data, plot_fairness_curves
from unstereo.unstereoeval.report.table_builders import (
    SIZE_ROW,
    dedup_table,
    gap_table,
    generic_tables,
    metric_table,
    paper_tables,
)

REPO_DATA = REPO / "data"
BENCHES = ["USE-5", "USE-10", "USE-20", "Winobias", "Winogender"]
ETA_OFF = {math.inf: 0.0, 0.8: 0.25, 0.65: 0.5, 0.5: 0.75}
ETA_N = {math.inf: 0, 0.8: 10, 0.65: 20, 0.5: 30}


@pytest.fixture
def registry(tmp_path):
    path = tmp_path / "models.csv"
    path.write_text(
        "id,reference_name,display_name,family,size,params_b,deduplicated,trained_on_pile\n"
        "org/p-1b,org__p-1b,P 1B,Pythia,1B,1,false,yes\n"
        "org/p-1b-deduped,org__p-1b-deduped,P 1B (D),Pythia,1B,1,true,yes\n"
        "org/q,org__q,Q,OPT,2B,2,false,partial\n"
    )
    return load_registry(path)


@pytest.fixture
def metrics():
    """Synthetic metrics: model index i (p-1b 0, p-1b-deduped 1, q 2), benchmark index b (paper order):
    us = 10 i + b + offset(eta) with offset inf 0, 0.8 .25, 0.65 .5, 0.5 .75; us_std = 1; pd = -us;
    aufc = 5 - 0.1 i; n = 100 + b - {inf 0, 0.8 10, 0.65 20, 0.5 30}."""
    rows = []
    for i, model in enumerate(["org/p-1b", "org/p-1b-deduped", "org/q"]):
        for b, bench in enumerate(BENCHES):
            for eta, off in ETA_OFF.items():
                us = 10 * i + b + off
                rows.append(
                    {
                        "model": model,
                        "benchmark": bench,
                        "eta": eta,
                        "n": 100 + b - ETA_N[eta],
                        "us": us,
                        "us_std": 1.0,
                        "aufc": 5 - 0.1 * i,
                        "pd": -us,
                        "male_rel_ratio": 50.0,
                    }
                )
    return pd.DataFrame(rows)


def test_gap_table_known_answers(metrics, registry):
    t = gap_table(metrics, registry, ["USE-5", "Winobias", "Winogender"], "t1", "cap", deduplicated=False)
    assert t.rows == [SIZE_ROW, "P 1B", "Q"]  # deduplicated model left out, registry order
    assert t.value("P 1B", "USE-5|orig") == 0.0
    assert t.value("P 1B", "USE-5|gap@0.8") == pytest.approx(0.25)
    assert t.value("P 1B", "USE-5|gap@0.65") == pytest.approx(0.5)
    assert t.value("Q", "Winogender|orig") == 24.0  # 10 * 2 + 4
    assert t.value(SIZE_ROW, "Winogender|gap@0.65") == 84.0  # 100 + 4 - 20
    assert t.value(SIZE_ROW, "USE-5|orig") == 100.0
    dedup = gap_table(metrics, registry, ["USE-10"], "t12", "cap", deduplicated=True)
    assert dedup.rows == [SIZE_ROW, "P 1B (D)"] and dedup.value("P 1B (D)", "USE-10|orig") == 11.0


def test_dedup_table_is_deduplicated_minus_original_at_065(metrics, registry):
    t = dedup_table(metrics, registry, "t2", "cap")
    assert t.rows == ["P 1B"]
    # (10 + b + .5) - (0 + b + .5) = 10 for every benchmark
    assert [t.value("P 1B", b) for b in BENCHES] == [pytest.approx(10.0)] * 5


def test_metric_tables_with_std_size_row_and_subset(metrics, registry):
    t = metric_table(metrics, registry, "us", math.inf, "t8", "cap", with_std=True, size_row=True)
    assert t.rows == [SIZE_ROW, "P 1B", "P 1B (D)", "Q"]
    assert t.value("P 1B", "USE-10") == 1.0 and t.value("P 1B", "USE-10|std") == 1.0
    assert t.value(SIZE_ROW, "USE-10") == 101.0
    pd_t = metric_table(metrics, registry, "pd", 0.5, "t18", "cap")
    assert pd_t.value("Q", "USE-20") == pytest.approx(-22.75)  # -(20 + 2 + .75)
    au = metric_table(metrics, registry, "aufc", 0.8, "t20", "cap", model_ids=["org/q", "org/p-1b"])
    assert au.rows == ["Q", "P 1B"] and au.value("Q", "Winobias") == pytest.approx(4.8)
    with pytest.raises(KeyError):
        au.value("P 1B (D)", "USE-5")


def test_paper_tables_numbering_and_etas(metrics, registry):
    tabs = paper_tables(metrics, registry)
    assert sorted(tabs) == [1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22]
    # Table 10 = US at 0.65, Table 17 = PD at 0.65, Table 21 = AuFC at 0.65
    assert tabs[10].value("Q", "USE-5") == 20.5
    assert tabs[17].value("Q", "USE-5") == -20.5
    assert tabs[21].value("P 1B (D)", "USE-5") == pytest.approx(4.9)
    assert tabs[13].columns[:3] == ["USE-10|orig", "USE-10|gap@0.8", "USE-10|gap@0.65"]
    assert tabs[3].rows == []  # none of Table 3's models is in this synthetic registry


def test_generic_tables(metrics, registry):
    tabs = generic_tables(metrics, registry)
    assert {"us_eta-inf", "pd_eta-0.8", "aufc_eta-0.5", "gaps"} <= set(tabs)
    assert tabs["gaps"].value("Q", "USE-20|gap@0.5") == pytest.approx(0.75)


def test_unknown_models_keep_their_id_and_come_last(metrics, registry):
    extra = metrics[metrics["model"] == "org/q"].assign(model="local/new")
    m = attach(pd.concat([extra, metrics]), registry)
    order = m.drop_duplicates("model").sort_values("order")["display_name"].tolist()
    assert order == ["P 1B", "P 1B (D)", "Q", "local/new"]


def test_renderers(metrics, registry, tmp_path):
    t = metric_table(metrics, registry, "us", math.inf, "table08", "US at inf", with_std=True, size_row=True)
    md = to_markdown(t)
    assert "| Benchmark size | 100 | 101 | 102 | 103 | 104 |" in md
    assert "| P 1B | 0.00 ± 1.00 | 1.00 ± 1.00 | 2.00 ± 1.00 | 3.00 ± 1.00 | 4.00 ± 1.00 |" in md
    tex = to_latex(t)
    assert "$0.00_{\\pm 1.00}$" in tex and "\\begin{tabular}{lrrrrr}" in tex
    paths = write_table_files(t, tmp_path)
    assert sorted(p.suffix for p in paths) == [".csv", ".html", ".md", ".tex"]
    wide = pd.read_csv(tmp_path / "table08.csv")
    assert list(wide.columns[:3]) == ["row", "USE-5", "USE-5|std"]
    assert wide.set_index("row").loc["Q", "USE-20"] == 22.0


def test_compare_flags_cells_outside_rounding(metrics, registry, tmp_path):
    tabs = paper_tables(metrics, registry)
    pub = tmp_path / "published.csv"
    pub.write_text(
        "table,row,column,value,decimals\n"
        "1,P 1B,USE-5|gap@0.8,0.25,2\n"  # exact
        "1,Q,Winogender|orig,24.004,3\n"  # off by 0.004 > 0.0005
        "8,Benchmark size,USE-10,100,0\n"  # 101 reproduced: off, diagnosed below
        "19,Q,USE-5,4.80,2\n"  # exact
        "19,Nobody,USE-5,1.00,2\n"  # no such cell
    )
    known = tmp_path / "known.csv"
    known.write_text(
        "table,row,column,reproduced,diagnosis\n8,Benchmark size,USE-10,101,typo in the paper\n"
        "1,P 1B,USE-5|gap@0.8,0.30,stale: the cell is within rounding now\n"
    )
    res = compare(tabs, load_published(pub), load_known(known))
    assert res["within_rounding"].tolist() == [True, False, False, True, False]
    assert res["diagnosis"].tolist() == ["", "unexplained", "typo in the paper", "", "unexplained"]
    summ = summarize(res).set_index("table")
    assert summ.loc[1, "cells"] == 2 and summ.loc[1, "within_rounding"] == 1
    assert summ.loc[8, "off_explained"] == 1 and summ.loc[19, "off_unexplained"] == 1
    md = reproduction_markdown(res)
    assert "2 of 5 published numbers are within rounding" in md and "USE-5\\|gap@0.8" not in md
    assert stale_known(res, load_known(known))["column"].tolist() == ["USE-5|gap@0.8"]


def test_a_known_difference_explains_only_the_value_it_names(metrics, registry, tmp_path):
    tabs = paper_tables(metrics, registry)
    pub = tmp_path / "published.csv"
    pub.write_text("table,row,column,value,decimals\n8,Benchmark size,USE-10,100,0\n")  # 101 reproduced
    known = tmp_path / "known.csv"
    known.write_text("table,row,column,reproduced,diagnosis\n8,Benchmark size,USE-10,102,typo in the paper\n")
    res = compare(tabs, load_published(pub), load_known(known))
    assert res["diagnosis"].tolist() == [
        "unexplained"
    ]  # the reproduction gives 101, not the 102 the entry names
    assert len(stale_known(res, load_known(known))) == 1


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("8,Benchmark size,*,101,typo", "no patterns"),
        ("8,Benchmark size,USE-1?,101,typo", "no patterns"),
        ("8,Benchmark size,USE-10,,typo", "column 'reproduced' must be the number"),
    ],
)
def test_known_differences_name_one_cell_and_its_value(tmp_path, line, message):
    from unstereo.errors import InputError

    known = tmp_path / "known.csv"
    known.write_text("table,row,column,reproduced,diagnosis\n" + line + "\n")
    with pytest.raises(InputError, match=message) as exc:
        load_known(known)
    assert f"{known}:2" in str(exc.value)


def test_figure6_files(tmp_path, registry):
    eps = np.linspace(0, 6, 7)
    rows = []
    for model in ["org/p-1b", "org/p-1b-deduped", "org/q"]:
        for bench in ["USE-5", "Winobias"]:
            for e in eps:
                rows.append(
                    {"model": model, "benchmark": bench, "eta": math.inf, "eps": e, "us": min(1, e / 3)}
                )
    data = figure_data(pd.DataFrame(rows), registry)
    assert set(data["group"]) == {"Pythia and GPT-J", "OPT"}
    assert data.loc[data["model"] == "org/p-1b-deduped", "base_name"].iloc[0] == "P 1B"
    paths = plot_fairness_curves(data, tmp_path / "fig6")
    assert all(p.stat().st_size > 0 for p in paths)
    assert len(pd.read_csv(paths[2])) == 3 * 2 * 7


def test_shipped_registry_and_published_facts():
    reg = load_registry(DEFAULT_REGISTRY)
    assert len(reg) == 28 and reg["deduplicated"].sum() == 7
    pub = load_published(REPO_DATA / "paper" / "published.csv")
    counts = pub.groupby("table").size().to_dict()
    # 21 models x 9 + 9 sizes; 7 x 5; 8 x 5; sizes only (values lost in the text); 7 x 9 + 9; 21 x 6 + 6; 7 x 6 + 6
    assert counts[1] == 198 and counts[2] == 35 and counts[3] == 40 and counts[8] == 5
    assert counts[12] == 72 and counts[13] == 132 and counts[14] == 48
    assert all(counts[t] == 140 for t in range(15, 23))
    models = pub[pub["table"] != 7]
    assert set(models["row"]) - {SIZE_ROW} <= set(reg["display_name"])
    # Table 7 (benchmark properties): 14 rows x 5 benchmarks, every row one the properties table builds
    from unstereo.unstereoeval.benchmarks.properties import TABLE7_ROWS

    t7 = pub[pub["table"] == 7]
    assert counts[7] == 70 and set(t7["row"]) == set(TABLE7_ROWS) and t7["column"].nunique() == 5


def tiny_pairs() -> pd.DataFrame:
    """A PAIRS table of two pairs of benchmark B (MaxPMI 0.1 and 0.9)."""
    return pd.DataFrame(
        {
            "pair_id": ["B:1", "B:2"],
            "benchmark": "B",
            "template": ["{pronoun} a.", "{pronoun} b."],
            "sentence_female": ["She a.", "She b."],
            "sentence_male": ["He a.", "He b."],
            "seed_word": None,
            "max_pmi": [0.1, 0.9],
            "max_pmi_word": None,
            "source": "t",
        }
    )


def _tiny_files(tmp_path):
    pairs = tiny_pairs()
    # FM = 0.2 (neutral) and -1.0 (male)
    scores = pd.DataFrame(
        {
            "pair_id": ["B:1", "B:2"],
            "model": "local/m",
            "logp_female": [-9.8, -11.0],
            "logp_male": [-10.0, -10.0],
            "ntok_female": 3,
            "ntok_male": 3,
        }
    )
    write_table(pairs, tmp_path / "pairs.parquet", "pairs")
    write_table(scores, tmp_path / "scores.parquet", "scores")


def test_cli_metrics_tables_figures(tmp_path):
    from unstereo.cli import cli

    _tiny_files(tmp_path)
    run = CliRunner().invoke(
        cli,
        [
            "metrics",
            str(tmp_path / "scores.parquet"),
            "--pairs",
            str(tmp_path / "pairs.parquet"),
            "-o",
            str(tmp_path / "m.parquet"),
            "--etas",
            "inf",
            "--etas",
            "0.5",
            "--curves",
            str(tmp_path / "c.parquet"),
            "--registry",
            str(DEFAULT_REGISTRY),
        ],
    )
    assert run.exit_code == 0, run.output
    m = pd.read_parquet(tmp_path / "m.parquet").set_index("eta")
    assert m.loc[math.inf, "us"] == 50.0 and m.loc[math.inf, "pd"] == -50.0 and m.loc[0.5, "n"] == 1
    assert m.loc[math.inf, "display_name"] == "local/m"
    run = CliRunner().invoke(
        cli, ["report", "tables", str(tmp_path / "m.parquet"), "-o", str(tmp_path / "t")]
    )
    assert run.exit_code == 0, run.output
    assert (tmp_path / "t" / "us_eta-inf.md").is_file() and (tmp_path / "t" / "gaps.tex").is_file()
    run = CliRunner().invoke(
        cli, ["report", "figures", str(tmp_path / "c.parquet"), "-o", str(tmp_path / "f")]
    )
    assert run.exit_code == 0, run.output
    assert (tmp_path / "f.png").is_file() and (tmp_path / "f.pdf").is_file()


def test_cli_metrics_rejects_a_bad_eta(tmp_path):
    from unstereo.cli import cli

    _tiny_files(tmp_path)
    args = ["metrics", str(tmp_path / "scores.parquet"), "--pairs", str(tmp_path / "pairs.parquet")]
    run = CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "m.parquet"), "--etas", "-1"])
    # the schema's bound (common.schema.yaml: a number >= 0 or inf), the flag and the key named
    assert run.exit_code == 2 and "--etas: config key 'metrics.etas" in run.output


# --------------------------------------------------------------- the metrics and report sections (--settings)
def _tiny_args(tmp_path: Path) -> list:
    """The metrics command's inputs: one benchmark B of two pairs whose FM = ln p(F) - ln p(M) is 0.2 and -1.0."""
    _tiny_files(tmp_path)
    return [tmp_path / "scores.parquet", "--pairs", tmp_path / "pairs.parquet"]


def _invoke(*args: object, code: int = 0) -> str:
    from unstereo.cli import cli

    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == code, result.output
    return result.output


@pytest.mark.parametrize(
    ("extra", "us"),
    [
        ([], 50.0),  # the schema's eps ln 1.65 = 0.50: |0.2| within, |-1.0| not
        (["--settings", '{"eps": 0.1}'], 0.0),  # neither within 0.1
        (["--settings", '{"eps": 0.1}', "--eps", "2"], 100.0),  # both within 2
    ],
)
def test_metrics_eps_flag_over_settings_over_schema(tmp_path, extra, us):
    out = tmp_path / "m.parquet"
    _invoke("metrics", *_tiny_args(tmp_path), "-o", out, "--etas", "inf", *extra)
    assert pd.read_parquet(out)["us"].tolist() == [us]


def test_metrics_grid_keys_are_flags(tmp_path):
    # the curve's thresholds are linspace(start, stop, num): the schema's 101 points, 3 from the section
    # (0, 1, 2), the flag's stop 4 over it (0, 2, 4)
    curves = tmp_path / "c.parquet"
    args = [
        "metrics",
        *_tiny_args(tmp_path),
        "-o",
        tmp_path / "m.parquet",
        "--curves",
        curves,
        "--etas",
        "inf",
    ]
    _invoke(*args)
    assert len(pd.read_parquet(curves)) == 101
    section = '{"eps_grid": {"start": 0, "stop": 2, "num": 3}}'
    _invoke(*args, "--settings", section)
    assert pd.read_parquet(curves)["eps"].tolist() == [0.0, 1.0, 2.0]
    _invoke(*args, "--settings", section, "--eps-grid-stop", "4")
    assert pd.read_parquet(curves)["eps"].tolist() == [0.0, 2.0, 4.0]


def test_report_compare_strict_flag_over_settings_over_schema(tmp_path):
    # one published cell (table 1) that the tiny metrics cannot reproduce, no diagnosis: unexplained, so `strict`
    # fails the command; the schema's strict is false, the section's true, the flag --no-strict over it
    metrics = tmp_path / "m.parquet"
    _invoke("metrics", *_tiny_args(tmp_path), "-o", metrics)
    (tmp_path / "pub.csv").write_text("table,row,column,value,decimals\n1,x,y,1.0,1\n", encoding="utf-8")
    (tmp_path / "known.csv").write_text("table,row,column,reproduced,diagnosis\n", encoding="utf-8")
    args = ["report", "compare", metrics, "-o", tmp_path / "r.md", "--published", tmp_path / "pub.csv",
            "--known-differences", tmp_path / "known.csv"]  # fmt: skip
    _invoke(*args)
    out = _invoke(*args, "--settings", '{"strict": true}', code=1)
    assert "1 published number(s) not reproduced and unexplained" in out
    _invoke(*args, "--settings", '{"strict": true}', "--no-strict")


# ------------------------------------------------------------------------------ full reproduction (reference)


def _released_pairs(reference_dir):
    """Pair tables of the five released benchmarks, MaxPMI = the released max_gender_pmi."""
    data = reference_dir / "unstereo-eval" / "data" / "datasets"
    out = []

    def pairs(df, bench, ids):
        return pd.DataFrame(
            {
                "pair_id": ids,
                "benchmark": bench,
                "template": df["template"].to_numpy(),
                "sentence_female": "",
                "sentence_male": "",
                "seed_word": None,
                "max_pmi": df["max_gender_pmi"].to_numpy(),
                "max_pmi_word": None,
                "source": "released",
            }
        )

    for k in (5, 10, 20):
        raw = pd.read_csv(data / "raw" / f"USE-{k}.csv", index_col=0)
        pre = pd.read_csv(data / "preprocessed" / f"USE-{k}-no-maxpmi-constraint.csv.gz")
        natural = np.nonzero(raw["is_natural"].to_numpy())[0]  # orig_index counts the natural rows
        out.append(pairs(pre, f"USE-{k}", [f"USE-{k}:{natural[i]}" for i in pre["orig_index"]]))
    for split in ("dev", "test"):
        pre = pd.read_csv(data / "preprocessed" / f"Winobias-{split}-no-maxpmi-constraint.csv.gz")
        out.append(pairs(pre, "Winobias", [f"Winobias:{split}:{i}" for i in pre["orig_index"]]))
    pre = pd.read_csv(data / "preprocessed" / "Winogender-no-maxpmi-constraint.csv.gz")
    out.append(pairs(pre, "Winogender", [f"Winogender:{e}" for e in pre["example_id"]]))
    return pd.concat(out, ignore_index=True)


@pytest.mark.reference
@pytest.mark.slow
def test_full_reproduction_of_the_published_tables(reference_dir):
    from unstereo.models.registry import name_map
    from unstereo.unstereoeval.metrics import compute_metrics
    from unstereo.unstereoeval.metrics.released import ingest_released

    reg = load_registry()
    results = reference_dir / "unstereo-eval" / "results"
    scores = pd.concat([ingest_released(results, b, name_map(reg)) for b in BENCHES], ignore_index=True)
    pairs = _released_pairs(reference_dir)
    etas = ["inf", 0.8, 0.65, 0.5]
    metrics = compute_metrics(scores, pairs, etas, reference_quirks=True)
    assert set(metrics["model"]) == set(reg["id"])
    # the metric tables only: Table 7 (benchmark properties) is checked on the released benchmarks by
    # test_report_workflow.py::test_paper_reproduction_rules
    pub = load_published(REPO_DATA / "paper" / "published.csv")
    known = load_known(REPO_DATA / "paper" / "known_differences.csv")
    pub, known = without_table(pub, known, 7)
    res = compare(paper_tables(metrics, reg), pub, known)
    off = res[~res["within_rounding"]]
    # every published metric value is reproduced; the 18 off cells are size-row typos of the paper, all diagnosed
    assert (off["row"] == SIZE_ROW).all() and len(off) == 18
    assert (off["diagnosis"] != "unexplained").all()
    assert int(res["within_rounding"].sum()) == len(pub) - 18
    assert stale_known(res, known).empty and len(known) == 18  # one entry per off cell, each value checked
    # without the switch the unconstrained AuFC (Table 19) is not reproduced, everything else is
    clean = compute_metrics(scores, pairs, etas, reference_quirks=False)
    cres = compare(paper_tables(clean, reg), pub, known)
    bad_tables = set(cres.loc[~cres["within_rounding"] & (cres["row"] != SIZE_ROW), "table"])
    assert bad_tables == {19}


def test_registry_errors_name_the_line(tmp_path):
    from unstereo.errors import InputError

    path = tmp_path / "models.csv"
    path.write_text(
        "id,reference_name,display_name,family,size,params_b,deduplicated,trained_on_pile\n"
        "a,a,A,F,1B,1,false,no\n"
        "a,b,B,F,1B,1,false,no\n"
    )
    with pytest.raises(InputError, match=r"models.csv:3: duplicated id 'a'"):
        load_registry(path)
    path.write_text("id,display_name\na,A\n")
    with pytest.raises(InputError, match="lacks column"):
        load_registry(path)


def test_a_table_left_out_takes_its_known_differences_along():
    """`report compare` without --properties leaves Table 7 out: its known differences must not count as stale
    (with --strict they failed the comparison before)."""
    pub = pd.DataFrame(
        {"table": [1, 7], "row": ["r", "s"], "column": ["c", "d"], "value": [1.0, 2.0], "decimals": 0}
    )
    known = pd.DataFrame(
        {"table": ["7"], "row": ["s"], "column": ["d"], "reproduced": ["3"], "diagnosis": ["why"]}
    )
    result = pd.DataFrame({"table": [1], "row": ["r"], "column": ["c"], "within_rounding": [True],
                           "diagnosis": [""]})  # fmt: skip
    assert len(stale_known(result, known)) == 1  # kept, Table 7's entry explains nothing here
    pub7, known7 = without_table(pub, known, 7)
    assert pub7["table"].tolist() == [1] and known7.empty
    assert stale_known(result, known7).empty
