"""The Slurm profile (workflow/profiles/slurm/config.yaml) and the resource policy (unstereo.workflow.slurm_resources, used by
rules/common.smk). The end-to-end run on a real Slurm cluster is scripts/slurm/test.sh (called by .ci/run)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from _paths import REPO

from unstereo.errors import ConfigError
from unstereo.workflow import slurm_resources as sr

PROFILE = REPO / "workflow" / "profiles" / "slurm" / "config.yaml"


@pytest.fixture(scope="module")
def profile_text() -> str:
    return PROFILE.read_text()


@pytest.fixture(scope="module")
def profile(profile_text) -> dict:
    return yaml.safe_load(profile_text)


def evaluate(expr, attempt: int, input_mb: float = 0.0):
    """Evaluate a profile resource value the way Snakemake does (a Python expression over attempt/input; a plain
    number stays a number)."""
    if not isinstance(expr, str):
        return expr
    return eval(
        expr, {"attempt": attempt, "input": SimpleNamespace(size_mb=input_mb), "min": min, "max": max}
    )


# ---- profile structure -----------------------------------------------------------------------------------------


def test_profile_core_keys(profile):
    assert profile["executor"] == "slurm"
    assert isinstance(profile["jobs"], int) and profile["jobs"] >= 10
    assert profile["retries"] >= 1
    assert profile["rerun-incomplete"] is True
    assert profile["latency-wait"] >= 30  # shared filesystems
    assert profile["keep-going"] is True


def test_default_resources_grow_with_attempt(profile):
    d = profile["default-resources"]
    assert {"mem_mb", "runtime"} <= set(d)
    # "2000 * attempt" MB and "60 * attempt" minutes: attempt 1, 2, 3 -> 2000, 4000, 6000 / 60, 120, 180
    assert [evaluate(d["mem_mb"], a) for a in (1, 2, 3)] == [2000, 4000, 6000]
    assert [evaluate(d["runtime"], a) for a in (1, 2, 3)] == [60, 120, 180]


def test_partition_and_account_left_to_the_user(profile, profile_text):
    # set in the file only as comments: an account the cluster does not know makes every submission fail
    d = profile["default-resources"]
    assert "slurm_account" not in d and "slurm_partition" not in d
    assert re.search(r"^\s*# slurm_partition: ", profile_text, re.M)
    assert re.search(r"^\s*# slurm_account: ", profile_text, re.M)


def test_set_resources_name_existing_rules(profile):
    rules = set()
    # the shared rules files and every method's (src/unstereo/<package>/rules.smk)
    smks = [*sorted((REPO / "rules").glob("*.smk")), *sorted((REPO / "src" / "unstereo").glob("*/rules.smk"))]
    for smk in [REPO / "Snakefile", *smks]:
        rules |= set(re.findall(r"^(?:rule|checkpoint)\s+(\w+)\s*:", smk.read_text(), re.M))
    overrides = profile["set-resources"]
    assert "fetch_resource" in overrides
    unknown = set(overrides) - rules
    assert not unknown, f"set-resources names rules that do not exist: {sorted(unknown)}"


def test_fetch_resource_override(profile):
    r = profile["set-resources"]["fetch_resource"]
    # min(60 * 2 ** (attempt - 1), 480): 60, 120, 240, 480, then capped at 480
    assert [evaluate(r["runtime"], a) for a in (1, 2, 3, 4, 5)] == [60, 120, 240, 480, 480]
    assert evaluate(r["mem_mb"], 2) == 4000


def test_both_gpu_spellings_documented(profile_text):
    for key in ("gpu: 1", 'gpu_model: "a100"', "cpus_per_gpu:", 'gres: "gpu:a100:1"', "slurm_extra:"):
        assert key in profile_text, key


def _commented_values(text: str, key: str) -> list[str]:
    """Values of `# key: value` lines in the profile's comments, YAML-decoded."""
    return [yaml.safe_load(v) for v in re.findall(rf"^\s*#[\s#]*{key}: (.+?)\s*(?:#.*)?$", text, re.M)]


