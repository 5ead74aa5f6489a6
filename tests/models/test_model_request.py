"""One model run: the ModelRequest built by one function from a config section or a command's options, the one
option decorator, and the one scorer registry."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

import unstereo.models.request as model_request
import unstereo.models.spec as model_spec
from unstereo import cli_options
from unstereo.errors import ConfigError
from unstereo.models.request import ModelRequest
from unstereo.models.spec import ModelSpec


def test_request_from_a_config_section_and_from_cli_options_is_the_same_object():
    section = {"model": {"path": "EleutherAI/pythia-70m", "revision": "step1000"}, "dtype": "float32",
               "device": "cpu", "batch_size": 4, "max_batch_size": 16, "threads": 2, "enabled": True}  # fmt: skip
    from_config = model_request.model_request(section, key="score.models.p")

    seen = {}

    @click.command()
    @click.argument("model")
    @cli_options.request_options()
    @click.option("--threads", type=int, default=None)
    def cmd(model, **opts):
        seen["request"] = cli_options.request_from_cli(model, opts)

    args = ["EleutherAI/pythia-70m@step1000", "--dtype", "float32", "--device", "cpu", "--batch-size", "4",
            "--max-batch-size", "16", "--threads", "2"]  # fmt: skip
    res = CliRunner().invoke(cmd, args)
    assert res.exit_code == 0, res.output
    assert seen["request"] == from_config
    assert from_config == ModelRequest(
        spec=ModelSpec(path="EleutherAI/pythia-70m", revision="step1000"), scorer="causal", dtype="float32",
        device="cpu", batch_size=4, max_batch_size=16, bos_policy="auto", threads=2,
    )  # fmt: skip
    with pytest.raises(AttributeError):
        from_config.device = "cuda"  # frozen


def test_scorer_kind_from_flags_or_config_and_unknown_kind_names_the_key():
    spec = {"model": "some/bert"}
    assert model_request.model_request(spec).scorer == "causal"
    assert model_request.model_request({**spec, "masked": True}).scorer == "pll"
    assert model_request.model_request({**spec, "masked": True, "masked_scorer": "aul"}).scorer == "aul"
    assert model_request.model_request({**spec, "masked": False, "masked_scorer": "aul"}).scorer == "causal"
    assert model_request.model_request({**spec, "scorer": "crows-pairs"}).scorer == "crows-pairs"
    with pytest.raises(
        ConfigError, match=r"masked_scorer.*unknown scorer 'lm-eval'|unknown scorer 'lm-eval'"
    ):
        model_request.model_request({**spec, "masked": True, "masked_scorer": "lm-eval"})
    with pytest.raises(ConfigError) as err:
        model_request.model_request({**spec, "scorer": "lm-eval"})
    assert err.value.key == "scorer"


def test_resolve_model_runs_once_per_request(monkeypatch, tmp_path):
    """Building the request resolves the spec; the registry, the run and the loader take it as is."""
    from _scoring_models import tiny_gpt2, word_tokenizer

    import unstereo.models.load as models
    from unstereo.scoring.registry import scorer_for

    tok = word_tokenizer()
    folder = tmp_path / "gpt2"
    tiny_gpt2(len(tok)).save_pretrained(folder)
    tok.save_pretrained(folder)
    calls = []
    real = model_spec.resolve_model

    def counting(*args, **kw):
        calls.append(args[0])
        return real(*args, **kw)

    monkeypatch.setattr(model_spec, "resolve_model", counting)
    monkeypatch.setattr(models, "resolve_model", counting)
    request = model_request.model_request({"model": str(folder), "device": "cpu"})
    run, make = scorer_for(request)
    scorer = make()
    assert scorer.score(["she went home ."])[0][1] > 0
    assert calls == [str(folder)]


def test_registry_maps_each_kind_to_its_scorer(monkeypatch):
    from unstereo.scoring import registry
    from unstereo.scoring.masked_scorers import MASKED_SCORERS

    assert list(registry.SCORERS) == ["causal", "pll", "crows-pairs", "aul", "biastestgpt"]
    for name, cls in MASKED_SCORERS.items():
        assert registry.SCORERS[name].label == cls.kind
    heads = []
    monkeypatch.setattr("unstereo.models.load.load", lambda request, head: heads.append(head) or ("m", "tok"))
    built = {}
    for name in registry.SCORERS:
        cls = MASKED_SCORERS.get(name)
        target = cls if cls else __import__("unstereo.scoring.causal", fromlist=["CausalScorer"]).CausalScorer
        monkeypatch.setattr(
            target, "__init__", lambda self, *a, _n=name, **k: built.__setitem__(_n, type(self))
        )
        request = ModelRequest(ModelSpec(path="some/model"), scorer=name, device="cpu")
        run, make = registry.scorer_for(request)
        assert run["scorer"] == registry.SCORERS[name].label
        make()
        assert built[name] is target
    assert heads == ["causal", "masked", "masked", "masked", "masked"]  # one load(request) for every kind
    with pytest.raises(ConfigError, match="unknown scorer 'lm-eval'") as err:
        registry.scorer_for(ModelRequest(ModelSpec(path="x"), scorer="lm-eval"))
    assert err.value.key == "scorer"


def test_run_description_keeps_the_score_cache_keys():
    """The keys the score cache and the output columns read are the ones the two former factories wrote."""
    from unstereo.scoring.registry import scorer_for

    causal, _ = scorer_for(
        model_request.model_request({"model": "a/b", "bos_policy": "eos", "device": "cpu"})
    )
    assert causal == {"model_id": "a/b", "model_revision": None, "gguf_file": None, "scorer": "causal",
                      "dtype": "float32", "bos_policy_requested": "eos"}  # fmt: skip
    # `unstereo score --masked` (the command declares --bos-policy): PLL, recorded as the BOS policy "pll"
    pll, _ = scorer_for(model_request.model_request({"model": "a/b", "masked": True, "bos_policy": "auto",
                                                     "device": "cpu"}))  # fmt: skip
    assert pll["scorer"] == "masked-pll" and pll["bos_policy_requested"] == "pll"
    # BiasTestGPT's masked scores (no --bos-policy): no BOS policy recorded
    bt, _ = scorer_for(model_request.model_request({"model": "a/b", "masked": True, "masked_scorer": "biastestgpt",
                                                    "device": "cpu"}))  # fmt: skip
    assert bt == {"model_id": "a/b", "model_revision": None, "gguf_file": None, "scorer": "masked-biastestgpt",
                  "dtype": "float32"}  # fmt: skip


@pytest.mark.parametrize("command", [["score"], ["robustness", "score"], ["biastest", "score"]], ids=" ".join)
def test_model_options_appear_once_in_each_commands_help(command):
    from unstereo.cli import cli

    res = CliRunner().invoke(cli, [*command, "--help"], terminal_width=200)
    assert res.exit_code == 0, res.output
    for flag in ("--gguf-file", "--revision", "--masked", "--batch-size", "--max-batch-size", "--dtype",
                 "--device"):  # fmt: skip
        assert (
            sum(line.split()[0].rstrip(",") == flag for line in res.output.splitlines() if line.strip()) == 1
        ), flag
