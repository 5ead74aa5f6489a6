"""UnStereoEval (Belém et al., 2024): the Unstereo Score of models on benchmarks of gender-neutral sentence pairs.

Its stages live in their own packages (corpus, vocabulary, benchmarks, generate, scoring, metrics, report); this
package holds the method's declaration (:mod:`.method`), which ties them into one method of the registry.
"""
