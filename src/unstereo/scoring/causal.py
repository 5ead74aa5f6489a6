"""Sentence log-likelihoods under a causal language model (docs/methods.md#scoring-and-metrics).

log p(s) = sum over the sentence's tokens t_i of ln p(t_i | prefix, t_1..t_{i-1}), where the prefix is the model's
BOS token, prepended and not scored. Tokenizers without a BOS token get an explicit, logged policy
(:func:`resolve_prefix`): EOS as the prefix when there is one (GPT-2 style models use ``<|endoftext|>`` as both),
else no prefix at all and the first token is not scored. The policy is written into every output row.

Exactness choices:
- the sentence is tokenized with ``add_special_tokens=False`` and the prefix is added here, so no tokenizer adds a
  second BOS or a trailing EOS behind our back;
- token log-probs are ``logit[token] - logsumexp(logits)`` in fp32 (closer to fp64 than ``log_softmax`` on CPU),
  summed in fp64;
- a sentence's score does not depend on its batch mates (up to the last bits of floating point that different
  matrix shapes give): a causal model never attends to what follows a token, and every position has its own.

Three ways to run a batch (``path``), the same scores (within 2e-3 per sentence, the acceptance tolerance):
- ``tree`` (the fastest): the batch's sentences, taken in token order so that neighbours share prefixes, are packed
  into one prefix tree (:mod:`.prefix_tree`); each distinct prefix is one position, run once with its depth as
  position id and a mask that lets it see only its ancestors. On 1,000 USE-10 pairs that is ~1.3x fewer positions
  than tokens (the BOS token, a pair's words before the pronoun, templates that start alike). The attention runs
  per segment of the tree (subtrees of <= 32 nodes with their shared ancestors,
  :mod:`unstereo.engine.kernels.tree_attention`), not over the whole row: 8x fewer attention scores;
- ``padded``: the sentences right-padded, longest first, without their last token (it predicts nothing scored),
  the attention mask passed only when a row is padded;
- ``full``: ``model(...).logits`` at every position, the original path; the reference the others are checked on.
``tree`` and ``padded`` run the transformer body, then the LM head and the log-normaliser only on the
positions whose next token is scored, a block of the vocabulary at a time (:mod:`unstereo.engine.kernels.lm_head`).
``auto`` (the default) takes the first of ``tree``, ``padded``, ``full`` that the model passes: on the first
batch the fast paths are checked against the full forward pass of each sentence alone on a probe of random
tokens with shared prefixes (an architecture that does something else between body and head, ignores position
ids or a custom 4D mask falls back, with a warning); batches with a sentence longer than a sliding window
(:func:`attention_span`) take ``padded``. Batches are sorted longest first (token order for ``tree``) and the
batch size halves on out-of-memory (:mod:`.batching`). With fp32 weights on the CPU the fast paths' linear
layers and head run on oneDNN's matmul, 1.2-1.3x faster than PyTorch's default there
(:mod:`unstereo.engine.kernels.onednn`; ``onednn=False`` keeps the default), a gated MLP's activation and product fused
into its products; the probe checks them against the full forward pass, which keeps the default.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from unstereo.engine.kernels import probe_memo
from unstereo.engine.kernels.lm_head import head_logprobs, last_hidden, split_causal_lm
from unstereo.engine.kernels.onednn import available as onednn_available
from unstereo.engine.kernels.onednn import linears_through_onednn
from unstereo.engine.kernels.tree_attention import SEGMENT, segment_layout, segmented_attention
from unstereo.log import get_logger
from unstereo.scoring.batching import scorer_batcher
from unstereo.scoring.prefix_tree import ancestor_mask, pack_prefix_tree

log = get_logger("scoring")

BOS_POLICIES = ("auto", "bos", "eos", "none")

# Auto batch size: start here, halve on out-of-memory (a batch's logits bounded too: scoring.batching.scorer_batcher).
AUTO_BATCH_SIZE = {"cuda": 128, "mps": 64, "cpu": 32}


@dataclass(frozen=True)
class Prefix:
    """What goes before a sentence: ``policy`` is bos, eos or none; ``token_id`` the prepended token (or None)."""

    policy: str
    token_id: int | None
    token: str | None

    def describe(self) -> str:
        return f"{self.policy}:{self.token}" if self.token is not None else self.policy


def resolve_prefix(tokenizer: Any, policy: str = "auto") -> Prefix:
    """The prefix token for ``policy``: auto = BOS, else EOS, else none (first token not scored); logged."""
    if policy not in BOS_POLICIES:
        raise ValueError(f"bos policy must be one of {BOS_POLICIES}, got {policy!r}")
    bos, eos = tokenizer.bos_token_id, tokenizer.eos_token_id
    if policy in ("auto", "bos") and bos is not None:
        return Prefix("bos", int(bos), tokenizer.bos_token)
    if policy == "bos":
        raise ValueError(
            "bos policy 'bos' requested but the tokenizer has no BOS token (use auto, eos or none)"
        )
    if policy in ("auto", "eos") and eos is not None:
        if policy == "auto":
            log.warning(
                "tokenizer has no BOS token: prepending its EOS token %r instead (bos policy 'eos')",
                tokenizer.eos_token,
            )
        return Prefix("eos", int(eos), tokenizer.eos_token)
    if policy == "eos":
        raise ValueError("bos policy 'eos' requested but the tokenizer has no EOS token (use auto or none)")
    log.warning(
        "tokenizer has neither BOS nor EOS (or policy 'none'): the first token of each sentence is not "
        "scored (bos policy 'none')"
    )
    return Prefix("none", None, None)


def token_logprobs(logits: Any, targets: Any) -> Any:
    """ln p(target) per position, in fp32: gathered logit minus logsumexp over the vocabulary."""
    logits = logits.float()
    picked = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return picked - logits.logsumexp(-1)


SCORING_PATHS = ("auto", "tree", "padded", "full")
# Positions (sentences x longest sentence) of one prefix tree: the attention over a tree's row is quadratic in its
# length, so long texts get fewer sentences per tree (32 USE-10 sentences make ~370 positions).
TREE_MAX_CELLS = 1024
# The probe's score may differ from the full forward pass by float rounding only: 2e-3 (the acceptance tolerance)
# in fp32; half precision rounds each logit to ~3 significant digits.
PROBE_TOLERANCE = {"float32": 2e-3, "float64": 2e-3}
PROBE_TOLERANCE_HALF = 0.25


class CausalScorer:
    """Scores sentences with a causal LM: :meth:`score` returns (ln p(s), number of scored tokens) per sentence.

    ``batch_size`` is an int or ``"auto"`` (start at a device-dependent size, bound the logits' memory on the full
    path, halve on out-of-memory); on the tree path a batch also keeps sentences x longest sentence <= 1024.
    ``model`` is anything called as ``model(input_ids=..., attention_mask=...)`` returning an object with
    ``.logits`` (a transformers causal LM in practice). ``path`` is auto, tree, padded or
    full (see the module doc); an explicit tree or padded path that fails its check is an error. ``onednn``: the
    fast paths' products on oneDNN where the model is fp32 on the CPU and the op works (False: never).
    ``remember_probe``: the path the checks chose is remembered per machine and the next scorer of the same model,
    settings and code takes it without probing (:mod:`unstereo.engine.kernels.probe_memo`; the registry's scorers do).
    """

    kind = "causal"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        device: str = "cpu",
        batch_size: int | str = "auto",
        bos_policy: str = "auto",
        max_batch_size: int | None = None,
        path: str = "auto",
        onednn: bool = True,
        remember_probe: bool = False,
    ):
        if path not in SCORING_PATHS:
            raise ValueError(f"scoring path must be one of {SCORING_PATHS}, got {path!r}")
        self.model = model
        self.tokenizer = tokenizer
        self.device = device
        self.prefix = resolve_prefix(tokenizer, bos_policy)
        self.path_requested = path
        self.path: str | None = "full" if path == "full" else None  # resolved at the first batch
        self.batcher = scorer_batcher(model, tokenizer, device, batch_size, max_batch_size, AUTO_BATCH_SIZE)
        self.batch_size_requested = str(batch_size)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self._parts = None
        self._tree_span = 0
        # nodes per attention segment of the tree path; 0: dense attention over the row
        self._segment = SEGMENT
        self.onednn_requested = onednn
        self.onednn = False  # resolved with the path: True where the fast path's products run on oneDNN
        self.remember_probe = remember_probe

    def encode(self, sentences: list[str]) -> list[list[int]]:
        """Token ids of each sentence with the prefix token prepended (when the policy has one)."""
        ids = self.tokenizer(list(sentences), add_special_tokens=False)["input_ids"]
        if self.prefix.token_id is None:
            return [list(x) for x in ids]
        return [[self.prefix.token_id, *x] for x in ids]

    def score(self, sentences: list[str]) -> list[tuple[float, int]]:
        """(ln p(s), number of scored tokens) for each sentence, in input order."""
        seqs = self.encode(sentences)
        return self.score_ids(seqs)

    def score_ids(self, seqs: list[list[int]]) -> list[tuple[float, int]]:
        """(ln p, scored tokens) of token sequences that already start with the prefix token (see :meth:`encode`)."""
        if not seqs:
            return []
        path = self._resolve_path()
        lengths = [len(s) for s in seqs]
        if path == "tree":
            order = sorted(range(len(seqs)), key=lambda i: (seqs[i], i))
            return self.batcher.run(
                lengths, lambda idx: self._forward_tree([seqs[i] for i in idx]), order=order
            )
        forward = self._forward_padded if path == "padded" else self._forward
        return self.batcher.run(lengths, lambda idx: forward([seqs[i] for i in idx]))

    # ------------------------------------------------------------------------------------------ the full path

    def _forward(self, seqs: list[list[int]]) -> list[tuple[float, int]]:
        import torch

        width = max(len(s) for s in seqs)
        if width < 2:  # nothing to score in any row (empty sentences, or one token under policy none)
            return [(0.0, 0) for _ in seqs]
        ids = torch.full((len(seqs), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for row, s in enumerate(seqs):
            ids[row, : len(s)] = torch.tensor(s, dtype=torch.long)
            mask[row, : len(s)] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        with torch.inference_mode():
            logits = self.model(input_ids=ids, attention_mask=mask, use_cache=False).logits
            # position j predicts token j+1; only real tokens after the first count.
            lp = token_logprobs(logits[:, :-1], ids[:, 1:])
            valid = mask[:, 1:].bool()
            sums = torch.where(valid, lp, torch.zeros_like(lp)).double().sum(-1)
        counts = valid.sum(-1)
        return [(float(v), int(n)) for v, n in zip(sums.cpu().tolist(), counts.cpu().tolist(), strict=True)]

    # ----------------------------------------------------------------------------------------- the fast paths

    def _forward_padded(self, seqs: list[list[int]]) -> list[tuple[float, int]]:
        """Right-padded rows without the last token; the head only on the real positions."""
        import torch

        rows = [i for i, s in enumerate(seqs) if len(s) >= 2]
        if not rows:
            return [(0.0, 0) for _ in seqs]
        width = max(len(seqs[i]) - 1 for i in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.bool)
        targets, owners = [], []
        for row, i in enumerate(rows):
            s = seqs[i]
            ids[row, : len(s) - 1] = torch.tensor(s[:-1], dtype=torch.long)
            mask[row, : len(s) - 1] = True
            targets.extend(s[1:])
            owners.extend([i] * (len(s) - 1))
        kwargs = {} if bool(mask.all()) else {"attention_mask": mask.long().to(self.device)}
        with torch.inference_mode():
            hidden = self._body(input_ids=ids.to(self.device), **kwargs)
            packed = hidden[mask.to(self.device)]  # row by row: the order of targets
            nodes = torch.arange(packed.shape[0], device=self.device)
            return self._sums(packed, nodes, targets, owners, seqs)

    def _forward_tree(self, seqs: list[list[int]]) -> list[tuple[float, int]]:
        """One row holding the prefix tree of the batch (see :mod:`.prefix_tree`)."""
        import torch

        if max(len(s) for s in seqs) - 1 > self._tree_span:
            return self._forward_padded(seqs)  # a sliding window the tree's mask would not apply
        tree = pack_prefix_tree(seqs)
        if not len(tree):
            return [(0.0, 0) for _ in seqs]
        ancestors = ancestor_mask(tree.parents)
        dtype = self._parts[1].weight.dtype
        mask = torch.zeros(ancestors.shape, dtype=dtype, device=self.device)
        mask.masked_fill_(~torch.from_numpy(ancestors).to(self.device), torch.finfo(dtype).min)
        ids = torch.tensor([tree.tokens], dtype=torch.long, device=self.device)
        positions = torch.tensor([tree.positions], dtype=torch.long, device=self.device)
        segments = contextlib.nullcontext()
        if self._segment:  # attention per segment of the tree (the dense mask above then only stands for it)
            layout = segment_layout(tree.parents, ancestors, self._segment)
            segments = segmented_attention(self.model, layout, self.device, dtype)
        with torch.inference_mode(), segments:
            hidden = self._body(input_ids=ids, attention_mask=mask[None, None], position_ids=positions)[0]
            nodes = torch.tensor(tree.query_node, dtype=torch.long, device=self.device)
            return self._sums(hidden, nodes, tree.query_token, tree.query_seq, seqs)

    def _body(self, **kwargs: Any) -> Any:
        body, _ = self._parts
        with linears_through_onednn(body, fuse_mlp=True) if self.onednn else contextlib.nullcontext():
            return last_hidden(body(**kwargs, use_cache=False))

    def _sums(self, hidden: Any, nodes: Any, targets: list[int], owners: list[int], seqs: list[list[int]]):
        """(sum of ln p over each sequence's queries in fp64, scored tokens) per sequence."""
        import torch

        tokens = torch.tensor(targets, dtype=torch.long, device=self.device)
        lp = head_logprobs(hidden, self._parts[1], nodes, tokens, onednn=self.onednn)
        owner = torch.tensor(owners, dtype=torch.long, device=self.device)
        sums = torch.zeros(len(seqs), dtype=torch.float64, device=self.device).index_add_(
            0, owner, lp.double()
        )
        return [(float(v), max(0, len(s) - 1)) for v, s in zip(sums.cpu().tolist(), seqs, strict=True)]

    # ---------------------------------------------------------------------------------- choosing the path

    def _resolve_path(self) -> str:
        """The path of this model: the requested one, or for auto the first fast path that passes its check."""
        if self.path is not None:
            return self.path
        if self.path_requested == "auto" and self.device.split(":")[0] != "cpu":
            # The fast paths save CPU work; on a GPU the model's own pass over padded batches of 128 was faster
            # (H200, fp32: 2.1x the tree path for SmolLM2, 2.7x for Gemma-3, 1.1x for a 1.5B; docs/performance.md).
            self._use("full")
            return self.path
        self._parts = split_causal_lm(self.model)
        self._tree_span = attention_span(self.model)
        if self._parts is not None and self.onednn_requested:
            self.onednn = onednn_available(self._parts[1].weight)
        wanted = ("tree", "padded") if self.path_requested == "auto" else (self.path_requested,)
        key = self._probe_key() if self.remember_probe and self._parts is not None else None
        verdict = probe_memo.recall("scorer", key, {"path": str, "segment": int}) if key is not None else None
        if verdict is not None and verdict.get("path") in (*wanted, "full") and "segment" in verdict:
            log.info("scoring path %s: its probe ran before on this machine", verdict["path"])
            self._segment = int(verdict["segment"])
            self._use(verdict["path"])
            return self.path
        path = self._probed_path(wanted)
        if key is not None:
            probe_memo.remember("scorer", key, {"path": path, "segment": self._segment})
        return path

    def _probe_key(self) -> str:
        """What the path checks' verdict depends on (:func:`unstereo.engine.kernels.probe_memo.digest`)."""
        modules = ("unstereo.scoring.causal", "unstereo.engine.kernels.lm_head", "unstereo.engine.kernels.onednn",
                   "unstereo.engine.kernels.tree_attention", "unstereo.scoring.prefix_tree")  # fmt: skip
        extra = (self.path_requested, self.prefix.token_id, f"onednn={self.onednn}")
        return probe_memo.digest(self.model, modules, extra=extra)

    def _probed_path(self, wanted: tuple[str, ...]) -> str:
        """The first of ``wanted`` that passes its check (see :meth:`_resolve_path`), else ``full``."""
        for path in wanted:
            problem = self._check(path)
            if problem is not None and path == "tree":  # the tree with dense attention over its row
                log.info("segmented tree attention does not work with this model (%s)", problem)
                self._segment = 0
                problem = self._check(path)
            if problem is None:
                self._use(path)
                return path
            if self.path_requested != "auto":
                raise ValueError(f"scoring path {path!r} does not work with this model: {problem}")
            log.warning(
                "scoring path %r does not work with this model (%s); trying the next one", path, problem
            )
        self._use("full")
        return "full"

    def _use(self, path: str) -> None:
        self.path = path
        self.onednn = self.onednn and path != "full"  # the full path is the model's own forward pass
        log.info("scoring path: %s%s", path, " (products on oneDNN)" if self.onednn else "")
        if path == "tree":
            self.batcher.max_cells = TREE_MAX_CELLS
        elif path == "padded":  # no batch x length x vocabulary logits: no logits budget
            self.batcher.max_cells = None

    def _check(self, path: str) -> str | None:
        """None when ``path`` gives the full forward pass's scores on the probe, else what went wrong."""
        if self._parts is None:
            return "no body and linear LM head found (get_output_embeddings, base_model)"
        probe = probe_sequences(self._parts[1].weight.shape[0], self.prefix.token_id)
        if path == "tree" and max(len(s) for s in probe) - 1 > self._tree_span:
            return f"a sliding window of {self._tree_span} positions, shorter than the probe"
        want = [self._forward([s])[0][0] for s in probe]
        segment, self._segment = self._segment, min(self._segment, 2)  # several segments, even for the probe
        try:
            got = (self._forward_tree if path == "tree" else self._forward_padded)(probe)
        except Exception as exc:  # an architecture that rejects position ids or a 4D mask, ...
            return f"{type(exc).__name__}: {exc}"
        finally:
            self._segment = segment
        diff = max(abs(g - w) for (g, _), w in zip(got, want, strict=True))
        dtype = str(self._parts[1].weight.dtype).replace("torch.", "")
        tolerance = PROBE_TOLERANCE.get(dtype, PROBE_TOLERANCE_HALF)
        if not diff <= tolerance:  # also catches NaN
            return f"probe scores differ from the full forward pass by {diff:.3g} (> {tolerance})"
        return None

    def metadata(self) -> dict[str, Any]:
        """Run metadata for the output table."""
        return {
            **run_metadata(self, self.prefix.describe()),
            "scoring_path": self.path or self.path_requested,
            "matmul": "onednn" if self.onednn else "default",
        }


def attention_span(model: Any) -> float:
    """How many positions back every layer of ``model`` attends (inf without a sliding window or attention chunks):
    the tree path's mask (every ancestor) equals the model's own only for sequences within it."""
    config = getattr(model, "config", None)
    config = config.get_text_config() if hasattr(config, "get_text_config") else config
    spans = [getattr(config, key, None) for key in ("sliding_window", "attention_chunk_size")]
    return min([float("inf"), *(int(x) for x in spans if isinstance(x, int) and x > 0)])


def probe_sequences(vocab: int, prefix: int | None, seed: int = 0) -> list[list[int]]:
    """Token sequences that share prefixes and differ in length (random ids below ``vocab``), for the path check."""
    import torch

    t = torch.randint(0, vocab, (12,), generator=torch.Generator().manual_seed(seed)).tolist()
    p = t[11] if prefix is None else prefix
    return [
        [p, t[0], t[1], t[2], t[3]],
        [p, t[0], t[1], t[4]],
        [p, t[5], t[6], t[7], t[8], t[9]],
        [p, t[5]],
        [p, t[10]],
    ]


def run_metadata(scorer: Any, bos_policy: str) -> dict[str, Any]:
    """Run metadata of a causal or masked scorer (``kind``, ``model``, ``device``, ``batcher``, ...)."""
    return {
        "scorer": scorer.kind,
        "device": str(scorer.device),
        "dtype": _dtype_name(scorer.model),
        "batch_size": int(scorer.batcher.largest_batch or scorer.batcher.batch_size),
        "batch_size_requested": scorer.batch_size_requested,
        "bos_policy": bos_policy,
        "model_commit": _commit(scorer.model),
    }


def _commit(model: Any) -> str | None:
    """The hub commit a model was loaded from (None for local folders and test models)."""
    return getattr(getattr(model, "config", None), "_commit_hash", None)


def _dtype_name(model: Any) -> str:
    dtype = getattr(model, "dtype", None)
    if dtype is None:
        try:
            dtype = next(model.parameters()).dtype
        except (StopIteration, AttributeError):
            return "unknown"
    return str(dtype).replace("torch.", "")
