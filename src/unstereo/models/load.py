"""The one load of a local model and its tokenizer, :func:`load` of a
:class:`~unstereo.models.request.ModelRequest` (causal LMs, masked LMs, sequence classifiers): hub ids, local
folders and GGUF files, on the request's device resolved once, in the request.

A model is named by a :class:`~unstereo.models.spec.ModelSpec` (see :mod:`unstereo.models.spec`): a hub id
(``EleutherAI/pythia-70m``), a local Hugging Face folder, a GGUF file
(``data/external/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``) or an offline resource's file. GGUF files are
dequantised to fp32 by transformers, which takes 20-60 s on a small CPU; the first load therefore converts the file
once per machine into a plain Hugging Face folder (``<file>.hf/`` beside it links to a content-addressed cache, see
:mod:`unstereo.models.gguf_convert`), and later loads read that folder in seconds. A GGUF that is only sampled or
judged skips the folder: the local LLM backend reads it straight into int8 layers (int8 sampling) or, while it has
no converted folder, into fp32 (:mod:`unstereo.models.gguf_direct`); the form it was read into is kept on the machine
after that first load, so later loads of it map the kept form in seconds (:mod:`unstereo.models.form_cache`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from unstereo.errors import UnstereoError
from unstereo.log import get_logger
from unstereo.models.gguf_tokenizer import needs_bpe_repair, repair_gemma_tokenizer
from unstereo.models.spec import ModelSpec, resolve_model

if TYPE_CHECKING:
    from unstereo.models.request import ModelRequest

log = get_logger("models")


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

    for package, user in (
        ("sklearn", "transformers.generation.candidate_generator"),
        ("scipy", "transformers.loss.loss_utils"),
    ):
        flag = f"_{package}_available"
        if package not in sys.modules and user not in sys.modules and hasattr(import_utils, flag):
            setattr(import_utils, flag, False)


#: The model heads :func:`load` builds: transformers' auto class of each, the name its errors give, and whether it
#: loads in the request's dtype (else transformers' default).
HEADS = {
    "causal": ("AutoModelForCausalLM", "model", True),
    "masked": ("AutoModelForMaskedLM", "masked LM", True),
    "classifier": ("AutoModelForSequenceClassification", "classifier", False),
}


def load(request: ModelRequest, head: str | None = None, direct: str | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) of ``request`` in eval mode: its spec (resolved once, in the request) on its device
    (resolved once, in the request: :attr:`~unstereo.models.request.ModelRequest.resolved_device`), the one load
    of every local model. ``head`` (:data:`HEADS`; None: ``masked`` for a masked scorer's request, else ``causal``):

    - ``causal``: a causal LM in the request's dtype (:func:`resolve_dtype`); a GGUF file is read from its converted
      folder (:func:`convert_gguf`), and a Gemma tokenizer transformers built as Unigram is repaired
      (:mod:`unstereo.models.gguf_tokenizer`; a no-op on folders converted since the repair moved there);
    - ``masked``: a masked LM in the request's dtype, from a hub id or a folder;
    - ``classifier``: a sequence classifier in transformers' default dtype, from a hub id or a folder.

    ``direct`` (a form of :data:`unstereo.models.gguf_direct.FORMS`; a GGUF file's causal LM only): the file read
    straight into those layers on the CPU, no converted folder (:func:`unstereo.models.gguf_direct.load_gguf`), for
    a model that samples and judges but is never scored.
    """
    if head is None:
        head = "masked" if request.masked else "causal"
    auto_class, what, dtyped = HEADS[head]
    spec = request.spec
    if spec.is_remote:
        raise UnstereoError(f"model {spec.to_arg()!r} is served by an endpoint; it cannot be loaded locally")
    if spec.gguf_file and head != "causal":
        raise UnstereoError(f"GGUF files hold causal LMs; a {what} needs a hub id or a Hugging Face folder")
    if direct is not None:
        if not spec.gguf_file or head != "causal":
            raise UnstereoError(
                f"a direct load ({direct}) reads a GGUF file's causal LM; {spec.label} is none"
            )
        from unstereo.models.gguf_direct import load_gguf_with_tokenizer

        assert spec.path is not None
        return load_gguf_with_tokenizer(spec.path, spec.gguf_file, direct)
    skip_sklearn_in_transformers()
    import transformers
    from safetensors import SafetensorError

    device = request.resolved_device
    kwargs: dict[str, Any] = {"revision": None if spec.gguf_file else spec.revision}
    if dtyped:
        kwargs["dtype"] = resolve_dtype(request.dtype, device)
    path = convert_gguf(spec) if spec.gguf_file else spec.path
    try:
        model = getattr(transformers, auto_class).from_pretrained(path, **kwargs)
        tokenizer = load_tokenizer(spec)
    except OSError as exc:
        raise UnstereoError(f"cannot load {what} {spec.path!r}: {exc}") from exc
    except SafetensorError as exc:
        raise UnstereoError(
            f"cannot load {what} {spec.path!r}: a *.safetensors file of it is cut short or damaged ({exc}); "
            "copy or download it again"
        ) from exc
    if head == "causal" and needs_bpe_repair(model, tokenizer):
        tokenizer = repair_gemma_tokenizer(tokenizer)
    model.to(device)
    model.eval()
    return model, tokenizer


def load_causal_lm(spec: ModelSpec | str, dtype: str = "auto", device: str = "auto") -> tuple[Any, Any]:
    """:func:`load` of a causal LM named by a spec (or its string form) with ``dtype`` on ``device``: for scripts
    and tests that hold no request."""
    from unstereo.models.request import ModelRequest

    if not isinstance(spec, ModelSpec):
        spec = resolve_model(spec)
    return load(ModelRequest(spec, dtype=dtype, device=device), "causal")
