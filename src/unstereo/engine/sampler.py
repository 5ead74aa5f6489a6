"""Token sampling shared by the sampling engine (:mod:`.engine`) and the ``generate`` path of
:class:`~unstereo.llm.local.LocalBackend`, on the CPU and on a GPU alike.

- :func:`stream`: the uniform numbers a row draws, one per generated token: ``u(seed, step)`` from a counter-based
  generator (Philox4x32-10, Salmon et al. 2011, keyed by the seed, counter = the step), computed for a whole batch
  at once with exact int64 tensor arithmetic and turned into a float32 with 24 random bits, so the same on every
  device and independent of the batch, of the order in which rows start and of anything drawn before;
- :func:`sample_rows` / :class:`RowSampler`: one token per row from its logits and its uniform, greedy at T = 0,
  else top-p by inverse CDF, all rows of a kind in one batched operation (no loop over rows), so a row's token does
  not depend on the other rows of its batch.

A module of its own so that the engine and the backend both import it and not each other."""

from __future__ import annotations

#: The stream's name: part of the local backend's LLM-cache keys and sampling fingerprints for T > 0
#: (:attr:`unstereo.llm.local.LocalBackend.sampler`), so samples drawn with another stream are never reused.
STREAM = "philox4x32-10(seed, step) u24"

_MASK32 = 0xFFFFFFFF
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)  # the round multipliers of Philox4x32
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)  # the key's increments between rounds (golden ratio, sqrt(3) - 1)
PHILOX_ROUNDS = 10


def _mulhilo(m: int, x):
    """(high, low) 32-bit halves of ``m * x`` for a 32-bit constant ``m`` and an int64 tensor ``x`` of 32-bit values:
    ``m`` is split into 16-bit halves so that every product stays below 2**48 (no int64 overflow on any device)."""
    a = x * (m >> 16)  # m * x = a * 2**16 + b
    b = x * (m & 0xFFFF)
    return (a + (b >> 16)) >> 16, (((a & 0xFFFF) << 16) + b) & _MASK32


