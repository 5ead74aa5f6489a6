"""BiasTestGPT (Kocielnik et al. 2023; docs/methods.md#biastestgpt): test sentences for any group x attribute
bias specification.

- :mod:`.spec`: bias specifications (YAML/JSON; the release's 15 core and 4 health ones by name), validation;
- :mod:`.terms`: exact term matching and the rule that swaps a group term;
- :mod:`.pairs`: pair tables: manual templates, the release's gpt-3.5 / Megatron pairs and template baseline,
  balanced sub-sampling;
- :mod:`.generate`: generation through the project's LLM client (paper prompts, rejection with reasons, pairing);
- :mod:`.score`: sentence scores through the project's text scorer (causal mean/sum log-prob, masked-LM term score);
- :mod:`.stats`: Stereotype Score, 30x bootstrap with attribute terms equally represented, t-test vs templates;
- :mod:`.page`: the static inspection page; :mod:`.figure`: the report figure; :mod:`.run`: the stage end to end;
- :mod:`.schemas`: the table schemas; :mod:`.cli`: ``unstereo biastest``.
"""
