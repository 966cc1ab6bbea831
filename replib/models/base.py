"""What every loader of :mod:`replib.models` returns (:class:`LoadedModel`) and the small helpers they share
(device, offline switch, identity of in-memory weights). The other modules import this one; it imports none of
them."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

import torch

from .errors import ModelUnavailableError
from .registry import ModelSpec

__all__ = [
    "LoadedModel",
    "check_device",
    "config_spec",
    "default_device",
    "offline_mode",
    "state_sha256",
    "vocab_sha256",
    "weights_dtype",
]


#: the precisions of a forward pass: float32, or autocast to bfloat16 / float16 (:mod:`replib.embeddings`)
FORWARD_PRECISIONS = ("fp32", "bf16", "fp16")


def check_precision(precision: str) -> str:
    """``precision`` if it is one of :data:`FORWARD_PRECISIONS`, else a ``ValueError`` naming them."""
    if precision not in FORWARD_PRECISIONS:
        raise ValueError(f"precision must be one of {sorted(FORWARD_PRECISIONS)}; got {precision!r}")
    return precision


@dataclass
class LoadedModel:
    """A model ready for :mod:`replib.embeddings`.

    Attributes
    ----------
    name : str
        Registry key (``tiny-<family>`` for tiny models).
    model : torch.nn.Module
        In eval mode, on ``device``.
    tokenizer : object
        Hugging Face tokenizer, or :class:`~replib.models.proteinbert.ProteinBertTokenizer`.
    spec : ModelSpec
        The registry entry (recipe, revision, sizes).
    device : str
    source : str
        Where the weights came from (a path, ``hf:<id>@<revision>``, or ``random:seed=<k>``).
    weights_sha256 : str or None
        sha256 of local weight files (packaged or a user's folder): a copied folder reuses (and a changed file
        never reuses) cached embeddings.
    ref : ModelRef or None
        The parsed spec the model was loaded from (:func:`~replib.models.resolve_model` sets it); its
        ``slug`` names the model in record keys and output folders.
    identity : dict or None
        What the model's outputs depend on, by content (set by every loader): the hashes of the weight files
        loaded, of ``config.json`` and of the tokenizer files for local folders; the Hub commit for Hub models;
        the hash of the weights and vocabulary for tiny random models; and the weights' dtype as loaded. The
        embedding cache key is built from it (:func:`replib.embeddings.batching.model_identity`).
    precision : {"fp32", "bf16", "fp16"}
        The precision of its forward passes where an extractor is not given one (float32 unless a chapter
        sets its configuration's :attr:`~replib.config.ChapterConfig.precision`); part of the cache key.
    """

    name: str
    model: Any
    tokenizer: Any
    spec: ModelSpec
    device: str = "cpu"
    source: str = ""
    weights_sha256: str | None = None
    ref: Any = None
    identity: dict | None = None
    precision: str = "fp32"

    def __post_init__(self):
        if self.identity is not None and "dtype" not in self.identity:
            self.identity = {**self.identity, "dtype": weights_dtype(self.model)}


def config_spec(name: str, hf_id: str, revision: str, config, recipe: str, licence: str, **kw) -> ModelSpec:
    """The :class:`ModelSpec` of a model outside the registry: its family (``model_type``), width and number
    of layers read from its ``transformers`` configuration; ``kw`` are the other fields (``notes``...).

    Raises
    ------
    ModelUnavailableError
        A configuration without a number of layers or a width.
    """
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", None)
    hidden = getattr(config, "hidden_size", None) or getattr(config, "d_model", None)
    if layers is None or hidden is None:
        raise ModelUnavailableError(f"{name}: cannot read the number of layers / hidden size from its config")
    family = str(getattr(config, "model_type", "unknown"))
    return ModelSpec(name, hf_id, revision, family, int(hidden), int(layers), recipe, licence, **kw)


def default_device(device=None) -> str:
    """``device`` as a string (:func:`check_device`), else ``"cuda"`` when available, else ``"cpu"``."""
    if device is not None:
        return check_device(device)
    return "cuda" if torch.cuda.is_available() else "cpu"


def check_device(device) -> str:
    """``device`` as a string when torch knows it and this machine has it.

    Raises
    ------
    ValueError
        One line: not a torch device, or a CUDA/MPS device this machine does not have.
    """
    try:
        dev = torch.device(str(device))
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(
            f"device {str(device)!r} is not a torch device (cpu, cuda, cuda:1, mps); give one of those or leave "
            "the device out (cuda when available, else cpu)"
        ) from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {str(device)!r}: no CUDA GPU is visible here; use cpu or leave the device out")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ValueError(f"device {str(device)!r}: this machine has {torch.cuda.device_count()} CUDA GPU(s)")
    if dev.type == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise ValueError(f"device {str(device)!r}: MPS is not available here; use cpu or leave the device out")
    return str(device)


def weights_dtype(model) -> str | None:
    """The dtype of a module's first parameter (``"torch.float32"``), None when it has none."""
    params = getattr(model, "parameters", None)
    first = next(iter(params()), None) if callable(params) else None
    return None if first is None else str(first.dtype)


def offline_mode() -> bool:
    """Whether Hugging Face downloads are disabled (``HF_HUB_OFFLINE=1``)."""
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")


def state_sha256(module) -> str:
    """sha256 over a module's state dict (names, dtypes, shapes and bytes, in name order): the identity of
    weights that exist only in memory (tiny random models)."""
    h = hashlib.sha256()
    for name, t in sorted(module.state_dict().items()):
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def vocab_sha256(tokenizer) -> str:
    """sha256 of a tokenizer's vocabulary (token -> id, sorted), or of its class name when it has none."""
    get_vocab = getattr(tokenizer, "get_vocab", None)
    items = sorted(get_vocab().items()) if callable(get_vocab) else [type(tokenizer).__name__]
    return hashlib.sha256(repr(items).encode("utf-8")).hexdigest()
