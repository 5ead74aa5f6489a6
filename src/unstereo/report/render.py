"""Render a :class:`~unstereo.report.tables.Table` as CSV (full precision), Markdown, LaTeX and HTML.

Markdown/LaTeX/HTML round each cell to its ``decimals`` and fold a ``<benchmark>|std`` column into its benchmark's
cell (``39.86 ± 0.74``; LaTeX ``$39.86_{\\pm 0.74}$``, the paper's style).
"""

from __future__ import annotations

import html
import math
from pathlib import Path

from ..io import write_text
from ..tables import write_table
from .tables import Table


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


def to_markdown(table: Table) -> str:
    header, body = _grid(table, "md")
    lines = [f"**{table.caption}**", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines) + "\n"


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
    out = [f"<table>\n<caption>{html.escape(table.caption)}</caption>", "<thead><tr>"]
    out += [f"<th>{html.escape(h)}</th>" for h in header]
    out.append("</tr></thead><tbody>")
    for r in body:
        out.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out) + "\n"


def write_table_files(table: Table, out_dir: str | Path, formats=("csv", "md", "tex", "html")) -> list[Path]:
    """Write ``<out_dir>/<key>.{csv,md,tex,html}``; returns the paths written."""
    out_dir = Path(out_dir)
    paths = []
    for fmt in formats:
        path = out_dir / f"{table.key}.{fmt}"
        if fmt == "csv":
            wide = table.wide().reset_index()
            write_table(wide, path)
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
