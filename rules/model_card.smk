# The cross-method model card (logic in src/unstereo/model_card/card.py): every enabled method's headline
# metric per model with its interval, the models' rank per metric and Kendall's tau-b between the methods'
# rankings, and the paired tests between models (permutation or bootstrap, one Holm family) with the findings
# they support (src/unstereo/model_card/compare.py). results/model_card.parquet, results/model_card_tau.parquet,
# results/model_card_tests.parquet, results/model_card/comparisons.{html,md}, results/model_card/models.png (every
# model's value and interval per metric), and per model
# results/model_card/{model}.{html,md,png} in the report under "Model card". Built when the report is enabled
# and at least one method with headline metrics is (every registered method whose declaration names a
# headline_module: unstereo.model_card.card.card_methods).

import unstereo.model_card.card as _model_card

CARD_ON = config["report"]["enabled"] and bool(_model_card.enabled_methods(config))
CARD_MODELS = _model_card.card_models(config) if CARD_ON else []


rule model_card:
    """The model card: the headline metrics of every enabled method stacked, ranked and compared (Kendall tau)."""
    input:
        _model_card.card_inputs(config) if CARD_ON else [],
        _model_card.item_inputs(config) if CARD_ON else [],
        _model_card.resampled_inputs(config) if CARD_ON else [],
    output:
        card=results("model_card.parquet"),
        tau=results("model_card_tau.parquet"),
        tests=results("model_card_tests.parquet"),
        comparisons=report(
            results("model_card", "comparisons.html"),
            caption="../workflow/report/model_card_comparisons.rst",
            category=_model_card.CATEGORY,
            subcategory="Which models differ",
        ),
        comparisons_md=results("model_card", "comparisons.md"),
        tau_page=report(
            results("model_card", "tau.html"),
            caption="../workflow/report/model_card_tau.rst",
            category=_model_card.CATEGORY,
            subcategory="Agreement between methods",
        ),
        tau_md=results("model_card", "tau.md"),
        overview=report(
            results("model_card", "models.png"),
            caption="../workflow/report/model_card_models.rst",
            category=_model_card.CATEGORY,
            subcategory="Every model",
        ),
        pages=[
            report(
                results("model_card", f"{m}.html"),
                caption="../workflow/report/model_card.rst",
                category=_model_card.CATEGORY,
                subcategory=m,
            )
            for m in CARD_MODELS
        ],
        figures=[
            report(
                results("model_card", f"{m}.png"),
                caption="../workflow/report/model_card.rst",
                category=_model_card.CATEGORY,
                subcategory=m,
            )
            for m in CARD_MODELS
        ],
        markdown=[results("model_card", f"{m}.md") for m in CARD_MODELS],
    log:
        f"{LOGS}/report/model_card.log",
    localrule: True  # seconds on small tables: no cluster job (docs/performance.md)
    conda:
        "../src/unstereo/unstereoeval/report/env.yaml"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        # a function: the JSON holds braces (path patterns) that a plain string would expand as wildcards
        config=lambda wc: _model_card.card_config(config),
        models=" ".join(f"--model {m}" for m in CARD_MODELS),
        pages_dir=lambda wc, output: Path(output.tau_page).parent,
    shell:
        "unstereo report model-card --config-json {params.config:q} -o {output.card} --tau {output.tau}"
        " --tests {output.tests} --pages-dir {params.pages_dir} {params.models} > {log} 2>&1"


if CARD_ON:
    ALL_TARGETS.extend(rules.model_card.output)


# Agreement on occupations (src/unstereo/model_card/occupations.py): every method's lean on Winogender's occupations
# from the per-item tables it already wrote (no model run), against the share of women of Winogender's
# occupations-stats.tsv and against each other. results/occupation_leans.{parquet,csv},
# results/occupation_correlations.parquet, results/model_card/occupations.{html,md,png}.
import unstereo.model_card.occupations as _occupations

OCCUPATION_INPUTS = _occupations.input_paths(config) if CARD_ON else []


