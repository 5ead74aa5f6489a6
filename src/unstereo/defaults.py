"""The project's shared defaults, defined once: the paper's benchmarks, the fairness threshold and its grid, and
the marker file of a fetched resource.

Everything that needs one of these values imports it from here (the Snakemake rules included). The YAML config
schemas cannot import Python; ``tests/test_defaults.py`` checks that their defaults and enums equal these values.
The eta values live with the eta rules in :mod:`unstereo.unstereoeval.eta` (``PAPER_ETAS``); the resource names with their
builders in :mod:`unstereo.resources` (``RESOURCES``).
"""

from __future__ import annotations

import math

#: The paper's five benchmarks, in the paper's order (tables, figures, the reproduction rules).
PAPER_BENCHMARKS: tuple[str, ...] = ("USE-5", "USE-10", "USE-20", "Winobias", "Winogender")

#: Fairness threshold on |FM| = |ln p(s_F) - ln p(s_M)|: ln 1.65 ("65 % more probability",
#: docs/methods.md#scoring-and-metrics).
DEFAULT_EPS: float = math.log(1.65)

#: Thresholds of the fairness curve and its area AuFC: numpy.linspace(start, stop, num)
#: (docs/methods.md#scoring-and-metrics).
EPS_GRID: tuple[float, float, int] = (0.0, 6.0, 101)

#: The manifest that marks a resource as fetched: ``external_dir/<name>/RESOURCE_MANIFEST``.
RESOURCE_MANIFEST: str = "RESOURCE.json"


def eps_grid_text(grid: tuple[float, float, int] = EPS_GRID) -> str:
    """A grid as the CLI option ``--eps-grid`` spells it: ``START:STOP:NUM``."""
    start, stop, num = grid
    return f"{start:g}:{stop:g}:{int(num)}"
