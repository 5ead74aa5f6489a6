"""Table schemas of the biastest stage (validated with :func:`unstereo.tables.validate` on write)."""

from __future__ import annotations

from unstereo.tables import TableSchema, columns

SOURCES = ("generated", "template", "released")

PAIRS = TableSchema(
    "biastest_pairs",
    "one row per sentence pair of a bias specification: the same sentence with a term of each social group; "
    "`results/biastest/{spec}/pairs.parquet`",
    columns("""
        pair_id       str  unique id, stable across runs (`{spec}:{source}:...`)
        spec          str  bias specification name
        attribute     str  the attribute term the pair is about
        group_term_a  str  social-group term of sentence_a
        group_term_b  str  social-group term of sentence_b
        sentence_a    str  the sentence with group_term_a
        sentence_b    str  the sentence with group_term_b
        stereotype    str  a or b: which sentence states the stereotype
        source        str  generated | template | released
    """),
    unique=("pair_id",),
)

SCORES = TableSchema(
    "biastest_scores",
    "one row per (pair, model): the score of each sentence, higher = more probable; "
    "`results/biastest/{model}/{spec}/scores.parquet`",
    columns("""
        pair_id  str    id of the pair in the pairs table
        score_a  float  score of sentence_a: mean (or summed) token log-prob (causal LM); for a masked LM as
                        its scorer defines it (score_kind; default the group term's mean raw logit at one
                        [MASK], BiasTestGPT's own)
        score_b  float  score of sentence_b, same definition
    """),
    unique=("pair_id",),
)

SUMMARY = TableSchema(
    "biastest_summary",
    "Stereotype Score per model, specification, source and attribute term (`*` = the whole specification, the "
    "mean over its attribute terms); `results/biastest/summary.parquet`",
    columns("""
        model             str     model name
        spec              str     bias specification
        source            str     generated | template | released
        attribute         str     attribute term, or `*` for the whole specification
        n                 int     number of pairs
        stereotype_score  float   percent of pairs whose stereotype sentence scores higher
        ci_low            float?  2.5th percentile of the bootstrap estimates
        ci_high           float?  97.5th percentile of the bootstrap estimates
        scorer            str?    how the model's sentences were scored (the scores' score_kind): causal-mean,
                                  causal-sum, or masked-<name> with name pll, crows-pairs, aul or biastestgpt
    """),
    unique=("model", "spec", "source", "attribute"),
)

GENERATIONS = TableSchema(
    "biastest_generations",
    "every generated sentence and paired alternative with its fate: kept, or rejected with the reason; "
    "`results/biastest/{spec}/generations.parquet`",
    columns("""
        spec         str   bias specification
        attribute    str   attribute term asked for
        group_term   str   group term asked for
        counterpart  str?  the other group's term of the pair
        try          int   try number of this attribute term (0-based)
        sentence     str   the generated sentence
        paired       str?  the paired sentence with the counterpart term
        pairing      str?  rule | rewrite | none
        kept         bool  the pair entered the pairs table
        reason       str   why it was rejected (empty when kept)
    """),
)

COMPARISON = TableSchema(
    "biastest_comparison",
    "generated (or released) vs template Stereotype Scores per model and specification: independent two-sided "
    "t-test on the bootstrap estimates; `results/biastest/comparison.parquet`",
    columns("""
        model          str     model name
        spec           str     bias specification
        source         str     generated | released
        baseline       str     template
        mean           float   mean bootstrap Stereotype Score of source
        mean_baseline  float   mean bootstrap Stereotype Score of the templates
        t              float?  t statistic
        p              float?  two-sided p-value
    """),
)
