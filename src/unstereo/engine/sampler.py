"""Token sampling shared by the sampling engine (:mod:`.engine`) and the ``generate`` fallback of
:class:`~unstereo.llm.local.LocalBackend`: :func:`sample_rows` draws one token per row, greedy at T = 0, else top-p
by inverse CDF from one uniform number per row, so a row's token does not depend on the other rows of its batch.

A module of its own so that the engine and the backend both import it and not each other."""

from __future__ import annotations


def sample_rows(logits, temperatures, top_ps, uniforms):
    """One token per row of ``logits`` (B, V): greedy where the temperature is 0, else top-p inverse-CDF sampling.

    ``temperatures``, ``top_ps`` and ``uniforms`` are (B,) tensors; ``uniforms`` in [0, 1) are the rows' random
    draws. A row with top_p < 1 sorts its probabilities (descending), keeps the smallest prefix whose mass reaches
    top_p (the top token always), and returns the first token whose cumulative kept mass exceeds u * (kept mass); a
    row with top_p = 1 does the same over the vocabulary in id order (no sort needed). All rows of a kind are done
    in one batched operation; which rows share the batch does not change a row's token.
    """
    import torch

    logits = logits.float()
    sampled = temperatures > 0
    out = torch.zeros(logits.shape[0], dtype=torch.long, device=logits.device)
    greedy = torch.nonzero(~sampled).flatten()
    if greedy.numel():
        out[greedy] = torch.argmax(logits[greedy], dim=-1)
    if greedy.numel() == logits.shape[0]:  # no row samples
        return out
    nucleus = sampled & (top_ps < 1.0)
    full = sampled & ~nucleus
    idx = torch.nonzero(full).flatten()
    if idx.numel():
        out[idx] = _inverse_cdf(_probabilities(logits, idx, temperatures), None, uniforms[idx])
    idx = torch.nonzero(nucleus).flatten()
    if idx.numel():
        probs = _probabilities(logits, idx, temperatures)
        # The nucleus is usually a few tokens: the largest TOP_K probabilities (sorted, as a full sort ranks them)
        # hold it whenever the last of them is already outside it; only the other rows sort the vocabulary.
        top, order = torch.topk(probs, min(TOP_K, probs.shape[-1]), dim=-1)
        covered = (torch.cumsum(top, dim=-1) - top)[:, -1] >= top_ps[idx]
        covered |= top.shape[-1] == probs.shape[-1]
        sub = torch.nonzero(covered).flatten()
        if sub.numel():
            out[idx[sub]] = _inverse_cdf(top[sub], order[sub], uniforms[idx[sub]], top_ps[idx[sub]])
        for r in torch.nonzero(~covered).flatten().tolist():
            p_sorted, p_order = _nucleus_candidates(probs[r], float(top_ps[idx[r]]))
            out[idx[r]] = _inverse_cdf(
                p_sorted[None], p_order[None], uniforms[idx[r] : idx[r] + 1], top_ps[idx[r : r + 1]]
            )[0]
    return out


def _probabilities(logits, idx, temperatures):
    """softmax(logits[idx] / temperature) (no copy when ``idx`` is every row, no division by a temperature of 1)."""
    import torch

    rows = logits if idx.numel() == logits.shape[0] else logits[idx]
    temps = temperatures[idx]
    if not bool((temps == 1.0).all()):
        rows = rows / temps[:, None]
    return torch.softmax(rows, dim=-1)


def _nucleus_candidates(probs, top_p: float):
    """The first tokens of ``probs`` (one row) sorted by descending probability, enough of them to hold the
    nucleus of ``top_p``, with their ids: the same head as a sort of the whole row, at a fraction of its cost.

    The candidates are the tokens whose probability's binary exponent is at least e, the largest e whose tokens
    hold ``top_p`` of the mass (one pass: ``frexp`` and a per-exponent sum); they are exactly the first tokens of
    the sorted row (ties included), so their running sum is the row's. If that sum falls short of ``top_p``
    (float rounding of the per-exponent sums), the whole row is sorted."""
    import torch

    _, exponent = torch.frexp(probs)
    rank = (
        torch.where(probs > 0, -exponent, 255).clamp_(min=0, max=255).long()
    )  # larger probability, smaller rank
    mass = torch.zeros(256, dtype=probs.dtype, device=probs.device).index_add_(0, rank, probs)
    enough = torch.nonzero(torch.cumsum(mass, 0) >= top_p).flatten()
    if enough.numel():
        ids = torch.nonzero(rank <= int(enough[0])).flatten()
        values, order = torch.sort(probs[ids], descending=True)
        if float(torch.cumsum(values, 0)[-1]) >= top_p:
            return values, ids[order]
    return torch.sort(probs, descending=True)


# How many of the largest probabilities a nucleus row looks at before it sorts its whole vocabulary.
TOP_K = 256


def _inverse_cdf(probs, order, uniforms, top_ps=None):
    """The token of each row whose cumulative (kept) mass first exceeds u * (kept mass): ``probs`` in id order
    (``order`` None) or sorted descending with their ids in ``order`` and cut to the nucleus of ``top_ps``."""
    import torch

    if order is not None:
        before = torch.cumsum(probs, dim=-1) - probs  # mass of the tokens ranked above each token
        probs = probs.masked_fill(before >= top_ps[:, None], 0.0)  # outside the nucleus
    cdf = torch.cumsum(probs, dim=-1)
    target = uniforms[:, None].to(cdf.dtype) * cdf[:, -1:]
    pick = torch.searchsorted(cdf, target, right=True).clamp_(max=probs.shape[-1] - 1)
    if order is None:
        return pick.squeeze(-1)
    # float edge: never land on a zero-probability token past the end of the kept mass
    pick = torch.minimum(pick, (probs > 0).sum(-1, keepdim=True) - 1)
    return order.gather(-1, pick).squeeze(-1)
