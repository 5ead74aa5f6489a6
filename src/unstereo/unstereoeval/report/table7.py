"""Table 7 of the paper (benchmark properties) from the properties of :mod:`unstereo.unstereoeval.benchmarks.properties`.

Lives in the report package (the benchmarks stage computes, the report lays out): one column per benchmark, the
count rows and a median and a max row per statistic, as the paper prints them.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from unstereo.render.table import Table
from unstereo.unstereoeval.benchmarks.properties import (
    COUNT_ROWS,
    DECIMALS,
    STAT_ROWS,
    TABLE7_ROWS,
    TABLE7_STATS,
)
from unstereo.unstereoeval.report.table_builders import _ordered_benchmarks


def properties_table(props: dict[str, dict[str, Any]]):
    """Table 7: one column per benchmark (paper order first), the count rows and a median and a max row per
    statistic; ``props`` maps benchmark -> :func:`benchmark_properties`."""
    columns = _ordered_benchmarks(set(props))
    cells = []
    for bench in columns:
        p = props[bench]
        for row in COUNT_ROWS:
            cells.append((row, bench, float(p[row]), 0))
        for row in STAT_ROWS:
            for stat in TABLE7_STATS:
                cells.append((f"{row} ({stat})", bench, float(p[row][stat]), DECIMALS.get(row, 0)))
    return Table(
        key="table07",
        caption="Table 7: benchmark properties (median and max per sentence; seed-word delta per distinct seed word)",
        cells=pd.DataFrame(cells, columns=["row", "column", "value", "decimals"]),
        rows=list(TABLE7_ROWS),
        columns=columns,
        row_label="Property",
    )
