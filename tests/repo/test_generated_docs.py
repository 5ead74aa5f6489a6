"""The generated documentation blocks (unstereo.workflow.generated_docs): rendering of a hand-made schema, and no drift."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from _paths import REPO

from unstereo.method_registry import config_sections
from unstereo.workflow import generated_docs as gd

TOY_SCHEMA = """
description: a toy section
type: object
additionalProperties: false
$defs:
  entry:
    type: object
    properties:
      weight: {type: number, default: 1.0, description: the entry's weight}
properties:
  enabled: {type: boolean, default: false, description: build it in `rule all`}
  mode:
    type: string
    enum: [fast, slow]
    default: fast
    description: "how: fast | slow"
  etas:
    $ref: "common.schema.yaml#/$defs/etas"
    description: bounds
  words:
    type: ["array", "null"]
    items: {type: string}
    default: null
    description: >
      words to use;
      null = all
  model:
    $ref: model.schema.yaml
    description: the model
  entries:
    type: object
    default: {}
    description: name -> entry
    additionalProperties: {$ref: "#/$defs/entry"}
  nested:
    type: object
    description: a group
    properties:
      depth: {type: integer, default: 2, description: how deep}
"""

# written out by hand: what the table of TOY_SCHEMA must be
TOY_TABLE = """\
| key | type | default | description |
| --- | --- | --- | --- |
| `enabled` | boolean | `false` | build it in `rule all` |
| `mode` | string: `fast`, `slow` | `fast` | how: fast \\| slow |
| `etas` | array of number or string | `[inf, 1.0, 0.8, 0.65, 0.5, 0.3]` | bounds |
| `words` | array of string or null | `null` | words to use; null = all |
| `model` | [model spec](#model-spec) |  | the model |
| `entries` | object | `{}` | name -> entry |
| `entries.NAME.weight` | number | `1.0` | the entry's weight |
| `nested` | object |  | a group |
| `nested.depth` | integer | `2` | how deep |"""


@pytest.fixture
def toy_schema(tmp_path):
    path = tmp_path / "toy.schema.yaml"
    path.write_text(TOY_SCHEMA)
    return path


def test_table_of_a_hand_made_schema(toy_schema):
    # the shared schemas (common, model) are found in the package's schema folder, not beside the toy
    assert gd.section_table(toy_schema) == TOY_TABLE


def test_values_as_inline_code():
    assert gd._code(None) == "`null`"
    assert gd._code([1, "a"]) == "`[1, a]`"
    assert gd._code({"k": None}) == "`{k: null}`"
    assert gd._code("") == '`""`'
    assert gd._code("{name} is") == '`"{name} is"`'
    # a control character would break the table row (YAML folds a newline over lines): JSON, on one line
    assert gd._code(["\n"]) == '`["\\n"]`'
    assert gd._code({"stop": "a\tb"}) == '`{"stop": "a\\tb"}`'


def test_a_map_of_model_specs_and_a_long_default(tmp_path):
    """A map NAME -> model spec is typed as such (linked); a default too long for its column is written below the
    table."""
    long = [f"construction_{i}" for i in range(20)]
    path = tmp_path / "toy.schema.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "type": "object",
                "properties": {
                    "models": {
                        "type": "object",
                        "default": {},
                        "description": "name -> spec",
                        "additionalProperties": {"$ref": "model.schema.yaml"},
                    },
                    "items": {
                        "type": "array",
                        "items": {"type": "string"},
                        "default": long,
                        "description": "all",
                    },
                },
            },
            sort_keys=False,
        )
    )
    assert gd.section_table(path) == "\n".join(
        [
            "| key | type | default | description |",
            "| --- | --- | --- | --- |",
            "| `models` | object: NAME -> [model spec](#model-spec) | `{}` | name -> spec |",
            "| `items` | array of string | below the table | all |",
            "",
            f"Default of `items`: `[{', '.join(long)}]`",
        ]
    )


def test_regenerate_replaces_only_the_blocks():
    text = "intro\n<!-- generated: x -->\nold\n<!-- end generated -->\nprose\n  # <!-- generated: x -->\n  # old\n  # <!-- end generated -->\n"

    def render(name, markdown=True):
        return "a | b\nc" if markdown else "a, b"

    new, stale = gd.regenerate(text, render)
    assert new == (
        "intro\n<!-- generated: x -->\na | b\nc\n<!-- end generated -->\nprose\n"
        "  # <!-- generated: x -->\n  # a, b\n  # <!-- end generated -->\n"
    )
    assert stale == ["x", "x"]
    assert gd.regenerate(new, render) == (new, [])
    with pytest.raises(ValueError, match="no end marker"):
        gd.regenerate("<!-- generated: x -->\nold\n", render)


def test_every_section_has_a_block():
    """config/README.md shows every registered section's table (and the shared keys'), generated, and no table
    written by hand beside them (the old `| key | default | meaning |` tables)."""
    text = (REPO / "config" / "README.md").read_text()
    for section in [*config_sections(), "top-level"]:
        assert f"<!-- generated: config-section {section} -->" in text, section
    assert "| key | default | meaning |" not in text


def test_generated_docs_are_current():
    """Fails when a schema, a rules file or the registry changed and the docs were not regenerated."""
    stale = gd.check()
    assert not stale, f"stale generated blocks {stale}: run `{gd.COMMAND}`"


def _copy_checkout(tmp_path: Path) -> Path:
    """The files the generator reads and writes, in a temporary checkout (symlinks for the rest)."""
    root = tmp_path / "repo"
    root.mkdir()
    for name in gd.DOC_FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, root / name)
    return root


def test_a_changed_schema_default_makes_the_check_fail(tmp_path, monkeypatch):
    """The hand-made drift: a schema default changed, the docs not regenerated -> the check names the block; after
    --write it passes."""
    root = _copy_checkout(tmp_path)
    section = "vocabulary"
    path = config_sections()[section]
    schema = yaml.safe_load(path.read_text())
    key = next(k for k, v in schema["properties"].items() if "default" in v and v.get("type") == "boolean")
    schema["properties"][key]["default"] = not schema["properties"][key]["default"]
    changed = tmp_path / path.name
    changed.write_text(yaml.safe_dump(schema))
    real = gd.render_block

    def render(name, markdown=True):
        if name == f"config-section {section}":
            return gd.section_table(changed, path.parent)
        return real(name, markdown)

    monkeypatch.setattr(gd, "render_block", render)
    assert gd.check(root=root) == [f"config/README.md: config-section {section}"]
    assert gd.write(root=root) == [f"config/README.md: config-section {section}"]
    assert gd.check(root=root) == []


def test_command_line_check(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "unstereo.workflow.generated_docs", "--check"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr


def test_gpu_rules_table():
    rules = {"score": "score.device", "robustness_score": "score.device", "x_sample": "x.device"}
    assert gd.gpu_rules_table(rules) == textwrap.dedent(
        """\
        | rule | device key |
        | --- | --- |
        | `score`, `robustness_score` | `score.device` |
        | `x_sample` | `x.device` |"""
    )
    assert gd.gpu_rules_comment(rules) == "score.device: score, robustness_score\nx.device: x_sample"
