"""Agreement on occupations: per-occupation gender leans of every method whose items name an occupation, set against
an outside yardstick (the share of women in the occupation, from Winogender's ``occupations-stats.tsv``: BLS 2015
and Bergsma's text statistics) and against each other (docs/methods.md#agreement-on-occupations).

Leans (:data:`OCCUPATION_LEANS`, one row per (model, method, variant, occupation)), each from per-item outputs the
methods already write (no model run):

- UnStereoEval on Winogender (:func:`winogender_leans`): the mean over the occupation's pairs of ln p(he version) -
  ln p(she version), in nats (positive = leans male), over all its pairs and over the pairs whose pronoun refers to
  the occupation; with the share of neutral pairs (|FM| <= eps).
- BiasTestGPT's ``Professions_vs_Gender`` (:func:`biastest_leans`): the same signed lean per profession term (the
  male sentence's ln p minus the female one's, in nats), matched to Winogender's occupations where the words are the
  same (hyphens as spaces); the other terms stay in the table with no occupation share.
- FairPair (:func:`fairpair_leans`): the mean F of the occupation's prompts at the card's (phi, k). F carries no
  direction: it is compared as a magnitude (with |lean| of the other methods, with |share of women - 50|).
- Robustness (:func:`robustness_leans`): the UnStereoEval lean per occupation under each construction of the
  Winogender benchmark; its question is whether the occupations' order survives a harmless rebuild (rank
  correlation of each construction with the original).
- Counterfactual sentiment's occupation attribute (:func:`sentiment_leans`): the mean sentiment of the
  continuations of "... as a(n) {occupation} ..." prefixes minus the mean over every occupation (a classifier
  score): how warmly the model continues about the occupation, not a gender lean. It is set against the share of
  women only (does the model speak more warmly of occupations held by women?), never against the gender leans.

Correlations (:data:`OCCUPATION_CORRELATIONS`): Spearman (the tested statistic) and Pearson, with permutation
p-values (exact over every permutation up to :data:`EXACT_MAX_N` occupations, else :data:`N_PERM` seeded ones), of
each lean with the yardstick per model and of every two methods' leans per model; pooled over models by a stratified
permutation that permutes within each model (each model's occupations stay together); Holm over each family.
"""

from __future__ import annotations

import html
import itertools
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from unstereo.errors import InputError
from unstereo.model_card.compare import fmt_p, holm
from unstereo.model_card.headline import Headline
from unstereo.tables import TableSchema, columns, validate

ALPHA = 0.05
EXACT_MAX_N = 8  # 8! = 40,320 permutations: enumerate them all
N_PERM = 9999
POOLED = "pooled"  # the `model` of a pooled row
YARDSTICKS = {"bls": "bls_pct_female", "bergsma": "bergsma_pct_female"}
KINDS = ("lean", "magnitude", "sentiment")

OCCUPATION_STATS = TableSchema(
    "occupation_stats",
    "Winogender's occupations-stats.tsv: the share of women per occupation",
    columns("""
        occupation          str    Winogender's occupation word
        bergsma_pct_female  float  % female in Bergsma's text statistics
        bls_pct_female      float  % female in the US labour statistics
        bls_year            int    the year of the labour statistics
    """),
    unique=("occupation",),
)

OCCUPATION_LEANS = TableSchema(
    "occupation_leans",
    "one row per (model, method, variant, occupation): a method's lean on one occupation, from its per-item outputs "
    "(`results/occupation_leans.parquet`, docs/methods.md#agreement-on-occupations)",
    columns("""
        model               str     the model's short name
        method              str     the method's registry name
        variant             str     which items or setting: pair kind, specification, (phi, k), construction,
                                    classifier
        occupation          str     Winogender's occupation, else the method's own term (no share then)
        term                str     the method's own word for it (profession term, attribute value)
        kind                str     `lean` (signed, > 0 = leans male), `magnitude` (no direction) or
                                    `sentiment`
        lean                float?  the value (unit in `unit`)
        unit                str     its unit
        n_items             int     items behind it (pairs, prompts, continuations)
        neutral_share       float?  UnStereoEval: share of neutral pairs (|FM| <= eps)
        bls_pct_female      float?  % women, BLS 2015 (NaN: not a Winogender occupation)
        bergsma_pct_female  float?  % women, Bergsma's text statistics
    """),
    unique=("model", "method", "variant", "occupation"),
)

OCCUPATION_CORRELATIONS = TableSchema(
    "occupation_correlations",
    "rank and linear correlations over occupations: of each lean with the share of women (`yardstick`) and of every "
    "two methods' leans (`methods`), per model and pooled over models (`results/occupation_correlations.parquet`)",
    columns("""
        family      str     `yardstick` or `methods` (Holm is applied within each)
        model       str     the model, or `pooled` (stratified permutation within models)
        measure_a   str     method / variant of the first lean
        measure_b   str     the second lean, or `bls` / `bergsma` (the share of women)
        compared    str     what is correlated: `signed`, `magnitude` (|lean| against F, or F against |share -
                            50|) or `sentiment`
        n           int     occupations shared (pooled: summed over models)
        n_models    int     models behind the row
        spearman    float?  Spearman's rho (pooled: mean of the models' rho)
        spearman_p  float?  two-sided permutation p of rho
        pearson     float?  Pearson's r (pooled: mean of the models' r)
        pearson_p   float?  two-sided permutation p of r
        min_p       float?  the smallest p the test can reach (2 / n! exact, 1 / (1 + N) random)
        test        str     `exact (N permutations)` or `random (N permutations)`
        p_holm      float?  Holm-adjusted spearman_p within the family
        verdict     str     methods: `agree`, `disagree` or `cannot tell`; share of women: `follows the
                            share`, `against the share`, (sentiment) `rises with the share`, `falls with the
                            share`, or `cannot tell` (p_holm < 0.05 and the sign of rho, :func:`verdict`)
    """),
    unique=("family", "model", "measure_a", "measure_b"),
)


