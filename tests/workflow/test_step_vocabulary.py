"""One step vocabulary across the bias methods (docs/workflow-rules.md, "Step vocabulary"): the methods' rules are
named `<method>_<step>` from one list, and the command steps renamed to it keep their former names as aliases."""

from __future__ import annotations

import re

import click
import pytest
from _paths import REPO
from click.testing import CliRunner

from unstereo.cli import cli

#: The steps, in pipeline order (docs/workflow-rules.md).
STEPS = ("prompts", "pairs", "construct", "generate", "sample", "score", "metrics", "summary", "report")
#: Steps one method has and the others do not (sentiment's debiasing fine-tune and its own summary).
EXTRA = {"sentiment_debias", "sentiment_debias_summary"}
METHODS = ("fairpair", "sentiment", "robustness", "biastest")


def _rules(method: str) -> set[str]:
    text = (REPO / "src" / "unstereo" / method / "rules.smk").read_text()
    return set(re.findall(r"^rule (\w+):", text, re.M))


@pytest.mark.parametrize("method", METHODS)
def test_method_rules_use_the_step_vocabulary(method):
    rules = _rules(method)
    assert rules
    odd = {r for r in rules - EXTRA if r.removeprefix(f"{method}_") not in STEPS}
    assert not odd, f"{method}/rules.smk: {sorted(odd)} are not <method>_<step> with a step of {STEPS}"


@pytest.mark.parametrize(
    ("group", "new", "old"),
    [
        ("sentiment", "metrics", "fairness"),
        ("sentiment", "report", "figures"),
        ("biastest", "summary", "summarize"),
    ],
)
def test_renamed_steps_keep_their_old_command(group, new, old):
    grp = cli.get_command(click.Context(cli), group)  # the groups are imported lazily
    ctx = click.Context(grp)
    assert grp.get_command(ctx, old).callback is grp.get_command(ctx, new).callback
    listed = CliRunner().invoke(cli, [group, "--help"]).output
    assert re.search(rf"^\s+{new}\s", listed, re.M) and not re.search(rf"^\s+{old}\s", listed, re.M)
    # the old name still runs (its own --help, named as called)
    res = CliRunner().invoke(cli, [group, old, "--help"])
    assert res.exit_code == 0 and f"{group} {old} [OPTIONS]" in res.output
