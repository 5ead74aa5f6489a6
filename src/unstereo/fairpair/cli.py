"""``unstereo fairpair``: prompts, sampling, metrics, summary and report of the FairPair stage
(docs/methods.md#fairpair)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from unstereo import cli_options
from unstereo.config.settings import command_seed, section
from unstereo.errors import InputError

#: The fairpair section's settings (fairpair.schema.yaml): every command gets them whole as ``settings``
#: (``--settings``, the workflow passes the section), with override flags generated from the schema.
SECTION = section("fairpair")


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
@SECTION.command("prompts.file", "prompts.occupations", "prompts.names", "prompts.descriptors", "perturbation.words",
                 "perturbation.default_pronouns", "prompts.template", "prompts.max_prompts")  # fmt: skip
def prompts_cmd(out_dir, settings) -> None:
    """Build the prompt table (x and p(x)) and the rule-based perturbation p."""
    from unstereo.fairpair.perturb import PRONOUNS_MALE_TO_FEMALE, RulePerturbation
    from unstereo.fairpair.prompts import common_sents, read_occupations, read_prompt_file
    from unstereo.fairpair.schemas import PROMPTS
    from unstereo.io import write_json
    from unstereo.models.spec import external_dir_default
    from unstereo.tables import write_table

    p_cfg = settings.prompts
    name_pairs = [tuple(pair) for pair in p_cfg.names]
    desc_pairs = [tuple(pair) for pair in p_cfg.descriptors]
    words = [tuple(pair) for pair in settings.perturbation.words]
    word_map = {**(PRONOUNS_MALE_TO_FEMALE if settings.perturbation.default_pronouns else {}), **dict(desc_pairs),
                **dict(words)}  # fmt: skip
    try:
        p = RulePerturbation(dict(name_pairs), word_map)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    if p_cfg.file:
        table = read_prompt_file(p_cfg.file, p, p_cfg.max_prompts)
    else:
        occ_path = (
            p_cfg.occupations or external_dir_default() / "reference/winogender/data/occupations-stats.tsv"
        )
        table = common_sents(
            read_occupations(occ_path), name_pairs, desc_pairs, p, p_cfg.template, p_cfg.max_prompts
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
@cli_options.threads
@click.option("--llm-perturb", "llm_model", default=None,
              help="perturb the continuations of x with this chat model (the paper's prompt and filters) "
                   "instead of the rules")  # fmt: skip
@cli_options.model_options
@SECTION.command("n", "temperature", "top_p", "max_new_tokens", "seed", "batch_size", "concurrency", "chunk_size",
                 "device", "dtype", "cache", "perturbation.llm.max_tokens", "perturbation.llm.max_dissimilarity",
                 "perturbation.llm.groups")  # fmt: skip
def sample_cmd(model, prompts_dir, out_dir, threads, llm_model, api_key_env, external_dir, settings) -> None:
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
    values = {"device": settings.device, "dtype": settings.dtype, "batch_size": settings.batch_size,
              "threads": threads, "external_dir": external_dir, "api_key_env": api_key_env}  # fmt: skip
    request = cli_options.request_from_cli(model, values)
    request.apply_threads()
    sampling = SampleSettings(settings.n, settings.temperature, settings.top_p, settings.max_new_tokens, (),
                              command_seed(settings))  # fmt: skip
    out = Path(out_dir)
    cache = settings.cache  # null: none here (the rule passes the shared one)
    client = make_client(request, cache=cache, concurrency=settings.concurrency)
    try:
        samples = sample_fairpairs(client, prompts, out / "continuations.parquet", sampling,
                                   chunk_size=settings.chunk_size, source=pdir / "prompts.parquet")  # fmt: skip
        client.write_usage(out / "usage.json")
    finally:
        client.close()
    if llm_model:
        prequest = cli_options.request_from_cli(llm_model, values, param="--llm-perturb")
        pclient = make_client(prequest, cache=cache, concurrency=settings.concurrency)
        try:
            llm = settings.perturbation.llm
            psettings = LLMPerturbSettings(
                llm.groups[0], llm.groups[1], llm.max_tokens, llm.max_dissimilarity
            )
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
@SECTION.command("n", "folds", "phis", "ngrams.max_n", "ngrams.top", required=("n",))
def metrics_cmd(samples, out_dir, model_name, settings) -> None:
    """B, V_gp, V_pg, F per prompt (k = n and each --folds k), the curves of Figures 3-4 and the n-grams of Figure 6."""
    from unstereo.fairpair.compute import over_represented, per_prompt
    from unstereo.fairpair.schemas import CURVES, NGRAMS, PER_PROMPT, SAMPLES
    from unstereo.tables import read_table, write_table

    df = read_table(samples, SAMPLES)
    per, curves = per_prompt(df, model_name, settings.n, tuple(settings.folds), tuple(settings.phis))
    out = Path(out_dir)
    write_table(per, out / "per_prompt.parquet", PER_PROMPT)
    write_table(curves, out / "curves.parquet", CURVES)
    ngrams = over_represented(df, model_name, settings.ngrams.max_n, settings.ngrams.top)
    write_table(ngrams, out / "ngrams.parquet", NGRAMS)
    click.echo(f"{out}: {len(per)} per-prompt rows", err=True)


@group.command("summary")
@click.argument("per_prompt", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@cli_options.output("summary table (.parquet or .csv)")
@SECTION.command("bootstrap", "level", "seed")
def summary_cmd(per_prompt, output, settings) -> None:
    """Means over prompts per (model, phi, k), bootstrap interval of mean F and the paired t-test of B against V."""
    import pandas as pd

    from unstereo.fairpair.compute import summarize
    from unstereo.fairpair.schemas import PER_PROMPT, SUMMARY
    from unstereo.tables import read_table, write_table

    per = pd.concat([read_table(p, PER_PROMPT) for p in per_prompt], ignore_index=True)
    write_table(summarize(per, settings.bootstrap, settings.level, command_seed(settings)), output, SUMMARY)
    click.echo(f"{output}: {per['model'].nunique()} model(s)", err=True)


@group.command("report")
@click.argument("summary", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--per-prompt", "per_prompt", multiple=True, required=True, type=click.Path(exists=True, dir_okay=False)
)
@click.option("--curves", multiple=True, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--ngrams", multiple=True, required=True, type=click.Path(exists=True, dir_okay=False))
@cli_options.output(
    "writes fairpair_table3.{csv,md,tex,html}, fairpair_f.{csv,md,tex,html} and fairpair_*.png here",
    kind="dir",
    dest="out_dir",
)
@SECTION.command("n", required=("n",))
def report_cmd(summary, per_prompt, curves, ngrams, out_dir, settings) -> None:
    """Table 3 and Figures 3-6 of the paper for the models of SUMMARY."""
    import pandas as pd

    from unstereo.fairpair.report import plot_curves, plot_distributions, plot_ngrams, write_table3
    from unstereo.fairpair.schemas import CURVES, NGRAMS, PER_PROMPT, SUMMARY
    from unstereo.tables import read_table

    def cat(paths, schema):
        return pd.concat([read_table(p, schema) for p in paths], ignore_index=True)

    out = Path(out_dir)
    n = settings.n
    write_table3(read_table(summary, SUMMARY), n, out)
    c = cat(curves, CURVES)
    plot_curves(c, "samples", out / "fairpair_samples.png")
    plot_curves(c, "folds", out / "fairpair_folds.png")
    plot_distributions(cat(per_prompt, PER_PROMPT), n, out / "fairpair_distributions.png")
    plot_ngrams(cat(ngrams, NGRAMS), out / "fairpair_ngrams.png")
    click.echo(f"{out}: FairPair table and figures", err=True)