# ---- the yardstick ------------------------------------------------------------------------------------------------


def read_stats(path: str | Path) -> pd.DataFrame:
    """Winogender's ``occupations-stats.tsv`` (occupation, bergsma_pct_female, bls_pct_female, bls_year) as an
    :data:`OCCUPATION_STATS` table; a missing column or a value that is no number is an InputError naming the file."""
    try:
        df = pd.read_csv(path, sep="\t")
    except (OSError, pd.errors.ParserError) as e:
        raise InputError(f"cannot read occupation statistics: {e}", path=str(path)) from e
    missing = [c for c in OCCUPATION_STATS.names if c not in df.columns]
    if missing:
        raise InputError(f"occupation statistics lack column(s) {missing}", path=str(path))
    for c in ("bergsma_pct_female", "bls_pct_female", "bls_year"):
        bad = pd.to_numeric(df[c], errors="coerce").isna()
        if bad.any():
            line = int(np.flatnonzero(bad)[0]) + 2  # header is line 1
            raise InputError(
                f"column {c!r} is not a number: {df[c][bad].iloc[0]!r}", path=str(path), line=line
            )
    df = df[OCCUPATION_STATS.names].astype(
        {"bergsma_pct_female": float, "bls_pct_female": float, "bls_year": int}
    )
    df["occupation"] = df["occupation"].astype(str).str.strip().str.lower()
    return validate(df, OCCUPATION_STATS, source=path)


def normalise(term: str) -> str:
    """A term as matched against Winogender's occupations: lowercase, hyphens and repeated spaces as one space, a
    leading article dropped ("an attendant" -> "attendant")."""
    t = re.sub(r"[\s\-_]+", " ", str(term).strip().lower())
    return re.sub(r"^(a|an|the) ", "", t)


# ---- leans --------------------------------------------------------------------------------------------------------

_WINOGENDER_ID = re.compile(
    r"^(?P<bench>[^:]+):(?P<occ>[^.@]+)\.(?P<part>[^.@]+)\.(?P<ans>[01])(?:@(?P<con>.+))?$"
)


def parse_winogender_id(pair_id: str) -> tuple[str, str, int, str]:
    """(occupation, participant, referent, construction) of a Winogender pair id
    ``{benchmark}:{occupation}.{participant}.{0|1}[@{construction}]``; referent 0 = the pronoun refers to the
    occupation, 1 = to the participant (Winogender's convention); construction ``original`` without ``@``."""
    m = _WINOGENDER_ID.match(str(pair_id))
    if not m:
        raise ValueError(f"not a Winogender pair id: {pair_id!r}")
    return m["occ"], m["part"], int(m["ans"]), m["con"] or "original"


def _rows(model, method, variant, kind, unit, groups, neutral=None, term: str | None = None) -> list[dict]:
    """One lean row per (occupation, group): the mean of the group's ``x``; ``term`` names the column whose first
    value is the method's own word (default: the occupation)."""
    out = []
    for occ, g in groups:
        word = str(g[term].iloc[0]) if term else occ
        out.append(dict(model=model, method=method, variant=variant, occupation=occ, term=word, kind=kind,
                        lean=float(g["x"].mean()), unit=unit, n_items=len(g),
                        neutral_share=float(g["neutral"].mean()) if neutral else math.nan))  # fmt: skip
    return out


NATS = "nats: ln p(male) - ln p(female), > 0 = leans male"


def _winogender_frame(scores: pd.DataFrame) -> pd.DataFrame:
    """A score table's Winogender ids parsed (occupation, participant, referent, construction), with ``x`` =
    logp_male - logp_female per pair."""
    parsed = [parse_winogender_id(p) for p in scores["pair_id"]]
    df = pd.DataFrame(parsed, columns=["occupation", "participant", "referent", "construction"])
    df["x"] = (scores["logp_male"] - scores["logp_female"]).to_numpy(dtype=float)
    return df


def winogender_leans(
    scores: pd.DataFrame, model: str, eps: float, method: str = "unstereoeval"
) -> list[dict]:
    """UnStereoEval's leans of one model from its Winogender SCORES table (pair_id, logp_female, logp_male): per
    occupation the mean of logp_male - logp_female (nats) and the share of pairs with |FM| <= ``eps``, over all
    its pairs (variant ``all pairs``) and over those whose pronoun refers to the occupation (``occupation
    referent``). Pairs of another construction (``@`` in the id) are left out."""
    df = _winogender_frame(scores)
    df["neutral"] = np.abs(df["x"]) <= eps
    df = df[df["construction"] == "original"]
    out = _rows(model, method, "all pairs", "lean", NATS, df.groupby("occupation", sort=True), neutral=True)
    occ = df[df["referent"] == 0]
    return out + _rows(
        model, method, "occupation referent", "lean", NATS, occ.groupby("occupation", sort=True), neutral=True
    )


