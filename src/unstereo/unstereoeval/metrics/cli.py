"""``unstereo metrics SCORES... --pairs PAIRS... -o FILE``: US, std, AuFC, PD, male_rel_ratio per (model, benchmark, eta)."""

from __future__ import annotations

import click
import pandas as pd

from unstereo import cli_options
from unstereo.cli_options import EXISTING_FILE
from unstereo.config.settings import section
from unstereo.errors import InputError
from unstereo.log import get_logger
from unstereo.tables import METRICS, read_table, write_table
from unstereo.unstereoeval.eta import eta_label, parse_etas
from unstereo.unstereoeval.metrics.compute import curves_from_joined, join_scores, metrics_from_joined

log = get_logger("unstereoeval.metrics.cli")

#: The metrics section's settings (metrics.schema.yaml): the command gets them whole as ``settings``
#: (``--settings``, the workflow passes the section), with override flags generated from the schema.
SECTION = section("metrics")


@click.command("metrics")
@click.argument("scores", nargs=-1, required=True, type=EXISTING_FILE)
@cli_options.input_files(
    "--pairs",
    "pairs_files",
    "pair table(s) (PAIRS) with benchmark and max_pmi; repeat the option for several benchmarks",
    required=True,
)
@cli_options.output("METRICS parquet")
@cli_options.registry_optional
@cli_options.output(
    "also write the fairness curves (model, benchmark, eta, eps, us) to this parquet",
    flag="--curves",
    dest="curves",
    required=False,
    short=None,
)
@SECTION.command("etas", "eps", "eps_grid.start", "eps_grid.stop", "eps_grid.num", "reference_quirks")
def metrics(scores, pairs_files, output, registry, curves, settings) -> None:
    """Compute the UnStereoEval metrics of every model and benchmark in SCORES (SCORES parquet files).

    Each score row is joined with its pair (by pair_id) to get the benchmark and MaxPMI; for every eta the pairs
    with -eta <= MaxPMI <= eta are kept. Writes one METRICS row per (model, benchmark, eta).
    """
    import numpy as np

    eta_values = parse_etas(settings.etas)  # valid: the schema checked them
    grid = np.linspace(settings.eps_grid.start, settings.eps_grid.stop, settings.eps_grid.num)
    eps, reference_quirks = settings.eps, settings.reference_quirks
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
        from unstereo.models.registry import attach, load_registry

        result = attach(result, load_registry(registry)).drop(columns=["order", "deduplicated"])
        front = ["model", "display_name"]
        result = result[front + [c for c in result.columns if c not in front]]
    write_table(result, output, METRICS)
    log.info(
        "wrote %d rows (%d models, %d benchmarks, etas %s) to %s",
        len(result),
        result["model"].nunique(),
        result["benchmark"].nunique(),
        ", ".join(eta_label(e) for e in eta_values),
        output,
    )
    if curves is not None:
        cur = curves_from_joined(joined, eta_values, eps_grid=grid, reference_quirks=reference_quirks)
        write_table(cur, curves)
        log.info("wrote %d curve points to %s", len(cur), curves)
