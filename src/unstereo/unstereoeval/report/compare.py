"""The reproduction check: every published number of the paper against the reproduced cell with the same key.

``data/paper/published.csv`` holds the paper's numbers as a fact table (``table, row, column, value, decimals``;
``decimals`` = the paper's rounding). A reproduced cell is *within rounding* when
``|reproduced - published| <= 0.5 * 10**-decimals`` (plus 1e-9 for float noise). Cells off by more are listed with a
diagnosis from ``data/paper/known_differences.csv`` (``table, row, column, reproduced, diagnosis``: one row per cell,
no patterns) or flagged as unexplained. A known difference explains a cell only when the reproduction gives the value
the entry names (within the paper's rounding): a diagnosis says what the right number is, and the check holds the
reproduction to it.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from unstereo.errors import InputError
from unstereo.render.table import Table
from unstereo.unstereoeval.report.table_builders import SIZE_ROW

TOL = 1e-9


def load_published(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    try:
        pub = pd.read_csv(path, dtype={"row": str, "column": str})
    except Exception as exc:
        raise InputError(f"cannot read published numbers: {exc}", path=path) from exc
    need = ["table", "row", "column", "value", "decimals"]
    missing = [c for c in need if c not in pub.columns]
    if missing:
        raise InputError(f"published table lacks column(s) {missing}", path=path)
    dup = pub.duplicated(["table", "row", "column"])
    if dup.any():
        raise InputError("duplicated (table, row, column)", path=path, line=int(dup.idxmax()) + 2)
    return pub


KNOWN_COLUMNS = ["table", "row", "column", "reproduced", "diagnosis"]


def load_known(path: str | Path | None) -> pd.DataFrame:
    """The known differences: one row per published cell, naming the value the reproduction must give."""
    if path is None:
        return pd.DataFrame(columns=KNOWN_COLUMNS)
    known = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in KNOWN_COLUMNS if c not in known.columns]
    if missing:
        raise InputError(f"known differences table lacks column(s) {missing}", path=path)
    for i, k in enumerate(known.itertuples(index=False), start=2):
        if any(ch in f"{k.row}{k.column}" for ch in "*?["):
            raise InputError(
                "a known difference names one cell: no patterns in row or column", path=path, line=i
            )
        try:
            float(k.reproduced)
        except ValueError:
            raise InputError(
                f"column 'reproduced' must be the number the reproduction gives, got {k.reproduced!r}",
                path=path,
                line=i,
            ) from None
    dup = known.duplicated(["table", "row", "column"])
    if dup.any():
        raise InputError("duplicated (table, row, column)", path=path, line=int(dup.idxmax()) + 2)
    return known


def _known_entry(known: pd.DataFrame, table: int, row: str, column: str):
    for k in known.itertuples(index=False):
        if str(k.table) == str(table) and k.row == row and k.column == column:
            return k
    return None


def _diagnose(known: pd.DataFrame, table: int, row: str, column: str, ours: float, decimals: int) -> str:
    """The entry's diagnosis when it names this cell and the reproduction gives its value; else 'unexplained'."""
    k = _known_entry(known, table, row, column)
    if k is None or math.isnan(ours) or abs(ours - float(k.reproduced)) > 0.5 * 10.0**-decimals + TOL:
        return "unexplained"
    return k.diagnosis


