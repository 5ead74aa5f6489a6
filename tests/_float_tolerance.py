"""Tolerances of the golden and cross-path numeric tests, derived from float32's rounding.

A float32 forward pass computes every logit through reductions (matrix products, layer norms, attention and softmax
sums) whose order depends on the CPU: its vector width (4, 8 or 16 lanes), FMA, the thread count, and the kernels
ATen, oneDNN and MKL pick for it. Each order rounds differently, so the same model gives each logit to within a few
units of float32's epsilon (``F32_EPS`` = 2**-23 = 1.19e-7) relative to the magnitudes entering the reductions, and a
log-probability ``ln p = z_t - logsumexp(z)`` carries that error. A sum of n log-probabilities of one sign (a
sentence score) has error at most (per-term error x the sum's size) + (n float32 additions x the sum's size): the
terms' errors add up, and their sizes add up to the sum's.

Golden values were taken on one CPU kind (AMD Zen 5, AVX-512); a tolerance tighter than this error fails on another
(a Xeon got -25.870601415634155 for the golden -25.87058711051941 of a sum of 6 log-probs, off by 1.43e-5
with a tolerance of 1e-5). ``scripts/test-cpu-kinds.sh`` runs tests under emulated CPU kinds (scalar, AVX2,
AVX-512 on one thread); the largest difference it showed between kinds was 23 eps relative to the sum (4.6e-5 on
-16.665, a sum of 4 log-probs of the 2-layer random BERT of tests/scoring/test_scoring_masked.py, scalar kind against the
golden). ``PER_TERM_EPS`` = 128 leaves a factor above 5 over that for kinds not emulated (other FMA contraction,
MKL's code path on Intel), and the tolerances stay far below the differences the tests tell apart (a whole
log-probability, >= 0.01 nat).

The other numeric tests were audited the same way and keep their tolerances for the reason given here:
- float64 arithmetic on hand-made inputs (metrics, PMI and delta, fairness, model card, bootstrap): pytest.approx's
  default relative 1e-6 is about 4.5e9 float64 eps, far above the rounding of a few float64 operations and far below
  any difference of definition; the same computation order on every CPU kind (numpy's float64 sums of a few terms);
- values compared with a printed reference (the released MaxPMI words printed with 8 decimals: atol 1e-7; FairPair's
  ratio printed with 5: abs 1e-5): half a unit of the last printed decimal, rounded up;
- the int8 product's 2e-3 (tests/engine/test_int8.py): int8 quantisation error, not float rounding (its test says how);
- the debiasing fine-tune's rel 1e-4 (a mean over a few hundred float32 terms) and a resumed run's parameters
  (atol 1e-6, the same steps reloaded from a checkpoint): the reasons in tests/finetune/test_finetune_regularised.py.
"""

from __future__ import annotations

F32_EPS = 2.0**-23  # float32 machine epsilon, 1.19e-7

#: The error of one float32 log-probability of the tests' tiny models across CPU kinds, in units of F32_EPS relative
#: to its size (measured at most 23; see the module docstring).
PER_TERM_EPS = 128


def f32_sum_tol(total: float, n_terms: int = 1, per_term_eps: float = PER_TERM_EPS) -> float:
    """Absolute tolerance for ``total``, a sum of ``n_terms`` float32 log-probabilities (or logits) of one sign,
    compared with the same sum computed another way or on another CPU kind: (per-term error + n additions) x
    |total|, with |total| taken as at least one nat per term (a term near 0 still carries the error of the logits it
    came from, which are of order one for these models)."""
    size = max(abs(float(total)), float(n_terms))
    return (per_term_eps + n_terms) * F32_EPS * size


def approx_scores(scores) -> list:
    """``pytest.approx`` of each sentence score of ``scores`` ((logp, n tokens) pairs, as a scorer returns them),
    each within :func:`f32_sum_tol` of its own size and token count: compare ``[x for x, _ in got]`` with it."""
    import pytest

    return [pytest.approx(lp, abs=f32_sum_tol(lp, n)) for lp, n in scores]


def f32_prob_tol(logit_size: float) -> float:
    """Absolute tolerance for a probability from a float32 softmax whose logits are at most ``logit_size`` in size:
    dp = p (1 - p) d(logit difference) <= 1/4 of the logits' error (:func:`f32_sum_tol` of their size, two of them)."""
    return f32_sum_tol(2 * logit_size, 2) / 4
