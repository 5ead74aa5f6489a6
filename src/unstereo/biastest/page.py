"""The inspection page of a biastest run: one static HTML file (inline CSS and JS, no server, no network).

Sections: the model summary (Stereotype Score with its bootstrap interval per model, specification and source, and
the t-test against the template baseline), per-attribute bars of a chosen model / specification / source, and the
per-sentence table: both sentences (the one the model preferred in bold), both scores and log-probs, whether the
stereotype won; filters (model, specification, source, preferred, text), sorting by any column, pages of 100 rows,
and a CSV export of the filtered rows. ``document.body.dataset.rows`` holds the number of rows the filters keep.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from unstereo.io import write_text

SENTENCE_COLUMNS = ["model", "spec", "source", "attribute", "group_term_a", "group_term_b", "sentence_a",
                    "sentence_b", "stereotype", "preferred", "stereotyped", "score_a", "score_b", "logp_a",
                    "logp_b", "pair_id"]  # fmt: skip


def _records(df: pd.DataFrame, columns: list[str]) -> list[list[Any]]:
    out = []
    for row in df[columns].itertuples(index=False):
        out.append([None if isinstance(v, float) and not math.isfinite(v) else
                    (round(v, 4) if isinstance(v, float) else v) for v in row])  # fmt: skip
    return out


def page_data(
    summary: pd.DataFrame, judged: pd.DataFrame, comparison: pd.DataFrame | None, meta: dict
) -> dict:
    """The JSON the page renders (column lists + rows, to keep the file small)."""
    judged = judged.copy()
    for col in SENTENCE_COLUMNS:
        if col not in judged.columns:
            judged[col] = None
    comp = comparison if comparison is not None else pd.DataFrame(columns=["model", "spec", "source", "p"])
    scols = ["model", "spec", "source", "attribute", "n", "stereotype_score", "ci_low", "ci_high"]
    ccols = ["model", "spec", "source", "baseline", "mean", "mean_baseline", "t", "p"]
    return {
        "meta": meta,
        "summary": {"columns": scols, "rows": _records(summary, scols)},
        "comparison": {"columns": ccols, "rows": _records(comp.reindex(columns=ccols), ccols)},
        "sentences": {"columns": SENTENCE_COLUMNS, "rows": _records(judged, SENTENCE_COLUMNS)},
    }


def write_page(
    out: str | Path,
    summary: pd.DataFrame,
    judged: pd.DataFrame,
    comparison: pd.DataFrame | None = None,
    *,
    title: str = "BiasTestGPT inspection",
    meta: dict | None = None,
) -> Path:
    """Write the page (atomically) and return its path."""
    data = json.dumps(page_data(summary, judged, comparison, meta or {}), ensure_ascii=False, allow_nan=False)
    data = data.replace("</", "<\\/")  # never close the script element early
    text = TEMPLATE.replace("%TITLE%", html.escape(title)).replace("%DATA%", data)
    return write_text(out, text)


TEMPLATE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>%TITLE%</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<style>
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 24px 40px;color:#222}
h1{font-size:22px;margin:18px 0 4px} h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #ddd}
.meta{color:#666;font-size:12px} table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid #eee;padding:3px 6px;text-align:left;vertical-align:top;overflow-wrap:break-word}
th{background:#f6f6f6;cursor:pointer;user-select:none;position:sticky;top:0;white-space:nowrap}
#sentences td:nth-child(5),#sentences td:nth-child(6){min-width:240px}
#sentences td:nth-child(2){max-width:180px}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.controls{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin:6px 0}
select,input,button{font:inherit;padding:2px 6px}
.bars{display:grid;grid-template-columns:minmax(120px,260px) 1fr 70px;gap:3px 8px;align-items:center}
.track{position:relative;height:14px;background:#f0f0f0;border-radius:2px}
.fill{position:absolute;left:0;top:0;bottom:0;background:#5b8def;border-radius:2px}
.fill.high{background:#e0664f} .ci{position:absolute;top:6px;height:2px;background:#222}
.half{position:absolute;left:50%;top:-2px;bottom:-2px;border-left:1px dashed #888}
.pref{font-weight:600} .st1{color:#b33} .st0{color:#2a6}
.sig{font-weight:600} .small{font-size:12px;color:#666}
</style></head>
<body>
<h1>%TITLE%</h1>
<div class="meta" id="meta"></div>
<h2>Model summary</h2>
<p class="small">Stereotype Score: percent of pairs where the model finds the stereotype sentence more probable
(50 = no preference), averaged over attribute terms; [2.5, 97.5] percentiles of the bootstrap rounds; p: t-test of
the bootstrap estimates against the template baseline (bold below 0.001).</p>
<div class="controls"><label>model <select id="sum-model"></select></label></div>
<table id="summary"><thead></thead><tbody></tbody></table>
<h2>Per attribute</h2>
<div class="controls"><label>model <select id="bar-model"></select></label>
<label>specification <select id="bar-spec"></select></label><label>source <select id="bar-source"></select></label></div>
<div class="bars" id="bars"></div>
<h2>Per sentence</h2>
<div class="controls">
<label>model <select id="f-model"></select></label><label>specification <select id="f-spec"></select></label>
<label>source <select id="f-source"></select></label>
<label>preferred <select id="f-pref"><option value="">any</option><option value="1">stereotype</option>
<option value="0">anti-stereotype</option><option value="0.5">tie</option></select></label>
<input id="f-text" type="search" placeholder="filter text">
<button id="csv">Export CSV</button><span id="count" class="small"></span>
<button id="prev">&lt;</button><span id="pageno" class="small"></span><button id="next">&gt;</button></div>
<div style="overflow-x:auto"><table id="sentences"><thead></thead><tbody></tbody></table></div>
<script type="application/json" id="data">%DATA%</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s ?? "").replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
const fmt = (v, d = 1) => (v === null || v === undefined || Number.isNaN(v)) ? "" : Number(v).toFixed(d);
const objs = (t) => t.rows.map((r) => Object.fromEntries(t.columns.map((c, i) => [c, r[i]])));
const S = objs(D.summary), C = objs(D.comparison), R = objs(D.sentences);
const uniq = (rows, k) => [...new Set(rows.map((r) => r[k]))].sort();
function fill(sel, values, any) {
  sel.innerHTML = (any ? '<option value="">any</option>' : "") + values.map((v) => `<option>${esc(v)}</option>`).join("");
}
$("meta").textContent = Object.entries(D.meta).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(", ") : v}`).join(" · ");

// ---- model summary: one row per (model, specification), a column group per source
const SOURCES = uniq(S, "source");
fill($("sum-model"), uniq(S, "model"), true);
function renderSummary() {
  const m = $("sum-model").value;
  const whole = S.filter((r) => r.attribute === "*" && (!m || r.model === m));
  const keys = [...new Set(whole.map((r) => r.model + "\u0000" + r.spec))].sort();
  const pOf = (model, spec, src) => { const c = C.find((x) => x.model === model && x.spec === spec && x.source === src); return c ? c.p : null; };
  $("summary").tHead.innerHTML = "<tr><th>model</th><th>specification</th>" + SOURCES.map((s) =>
    `<th>${esc(s)}: score [95%] (pairs)</th>` + (s === "template" ? "" : `<th>p vs template</th>`)).join("") + "</tr>";
  $("summary").tBodies[0].innerHTML = keys.map((k) => { const [model, spec] = k.split("\u0000");
    return `<tr><td>${esc(model)}</td><td>${esc(spec)}</td>` + SOURCES.map((src) => {
      const r = whole.find((x) => x.model === model && x.spec === spec && x.source === src);
      const cell = r ? `<td class="num">${fmt(r.stereotype_score)} [${fmt(r.ci_low)}, ${fmt(r.ci_high)}] (${r.n})</td>` : "<td></td>";
      if (src === "template") return cell;
      const pv = pOf(model, spec, src);
      return cell + `<td class="num ${pv !== null && pv < 0.001 ? "sig" : ""}">${pv === null ? "" : pv.toExponential(1)}</td>`;
    }).join("") + "</tr>"; }).join("");
}
$("sum-model").onchange = renderSummary;

// ---- per-attribute bars
fill($("bar-model"), uniq(S, "model")); fill($("bar-spec"), uniq(S, "spec")); fill($("bar-source"), uniq(S, "source"));
function renderBars() {
  const [m, sp, so] = [$("bar-model").value, $("bar-spec").value, $("bar-source").value];
  const rows = S.filter((r) => r.model === m && r.spec === sp && r.source === so);
  rows.sort((a, b) => (a.attribute === "*") - (b.attribute === "*") || b.stereotype_score - a.stereotype_score);
  $("bars").innerHTML = rows.length ? rows.map((r) => `<div title="${esc(r.attribute)}">${r.attribute === "*" ? "<b>whole specification</b>" : esc(r.attribute)} <span class="small">(${r.n})</span></div>` +
    `<div class="track"><div class="fill ${r.stereotype_score > 50 ? "high" : ""}" style="width:${r.stereotype_score}%"></div>` +
    (r.ci_low === null ? "" : `<div class="ci" style="left:${r.ci_low}%;width:${Math.max(0.3, r.ci_high - r.ci_low)}%"></div>`) +
    `<div class="half"></div></div><div class="num">${fmt(r.stereotype_score)}</div>`).join("") : '<div class="small">no rows for this choice</div>';
}
for (const id of ["bar-model", "bar-spec", "bar-source"]) $(id).onchange = renderBars;

// ---- per-sentence table
fill($("f-model"), uniq(R, "model"), true); fill($("f-spec"), uniq(R, "spec"), true); fill($("f-source"), uniq(R, "source"), true);
const COLS = [["model", "model"], ["spec", "specification"], ["source", "source"], ["attribute", "attribute"],
  ["sentence_a", "sentence a"], ["sentence_b", "sentence b"], ["stereotype", "stereotype"], ["stereotyped", "stereotype preferred"],
  ["score_a", "score a"], ["score_b", "score b"], ["logp_a", "log p(a)"], ["logp_b", "log p(b)"]];
let sortKey = null, sortDir = 1, page = 0, filtered = R;
const PAGE = 100;
function applyFilters() {
  const [m, sp, so, pr, q] = ["f-model", "f-spec", "f-source", "f-pref", "f-text"].map((id) => $(id).value);
  const ql = q.toLowerCase();
  filtered = R.filter((r) => (!m || r.model === m) && (!sp || r.spec === sp) && (!so || r.source === so) &&
    (!pr || String(r.stereotyped) === pr || (pr === "0.5" && r.stereotyped === 0.5)) &&
    (!ql || (r.sentence_a + " " + r.sentence_b + " " + r.attribute).toLowerCase().includes(ql)));
  if (sortKey) filtered = [...filtered].sort((a, b) => (a[sortKey] > b[sortKey] ? 1 : a[sortKey] < b[sortKey] ? -1 : 0) * sortDir);
  page = 0; document.body.dataset.rows = String(filtered.length); renderRows();
}
function renderRows() {
  const pages = Math.max(1, Math.ceil(filtered.length / PAGE));
  page = Math.min(Math.max(0, page), pages - 1);
  $("count").textContent = `${filtered.length} of ${R.length} rows`;
  $("pageno").textContent = `page ${page + 1} / ${pages}`;
  $("sentences").tHead.innerHTML = "<tr>" + COLS.map(([k, label]) => `<th data-k="${k}">${label}${sortKey === k ? (sortDir > 0 ? " ▲" : " ▼") : ""}</th>`).join("") + "</tr>";
  $("sentences").tBodies[0].innerHTML = filtered.slice(page * PAGE, (page + 1) * PAGE).map((r) =>
    "<tr>" + COLS.map(([k]) => {
      const v = r[k];
      if (k === "sentence_a" || k === "sentence_b") return `<td class="${r.preferred === k.slice(-1) ? "pref" : ""}">${esc(v)}</td>`;
      if (k === "stereotyped") return `<td class="st${v === 1 ? 1 : 0}">${v === 1 ? "yes" : v === 0 ? "no" : "tie"}</td>`;
      return typeof v === "number" ? `<td class="num">${fmt(v, 3)}</td>` : `<td>${esc(v)}</td>`;
    }).join("") + "</tr>").join("");
  for (const th of $("sentences").tHead.rows[0].cells) th.onclick = () => {
    sortDir = sortKey === th.dataset.k ? -sortDir : 1; sortKey = th.dataset.k; applyFilters(); };
}
for (const id of ["f-model", "f-spec", "f-source", "f-pref"]) $(id).onchange = applyFilters;
$("f-text").oninput = applyFilters;
$("prev").onclick = () => { page -= 1; renderRows(); };
$("next").onclick = () => { page += 1; renderRows(); };
function csvText(rows) {
  const cols = D.sentences.columns;
  const cell = (v) => { const s = String(v ?? ""); return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s; };
  return [cols.join(","), ...rows.map((r) => cols.map((c) => cell(r[c])).join(","))].join("\n") + "\n";
}
$("csv").onclick = () => {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([csvText(filtered)], {type: "text/csv"}));
  a.download = "biastest-sentences.csv"; document.body.appendChild(a); a.click(); a.remove();
};
renderSummary(); renderBars(); applyFilters();
</script></body></html>
"""
