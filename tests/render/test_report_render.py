"""The one table renderer's grid functions on a hand-made table (expected output written out by hand)."""

from __future__ import annotations

from unstereo.render.formats import html_table, markdown_table

HEADER = ["word", "a|b", "n"]
ROWS = [["she & he", "x|y", "1.50"], ["<b>", "", "2"]]


def test_markdown_table_escapes_pipes_and_takes_a_caption():
    assert markdown_table(HEADER, ROWS) == (
        "| word | a\\|b | n |\n|---|---|---|\n| she & he | x\\|y | 1.50 |\n| <b> |  | 2 |\n"
    )
    assert markdown_table(["k"], [], caption="Counts") == "**Counts**\n\n| k |\n|---|\n"


def test_html_table_escapes_and_sets_caption_and_classes():
    assert html_table(HEADER, ROWS) == (
        "<table>\n<thead><tr>\n<th>word</th>\n<th>a|b</th>\n<th>n</th>\n</tr></thead><tbody>\n"
        "<tr><td>she &amp; he</td><td>x|y</td><td>1.50</td></tr>\n"
        "<tr><td>&lt;b&gt;</td><td></td><td>2</td></tr>\n</tbody></table>\n"
    )
    got = html_table(
        ["m", "v"], [["P<1B>", "0.5"]], caption="A & B", css_class="card", cell_classes={1: "num"}
    )
    assert got == (
        "<table class='card'>\n<caption>A &amp; B</caption>\n<thead><tr>\n<th>m</th>\n<th>v</th>\n"
        "</tr></thead><tbody>\n<tr><td>P&lt;1B&gt;</td><td class='num'>0.5</td></tr>\n</tbody></table>\n"
    )
