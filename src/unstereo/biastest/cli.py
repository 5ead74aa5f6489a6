"""``unstereo biastest``: BiasTestGPT (docs/methods.md#biastestgpt) - specifications, sentence pairs,
generation, scoring, summary."""

from __future__ import annotations

import click

import unstereo.models.request as model_request
from unstereo import cli_options

REFERENCE_HELP = "folder of the BiasTestGPT release [default: {external-dir}/reference/biastestgpt]"
QUIRKS_HELP = (
    "the release's pairs as the authors' script scores them: the template with [T] filled and [R] left literal; "
    "off: the released full sentences"
)


class _CommaList(click.ParamType):
    """A comma-separated list on the command line (``1,2,3``), a list in the config section (``[1, 2, 3]``): the
    command gets the comma-separated text either way."""

    name = "LIST"

    def convert(self, value, param, ctx):
        if isinstance(value, (list, tuple)):
            return ",".join(str(v) for v in value)
        return str(value)


COMMA_LIST = _CommaList()

#: Where the commands' options sit in the biastest section (``--settings``; an option not listed takes the
#: section's key of its own name).
SECTION_KEYS = {
    "generator": "released.generator",
    "runs": "released.runs",
    "rounds": "bootstrap.rounds",
    "per_attribute": "bootstrap.per_attribute",
}


def biastest_settings(f):
    """``--settings``: the biastest section (the workflow passes it; :func:`unstereo.cli_options.settings`)."""
    return cli_options.settings("biastest", keys=SECTION_KEYS)(f)


def _reference_dir(reference_dir: str | None, external_dir: str | None) -> str:
    from pathlib import Path

    from unstereo.models.spec import external_dir_default

    if reference_dir:
        return reference_dir
    return str(Path(external_dir or external_dir_default()) / "reference" / "biastestgpt")


def _spec(spec: str, reference_dir: str):
    """(specification, is a release one) from a release name/tag or a file (``FILE:NAME`` when it holds several)."""
    from unstereo.biastest.run import get_spec, is_spec_file
    from unstereo.biastest.spec import load_spec_file, release_spec

    path, _, name = spec.rpartition(":")
    if not (name and is_spec_file(path)):
        path, name = spec, ""
    if not is_spec_file(path):
        return release_spec(spec, reference_dir), True
    specs = load_spec_file(path)
    if not name and len(specs) > 1:
        raise click.BadParameter(
            f"{path} holds {len(specs)} specifications: give FILE:NAME", param_hint="SPEC"
        )
    return get_spec(path, name or specs[0].name, reference_dir), False


@click.group("biastest")
def group() -> None:
    """BiasTestGPT: test sentences for a bias specification, Stereotype Score, an inspection page."""


def _spec_options(name: str, settings: str, values: dict) -> dict:
    """``values`` (options of ``biastest pairs``) with specification ``name``'s ``per_spec`` entry of
    ``--settings`` over the section's values: an option given on the command line keeps its value, as over the
    section (:func:`unstereo.cli_options.section_values`)."""
    from click.core import ParameterSource

    from unstereo.biastest.run import load_section, spec_overrides
    from unstereo.config import read_section_arg

    per_spec = read_section_arg(settings, "biastest").get("per_spec")
    if not per_spec:
        return values
    overrides = spec_overrides(load_section({"per_spec": per_spec}), name)  # validated: errors name the key
    ctx = click.get_current_context()
    params = {p.name: p for p in ctx.command.params}
    option = {path: opt for opt, path in SECTION_KEYS.items()}
    unset = (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)
    out = dict(values)
    for path, value in overrides.items():
        opt = option.get(path, path)
        if opt in out and ctx.get_parameter_source(opt) in unset:
            out[opt] = params[opt].process_value(ctx, value)
    return out


@group.command("specs")
@click.option("--reference-dir", default=None, type=click.Path(file_okay=False), help=REFERENCE_HELP)
@cli_options.external_dir
def specs_cmd(reference_dir, external_dir) -> None:
    """List the release's specifications: name, app tag, groups and attribute sets with their term counts."""
    from unstereo.biastest.spec import release_aliases, release_specs

    ref = _reference_dir(reference_dir, external_dir)
    tags = {v: k for k, v in release_aliases().items()}
    for name, s in release_specs(ref).items():
        groups = " / ".join(f"{label} ({len(t)})" for label, t in s.groups)
        attrs = " / ".join(f"{label} ({len(t)})" for label, t in s.attributes)
        click.echo(f"{name}\t{tags.get(name, '')}\t{groups}\t{attrs}")


@group.command("pairs")
@click.argument("spec")
@cli_options.output("pairs parquet to write (pair_id, spec, attribute, group_term_a/b, sentence_a/b, ...).")
@click.option("--sources", type=COMMA_LIST, default="released,template", show_default=True,
              help="comma-separated: released (the release's generated pairs), template (manual templates)")  # fmt: skip
