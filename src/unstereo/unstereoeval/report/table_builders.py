"""Table builders: the paper's tables (and generic per-eta tables) from a metrics table, in long form.

Each builder returns a :class:`~unstereo.render.table.Table`: cells as rows ``(row, column, value, decimals)``;
``row`` is a model's display name or ``"Benchmark size"``, ``column`` a key such as ``USE-5`` (one value per
benchmark), ``USE-5|std`` (the standard error shown as a subscript), or ``USE-5|orig`` / ``USE-5|gap@0.8`` (US at
eta = inf and the fairness gap US(eta) - US(inf)). The same keys name the published numbers in
``data/paper/published.csv``, so rendering and the reproduction check share one representation.
"""

from __future__ import annotations

import math

import pandas as pd

from unstereo.defaults import PAPER_BENCHMARKS
from unstereo.errors import InputError
from unstereo.models.registry import attach
from unstereo.render.table import Table
from unstereo.tables import METRIC_KEY_COLUMNS
from unstereo.unstereoeval.eta import eta_label, eta_stem, sort_etas
from unstereo.unstereoeval.metrics import registry as metric_registry
from unstereo.unstereoeval.metrics.compute import fairness_gap

BENCHMARKS = list(PAPER_BENCHMARKS)
SHORT = {"Winobias": "WB", "Winogender": "WG"}
SIZE_ROW = "Benchmark size"
INF = math.inf

# The published tables: eta per table (Tables 8-11 US, 15-18 PD, 19-22 AuFC) and the model subset of Table 3.
US_TABLES = {8: INF, 9: 0.8, 10: 0.65, 11: 0.5}
PD_TABLES = {15: INF, 16: 0.8, 17: 0.65, 18: 0.5}
AUFC_TABLES = {19: INF, 20: 0.8, 21: 0.65, 22: 0.5}
# The per-eta tables of each registered metric the paper publishes (with the metric's std and size row, if any).
PAPER_METRIC_TABLES = {
    "us": (US_TABLES, "Table {num}: US (%) with its Bernoulli standard error at eta = {eta}."),
    "pd": (PD_TABLES, "Table {num}: preference disparity PD at eta = {eta}."),
    "aufc": (AUFC_TABLES, "Table {num}: area under the fairness curve (AuFC) at eta = {eta}."),
}
TABLE3_MODELS = [
    "EleutherAI/pythia-12b",
    "EleutherAI/pythia-12b-deduped",
    "EleutherAI/gpt-j-6b",
    "facebook/opt-6.7b",
    "meta-llama/Llama-2-70b-hf",
    "mosaicml/mpt-30b",
    "allenai/OLMo-7B",
    "mistralai/Mixtral-8x7B-v0.1",
]
GAP_ETAS = (0.8, 0.65)
DEDUP_ETA = 0.65  # Table 2: deduplicated minus original Pythia at eta = 0.65


def _ordered_benchmarks(names: set[str]) -> list[str]:
    """The paper's benchmarks in its order, then any other benchmark alphabetically."""
    return [b for b in BENCHMARKS if b in names] + sorted(names - set(BENCHMARKS))


def _cells(records: list[tuple[str, str, float, int]]) -> pd.DataFrame:
    return pd.DataFrame(records, columns=["row", "column", "value", "decimals"])


def _prepare(metrics: pd.DataFrame, registry: pd.DataFrame) -> pd.DataFrame:
    need = {c.name for c in METRIC_KEY_COLUMNS} | {"us"}  # us: the gap tables
    for m in metric_registry.report_metrics():
        need |= {m.value_column} | ({m.std} if m.std else set())
    missing = need - set(metrics.columns)
    if missing:
        raise InputError(f"metrics table lacks column(s) {sorted(missing)}", path="metrics")
    m = attach(metrics.drop(columns=[c for c in ("display_name",) if c in metrics.columns]), registry)
    return m.sort_values("order", kind="stable")


def _models(m: pd.DataFrame, deduplicated: bool | None = None, ids: list[str] | None = None) -> pd.DataFrame:
    sel = m[["model", "display_name", "deduplicated", "order"]].drop_duplicates("model")
    if deduplicated is not None:
        sel = sel[sel["deduplicated"] == deduplicated]
    if ids is not None:
        sel = sel.set_index("model").reindex([i for i in ids if i in set(sel["model"])]).reset_index()
    return sel


