"""The project's common table formats: documented column schemas, validation, atomic parquet I/O.

Every stage reads and writes its tables through :func:`read_table` / :func:`write_table` so that all stages speak the
same language. A schema lists required columns with their kind; extra columns are allowed and kept (stages add
metadata), missing columns or wrong kinds raise an :class:`~unstereo.errors.InputError` naming the file and column.

Kinds: ``str`` (text), ``int``, ``float`` (also accepts ints; NaN allowed where ``nullable``), ``bool``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .errors import InputError
from .io import atomic_path


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # "str" | "int" | "float" | "bool"
    doc: str
    nullable: bool = False


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
        """Markdown description of the table (used in docs and ``--help``)."""
        lines = [f"**{self.name}**: {self.doc}", "", "| column | kind | meaning |", "|---|---|---|"]
        lines += [f"| `{c.name}` | {c.kind}{'?' if c.nullable else ''} | {c.doc} |" for c in self.columns]
        return "\n".join(lines)


PAIRS = TableSchema(
    "pairs",
    "one row per sentence pair (a template filled female and male); the shared currency of benchmarks, "
    "generation and scoring",
    (
        Column("pair_id", "str", "unique id, stable across runs (e.g. `USE-5:123`, `Winobias:dev:17`)"),
        Column(
            "benchmark", "str", "benchmark name (USE-5, USE-10, USE-20, Winobias, Winogender, or a user name)"
        ),
        Column("template", "str", "sentence with `{pronoun}`, `{pronoun1}`, `{pronoun2}` placeholders"),
        Column("sentence_female", "str", "template filled with she/her/her"),
        Column("sentence_male", "str", "template filled with he/his/him"),
        Column(
            "seed_word", "str", "seed word the pair was generated for (or the coref entity)", nullable=True
        ),
        Column(
            "max_pmi",
            "float",
            "signed delta of largest magnitude among the template's words (SPEC 1.2)",
            True,
        ),
        Column("max_pmi_word", "str", "the word that gives max_pmi", nullable=True),
        Column("source", "str", "where the row came from (file name, generator model, ...)"),
    ),
    unique=("pair_id",),
)

SCORES = TableSchema(
    "scores",
    "one row per (pair, model): sentence log-likelihoods in nats; run metadata in extra columns "
    "(dtype, batch_size, device, revision, versions)",
    (
        Column("pair_id", "str", "id of the pair in the pairs table"),
        Column("model", "str", "model id (hub id, path or name as in the released files)"),
        Column("logp_female", "float", "ln p(sentence_female), BOS prepended and not scored"),
        Column("logp_male", "float", "ln p(sentence_male)"),
        Column("ntok_female", "int", "number of scored tokens of sentence_female"),
        Column("ntok_male", "int", "number of scored tokens of sentence_male"),
    ),
    unique=("pair_id", "model"),
)

TEXTS = TableSchema(
    "texts",
    "one row per text to score (a sentence, a pair's female or male sentence, a prompt plus continuation, ...)",
    (
        Column(
            "id",
            "str",
            "unique id, stable across runs (pair scoring uses `{pair_id}|female` / `{pair_id}|male`)",
        ),
        Column("text", "str", "the string to score, non-empty, exactly as scored"),
    ),
    unique=("id",),
)

TEXT_SCORES = TableSchema(
    "text_scores",
    "one row per scored text: log-likelihood in nats under one model; run metadata in extra columns (model, "
    "scorer, dtype, batch_size, device, bos_policy, revision, versions), as in SCORES",
    (
        Column("id", "str", "id of the text in the texts table"),
        Column("logp", "float", "ln p(text): causal LM with BOS prepended and not scored, or masked-LM PLL"),
        Column("ntok", "int", "number of scored tokens"),
    ),
    unique=("id",),
)

UNIGRAMS = TableSchema(
    "unigrams",
    "unigram counts after preprocessing (lowercase, alphabetic, stop words removed, targets kept)",
    (Column("word", "str", "word"), Column("count", "int", "c(w)")),
    unique=("word",),
)

COOCCURRENCE = TableSchema(
    "cooccurrence",
    "co-occurrence counts c(w, g) within the window for every target word g",
    (
        Column("word", "str", "word w"),
        Column("target", "str", "gendered target word g"),
        Column("count", "int", "c(w, g), both orders summed"),
    ),
    unique=("word", "target"),
)

DELTA = TableSchema(
    "delta",
    "gender association per word: delta = PMI(w, she) - PMI(w, he) (positive = female-skewed); extra columns "
    "hold per-pair deltas and PMIs",
    (
        Column("word", "str", "word"),
        Column("delta", "float", "PMI(w, female) - PMI(w, male), NaN where undefined", nullable=True),
        Column("count", "int", "unigram count c(w)"),
    ),
    unique=("word",),
)

# One row per (model, benchmark, eta): these key columns, then the columns of every registered metric
# (unstereo.metrics.registry: us, us_std, aufc, pd, male_rel_ratio, and whatever a new method registers).
METRIC_KEY_COLUMNS = (
    Column("model", "str", "model id"),
    Column("benchmark", "str", "benchmark name"),
    Column("eta", "float", "MaxPMI bound (inf = unconstrained)"),
    Column("n", "int", "number of pairs"),
)


# Providers of the METRICS columns beyond the keys. unstereo.metrics.registry adds itself on import (this module
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


# ---- FairPair (unstereo.fairpair; SPEC 2): results/fairpair/... ------------------------------------------------
FAIRPAIR_PROMPTS = TableSchema(
    "fairpair_prompts",
    "one row per FairPair prompt x with its perturbation p(x) (results/fairpair/prompts.parquet)",
    (
        Column(
            "prompt_id",
            "str",
            "unique id (`cs:<occupation>:<name>:<descriptor>` for Common Sents, else the file's)",
        ),
        Column("prompt", "str", "x, naming the original entity (e.g. `John is a man, working as a doctor.`)"),
        Column(
            "perturbed_prompt",
            "str",
            "p(x), the same text about the perturbed entity (`Jane is a woman, ...`)",
        ),
        Column("entity", "str", "the original entity's name(s) p replaces, `|`-separated (e.g. `John`)"),
        Column("entity_perturbed", "str", "what p puts in their place, `|`-separated (e.g. `Jane`)"),
        Column("source", "str", "`common-sents` or the prompt file's name"),
    ),
    unique=("prompt_id",),
)

FAIRPAIR_SAMPLES = TableSchema(
    "fairpair_samples",
    "one row per (prompt, side, sample): a continuation of x (side original) or of p(x) (side perturbed) "
    "(results/fairpair/{model}/samples.parquet)",
    (
        Column("prompt_id", "str", "the prompt's id"),
        Column("side", "str", "`original` (a continuation g_i(x)) or `perturbed` (g_j(p(x)))"),
        Column("sample", "int", "sample index 0..n-1 (sample j of both sides uses seed + j)"),
        Column("prompt", "str", "the text continued: x or p(x)"),
        Column("continuation", "str", "the sampled continuation"),
        Column(
            "continuation_mapped",
            "str",
            "p applied to an original-side continuation, p(g_i(x)); the continuation itself on the perturbed side; "
            "empty (null) where an LLM perturbation was rejected (the sample is then left out of the metrics)",
            nullable=True,
        ),
        Column("seed", "int", "the sample's seed"),
        Column("tokens", "int", "tokens generated"),
    ),
    unique=("prompt_id", "side", "sample"),
)

FAIRPAIR_PERTURBATIONS = TableSchema(
    "fairpair_perturbations",
    "one row per perturbation of an original-side continuation (results/fairpair/{model}/perturbations.parquet)",
    (
        Column("prompt_id", "str", "the prompt's id"),
        Column("sample", "int", "the original-side sample perturbed"),
        Column("method", "str", "`rules` or `llm`"),
        Column(
            "input",
            "str",
            "the text perturbed (rules: the continuation; llm: x followed by the continuation)",
        ),
        Column("output", "str", "the perturbation's raw output"),
        Column("accepted", "bool", "whether it passed the filters (rules: always)"),
        Column(
            "reason",
            "str",
            "`ok`, or why it was rejected: `prefix` (does not start with p(x)), `mentions-original` (still names "
            "the original entity), `dissimilar` (Jaccard dissimilarity to the input above the threshold)",
        ),
        Column("dissimilarity", "float", "Jaccard dissimilarity of output and input (token sets)"),
    ),
    unique=("prompt_id", "sample"),
)

FAIRPAIR_PER_PROMPT = TableSchema(
    "fairpair_per_prompt",
    "B, V_gp, V_pg, F per (prompt, phi, k) of one model (results/fairpair/{model}/per_prompt.parquet)",
    (
        Column("model", "str", "the model's short name"),
        Column("prompt_id", "str", "the prompt's id"),
        Column("phi", "str", "`jaccard` (lowercased \\w+ token sets) or `sentiment` (VADER compound)"),
        Column(
            "k", "int", "folds per side; k = n (the configured samples per side) is the per-sample definition"
        ),
        Column("B", "float", "bias: mean Phi over all (p(g_i(x)), g_j(p(x))) pairs", nullable=True),
        Column("V_gp", "float", "mean Phi over pairs i < j of g_i(p(x)), g_j(p(x))", nullable=True),
        Column("V_pg", "float", "mean Phi over pairs i < j of p(g_i(x)), p(g_j(x))", nullable=True),
        Column(
            "F",
            "float",
            "B^2 / (V_gp V_pg); 1 where B = V_gp V_pg = 0, inf where only V_gp V_pg = 0",
            nullable=True,
        ),
        Column("t_stat", "float", "Welch t of the B terms against the pooled V terms", nullable=True),
        Column("p_value", "float", "its two-sided p-value", nullable=True),
        Column("n_pg", "int", "original-side samples used (accepted perturbations)"),
        Column("n_gp", "int", "perturbed-side samples used"),
    ),
    unique=("model", "prompt_id", "phi", "k"),
)

FAIRPAIR_SUMMARY = TableSchema(
    "fairpair_summary",
    "means over prompts per (model, phi, k) with a bootstrap interval of mean F (results/fairpair/summary.parquet)",
    (
        Column("model", "str", "the model's short name"),
        Column("phi", "str", "`jaccard` or `sentiment`"),
        Column("k", "int", "folds per side (k = n: per sample)"),
        Column("n_prompts", "int", "prompts with a defined F"),
        Column("mean_B", "float", "mean B", nullable=True),
        Column("mean_V_gp", "float", "mean V_gp", nullable=True),
        Column("mean_V_pg", "float", "mean V_pg", nullable=True),
        Column(
            "mean_F", "float", "mean of the finite F (infinite ones are counted in n_inf_F)", nullable=True
        ),
        Column(
            "F_ci_low",
            "float",
            "bootstrap percentile interval of mean_F (resampling the prompts with a finite F): low",
            nullable=True,
        ),
        Column("F_ci_high", "float", "... high", nullable=True),
        Column(
            "t_stat", "float", "paired t of B(x) against sqrt(V_gp(x) V_pg(x)) over prompts", nullable=True
        ),
        Column("p_value", "float", "its two-sided p-value", nullable=True),
        Column("n_inf_F", "int", "prompts whose F is infinite (V_gp V_pg = 0 < B): counted, not averaged"),
        Column("ratio_F", "float", "ratio of means: mean(B^2) / (mean(V_gp) mean(V_pg))", nullable=True),
        Column("median_F", "float", "median F over the prompts (infinite ones included)", nullable=True),
        Column("median_F_ci_low", "float", "bootstrap percentile interval of median_F: low", nullable=True),
        Column("median_F_ci_high", "float", "... high", nullable=True),
    ),
    unique=("model", "phi", "k"),
)

FAIRPAIR_CURVES = TableSchema(
    "fairpair_curves",
    "mean B, V_gp, V_pg over prompts against the number of samples or of folds (paper Figures 3 and 4)",
    (
        Column("model", "str", "the model's short name"),
        Column("phi", "str", "`jaccard` or `sentiment`"),
        Column(
            "axis", "str", "`samples` (the first x samples of each side) or `folds` (x folds of all samples)"
        ),
        Column("x", "int", "number of samples or folds"),
        Column("B", "float", "mean B", nullable=True),
        Column("V_gp", "float", "mean V_gp", nullable=True),
        Column("V_pg", "float", "mean V_pg", nullable=True),
    ),
    unique=("model", "phi", "axis", "x"),
)

FAIRPAIR_NGRAMS = TableSchema(
    "fairpair_ngrams",
    "the 1-4-grams most over-represented on each side (paper Figure 6): document frequencies over continuations",
    (
        Column("model", "str", "the model's short name"),
        Column("side", "str", "`pg` (over-represented in p(g(x))) or `gp` (in g(p(x)))"),
        Column("rank", "int", "1 = most over-represented on that side"),
        Column("ngram", "str", "the n-gram (lowercased \\w+ tokens joined by spaces)"),
        Column("n", "int", "its length"),
        Column("freq_pg", "float", "share of p(g(x)) continuations containing it"),
        Column("freq_gp", "float", "share of g(p(x)) continuations containing it"),
    ),
    unique=("model", "side", "rank"),
)

SCHEMAS.update(
    {
        s.name: s
        for s in (
            FAIRPAIR_PROMPTS,
            FAIRPAIR_SAMPLES,
            FAIRPAIR_PERTURBATIONS,
            FAIRPAIR_PER_PROMPT,
            FAIRPAIR_SUMMARY,
            FAIRPAIR_CURVES,
            FAIRPAIR_NGRAMS,
        )
    }
)
