"""Fine-tuning a causal LM, shared by the methods that change a model: the resumable training loop
(:mod:`~unstereo.finetune.loop`), the language-model loss (:mod:`~unstereo.finetune.language_model`), Huang et al.
(2020)'s embedding and sentiment regularisation (:mod:`~unstereo.finetune.regularised`), training text
(:mod:`~unstereo.finetune.text`) and held-out perplexity (:mod:`~unstereo.finetune.perplexity`). Used by the
sentiment method's debiasing grid and by the model variants (``unstereo.variants``)."""
