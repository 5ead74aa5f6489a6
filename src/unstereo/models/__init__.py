"""Models: the model spec and registry, the request a run makes, and loading (transformers, GGUF)."""