def test_documented_gpu_examples_pass_the_executor(profile_text):
    """The commented examples, uncommented by a user, must be accepted by the executor as it validates them."""
    utils = pytest.importorskip(
        "snakemake_executor_plugin_slurm.utils", reason="Slurm executor plugin missing"
    )
    validation = pytest.importorskip("snakemake_executor_plugin_slurm.validation")
    extras = _commented_values(profile_text, "slurm_extra")
    assert extras
    for extra in extras:
        # Snakemake evaluates the value: "'--x'" becomes the string --x
        value = eval(extra)
        validation.validate_slurm_extra(SimpleNamespace(resources=_Resources(slurm_extra=value)))
    (gres,) = _commented_values(profile_text, "gres")
    assert utils.set_gres_string(SimpleNamespace(resources=_Resources(gres=gres))).strip() == f"--gres={gres}"


def test_status_command_guidance(profile, profile_text):
    # not set by default (clusters with slurmdbd should keep sacct) but spelled out for those without
    assert "slurm-status-command" not in profile
    assert "# slurm-status-command: squeue" in profile_text
    assert "MinJobAge" in profile_text


# ---- resource policy -------------------------------------------------------------------------------------------


def test_mem_mb_by_hand():
    assert sr.mem_mb(0, 1, base=1000) == 1000
    assert sr.mem_mb(0, 2, base=1000) == 1500  # x1.5 per retry
    assert sr.mem_mb(0, 3, base=1000) == 2300  # 2250 rounded up to 100 MB
    # 2000 + 3 * 250 = 2750 -> 2800; retry: 2750 * 1.5 = 4125 -> 4200
    assert sr.mem_mb(250, 1, base=2000, per_mb=3) == 2800
    assert sr.mem_mb(250, 2, base=2000, per_mb=3) == 4200
    # 1000 * 1.5**4 = 5062.5, capped at 3000
    assert sr.mem_mb(0, 5, base=1000, cap=3000) == 3000
    assert sr.mem_mb(0, 1, base=0) == 100  # never 0: sbatch --mem=0 means "the whole node"
    assert sr.mem_mb(0, 2, base=1000, growth=2) == 2000


def test_runtime_by_hand():
    assert [sr.runtime(0, a, base=30) for a in (1, 2, 3)] == [30, 60, 120]  # x2 per retry
    assert sr.runtime(0, 5, base=30, cap=240) == 240  # 30 * 16 = 480, capped
    assert sr.runtime(10, 1, base=5, per_mb=0.25) == 8  # 5 + 2.5 = 7.5 -> 8 minutes
    assert sr.runtime(0, 1, base=0) == 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"attempt": 0},
        {"growth": 0.5},
        {"base": -1},
        {"per_mb": -0.1},
        {"input_mb": -5},
    ],
)
def test_policy_rejects_bad_arguments(kwargs):
    args = {"input_mb": 0, "attempt": 1, "base": 100} | kwargs
    with pytest.raises(ConfigError):
        sr.mem_mb(**args)
    with pytest.raises(ConfigError):
        sr.runtime(**args)


def test_gpu_resources_spellings():
    assert sr.gpu_resources("cpu") == {}
    assert sr.gpu_resources("auto") == {}  # a cluster GPU must be asked for explicitly
    assert sr.gpu_resources(None) == {}
    assert sr.gpu_resources("cuda") == {"gpu": 1}
    assert sr.gpu_resources("cuda:0", gpu_model="a100", cpus_per_gpu=4) == {
        "gpu": 1,
        "gpu_model": "a100",
        "cpus_per_gpu": 4,
    }
    assert sr.gpu_resources("CUDA", gpus=2, gpu_model="h100", spelling="gres") == {"gres": "gpu:h100:2"}
    assert sr.gpu_resources("gpu", spelling="gres", cpus_per_gpu=8) == {"gres": "gpu:1", "cpus_per_gpu": 8}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"gpus": 0},
        {"gpus": True},
        {"gpu_model": "'a100'"},
        {"gpu_model": "a100 --x"},
        {"cpus_per_gpu": 0},
        {"spelling": "slurm_extra"},
    ],
)
def test_gpu_resources_rejects_bad_arguments(kwargs):
    with pytest.raises(ConfigError):
        sr.gpu_resources("cuda", **kwargs)