rule model_card_occupations:
    """Per-occupation leans of every method with occupations, their correlations with the share of women and
    between methods."""
    input:
        OCCUPATION_INPUTS,
        reference=resource_manifest("reference"),
    output:
        leans=results("occupation_leans.parquet"),
        csv=results("occupation_leans.csv"),
        correlations=results("occupation_correlations.parquet"),
        page=report(
            results("model_card", "occupations.html"),
            caption="../workflow/report/model_card_occupations.rst",
            category=_model_card.CATEGORY,
            subcategory="Agreement on occupations",
        ),
        figure=report(
            results("model_card", "occupations.png"),
            caption="../workflow/report/model_card_occupations.rst",
            category=_model_card.CATEGORY,
            subcategory="Agreement on occupations",
        ),
        markdown=results("model_card", "occupations.md"),
    log:
        f"{LOGS}/report/model_card_occupations.log",
    localrule: True  # seconds on small tables: no cluster job (docs/performance.md)
    conda:
        "../src/unstereo/unstereoeval/report/env.yaml"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        config=lambda wc: _model_card.card_config(config),
        stats=lambda wc, input: Path(input.reference).parent
        / "winogender"
        / "data"
        / "occupations-stats.tsv",
        pages_dir=lambda wc, output: Path(output.page).parent,
    shell:
        "unstereo report occupations --config-json {params.config:q} --stats {params.stats:q}"
        " -o {output.leans} --correlations {output.correlations} --pages-dir {params.pages_dir} > {log} 2>&1"


if OCCUPATION_INPUTS:
    ALL_TARGETS.extend(rules.model_card_occupations.output)


# Model variants against their bases (src/unstereo/model_card/variant_page.py): every headline metric of the card,
# each variant (recognised by its variant.json) against its base by the card's paired tests, Holm; dose-response over
# strength; which metrics move under each intervention; the per-occupation leans of each variant against its base's.
# results/model_card_variants.parquet, model_card_variant_{dose,together,occupations}.parquet,
# results/model_card/variants.{html,md,png}. Built when the card is and one of its models is a variant.
import shlex

import unstereo.model_card.variant_models as _variant_models

VARIANT_RECORDS = (
    _variant_models.variant_sources(config, CARD_MODELS) if CARD_ON else []
)


rule model_card_variants:
    """Each model variant against its base under every headline metric, the dose-response, whether the methods
    move together and the per-occupation leans."""
    input:
        _model_card.card_inputs(config) if CARD_ON else [],
        _model_card.item_inputs(config) if CARD_ON else [],
        _model_card.resampled_inputs(config) if CARD_ON else [],
        records=VARIANT_RECORDS,
        leans=results("occupation_leans.parquet") if OCCUPATION_INPUTS else [],
        perplexity=(
            results("variants", "perplexity.parquet")
            if config["variants"]["enabled"] and config["variants"]["models"]
            else []
        ),
    output:
        changes=results("model_card_variants.parquet"),
        dose=results("model_card_variant_dose.parquet"),
        together=results("model_card_variant_together.parquet"),
        occupations=results("model_card_variant_occupations.parquet"),
        page=report(
            results("model_card", "variants.html"),
            caption="../workflow/report/model_card_variants.rst",
            category=_model_card.CATEGORY,
            subcategory="Variants against their bases",
        ),
        figure=report(
            results("model_card", "variants.png"),
            caption="../workflow/report/model_card_variants.rst",
            category=_model_card.CATEGORY,
            subcategory="Variants against their bases",
        ),
        markdown=results("model_card", "variants.md"),
    log:
        f"{LOGS}/report/model_card_variants.log",
    localrule: True  # seconds on small tables: no cluster job
    conda:
        "../src/unstereo/unstereoeval/report/env.yaml"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        config=lambda wc: _model_card.card_config(config),
        pages_dir=lambda wc, output: Path(output.page).parent,
        extra=lambda wc, input: " ".join(
            f"--{k} {shlex.quote(str(input[k]))}"
            for k in ("leans", "perplexity")
            if input.get(k)
        ),
    shell:
        "unstereo report model-card-variants --config-json {params.config:q} -o {output.changes}"
        " --dose {output.dose} --together {output.together} --occupations {output.occupations}"
        " --pages-dir {params.pages_dir} {params.extra} > {log} 2>&1"


if VARIANT_RECORDS:
    ALL_TARGETS.extend(rules.model_card_variants.output)
