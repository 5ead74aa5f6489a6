"""The project's common table formats: documented column schemas, validation, atomic parquet I/O.

Every stage reads and writes its tables through :func:`read_table` / :func:`write_table` so that all stages speak the
same language. A schema lists required columns with their kind; extra columns are allowed and kept (stages add
metadata), missing columns or wrong kinds raise an :class:`~unstereo.errors.InputError` naming the file and column.

Kinds: ``str`` (text), ``int``, ``float`` (also accepts ints; NaN allowed where ``nullable``), ``bool``.
Schemas write their columns with :func:`columns`, a text table of name, kind (``float?``: nullable) and meaning.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from unstereo.errors import InputError
from unstereo.io import atomic_path
from unstereo.render.formats import markdown_table


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # "str" | "int" | "float" | "bool"
    doc: str
    nullable: bool = False


KINDS = ("str", "int", "float", "bool")


def columns(spec: str) -> tuple[Column, ...]:
    """Columns written as a small text table, as the docs show them: a line a column, its name, its kind (a ``?``
    after the kind where the column may be empty) and its meaning; a line indented further continues the meaning
    of the line above it (joined with one space)::

        columns(\"""
            pair_id    str   unique id
            seed_word  str?  seed word the pair was generated for
                             (or the coref entity)
        \""")
    """
    rows: list[list[str]] = []
    for line in textwrap.dedent(spec.strip("\n")).splitlines():
        if not line.strip():
            continue
        if line[0].isspace():
            if not rows:
                raise ValueError(f"column spec: a continuation line before any column: {line.strip()!r}")
            rows[-1][2] += " " + line.strip()
            continue
        parts = line.split(None, 2)
        if len(parts) != 3:
            raise ValueError(f"column spec: want `name kind meaning`, got {line!r}")
        rows.append(parts)
    out = []
    for name, kind, doc in rows:
        nullable = kind.endswith("?")
        kind = kind.removesuffix("?")
        if kind not in KINDS:
            raise ValueError(f"column spec: {name}: kind {kind!r} is not one of {', '.join(KINDS)}")
        out.append(Column(name, kind, doc, nullable))
    return tuple(out)


@dataclass(frozen=True)
class TableSchema:
    name: str
    doc: str
    fixed_columns: tuple[Column, ...]
    unique: tuple[str, ...] = field(default=())  # columns that together must be unique
    # Columns added at run time (METRICS: those of the registered metrics), after the fixed ones.
    more_columns: Callable[[], tuple[Column, ...]] | None = field(default=None, compare=False)

    @property
    def columns(self) -> tuple[Column, ...]:
        return self.fixed_columns + (self.more_columns() if self.more_columns else ())

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def describe(self) -> str:
        """Markdown description of the table: a bold name and doc line, then a column/kind/meaning table (a ``|``
        in a cell escaped); no trailing newline."""
        rows = [(f"`{c.name}`", f"{c.kind}{'?' if c.nullable else ''}", c.doc) for c in self.columns]
        table = markdown_table(["column", "kind", "meaning"], rows)
        return f"**{self.name}**: {self.doc}\n\n" + table.removesuffix("\n")


PAIRS = TableSchema(
    "pairs",
    "one row per sentence pair (a template filled female and male); the shared currency of benchmarks, "
    "generation and scoring",
    columns("""
        pair_id          str     unique id, stable across runs (e.g. `USE-5:123`, `Winobias:dev:17`)
        benchmark        str     benchmark name (USE-5, USE-10, USE-20, Winobias, Winogender, or a user name)
        template         str     sentence with `{pronoun}`, `{pronoun1}`, `{pronoun2}` placeholders
        sentence_female  str     template filled with she/her/her
        sentence_male    str     template filled with he/his/him
        seed_word        str?    seed word the pair was generated for (or the coref entity)
        max_pmi          float?  signed delta of largest magnitude among the template's words
                                 (docs/methods.md#maxpmi-and-eta)
        max_pmi_word     str?    the word that gives max_pmi
        source           str     where the row came from (file name, generator model, ...)
    """),
    unique=("pair_id",),
)

SCORES = TableSchema(
    "scores",
    "one row per (pair, model): sentence log-likelihoods in nats; run metadata in extra columns "
    "(dtype, batch_size, device, revision, versions)",
    columns("""
        pair_id      str    id of the pair in the pairs table
        model        str    model id (hub id, path or name as in the released files)
        logp_female  float  ln p(sentence_female), BOS prepended and not scored
        logp_male    float  ln p(sentence_male)
        ntok_female  int    number of scored tokens of sentence_female
        ntok_male    int    number of scored tokens of sentence_male
    """),
    unique=("pair_id", "model"),
)

TEXTS = TableSchema(
    "texts",
    "one row per text to score (a sentence, a pair's female or male sentence, a prompt plus continuation, ...)",
    columns("""
        id    str  unique id, stable across runs (pair scoring uses `{pair_id}|female` / `{pair_id}|male`)
        text  str  the string to score, non-empty, exactly as scored
    """),
    unique=("id",),
)

TEXT_SCORES = TableSchema(
    "text_scores",
    "one row per scored text: log-likelihood in nats under one model; run metadata in extra columns (model, "
    "scorer, dtype, batch_size, device, bos_policy, revision, versions), as in SCORES",
    columns("""
        id    str    id of the text in the texts table
        logp  float  ln p(text): causal LM with BOS prepended and not scored, or masked-LM PLL
        ntok  int    number of scored tokens
    """),
    unique=("id",),
)

UNIGRAMS = TableSchema(
    "unigrams",
    "unigram counts after preprocessing (lowercase, alphabetic, stop words removed, targets kept)",
    columns("""
        word   str  word
        count  int  c(w)
    """),
    unique=("word",),
)

COOCCURRENCE = TableSchema(
    "cooccurrence",
    "co-occurrence counts c(w, g) within the window for every target word g",
    columns("""
        word    str  word w
        target  str  gendered target word g
        count   int  c(w, g), both orders summed
    """),
    unique=("word", "target"),
)

DELTA = TableSchema(
    "delta",
    "gender association per word: delta = PMI(w, she) - PMI(w, he) (positive = female-skewed); extra columns "
    "hold per-pair deltas and PMIs",
    columns("""
        word   str     word
        delta  float?  PMI(w, female) - PMI(w, male), NaN where undefined
        count  int     unigram count c(w)
    """),
    unique=("word",),
)

# One row per (model, benchmark, eta): these key columns, then the columns of every registered metric
# (unstereo.unstereoeval.metrics.registry: us, us_std, aufc, pd, male_rel_ratio, and whatever a new method registers).
METRIC_KEY_COLUMNS = columns("""
    model      str    model id
    benchmark  str    benchmark name
    eta        float  MaxPMI bound (inf = unconstrained)
    n          int    number of pairs
""")


# Providers of the METRICS columns beyond the keys. unstereo.unstereoeval.metrics.registry adds itself on import (this module
# never imports the metrics package: the dependency runs one way, metrics -> tables).
_METRIC_COLUMN_PROVIDERS: list[Callable[[], tuple[Column, ...]]] = []


def add_metric_columns(provider: Callable[[], tuple[Column, ...]]) -> None:
    """Make METRICS list ``provider()``'s columns after its key columns (called by the metric registry)."""
    if provider not in _METRIC_COLUMN_PROVIDERS:
        _METRIC_COLUMN_PROVIDERS.append(provider)


def _registered_metric_columns() -> tuple[Column, ...]:
    return tuple(c for provider in _METRIC_COLUMN_PROVIDERS for c in provider())


METRICS = TableSchema(
    "metrics",
    "one row per (model, benchmark, eta): Unstereo Score and friends, percent where the paper uses percent",
    METRIC_KEY_COLUMNS,
    unique=("model", "benchmark", "eta"),
    more_columns=_registered_metric_columns,
)

SCHEMAS = {s.name: s for s in (PAIRS, SCORES, TEXTS, TEXT_SCORES, UNIGRAMS, COOCCURRENCE, DELTA, METRICS)}


def _kind_ok(series: pd.Series, col: Column) -> bool:
    values = series.dropna() if col.nullable else series
    if not col.nullable and series.isna().any():
        return False
    if values.empty:
        return True
    if col.kind == "str":
        return pd.api.types.is_string_dtype(values) or values.map(lambda v: isinstance(v, str)).all()
    if col.kind == "int":
        return pd.api.types.is_integer_dtype(values) or (
            pd.api.types.is_float_dtype(values) and (values == values.round()).all()
        )
    if col.kind == "float":
        return pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
    if col.kind == "bool":
        return pd.api.types.is_bool_dtype(values)
    raise ValueError(f"unknown column kind {col.kind!r}")


_EMPTY_DTYPES = {"str": "object", "int": "int64", "float": "float64", "bool": "bool"}


def typed_empty(df: pd.DataFrame, schema: TableSchema) -> pd.DataFrame:
    """An empty ``df`` with the schema's columns cast to their kinds (an empty table read back from parquet or built
    from no rows has float64/object columns, which later merges and concatenations reject); other frames as they
    are."""
    if len(df):
        return df
    return df.astype({c.name: _EMPTY_DTYPES[c.kind] for c in schema.columns if c.name in df.columns})


def validate(df: pd.DataFrame, schema: TableSchema, source: str | Path | None = None) -> pd.DataFrame:
    """Check ``df`` against ``schema``; raise InputError naming ``source`` and the offending column. Returns ``df``
    (an empty one with its columns cast to the schema's kinds)."""
    missing = [c for c in schema.names if c not in df.columns]
    if missing:
        raise InputError(
            f"{schema.name} table lacks column(s) {missing}; has {list(df.columns)}", path=source
        )
    for col in schema.columns:
        if not _kind_ok(df[col.name], col):
            nulls = int(df[col.name].isna().sum())
            detail = (
                f"{nulls} missing value(s)" if (nulls and not col.nullable) else f"dtype {df[col.name].dtype}"
            )
            raise InputError(f"{schema.name} column '{col.name}' must be {col.kind}: {detail}", path=source)
    if schema.unique:
        dup = df.duplicated(list(schema.unique), keep=False)
        if dup.any():
            first = df.loc[dup, list(schema.unique)].iloc[0].to_dict()
            raise InputError(
                f"{schema.name} table has {int(dup.sum())} rows with duplicated {list(schema.unique)}, e.g. {first}",
                path=source,
            )
    return typed_empty(df, schema)


def write_table(df: pd.DataFrame, path: str | Path, schema: TableSchema | str | None = None) -> Path:
    """Validate (if a schema is given) and write ``df`` atomically; format from the suffix (.parquet, .csv)."""
    if isinstance(schema, str):
        schema = SCHEMAS[schema]
    if schema is not None:
        df = validate(df, schema, source=path)
    path = Path(path)
    with atomic_path(path) as tmp:
        if path.suffix == ".csv":
            df.to_csv(tmp, index=False)
        elif path.suffix == ".parquet":
            df.to_parquet(tmp, index=False)
        else:
            raise InputError("unsupported table format (use .parquet or .csv)", path=path)
    return path


def read_table(path: str | Path, schema: TableSchema | str | None = None) -> pd.DataFrame:
    """Read a .parquet/.csv(.gz)/.jsonl table and validate it against ``schema`` if given."""
    if isinstance(schema, str):
        schema = SCHEMAS[schema]
    path = Path(path)
    if not path.exists():
        raise InputError("file not found", path=path)
    name = path.name
    try:
        if name.endswith(".parquet"):
            df = pd.read_parquet(path)
        elif name.endswith((".csv", ".csv.gz")):
            df = pd.read_csv(path, keep_default_na=False, na_values=[""])
        elif name.endswith((".jsonl", ".jsonl.gz")):
            df = pd.read_json(path, lines=True)
        else:
            raise InputError("unsupported table format (use .parquet, .csv or .jsonl)", path=path)
    except InputError:
        raise
    except Exception as exc:  # pandas/pyarrow errors do not always name the file
        raise InputError(f"cannot read table: {exc}", path=path) from exc
    if schema is not None:
        df = validate(df, schema, source=path)
    return df


def read_delta(path: str | Path) -> pd.DataFrame:
    """Read a delta table: the corpus stage's parquet, or the released PILE table ``pmi_file_w_counts.csv``.

    Returns at least ``word`` (str), ``delta`` (float) and ``count``. The released CSV names its columns
    ``word, pmi_diff, counts, freq`` and holds the words "null" and "nan", which are kept (``keep_default_na=False``).
    """
    path = Path(path)
    if path.name.endswith((".csv", ".csv.gz")):
        try:
            df = pd.read_csv(path, keep_default_na=False, na_values=[""])
        except Exception as exc:
            raise InputError(f"cannot read delta table: {exc}", path=path) from exc
        df = df.drop(columns=[c for c in df.columns if c.startswith("Unnamed")])
        df = df.rename(columns={"pmi_diff": "delta", "counts": "count"})
        df["word"] = df["word"].astype(str)
        if "count" not in df.columns:
            raise InputError("delta CSV needs a count column ('counts' or 'count')", path=path)
    else:
        df = read_table(path)
    return validate(df, DELTA, source=path)
