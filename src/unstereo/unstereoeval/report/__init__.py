"""Paper reproduction: model registry, table builders (CSV, Markdown, LaTeX, HTML), Figure 6, reproduction check."""

from unstereo.models.registry import attach, load_registry, name_map
from unstereo.render.table import Table
from unstereo.unstereoeval.report.compare import compare, load_published, reproduction_markdown, summarize
from unstereo.unstereoeval.report.table_builders import (
    dedup_table,
    gap_table,
    generic_tables,
    metric_table,
    paper_tables,
)

__all__ = [
    "Table",
    "attach",
    "compare",
    "dedup_table",
    "gap_table",
    "generic_tables",
    "load_published",
    "load_registry",
    "metric_table",
    "name_map",
    "paper_tables",
    "reproduction_markdown",
    "summarize",
]
