"""unstereo: UnStereoEval and related bias measurements as a reproducible workflow.

Run `snakemake --cores 8` (config/config.yaml, the embedded offline default) or pass `--configfile`.
Every rule is thin: it calls the `unstereo` CLI; the logic lives in src/unstereo.
"""

from pathlib import Path

from snakemake.utils import min_version

from unstereo import method_registry
from unstereo.config import validate_config

min_version("9.0")


# The embedded default, unless config files are given on the command line: those REPLACE it (Snakemake would
# otherwise merge them into it, and e.g. the default's benchmark sources and models would leak into paper.yaml).
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


# Validates against the shared schemas (workflow/schemas links to src/unstereo/config/schemas) and each method's own
# (in its package folder), fills in defaults, names the bad key and the config file(s).
validate_config(
    config,
    source=", ".join(
        map(str, workflow.overwrite_configfiles or ["config/config.yaml"])
    ),
)

# With the paper reproduction on, the HTML report (`snakemake --report`) opens with its summary, written by rule
# paper_reproduction (cells compared, within rounding, explained, unexplained).
if config["report"]["enabled"] and config["report"]["paper"]:

    report: str(Path(config["results_dir"]).resolve() / "paper" / "summary.rst")


# Each rules file appends the final outputs of its stage to ALL_TARGETS.
ALL_TARGETS = []
# The registered methods by name (unstereo.method_registry): rules take their report category from here, e.g.
# `category=METHODS["fairpair"].category`.
METHODS = method_registry.methods()


# The shared infrastructure first (rules/common.smk: paths, seeds, the model rule layer), then every method's rules
# files in registry order, from its package folder (UnStereoEval's stages first, in pipeline order, e.g.
# src/unstereo/unstereoeval/corpus/rules.smk; another method's rules read only the shared helpers and the config). A new method
# registers itself; nothing to add here.
include: "rules/common.smk"
include: "rules/resources.smk"


for _rules_file in method_registry.rules_files():

    include: _rules_file


# The cross-method model card reads every registered method's headline metrics (after all of them).
include: "rules/model_card.smk"


rule all:
    default_target: True
    input:
        ALL_TARGETS,
