"""The one table type every report renders: cells in long form with their row and column order.

A :class:`Table` holds its cells as rows ``(row, column, value, decimals)``: ``value`` at full precision (the CSV
form), ``decimals`` the rounding shown in Markdown, LaTeX and HTML. A column ``<name>|std`` holds the standard error
of column ``<name>``; :mod:`unstereo.render.formats` folds it into that column's cell (``39.86 ± 0.74``). The
builders of a method's tables live with the method (UnStereoEval's paper tables:
:mod:`unstereo.unstereoeval.report.table_builders`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd


@dataclass
class Table:
    """One table: identity, caption, and cells in long form with their row and column order."""

    key: str
    caption: str
    cells: pd.DataFrame
    rows: list[str]
    columns: list[str]
    headers: dict[str, str] = field(default_factory=dict)
    row_label: str = "Model"  # header of the row-name column

    def value(self, row: str, column: str) -> float:
        """The cell's full-precision value; KeyError when the table has no such cell."""
        if getattr(self, "_index", None) is None:
            self._index = {(r.row, r.column): float(r.value) for r in self.cells.itertuples(index=False)}
        try:
            return self._index[(row, column)]
        except KeyError:
            raise KeyError((self.key, row, column)) from None

    def wide(self) -> pd.DataFrame:
        """Rows x columns with full-precision values (the CSV form)."""
        wide = self.cells.pivot(index="row", columns="column", values="value")
        wide = wide.reindex(index=self.rows, columns=self.columns)
        wide.index.name = "row"
        return wide
