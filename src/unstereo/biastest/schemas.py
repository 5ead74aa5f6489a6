"""Table schemas of the biastest stage (validated with :func:`unstereo.tables.validate` on write)."""

from __future__ import annotations

from unstereo.tables import Column, TableSchema

SOURCES = ("generated", "template", "released")

PAIRS = TableSchema(
    "biastest_pairs",
    "one row per sentence pair of a bias specification: the same sentence with a term of each social group; "
    "`results/biastest/{spec}/pairs.parquet`",
    (
        Column("pair_id", "str", "unique id, stable across runs (`{spec}:{source}:...`)"),
        Column("spec", "str", "bias specification name"),
        Column("attribute", "str", "the attribute term the pair is about"),
        Column("group_term_a", "str", "social-group term of sentence_a"),
        Column("group_term_b", "str", "social-group term of sentence_b"),
        Column("sentence_a", "str", "the sentence with group_term_a"),
        Column("sentence_b", "str", "the sentence with group_term_b"),
        Column("stereotype", "str", "a or b: which sentence states the stereotype"),
        Column("source", "str", "generated | template | released"),
    ),
    unique=("pair_id",),
)

SCORES = TableSchema(
    "biastest_scores",
    "one row per (pair, model): the score of each sentence, higher = more probable; "
    "`results/biastest/{model}/{spec}/scores.parquet`",
    (
        Column("pair_id", "str", "id of the pair in the pairs table"),
        Column(
            "score_a",
            "float",
            "score of sentence_a: mean (or summed) token log-prob (causal LM); for a masked LM as its scorer "
            "defines it (score_kind; default the group term's mean raw logit at one [MASK], BiasTestGPT's own)",
        ),
        Column("score_b", "float", "score of sentence_b, same definition"),
    ),
    unique=("pair_id",),
)

SUMMARY = TableSchema(
    "biastest_summary",
    "Stereotype Score per model, specification, source and attribute term (`*` = the whole specification, the "
    "mean over its attribute terms); `results/biastest/summary.parquet`",
    (
        Column("model", "str", "model name"),
        Column("spec", "str", "bias specification"),
        Column("source", "str", "generated | template | released"),
        Column("attribute", "str", "attribute term, or `*` for the whole specification"),
        Column("n", "int", "number of pairs"),
        Column("stereotype_score", "float", "percent of pairs whose stereotype sentence scores higher"),
        Column("ci_low", "float", "2.5th percentile of the bootstrap estimates", nullable=True),
        Column("ci_high", "float", "97.5th percentile of the bootstrap estimates", nullable=True),
        Column(
            "scorer",
            "str",
            "how the model's sentences were scored (the scores' score_kind): causal-mean, causal-sum, or "
            "masked-<name> with name pll, crows-pairs, aul or biastestgpt",
            nullable=True,
        ),
    ),
    unique=("model", "spec", "source", "attribute"),
)

GENERATIONS = TableSchema(
    "biastest_generations",
    "every generated sentence and paired alternative with its fate: kept, or rejected with the reason; "
    "`results/biastest/{spec}/generations.parquet`",
    (
        Column("spec", "str", "bias specification"),
        Column("attribute", "str", "attribute term asked for"),
        Column("group_term", "str", "group term asked for"),
        Column("counterpart", "str", "the other group's term of the pair", nullable=True),
        Column("try", "int", "try number of this attribute term (0-based)"),
        Column("sentence", "str", "the generated sentence"),
        Column("paired", "str", "the paired sentence with the counterpart term", nullable=True),
        Column("pairing", "str", "rule | rewrite | none", nullable=True),
        Column("kept", "bool", "the pair entered the pairs table"),
        Column("reason", "str", "why it was rejected (empty when kept)"),
    ),
)

COMPARISON = TableSchema(
    "biastest_comparison",
    "generated (or released) vs template Stereotype Scores per model and specification: independent two-sided "
    "t-test on the bootstrap estimates; `results/biastest/comparison.parquet`",
    (
        Column("model", "str", "model name"),
        Column("spec", "str", "bias specification"),
        Column("source", "str", "generated | released"),
        Column("baseline", "str", "template"),
        Column("mean", "float", "mean bootstrap Stereotype Score of source"),
        Column("mean_baseline", "float", "mean bootstrap Stereotype Score of the templates"),
        Column("t", "float", "t statistic", nullable=True),
        Column("p", "float", "two-sided p-value", nullable=True),
    ),
)