class _Resources(dict):
    """Stand-in for a Snakemake job's resources: `.get` and attribute access, as the executor uses them."""

    __getattr__ = dict.__getitem__


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"gpu_model": "a100"}, "--gpus=a100:1"),
        ({"gpus": 2}, "--gpus=2"),
        ({"gpu_model": "h100", "gpus": 2, "spelling": "gres"}, "--gres=gpu:h100:2"),
        ({"spelling": "gres"}, "--gres=gpu:1"),
    ],
)
def test_gpu_resources_as_the_executor_submits_them(kwargs, expected):
    utils = pytest.importorskip(
        "snakemake_executor_plugin_slurm.utils", reason="Slurm executor plugin missing"
    )
    job = SimpleNamespace(resources=_Resources(sr.gpu_resources("cuda", **kwargs)))
    assert utils.set_gres_string(job).strip() == expected


# ---- the wrappers in rules/common.smk ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def common_helpers() -> dict:
    """The cluster-resource section of rules/common.smk, executed as plain Python."""
    text = (REPO / "rules" / "common.smk").read_text()
    section = text[text.index("# ---- cluster resources") :]
    namespace: dict = {"config": {}}
    exec(compile(section, "rules/common.smk", "exec"), namespace)
    return namespace


def test_common_smk_wrappers(common_helpers):
    mem = common_helpers["mem_mb_for"](base=2000, per_mb=3)
    run = common_helpers["runtime_for"](base=30, cap=240)
    inp = SimpleNamespace(size_mb=250)
    assert mem(wildcards=None, input=inp, attempt=1) == 2800
    assert mem(wildcards=None, input=inp, attempt=2) == 4200
    assert [run(wildcards=None, input=inp, attempt=a) for a in (1, 2, 5)] == [30, 60, 240]
    assert common_helpers["gpu_resources"]("cuda", gpu_model="a100") == {"gpu": 1, "gpu_model": "a100"}
    assert common_helpers["gpu_resources"]("cpu") == {}


# ---- Snakemake applies it all ------------------------------------------------------------------------------------


