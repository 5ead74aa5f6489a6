"""Loading causal language models and their tokenizers: hub ids, local folders and GGUF files.

A model is named by a :class:`~unstereo.models.spec.ModelSpec` (see :mod:`unstereo.models.spec`): a hub id
(``EleutherAI/pythia-70m``), a local Hugging Face folder, a GGUF file
(``data/external/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``) or an offline resource's file. GGUF files are
dequantised to fp32 by transformers, which takes 20-60 s on a small CPU; the first load therefore converts the file
once per machine into a plain Hugging Face folder (``<file>.hf/`` beside it links to a content-addressed cache, see
:mod:`unstereo.models.gguf_convert`), and later loads read that folder in seconds. A GGUF that is only sampled or
judged skips the folder: the local LLM backend reads it straight into int8 layers (int8 sampling) or, while it has
no converted folder, into fp32 (:mod:`unstereo.models.gguf_direct`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from unstereo.errors import UnstereoError
from unstereo.log import get_logger
from unstereo.models.spec import ModelSpec, resolve_model

log = get_logger("models")


def resolve_device(device: str = "auto") -> str:
    """``auto`` picks cuda > mps > cpu."""
    import torch

    if device != "auto":
        return device
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def resolve_dtype(dtype: str = "auto", device: str = "cpu") -> Any:
    """``auto``: float32 on CPU (bf16 matmuls are slow there and less exact), bfloat16 on GPU."""
    import torch

    if dtype == "auto":
        return torch.float32 if device == "cpu" else torch.bfloat16
    try:
        return {
            "float32": torch.float32,
            "fp32": torch.float32,
            "bfloat16": torch.bfloat16,
            "bf16": torch.bfloat16,
            "float16": torch.float16,
            "fp16": torch.float16,
        }[dtype]
    except KeyError:
        raise UnstereoError(f"unknown dtype {dtype!r} (use auto, float32, bfloat16 or float16)") from None


def convert_gguf(spec: ModelSpec) -> Path:
    """The Hugging Face folder of a GGUF spec, converted once per machine (see :mod:`unstereo.models.gguf_convert`)."""
    from unstereo.models.gguf_convert import converted_folder

    out = spec.converted_dir
    assert out is not None and spec.gguf_file is not None
    return converted_folder(spec.path, spec.gguf_file, out)


def load_tokenizer(spec: ModelSpec):
    """The tokenizer of ``spec`` (from the converted folder for GGUF)."""
    from transformers import AutoTokenizer

    path = convert_gguf(spec) if spec.gguf_file else spec.path
    return AutoTokenizer.from_pretrained(path, revision=spec.revision if not spec.gguf_file else None)


def skip_sklearn_in_transformers() -> None:
    """Have transformers treat scikit-learn and SciPy as absent where they are not imported yet.

    Importing transformers' model classes imports its generation utilities, which import scikit-learn when it is
    installed (1.4-1.7 s of scipy and more here, a third of a scoring process's start-up), only for assisted
    generation's adaptive confidence threshold, which unstereo never uses; and its loss functions, which import
    SciPy (~0.3 s) for the object-detection losses' matching only. Without them transformers skips those features (a
    configuration it supports). Nothing changes for a package the process has imported already (or transformers'
    module that uses it), or where this transformers has no such flag."""
    from transformers.utils import import_utils

    for package, user in (("sklearn", "transformers.generation.candidate_generator"),
                          ("scipy", "transformers.loss.loss_utils")):  # fmt: skip
        flag = f"_{package}_available"
        if package not in sys.modules and user not in sys.modules and hasattr(import_utils, flag):
            setattr(import_utils, flag, False)


def load_causal_lm(spec: ModelSpec | str, dtype: str = "auto", device: str = "auto"):
    """Load (model, tokenizer) for ``spec`` in eval mode on ``device`` with ``dtype``."""
    skip_sklearn_in_transformers()
    from transformers import AutoModelForCausalLM

    if not isinstance(spec, ModelSpec):  # a request's spec is resolved already (unstereo.models.request)
        spec = resolve_model(spec)
    if spec.is_remote:
        raise UnstereoError(f"model {spec.to_arg()!r} is served by an endpoint; it cannot be loaded locally")
    device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, device)
    path = convert_gguf(spec) if spec.gguf_file else spec.path
    from safetensors import SafetensorError

    try:
        model = AutoModelForCausalLM.from_pretrained(
            path, dtype=torch_dtype, revision=None if spec.gguf_file else spec.revision
        )
    except OSError as exc:
        raise UnstereoError(f"cannot load model {spec.path!r}: {exc}") from exc
    except SafetensorError as exc:
        raise UnstereoError(
            f"cannot load model {spec.path!r}: a *.safetensors file of it is cut short or damaged ({exc}); "
            "copy or download it again"
        ) from exc
    tokenizer = load_tokenizer(spec)
    model.to(device)
    model.eval()
    return model, tokenizer
