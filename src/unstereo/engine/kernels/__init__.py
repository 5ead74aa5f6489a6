"""The CPU kernels under the sampling engine and the causal scorer: the LM head on chosen positions
(:mod:`.lm_head`), oneDNN products (:mod:`.onednn`), the prefix tree's attention (:mod:`.tree_attention`), int8 and
bf16 products (:mod:`.int8`, :mod:`.bf16`, :mod:`.quantised`) and the per-machine memo of passed probes
(:mod:`.probe_memo`)."""

#: The products of a local model's sampling on the CPU (:mod:`.bf16`, :mod:`.int8`); scoring is fp32 whatever a
#: request says.
SAMPLING_PRODUCTS = ("float32", "bfloat16", "int8")