def _dry_run_resources(*args: str, configfile: str = ".test/config.yaml", overlay: Path | None = None) -> str:
    """A dry run of the whole DAG of `configfile` (with `overlay` on top of it)."""
    exe = shutil.which("snakemake") or str(Path(sys.executable).parent / "snakemake")
    configfiles = [configfile, *([str(overlay)] if overlay else [])]
    proc = subprocess.run(
        [exe, "-n", "--forceall", "--configfile", *configfiles, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def _jobs(dry_run: str) -> list[tuple[str, str]]:
    """(rule, resources line) of each job a dry run prints."""
    return re.findall(r"^(?:local)?rule (\w+):\n(?:    .*\n)*?    resources: ([^\n]*)", dry_run, re.M)


#: The test configurations: UnStereoEval's stages, and the four other methods.
TEST_CONFIGS = [".test/config.yaml", ".test/config-methods.yaml"]


@pytest.mark.slow
@pytest.mark.parametrize("configfile", TEST_CONFIGS)
def test_every_rule_declares_memory_and_time(configfile):
    """Without a profile Snakemake adds no defaults, so mem_mb and runtime in a dry run come from the rules
    themselves: every job of the test DAGs (they grow with the stages) must have both. With the test configs'
    devices (auto) no job asks for a GPU."""
    jobs = _jobs(_dry_run_resources("--workflow-profile", "none", configfile=configfile))
    assert jobs
    missing = {rule for rule, res in jobs if rule != "all" and not ("mem_mb=" in res and "runtime=" in res)}
    assert not missing, f"rules without mem_mb/runtime: {sorted(missing)}"
    assert not {rule for rule, res in jobs if "gpu=" in res}
    fetch = [res for rule, res in jobs if rule == "fetch_resource"]
    # its own mem_mb_for(base=2000) and runtime_for(base=30, cap=240) at attempt 1
    assert fetch and all("mem_mb=2000," in res and "runtime=30" in res for res in fetch)


@pytest.mark.slow
def test_slurm_profile_overrides_apply():
    """The Slurm profile's set-resources replace fetch_resource's runtime (60 min at attempt 1). A dry run needs no
    Slurm."""
    pytest.importorskip("snakemake_executor_plugin_slurm", reason="Slurm executor plugin missing")
    jobs = _jobs(_dry_run_resources("--workflow-profile", "workflow/profiles/slurm"))
    fetch = [res for rule, res in jobs if rule == "fetch_resource"]
    assert fetch and all("mem_mb=2000," in res and "runtime=60" in res for res in fetch)


def _gpu_rules() -> dict[str, str]:
    """Every rule that runs a model, and so can run on cuda, with its device key: generated from the workflow
    (unstereo.workflow.generated_docs.gpu_rules, the list docs/slurm.md and the profile show)."""
    from unstereo.workflow import generated_docs

    return generated_docs.gpu_rules()


def _cuda_overlay() -> str:
    """Every stage's device key (from the schemas) set to cuda."""
    from unstereo.workflow import generated_docs

    config: dict = {}
    for key in generated_docs.device_keys():
        config = generated_docs._deep_merge(config, generated_docs._nested(key, "cuda"))
    return yaml.safe_dump(config)


def test_gpu_rules_are_the_model_rules():
    """The generated list holds the rules that run a model (each takes its resources from model_rules)."""
    rules = _gpu_rules()
    assert {"score", "robustness_score", "generate_use", "biastest_generate"} <= set(rules)
    assert rules["biastest_generate"] == "biastest.generate.device"
    assert rules["robustness_score"] == "score.device"


def test_profile_lists_the_generated_gpu_rules(profile_text):
    """The profile's GPU comment names exactly the generated rules (python -m unstereo.workflow.generated_docs --write)."""
    block = profile_text.split("<!-- generated: gpu-rules -->")[1].split("<!-- end generated -->")[0]
    named = set(re.findall(r"\b[a-z_]+(?=,|$)", block, re.M)) - {"device"}
    assert named == set(_gpu_rules())


@pytest.mark.slow
def test_model_rules_request_a_gpu_with_device_cuda(tmp_path):
    """With `device: cuda` every job that runs a model asks the Slurm executor for one GPU (`gpu=1`, submitted as
    --gpus=1), and no other job does: the Slurm profile's dry run of both test configurations, whose DAGs together
    hold every generated GPU rule."""
    pytest.importorskip("snakemake_executor_plugin_slurm", reason="Slurm executor plugin missing")
    overlay = tmp_path / "cuda.yaml"
    overlay.write_text(_cuda_overlay())
    gpu_rules = set(_gpu_rules())
    seen = set()
    for configfile in TEST_CONFIGS:
        dry_run = _dry_run_resources(
            "--workflow-profile", "workflow/profiles/slurm", configfile=configfile, overlay=overlay
        )
        jobs = _jobs(dry_run)
        gpu = {rule for rule, res in jobs if re.search(r"(^|, )gpu=1(,|$)", res)}
        present = {rule for rule, _ in jobs} & gpu_rules
        assert gpu == present, f"{configfile}: GPU requested by {sorted(gpu)}, model rules {sorted(present)}"
        seen |= present
    assert seen == gpu_rules
