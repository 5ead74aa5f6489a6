# Shared helpers for all rules files: paths from the config, the CLI call, seeds. Rules that run a model take their
# wildcard constraint, model input and argument, seed, threads and resources (GPU included) from
# unstereo.workflow.rules (imported here as `model_rules` for every rules file).

import unstereo.workflow.rules as model_rules
from unstereo.defaults import RESOURCE_MANIFEST

RESULTS = config["results_dir"]
EXTERNAL = config["external_dir"]
LOGS = f"{RESULTS}/logs"
BENCH = f"{RESULTS}/logs/bench"


def results(*parts):
    """Path under the configured results directory."""
    return "/".join([RESULTS, *parts])


def mirror_option():
    """`--mirror DIR` for `unstereo resources fetch reference` when the config names a mirror."""
    mirror = config.get("reference_mirror")
    return f"--mirror {mirror}" if mirror else ""


def stage_seed(stage):
    """A per-stage seed derived from the global one, so stages do not share random streams."""
    return model_rules.stage_seed(config["seed"], stage)


def section_seed(section, stage):
    """The seed of a stage: its section's `seed`, else `stage_seed(stage)` (unstereo.workflow.rules.seed)."""
    return model_rules.seed(section, stage, config["seed"])


def rule_priority(rule, resource=None):
    """The Snakemake priority of `rule`'s jobs (for fetch_resource, of the job fetching `resource`): the run's long
    pole, the job that runs the largest model, and the jobs it waits for start first
    (unstereo.workflow.rules.priority)."""
    return model_rules.priority(config, rule, resource)


# resource_manifest(name): the manifest file that marks resource `name` as fetched (use it as a rule input);
# resource_manifest.variant(name): the record of model variant `name` (results/variants/NAME/variant.json, written
# by rule variants_train), which model_rules.model_inputs gives a rule that runs a variant.
resource_manifest = model_rules.ModelFiles(
    EXTERNAL, results("variants"), config["variants"]["models"], RESOURCE_MANIFEST
)


def delta_path(choice):
    """Delta table for a stage's `delta:` key: `corpus` (this workflow's counts), `released` (the PILE table of the
    UnStereoEval release, converted by rule released_delta), or a path to a delta parquet/CSV.
    """
    if choice in ("corpus", "released"):
        return results("delta", f"{choice}.parquet")
    return choice


# ---- cluster resources (Slurm): thin wrappers over unstereo.workflow.slurm_resources; see docs/slurm.md ------------------
import unstereo.workflow.slurm_resources as _slurm_resources


def mem_mb_for(base=1000, per_mb=0.0, growth=1.5, cap=None):
    """The `mem_mb` resource of a job: `base` MB + `per_mb` MB per MB of input, times `growth` per retry attempt,
    capped at `cap`, rounded up to 100 MB (unstereo.workflow.slurm_resources.mem_mb).

        resources:
            mem_mb=mem_mb_for(base=2000, per_mb=3),

    Snakemake calls the returned function with the job's `input` (whose `size_mb` it measures once the files exist)
    and `attempt` (1 on the first submission, 2 after `--retries` resubmits a failed job, ...).
    """

    def mem_mb(wildcards, input, attempt):
        return _slurm_resources.mem_mb(
            input.size_mb, attempt, base=base, per_mb=per_mb, growth=growth, cap=cap
        )

    return mem_mb


def runtime_for(base=10, per_mb=0.0, growth=2.0, cap=None):
    """The `runtime` resource (minutes, `sbatch -t`) of a job: `base` + `per_mb` per MB of input, times `growth` per
    retry attempt, capped at `cap` (unstereo.workflow.slurm_resources.runtime). Use like `mem_mb_for`:

        resources:
            runtime=runtime_for(base=30, per_mb=0.5),
    """

    def runtime(wildcards, input, attempt):
        return _slurm_resources.runtime(
            input.size_mb, attempt, base=base, per_mb=per_mb, growth=growth, cap=cap
        )

    return runtime


def gpu_resources(device, gpus=1, gpu_model=None, cpus_per_gpu=None, spelling="gpu"):
    """GPU resources of a job that runs on torch `device` (a config value), {} unless the device is `cuda`,
    `cuda:N` or `gpu`. The built-in rules that run a model take theirs from `model_rules.job_resources` (one
    GPU, its type chosen in the Slurm profile); this is for a rule of a site's own that names the GPU type or
    the gres spelling itself. Unpack it into the resources (snakefmt puts it first):

        resources:
            **gpu_resources(config["score"]["device"], gpu_model=config["score"].get("gpu_model")),
            mem_mb=mem_mb_for(base=8000),

    `spelling` "gpu" gives gpu/gpu_model/cpus_per_gpu (sbatch --gpus=MODEL:N), "gres" gives gres="gpu:MODEL:N"
    (sbatch --gres=...), for sites that reject --gpus; a stage may expose it as a config key.
    """
    return _slurm_resources.gpu_resources(
        device,
        gpus=gpus,
        gpu_model=gpu_model,
        cpus_per_gpu=cpus_per_gpu,
        spelling=spelling,
    )