def _lookup(m: pd.DataFrame) -> dict[tuple[str, str, float], pd.Series]:
    return {(r.model, r.benchmark, float(r.eta)): r for r in m.itertuples(index=False)}


def _sizes(m: pd.DataFrame, bench: str, eta: float) -> int | None:
    n = m.loc[(m["benchmark"] == bench) & (m["eta"] == eta), "n"]
    return None if n.empty else int(n.iloc[0])


def _shown_columns(metric: str) -> tuple[str, str | None]:
    """(value column, std column) of a registered metric, or (metric, None) for a plain column name."""
    try:
        m = metric_registry.get(metric)
    except KeyError:
        return metric, None
    return m.value_column, m.std


def metric_table(
    metrics: pd.DataFrame,
    registry: pd.DataFrame,
    metric: str,
    eta: float,
    key: str,
    caption: str,
    benchmarks: list[str] | None = None,
    model_ids: list[str] | None = None,
    with_std: bool = False,
    size_row: bool = False,
) -> Table:
    """One value of ``metric`` per model and benchmark at ``eta``; optional std and size row.

    ``metric`` names a registered metric (us, pd, aufc, ...: its value column, and its std column for
    ``with_std``) or any other numeric column of the metrics table.
    """
    value_col, std_col = _shown_columns(metric)
    if with_std and std_col is None:
        raise ValueError(f"metric {metric!r} has no standard error column")
    m = _prepare(metrics, registry)
    present = set(m["benchmark"])
    benches = [b for b in (benchmarks or _ordered_benchmarks(present)) if b in present]
    look = _lookup(m)
    recs: list[tuple[str, str, float, int]] = []
    columns: list[str] = []
    headers: dict[str, str] = {}
    for b in benches:
        columns.append(b)
        headers[b] = b
        if with_std:
            columns.append(f"{b}|std")
            headers[f"{b}|std"] = f"{b} std"
    rows: list[str] = []
    if size_row:
        rows.append(SIZE_ROW)
        for b in benches:
            n = _sizes(m, b, eta)
            if n is not None:
                recs.append((SIZE_ROW, b, float(n), 0))
    for mod in _models(m, ids=model_ids).itertuples(index=False):
        rows.append(mod.display_name)
        for b in benches:
            r = look.get((mod.model, b, float(eta)))
            if r is None:
                continue
            recs.append((mod.display_name, b, float(getattr(r, value_col)), 2))
            if with_std:
                recs.append((mod.display_name, f"{b}|std", float(getattr(r, std_col)), 2))
    return Table(key, caption, _cells(recs), rows, columns, headers)


def gap_table(
    metrics: pd.DataFrame,
    registry: pd.DataFrame,
    benchmarks: list[str],
    key: str,
    caption: str,
    deduplicated: bool | None = None,
    etas: tuple[float, ...] = GAP_ETAS,
    short_names: bool = False,
) -> Table:
    """US at eta = inf and the fairness gaps US(eta) - US(inf) per benchmark, with a size row (Tables 1, 12-14)."""
    m = _prepare(metrics, registry)
    look = _lookup(m)
    gaps = {eta: fairness_gap(metrics, eta) for eta in etas}
    gap_look = {
        eta: {(r.model, r.benchmark): r.gap for r in g.itertuples(index=False)} for eta, g in gaps.items()
    }
    recs: list[tuple[str, str, float, int]] = []
    columns: list[str] = []
    headers: dict[str, str] = {}
    for b in benchmarks:
        name = SHORT.get(b, b) if short_names else b
        columns.append(f"{b}|orig")
        headers[f"{b}|orig"] = f"{name} Orig."
        n = _sizes(m, b, INF)
        if n is not None:
            recs.append((SIZE_ROW, f"{b}|orig", float(n), 0))
        for eta in etas:
            col = f"{b}|gap@{eta_label(eta)}"
            columns.append(col)
            headers[col] = f"{name} Δ η={eta_label(eta)}"
            n = _sizes(m, b, eta)
            if n is not None:
                recs.append((SIZE_ROW, col, float(n), 0))
    rows = [SIZE_ROW]
    for mod in _models(m, deduplicated=deduplicated).itertuples(index=False):
        rows.append(mod.display_name)
        for b in benchmarks:
            r = look.get((mod.model, b, INF))
            if r is not None:
                recs.append((mod.display_name, f"{b}|orig", float(r.us), 2))
            for eta in etas:
                g = gap_look[eta].get((mod.model, b))
                if g is not None and not pd.isna(g):
                    recs.append((mod.display_name, f"{b}|gap@{eta_label(eta)}", float(g), 2))
    return Table(key, caption, _cells(recs), rows, columns, headers)