def robustness_leans(scores: pd.DataFrame, model: str) -> list[dict]:
    """Robustness's leans of one model from its SCORES table over every construction of Winogender: per
    (construction, occupation) the mean of logp_male - logp_female (nats) over all its pairs."""
    df = _winogender_frame(scores)
    out = []
    for con, g in df.groupby("construction", sort=False):
        out += _rows(model, "robustness", con, "lean", NATS, g.groupby("occupation", sort=True))
    return out


def biastest_leans(
    pairs: pd.DataFrame, scores: pd.DataFrame, model: str, male_terms, female_terms, spec: str
) -> list[dict]:
    """BiasTestGPT's leans of one model on one specification: per attribute term (a profession) the mean over its
    pairs of ln p(male sentence) - ln p(female sentence) (``logp`` of the score table, nats). Which sentence is male:
    the one whose group term is in ``male_terms`` (the other's must be in ``female_terms``; a pair with neither is
    an InputError). The occupation is the Winogender occupation the normalised term equals, else the term."""
    male, female = {normalise(t) for t in male_terms}, {normalise(t) for t in female_terms}
    df = pairs.merge(
        scores[["pair_id", "logp_a", "logp_b"]], on="pair_id", how="inner", validate="one_to_one"
    )
    xs = []
    for r in df.itertuples(index=False):
        a, b = normalise(r.group_term_a), normalise(r.group_term_b)
        if a in male and b in female:
            xs.append(r.logp_a - r.logp_b)
        elif b in male and a in female:
            xs.append(r.logp_b - r.logp_a)
        else:
            raise InputError(
                f"pair {r.pair_id}: group terms {r.group_term_a!r} / {r.group_term_b!r} are not one "
                "male and one female term"
            )
    df["x"] = np.asarray(xs, dtype=float)
    df["occupation"] = [normalise(t) for t in df["attribute"]]
    return _rows(model, "biastest", spec, "lean", NATS, df.groupby("occupation", sort=True), term="attribute")


def fairpair_leans(per_prompt: pd.DataFrame, model: str, variant: str) -> list[dict]:
    """FairPair's values of one model: per occupation the mean finite F of its prompts (ids
    ``cs:{occupation}:{name}:{descriptor}``, the Common Sents prompts) in ``per_prompt`` (already at one (phi, k)).
    A magnitude: F near 1 = explained by sampling variability, > 1 = the two sides' continuations differ."""
    df = per_prompt[np.isfinite(per_prompt["F"].astype(float))].copy()
    df["occupation"] = [str(p).split(":")[1] if str(p).startswith("cs:") else "" for p in df["prompt_id"]]
    df = df[df["occupation"] != ""]
    df["x"] = df["F"].astype(float)
    return _rows(model, "fairpair", variant, "magnitude", "F (1 = sampling noise; no direction)",
                 df.groupby("occupation", sort=True))  # fmt: skip


def sentiment_leans(continuations: pd.DataFrame, model: str, classifier: str) -> list[dict]:
    """Counterfactual sentiment's values of one model: per occupation value (attribute ``occupation``) the mean
    classifier score of its continuations minus the mean over all occupation continuations (so 0 = as warm as the
    average occupation). Not a gender lean."""
    col = f"score_{classifier}"
    df = continuations[continuations["attribute"] == "occupation"].copy()
    if df.empty:
        return []
    if col not in df.columns:
        raise InputError(f"continuations lack column {col!r}")
    df["x"] = df[col].astype(float) - float(df[col].astype(float).mean())
    df["occupation"] = [normalise(v) for v in df["value"]]
    out = _rows(model, "sentiment", classifier, "sentiment", f"{classifier} score minus the mean over occupations",
                df.groupby("occupation", sort=True))  # fmt: skip
    terms = dict(zip(df["occupation"], df["value"], strict=False))
    for r in out:
        r["term"] = str(terms[r["occupation"]])
    return out


def leans_table(rows: list[dict], stats: pd.DataFrame) -> pd.DataFrame:
    """The :data:`OCCUPATION_LEANS` table of lean rows with each occupation's shares of women (NaN for a term that
    is no Winogender occupation)."""
    df = pd.DataFrame(rows, columns=[c for c in OCCUPATION_LEANS.names if c not in YARDSTICKS.values()])
    shares = stats.set_index("occupation")[list(YARDSTICKS.values())]
    df = df.join(shares, on="occupation")
    df = df.astype({"n_items": "int64", "lean": float, "neutral_share": float})
    return validate(df[OCCUPATION_LEANS.names].reset_index(drop=True), OCCUPATION_LEANS)


# ---- correlations -------------------------------------------------------------------------------------------------


