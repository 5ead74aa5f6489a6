"""Resource requests for cluster (Slurm) jobs: memory and wall time that grow with the input size and with the retry
attempt, and the GPU keys that the Snakemake Slurm executor understands.

The rules call these through thin wrappers in rules/common.smk (``mem_mb_for``, ``runtime_for``, ``gpu_resources``);
the logic lives here so that it is unit-tested (tests/workflow/test_slurm_profile.py).

Policy (the same for memory and time)::

    request = ceil((base + per_mb * input_mb) * growth ** (attempt - 1)), then capped, then rounded up

``attempt`` is Snakemake's retry counter: 1 on the first submission, 2 after the first failure, ... up to
``retries + 1`` (the Slurm profile sets ``retries``). A job killed for memory (Slurm state OUT_OF_MEMORY) or time
(TIMEOUT) is therefore resubmitted with ``growth`` times more, without any per-site configuration.
"""

from __future__ import annotations

import math
import re

from unstereo.errors import ConfigError

#: memory requests are rounded up to this many MB (schedulers and humans both read round numbers better)
MEM_STEP_MB = 100

#: GPU model names as the Slurm executor accepts them (``gpu_model`` / the middle part of ``gres=gpu:MODEL:N``)
_GPU_MODEL = re.compile(r"^[A-Za-z0-9_.]+$")

#: the two spellings of a GPU request that the Slurm executor understands
GPU_SPELLINGS = ("gpu", "gres")


def scaled(input_mb: float, attempt: int, *, base: float, per_mb: float, growth: float) -> float:
    """``(base + per_mb * input_mb) * growth ** (attempt - 1)``, validated (the shared formula of this module)."""
    if attempt < 1:
        raise ConfigError(f"attempt must be >= 1, got {attempt}")
    if base < 0 or per_mb < 0 or input_mb < 0:
        raise ConfigError(f"base, per_mb and input_mb must be >= 0, got {base}, {per_mb}, {input_mb}")
    if growth < 1:
        raise ConfigError(f"growth must be >= 1 (a retry never gets less), got {growth}")
    return (base + per_mb * input_mb) * growth ** (attempt - 1)


def mem_mb(
    input_mb: float = 0.0,
    attempt: int = 1,
    *,
    base: int = 1000,
    per_mb: float = 0.0,
    growth: float = 1.5,
    cap: int | None = None,
) -> int:
    """Memory request in MB for a job whose inputs total ``input_mb`` MB, on retry ``attempt`` (1 = first try).

    ``base``: MB needed regardless of input (interpreter, libraries, a model); ``per_mb``: MB per MB of input
    (e.g. 3 when the input is parsed into a table three times its size on disk); ``growth``: factor per retry;
    ``cap``: the most to ask for (the largest node's memory). The result is rounded up to a multiple of 100 MB,
    after capping, and is never below 100.
    """
    value = scaled(input_mb, attempt, base=base, per_mb=per_mb, growth=growth)
    if cap is not None:
        value = min(value, cap)
    return max(MEM_STEP_MB, math.ceil(value / MEM_STEP_MB - 1e-9) * MEM_STEP_MB)


def runtime(
    input_mb: float = 0.0,
    attempt: int = 1,
    *,
    base: int = 10,
    per_mb: float = 0.0,
    growth: float = 2.0,
    cap: int | None = None,
) -> int:
    """Wall-time request in minutes (Snakemake's ``runtime`` resource, passed to ``sbatch -t``).

    ``base`` minutes plus ``per_mb`` minutes per MB of input, times ``growth`` per retry, capped at ``cap``
    (the partition's MaxTime), at least 1 minute.
    """
    value = scaled(input_mb, attempt, base=base, per_mb=per_mb, growth=growth)
    if cap is not None:
        value = min(value, cap)
    return max(1, math.ceil(value - 1e-9))


def wants_gpu(device: str | None) -> bool:
    """True when a configured torch device asks for a GPU: ``cuda``, ``cuda:N`` or ``gpu``.

    ``auto`` (use a GPU if the node has one) and ``cpu``/``mps`` request none: on a cluster a GPU must be asked
    for explicitly, otherwise the job lands on a CPU node.
    """
    if not device:
        return False
    d = str(device).strip().lower()
    return d == "gpu" or d == "cuda" or d.startswith("cuda:")


def gpu_resources(
    device: str | None,
    *,
    gpus: int = 1,
    gpu_model: str | None = None,
    cpus_per_gpu: int | None = None,
    spelling: str = "gpu",
) -> dict[str, int | str]:
    """The Snakemake resources that request GPUs for a job running on ``device`` (see ``wants_gpu``); ``{}`` for CPU.

    ``spelling="gpu"`` gives ``{"gpu": N, "gpu_model": M, "cpus_per_gpu": C}`` (the executor submits
    ``--gpus=M:N`` or ``--gpus=N``); ``spelling="gres"`` gives ``{"gres": "gpu:M:N", "cpus_per_gpu": C}`` (submitted
    as ``--gres=gpu:M:N``), for sites that reject ``--gpus``. Keys whose value is unset are left out. The two
    spellings are mutually exclusive for the executor, so exactly one is returned.
    """
    if spelling not in GPU_SPELLINGS:
        raise ConfigError(f"GPU spelling must be one of {GPU_SPELLINGS}, got {spelling!r}")
    if not wants_gpu(device):
        return {}
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise ConfigError(f"gpus must be an integer >= 1, got {gpus!r}")
    if gpu_model is not None and not _GPU_MODEL.match(gpu_model):
        raise ConfigError(f"gpu_model must be letters, digits, '_' or '.', e.g. 'a100', got {gpu_model!r}")
    if cpus_per_gpu is not None and (
        isinstance(cpus_per_gpu, bool) or not isinstance(cpus_per_gpu, int) or cpus_per_gpu < 1
    ):
        raise ConfigError(f"cpus_per_gpu must be an integer >= 1, got {cpus_per_gpu!r}")
    out: dict[str, int | str] = {}
    if spelling == "gpu":
        out["gpu"] = gpus
        if gpu_model:
            out["gpu_model"] = gpu_model
    else:
        out["gres"] = f"gpu:{gpu_model}:{gpus}" if gpu_model else f"gpu:{gpus}"
    if cpus_per_gpu is not None:
        out["cpus_per_gpu"] = cpus_per_gpu
    return out
