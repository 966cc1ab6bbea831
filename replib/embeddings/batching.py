"""Shared machinery of the embedding extractors: length-sorted batches, padding on the recipe's side,
hidden states under ``torch.inference_mode`` in the precision asked for (float32 by default; bf16 or fp16
autocast only when asked, see :data:`PRECISIONS`)."""

from __future__ import annotations

import contextlib
import os

import numpy as np
import torch
import transformers

from ..models.base import FORWARD_PRECISIONS, check_precision, state_sha256, weights_dtype

#: environment variables that change numerical results (TF32 matmuls on NVIDIA GPUs, cuBLAS reductions):
#: part of every embedding cache key when set
RESULT_ENV = ("NVIDIA_TF32_OVERRIDE", "CUBLAS_WORKSPACE_CONFIG", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE")


#: the forward's precision: ``"fp32"`` (the default), or autocast to bfloat16 / float16 (matrix products in half
#: precision, reductions and normalisations in float32), taken by a chapter only where its statistics were
#: measured to move by less than a tenth of its claims' bands (:func:`replib.profiles.chapter_precision`)
PRECISIONS = dict(zip(FORWARD_PRECISIONS, (None, torch.bfloat16, torch.float16)))


def forward_precision(lm, precision: str | None = None) -> str:
    """The precision of ``lm``'s forward passes: ``precision`` when given, else the model's own
    (:attr:`~replib.models.base.LoadedModel.precision`, float32 for a model without one)."""
    return check_precision(precision or getattr(lm, "precision", None) or "fp32")


def _autocast(device, precision: str):
    """Autocast to ``precision`` on the device's type (CPU or CUDA); nothing for ``"fp32"``."""
    dtype = PRECISIONS[check_precision(precision)]
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(str(device).split(":")[0], dtype=dtype)


def default_batch_tokens(device) -> int:
    """Padded tokens per batch on ``device``: 2,048 on a CPU (batches that stay in cache: measured faster than
    8,192 for MiniLM on 2 cores), 8,192 on a GPU."""
    return 8192 if str(device).startswith("cuda") else 2048


def pad_token_id(tok) -> int:
    """The tokenizer's padding id (0 when it has none: the attention mask hides the pads)."""
    pid = getattr(tok, "pad_token_id", None)
    return int(pid) if pid is not None else 0


def length_batches(lengths, batch_tokens: int, max_batch: int = 256):
    """Index batches in increasing-length order with ``len(batch) * max_len <= batch_tokens``."""
    order = np.argsort(np.asarray(lengths), kind="stable")
    batch, cur = [], 0
    for i in order:
        L = int(lengths[i])
        if batch and (max(cur, L) * (len(batch) + 1) > batch_tokens or len(batch) >= max_batch):
            yield batch
            batch, cur = [], 0
        batch.append(int(i))
        cur = max(cur, L)
    if batch:
        yield batch


def padded_tokens(lengths, batch_tokens: int, shard_size: int | None = None) -> int:
    """Tokens the forward passes compute (padding included) when ``lengths``, in this order, are cut into shards
    of ``shard_size`` (one shard when ``None``) and each shard into :func:`length_batches`.

    The padding waste is ``1 - sum(lengths) / padded_tokens(...)``.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    step = shard_size or max(len(lengths), 1)
    total = 0
    for s in range(0, len(lengths), step):
        part = lengths[s : s + step]
        total += sum(len(b) * int(part[b].max()) for b in length_batches(part, batch_tokens))
    return total


def pad_batch(seqs, pad_id: int, left: bool):
    """Token id lists as one ``(batch, longest)`` id tensor and its attention mask, padded on the left or
    right."""
    P = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), P), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), P), dtype=torch.long)
    for r, s in enumerate(seqs):
        span = slice(P - len(s), P) if left else slice(0, len(s))
        ids[r, span], mask[r, span] = torch.as_tensor(s), 1
    return ids, mask


def _hidden_states(lm, ids, mask, precision: str | None = None):
    """All hidden states (tuple, index 0 = embeddings) as float32 CPU tensors (``precision``: see
    :func:`forward_precision`)."""
    dev = lm.device
    with torch.inference_mode(), _autocast(dev, forward_precision(lm, precision)):
        out = lm.model(
            input_ids=ids.to(dev), attention_mask=None if mask is None else mask.to(dev), output_hidden_states=True
        )
    return [h.float().cpu() for h in out.hidden_states]


def _check_layers(layers, n_states: int):
    layers = tuple(int(l) for l in (layers if isinstance(layers, (list, tuple)) else (layers,)))
    for l in layers:
        if not -n_states <= l < n_states:
            raise ValueError(f"layer {l} out of range for {n_states} hidden states")
    return layers


def model_identity(lm, precision: str | None = None) -> dict:
    """What of the model shapes its outputs, by content (part of every embedding cache key).

    The loader's :attr:`~replib.models.base.LoadedModel.identity` (hashes of the weight files loaded, of
    ``config.json`` and of the tokenizer files for a folder; the Hub commit; the weights' hash for tiny
    models), the recipe, the parameters' dtype, the device type, the autocast precision (``False`` for
    float32, as before autocast was a choice: float32 caches keep their keys), the float32 matmul
    precision, the environment variables of :data:`RESULT_ENV` that are set, and the torch and transformers
    versions. Never a path: a copied folder reuses the cache, the same path with other files does not.
    ``precision``: the forward's (:func:`forward_precision`: the model's own when not given).
    """
    device = str(getattr(lm, "device", "cpu")).split(":")[0]
    if getattr(lm, "identity", None):
        ident = dict(lm.identity)
    else:  # random_architecture's models
        ident = {"model": lm.name, "revision": lm.spec.revision, "state_sha256": state_sha256(lm.model)}
    return {
        **ident,
        "recipe": lm.spec.recipe,
        "dtype": weights_dtype(lm.model) or ident.get("dtype"),  # as loaded when the module is not inspectable
        "device": device,
        "autocast": False if (precision := forward_precision(lm, precision)) == "fp32" else precision,
        "matmul_precision": torch.get_float32_matmul_precision(),
        "env": {k: os.environ[k] for k in RESULT_ENV if k in os.environ},
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
