"""The one model spec: parsing of each form, resolution, schema validation and errors naming the key."""

from __future__ import annotations

import pytest
from _paths import REPO

import unstereo.workflow.rules as model_rules
from unstereo.config import validate_config
from unstereo.errors import ConfigError
from unstereo.models.spec import ModelSpec, resolve_model
from unstereo.unstereoeval.generate.settings import load_section


@pytest.mark.parametrize(
    "text, spec",
    [
        ("EleutherAI/pythia-70m", ModelSpec(path="EleutherAI/pythia-70m")),
        ("EleutherAI/pythia-70m@step1000", ModelSpec(path="EleutherAI/pythia-70m", revision="step1000")),
        ("models/x/x.Q4.gguf", ModelSpec(path="models/x", gguf_file="x.Q4.gguf")),
        ("resource:smollm2/S.gguf", ModelSpec(path="ext/smollm2", gguf_file="S.gguf", resource="smollm2")),
        ("resource:gemma3", ModelSpec(path="ext/gemma3", resource="gemma3")),
        (
            "endpoint:http://127.0.0.1:8000/v1/#gpt-4o-mini",
            ModelSpec(endpoint="http://127.0.0.1:8000/v1", name="gpt-4o-mini", api_key_env="OPENAI_API_KEY"),
        ),
    ],
)
def test_string_forms(text, spec):
    assert resolve_model(text, "ext") == spec


@pytest.mark.parametrize(
    "entry, spec",
    [
        (
            {"path": "EleutherAI/pythia-70m", "revision": "main"},
            ModelSpec(path="EleutherAI/pythia-70m", revision="main"),
        ),  # fmt: skip
        ({"path": "models/x", "gguf_file": "f.gguf"}, ModelSpec(path="models/x", gguf_file="f.gguf")),
        (
            {"resource": "qwen-coder", "gguf_file": "q.gguf"},
            ModelSpec(path="ext/qwen-coder", gguf_file="q.gguf", resource="qwen-coder"),
        ),  # fmt: skip
        (
            {"endpoint": "http://h/v1", "name": "m"},
            ModelSpec(endpoint="http://h/v1", name="m", api_key_env="OPENAI_API_KEY"),
        ),  # fmt: skip
        (
            {"endpoint": "http://h/v1", "name": "m", "api_key_env": "MY_KEY"},
            ModelSpec(endpoint="http://h/v1", name="m", api_key_env="MY_KEY"),
        ),  # fmt: skip
        (
            {"endpoint": "http://h/v1", "name": "m", "api_key_env": None},
            ModelSpec(endpoint="http://h/v1", name="m"),
        ),  # fmt: skip
    ],
)
def test_mapping_forms(entry, spec):
    assert resolve_model(entry, "ext") == spec


def test_to_arg_round_trips_and_labels():
    for text in [
        "EleutherAI/pythia-70m",
        "EleutherAI/pythia-70m@step1",
        "m/x.gguf",
        "endpoint:http://h/v1#m",
    ]:
        assert resolve_model(text).to_arg() == text
    res = resolve_model("resource:smollm2/S.gguf", "ext")
    assert res.to_arg() == "ext/smollm2/S.gguf" and resolve_model(res.to_arg()).gguf_file == "S.gguf"
    assert resolve_model("endpoint:http://h/v1#m").label == "m"
    assert resolve_model("m/x.gguf").converted_dir.as_posix() == "m/x.gguf.hf"
    assert resolve_model("endpoint:http://h/v1#m").is_remote and not resolve_model("a/b").is_remote


def test_external_dir_default_from_environment(monkeypatch):
    monkeypatch.setenv("UNSTEREO_EXTERNAL_DIR", "/data/ext")
    assert resolve_model("resource:smollm2").path == "/data/ext/smollm2"


