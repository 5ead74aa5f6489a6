"""``unstereo metrics SCORES... --pairs PAIRS... -o FILE``: US, std, AuFC, PD, male_rel_ratio per (model, benchmark, eta)."""

from __future__ import annotations

import math
from pathlib import Path

import click
import numpy as np
import pandas as pd

from ..errors import InputError
from ..log import get_logger
from ..tables import METRICS, read_table, write_table
from .compute import curves_from_joined, join_scores, metrics_from_joined, parse_eta
from .core import DEFAULT_EPS

log = get_logger("metrics.cli")

DEFAULT_ETAS = ("inf", "1.0", "0.8", "0.65", "0.5", "0.3")


def parse_grid(text: str) -> np.ndarray:
    """``START:STOP:NUM`` -> numpy.linspace(START, STOP, NUM)."""
    try:
        start, stop, num = text.split(":")
        return np.linspace(float(start), float(stop), int(num))
    except ValueError as exc:
        raise click.BadParameter(f"expected START:STOP:NUM, got {text!r}") from exc


@click.command("metrics")
@click.argument(
    "scores", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option(
    "--pairs",
    "pairs_files",
    multiple=True,
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="pair table(s) (PAIRS) with benchmark and max_pmi; repeat the option for several benchmarks",
)
@click.option(
    "-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path), help="METRICS parquet"
)
@click.option(
    "--eta",
    "etas",
    multiple=True,
    default=DEFAULT_ETAS,
    show_default=True,
    help="MaxPMI bound(s); 'inf' = unconstrained; repeat the option",
)
@click.option(
    "--eps", type=float, default=DEFAULT_EPS, show_default=True, help="fairness threshold on |FM| (nats)"
)
@click.option("--eps-grid", default="0:6:101", show_default=True, help="AuFC grid START:STOP:NUM (linspace)")
@click.option(
    "--reference-quirks/--no-reference-quirks",
    default=False,
    show_default=True,
    help="reproduce the published numbers: unconstrained AuFC over |FM| in log10 (SPEC 1.4 quirk 2)",
)
@click.option(
    "--registry",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="model registry CSV: adds each model's display_name (as printed in the paper)",
)
@click.option(
    "--curves",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="also write the fairness curves (model, benchmark, eta, eps, us) to this parquet",
)
def metrics(scores, pairs_files, output, etas, eps, eps_grid, reference_quirks, registry, curves) -> None:
    """Compute the UnStereoEval metrics of every model and benchmark in SCORES (SCORES parquet files).

    Each score row is joined with its pair (by pair_id) to get the benchmark and MaxPMI; for every eta the pairs
    with -eta <= MaxPMI <= eta are kept. Writes one METRICS row per (model, benchmark, eta).
    """
    try:
        eta_values = [parse_eta(e) for e in etas]
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--eta") from exc
    grid = parse_grid(eps_grid)
    score_df = pd.concat([read_table(p, "scores") for p in scores], ignore_index=True)
    pair_df = pd.concat([read_table(p, "pairs") for p in pairs_files], ignore_index=True)
    if pair_df["pair_id"].duplicated().any():
        dup = pair_df.loc[pair_df["pair_id"].duplicated(), "pair_id"].iloc[0]
        raise InputError(f"pair id {dup!r} appears in more than one pair table", path=pairs_files[0])
    joined = join_scores(score_df, pair_df)
    result = metrics_from_joined(
        joined, eta_values, eps=eps, eps_grid=grid, reference_quirks=reference_quirks
    )
    if registry is not None:
        from ..model_registry import attach, load_registry

        result = attach(result, load_registry(registry)).drop(columns=["order", "deduplicated"])
        front = ["model", "display_name"]
        result = result[front + [c for c in result.columns if c not in front]]
    write_table(result, output, METRICS)
    log.info(
        "wrote %d rows (%d models, %d benchmarks, etas %s) to %s",
        len(result),
        result["model"].nunique(),
        result["benchmark"].nunique(),
        ", ".join("inf" if math.isinf(e) else str(e) for e in eta_values),
        output,
    )
    if curves is not None:
        cur = curves_from_joined(joined, eta_values, eps_grid=grid, reference_quirks=reference_quirks)
        write_table(cur, curves)
        log.info("wrote %d curve points to %s", len(cur), curves)