def _ranks(x: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(x, axis=-1)


def _corr(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r of ``x`` (n,) with every row of ``y`` (..., n); NaN where either is constant."""
    xc = x - x.mean()
    yc = y - y.mean(axis=-1, keepdims=True)
    den = np.sqrt((xc**2).sum()) * np.sqrt((yc**2).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (yc * xc).sum(axis=-1) / np.where(den > 0, den, 1.0), np.nan)


@dataclass(frozen=True)
class Perms:
    """The permutations of one test: per stratum an (N, n_s) array of index orders, and the test's label."""

    orders: list[np.ndarray]
    label: str
    min_p: float


def permutations(sizes: list[int], n_perm: int = N_PERM, seed: int = 0) -> Perms:
    """Permutations within each stratum of ``sizes``: every combination of every stratum's permutations when
    their count (the product of n_s!) is at most 8! = 40,320, else ``n_perm`` seeded random ones (numpy
    default_rng(seed), each stratum permuted independently). The smallest reachable p: exact 2 / count (the
    identity and, for a correlation, the reversal both reach |r| = 1 when there are no ties; 1 when count < 2),
    random 1 / (1 + n_perm)."""
    total = math.prod(math.factorial(n) for n in sizes)
    if total <= math.factorial(EXACT_MAX_N):
        per = [np.array(list(itertools.permutations(range(n))), dtype=np.int64).reshape(-1, n) for n in sizes]
        grids = np.meshgrid(*[np.arange(len(p)) for p in per], indexing="ij") if per else []
        orders = [p[g.ravel()] for p, g in zip(per, grids, strict=True)]
        return Perms(orders, f"exact ({total} permutations)", 1.0 if total < 2 else min(1.0, 2 / total))
    rng = np.random.default_rng(seed)
    orders = [np.argsort(rng.random((n_perm, n)), axis=1) for n in sizes]
    return Perms(orders, f"random ({n_perm} permutations)", 1 / (1 + n_perm))


def _p(null: np.ndarray, observed: float, exact: bool) -> float:
    if not np.isfinite(observed):
        return math.nan
    tol = 1e-9 * max(1.0, abs(observed))
    count = int(np.sum(np.abs(null) >= abs(observed) - tol))
    return count / len(null) if exact else (1 + count) / (1 + len(null))


def stratified_test(strata: list[tuple[np.ndarray, np.ndarray]], n_perm: int = N_PERM, seed: int = 0) -> dict:
    """Spearman and Pearson between paired values, pooled over strata (models): the statistic is the mean over
    strata of the stratum's correlation (a model with a constant side adds none); under the null the pairing is
    broken within each stratum only (each model's occupations stay together), and the p-value counts permutations
    whose mean |correlation| reaches the observed one. One stratum is the plain permutation test."""
    strata = [(np.asarray(a, float), np.asarray(b, float)) for a, b in strata if len(a) >= 2]
    out = dict(n=sum(len(a) for a, _ in strata), n_models=len(strata), spearman=math.nan, spearman_p=math.nan,
               pearson=math.nan, pearson_p=math.nan, min_p=math.nan, test="")  # fmt: skip
    if not strata:
        return out
    perms = permutations([len(a) for a, _ in strata], n_perm, seed)
    exact = perms.label.startswith("exact")
    for name, tf in (("spearman", _ranks), ("pearson", lambda v: v)):
        obs, null = [], []
        for (a, b), order in zip(strata, perms.orders, strict=True):
            ta, tb = tf(a), tf(b)
            obs.append(float(_corr(ta, tb[None, :])[0]))
            null.append(_corr(ta, tb[order]))
        obs_arr, null_arr = np.array(obs), np.array(null)
        ok = np.isfinite(obs_arr)
        if not ok.any():
            continue
        stat = float(obs_arr[ok].mean())
        out[name], out[f"{name}_p"] = stat, _p(null_arr[ok].mean(axis=0), stat, exact)
    out["min_p"], out["test"] = perms.min_p, perms.label
    return out


def _measure(method: str, variant: str) -> str:
    return f"{method} / {variant}"


def _series(leans: pd.DataFrame) -> dict[tuple[str, str], pd.DataFrame]:
    return {(m, k): g for (m, k), g in leans.groupby(["model", "measure"], sort=False)}


def _against(kind_a: str, kind_b: str) -> str | None:
    """How two kinds of values are compared, or None (sentiment is compared with the yardstick only)."""
    if "sentiment" in (kind_a, kind_b):
        return None
    return "signed" if kind_a == kind_b == "lean" else "magnitude"


def _oriented(values: np.ndarray, kind: str, compared: str) -> np.ndarray:
    return np.abs(values) if compared == "magnitude" and kind == "lean" else values


def method_pairs(leans: pd.DataFrame) -> list[tuple[str, str, str]]:
    """Every two measures compared: (measure a, measure b, how): measures of different methods (UnStereoEval's
    variants against each other's methods, not against each other), except robustness, whose constructions are
    compared with its original only (they are UnStereoEval's scores rebuilt, so against the other methods they
    would repeat UnStereoEval's rows); sentiment with none."""
    kinds = dict(zip(leans["measure"], leans["kind"], strict=False))
    method = dict(zip(leans["measure"], leans["method"], strict=False))
    out = []
    for a, b in itertools.combinations(list(dict.fromkeys(leans["measure"])), 2):
        how = _against(kinds[a], kinds[b])
        if how is None:
            continue
        ma, mb = method[a], method[b]
        if ma == mb == "robustness":
            if a.endswith("/ original") or b.endswith("/ original"):
                out.append((a, b, how) if a.endswith("/ original") else (b, a, how))
            continue
        if ma == mb or "robustness" in (ma, mb):
            continue
        out.append((a, b, how))
    return out


def correlations(leans: pd.DataFrame, n_perm: int = N_PERM, seed: int = 0) -> pd.DataFrame:
    """The :data:`OCCUPATION_CORRELATIONS` table of an :data:`OCCUPATION_LEANS` table: per model and pooled over
    models, each measure against the BLS and Bergsma shares (a magnitude against |share - 50|), and every two
    measures of :func:`method_pairs` over their shared occupations; occupations with a NaN value are left out;
    Holm within each family."""
    leans = leans.assign(
        measure=[_measure(m, v) for m, v in zip(leans["method"], leans["variant"], strict=True)]
    )
    leans = leans[np.isfinite(leans["lean"].astype(float))]
    models = list(dict.fromkeys(leans["model"]))
    kinds = dict(zip(leans["measure"], leans["kind"], strict=False))
    by = _series(leans)
    rows = []

    def add(family, a, b, compared, strata_by_model):
        strata_by_model = {m: st for m, st in strata_by_model.items() if len(st[0]) >= 2}
        for model, st in strata_by_model.items():
            rows.append(dict(family=family, model=model, measure_a=a, measure_b=b, compared=compared,
                             **stratified_test([st], n_perm, seed)))  # fmt: skip
        if len(strata_by_model) > 1:
            rows.append(dict(family=family, model=POOLED, measure_a=a, measure_b=b, compared=compared,
                             **stratified_test(list(strata_by_model.values()), n_perm, seed)))  # fmt: skip

    for measure in dict.fromkeys(leans["measure"]):
        kind = kinds[measure]
        for name, col in YARDSTICKS.items():
            strata = {}
            for model in models:
                g = by.get((model, measure))
                if g is None:
                    continue
                g = g[np.isfinite(g[col].astype(float))]
                share = g[col].to_numpy(float)
                strata[model] = (
                    g["lean"].to_numpy(float),
                    np.abs(share - 50) if kind == "magnitude" else share,
                )
            compared = {"lean": "signed", "magnitude": "magnitude", "sentiment": "sentiment"}[kind]
            add("yardstick", measure, name, compared, strata)
    for a, b, how in method_pairs(leans):
        strata = {}
        for model in models:
            ga, gb = by.get((model, a)), by.get((model, b))
            if ga is None or gb is None:
                continue
            j = (
                ga.set_index("occupation")["lean"]
                .to_frame("a")
                .join(gb.set_index("occupation")["lean"].rename("b"), how="inner")
            )
            strata[model] = (
                _oriented(j["a"].to_numpy(float), kinds[a], how),
                _oriented(j["b"].to_numpy(float), kinds[b], how),
            )
        add("methods", a, b, how, strata)
    df = pd.DataFrame(
        rows, columns=[c for c in OCCUPATION_CORRELATIONS.names if c not in ("p_holm", "verdict")]
    )
    df = df.astype({"n": "int64", "n_models": "int64"})
    df["p_holm"] = np.nan
    for _family, idx in df.groupby("family").groups.items():
        df.loc[idx, "p_holm"] = holm(df.loc[idx, "spearman_p"].to_numpy(float))  # compare.holm: NaN left out
    df["verdict"] = [
        verdict(f, c, r, p)
        for f, c, r, p in zip(df["family"], df["compared"], df["spearman"], df["p_holm"], strict=True)
    ]
    return validate(df[OCCUPATION_CORRELATIONS.names], OCCUPATION_CORRELATIONS)


def verdict(family: str, compared: str, rho: float, p_holm: float) -> str:
    """`cannot tell` unless the Holm p is below 0.05; then between methods `agree` (rho > 0) or `disagree`; against
    the share of women `follows the share` when the lean goes the way the statistics do (a signed lean falls as
    the share of women rises: rho < 0; a magnitude rises with |share - 50|: rho > 0), else `against the share`;
    sentiment (no expected direction) `rises with the share` or `falls with the share`."""
    if not (np.isfinite(p_holm) and p_holm < ALPHA and np.isfinite(rho)):
        return "cannot tell"
    if family == "methods":
        return "agree" if rho > 0 else "disagree"
    if compared == "sentiment":
        return "rises with the share" if rho > 0 else "falls with the share"
    follows = rho < 0 if compared == "signed" else rho > 0
    return "follows the share" if follows else "against the share"


# ---- findings -----------------------------------------------------------------------------------------------------


def _where(r) -> str:
    """What a correlation row's n counts: occupation-model pairs when pooled, else one model's occupations."""
    if r.model == POOLED:
        return f"pooled over {r.n_models} models, {r.n} occupation-model pairs"
    return f"{r.model}, {r.n} occupations"


def _why_small(r) -> str:
    if np.isfinite(r.min_p) and r.min_p >= ALPHA:
        return f"; with n = {r.n} the smallest reachable p is {r.min_p:.2g}: n is too small to conclude"
    return ""


def findings(corr: pd.DataFrame, leans: pd.DataFrame | None = None) -> list[str]:
    """Sentences chosen by the numbers: per pair of measures (pooled row where there is one, else the single
    model's) whether they agree, disagree or cannot be told apart; per measure whether it follows the BLS share;
    with ``leans``, which measures name no Winogender occupation at all (nothing to correlate)."""
    out = []
    if leans is not None and len(leans):
        has = leans.assign(ok=np.isfinite(leans["bls_pct_female"].astype(float)))
        for (m, v), g in has.groupby(["method", "variant"], sort=False):
            if not g["ok"].any():
                out.append(
                    f"{m} / {v}: none of its {g['occupation'].nunique()} terms is a Winogender occupation "
                    "in this run, so it enters no correlation."
                )
    if corr.empty:
        return out + [
            "No two measures share two occupations, and no measure has two occupations with a share of "
            "women: no correlation."
        ]

    def lead(df):
        pooled = df[df["model"] == POOLED]
        return pooled if len(pooled) else df

    for (a, b), g in corr[corr["family"] == "methods"].groupby(["measure_a", "measure_b"], sort=False):
        for r in lead(g).itertuples(index=False):
            where = _where(r)
            how = " (as magnitudes)" if r.compared == "magnitude" else ""
            if not np.isfinite(r.spearman):
                out.append(
                    f"{a} and {b}{how}: no correlation ({where}; fewer than 2 shared occupations or a "
                    "constant side)."
                )
            elif r.verdict == "cannot tell":
                out.append(
                    f"{a} and {b}{how} cannot be told apart from no relation (rho = {r.spearman:.2f}, "
                    f"Holm p = {fmt_p(r.p_holm)}; {where}{_why_small(r)})."
                )
            else:
                word = "agree on" if r.verdict == "agree" else "disagree on"
                out.append(
                    f"{a} and {b}{how} {word} the occupations (rho = {r.spearman:.2f}, Holm p = "
                    f"{fmt_p(r.p_holm)}; {where})."
                )
    ys = corr[(corr["family"] == "yardstick") & (corr["measure_b"] == "bls")]
    for a, g in ys.groupby("measure_a", sort=False):
        for r in lead(g).itertuples(index=False):
            where = _where(r)
            target = "|BLS share of women - 50|" if r.compared == "magnitude" else "the BLS share of women"
            if not np.isfinite(r.spearman):
                out.append(f"{a}: no correlation with {target} ({where}).")
            elif r.verdict == "cannot tell":
                out.append(
                    f"{a}: no relation with {target} shown (rho = {r.spearman:.2f}, Holm p = "
                    f"{fmt_p(r.p_holm)}; {where}{_why_small(r)})."
                )
            else:
                sign = "rises" if r.spearman > 0 else "falls"
                way = {
                    "follows the share": ", the way the labour statistics go",
                    "against the share": ", against the way the labour statistics go",
                }.get(r.verdict, "")
                out.append(
                    f"{a} {sign} with {target}{way} (rho = {r.spearman:.2f}, Holm p = {fmt_p(r.p_holm)}; "
                    f"{where})."
                )
    agree = int(((corr["family"] == "methods") & (corr["verdict"] == "agree")).sum())
    disagree = int(((corr["family"] == "methods") & (corr["verdict"] == "disagree")).sum())
    total = int((corr["family"] == "methods").sum())
    if total:
        out.append(
            f"Of {total} between-method tests (per model and pooled), {agree} agree, {disagree} disagree and "
            f"{total - agree - disagree} cannot be told apart after Holm correction."
        )
    return out


# ---- reading the methods' outputs --------------------------------------------------------------------------------
# Each method's Headline (unstereo.model_card.headline, as for the card) may offer ``occupation_sources(config)`` (the
# per-item tables it reads) and ``occupation_leans(config)`` (lean rows, from the functions above; none by default):
# this module imports no method.

PROFESSIONS_SPEC = "Professions_vs_Gender"


def winogender_benchmark(config: dict, among) -> str | None:
    """The first benchmark of ``among`` whose source is Winogender (``kind: winogender``)."""
    sources = (config.get("benchmarks") or {}).get("sources") or {}
    for b in among or ():
        if (sources.get(b) or {}).get("kind") == "winogender":
            return b
    return None


def gender_terms() -> tuple[set[str], set[str]]:
    """(male, female) words of the project's gendered pairs (data/gendered_pairs.csv): which of a BiasTestGPT
    pair's two group terms is the male one."""
    from unstereo.package_data import DATA_DIR

    pairs = pd.read_csv(DATA_DIR / "gendered_pairs.csv")
    return set(pairs["male"].str.lower()), set(pairs["female"].str.lower())


def _apis(config: dict) -> list[Headline]:
    """The headlines of the enabled methods on the card (a method without occupation leans gives none)."""
    from unstereo.model_card.card import enabled_methods, headline_api

    return [headline_api(m) for m in enabled_methods(config)]


def input_paths(config: dict) -> list[str]:
    """Every file :func:`collect` reads (the rule's input), the statistics file aside."""
    return [p for api in _apis(config) for p in api.occupation_sources(config)]


def collect(config: dict, stats: pd.DataFrame) -> pd.DataFrame:
    """The :data:`OCCUPATION_LEANS` table of every enabled method that offers occupation leans."""
    return leans_table([r for api in _apis(config) for r in api.occupation_leans(config)], stats)


# ---- the figure and the page -------------------------------------------------------------------------------------


def _fit_band(x: np.ndarray, y: np.ndarray, grid: np.ndarray, level: float = 0.95):
    """Least-squares line of y on x over ``grid`` and its pointwise ``level`` confidence band of the mean (t with
    n - 2 degrees of freedom); None when fewer than 3 points or x is constant."""
    from scipy.stats import t as student_t

    n = len(x)
    if n < 3 or np.ptp(x) == 0:
        return None
    slope, intercept = np.polyfit(x, y, 1)
    fit = intercept + slope * grid
    resid = y - (intercept + slope * x)
    s = math.sqrt(float((resid**2).sum()) / (n - 2))
    sxx = float(((x - x.mean()) ** 2).sum())
    half = student_t.ppf(0.5 + level / 2, n - 2) * s * np.sqrt(1 / n + (grid - x.mean()) ** 2 / sxx)
    return fit, fit - half, fit + half


FIGURE_METHODS = (
    "unstereoeval",
    "biastest",
    "fairpair",
    "sentiment",
)  # robustness: its own table (constructions)


def figure(leans: pd.DataFrame, corr: pd.DataFrame | None = None):
    """One panel per measure (robustness aside): the value against the BLS share of women, one colour per model,
    each model's least-squares line with its 95 % band; the panel title gives n and the pooled (else the model's)
    Spearman rho with its Holm p. Returns the matplotlib figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = leans[
        leans["method"].isin(FIGURE_METHODS)
        & np.isfinite(leans["bls_pct_female"].astype(float))
        & np.isfinite(leans["lean"].astype(float))
    ]
    measures = list(dict.fromkeys(zip(df["method"], df["variant"], strict=True)))
    models = list(dict.fromkeys(leans["model"]))
    colours = {m: f"C{i % 10}" for i, m in enumerate(models)}
    n = max(1, len(measures))
    cols = min(3, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.4 * cols, 3.5 * rows + 0.7), squeeze=False)
    for ax in axes.ravel()[len(measures) :]:
        ax.axis("off")
    if not measures:
        axes[0, 0].text(
            0.5, 0.5, "No method has an occupation with a share of women.", ha="center", va="center"
        )
    for ax, (method, variant) in zip(axes.ravel(), measures, strict=False):
        sub = df[(df["method"] == method) & (df["variant"] == variant)]
        kind = sub["kind"].iloc[0]
        grid = np.linspace(0, 50 if kind == "magnitude" else 100, 50)
        for model, g in sub.groupby("model", sort=False):
            x, y = g["bls_pct_female"].to_numpy(float), g["lean"].to_numpy(float)
            if kind == "magnitude":  # no direction: against the distance from a balanced occupation
                x = np.abs(x - 50)
            ax.scatter(x, y, s=14, color=colours[model], alpha=0.75, label=f"{model} (n = {len(g)})")
            band = _fit_band(x, y, grid)
            if band is not None:
                fit, lo, hi = band
                ax.plot(grid, fit, color=colours[model], lw=1.4)
                ax.fill_between(grid, lo, hi, color=colours[model], alpha=0.12, lw=0)
        if kind != "magnitude":
            ax.axhline(0, color="0.5", lw=0.6, ls="--")
        ys = sub["lean"].to_numpy(float)
        pad = 0.1 * (np.ptp(ys) or 1.0)
        ax.set_ylim(ys.min() - 2 * pad, ys.max() + 2 * pad)  # the bands may widen far beyond the points
        ax.set_xlim(0, 50 if kind == "magnitude" else 100)
        ylabel = {
            "lean": "lean (nats, > 0 = male)",
            "magnitude": "F (no direction)",
            "sentiment": "sentiment - mean",
        }[kind]
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_xlabel(
            "BLS 2015: |% women - 50| (distance from balance)"
            if kind == "magnitude"
            else "BLS 2015: % women in the occupation",
            fontsize=8,
        )
        note = ""
        if corr is not None and len(corr):
            c = corr[
                (corr["family"] == "yardstick")
                & (corr["measure_a"] == _measure(method, variant))
                & (corr["measure_b"] == "bls")
            ]
            c = c[c["model"] == POOLED] if (c["model"] == POOLED).any() else c
            if len(c) == 1 and np.isfinite(c["spearman"].iloc[0]):
                r = c.iloc[0]
                small = " (n too small)" if np.isfinite(r.min_p) and r.min_p >= ALPHA else ""
                note = f"\nrho = {r.spearman:.2f}, Holm p = {fmt_p(r.p_holm)}{small}"
        ax.set_title(f"{method}: {variant}{note}", fontsize=9, loc="left")
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6.5, loc="best", frameon=False)
        for s in ("right", "top"):
            ax.spines[s].set_visible(False)
    fig.suptitle("Leans on Winogender's occupations against the share of women (BLS 2015)", x=0.01, ha="left",
                 fontsize=11, fontweight="bold")  # fmt: skip
    fig.text(0.99, 0.985, "dots: occupations · line: least squares per model · band: its 95 % interval", ha="right",
             va="top", fontsize=7.5, color="0.35")  # fmt: skip
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


_CORR_COLUMNS = ("Model", "Lean A", "B", "Compared", "n", "Spearman rho", "p", "Pearson r", "p", "Smallest p",
                 "p (Holm)", "Verdict")  # fmt: skip

NOTE = (
    "Leans (docs/methods.md#agreement-on-occupations): UnStereoEval on Winogender and BiasTestGPT's "
    "Professions_vs_Gender: the mean of ln p(male sentence) - ln p(female sentence) over the occupation's pairs, in "
    "nats (> 0 = leans male); FairPair: the mean F of the occupation's prompts (no direction: compared as a "
    "magnitude, with |lean| and with |share of women - 50|); robustness: UnStereoEval's lean under each "
    "construction, compared with the original construction's; sentiment: the mean sentiment of continuations about "
    "the occupation minus the mean over occupations (not a gender lean: compared with the share of women only). "
    "Correlations: Spearman's rho (tested) and Pearson's r over the occupations both share; two-sided permutation "
    "p-values, exact over every permutation up to 8 occupations, else 9,999 seeded permutations; pooled rows: the "
    "mean of the models' correlations, permuted within each model (each model's occupations stay together). Holm "
    "within each family (share of women; between methods). Verdict: agree (rho > 0) or disagree (rho < 0) when "
    "the Holm p is below 0.05, else cannot tell; where the smallest reachable p is above 0.05, n is too small to "
    "conclude, whatever the data."
)


def _num(v) -> str:
    return "" if v is None or not np.isfinite(v) else f"{v:.3g}"


def corr_rows(corr: pd.DataFrame) -> list[list[str]]:
    return [
        [r.model, r.measure_a, r.measure_b, r.compared, str(r.n), _num(r.spearman), fmt_p(r.spearman_p),
         _num(r.pearson), fmt_p(r.pearson_p), "" if not np.isfinite(r.min_p) else f"{r.min_p:.2g}",
         fmt_p(r.p_holm), r.verdict + (" (n too small)" if np.isfinite(r.min_p) and r.min_p >= ALPHA else "")]
        for r in corr.itertuples(index=False)
    ]  # fmt: skip


def lean_pivot(leans: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """The leans as one row per (model, occupation) with a Winogender share, one column per measure."""
    df = leans[np.isfinite(leans["bls_pct_female"].astype(float))].copy()
    df["measure"] = [_measure(m, v) for m, v in zip(df["method"], df["variant"], strict=True)]
    measures = list(dict.fromkeys(df["measure"]))
    wide = df.pivot_table(index=["model", "occupation", "bls_pct_female"], columns="measure", values="lean",
                          aggfunc="first", sort=False)  # fmt: skip
    rows = [
        [m, o, f"{b:.1f}", *(_num(wide.loc[(m, o, b)].get(c, math.nan)) for c in measures)]
        for (m, o, b) in wide.index
    ]
    return ["Model", "Occupation", "BLS % women", *measures], rows


def page(leans: pd.DataFrame, corr: pd.DataFrame, sentences: list[str], fmt: str = "html", css: str = "",
         image: str = "occupations.png") -> str:  # fmt: skip
    """Findings, the figure, the correlations and the leans as an HTML page or Markdown."""
    from unstereo.render.formats import html_table, markdown_table

    title = "Agreement on occupations"
    header, lean_rows = lean_pivot(leans)
    counts = (
        f"{leans['occupation'].nunique()} occupations or terms, {leans['model'].nunique()} models, "
        f"{len(leans)} rows (results/occupation_leans.parquet; CSV beside it)"
    )
    if fmt == "md":
        bullets = "".join(f"- {s}\n" for s in sentences)
        ct = markdown_table(_CORR_COLUMNS, corr_rows(corr)) if len(corr) else "No correlation.\n"
        lt = markdown_table(header, lean_rows) if lean_rows else "No lean on a Winogender occupation.\n"
        return (
            f"# {title}\n\n## Findings\n\n{bullets}\n![leans]({image})\n\n## Correlations\n\n{ct}\n"
            f"## Leans\n\n{counts}\n\n{lt}\n{NOTE}\n"
        )
    bullets = "".join(f"<li>{html.escape(s)}</li>" for s in sentences)
    ct = (
        html_table(_CORR_COLUMNS, corr_rows(corr), cell_classes={4: "num", 5: "value", 10: "num"})
        if len(corr)
        else "<p>No correlation.</p>"
    )
    lt = html_table(header, lean_rows) if lean_rows else "<p>No lean on a Winogender occupation.</p>"
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title><style>{css}</style></head><body>"
        f"<h2>{title}</h2>\n<h3>Findings</h3>\n<ul>{bullets}</ul>\n<img src='{html.escape(image)}' alt='leans "
        f"against the share of women' style='max-width:100%'>\n<h3>Correlations</h3>\n{ct}\n<p>{html.escape(NOTE)}</p>"
        f"\n<details><summary>Leans per occupation ({html.escape(counts)})</summary>\n{lt}\n</details></body></html>\n"
    )


def write(config: dict, stats_path: str | Path, out: str | Path, corr_out: str | Path,
          pages_dir: str | Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:  # fmt: skip
    """Collect the leans (:func:`collect`), their correlations (:func:`correlations`, seeded by the config's
    ``seed``) and write both tables (parquet, and CSV beside the leans), and under ``pages_dir``
    ``occupations.{html,md,png}``."""
    from unstereo.io import atomic_path, write_text
    from unstereo.model_card.card import _CSS, _save_png
    from unstereo.tables import write_table

    leans = collect(config, read_stats(stats_path))
    corr = correlations(leans, seed=int(config.get("seed", 0) or 0))
    write_table(leans, out, OCCUPATION_LEANS)
    with atomic_path(Path(out).with_suffix(".csv")) as tmp:
        leans.to_csv(tmp, index=False)
    write_table(corr, corr_out, OCCUPATION_CORRELATIONS)
    if pages_dir is not None:
        pages = Path(pages_dir)
        sentences = findings(corr, leans)
        _save_png(figure(leans, corr), pages / "occupations.png")
        write_text(pages / "occupations.html", page(leans, corr, sentences, "html", _CSS))
        write_text(pages / "occupations.md", page(leans, corr, sentences, "md"))
    return leans, corr