def test_command_line_extras_merge_or_clash():
    assert resolve_model("a/b", gguf_file="f.gguf") == ModelSpec(path="a/b", gguf_file="f.gguf")
    assert resolve_model("a/b/f.gguf", gguf_file="f.gguf") == ModelSpec(path="a/b", gguf_file="f.gguf")
    assert resolve_model("endpoint:http://h/v1#m", api_key_env="K").api_key_env == "K"
    assert resolve_model("endpoint:http://h/v1#m", api_key_env="").api_key_env is None  # '' = no key
    assert resolve_model("a/b", api_key_env="K") == ModelSpec(path="a/b")  # ignored for a local model
    with pytest.raises(ConfigError, match="config key 'MODEL.gguf_file'.*given twice"):
        resolve_model("a/b/f.gguf", gguf_file="g.gguf", key="MODEL")


@pytest.mark.parametrize(
    "entry, key, message",
    [
        (
            {"path": "a", "resource": "smollm2"},
            "m",
            "exactly one of path, resource, endpoint, variant .got path and resource",
        ),
        ({"gguf_file": "x.gguf"}, "m", "got none"),
        ({"path": "a", "colour": "red"}, "m.colour", "unknown model key"),
        ({"endpoint": "http://h/v1"}, "m.name", "needs `name`"),
        ({"endpoint": "http://h/v1", "name": "n", "gguf_file": "f"}, "m.gguf_file", "does not apply"),
        ({"path": "a", "name": "n"}, "m.name", "only to an endpoint"),
        ({"path": "a", "api_key_env": "K"}, "m.api_key_env", "only to an endpoint"),
        ({"resource": "smollm2", "revision": "r"}, "m.revision", "only to a hub id"),
        ({"path": 3}, "m.path", "must be a string"),
        ("", "m", "empty model spec"),
        ("endpoint:http://h/v1", "m", "endpoint:URL#MODEL_NAME"),
        ("resource:", "m", "resource:NAME"),
        ({"variant": "v", "gguf_file": "f.gguf"}, "m.gguf_file", "does not apply to a variant"),
        ({"variant": "v", "path": "a"}, "m", "got path and variant"),
        ("variant:", "m", "variant:NAME"),
        (3, "m", "a string or a mapping"),
    ],
)
def test_bad_specs_name_the_key(entry, key, message):
    with pytest.raises(ConfigError, match=rf"config key '{key}': .*{message}"):
        resolve_model(entry, key="m")


@pytest.mark.parametrize(
    "entry, key",
    [
        ({"path": "x", "resource": "smollm2"}, "score.models.m"),
        ({"endpoint": "http://h/v1", "name": "n"}, "score.models.m.endpoint"),  # cannot be scored
        ({"path": "x", "name": "n"}, "score.models.m.name"),
        ({"path": "x", "colour": 1}, "score.models.m.colour"),
        ({"resource": "nope"}, "score.models.m.resource"),
    ],
)
def test_score_schema_uses_the_fragment(entry, key):
    with pytest.raises(ConfigError, match=f"config key '{key}'"):
        validate_config({"score": {"models": {"m": entry}}})


def test_score_entry_keeps_its_own_keys_and_defaults():
    cfg = validate_config({"score": {"models": {"m": {"path": "x", "batch_size": 4, "revision": "r"}}}})
    assert cfg["score"]["models"]["m"] == {"path": "x", "batch_size": 4, "revision": "r", "masked": False}
    assert model_rules.model_spec(cfg["score"]["models"]["m"]) == ModelSpec(path="x", revision="r")


def test_generate_model_default_string_and_errors():
    assert load_section({})["model"] == {
        "resource": "qwen-coder",
        "gguf_file": "qwen2.5-coder-0.5b-instruct.gguf",
    }
    assert load_section({"model": "endpoint:http://h/v1#m"})["model"] == "endpoint:http://h/v1#m"
    ok = {"endpoint": "http://h/v1", "name": "m", "api_key_env": "K"}
    assert load_section({"model": ok})["model"] == ok
    with pytest.raises(ConfigError, match="config key 'generate.model'"):
        load_section({"model": {"endpoint": "http://h/v1", "name": "m", "gguf_file": "f"}})
    with pytest.raises(ConfigError, match="config key 'generate.backend'.*unknown key"):
        load_section({"backend": "openai"})  # the pre-spec keys are gone (migrated into `model`)


