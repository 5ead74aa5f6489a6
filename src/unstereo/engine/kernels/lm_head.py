"""A causal LM split into its transformer body and its LM head, so the head runs only where a score needs it.

``model(...).logits`` computes the head (a ``[vocabulary, hidden]`` matrix: 262k x 640 for Gemma-3-270M, most of
that model's work) at every position, padding included, and holds ``batch x length x vocabulary`` floats that
the log-normaliser then reads again. Here the body gives the hidden states, the caller keeps the positions whose
next token is scored (packed, no padding), and :func:`head_logprobs` computes their logits a block of the
vocabulary at a time (a few MB, cache-sized), folding each block into a running log-sum-exp.

:func:`split_causal_lm` finds the parts generically (``get_output_embeddings()``, a ``torch.nn.Linear``, and the
``base_model`` or ``get_decoder()`` body) and the logit transforms the architectures apply after the head: a multiplier (Cohere's
``logit_scale``, Granite's ``1 / logits_scaling``) and ``final_logit_softcapping`` (Gemma 2/3). Anything else an
architecture might do is caught by the scorer, which checks the split against the full forward pass on a probe
before using it (:mod:`unstereo.scoring.causal`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Logits computed at once: nodes x vocabulary block <= CHUNK_CELLS floats (2 MiB in fp32: the block and its slice
# of the head stay in cache). On 2 threads of a 2-core AMD EPYC, 370 nodes x Gemma's 262k vocabulary: 141 GFLOP/s,
# against 127 with 4 MiB blocks and ~100 for one [nodes, vocabulary] product plus log_softmax.
CHUNK_CELLS = 2**19
MIN_CHUNK = 256


@dataclass(frozen=True)
class LMHead:
    """The head of a causal LM: ``logits = softcap(scale * (hidden @ weight.T + bias))``."""

    weight: Any
    bias: Any = None
    scale: float | None = None
    softcap: float | None = None

    def scale_and_cap_(self, logits: Any) -> Any:
        """``softcap(scale * logits)`` in place on fp32 ``logits`` (the product's output); returns them."""
        if self.scale is not None:
            logits.mul_(self.scale)
        if self.softcap is not None:
            logits.div_(self.softcap).tanh_().mul_(self.softcap)
        return logits


def split_causal_lm(model: Any) -> tuple[Any, LMHead] | None:
    """(body, head) of a transformers causal LM, or None when the model is not one this can split.

    The body is called as ``body(input_ids=..., attention_mask=..., position_ids=..., use_cache=False)`` and returns
    the last hidden states (first element or ``last_hidden_state``)."""
    import torch

    get_head = getattr(model, "get_output_embeddings", None)
    head = get_head() if callable(get_head) else None
    body = _body_of(model)
    held = getattr(head, "q", None)  # a head held in bf16 (unstereo.models.gguf_direct): its bf16 weight
    if isinstance(getattr(held, "weight", None), torch.Tensor):
        weight, bias = held.weight, held.bias
    elif isinstance(head, torch.nn.Linear):
        weight, bias = head.weight, head.bias
    else:
        return None
    if body is None:
        return None
    config = getattr(model, "config", None)
    text_config = config.get_text_config() if hasattr(config, "get_text_config") else config
    scale = getattr(text_config, "logit_scale", None)  # Cohere: logits * logit_scale
    scaling = getattr(text_config, "logits_scaling", None)  # Granite: logits / logits_scaling
    if scale is not None and scaling is not None:
        return None
    if scaling is not None:
        scale = 1.0 / float(scaling)
    softcap = getattr(text_config, "final_logit_softcapping", None)
    return body, LMHead(
        weight,
        bias,
        float(scale) if scale is not None else None,
        float(softcap) if softcap else None,
    )


def _body_of(model: Any) -> Any:
    """The transformer body: ``base_model`` (GPT-2's ``transformer``, Llama's ``model``), else ``get_decoder()``
    (Gemma3ForCausalLM names its base model ``language_model`` but keeps it in ``model``); None if neither is a
    module other than the model itself."""
    import torch

    candidates = [getattr(model, "base_model", None)]
    get_decoder = getattr(model, "get_decoder", None)
    if callable(get_decoder):
        try:
            candidates.append(get_decoder())
        except Exception:  # transformers raises for the models it cannot guess
            pass
    for body in candidates:
        if isinstance(body, torch.nn.Module) and body is not model:
            return body
    return None


def last_hidden(output: Any) -> Any:
    """The last hidden states of a body's output (a ModelOutput or a tuple)."""
    hidden = getattr(output, "last_hidden_state", None)
    return hidden if hidden is not None else output[0]


def head_logprobs(
    hidden: Any,
    head: LMHead,
    query_node: Any,
    query_token: Any,
    chunk_cells: int = CHUNK_CELLS,
    onednn: bool = False,
):
    """ln p(query_token[q] | node query_node[q]) in fp32 for the hidden states ``hidden`` (``[nodes, hidden]``).

    The same numbers as gathering from ``log_softmax(head(hidden))``: the logits of each vocabulary block are
    computed in the model's dtype (as the full forward pass does), turned to fp32, scaled and soft-capped, the
    queried ones picked, and the block folded into a running max and sum of exponentials per node. ``onednn``:
    the blocks' products by :func:`.onednn.linear` (fp32 on the CPU, see :mod:`.onednn`)."""
    import torch

    from unstereo.engine.kernels.onednn import linear

    n, vocab = hidden.shape[0], head.weight.shape[0]
    step = max(MIN_CHUNK, min(vocab, chunk_cells // max(1, n)))
    running_max = torch.full((n,), float("-inf"), dtype=torch.float32, device=hidden.device)
    running_sum = torch.zeros(n, dtype=torch.float32, device=hidden.device)
    picked = torch.zeros(len(query_node), dtype=torch.float32, device=hidden.device)
    buffer = None if onednn else torch.empty(n * min(step, vocab), dtype=hidden.dtype, device=hidden.device)
    for v0 in range(0, vocab, step):
        v1 = min(vocab, v0 + step)
        bias = head.bias[v0:v1] if head.bias is not None else None
        if onednn:
            out = linear(hidden, head.weight[v0:v1], bias)
        else:
            out = buffer[: n * (v1 - v0)].view(n, v1 - v0)  # reused: no fresh pages per block
            weight = head.weight[v0:v1].t()
            if bias is not None:
                torch.addmm(bias, hidden, weight, out=out)
            else:
                torch.mm(hidden, weight, out=out)
        logits = head.scale_and_cap_(out.float())  # fp32: the in-place steps here and below are safe
        here = (query_token >= v0) & (query_token < v1)
        picked[here] = logits[query_node[here], query_token[here] - v0]
        new_max = torch.maximum(running_max, logits.amax(-1))
        block_sum = logits.sub_(new_max.unsqueeze(-1)).exp_().sum(-1)
        running_sum = running_sum * torch.exp(running_max - new_max) + block_sum
        running_max = new_max
    return picked - (running_max + running_sum.log())[query_node]
