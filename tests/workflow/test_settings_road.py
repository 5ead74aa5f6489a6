"""The one road from config to a stage's command: the rule layer's --settings JSON of a section gives the same
ModelRequest (and the same other options) as the flags a person would type; and no rule passes a model config
flag beside --settings."""

from __future__ import annotations

import json

import click
from click.testing import CliRunner

import unstereo.unstereoeval.score.rules as score_rules
import unstereo.workflow.rules as model_rules
from unstereo import cli_options
from unstereo.config import validate_config


def _capture_command():
    """A command with ``unstereo score``'s own options and settings (:mod:`unstereo.unstereoeval.score.cli`)."""
    from unstereo.unstereoeval.score.cli import score_settings, scorer_options, scorer_request

    seen = {}

    @click.command()
    @click.argument("model")
    @scorer_options
    @score_settings
    def cmd(model, cache_path, no_cache, settings, **values):
        seen["request"] = scorer_request(model, settings, values)
        seen["other"] = (settings.chunk_size, settings.reference_quirks)

    return cmd, seen


def _run(args):
    cmd, seen = _capture_command()
    result = CliRunner().invoke(cmd, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return seen


def test_settings_json_round_trips_to_the_flags_request():
    score = validate_config(
        {
            "score": {
                "models": {
                    "py": {
                        "path": "EleutherAI/pythia-70m",
                        "revision": "step1000",
                        "batch_size": 8,
                        "mem_mb": 9,
                    },
                    "bert": {"path": "bert-base-uncased", "masked": True, "dtype": "float32"},
                },
                "device": "cuda",
                "max_batch_size": 16,
                "bos_policy": "eos",
                "chunk_size": 7,
                "reference_quirks": True,
            }
        }
    )["score"]
    for name in score["models"]:
        arg = score_rules.model_arg(score, name, [])
        via_flags = _run([arg, *score_rules.options(score, name).split()])
        via_settings = _run([arg, "--settings", score_rules.settings(score, name)])
        assert via_settings == via_flags
    assert via_flags["request"].scorer == "pll" and via_flags["request"].dtype == "float32"
    data = json.loads(score_rules.settings(score, "py"))
    assert "models" not in data and data["batch_size"] == 8
    assert data["revision"] == "step1000"


def test_flags_override_the_settings():
    section = json.dumps({"dtype": "float16", "device": "cpu", "batch_size": 4, "chunk_size": 3})
    seen = _run(["some/model", "--settings", section, "--device", "cuda", "--chunk-size", "500"])
    request = seen["request"]
    assert (request.dtype, request.device, request.batch_size) == ("float16", "cuda", 4)
    assert seen["other"][0] == 500  # given on the command line (even at its default value)


def test_settings_json_folds_the_seed_in_and_drops_the_models():
    section = {
        "seed": None,
        "models": {"m": {"path": "x", "batch_size": 2, "gguf_file": "f.gguf"}},
        "dtype": "auto",
    }
    data = json.loads(model_rules.settings_json(section, entry=section["models"]["m"], seed=42))
    assert data == {"seed": 42, "dtype": "auto", "batch_size": 2}


def test_biastest_score_settings_give_the_flags_request(monkeypatch):
    import unstereo.biastest.rules as bt
    from unstereo.biastest.cli import score_cmd

    config = validate_config(
        {
            "biastest": {
                "masked_scorer": "crows-pairs",
                "models": {"b": {"path": "bert", "masked": True, "batch_size": 3}, "g": {"path": "gpt2"}},
            }
        }
    )
    seen = []
    build = cli_options.request_from_cli

    class Stop(Exception):
        pass

    def capture(model, values, param="MODEL"):
        seen.append(build(model, values, param))
        raise Stop

    monkeypatch.setattr(cli_options, "request_from_cli", capture)
    for name in ("b", "g"):
        base = [bt.model_arg(config, name, []), __file__, "-o", "x.parquet", "--threads", "1"]  # as the rule
        for extra in (
            bt.score_options(config, name).split(),
            ["--settings", bt.score_settings(config, name)],
        ):
            result = CliRunner().invoke(score_cmd, [*base, *extra])
            assert isinstance(result.exception, Stop), result.output
    assert seen[0] == seen[1] and seen[2] == seen[3]
    assert seen[0].scorer == "crows-pairs" and seen[0].batch_size == 3 and seen[2].scorer == "causal"


class _Built(Exception):
    """Stops a command once its settings object is built (carrying it)."""


def _received(command, args, monkeypatch, section):
    """The settings object ``command`` builds from ``args`` with ``section`` (stopped before its body runs)."""
    build = section.build

    def record(*a, **kw):
        raise _Built(build(*a, **kw))

    monkeypatch.setattr(section, "build", record)
    result = CliRunner().invoke(command, args)
    monkeypatch.setattr(section, "build", build)
    assert isinstance(result.exception, _Built), result.output
    return result.exception.args[0]


def test_biastest_settings_and_the_flags_give_pairs_and_summary_the_same_settings(tmp_path, monkeypatch):
    """The biastest rules' --settings JSON (the stage's seed folded in) and the flags generated from the schema give
    `biastest pairs` and `summary` the same settings object (nested keys: released.*, bootstrap.*)."""
    import unstereo.biastest.rules as bt
    from unstereo.biastest import cli

    config = validate_config({"biastest": {
        "sources": ["template"], "released": {"runs": [1, 3], "generator": "megatron"}, "max_pairs_per_spec": 5,
        "reference_quirks": True, "bootstrap": {"rounds": 7, "per_attribute": 2},
    }})  # fmt: skip
    settings = bt.settings_json(config, seed=9)
    table = tmp_path / "t.parquet"
    table.write_text("")
    pairs_keys = ("sources", "template", "released", "seed", "max_pairs_per_spec", "reference_quirks")
    cases = [
        (cli.pairs_cmd, ["SPEC", "-o", "p.parquet"],
         ["--sources", "template", "--template", "release", "--released-generator", "megatron", "--released-runs",
          "1", "--released-runs", "3", "--seed", "9", "--max-pairs-per-spec", "5", "--reference-quirks"], pairs_keys),
        (cli.summarize_cmd, ["--pairs", str(table), "--scores", str(table), "-o", str(tmp_path)],
         ["--bootstrap-rounds", "7", "--bootstrap-per-attribute", "2", "--seed", "9", "--reference-quirks"],
         ("bootstrap", "seed", "reference_quirks")),
    ]  # fmt: skip
    for command, base, flags, keys in cases:
        via_settings = _received(command, [*base, "--settings", settings], monkeypatch, cli.SECTION)
        via_flags = _received(command, [*base, *flags], monkeypatch, cli.SECTION)
        for key in keys:  # what the command reads
            assert getattr(via_settings, key) == getattr(via_flags, key), (command.name, key)
        assert (via_settings.seed, via_settings.bootstrap.rounds, via_settings.released.runs) == (
            9,
            7,
            [1, 3],
        )