@click.option("--generated", type=click.Path(exists=True, dir_okay=False), default=None,
              help="generated pairs (from `unstereo biastest generate`) to include")  # fmt: skip
@click.option("--template", type=click.Choice(["release", "spec"]), default="release", show_default=True,
              help="template baseline: the release's filled templates, or the specification's templates")  # fmt: skip
@click.option("--generator", type=click.Choice(["gpt-3.5", "megatron"]), default="gpt-3.5", show_default=True)
@click.option("--runs", type=COMMA_LIST, default="1,2,3,4,5", show_default=True,
              help="the release's generation runs to load")  # fmt: skip
@click.option("--max-pairs-per-spec", type=click.IntRange(1), default=None,
              help="at most N pairs per source, attribute terms balanced (default: all)")  # fmt: skip
@cli_options.seed(0, "seed of the sub-sampling")
@cli_options.reference_quirks(QUIRKS_HELP)
@click.option("--reference-dir", default=None, type=click.Path(file_okay=False), help=REFERENCE_HELP)
@cli_options.external_dir
@biastest_settings
def pairs_cmd(spec, output, sources, generated, template, generator, runs, max_pairs_per_spec, seed,
              reference_quirks, reference_dir, external_dir, settings) -> None:  # fmt: skip
    """Build the pair table of SPEC: a release name (Math_Arts_vs_Male_Female), an app tag (male_female__math_arts)
    or a YAML/JSON specification file (FILE:NAME when it holds several). SPEC's entry of the section's `per_spec`
    (--settings) sets its own released generator, runs and cap; flags still override."""
    from unstereo.biastest.run import build_pairs
    from unstereo.biastest.schemas import PAIRS
    from unstereo.tables import write_table

    ref = _reference_dir(reference_dir, external_dir)
    s, release = _spec(spec, ref)
    if settings:
        own = _spec_options(s.name, settings, {"generator": generator, "runs": runs,
                                               "max_pairs_per_spec": max_pairs_per_spec})  # fmt: skip
        generator, runs, max_pairs_per_spec = own["generator"], own["runs"], own["max_pairs_per_spec"]
    try:
        run_list = tuple(int(r) for r in runs.split(",") if r.strip())
    except ValueError as exc:
        raise click.BadParameter(f"{runs!r}: comma-separated integers", param_hint="--runs") from exc
    df = build_pairs(s, sources=[x.strip() for x in sources.split(",") if x.strip() not in ("", "none")], reference_dir=ref,
                     release=release, generated=generated, template=template, generator=generator, runs=run_list,
                     max_pairs=max_pairs_per_spec, seed=seed, reference_quirks=reference_quirks)  # fmt: skip
    write_table(df, output, PAIRS)
    click.echo(f"{output}: {len(df)} pairs of {s.name} ({df['source'].value_counts().to_dict()})", err=True)


@group.command("generate")
@click.argument("spec")
@cli_options.output("writes generated.parquet (pairs), generations.parquet (every try), usage.json", kind="dir",
                    dest="out_dir", flag="--out-dir")  # fmt: skip
@biastest_settings
@click.option("--model", default=None, help="the chat model, overrides settings; " + cli_options.MODEL_FORMS)
@cli_options.model_options
@click.option("--cache", default=None, type=click.Path(dir_okay=False), help="SQLite cache of the LLM calls")
@cli_options.seed(None, "seed of the group-term draws and the sampled calls; overrides settings")
@click.option("--reference-dir", default=None, type=click.Path(file_okay=False), help=REFERENCE_HELP)
@cli_options.threads
def generate_cmd(
    spec, out_dir, settings, model, api_key_env, external_dir, cache, seed, reference_dir, threads
) -> None:
    """Generate test-sentence pairs for SPEC with a chat model (paper Algorithm 1); every call is cached."""
    from pathlib import Path

    from unstereo.biastest.generate import GenerationSettings, generate_pairs
    from unstereo.biastest.run import load_section
    from unstereo.biastest.schemas import GENERATIONS, PAIRS
    from unstereo.config import read_section_arg
    from unstereo.llm import make_client
    from unstereo.tables import write_table

    section = load_section(read_section_arg(settings, "biastest"))
    g = section["generate"]
    ref = _reference_dir(reference_dir, external_dir)
    s, _ = _spec(spec, ref)
    # The chat model's request: --model (a usage error names MODEL) or the section's model, with the section's
    # device, dtype and batch size and --threads.
    values = {"device": g["device"], "dtype": g["dtype"], "batch_size": g["batch_size"], "threads": threads}
    if model:
        request = model_request.request_from_cli(
            model, {**values, "external_dir": external_dir, "api_key_env": api_key_env}
        )
    else:
        request = model_request.model_request({**values, "model": g["model"]}, key="biastest.generate.model",
                                              external_dir=external_dir, api_key_env=api_key_env)  # fmt: skip
    request.apply_threads()
    out = Path(out_dir)
    client = make_client(request, cache=cache or g["cache"] or str(out / "llm-cache.sqlite"))
    settings_ = GenerationSettings(
        t=g["t"], max_tries=g["max_tries"], temperature=g["temperature"], rewrite_temperature=g["rewrite_temperature"],
        max_tokens=g["max_tokens"], pairing=g["pairing"], case_sensitive=g["case_sensitive"],
        max_attribute_terms=g["max_attribute_terms"], seed=seed if seed is not None else (section["seed"] or 0),
    )  # fmt: skip
    try:
        pairs, gens = generate_pairs(s, client, settings_)
        write_table(gens, out / "generations.parquet", GENERATIONS)
        write_table(pairs, out / "generated.parquet", PAIRS)
        client.write_usage(out / "usage.json", {"spec": s.name})
    finally:
        client.close()
    click.echo(f"{s.name}: {len(pairs)} pairs kept of {len(gens)} generations ({client.model_id})", err=True)


