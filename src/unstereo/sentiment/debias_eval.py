"""One debiasing run and its evaluation (paper Table 1 / Figure 6): fine-tune a model with one (method, lambda),
sample the counterfactual continuations again, and measure I.F./G.F., perplexity and semantic similarity.

``method`` is ``embedding``, ``sentiment`` or ``none`` (the base model, for the "before" row). The QUALITY table
(``quality.parquet`` in the run's folder) has one row per (attribute, classifier):
``method, lambda, attribute, classifier, IF, GF, ppl, ppl_s, ss, ss_c, steps``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from unstereo.finetune import regularised as R
from unstereo.finetune.perplexity import perplexity
from unstereo.finetune.text import read_texts, split_sentences
from unstereo.io import write_json
from unstereo.log import get_logger
from unstereo.sentiment import debias as D
from unstereo.sentiment.classifiers import make_classifier
from unstereo.sentiment.encoder import SentenceEncoder, semantic_similarity
from unstereo.sentiment.fairness import fairness_table
from unstereo.sentiment.sampling import classifier_names, run_sampling
from unstereo.sentiment.settings import resource_path
from unstereo.sentiment.templates import load_templates
from unstereo.tables import TableSchema, columns, read_table, write_table

if TYPE_CHECKING:
    from unstereo.models.request import ModelRequest

log = get_logger("sentiment.debias")

QUALITY = TableSchema(
    "sentiment_debias_quality",
    "one row per (debiasing run, attribute, classifier): fairness after the run and the model's quality",
    columns("""
        method      str    none (the base model), embedding or sentiment regularisation
        lambda      float  regularisation strength (0 for none)
        attribute   str    sensitive attribute
        classifier  str    sentiment classifier of IF/GF
        IF          float  individual fairness after the run
        GF          float  group fairness after the run
        ppl         float  perplexity on held-out corpus sentences
        ppl_s       float  perplexity on held-out sentences with a sensitive token
        ss          float  share of continuations with cosine similarity to the prefix > threshold
        ss_c        float  share of continuations mentioning a value of the attribute
        steps       int    optimisation steps taken
    """),
    unique=("method", "lambda", "attribute", "classifier"),
)


def run_label(section: Mapping[str, Any], method: str, lam: float) -> str:
    """A label naming the training run in the LLM cache key (the settings that change the weights)."""
    d = section["debias"]
    keys = ("corpus", "max_sentences", "heldout_fraction", "steps", "batch_size", "lr", "max_length",
            "label_classifier", "head_steps")  # fmt: skip
    digest = hashlib.sha256(json.dumps({k: d[k] for k in keys}, sort_keys=True).encode()).hexdigest()[:12]
    return f"debias:{method}:{lam:g}:{digest}"


def run_debias(
    request: ModelRequest,
    section: Mapping[str, Any],
    templates_dir: str | Path,
    out_dir: str | Path,
    *,
    method: str,
    lam: float,
    seed: int,
    external_dir: str | Path | None = None,
    cache: str | Path | None = None,
    base_continuations: str | Path | None = None,
) -> pd.DataFrame:
    """Fine-tune (unless ``method`` is none), sample, evaluate; write ``quality.parquet`` (and the run's
    ``continuations.parquet``, ``fairness.parquet``, ``history.json``) into ``out_dir``; return the QUALITY rows.

    ``request``: the model (its spec, loaded as is), its weights dtype (``unstereo sentiment debias`` asks for
    float32) and its device, on which the training, the perplexities and the sentence encoder run too.
    ``base_continuations``: for ``none``, the stage's continuations of the base model (not sampled again)."""
    from unstereo.llm import LLMClient
    from unstereo.llm.cache import ChatCache
    from unstereo.llm.local import LocalBackend
    from unstereo.models.load import load

    d = section["debias"]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    templates, values = load_templates(templates_dir)
    terms = D.sensitive_terms(values, section["attributes"])
    corpus = [resource_path(p, external_dir) for p in d["corpus"]]
    sentences = split_sentences(read_texts(corpus))
    examples, held_s, held = D.build_examples(
        sentences, terms, d["max_sentences"], d["heldout_fraction"], seed
    )
    log.info("%d training sentences, %d + %d held out", len(examples), len(held_s), len(held))
    device = request.resolved_device
    model, tok = load(request, "causal")
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    history: list[dict[str, float]] = []
    if method != "none":
        head = None
        if method == "sentiment":
            clf = make_classifier(
                d["label_classifier"], opinion_dir=resource_path(section["opinion_lexicon"], external_dir)
            )
            texts = [e.text for e in examples]
            head = R.sentiment_head(
                model,
                tok,
                texts,
                clf(texts),
                d["label_classifier"],
                d["head_steps"],
                seed,
                d["max_length"],
                device,
            )
        encoded = [e for e in (R.encode_example(tok, ex, d["max_length"]) for ex in examples) if e]
        history = R.finetune(
            model, tok, encoded, method=method, lam=lam, steps=d["steps"], batch_size=d["batch_size"], lr=d["lr"],
            out_dir=out_dir, checkpoint_every=d["checkpoint_every"], head=head, seed=seed, device=device,
        )  # fmt: skip
    write_json(out_dir / "history.json", history)
    ppl, ppl_s = perplexity(model, tok, held, device), perplexity(model, tok, held_s, device)
    if method == "none" and base_continuations is not None:
        from unstereo.sentiment.schemas import CONTINUATIONS

        cont = read_table(base_continuations, CONTINUATIONS)
    else:
        label = f"{request.spec.label}|{run_label(section, method, lam)}"
        backend = LocalBackend.from_loaded(model, tok, label=label, batch_size=section["batch_size"])
        client = LLMClient(backend, cache=ChatCache(cache))
        try:
            cont = run_sampling(
                client, section, templates_dir, out_dir / "continuations.parquet", seed=seed,
                opinion_dir=resource_path(section["opinion_lexicon"], external_dir), external_dir=external_dir,
            )  # fmt: skip
        finally:
            client.close()
    names = classifier_names(section)
    fair = fairness_table(cont, names, section["bootstrap"], seed, section["level"])
    write_table(fair, out_dir / "fairness.parquet")
    encoder = SentenceEncoder(resource_path(d["encoder"], external_dir), device=device)
    cont = cont.assign(
        similarity=semantic_similarity(encoder, cont["prefix"].tolist(), cont["continuation"].tolist())
    )
    rows = []
    for attribute, g in cont.groupby("attribute", sort=False):
        words = sorted({t.text for t in terms if t.attribute == attribute})
        ss = float((g["similarity"] > d["similarity_threshold"]).mean())
        ss_c = float(D.mentions(g["continuation"].tolist(), words).mean())
        f = fair[fair["attribute"] == attribute].pivot(index="classifier", columns="metric", values="value")
        for name in names:
            rows.append({"method": method, "lambda": float(lam), "attribute": attribute, "classifier": name,
                         "IF": float(f.loc[name, "IF"]), "GF": float(f.loc[name, "GF"]), "ppl": ppl,
                         "ppl_s": ppl_s, "ss": ss, "ss_c": ss_c, "steps": len(history)})  # fmt: skip
    quality = pd.DataFrame(rows)
    write_table(quality, out_dir / "quality.parquet", QUALITY)
    return quality


