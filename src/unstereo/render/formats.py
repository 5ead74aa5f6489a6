"""Render a :class:`~unstereo.render.table.Table` as CSV (full precision), Markdown, LaTeX and HTML.

Markdown/LaTeX/HTML round each cell to its ``decimals`` and fold a ``<benchmark>|std`` column into its benchmark's
cell (``39.86 ± 0.74``; LaTeX ``$39.86_{\\pm 0.74}$``, the paper's style).

:func:`markdown_table` and :func:`html_table` render any grid of already formatted cells (a header and rows of
strings); every table the package writes as Markdown or HTML goes through them.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from unstereo.io import atomic_path, write_text

if TYPE_CHECKING:
    from unstereo.render.table import Table


def _fmt(value: float, decimals: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.{decimals}f}"


def _grid(table: Table, style: str) -> tuple[list[str], list[list[str]]]:
    """Header labels and formatted rows, with std columns folded into their value column."""
    cells = {(r.row, r.column): (r.value, int(r.decimals)) for r in table.cells.itertuples(index=False)}
    shown = [c for c in table.columns if not c.endswith("|std")]
    header = [table.row_label] + [table.headers.get(c, c) for c in shown]
    body = []
    for row in table.rows:
        line = [row]
        for col in shown:
            v = cells.get((row, col))
            text = "" if v is None else _fmt(*v)
            s = cells.get((row, f"{col}|std"))
            if text and s is not None:
                std = _fmt(*s)
                text = f"${text}_{{\\pm {std}}}$" if style == "tex" else f"{text} ± {std}"
            line.append(text)
        body.append(line)
    return header, body


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]], caption: str | None = None) -> str:
    """A Markdown pipe table of formatted cells, ``|`` in a cell escaped; ``caption``: a bold line above it."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    lines = [f"**{caption}**", ""] if caption is not None else []
    lines += [line(header), "|" + "---|" * len(header)]
    lines += [line(r) for r in rows]
    return "\n".join(lines) + "\n"


def html_table(
    header: Sequence[str],
    rows: Iterable[Sequence[str]],
    caption: str | None = None,
    css_class: str | None = None,
    cell_classes: Mapping[int, str] | None = None,
) -> str:
    """An HTML table of formatted cells, every text escaped. ``caption``: its ``<caption>``; ``css_class``: the
    ``<table>``'s class; ``cell_classes``: column index -> the class of that column's ``<td>`` cells (e.g. ``num``
    for right-aligned numbers, styled by the page)."""
    esc = html.escape
    classes = cell_classes or {}

    def td(i: int, c: str) -> str:
        return (
            f"<td class='{esc(classes[i])}'>{esc(str(c))}</td>" if i in classes else f"<td>{esc(str(c))}</td>"
        )

    out = ["<table>" if css_class is None else f"<table class='{esc(css_class)}'>"]
    if caption is not None:
        out.append(f"<caption>{esc(caption)}</caption>")
    out.append("<thead><tr>")
    out += [f"<th>{esc(str(h))}</th>" for h in header]
    out.append("</tr></thead><tbody>")
    out += ["<tr>" + "".join(td(i, c) for i, c in enumerate(r)) + "</tr>" for r in rows]
    out.append("</tbody></table>")
    return "\n".join(out) + "\n"


def to_markdown(table: Table) -> str:
    header, body = _grid(table, "md")
    return markdown_table(header, body, caption=table.caption)


def _tex_escape(text: str) -> str:
    out = text.replace("\\", "\\textbackslash{}")
    for ch in "&%#_":
        out = out.replace(ch, "\\" + ch)
    return out.replace("Δ", "$\\Delta$").replace("η", "$\\eta$").replace("±", "$\\pm$")


def to_latex(table: Table) -> str:
    header, body = _grid(table, "tex")
    spec = "l" + "r" * (len(header) - 1)
    lines = [
        "\\begin{table}[t]",
        "\\centering",
        f"\\caption{{{_tex_escape(table.caption)}}}",
        f"\\label{{tab:{table.key}}}",
        f"\\begin{{tabular}}{{{spec}}}",
        "\\toprule",
        " & ".join(_tex_escape(h) for h in header) + " \\\\",
        "\\midrule",
    ]
    for r in body:
        # cells already in math mode ($..$) are kept as they are
        lines.append(
            " & ".join([_tex_escape(r[0])] + [c if c.startswith("$") else _tex_escape(c) for c in r[1:]])
        )
        lines[-1] += " \\\\"
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
    return "\n".join(lines) + "\n"


def to_html(table: Table) -> str:
    header, body = _grid(table, "html")
    return html_table(header, body, caption=table.caption)


def write_table_files(table: Table, out_dir: str | Path, formats=("csv", "md", "tex", "html")) -> list[Path]:
    """Write ``<out_dir>/<key>.{csv,md,tex,html}``; returns the paths written."""
    out_dir = Path(out_dir)
    paths = []
    for fmt in formats:
        path = out_dir / f"{table.key}.{fmt}"
        if fmt == "csv":
            with atomic_path(path) as tmp:  # not tables.write_table: tables imports this module
                table.wide().reset_index().to_csv(tmp, index=False)
        elif fmt == "md":
            write_text(path, to_markdown(table))
        elif fmt == "tex":
            write_text(path, to_latex(table))
        elif fmt == "html":
            write_text(path, to_html(table))
        else:
            raise ValueError(f"unknown table format {fmt!r}")
        paths.append(path)
    return paths