@group.command("score")
@click.argument("model")
@click.argument("pairs", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", "outputs", multiple=True, required=True, type=click.Path(dir_okay=False),
              help="scores parquet to write, once per PAIRS file in the same order (pair_id, score_a, score_b, "
                   "logp_a/b, ntok_a/b, model, ...)")  # fmt: skip
@click.option("--name", default=None, help="model name for the `model` column (default: MODEL as given)")
@model_request.options(masked="choice", bos_policy=False)
@click.option("--causal-score", type=click.Choice(["mean", "sum"]), default="mean", show_default=True,
              help="causal LM sentence score: mean token log-prob (the paper) or summed log-prob")  # fmt: skip
@click.option(
    "--chunk-size", default=500, show_default=True, type=click.IntRange(1), help="sentences per chunk"
)
@cli_options.threads
@cli_options.external_dir
@biastest_settings
def score_cmd(model, pairs, outputs, name, causal_score, chunk_size, **model_options) -> None:
    """Score both sentences of every pair of each PAIRS file under MODEL (higher = more probable); the model is
    loaded once, and only when some chunk is left to score; resumable."""
    if len(pairs) != len(outputs):
        raise click.UsageError(f"{len(pairs)} PAIRS file(s) but {len(outputs)} -o output(s)")
    request = model_request.request_from_cli(model, model_options)
    request.apply_threads()
    from unstereo.biastest.schemas import PAIRS
    from unstereo.biastest.score import score_pair_tables
    from unstereo.tables import read_table

    tables = [read_table(p, PAIRS) for p in pairs]
    done = score_pair_tables(tables, request, outputs, name=name or model, causal_score=causal_score,
                             chunk_size=chunk_size)  # fmt: skip
    for out, df in zip(outputs, done, strict=True):
        click.echo(f"{out}: {len(df)} pairs scored with {name or model}", err=True)


@group.command("summary")
@click.option("--pairs", "pairs_files", multiple=True, required=True, type=click.Path(exists=True, dir_okay=False),
              help="pair tables (repeat)")  # fmt: skip
@click.option("--scores", "scores_files", multiple=True, required=True,
              type=click.Path(exists=True, dir_okay=False), help="scores tables (repeat)")  # fmt: skip
@cli_options.output("writes summary.parquet, comparison.parquet, sentences.parquet, summary.html, "
                    "stereotype_score.png, page.html", kind="dir", dest="out_dir", flag="--out-dir")  # fmt: skip
@click.option(
    "--page",
    default=None,
    type=click.Path(dir_okay=False),
    help="the inspection page [default: OUT/page.html]",
)
@click.option("--rounds", default=30, show_default=True, type=click.IntRange(1), help="bootstrap rounds")
@click.option("--per-attribute", default=4, show_default=True, type=click.IntRange(1),
              help="pairs drawn per attribute term in a bootstrap round")  # fmt: skip
@cli_options.seed(0, "seed of the bootstrap")
@cli_options.reference_quirks("the pairs were built with --reference-quirks (recorded in the report)")
@biastest_settings
def summarize_cmd(
    pairs_files, scores_files, out_dir, page, rounds, per_attribute, seed, reference_quirks
) -> None:
    """Stereotype Score per model, specification, source and attribute term with bootstrap intervals; the t-test
    against the template baseline; the inspection page."""
    from unstereo.biastest.run import summarize_run

    summary = summarize_run(pairs_files, scores_files, out_dir, rounds=rounds, per_attribute=per_attribute,
                            seed=seed, page=page, reference_quirks=reference_quirks)  # fmt: skip
    whole = summary[summary["attribute"] == "*"]
    click.echo(whole[["model", "spec", "source", "n", "stereotype_score", "ci_low", "ci_high"]].to_string(index=False),
               err=True)  # fmt: skip


cli_options.alias(
    group, summarize_cmd, "summarize"
)  # the former step name (before the common step vocabulary)