def test_shipped_configs_resolve(tmp_path):

    from unstereo.config import load_config

    root = REPO
    # the offline default generates with the 1.5B coder (the 0.5B judges sense too poorly), the others with the 0.5B
    generators = {"config/config.yaml": ("qwen-coder-1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
                  ".test/config.yaml": ("qwen-coder", "qwen2.5-coder-0.5b-instruct.gguf"),
                  "config/paper.yaml": ("qwen-coder", "qwen2.5-coder-0.5b-instruct.gguf")}  # fmt: skip
    for path, want in generators.items():
        cfg = load_config(root / path)
        spec = resolve_model(cfg["generate"]["model"], "ext", key="generate.model")
        assert (spec.resource, spec.gguf_file) == want
        for name in cfg["score"]["models"]:
            assert not model_rules.model_spec(cfg["score"]["models"][name], "ext").is_remote


def test_remote_spec_cannot_be_loaded_locally():
    from unstereo.errors import UnstereoError
    from unstereo.models.load import load_causal_lm

    with pytest.raises(UnstereoError, match="served by an endpoint"):
        load_causal_lm("endpoint:http://h/v1#m")


# transformers told scikit-learn is installed (it need not be here); "pre" may stand in an imported scikit-learn
_LOAD = """
import sys, types
from transformers.utils import import_utils
import_utils._sklearn_available = True
{pre}
from unstereo.models.load import load_causal_lm
load_causal_lm({folder!r}, device="cpu")
print(sys.modules.get("sklearn") is not None, bool(import_utils.is_sklearn_available()),
      sys.modules.get("scipy") is not None)
"""
_FAKE_SKLEARN = """
from importlib.machinery import ModuleSpec
fake = {name: types.ModuleType(name) for name in ("sklearn", "sklearn.metrics")}
for name, module in fake.items():
    module.__spec__ = ModuleSpec(name, None)
fake["sklearn.metrics"].roc_curve = None
sys.modules.update(fake)
"""


@pytest.mark.parametrize("pre, want", [("", "False False False"), (_FAKE_SKLEARN, "True True False")])
def test_loading_a_model_does_not_import_sklearn(tmp_path, pre, want):
    """transformers' generation utilities import scikit-learn (~1.5 s) when it is installed, and its loss functions
    SciPy, for features unstereo never uses: loading a model skips them, unless the process has imported
    scikit-learn already (then transformers keeps it)."""
    import subprocess
    import sys

    from _scoring_models import tiny_gpt2, word_tokenizer

    tok = word_tokenizer()
    tiny_gpt2(len(tok)).save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    code = _LOAD.format(pre=pre, folder=str(tmp_path / "m"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[-2] == want


def test_variant_forms_resolve_to_the_variants_folder(monkeypatch):
    """``{variant: NAME}`` and ``variant:NAME``: the folder NAME of the variants directory (the argument, else
    $UNSTEREO_VARIANTS_DIR, else results/variants), its name kept; its argument is the folder."""
    want = ModelSpec(path="out/variants/v1", variant="v1")
    assert resolve_model({"variant": "v1"}, variants_dir="out/variants") == want
    assert resolve_model("variant:v1", variants_dir="out/variants") == want
    assert resolve_model("variant:v1").path == "results/variants/v1"
    monkeypatch.setenv("UNSTEREO_VARIANTS_DIR", "/x/variants")
    spec = resolve_model({"variant": "v1"})
    assert spec.path == "/x/variants/v1" and spec.to_arg() == "/x/variants/v1" == spec.label
