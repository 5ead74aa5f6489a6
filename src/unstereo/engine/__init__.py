"""The local sampling engine (continuous batching, per-row sampling) behind the LLM client's local backend."""