def dedup_table(
    metrics: pd.DataFrame, registry: pd.DataFrame, key: str, caption: str, eta: float = DEDUP_ETA
) -> Table:
    """US of each deduplicated Pythia minus US of its original at ``eta`` (Table 2), rows named by the original."""
    m = _prepare(metrics, registry)
    look = _lookup(m)
    benches = _ordered_benchmarks(set(m["benchmark"]))
    recs: list[tuple[str, str, float, int]] = []
    rows: list[str] = []
    for mod in _models(m, deduplicated=False).itertuples(index=False):
        dedup_id = f"{mod.model}-deduped"
        if dedup_id not in set(m["model"]):
            continue
        rows.append(mod.display_name)
        for b in benches:
            a, d = look.get((mod.model, b, float(eta))), look.get((dedup_id, b, float(eta)))
            if a is not None and d is not None:
                recs.append((mod.display_name, b, float(d.us) - float(a.us), 2))
    headers = {b: SHORT.get(b, b) for b in benches}
    return Table(key, caption, _cells(recs), rows, benches, headers)


def paper_tables(metrics: pd.DataFrame, registry: pd.DataFrame) -> dict[int, Table]:
    """Every table of the paper that this workflow reproduces, keyed by the paper's table number."""
    t: dict[int, Table] = {}
    original, larger = ["USE-5", "Winobias", "Winogender"], ["USE-10", "USE-20"]
    # number: (benchmarks, deduplicated models, caption); the original benchmarks' columns carry short names
    gap_tables = {
        1: (
            original,
            False,
            "Table 1: US (%) on the original benchmarks and fairness gaps at eta = 0.8 and 0.65 "
            "(non-deduplicated models).",
        ),
        12: (
            original,
            True,
            "Table 12: US and fairness gaps of the deduplicated Pythia models on USE-5, WB and WG.",
        ),
        13: (larger, False, "Table 13: US and fairness gaps on USE-10 and USE-20 (non-deduplicated models)."),
        14: (
            larger,
            True,
            "Table 14: US and fairness gaps of the deduplicated Pythia models on USE-10 and USE-20.",
        ),
    }
    for num, (benches, dedup, caption) in gap_tables.items():
        t[num] = gap_table(
            metrics,
            registry,
            benches,
            f"table{num:02d}",
            caption,
            deduplicated=dedup,
            short_names=benches == original,
        )
    t[2] = dedup_table(
        metrics,
        registry,
        "table02",
        "Table 2: US of deduplicated minus original Pythia models at eta = 0.65.",
    )
    t[3] = metric_table(
        metrics,
        registry,
        "pd",
        0.5,
        "table03",
        "Table 3: preference disparity PD (%female-skewed - %male-skewed) of the larger models at eta = 0.5.",
        model_ids=TABLE3_MODELS,
    )
    for name, (numbers, caption) in PAPER_METRIC_TABLES.items():
        metric = metric_registry.get(name)
        for num, eta in numbers.items():
            t[num] = metric_table(
                metrics,
                registry,
                name,
                eta,
                f"table{num:02d}",
                caption.format(num=num, eta=eta_label(eta)),
                with_std=metric.std is not None,
                size_row=metric.size_row,
            )
    return dict(sorted(t.items()))


def generic_tables(metrics: pd.DataFrame, registry: pd.DataFrame) -> dict[str, Table]:
    """One table per registered metric and eta (``us_eta-inf``, ``pd_eta-0.8``, ... with the metric's caption,
    std and size row), and a gap table, for whatever models were scored."""
    out: dict[str, Table] = {}
    etas = sort_etas(metrics["eta"])
    for eta in etas:
        for metric in metric_registry.report_metrics():
            key = f"{metric.name}_{eta_stem(eta)}"
            out[key] = metric_table(
                metrics,
                registry,
                metric.name,
                eta,
                key,
                metric.caption.format(eta=eta_label(eta)),
                with_std=metric.std is not None,
                size_row=metric.size_row,
            )
    finite = tuple(e for e in etas if not math.isinf(e))
    if finite and any(math.isinf(e) for e in etas):
        benches = _ordered_benchmarks(set(metrics["benchmark"]))
        out["gaps"] = gap_table(
            metrics, registry, benches, "gaps", "US and fairness gaps per eta", etas=finite
        )
    return out
