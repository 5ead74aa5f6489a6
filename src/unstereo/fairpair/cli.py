"""``unstereo fairpair``: prompts, sampling, metrics, summary and report of the FairPair stage
(docs/methods.md#fairpair)."""

from __future__ import annotations

import json
from pathlib import Path

import click

import unstereo.models.request as model_request
from unstereo import cli_options
from unstereo.errors import InputError

PAIR = "ORIGINAL:PERTURBED"


class _PairType(click.ParamType):
    """``ORIGINAL:PERTURBED`` on the command line, ``[original, perturbed]`` in the config section."""

    name = PAIR

    def convert(self, value, param, ctx):
        if isinstance(value, (list, tuple)) and len(value) == 2:
            a, b = (str(x) for x in value)
        elif isinstance(value, str):
            a, sep, b = value.partition(":")
            if not sep:
                self.fail(f"{value!r} is not {PAIR}", param, ctx)
        else:
            self.fail(f"{value!r} is not {PAIR}", param, ctx)
        if not a.strip() or not b.strip():
            self.fail(f"{value!r} is not {PAIR}", param, ctx)
        return a.strip(), b.strip()


PAIR_TYPE = _PairType()


#: Where each command's options sit in the fairpair section (``--settings``; an option not listed takes the
#: section's key of its own name). ``llm_model``: the LLM perturbation's model is an argument the rule resolves
#: (``--llm-perturb``), given only with ``perturbation.method: llm``.
SECTION_KEYS = {
    "prompt_file": "prompts.file",
    "occupations": "prompts.occupations",
    "names": "prompts.names",
    "descriptors": "prompts.descriptors",
    "template": "prompts.template",
    "max_prompts": "prompts.max_prompts",
    "words": "perturbation.words",
    "default_pronouns": "perturbation.default_pronouns",
    "llm_model": None,
    "llm_max_tokens": "perturbation.llm.max_tokens",
    "max_dissimilarity": "perturbation.llm.max_dissimilarity",
    "groups": "perturbation.llm.groups",
    "max_ngram": "ngrams.max_n",
    "top_ngrams": "ngrams.top",
    "n_boot": "bootstrap",
}


def fairpair_settings(*, required=()):
    """``--settings``: the fairpair section (the workflow passes it; :func:`unstereo.cli_options.settings`)."""
    return cli_options.settings("fairpair", keys=SECTION_KEYS, required=required)


def read_perturbation(path: str | Path):
    """The rule-based perturbation saved by ``unstereo fairpair prompts`` (``{"names": {...}, "words": {...}}``)."""
    from unstereo.fairpair.perturb import RulePerturbation

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return RulePerturbation(data.get("names", {}), data.get("words", {}))
    except (OSError, ValueError, AttributeError) as exc:
        raise InputError(f"not a perturbation file: {exc}", path=path) from exc


@click.group("fairpair")
def group() -> None:
    """FairPair: continuations of paired prompts x / p(x), bias B against sampling variability V, F = B^2/(V_gp V_pg)."""


