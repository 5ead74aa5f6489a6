"""Building one model variant: its base model fine-tuned by its intervention at its strength on the section's
training text (:mod:`unstereo.variants.text`), written once as a Hugging Face folder (weights, tokenizer,
``history.json`` with the loss of every step, and last ``variant.json``, :mod:`unstereo.models.variant`).

- ``cda``: the LM loss on the training sentences, ``strength`` (a share in [0, 1]) of those holding a gendered word
  gender-swapped (:mod:`unstereo.variants.swap`);
- ``control``: the LM loss on the same sentences, unswapped, with the same steps, batches and seed;
- ``embedding`` / ``sentiment``: Huang et al.'s regularised fine-tune (:mod:`unstereo.finetune.regularised`) on the
  training sentences holding a gendered word, the counterfactual prefix swapping the first one, lambda =
  ``strength``; the sentiment head is trained on the base's features of those sentences labelled by
  ``label_classifier``.

Resumable: ``checkpoint.pt`` in the folder every ``checkpoint_every`` steps, resumed only by a run of the same
settings (the run's fingerprint), so a resumed build ends with the weights of an uninterrupted one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from unstereo.errors import ConfigError, InputError
from unstereo.io import write_json
from unstereo.log import get_logger
from unstereo.models.variant import VARIANT_FILE

log = get_logger("variants.build")

INTERVENTIONS = ("cda", "control", "embedding", "sentiment")
#: The section's keys that change a variant's weights (with its entry and the seed: the run's fingerprint).
TRAINING_KEYS = ("text", "pairs", "max_sentences", "heldout_sentences", "steps", "batch_size", "lr", "max_length",
                 "label_classifier", "head_steps")  # fmt: skip


def variant_entry(section: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The entry of variant ``name`` with its strength as a number (0 for the control); a ConfigError naming the key
    when the section does not declare it or its intervention is unknown."""
    models = section.get("models") or {}
    if name not in models:
        known = ", ".join(sorted(models)) or "none"
        raise ConfigError(
            f"no variant {name!r} is declared (declared: {known})", key=f"variants.models.{name}"
        )
    entry = dict(models[name])
    if entry.get("intervention") not in INTERVENTIONS:
        raise ConfigError(f"unknown intervention (use one of {', '.join(INTERVENTIONS)})",
                          key=f"variants.models.{name}.intervention")  # fmt: skip
    entry["strength"] = float(entry.get("strength") or 0.0)
    return entry


def fingerprint(section: Mapping[str, Any], entry: Mapping[str, Any], seed: int) -> str:
    """A digest of everything that changes the variant's weights: its entry, the training settings and the seed."""
    data = {"entry": entry, "seed": seed, **{k: section.get(k) for k in TRAINING_KEYS}}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def build_variant(section: Mapping[str, Any], name: str, out_dir: str | Path, *, seed: int,
                  external_dir: str | Path | None = None, device: str = "auto", threads: int | None = None,
                  after_step: Callable[[int], None] | None = None) -> dict[str, Any]:  # fmt: skip
    """Fine-tune variant ``name`` of ``section`` (a validated ``variants`` section) into ``out_dir`` and return its
    record (also ``out_dir/variant.json``). ``after_step(k)`` runs after fine-tuning step k (a test hook)."""
    from unstereo.finetune import regularised as R
    from unstereo.finetune.language_model import finetune_lm
    from unstereo.models.load import load
    from unstereo.models.request import model_request
    from unstereo.variants.swap import pairs_swapper
    from unstereo.variants.text import cda_text, digest, gendered_examples, split_text

    entry = variant_entry(section, name)
    key = f"variants.models.{name}.base"
    request = model_request({"model": entry["base"], "dtype": "float32", "device": device, "threads": threads},
                            key=key, external_dir=external_dir)  # fmt: skip
    if request.spec.is_remote or request.spec.variant:
        raise ConfigError("a variant's base is a local model (not an endpoint or another variant)", key=key)
    request.apply_threads()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / VARIANT_FILE).unlink(missing_ok=True)  # the folder is complete only once the record is written
    split = split_text(section, seed, external_dir)
    sw = pairs_swapper(section["pairs"])
    model, tok = load(request, "causal")
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    dev = request.resolved_device
    intervention, strength = entry["intervention"], entry["strength"]
    run = fingerprint(section, entry, seed)
    common = dict(steps=section["steps"], batch_size=section["batch_size"], lr=section["lr"], out_dir=out_dir,
                  checkpoint_every=section["checkpoint_every"], seed=seed, device=dev, fingerprint=run,
                  after_step=after_step)  # fmt: skip
    counts: dict[str, int] = {"train": len(split.train), "heldout": len(split.heldout)}
    if intervention in ("cda", "control"):
        text, counts["swapped"] = cda_text(split.train, sw, strength if intervention == "cda" else 0.0, seed)
        history = finetune_lm(model, tok, text, max_length=section["max_length"], **common)
    else:
        examples = gendered_examples(split.train, sw)
        text = [e.text for e in examples]
        counts["examples"] = len(examples)
        head = None
        if intervention == "sentiment":
            from unstereo.sentiment.classifiers import make_classifier

            clf = make_classifier(section["label_classifier"])
            head = R.sentiment_head(model, tok, text, clf(text), section["label_classifier"], section["head_steps"],
                                    seed, section["max_length"], dev)  # fmt: skip
        encoded = [e for e in (R.encode_example(tok, ex, section["max_length"]) for ex in examples) if e]
        if not encoded:
            raise InputError(
                f"variant {name!r}: no training sentence holds a gendered word of {section['pairs']}"
            )
        history = R.finetune(model, tok, encoded, method=intervention, lam=strength, head=head, **common)
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    write_json(out_dir / "history.json", history)
    record = {
        "name": name, "base": entry["base"], "base_model": request.spec.to_arg(), "intervention": intervention,
        "strength": strength, "steps": section["steps"], "batch_size": section["batch_size"], "lr": section["lr"],
        "max_length": section["max_length"], "seed": seed, "text": list(section["text"]), "pairs": section["pairs"],
        "text_sha256": digest(text), "heldout_sha256": digest(split.heldout), "sentences": counts,
        "final_loss": history[-1]["loss"] if history else None,
        "fingerprint": run,
    }  # fmt: skip
    write_json(out_dir / VARIANT_FILE, record)
    log.info(
        "variant %s (%s, strength %g) of %s -> %s",
        name,
        intervention,
        strength,
        record["base_model"],
        out_dir,
    )
    return record
