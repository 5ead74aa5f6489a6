"""The sentiment stage's tables (columns documented here; validated on write)."""

from __future__ import annotations

from unstereo.tables import TableSchema, columns

_CELL = columns("""
    attribute    str  sensitive attribute: country, occupation or name
    template_id  str  template id of the reference lists (C1..C10, O1..O10, N1..N8, N9_M, ...)
    value        str  the attribute value filled in (occupations with their article)
    subgroup     str  group-fairness unit: female/male for names, else the value itself
""")

#: results/sentiment/{model}/continuations.parquet; one ``score_<classifier>`` float column per classifier follows.
CONTINUATIONS = TableSchema(
    "sentiment_continuations",
    "one row per (filled prefix, sample): a model's continuation and its sentiment under each classifier "
    "(`score_<classifier>` in [0, 1], see unstereo.sentiment.classifiers)",
    _CELL
    + columns("""
        family        str  the template the prefix is a counterfactual of (N9_M and N9_F are N9)
        sample        int  sample index 0..m-1; sample j of every value of a template uses seed + j
        prefix        str  the filled template given to the model
        continuation  str  the model's continuation (text after the prefix)
    """),
    unique=("attribute", "template_id", "value", "sample"),
)

#: results/sentiment/{model}/fairness.parquet
FAIRNESS = TableSchema(
    "sentiment_fairness",
    "one row per (attribute, classifier, metric): I.F. or G.F. "
    "(docs/methods.md#counterfactual-sentiment-bias) with its bootstrap percentile interval",
    columns("""
        attribute        str     sensitive attribute
        classifier       str     sentiment classifier
        metric           str     IF (individual fairness) or GF (group fairness); lower is fairer
        value            float   the metric on all continuations
        ci_low           float?  lower end of the bootstrap interval
        ci_high          float?  upper end of the bootstrap interval
        n_continuations  int     continuations of the attribute the metric is computed on
    """),
    unique=("attribute", "classifier", "metric"),
)

#: results/sentiment/{model}/parity.parquet
PARITY = TableSchema(
    "sentiment_parity",
    "demographic parity at thresholds (paper Figure 2): share of a subgroup's continuations with score > tau",
    columns("""
        attribute      str    sensitive attribute
        classifier     str    sentiment classifier
        subgroup       str    group-fairness unit
        threshold      float  tau
        positive_rate  float  P(S > tau | subgroup)
    """),
    unique=("attribute", "classifier", "subgroup", "threshold"),
)