def philox4x32(counter, key, rounds: int = PHILOX_ROUNDS):
    """Philox4x32-``rounds`` of ``counter`` (4 int64 tensors of 32-bit words) under ``key`` (2 of them), all
    broadcast together: the 4 output words (int64 tensors of 32-bit values). Random123's known answers hold
    (tests/engine/test_sampler.py)."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + _PHILOX_W[0]) & _MASK32, (k1 + _PHILOX_W[1]) & _MASK32
        hi0, lo0 = _mulhilo(_PHILOX_M[0], c0)
        hi1, lo1 = _mulhilo(_PHILOX_M[1], c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def stream(seeds, length: int, device=None, start: int = 0):
    """Float32 uniforms in [0, 1), ``[len(seeds), length]``: row i, column t is ``u(seeds[i], start + t)``.

    ``u(seed, step)``: Philox4x32-10 with key (seed mod 2**32, seed // 2**32 mod 2**32) (the seed taken mod 2**64)
    and counter (step, 0, 0, 0); the first output word's top 24 bits k give u = k / 2**24 (exact in float32). A
    row's numbers depend on its seed and the step only."""
    import torch

    seeds = [int(s) % (1 << 64) for s in seeds]
    key = torch.tensor([[s & _MASK32, s >> 32] for s in seeds], dtype=torch.long, device=device)
    key = key.reshape(-1, 2)
    steps = torch.arange(start, start + length, dtype=torch.long, device=device)[None, :]
    zero = torch.zeros((), dtype=torch.long, device=device)
    word = philox4x32((steps & _MASK32, steps >> 32, zero, zero), (key[:, :1], key[:, 1:]))[0]
    return (word >> 8).to(torch.float32) * (1.0 / (1 << 24))


# ------------------------------------------------------------------------------------------------ the sampler

#: How many of the largest probabilities a nucleus row looks at first (the ``topk`` strategy).
TOP_K = 256


def sample_rows(logits, temperatures, top_ps, uniforms, strategy: str | None = None):
    """One token per row of ``logits`` (B, V): greedy where the temperature is 0, else top-p inverse-CDF sampling
    (:class:`RowSampler`). ``temperatures``, ``top_ps`` and ``uniforms`` are (B,) tensors or sequences; the
    uniforms in [0, 1) are the rows' draws (:func:`stream`)."""
    return RowSampler(temperatures, top_ps, logits.device, strategy)(logits, uniforms)


class RowSampler:
    """Samples rows whose settings are fixed (the ``generate`` path's whole call; the engine's current rows).

    The definition: a row at temperature 0 takes the argmax of its logits (the first on a tie, as transformers'
    greedy). Otherwise p = softmax(logits / T); a row with top_p = 1 takes the first token, in id order, whose
    cumulative probability exceeds u * (total); a row with top_p < 1 orders its tokens by descending probability
    (ties by ascending id), keeps the smallest prefix whose mass reaches top_p (a token is kept while the mass
    ranked above it is below top_p; the top token always), and takes the first kept token whose cumulative mass
    exceeds u * (kept mass).

    The rows' kinds are worked out here, once, from host values, so a call makes no decision on device data but
    where the ``topk`` strategy needs one. How nucleus rows find their ordered head (the same head, the same
    tokens): ``sort`` sorts every row whole (one kernel, nothing read back: the choice on a GPU); ``topk`` (the
    CPU's) takes the largest :data:`TOP_K`, and the rows whose nucleus reaches past them, all at once, as many
    as the widest of their nuclei needs (binary exponents of the probabilities, summed per exponent), else a sort.
    ``strategy`` None: ``topk`` on the CPU, ``sort`` elsewhere."""

    def __init__(self, temperatures, top_ps, device=None, strategy: str | None = None):
        import torch

        device = torch.device(device if device is not None else "cpu")
        temps = [float(t) for t in temperatures]
        tops = [float(p) for p in top_ps]
        if len(temps) != len(tops):
            raise ValueError(f"{len(temps)} temperatures for {len(tops)} top_p values")
        self.strategy = strategy or ("topk" if device.type == "cpu" else "sort")
        if self.strategy not in ("topk", "sort"):
            raise ValueError(f"unknown sampling strategy {self.strategy!r} (topk or sort)")
        self.rows = len(temps)
        kinds = {
            "greedy": [i for i, t in enumerate(temps) if t <= 0],
            "full": [i for i, t in enumerate(temps) if t > 0 and tops[i] >= 1.0],
            "nucleus": [i for i, t in enumerate(temps) if t > 0 and tops[i] < 1.0],
        }
        self.groups = []  # (kind, row index tensor or None for all rows, temperatures or None for all 1, top_ps)
        for kind, idx in kinds.items():
            if not idx:
                continue
            every = len(idx) == self.rows
            rows = None if every else torch.tensor(idx, dtype=torch.long, device=device)
            t = [temps[i] for i in idx]
            scale = None if kind == "greedy" or all(v == 1.0 for v in t) else torch.tensor(t, device=device)
            p = torch.tensor([tops[i] for i in idx], device=device) if kind == "nucleus" else None
            self.groups.append((kind, rows, scale, p))

    def __call__(self, logits, uniforms, work=None):
        """One token per row of ``logits`` (B, V); ``work``: an fp32 buffer of that shape to hold the probabilities
        (the engine's, kept across steps: a fresh [B, V] tensor a step costs page faults at a large vocabulary)."""
        import torch

        if logits.shape[0] != self.rows:
            raise ValueError(f"{logits.shape[0]} rows of logits for a sampler of {self.rows}")
        logits = logits.float()
        uniforms = torch.as_tensor(uniforms, device=logits.device)
        out = None
        for kind, rows, scale, top_ps in self.groups:
            part = logits if rows is None else logits[rows]
            if kind == "greedy":
                tok = torch.argmax(part, dim=-1)
            else:
                u = uniforms if rows is None else uniforms[rows]
                probs = _softmax(part, scale, work if rows is None else None)
                if kind == "full":
                    tok = _inverse_cdf(probs, None, u)
                elif self.strategy == "sort":
                    tok = _inverse_cdf(*_sorted(probs), u, top_ps)
                else:
                    tok = _nucleus_topk(probs, u, top_ps)
            if rows is None:
                return tok
            if out is None:
                out = torch.zeros(self.rows, dtype=torch.long, device=logits.device)
            out[rows] = tok
        return out if out is not None else torch.zeros(0, dtype=torch.long, device=logits.device)


def _softmax(logits, scale=None, out=None):
    """``softmax(logits / scale)`` over the last dim, into ``out`` when given (softmax's own kernel: the same
    numbers)."""
    import torch

    if out is None:
        return torch.softmax(logits if scale is None else logits / scale[:, None], dim=-1)
    if scale is not None:
        logits = torch.div(logits, scale[:, None], out=out)
    return torch.ops.aten._softmax.out(logits, -1, False, out=out)


def _sorted(probs):
    """Each row sorted by descending probability, ties by ascending id (a stable sort): (values, ids)."""
    import torch

    return torch.sort(probs, dim=-1, descending=True, stable=True)


def _top(probs, k: int):
    """The ``k`` largest probabilities of each row in :func:`_sorted`'s order (ties by ascending id), with their
    ids."""
    import torch

    values, ids = torch.topk(probs, k, dim=-1)  # sorted, but ties in no set order
    if not bool((values[:, 1:] == values[:, :-1]).any()):  # no ties (a trained model's usual case)
        return values, ids
    by_id = torch.argsort(
        ids, dim=-1
    )  # ids ascending first: a stable sort by value then puts ties in id order
    values, ids = values.gather(-1, by_id), ids.gather(-1, by_id)
    values, order = torch.sort(values, dim=-1, descending=True, stable=True)
    return values, ids.gather(-1, order)


def _nucleus_topk(probs, uniforms, top_ps):
    """The tokens of nucleus rows by the ``topk`` strategy (:class:`RowSampler`); every step is batched over rows.

    A row's nucleus lies inside its first k tokens (ordered) when their mass reaches top_p (the next token then has
    mass top_p or more ranked above it). First the largest :data:`TOP_K` of every row; the rows where they fall
    short take their candidates (:func:`_candidates`), all such rows in one padded matrix; a row still short (float
    rounding of the per-class sums) sorts its whole row."""
    import torch

    vocab = probs.shape[-1]
    out = torch.zeros(probs.shape[0], dtype=torch.long, device=probs.device)
    every = torch.arange(probs.shape[0], device=probs.device)

    def take(rows, values, ids):  # the tokens of ``rows`` whose nucleus is in their head; the other rows
        held = torch.cumsum(values, dim=-1)[:, -1] >= top_ps[rows]
        done = rows[held]
        if done.numel():
            out[done] = _inverse_cdf(values[held], ids[held], uniforms[done], top_ps[done])
        return rows[~held]

    if TOP_K >= vocab:
        return _inverse_cdf(*_sorted(probs), uniforms, top_ps)
    left = take(every, *_top(probs, TOP_K))
    if left.numel():  # the rows left: their candidates, whole exponent classes, sorted in a padded matrix
        left = take(left, *_candidates(probs[left], top_ps[left]))
    if left.numel():
        out[left] = _inverse_cdf(*_sorted(probs[left]), uniforms[left], top_ps[left])
    return out


def _candidates(probs, top_ps):
    """Each row's first tokens in :func:`_sorted`'s order, enough to hold its nucleus but for float rounding,
    padded with zeros (id 0) to the widest row: (values, ids); ``probs`` float32.

    A row's candidates are its tokens of the fewest binary-exponent classes, largest first, whose per-class summed
    mass reaches ``top_p`` (one pass over the float32 bits and a per-class sum): whole classes, so they are exactly
    the first tokens of the sorted row, ties included. All rows' candidates are sorted at once, flat, by the key
    (row, descending probability) with a stable sort from id order, and laid out one row each."""
    import torch

    bits = probs.view(torch.int32)  # probabilities >= 0: their bits rise with them
    rank = (
        (126 - (bits >> 23)).clamp_(min=0, max=255).long()
    )  # the class: 0 for p >= 1/2, 1 for [1/4, 1/2) ...
    mass = torch.zeros((probs.shape[0], 256), dtype=probs.dtype, device=probs.device).scatter_add_(
        1, rank, probs
    )
    enough = torch.cumsum(mass, dim=1) >= top_ps[:, None]
    last = torch.where(enough.any(1), enough.to(torch.uint8).argmax(1), 255)
    rows, ids = torch.nonzero(rank <= last[:, None], as_tuple=True)  # row by row, ids ascending
    key = rows * (1 << 31) + ((1 << 31) - 1 - bits[rows, ids].long())
    order = torch.sort(key, stable=True).indices
    rows, ids = rows[order], ids[order]
    counts = torch.bincount(rows, minlength=probs.shape[0])
    place = torch.arange(rows.numel(), device=probs.device) - (torch.cumsum(counts, 0) - counts)[rows]
    width = int(counts.max())
    values = torch.zeros((probs.shape[0], width), dtype=probs.dtype, device=probs.device)
    where = torch.zeros((probs.shape[0], width), dtype=torch.long, device=probs.device)
    values[rows, place] = probs[rows, ids]
    where[rows, place] = ids
    return values, where


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
