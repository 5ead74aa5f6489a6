"""unstereo: measure social bias in language models (UnStereoEval and related methods)."""

__version__ = "0.1.0"