@group.command("prompts")
@cli_options.output("writes prompts.parquet and perturbation.json here", kind="dir", dest="out_dir")
@click.option("--file", "prompt_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="user prompts (.csv/.jsonl/.parquet: prompt [, prompt_id, perturbed_prompt]) instead of Common Sents")  # fmt: skip
@click.option("--occupations", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Winogender occupations-stats.tsv [default: $UNSTEREO_EXTERNAL_DIR/reference/winogender/data/...]")  # fmt: skip
@click.option("--name", "names", multiple=True, type=PAIR_TYPE,
              help=f"name pair {PAIR} (repeatable) [default: John:Jane]")  # fmt: skip
@click.option("--descriptor", "descriptors", multiple=True, type=PAIR_TYPE,
              help=f"descriptor pair {PAIR} (repeatable) [default: man:woman]")  # fmt: skip
@click.option("--word", "words", multiple=True, type=PAIR_TYPE,
              help=f"further word pair {PAIR} p replaces in any case (repeatable), e.g. pronouns")  # fmt: skip
@click.option("--default-pronouns/--no-default-pronouns", default=True, show_default=True,
              help="add he:she, him:her, his:her, himself:herself to the words")  # fmt: skip
@click.option(
    "--template", default=None, help="Common Sents template with {name}, {descriptor}, {occupation}"
)
@click.option("--max-prompts", type=click.IntRange(1), default=None, help="keep the first N prompts")
@fairpair_settings()
def prompts_cmd(out_dir, prompt_file, occupations, names, descriptors, words, default_pronouns, template,
                max_prompts) -> None:  # fmt: skip
    """Build the prompt table (x and p(x)) and the rule-based perturbation p."""
    from unstereo.fairpair.perturb import PRONOUNS_MALE_TO_FEMALE, RulePerturbation
    from unstereo.fairpair.prompts import TEMPLATE, common_sents, read_occupations, read_prompt_file
    from unstereo.fairpair.schemas import PROMPTS
    from unstereo.io import write_json
    from unstereo.models.spec import external_dir_default
    from unstereo.tables import write_table

    name_pairs = list(names) or [("John", "Jane")]
    desc_pairs = list(descriptors) or [("man", "woman")]
    word_map = {**(PRONOUNS_MALE_TO_FEMALE if default_pronouns else {}), **dict(desc_pairs),
                **dict(words)}  # fmt: skip
    try:
        p = RulePerturbation(dict(name_pairs), word_map)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    if prompt_file:
        table = read_prompt_file(prompt_file, p, max_prompts)
    else:
        occ_path = occupations or external_dir_default() / "reference/winogender/data/occupations-stats.tsv"
        table = common_sents(
            read_occupations(occ_path), name_pairs, desc_pairs, p, template or TEMPLATE, max_prompts
        )
    out = Path(out_dir)
    write_table(table, out / "prompts.parquet", PROMPTS)
    write_json(out / "perturbation.json", {"names": dict(p.names), "words": dict(p.words)})
    click.echo(f"{out}: {len(table)} prompts", err=True)


@group.command("sample", epilog=cli_options.MODEL_FORMS)
@click.argument("model")
@click.argument("prompts_dir", type=click.Path(exists=True, file_okay=False))
@cli_options.output("writes samples.parquet, perturbations.parquet, continuations.parquet, usage.json here",
                    kind="dir", dest="out_dir")  # fmt: skip
@click.option(
    "-n", "--n", "n", type=click.IntRange(2), default=100, show_default=True, help="samples per side"
)
@click.option("--temperature", type=click.FloatRange(0, min_open=True), default=1.0, show_default=True)
@click.option("--top-p", type=click.FloatRange(0, 1, min_open=True), default=0.9, show_default=True)
@click.option("--max-new-tokens", type=click.IntRange(1), default=128, show_default=True)
@cli_options.seed(0, "sample j of x and of p(x) uses seed SEED + j")
@cli_options.sample_batch_size
@click.option(
    "--concurrency", type=click.IntRange(1), default=4, show_default=True, help="endpoint: parallel calls"
)
@click.option("--chunk-size", type=click.IntRange(1), default=64, show_default=True,
              help="prompt sides per resumable chunk")  # fmt: skip
@model_request.device_option()
@model_request.dtype_option()
@click.option(
    "--cache", type=click.Path(dir_okay=False), default=None, help="SQLite LLM cache (default: none)"
)
@cli_options.threads
@click.option("--llm-perturb", "llm_model", default=None,
              help="perturb the continuations of x with this chat model (the paper's prompt and filters) "
                   "instead of the rules")  # fmt: skip
@click.option("--llm-max-tokens", type=click.IntRange(1), default=256, show_default=True)
@click.option("--max-dissimilarity", type=click.FloatRange(0, 1), default=0.15, show_default=True,
              help="LLM perturbation: largest Jaccard dissimilarity to the input")  # fmt: skip
@click.option("--group", "groups", nargs=2, default=("male", "female"), show_default=True,
              help="LLM perturbation: the two groups named in the instruction")  # fmt: skip
@cli_options.model_options
@fairpair_settings()
def sample_cmd(model, prompts_dir, out_dir, n, temperature, top_p, max_new_tokens, seed, batch_size, concurrency,
               chunk_size, device, dtype, cache, threads, llm_model, llm_max_tokens, max_dissimilarity, groups,
               api_key_env, external_dir) -> None:  # fmt: skip
    """Sample N continuations of x and of p(x) for every prompt of PROMPTS_DIR with MODEL and apply p to those of x.

    PROMPTS_DIR is the output of `unstereo fairpair prompts`. Resumable (chunks beside continuations.parquet) and
    cached (--cache).
    """
    from unstereo.fairpair.llm_perturb import LLMPerturbSettings
    from unstereo.fairpair.sample import map_llm, map_rules, sample_fairpairs
    from unstereo.fairpair.schemas import PERTURBATIONS, PROMPTS, SAMPLES
    from unstereo.llm import make_client
    from unstereo.llm.sample import SampleSettings
    from unstereo.tables import read_table, write_table

    pdir = Path(prompts_dir)
    prompts = read_table(pdir / "prompts.parquet", PROMPTS)
    perturbation = read_perturbation(pdir / "perturbation.json")
    # The model options, whole: the sampled model's request (and the perturbing model's, with the same options).
    values = {"device": device, "dtype": dtype, "batch_size": batch_size, "threads": threads,
              "external_dir": external_dir, "api_key_env": api_key_env}  # fmt: skip
    request = model_request.request_from_cli(model, values)
    request.apply_threads()
    settings = SampleSettings(n, temperature, top_p, max_new_tokens, (), seed)
    out = Path(out_dir)
    client = make_client(request, cache=cache, concurrency=concurrency)
    try:
        samples = sample_fairpairs(client, prompts, out / "continuations.parquet", settings,
                                   chunk_size=chunk_size, source=pdir / "prompts.parquet")  # fmt: skip
        client.write_usage(out / "usage.json")
    finally:
        client.close()
    if llm_model:
        prequest = model_request.request_from_cli(llm_model, values, param="--llm-perturb")
        pclient = make_client(prequest, cache=cache, concurrency=concurrency)
        try:
            psettings = LLMPerturbSettings(groups[0], groups[1], llm_max_tokens, max_dissimilarity)
            samples, perturbations = map_llm(samples, prompts, pclient, psettings)
            pclient.write_usage(out / "perturb_usage.json")
        finally:
            pclient.close()
    else:
        samples, perturbations = map_rules(samples, perturbation)
    write_table(perturbations, out / "perturbations.parquet", PERTURBATIONS)
    write_table(samples, out / "samples.parquet", SAMPLES)
    accepted = int(perturbations["accepted"].sum())
    click.echo(f"{out}: {len(samples)} samples of {len(prompts)} prompts with {client.model_id}; "
               f"{accepted}/{len(perturbations)} perturbations accepted", err=True)  # fmt: skip


@group.command("metrics")
@click.argument("samples", type=click.Path(exists=True, dir_okay=False))
@cli_options.output(
    "writes per_prompt.parquet, curves.parquet, ngrams.parquet here", kind="dir", dest="out_dir"
)
@click.option("--model", "model_name", required=True, help="the model's short name (the `model` column)")
@click.option(
    "-n", "--n", "n", type=click.IntRange(2), default=None, help="samples per side that were drawn [required]"
)
@click.option(
    "--folds", "folds", type=click.IntRange(2), multiple=True, help="further fold counts k (repeatable)"
)
@click.option("--phi", "phis", type=click.Choice(["jaccard", "sentiment"]), multiple=True,
              help="dissimilarities [default: both]")  # fmt: skip
@click.option("--max-ngram", type=click.IntRange(1), default=4, show_default=True)
@click.option("--top-ngrams", type=click.IntRange(1), default=15, show_default=True)
@fairpair_settings(required=("n",))
def metrics_cmd(samples, out_dir, model_name, n, folds, phis, max_ngram, top_ngrams) -> None:
    """B, V_gp, V_pg, F per prompt (k = n and each --folds k), the curves of Figures 3-4 and the n-grams of Figure 6."""
    from unstereo.fairpair.compute import over_represented, per_prompt
    from unstereo.fairpair.metrics import PHIS
    from unstereo.fairpair.schemas import CURVES, NGRAMS, PER_PROMPT, SAMPLES
    from unstereo.tables import read_table, write_table

    df = read_table(samples, SAMPLES)
    per, curves = per_prompt(df, model_name, n, folds, phis or PHIS)
    out = Path(out_dir)
    write_table(per, out / "per_prompt.parquet", PER_PROMPT)
    write_table(curves, out / "curves.parquet", CURVES)
    write_table(over_represented(df, model_name, max_ngram, top_ngrams), out / "ngrams.parquet", NGRAMS)
    click.echo(f"{out}: {len(per)} per-prompt rows", err=True)


@group.command("summary")
@click.argument("per_prompt", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@cli_options.output("summary table (.parquet or .csv)")
@click.option("--bootstrap", "n_boot", type=click.IntRange(1), default=1000, show_default=True,
              help="bootstrap resamples of the prompts")  # fmt: skip
@click.option(
    "--level", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95, show_default=True
)
@cli_options.seed(0, "bootstrap seed")
@fairpair_settings()
def summary_cmd(per_prompt, output, n_boot, level, seed) -> None:
    """Means over prompts per (model, phi, k), bootstrap interval of mean F and the paired t-test of B against V."""
    import pandas as pd

    from unstereo.fairpair.compute import summarize
    from unstereo.fairpair.schemas import PER_PROMPT, SUMMARY
    from unstereo.tables import read_table, write_table

    per = pd.concat([read_table(p, PER_PROMPT) for p in per_prompt], ignore_index=True)
    write_table(summarize(per, n_boot, level, seed), output, SUMMARY)
    click.echo(f"{output}: {per['model'].nunique()} model(s)", err=True)


@group.command("report")
@click.argument("summary", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--per-prompt", "per_prompt", multiple=True, required=True, type=click.Path(exists=True, dir_okay=False)
)
@click.option("--curves", multiple=True, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--ngrams", multiple=True, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-n",
    "--n",
    "n",
    type=click.IntRange(2),
    default=None,
    help="samples per side (the k of Table 3) [required]",
)
@cli_options.output(
    "writes fairpair_table3.{csv,md,tex,html}, fairpair_f.{csv,md,tex,html} and fairpair_*.png here",
    kind="dir",
    dest="out_dir",
)
@fairpair_settings(required=("n",))
def report_cmd(summary, per_prompt, curves, ngrams, n, out_dir) -> None:
    """Table 3 and Figures 3-6 of the paper for the models of SUMMARY."""
    import pandas as pd

    from unstereo.fairpair.report import plot_curves, plot_distributions, plot_ngrams, write_table3
    from unstereo.fairpair.schemas import CURVES, NGRAMS, PER_PROMPT, SUMMARY
    from unstereo.tables import read_table

    def cat(paths, schema):
        return pd.concat([read_table(p, schema) for p in paths], ignore_index=True)

    out = Path(out_dir)
    write_table3(read_table(summary, SUMMARY), n, out)
    c = cat(curves, CURVES)
    plot_curves(c, "samples", out / "fairpair_samples.png")
    plot_curves(c, "folds", out / "fairpair_folds.png")
    plot_distributions(cat(per_prompt, PER_PROMPT), n, out / "fairpair_distributions.png")
    plot_ngrams(cat(ngrams, NGRAMS), out / "fairpair_ngrams.png")
    click.echo(f"{out}: FairPair table and figures", err=True)
