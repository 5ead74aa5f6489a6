"""UnStereoEval (Belém et al., 2024): the Unstereo Score of models on benchmarks of gender-neutral sentence pairs.

Its stages live in their own packages (corpus, vocabulary, generate, benchmarks, score, metrics, report); this
package holds the method's declaration (:mod:`.method`), which ties them into one method of the registry, the
modules several of its stages share (:mod:`.eta`, :mod:`.prompts`, :mod:`.filters`, :mod:`.lexicon`), and its public
API for other methods (:mod:`.api`: the only module of this package another method imports).
"""
