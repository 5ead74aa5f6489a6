"""``unstereo biastest``: BiasTestGPT (docs/methods.md#biastestgpt) - specifications, sentence pairs,
generation, scoring, summary."""

from __future__ import annotations

import click

import unstereo.models.request as model_request
from unstereo import cli_options
from unstereo.config.settings import command_seed, section

REFERENCE_HELP = "folder of the BiasTestGPT release [default: {external-dir}/reference/biastestgpt]"


#: The biastest section's settings (biastest.schema.yaml): the commands get them whole as ``settings``
#: (``--settings``, the workflow passes the section), with override flags generated from the schema.
SECTION = section("biastest")


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
@click.option("--generated", type=click.Path(exists=True, dir_okay=False), default=None,
              help="generated pairs (from `unstereo biastest generate`) to include")  # fmt: skip
@cli_options.external_dir
@SECTION.command("sources", "template", "released.generator", "released.runs", "max_pairs_per_spec", "seed",
                 "reference_quirks", "reference_dir")  # fmt: skip
def pairs_cmd(spec, output, generated, external_dir, settings) -> None:
    """Build the pair table of SPEC: a release name (Math_Arts_vs_Male_Female), an app tag (male_female__math_arts)
    or a YAML/JSON specification file (FILE:NAME when it holds several). SPEC's entry of the section's `per_spec`
    (--settings) sets its own released generator, runs and cap; flags still override."""
    from unstereo.biastest.run import build_pairs, spec_section
    from unstereo.biastest.schemas import PAIRS
    from unstereo.tables import write_table

    ref = _reference_dir(settings.reference_dir, external_dir)
    s, release = _spec(spec, ref)
    if settings.per_spec.get(s.name):
        settings = SECTION.rebuild(lambda raw: spec_section(raw, s.name))
    seed = command_seed(settings)
    df = build_pairs(s, sources=list(settings.sources), reference_dir=ref, release=release, generated=generated,
                     template=settings.template, generator=settings.released.generator,
                     runs=tuple(settings.released.runs), max_pairs=settings.max_pairs_per_spec, seed=seed,
                     reference_quirks=settings.reference_quirks)  # fmt: skip
    write_table(df, output, PAIRS)
    click.echo(f"{output}: {len(df)} pairs of {s.name} ({df['source'].value_counts().to_dict()})", err=True)


@group.command("generate")
@click.argument("spec")
@cli_options.output("writes generated.parquet (pairs), generations.parquet (every try), usage.json", kind="dir",
                    dest="out_dir", flag="--out-dir")  # fmt: skip
@cli_options.model_options
@cli_options.threads
@SECTION.command("generate.model", "generate.cache", "seed", "reference_dir")
def generate_cmd(spec, out_dir, api_key_env, external_dir, threads, settings) -> None:
    """Generate test-sentence pairs for SPEC with a chat model (paper Algorithm 1); every call is cached."""
    from pathlib import Path

    from unstereo.biastest.generate import GenerationSettings, generate_pairs
    from unstereo.biastest.schemas import GENERATIONS, PAIRS
    from unstereo.llm import make_client
    from unstereo.tables import write_table

    g = settings.generate
    ref = _reference_dir(settings.reference_dir, external_dir)
    s, _ = _spec(spec, ref)
    # The chat model's request: the section's model (--generate-model overrides it), with the section's device,
    # dtype and batch size and --threads.
    values = {
        "device": g.device,
        "dtype": g.dtype,
        "batch_size": g.batch_size,
        "threads": threads,
        "model": g.model,
    }
    request = model_request.model_request(values, key="biastest.generate.model", external_dir=external_dir,
                                          api_key_env=api_key_env)  # fmt: skip
    request.apply_threads()
    out = Path(out_dir)
    client = make_client(request, cache=g.cache or str(out / "llm-cache.sqlite"))
    settings_ = GenerationSettings(
        t=g.t, max_tries=g.max_tries, temperature=g.temperature, rewrite_temperature=g.rewrite_temperature,
        max_tokens=g.max_tokens, pairing=g.pairing, case_sensitive=g.case_sensitive,
        max_attribute_terms=g.max_attribute_terms, seed=command_seed(settings),
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
@cli_options.request_options(masked="choice", bos_policy=False, section=SECTION)
@cli_options.threads
@cli_options.external_dir
# the model entry's revision and masked come folded into --settings by the rule (biastest.rules.score_settings)
@SECTION.command("batch_size", "dtype", "device", "chunk_size", "causal_score", "masked_scorer",
                 entry=("revision", "masked"))  # fmt: skip
def score_cmd(model, pairs, outputs, name, settings, **model_options) -> None:
    """Score both sentences of every pair of each PAIRS file under MODEL (higher = more probable); the model is
    loaded once, and only when some chunk is left to score; resumable."""
    if len(pairs) != len(outputs):
        raise click.UsageError(f"{len(pairs)} PAIRS file(s) but {len(outputs)} -o output(s)")
    request = cli_options.request_from_settings(model, settings, model_options, SECTION)
    request.apply_threads()
    from unstereo.biastest.schemas import PAIRS
    from unstereo.biastest.score import score_pair_tables
    from unstereo.tables import read_table

    tables = [read_table(p, PAIRS) for p in pairs]
    done = score_pair_tables(tables, request, outputs, name=name or model, causal_score=settings.causal_score,
                             chunk_size=settings.chunk_size)  # fmt: skip
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
@SECTION.command("bootstrap.rounds", "bootstrap.per_attribute", "seed", "reference_quirks")
def summarize_cmd(pairs_files, scores_files, out_dir, page, settings) -> None:
    """Stereotype Score per model, specification, source and attribute term with bootstrap intervals; the t-test
    against the template baseline; the inspection page."""
    from unstereo.biastest.run import summarize_run

    boot = settings.bootstrap
    summary = summarize_run(pairs_files, scores_files, out_dir, rounds=boot.rounds, per_attribute=boot.per_attribute,
                            seed=command_seed(settings), page=page,
                            reference_quirks=settings.reference_quirks)  # fmt: skip
    whole = summary[summary["attribute"] == "*"]
    click.echo(whole[["model", "spec", "source", "n", "stereotype_score", "ci_low", "ci_high"]].to_string(index=False),
               err=True)  # fmt: skip


cli_options.alias(
    group, summarize_cmd, "summarize"
)  # the former step name (before the common step vocabulary)
