# Rules of the score stage: one job per (model, benchmark) (logic in src/unstereo/scoring).
# Models come from config `score.models`: {short_name: {resource: smollm2, gguf_file: ...}} or {path: hub-id-or-dir}.

SCORE = config["score"]


def score_model(name):
    """The config entry of model `name`."""
    return SCORE["models"][name]


def score_input(wildcards):
    """All pairs of the benchmark (eta = inf) and, for a model from an offline resource, its manifest."""
    inputs = {"pairs": results("benchmarks", wildcards.benchmark, "eta-inf.parquet")}
    entry = score_model(wildcards.model)
    if entry.get("resource"):
        inputs["manifest"] = resource_manifest(entry["resource"])
    return inputs


def score_model_arg(wildcards, input):
    """MODEL argument of `unstereo score`: a file or folder inside the resource, or the configured path/hub id."""
    entry = score_model(wildcards.model)
    if entry.get("resource"):
        folder = Path(input.manifest).parent
        return (
            str(folder / entry["gguf_file"]) if entry.get("gguf_file") else str(folder)
        )
    return entry["path"]


def score_options(wildcards):
    """Options of `unstereo score` from the config (per-model entries override the stage's defaults)."""
    entry = score_model(wildcards.model)
    opts = {
        "--batch-size": entry.get("batch_size", SCORE["batch_size"]),
        "--dtype": entry.get("dtype", SCORE["dtype"]),
        "--device": SCORE["device"],
        "--chunk-size": SCORE["chunk_size"],
        "--bos-policy": SCORE["bos_policy"],
    }
    if SCORE["max_batch_size"]:
        opts["--max-batch-size"] = SCORE["max_batch_size"]
    if entry.get("revision"):
        opts["--revision"] = entry["revision"]
    if entry.get("gguf_file") and not entry.get("resource"):
        opts["--gguf-file"] = entry["gguf_file"]
    flags = [
        "--reference-quirks" if SCORE["reference_quirks"] else "--no-reference-quirks"
    ]
    if entry.get("masked"):
        flags.append("--masked")
    return " ".join([*(f"{k} {v}" for k, v in opts.items()), *flags])


def score_uses_gpu():
    return str(SCORE["device"]).startswith("cuda")


rule score:
    """Sentence log-likelihoods of every pair of a benchmark under one model (resumable: chunks beside the output)."""
    input:
        unpack(score_input),
    output:
        results("scores", "{model}", "{benchmark}.parquet"),
    log:
        f"{LOGS}/score/{{model}}/{{benchmark}}.log",
    benchmark:
        f"{BENCH}/score/{{model}}/{{benchmark}}.tsv"
    wildcard_constraints:
        model="|".join(SCORE["models"]) or "no-model-configured",
    conda:
        "../envs/score.yaml"
    threads: SCORE["threads"]
    resources:
        mem_mb=lambda wc: score_model(wc.model).get("mem_mb", SCORE["mem_mb"]),
        runtime=lambda wc: score_model(wc.model).get("runtime", SCORE["runtime"]),
        # One GPU when the config asks for cuda. On SLURM, pick the card with `gpu_model` (e.g. set
        # `--set-resources score:gpu_model=h100` or a profile entry) or pass `slurm_extra="--gres=gpu:1"`.
        gpu=1 if score_uses_gpu() else 0,
    params:
        model=score_model_arg,
        options=score_options,
    shell:
        "unstereo score {params.model:q} {input.pairs:q} -o {output:q} --name {wildcards.model:q}"
        " --threads {threads} {params.options} > {log} 2>&1"


if SCORE["enabled"]:
    ALL_TARGETS.extend(
        results("scores", model, f"{benchmark}.parquet")
        for model in SCORE["models"]
        for benchmark in SCORE["benchmarks"]
    )
