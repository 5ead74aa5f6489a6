"""Counterfactual sentiment bias (Huang et al. 2020; docs/methods.md#counterfactual-sentiment-bias): templates
x attribute values -> m continuations per filled prefix -> sentiment classifiers -> individual and group
fairness (I.F., G.F.), and the counterfactual debiasing fine-tune (paper section 4).

Modules: :mod:`.templates` (fill the templates), :mod:`.classifiers` (sentiment scores in [0, 1] by name),
:mod:`.fairness` (I.F., G.F., bootstrap intervals, demographic parity at thresholds), :mod:`.sampling`
(continuations through the shared LLM client), :mod:`.figures`, :mod:`.debias` (the fine-tune and its quality
measures), :mod:`.lexicon` / :mod:`.encoder` (builders of the opinion-lexicon and sentence-encoder resources).
"""
