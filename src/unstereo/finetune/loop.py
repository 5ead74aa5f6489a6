"""The one fine-tuning loop: AdamW over shuffled mini-batches of training items, resumable from a checkpoint.

``checkpoint.pt`` in the run's folder (model, optimiser, Python and torch random states, the rest of the shuffled
order, the loss log, the step and the run's fingerprint) is written every ``checkpoint_every`` steps and removed when
training ends, so a run killed between two checkpoints resumes at the last one and ends with the same weights as
an uninterrupted run of the same seed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from unstereo.io import atomic_path
from unstereo.log import get_logger, progress

log = get_logger("finetune.loop")

CHECKPOINT = "checkpoint.pt"

#: A loss function: the batch's training items -> named scalar tensors, ``loss`` (the one minimised) first.
LossFn = Callable[[list[Any]], Mapping[str, Any]]


def train(model, items: Sequence[Any], loss_fn: LossFn, *, steps: int, batch_size: int, lr: float,
          out_dir: str | Path, checkpoint_every: int = 50, seed: int = 0, device: str = "cpu",
          fingerprint: str | None = None, desc: str = "fine-tune",
          after_step: Callable[[int], None] | None = None) -> list[dict[str, float]]:  # fmt: skip
    """``steps`` AdamW steps (learning rate ``lr``) on ``loss_fn`` of batches of ``batch_size`` items, the items
    reshuffled by ``seed`` each time they run out; resumable from ``out_dir/checkpoint.pt``. Returns the loss log:
    one row per step, ``step`` then the values of ``loss_fn``. A checkpoint of another ``fingerprint`` (a run of
    other settings) is not resumed. ``after_step(k)`` runs after step k (a test hook). The model ends in eval mode."""
    import torch

    if not items:
        raise ValueError("no training items")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    ckpt = out_dir / CHECKPOINT
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    rng = random.Random(seed)
    torch.manual_seed(seed)  # dropout
    order: list[int] = []
    history: list[dict[str, float]] = []
    start = 0
    if ckpt.exists():
        state = torch.load(ckpt, map_location=device, weights_only=False)
        if state.get("fingerprint") != fingerprint:
            log.warning("%s is of a run with other settings: starting afresh", ckpt)
        else:
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["optimizer"])
            rng.setstate(state["rng"])
            torch.set_rng_state(state["torch_rng"])
            order, history, start = state["order"], state["history"], state["step"]
            log.info("resuming %s at step %d/%d", desc, start, steps)
    model.train()
    for step in progress(range(start, steps), desc=desc, total=steps - start, unit="step"):
        if len(order) < batch_size:
            more = list(range(len(items)))
            rng.shuffle(more)
            order += more
        idx, order = order[:batch_size], order[batch_size:]
        opt.zero_grad()
        values = loss_fn([items[i] for i in idx])
        values["loss"].backward()
        opt.step()
        history.append({"step": step + 1, **{k: v.item() for k, v in values.items()}})
        if (step + 1) % checkpoint_every == 0 and step + 1 < steps:
            state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "rng": rng.getstate(),
                     "torch_rng": torch.get_rng_state(), "order": order, "history": history, "step": step + 1,
                     "fingerprint": fingerprint}  # fmt: skip
            with atomic_path(ckpt) as tmp:
                torch.save(state, tmp)
        if after_step is not None:  # a test hook (e.g. a simulated kill)
            after_step(step + 1)
    model.eval()
    ckpt.unlink(missing_ok=True)
    return history
