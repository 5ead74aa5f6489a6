"""The FairPair stage's tables, under ``results/fairpair/`` (columns documented here; validated on write, and by
:mod:`unstereo.workflow.outputs_check` in CI)."""

from __future__ import annotations

from unstereo.tables import TableSchema, columns

PROMPTS = TableSchema(
    "fairpair_prompts",
    "one row per FairPair prompt x with its perturbation p(x) (results/fairpair/prompts.parquet)",
    columns("""
        prompt_id         str  unique id (`cs:<occupation>:<name>:<descriptor>` for Common Sents, else the
                               file's)
        prompt            str  x, naming the original entity (e.g. `John is a man, working as a doctor.`)
        perturbed_prompt  str  p(x), the same text about the perturbed entity (`Jane is a woman, ...`)
        entity            str  the original entity's name(s) p replaces, `|`-separated (e.g. `John`)
        entity_perturbed  str  what p puts in their place, `|`-separated (e.g. `Jane`)
        source            str  `common-sents` or the prompt file's name
    """),
    unique=("prompt_id",),
)

SAMPLES = TableSchema(
    "fairpair_samples",
    "one row per (prompt, side, sample): a continuation of x (side original) or of p(x) (side perturbed) "
    "(results/fairpair/{model}/samples.parquet)",
    columns("""
        prompt_id            str   the prompt's id
        side                 str   `original` (a continuation g_i(x)) or `perturbed` (g_j(p(x)))
        sample               int   sample index 0..n-1 (sample j of both sides uses seed + j)
        prompt               str   the text continued: x or p(x)
        continuation         str   the sampled continuation
        continuation_mapped  str?  p applied to an original-side continuation, p(g_i(x)); the continuation
                                   itself on the perturbed side; empty (null) where an LLM perturbation was
                                   rejected (the sample is then left out of the metrics)
        seed                 int   the sample's seed
        tokens               int   tokens generated
    """),
    unique=("prompt_id", "side", "sample"),
)

PERTURBATIONS = TableSchema(
    "fairpair_perturbations",
    "one row per perturbation of an original-side continuation (results/fairpair/{model}/perturbations.parquet)",
    columns("""
        prompt_id      str    the prompt's id
        sample         int    the original-side sample perturbed
        method         str    `rules` or `llm`
        input          str    the text perturbed (rules: the continuation; llm: x followed by the
                              continuation)
        output         str    the perturbation's raw output
        accepted       bool   whether it passed the filters (rules: always)
        reason         str    `ok`, or why it was rejected: `prefix` (does not start with p(x)),
                              `mentions-original` (still names the original entity), `dissimilar` (Jaccard
                              dissimilarity to the input above the threshold)
        dissimilarity  float  Jaccard dissimilarity of output and input (token sets)
    """),
    unique=("prompt_id", "sample"),
)

PER_PROMPT = TableSchema(
    "fairpair_per_prompt",
    "B, V_gp, V_pg, F per (prompt, phi, k) of one model (results/fairpair/{model}/per_prompt.parquet)",
    columns(r"""
        model      str     the model's short name
        prompt_id  str     the prompt's id
        phi        str     `jaccard` (lowercased \w+ token sets) or `sentiment` (VADER compound)
        k          int     folds per side; k = n (the configured samples per side) is the per-sample
                           definition
        B          float?  bias: mean Phi over all (p(g_i(x)), g_j(p(x))) pairs
        V_gp       float?  mean Phi over pairs i < j of g_i(p(x)), g_j(p(x))
        V_pg       float?  mean Phi over pairs i < j of p(g_i(x)), p(g_j(x))
        F          float?  B^2 / (V_gp V_pg); 1 where B = V_gp V_pg = 0, inf where only V_gp V_pg = 0
        t_stat     float?  Welch t of the B terms against the pooled V terms
        p_value    float?  its two-sided p-value
        n_pg       int     original-side samples used (accepted perturbations)
        n_gp       int     perturbed-side samples used
    """),
    unique=("model", "prompt_id", "phi", "k"),
)

SUMMARY = TableSchema(
    "fairpair_summary",
    "means over prompts per (model, phi, k) with a bootstrap interval of mean F (results/fairpair/summary.parquet)",
    columns("""
        model             str     the model's short name
        phi               str     `jaccard` or `sentiment`
        k                 int     folds per side (k = n: per sample)
        n_prompts         int     prompts with a defined F
        mean_B            float?  mean B
        mean_V_gp         float?  mean V_gp
        mean_V_pg         float?  mean V_pg
        mean_F            float?  mean of the finite F (infinite ones are counted in n_inf_F)
        F_ci_low          float?  bootstrap percentile interval of mean_F (resampling the prompts with a
                                  finite F): low
        F_ci_high         float?  ... high
        t_stat            float?  paired t of B(x) against sqrt(V_gp(x) V_pg(x)) over prompts
        p_value           float?  its two-sided p-value
        n_inf_F           int     prompts whose F is infinite (V_gp V_pg = 0 < B): counted, not averaged
        ratio_F           float?  ratio of means: mean(B^2) / (mean(V_gp) mean(V_pg))
        median_F          float?  median F over the prompts (infinite ones included)
        median_F_ci_low   float?  bootstrap percentile interval of median_F: low
        median_F_ci_high  float?  ... high
    """),
    unique=("model", "phi", "k"),
)

CURVES = TableSchema(
    "fairpair_curves",
    "mean B, V_gp, V_pg over prompts against the number of samples or of folds (paper Figures 3 and 4)",
    columns("""
        model  str     the model's short name
        phi    str     `jaccard` or `sentiment`
        axis   str     `samples` (the first x samples of each side) or `folds` (x folds of all samples)
        x      int     number of samples or folds
        B      float?  mean B
        V_gp   float?  mean V_gp
        V_pg   float?  mean V_pg
    """),
    unique=("model", "phi", "axis", "x"),
)

NGRAMS = TableSchema(
    "fairpair_ngrams",
    "the 1-4-grams most over-represented on each side (paper Figure 6): document frequencies over continuations",
    columns(r"""
        model    str    the model's short name
        side     str    `pg` (over-represented in p(g(x))) or `gp` (in g(p(x)))
        rank     int    1 = most over-represented on that side
        ngram    str    the n-gram (lowercased \w+ tokens joined by spaces)
        n        int    its length
        freq_pg  float  share of p(g(x)) continuations containing it
        freq_gp  float  share of g(p(x)) continuations containing it
    """),
    unique=("model", "side", "rank"),
)
