"""The Snakemake layer: what the rules (rules/*.smk, each method's rules.smk) and the workflow's checks use, and no
stage's own logic: the rule layer for jobs that run a model (:mod:`.rules`), the Slurm resources of a job
(:mod:`.slurm_resources`), the check of a finished run's outputs (:mod:`.outputs_check`) and the generated parts of
the docs (:mod:`.generated_docs`)."""
