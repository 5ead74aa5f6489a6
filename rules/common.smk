# Shared helpers for all rules files: paths from the config, the CLI call, seeds.

RESULTS = config["results_dir"]
EXTERNAL = config["external_dir"]
LOGS = f"{RESULTS}/logs"
BENCH = f"{RESULTS}/logs/bench"


def results(*parts):
    """Path under the configured results directory."""
    return "/".join([RESULTS, *parts])


def external(*parts):
    """Path under the configured external-resources directory."""
    return "/".join([EXTERNAL, *parts])


def mirror_option():
    """`--mirror DIR` for `unstereo resources fetch reference` when the config names a mirror."""
    mirror = config.get("reference_mirror")
    return f"--mirror {mirror}" if mirror else ""


def stage_seed(stage):
    """A per-stage seed derived from the global one, so stages do not share random streams."""
    return (int(config["seed"]) * 1_000_003 + sum(map(ord, stage))) % (2**31 - 1)


def resource_manifest(name):
    """The manifest file that marks resource `name` as fetched (use it as a rule input)."""
    return f"{EXTERNAL}/{name}/RESOURCE.json"


def resource_dir(name):
    """Directory of a fetched resource."""
    return f"{EXTERNAL}/{name}"


def delta_path(choice):
    """Delta table for a stage's `delta:` key: `corpus` (this workflow's counts), `released` (the PILE table of the
    UnStereoEval release, converted by rule released_delta), or a path to a delta parquet/CSV.
    """
    if choice in ("corpus", "released"):
        return results("delta", f"{choice}.parquet")
    return choice
