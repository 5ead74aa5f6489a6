"""FairPair (Dwivedi-Yu et al., 2024; docs/methods.md#fairpair): bias of a model's continuations of paired
prompts x and p(x), each pair grounded in the same entity and judged against the model's own sampling
variability.

- :mod:`~unstereo.fairpair.prompts`: the Common Sents prompts ("{name} is a {descriptor}, working as a
  {occupation}.", Winogender occupations) and user prompt files, each with p(x);
- :mod:`~unstereo.fairpair.perturb`: the rule-based perturbation p (whole words, case kept, possessives);
- :mod:`~unstereo.fairpair.llm_perturb`: the LLM-based perturbation with the paper's three filters;
- :mod:`~unstereo.fairpair.sample`: n continuations of x and of p(x) per prompt through :mod:`unstereo.llm`;
- :mod:`~unstereo.fairpair.metrics`: B, V_gp, V_pg, F (Jaccard, VADER sentiment), the k-fold variant, t-tests,
  bootstrap intervals;
- :mod:`~unstereo.fairpair.compute`: per-prompt, curve, n-gram and summary tables;
- :mod:`~unstereo.fairpair.report`: Table 3 and Figures 3-6 of the paper for the report.

Tables: :mod:`~unstereo.fairpair.schemas`; registration: :mod:`~unstereo.fairpair.method`.
"""
