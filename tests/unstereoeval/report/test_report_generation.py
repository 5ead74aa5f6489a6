"""The report's generation section (unstereo.unstereoeval.report.generation) from a hand-made generate run."""

from __future__ import annotations

import json

from click.testing import CliRunner

from unstereo.llm.types import ChatResult
from unstereo.unstereoeval.generate import GenerateSettings, generate_benchmark, load_prompts, summarize
from unstereo.unstereoeval.report.generation import STEPS, filter_table, generation_html


class Client:
    def chat_many(self, reqs, desc=""):
        out = []
        for r in reqs:
            if r.tag == "generation":
                if "pronoun 'he'" in r.messages[-1][1]:
                    out.append(
                        ChatResult("1. He ate an apple.\n2. He gave his/her apple away.\n3. I ate his apple.")
                    )
                else:
                    out.append(ChatResult("1. The queen and she ate an apple.\n2. She washed an apple."))
            else:
                out.append(ChatResult("likely"))
        return out


def run(tmp_path):
    s = GenerateSettings(n_sentences=3, revision_max_tries=0)
    full = generate_benchmark(["apple"], 5, Client(), load_prompts(), s)
    d = tmp_path / "USE-5"
    d.mkdir()
    full.to_parquet(d / "full.parquet")
    summary = summarize(full, 1) | {"benchmark": "USE-5", "model": "m", "seconds": 1.0}
    (d / "summary.json").write_text(json.dumps(summary))
    return d, summary


def test_filter_table_counts_every_step(tmp_path):
    _, summary = run(tmp_path)
    t = filter_table({"USE-5": summary})
    assert t.rows == [label for label, _ in STEPS] and t.columns == ["USE-5"]
    # 5 sentences: "his/her" (pronoun alternative), "queen" (gendered word), "I" (chat reply), 2 kept
    assert t.value("sentences generated", "USE-5") == 5
    assert t.value("not a minimal pair: pronoun alternative", "USE-5") == 1
    assert t.value("not a minimal pair: gendered word", "USE-5") == 1
    assert t.value("chat reply", "USE-5") == 1
    assert t.value("pairs kept", "USE-5") == 2


def test_generation_page_and_cli(tmp_path):
    from unstereo.cli import cli

    d, summary = run(tmp_path)
    res = CliRunner().invoke(cli, ["report", "generation", str(d), "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    page = (tmp_path / "out" / "generation.html").read_text()
    assert "<td>He ate an apple.</td><td>She ate an apple.</td>" in page
    assert "<td>He washed an apple.</td><td>She washed an apple.</td>" in page
    assert "minimal pair: pronoun alternative: &#x27;his/her&#x27;" in page  # the rejected list, escaped
    assert "USE-5: 2 pairs kept" in page
    assert (tmp_path / "out" / "generation_filters.csv").is_file()
    assert generation_html({"USE-5": (summary, None)}).count("<table>") == 1  # no full table: counts only
    bad = CliRunner().invoke(cli, ["report", "generation", str(tmp_path / "out"), "-o", str(tmp_path / "o2")])
    assert bad.exit_code != 0 and "no summary.json" in str(bad.exception)
