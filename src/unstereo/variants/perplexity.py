"""Side effects: each variant's perplexity on the held-out sentences against its base's
(:data:`unstereo.variants.schemas.PERPLEXITY`), so that a "debiased" variant that merely models text worse shows as
such (Huang et al. 2020's Table 1 reports the same for their regularisers)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from unstereo.errors import InputError
from unstereo.log import get_logger

log = get_logger("variants.perplexity")


def perplexity_table(folders: Sequence[str | Path], section: Mapping[str, Any], *, seed: int,
                     external_dir: str | Path | None = None, device: str = "auto") -> pd.DataFrame:  # fmt: skip
    """The PERPLEXITY rows of the variants in ``folders``: the held-out sentences of ``section`` at ``seed`` (those
    the variants were built with: an InputError naming the record when they differ) scored under each variant and
    under its base (each base loaded once)."""
    from unstereo.finetune.perplexity import perplexity
    from unstereo.models.load import load
    from unstereo.models.request import model_request
    from unstereo.models.variant import VARIANT_FILE, read_variant
    from unstereo.variants.swap import pairs_swapper
    from unstereo.variants.text import digest, split_text

    heldout = split_text(section, seed, external_dir).heldout
    sw = pairs_swapper(section["pairs"])
    gendered = [s for s in heldout if sw.pattern.search(s)]

    def scores(model_entry: Any, key: str) -> tuple[float, float]:
        request = model_request({"model": model_entry, "dtype": "float32", "device": device}, key=key,
                                external_dir=external_dir)  # fmt: skip
        model, tok = load(request, "causal")
        dev = request.resolved_device
        ppl = perplexity(model, tok, heldout, dev)
        return ppl, perplexity(model, tok, gendered, dev) if gendered else float("nan")

    base_scores: dict[str, tuple[float, float]] = {}
    rows = []
    for folder in folders:
        folder = Path(folder)
        record = read_variant(folder)
        if record.get("heldout_sha256") != digest(heldout):
            raise InputError(
                "built on other held-out sentences than the variants section gives now (its text, "
                "heldout_sentences or seed changed): rebuild the variant", path=folder / VARIANT_FILE,
            )  # fmt: skip
        base = record["base_model"]
        if base not in base_scores:
            base_scores[base] = scores(record["base"], f"{folder / VARIANT_FILE}: base")
        variant_scores = scores(str(folder), str(folder))
        (pb, gb), (pv, gv) = base_scores[base], variant_scores
        rows.append({"variant": record["name"], "base": base, "intervention": record["intervention"],
                     "strength": float(record["strength"]), "steps": int(record["steps"]), "ppl_base": pb,
                     "ppl_variant": pv, "ppl_ratio": pv / pb, "ppl_gendered_base": gb, "ppl_gendered_variant": gv,
                     "heldout_sentences": len(heldout), "heldout_gendered": len(gendered)})  # fmt: skip
        log.info("%s: perplexity %.3f (base %.3f)", record["name"], pv, pb)
    return pd.DataFrame(rows)