def without_table(
    published: pd.DataFrame, known: pd.DataFrame, table: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The published cells and known differences of every table but ``table`` (one left out of a comparison: its
    known differences must not count as stale). ``known`` holds its table numbers as text (read with dtype=str)."""
    return published[published["table"] != table], known[known["table"].astype(str) != str(table)]


def stale_known(result: pd.DataFrame, known: pd.DataFrame) -> pd.DataFrame:
    """Known differences that explain no cell (the cell is now within rounding, gone, or gives another value)."""
    used = {
        (str(r.table), r.row, r.column)
        for r in result.itertuples(index=False)
        if not r.within_rounding and r.diagnosis != "unexplained"
    }
    keep = [(str(k.table), k.row, k.column) not in used for k in known.itertuples(index=False)]
    return known[keep]


def compare(
    tables: dict[int, Table], published: pd.DataFrame, known: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per published number: reproduced value, difference, within_rounding, diagnosis."""
    known = load_known(None) if known is None else known
    out = []
    for r in published.itertuples(index=False):
        table = tables.get(int(r.table))
        try:
            ours = math.nan if table is None else table.value(r.row, r.column)
        except KeyError:
            ours = math.nan
        diff = ours - float(r.value)
        within = not math.isnan(diff) and abs(diff) <= 0.5 * 10.0 ** -int(r.decimals) + TOL
        out.append(
            {
                "table": int(r.table),
                "row": r.row,
                "column": r.column,
                "published": float(r.value),
                "decimals": int(r.decimals),
                "reproduced": ours,
                "diff": diff,
                "within_rounding": within,
                "diagnosis": ""
                if within
                else _diagnose(known, int(r.table), r.row, r.column, ours, int(r.decimals)),
            }
        )
    return pd.DataFrame(out)


def summarize(result: pd.DataFrame) -> pd.DataFrame:
    """Per table: cells compared, within rounding, off (explained / unexplained), max |diff| of values and sizes."""
    rows = []
    for table, grp in result.groupby("table", sort=True):
        values, sizes = grp[grp["row"] != SIZE_ROW], grp[grp["row"] == SIZE_ROW]
        off = grp[~grp["within_rounding"]]
        rows.append(
            {
                "table": table,
                "cells": len(grp),
                "within_rounding": int(grp["within_rounding"].sum()),
                "off_explained": int((off["diagnosis"] != "unexplained").sum()),
                "off_unexplained": int((off["diagnosis"] == "unexplained").sum()),
                "max_abs_diff_values": values["diff"].abs().max() if len(values) else math.nan,
                "max_abs_diff_sizes": sizes["diff"].abs().max() if len(sizes) else math.nan,
            }
        )
    return pd.DataFrame(rows)


def summary_rst(result: pd.DataFrame) -> str:
    """The reproduction's summary as reStructuredText (the opening page of the workflow's HTML report)."""
    total, within = len(result), int(result["within_rounding"].sum())
    unexplained = int((result["diagnosis"] == "unexplained").sum())
    explained = total - within - unexplained
    rows = [("cells compared", total), ("within rounding", within), ("off, explained", explained)]
    rows.append(("off, unexplained", unexplained))
    width = max(len(name) for name, _ in rows)
    rule = "=" * width + " " + "=" * 8
    lines = [
        "Paper reproduction",
        "==================",
        "",
        "Every number the paper publishes in Tables 1-3 and 8-22, recomputed from the released scores of its 28 "
        "models, and the properties of its benchmarks in Table 7, computed from the released benchmarks (category *Paper reproduction*: the tables, Figures 2 and 6, and reproduction.md with every cell "
        "that is off and its diagnosis).",
        "",
        rule,
        f"{'':{width}} {'cells':>8}",
        rule,
        *(f"{name:{width}} {n:>8d}" for name, n in rows),
        rule,
        "",
    ]
    summ = summarize(result)
    cols = ["table", "cells", "within_rounding", "off_explained", "off_unexplained"]
    widths = [max(len(c), 5) for c in cols]
    trule = " ".join("=" * w for w in widths)
    lines += [
        "Per table:",
        "",
        trule,
        " ".join(f"{c:>{w}}" for c, w in zip(cols, widths, strict=True)),
        trule,
    ]
    for r in summ[cols].itertuples(index=False):
        lines.append(" ".join(f"{v:>{w}}" for v, w in zip(r, widths, strict=True)))
    lines += [trule, ""]
    return "\n".join(lines)


def _md_table(df: pd.DataFrame) -> list[str]:
    def cell(v):
        if isinstance(v, float):
            return "" if math.isnan(v) else f"{v:.4g}" if abs(v) < 1e4 else f"{v:.0f}"
        return str(v).replace("|", "\\|")

    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in df.itertuples(index=False)]
    return lines


def reproduction_markdown(
    result: pd.DataFrame,
    clean_result: pd.DataFrame | None = None,
    headline: dict[str, str] | None = None,
) -> str:
    """The text of ``reproduction.md``."""
    summ = summarize(result)
    total, within = len(result), int(result["within_rounding"].sum())
    unexplained = int((result["diagnosis"] == "unexplained").sum())
    lines = [
        "# Reproduction of the published tables",
        "",
        "Reproduced from the released per-model scores of the 28 models with the reference switches on "
        "(docs/methods.md#quirk-2-log10-aufc: the unconstrained AuFC integrates |FM| in log10); Table 7 "
        "(benchmark properties) from "
        "the benchmarks stage's pair tables. A cell is within rounding when "
        "|reproduced - published| <= half a unit of the paper's last printed digit.",
        "",
        f"**{within} of {total} published numbers are within rounding; {total - within} differ, "
        f"{total - within - unexplained} of them explained below, {unexplained} unexplained.**",
        "",
    ]
    if headline:
        lines += [
            "Reference values (GPT-J-6B, USE-5, unconstrained): "
            + ", ".join(f"{k} {v}" for k, v in headline.items()),
            "",
        ]
    lines += ["## Per table", ""] + _md_table(summ) + [""]
    off = result[~result["within_rounding"]]
    lines += ["## Cells off by more than the paper's rounding", ""]
    if off.empty:
        lines.append("None.")
    else:
        show = off[["table", "row", "column", "published", "reproduced", "diff", "diagnosis"]]
        lines += _md_table(show)
    lines.append("")
    if clean_result is not None:
        cs = summarize(clean_result)[["table", "cells", "within_rounding", "max_abs_diff_values"]]
        lines += (
            [
                "## With the reference switches off (natural log everywhere)",
                "",
                "The same comparison for `metrics_clean.parquet`: the tables that change are the ones the quirk affects.",
                "",
            ]
            + _md_table(cs)
            + [""]
        )
    return "\n".join(lines)
