"""The reproduction check: every published number of the paper against the reproduced cell with the same key.

``data/paper/published.csv`` holds the paper's numbers as a fact table (``table, row, column, value, decimals``;
``decimals`` = the paper's rounding). A reproduced cell is *within rounding* when
``|reproduced - published| <= 0.5 * 10**-decimals`` (plus 1e-9 for float noise). Cells off by more are listed with a
diagnosis from ``data/paper/known_differences.csv`` (``table, row, column, diagnosis``; ``row`` and ``column`` are
shell-style patterns) or flagged as unexplained.
"""

from __future__ import annotations

import fnmatch
import math
from pathlib import Path

import pandas as pd

from ..errors import InputError
from .tables import SIZE_ROW, Table

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


def load_known(path: str | Path | None) -> pd.DataFrame:
    cols = ["table", "row", "column", "diagnosis"]
    if path is None:
        return pd.DataFrame(columns=cols)
    known = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in cols if c not in known.columns]
    if missing:
        raise InputError(f"known differences table lacks column(s) {missing}", path=path)
    return known


def _diagnose(known: pd.DataFrame, table: int, row: str, column: str) -> str:
    for k in known.itertuples(index=False):
        if (
            str(k.table) == str(table)
            and fnmatch.fnmatchcase(row, k.row)
            and fnmatch.fnmatchcase(column, k.column)
        ):
            return k.diagnosis
    return ""


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
                else (_diagnose(known, int(r.table), r.row, r.column) or "unexplained"),
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
    headline: dict[str, float] | None = None,
) -> str:
    """The text of ``reproduction.md``."""
    summ = summarize(result)
    total, within = len(result), int(result["within_rounding"].sum())
    unexplained = int((result["diagnosis"] == "unexplained").sum())
    lines = [
        "# Reproduction of the published tables",
        "",
        "Reproduced from the released per-model scores of the 28 models with the reference switches on "
        "(SPEC 1.4 quirk 2: the unconstrained AuFC integrates |FM| in log10); Table 7 (benchmark properties) from "
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