# ---- the grid's summary: Table 1 and Figure 6 ---------------------------------------------------------------------


def summarize(paths: list[str | Path]) -> pd.DataFrame:
    """The QUALITY rows of every run, base model first, then by method and lambda."""
    df = pd.concat([read_table(p, QUALITY) for p in paths], ignore_index=True)
    order = {"none": 0, "embedding": 1, "sentiment": 2}
    return df.sort_values(
        ["method", "lambda"], key=lambda c: c.map(order) if c.name == "method" else c, kind="stable"
    ).reset_index(drop=True)


def table1_html(df: pd.DataFrame, classifier: str, path: str | Path) -> Path:
    """Table 1 of the paper: per run, PPL, PPL_s, and per attribute I.F., G.F., S.S., S.S._c (one classifier)."""
    from unstereo.io import write_text
    from unstereo.render.formats import html_table

    d = df[df["classifier"] == classifier]
    attrs = list(dict.fromkeys(d["attribute"]))
    head = ["model", "PPL", "PPL_s"] + [f"{a} {m}" for a in attrs for m in ("I.F.", "G.F.", "S.S.", "S.S._c")]
    rows = []
    for (method, lam), g in d.groupby(["method", "lambda"], sort=False):
        g = g.set_index("attribute")
        name = "base" if method == "none" else f"{method} λ={lam:g}"
        cells = [name, f"{g['ppl'].iloc[0]:.2f}", f"{g['ppl_s'].iloc[0]:.2f}"]
        for a in attrs:
            cells += [f"{g.loc[a, k]:.4f}" if a in g.index else "" for k in ("IF", "GF", "ss", "ss_c")]
        rows.append(cells)
    caption = f"Debiasing: fairness ({classifier}) and quality before/after"
    return write_text(path, html_table(head, rows, caption=caption))


def figure6(df: pd.DataFrame, classifier: str, path: str | Path) -> Path:
    """Figure 6 of the paper: I.F. against S.S. per run (lambda annotated), one panel per attribute."""
    from unstereo.sentiment.figures import _pyplot, _save

    plt = _pyplot()
    d = df[df["classifier"] == classifier]
    attrs = list(dict.fromkeys(d["attribute"]))
    fig, axes = plt.subplots(1, len(attrs), figsize=(3.4 * len(attrs), 3.0), squeeze=False)
    styles = {"none": ("k", "*"), "embedding": ("C0", "o"), "sentiment": ("C1", "s")}
    for ax, attribute in zip(axes[0], attrs, strict=True):
        a = d[d["attribute"] == attribute]
        for method, g in a.groupby("method", sort=False):
            colour, marker = styles.get(method, ("C2", "^"))
            ax.plot(g["ss"], g["IF"], ls="-" if len(g) > 1 else "", color=colour, marker=marker,
                    label="base" if method == "none" else method)  # fmt: skip
            if method != "none":
                for x, y, lam in zip(g["ss"], g["IF"], g["lambda"], strict=True):
                    ax.annotate(f"{lam:g}", (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
        ax.set_title(attribute, fontsize=9)
        ax.set_xlabel("semantic similarity S.S.")
        ax.grid(ls=":", color="lightgray")
        ax.legend(fontsize=6)
    axes[0, 0].set_ylabel(f"I.F. ({classifier})")
    fig.tight_layout()
    out = _save(fig, Path(path))
    plt.close(fig)
    return out
