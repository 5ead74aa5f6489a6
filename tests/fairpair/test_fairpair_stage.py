"""The FairPair stage around the metrics: LLM perturbation filters (stub chat backend), sampling through the
project's client (tiny random GPT-2), the CLI, the config section and the rule helpers, and one real Snakemake run
of the stage's rules."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from _scoring_models import save_tiny_gpt2
from click.testing import CliRunner

import unstereo.workflow.rules as model_rules
from unstereo.config import load_config, validate_config
from unstereo.config.settings import as_dict
from unstereo.errors import ConfigError
from unstereo.fairpair import rules
from unstereo.fairpair import schemas as fp_schemas
from unstereo.fairpair.cli import read_perturbation
from unstereo.fairpair.llm_perturb import LLMPerturbSettings, jaccard_dissimilarity, judge
from unstereo.fairpair.perturb import PRONOUNS_MALE_TO_FEMALE, RulePerturbation
from unstereo.fairpair.prompts import common_sents
from unstereo.fairpair.sample import map_llm, map_rules, sample_fairpairs
from unstereo.llm import LLMClient
from unstereo.llm.local import LocalBackend
from unstereo.llm.sample import SampleSettings
from unstereo.llm.types import ChatResult
from unstereo.tables import read_table, write_table

P = RulePerturbation({"John": "Jane"}, {**PRONOUNS_MALE_TO_FEMALE, "man": "woman"})
PROMPTS = common_sents(["doctor", "engineer"], [("John", "Jane")], [("man", "woman")], P)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    """A randomly initialised 2-layer GPT-2 (word-level vocabulary with he/his/him) saved as a folder."""
    return save_tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2"))


# ---------------------------------------------------------------------------------------- LLM perturbation
def test_judge_applies_the_three_filters_in_order():
    text = "John is a man, working as a doctor. He loves his job and his family very much every day."
    good = "Jane is a woman, working as a doctor. She loves her job and her family very much every day."
    prefix = "Jane is a woman, working as a doctor."
    # {john, man, he, his} -> {jane, woman, she, her}: 4 + 4 tokens differ, 13 shared: a union of 21
    assert jaccard_dissimilarity(good, text) == pytest.approx(8 / 21)
    assert judge(good, text, prefix, ["John"], 0.5)[:2] == (True, "ok")
    assert judge(good, text, prefix, ["John"], 0.15)[:2] == (False, "dissimilar")
    assert judge("Output: " + good, text, prefix, ["John"], 0.5)[:2] == (False, "prefix")
    assert judge(good + " John agreed.", text, prefix, ["John"], 0.9)[:2] == (False, "mentions-original")


class ScriptedChat:
    """A chat backend that rewrites the text of the paper's instruction: by the rules, or wrongly on purpose when the
    continuation says so."""

    name, model, batch_size = "stub", "stub", 1

    def __init__(self):
        self.prompts = []

    def complete(self, requests, on_retry=None):
        out = []
        for r in requests:
            content = r.messages[-1][1]
            self.prompts.append(content)
            text = content.split("without changing anything else: ", 1)[1].rsplit("\n\nOutput:", 1)[0]
            if "HALLUCINATE" in text:
                answer = "Sure! " + P(text)
            elif "KEEP" in text:
                answer = P(text) + " John"
            else:
                answer = P(text)
            out.append(ChatResult(answer, 1, 1, "stop"))
        return out


def _samples(conts):
    """SAMPLES of prompt 0 of PROMPTS: original-side continuations ``conts``, perturbed side the same texts."""
    x, px = PROMPTS["prompt"].iloc[0], PROMPTS["perturbed_prompt"].iloc[0]
    pid = PROMPTS["prompt_id"].iloc[0]
    rows = [(pid, "original", j, x, c, c, j, 3) for j, c in enumerate(conts)]
    rows += [(pid, "perturbed", j, px, c, c, j, 3) for j, c in enumerate(conts)]
    return pd.DataFrame(rows, columns=fp_schemas.SAMPLES.names)


def test_llm_perturbation_keeps_every_answer_with_its_reason():
    backend = ScriptedChat()
    samples = _samples([" He is kind.", " HALLUCINATE he is.", " KEEP his job.", " He is kind."])
    settings = LLMPerturbSettings(max_dissimilarity=0.6)
    mapped, table = map_llm(samples, PROMPTS, LLMClient(backend), settings)
    assert list(table["reason"]) == ["ok", "prefix", "mentions-original", "ok"]
    assert list(table["accepted"]) == [True, False, False, True]
    orig = mapped[mapped["side"] == "original"]
    assert orig["continuation_mapped"].iloc[0] == " She is kind."
    assert orig["continuation_mapped"].iloc[1:3].isna().all()
    assert backend.prompts[0].startswith(
        "Change John (male) to Jane (female) in the following text in the same way without changing anything "
        "else: John is a man, working as a doctor. He is kind.\n\nOutput:"
    )
    assert len(backend.prompts) == 3  # the repeated request is answered once
    # the perturbed side is untouched; a strict threshold rejects the short rewrite as too dissimilar
    assert list(mapped.loc[mapped["side"] == "perturbed", "continuation_mapped"]) == list(
        samples["continuation"][4:]
    )
    _, strict = map_llm(samples, PROMPTS, LLMClient(ScriptedChat()), LLMPerturbSettings())
    assert strict["reason"].iloc[0] == "dissimilar"


def test_rule_mapping_of_continuations():
    mapped, table = map_rules(_samples([" He said John's car is his.", " Johnson went."]), P)
    assert list(mapped["continuation_mapped"][:2]) == [" She said Jane's car is her.", " Johnson went."]
    assert table["accepted"].all() and list(table["reason"]) == ["ok", "ok"]
    assert table["dissimilarity"].iloc[1] == 0.0


# -------------------------------------------------------------------------------------------- sampling
def test_sampling_shares_seeds_between_sides_and_resumes(tiny_dir, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    lm, tok = AutoModelForCausalLM.from_pretrained(tiny_dir), AutoTokenizer.from_pretrained(tiny_dir)
    client = LLMClient(LocalBackend.from_loaded(lm, tok, "tiny", batch_size=8))
    settings = SampleSettings(n=3, top_p=0.9, max_new_tokens=5, seed=7)
    samples = sample_fairpairs(client, PROMPTS, tmp_path / "c.parquet", settings, chunk_size=1)
    assert len(samples) == 2 * 2 * 3
    assert list(samples[["side", "sample"]].itertuples(index=False, name=None))[:4] == [
        ("original", 0), ("original", 1), ("original", 2), ("perturbed", 0)
    ]  # fmt: skip
    assert set(samples["seed"]) == {7, 8, 9}
    assert (samples["continuation"] == samples["continuation_mapped"]).all()  # p not applied yet
    x = samples[samples["side"] == "original"]
    assert set(x["prompt"]) == set(PROMPTS["prompt"])
    again = sample_fairpairs(client, PROMPTS, tmp_path / "c.parquet", settings, chunk_size=1)
    pd.testing.assert_frame_equal(samples, again)


def test_cli_prompts_metrics_summary_report(tmp_path, reference_dir):
    """The CLI after sampling (sampling through the CLI is in the Snakemake run below)."""
    from unstereo.cli import cli

    def run(*args):
        res = CliRunner().invoke(cli, ["fairpair", *map(str, args)])
        assert res.exit_code == 0, res.output

    occ = reference_dir / "winogender" / "data" / "occupations-stats.tsv"
    run(
        "prompts",
        "-o",
        tmp_path / "p",
        "--prompts-occupations",
        occ,
        "--prompts-max-prompts",
        "2",
        "--perturbation-words",
        "Mr:Ms",
    )
    prompts = read_table(tmp_path / "p" / "prompts.parquet")
    assert list(prompts["perturbed_prompt"]) == [
        "Jane is a woman, working as a technician.",
        "Jane is a woman, working as an accountant.",
    ]
    samples = pd.concat([_samples([" He is kind.", " his job", " Mr Smith"]).assign(prompt_id=pid) for pid in
                         prompts["prompt_id"]])  # fmt: skip
    samples, _ = map_rules(samples, read_perturbation(tmp_path / "p" / "perturbation.json"))
    assert list(samples["continuation_mapped"][:3]) == [" She is kind.", " her job", " Ms Smith"]
    write_table(samples, tmp_path / "m" / "samples.parquet", fp_schemas.SAMPLES)
    run("metrics", tmp_path / "m" / "samples.parquet", "-o", tmp_path / "m", "--model", "tiny", "--n", 3,
        "--folds", 2)  # fmt: skip
    per = read_table(tmp_path / "m" / "per_prompt.parquet", fp_schemas.PER_PROMPT)
    assert len(per) == 2 * 2 * 2 and set(per["k"]) == {2, 3}
    # pg {she is kind}, {her job}, {ms smith}; gp {he is kind}, {his job}, {mr smith}: B = (1/2 + 1 + 1) / 3 ...
    jac = per[(per["phi"] == "jaccard") & (per["k"] == 3)].iloc[0]
    assert jac["B"] == pytest.approx((0.5 + 1 + 1 + 1 + 2 / 3 + 1 + 1 + 1 + 2 / 3) / 9)
    assert (jac["V_gp"], jac["V_pg"]) == (1.0, 1.0)
    run(
        "summary",
        tmp_path / "m" / "per_prompt.parquet",
        "-o",
        tmp_path / "summary.parquet",
        "--bootstrap",
        50,
    )
    summary = read_table(tmp_path / "summary.parquet", fp_schemas.SUMMARY)
    assert len(summary) == 4 and set(summary["n_prompts"]) == {2}
    m = tmp_path / "m"
    run("report", tmp_path / "summary.parquet", "--n", 3, "-o", tmp_path / "r", "--per-prompt",
        m / "per_prompt.parquet", "--curves", m / "curves.parquet", "--ngrams", m / "ngrams.parquet")  # fmt: skip
    names = {p.name for p in (tmp_path / "r").iterdir()}
    assert {
        "fairpair_table3.html",
        "fairpair_table3.tex",
        "fairpair_folds.png",
        "fairpair_ngrams.png",
    } <= names
    table = (tmp_path / "r" / "fairpair_table3.csv").read_text()
    assert "jaccard|mean_B" in table and "sentiment|F_ci_high" in table
    f_csv = (tmp_path / "r" / "fairpair_f.csv").read_text()
    assert (
        "ratio_F" in f_csv and "median_F_ci_low" in f_csv and "n_inf_F" in f_csv and "tiny / Jaccard" in f_csv
    )
    import html as html_lib

    html = html_lib.unescape((tmp_path / "r" / "fairpair_table3.html").read_text())
    html += html_lib.unescape((tmp_path / "r" / "fairpair_f.html").read_text())
    # 2 prompts per (model, phi): below the 30 the report asks for before an interval means anything
    assert "Convention: F per model is the paper's mean of the per-prompt ratios" in html
    assert "Warning: fewer than 30 prompts for tiny jaccard (2), tiny sentiment (2)" in html


def test_cli_sample_with_llm_perturbation(tiny_dir, tmp_path):
    """`unstereo fairpair sample --llm-perturb`: the tiny model samples, a loopback chat endpoint perturbs."""
    from llm_test_server import Reply, ScriptedServer

    from unstereo.cli import cli

    def respond(body, index):
        content = body["messages"][-1]["content"]
        text = content.split("anything else: ", 1)[1].rsplit("\n\nOutput:", 1)[0]
        return Reply(P(text) if index % 2 == 0 else "I cannot do that.")

    write_table(PROMPTS, tmp_path / "p" / "prompts.parquet", fp_schemas.PROMPTS)
    (tmp_path / "p" / "perturbation.json").write_text('{"names": {"John": "Jane"}, "words": {"he": "she"}}')
    with ScriptedServer(respond) as srv:
        res = CliRunner().invoke(cli, ["fairpair", "sample", str(tiny_dir), str(tmp_path / "p"), "-o",
                                       str(tmp_path / "m"), "--n", "2", "--max-new-tokens", "3", "--device", "cpu",
                                       "--llm-perturb", f"endpoint:{srv.base_url}#stub", "--api-key-env", "",
                                       "--perturbation-llm-max-dissimilarity", "1", "--concurrency", "1"])  # fmt: skip
    assert res.exit_code == 0, res.output
    table = read_table(tmp_path / "m" / "perturbations.parquet", fp_schemas.PERTURBATIONS)
    assert len(table) == 4 and set(table["method"]) == {"llm"}
    assert list(table["reason"]).count("prefix") == 2 and table["accepted"].sum() == 2
    samples = read_table(tmp_path / "m" / "samples.parquet", fp_schemas.SAMPLES)
    orig = samples[samples["side"] == "original"].reset_index(drop=True)
    ok = table.set_index(["prompt_id", "sample"])["accepted"]
    for row in orig.itertuples():
        if ok[(row.prompt_id, row.sample)]:
            assert row.continuation_mapped == P(row.prompt + row.continuation)[len(P(row.prompt)) :]
        else:
            assert pd.isna(row.continuation_mapped)


# ----------------------------------------------------------------------------------------- config, rules
def test_offline_default_config(repo_dir):
    fp = load_config(repo_dir / "config" / "config.yaml")["fairpair"]
    assert fp["enabled"] and set(fp["models"]) == {"gemma3-270m", "smollm2", "smollm2-cda", "smollm2-control"}
    assert fp["top_p"] == 0.9 and fp["perturbation"]["method"] == "rules"
    assert (
        validate_config({})["fairpair"]["n"] == 100
        and validate_config({})["fairpair"]["max_new_tokens"] == 128
    )


@pytest.mark.parametrize(
    "bad, key",
    [
        ({"n": 1}, "fairpair.n"),
        ({"prompts": {"names": [["John"]]}}, "fairpair.prompts.names"),
        ({"perturbation": {"method": "magic"}}, "fairpair.perturbation.method"),
        ({"phis": ["toxicity"]}, "fairpair.phis"),
        ({"colour": 1}, "fairpair.colour"),
    ],
)
def test_bad_config_names_the_key(bad, key):
    with pytest.raises(ConfigError, match=f"config key '{key}"):
        validate_config({"fairpair": bad})


def test_rule_helpers():
    fp = validate_config(
        {
            "fairpair": {
                "models": {
                    "smol": {"resource": "smollm2", "gguf_file": "S.gguf"},
                    "g2": "openai-community/gpt2",
                },
                "n": 4,
                "folds": [2],
                "perturbation": {"method": "llm", "words": [["Mr", "Ms"]]},
                "prompts": {"max_prompts": 3},
            }
        }
    )["fairpair"]
    manifest = "ext/{}/RESOURCE.json".format
    assert model_rules.model_inputs(fp["models"]["smol"], manifest, "k") == ["ext/smollm2/RESOURCE.json"]
    assert model_rules.model_inputs(fp["models"]["g2"], manifest, "k") == []
    assert (
        model_rules.model_arg(fp["models"]["smol"], ["ext/smollm2/RESOURCE.json"], "k")
        == "ext/smollm2/S.gguf"
    )
    assert model_rules.model_pattern(fp["models"]) == "smol|g2"
    assert rules.sample_inputs(fp, "smol", manifest) == {
        "model": ["ext/smollm2/RESOURCE.json"],
        "perturb_model": ["ext/qwen-coder/RESOURCE.json"],
    }
    assert rules.prompt_inputs(fp, manifest) == {"reference": "ext/reference/RESOURCE.json"}

    class Inputs:
        reference = "ext/reference/RESOURCE.json"

    assert (
        rules.prompt_file_option(Inputs())
        == "--prompts-occupations ext/reference/winogender/data/occupations-stats.tsv"
    )
    assert json.loads(rules.settings(fp, seed=11))["seed"] == 11 and "models" not in json.loads(
        rules.settings(fp)
    )
    assert rules.perturb_model(fp) == {
        "resource": "qwen-coder",
        "gguf_file": "qwen2.5-coder-0.5b-instruct.gguf",
    }

    class SampleInputs:
        perturb_model = ["ext/qwen-coder/RESOURCE.json"]

    assert rules.perturb_arg(fp, SampleInputs()) == "ext/qwen-coder/qwen2.5-coder-0.5b-instruct.gguf"
    assert rules.perturb_arg({**fp, "perturbation": {**fp["perturbation"], "method": "rules"}}, None) is None
    assert (
        rules.llm_perturb_option(fp, SampleInputs())
        == "--llm-perturb ext/qwen-coder/qwen2.5-coder-0.5b-instruct.gguf"
    )
    with pytest.raises(ConfigError, match="fairpair.folds"):
        rules.check({**fp, "folds": [5]})


class _Built(Exception):
    """Stops a command once its settings object is built (carrying it)."""


def _received(command, args, monkeypatch):
    """The settings object ``command`` builds for ``args`` (the command stopped before its body runs)."""
    from unstereo.fairpair import cli

    build = cli.SECTION.build

    def record(*a, **kw):
        raise _Built(build(*a, **kw))

    monkeypatch.setattr(cli.SECTION, "build", record)
    result = CliRunner().invoke(command, args)
    monkeypatch.setattr(cli.SECTION, "build", build)
    assert isinstance(result.exception, _Built), result.output
    return result.exception.args[0]


def test_settings_give_the_commands_what_the_flags_give(tmp_path, monkeypatch):
    """Each fairpair command gets from the rule's --settings JSON the settings object the generated flags give it
    for the same values; a flag overrides the section, and a required key neither gives is a usage error."""
    from unstereo.fairpair import cli

    fp = validate_config({"fairpair": {
        "models": {"g2": "openai-community/gpt2"}, "n": 4, "folds": [2], "temperature": 1, "level": 0.9,
        "perturbation": {"words": [["Mr", "Ms"]], "default_pronouns": False,
                         "llm": {"groups": ["m", "f"], "max_tokens": 9}},
        "prompts": {"max_prompts": 3, "names": [["John", "Jane"], ["Bob", "Alice"]], "descriptors": []},
        "ngrams": {"max_n": 3, "top": 7}, "bootstrap": 50, "cache": None,
    }})["fairpair"]  # fmt: skip
    occ = tmp_path / "occ.tsv"
    occ.write_text("occupation\nnurse\n")
    (tmp_path / "prompts").mkdir()
    samples = tmp_path / "s.parquet"
    samples.write_text("")
    cases = [
        (cli.prompts_cmd, ["-o", str(tmp_path)],
         ["--prompts-names", "John:Jane", "--prompts-names", "Bob:Alice", "--perturbation-words", "Mr:Ms",
          "--no-perturbation-default-pronouns", "--prompts-max-prompts", "3", "--prompts-occupations", str(occ)],
         None, {"prompts": {**fp["prompts"], "occupations": str(occ)}}),
        (cli.sample_cmd, ["m", str(tmp_path / "prompts"), "-o", str(tmp_path), "--threads", "2", "--llm-perturb", "q"],
         ["--n", "4", "--temperature", "1", "--seed", "11", "--perturbation-llm-max-tokens", "9",
          "--perturbation-llm-groups", "m:f"], 11, {}),
        (cli.metrics_cmd, [str(samples), "-o", str(tmp_path), "--model", "g2"],
         ["--n", "4", "--folds", "2", "--ngrams-max-n", "3", "--ngrams-top", "7"], None, {}),
        (cli.summary_cmd, [str(samples), "-o", "x.parquet"], ["--bootstrap", "50", "--level", "0.9", "--seed", "5"],
         5, {}),
        (cli.report_cmd, [str(samples), "--per-prompt", str(samples), "--curves", str(samples), "--ngrams",
                          str(samples), "-o", str(tmp_path)], ["--n", "4"], None, {}),
    ]  # fmt: skip
    section = {k: v for k, v in fp.items() if k != "models"}
    for command, base, flags, seed, extra in cases:
        via_settings = _received(command, [*base, "--settings", rules.settings({**fp, **extra}, seed=seed)],
                                 monkeypatch)  # fmt: skip
        # the flags set only what the command reads; the rest is the schema's default, as in the section here
        via_flags = _received(command, [*base, *flags], monkeypatch)
        for path in [
            p for p in ("n", "temperature", "seed", "bootstrap", "level", "folds") if f"--{p}" in flags
        ]:
            assert getattr(via_flags, path) == getattr(via_settings, path), (command.name, path)
        assert via_settings.perturbation.llm.groups == ["m", "f"]
        assert via_settings.seed == seed
        assert as_dict(via_settings) == {**section, **extra, "seed": seed, "models": {}}
    prompts_flags = _received(cli.prompts_cmd, cases[0][1] + cases[0][2], monkeypatch)
    assert as_dict(prompts_flags)["prompts"] == {
        **fp["prompts"],
        "occupations": str(occ),
        "descriptors": [["man", "woman"]],
    }
    assert (
        prompts_flags.perturbation.words == [["Mr", "Ms"]] and not prompts_flags.perturbation.default_pronouns
    )
    sample_flags = _received(cli.sample_cmd, cases[1][1] + cases[1][2], monkeypatch)
    assert (sample_flags.perturbation.llm.groups, sample_flags.perturbation.llm.max_tokens) == (["m", "f"], 9)
    # a flag over the section: the flag's value, the section's others
    over = _received(cli.summary_cmd, [*cases[3][1], "--settings", rules.settings(fp, seed=5), "--level", "0.5"],
                     monkeypatch)  # fmt: skip
    assert (over.level, over.bootstrap, over.seed) == (0.5, 50, 5)
    missing = CliRunner().invoke(cli.report_cmd, cases[-1][1])
    assert missing.exit_code == 2 and "--n is required (or fairpair.n in --settings)" in missing.output
    bad = CliRunner().invoke(cli.summary_cmd, [*cases[3][1], "--level", "2"])
    assert bad.exit_code == 2 and "--level: config key 'fairpair.level'" in bad.output


@pytest.mark.slow
def test_snakemake_runs_the_fairpair_rules(tmp_path, repo_dir, tiny_dir):
    """A real Snakemake run of the stage (prompts, sample, metrics, summary, report) on a tiny random GPT-2."""
    occ = tmp_path / "occupations.tsv"
    occ.write_text("occupation\nnurse\nengineer\n")
    config = {
        "resources": [],
        "reference_mirror": None,
        "fairpair": {
            "enabled": True,
            "models": {"tiny": {"path": str(tiny_dir)}},
            "prompts": {"occupations": str(occ)},
            "n": 3,
            "max_new_tokens": 5,
            "folds": [2],
            "bootstrap": 50,
            "device": "cpu",
            "threads": 1,
        },
    }
    for stage in ("corpus", "vocabulary", "benchmarks", "generate", "score", "metrics", "report"):
        config[stage] = {"enabled": False}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    snakemake = shutil.which("snakemake", path=os.path.dirname(sys.executable)) or "snakemake"
    env = {
        **os.environ,
        "PYTHONPATH": str(repo_dir / "src"),
        "PATH": os.path.dirname(sys.executable) + ":" + os.environ["PATH"],
    }
    cmd = [snakemake, "fairpair_report", "-s", str(repo_dir / "Snakefile"), "-d", str(tmp_path),
           "--configfile", str(tmp_path / "config.yaml"), "--cores", "1", "--quiet", "rules"]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    summary = read_table(tmp_path / "results" / "fairpair" / "summary.parquet", fp_schemas.SUMMARY)
    assert set(summary["k"]) == {2, 3} and set(summary["phi"]) == {"jaccard", "sentiment"}
    assert set(summary["n_prompts"]) == {2}
    samples = read_table(tmp_path / "results" / "fairpair" / "tiny" / "samples.parquet", fp_schemas.SAMPLES)
    assert len(samples) == 2 * 2 * 3
    perturbation = RulePerturbation({"John": "Jane"}, {**PRONOUNS_MALE_TO_FEMALE, "man": "woman"})
    orig = samples[samples["side"] == "original"]
    assert list(orig["continuation_mapped"]) == [perturbation(t) for t in orig["continuation"]]
    assert (tmp_path / "results" / "report" / "fairpair" / "fairpair_distributions.png").stat().st_size > 0
    assert (tmp_path / "results" / "logs" / "fairpair" / "tiny" / "sample.log").exists()
