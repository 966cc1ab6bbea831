"""Shared machinery of the embedding extractors: length-sorted batches, padding on the recipe's side,
hidden states under ``torch.inference_mode`` and (CUDA only) autocast."""

from __future__ import annotations

import contextlib
import os

import numpy as np
import torch
import transformers

from ..models.base import state_sha256, weights_dtype

#: environment variables that change numerical results (TF32 matmuls on NVIDIA GPUs, cuBLAS reductions):
#: part of every embedding cache key when set
RESULT_ENV = ("NVIDIA_TF32_OVERRIDE", "CUBLAS_WORKSPACE_CONFIG", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE")


def _autocast(device: str, amp: bool):
    if amp and str(device).startswith("cuda"):
        dt = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.autocast("cuda", dtype=dt)
    return contextlib.nullcontext()


def _pad_id(tok) -> int:
    pid = getattr(tok, "pad_token_id", None)
    return int(pid) if pid is not None else 0


def _batches(lengths, batch_tokens: int, max_batch: int = 256):
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


def _pad(seqs, pad_id: int, left: bool):
    P = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), P), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), P), dtype=torch.long)
    for r, s in enumerate(seqs):
        if left:
            ids[r, P - len(s) :] = torch.as_tensor(s)
            mask[r, P - len(s) :] = 1
        else:
            ids[r, : len(s)] = torch.as_tensor(s)
            mask[r, : len(s)] = 1
    return ids, mask


def _hidden_states(lm, ids, mask, amp: bool):
    """All hidden states (tuple, index 0 = embeddings) as float32 CPU tensors."""
    dev = lm.device
    with torch.inference_mode(), _autocast(dev, amp):
        kw = {
            "input_ids": ids.to(dev),
            "attention_mask": None if mask is None else mask.to(dev),
            "output_hidden_states": True,
        }
        out = lm.model(**kw)
    return [h.float().cpu() for h in out.hidden_states]


def _check_layers(layers, n_states: int):
    layers = tuple(int(l) for l in (layers if isinstance(layers, (list, tuple)) else (layers,)))
    for l in layers:
        if not -n_states <= l < n_states:
            raise ValueError(f"layer {l} out of range for {n_states} hidden states")
    return layers


def model_identity(lm, amp: bool) -> dict:
    """What of the model shapes its outputs, by content (part of every embedding cache key).

    The loader's :attr:`~replib.models.base.LoadedModel.identity` (hashes of the weight files loaded, of
    ``config.json`` and of the tokenizer files for a folder; the Hub commit; the weights' hash for tiny
    models), the recipe, the parameters' dtype, the device type, autocast (CUDA only), the float32 matmul
    precision, the environment variables of :data:`RESULT_ENV` that are set, and the torch and transformers
    versions. Never a path: a copied folder reuses the cache, the same path with other files does not.
    """
    device = str(getattr(lm, "device", "cpu")).split(":")[0]
    ident = dict(lm.identity) if getattr(lm, "identity", None) else _identity_from_memory(lm)
    return {
        **ident,
        "recipe": lm.spec.recipe,
        "dtype": weights_dtype(lm.model) or ident.get("dtype"),  # as loaded when the module is not inspectable
        "device": device,
        "autocast": bool(amp) and device == "cuda",
        "matmul_precision": torch.get_float32_matmul_precision(),
        "env": {k: os.environ[k] for k in RESULT_ENV if k in os.environ},
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }


def _identity_from_memory(lm) -> dict:
    """Identity of a LoadedModel built by hand (no loader set ``identity``): its weights' hash."""
    if getattr(lm, "weights_sha256", None):
        return {"weights_sha256": lm.weights_sha256}
    return {"model": lm.name, "revision": lm.spec.revision, "state_sha256": state_sha256(lm.model)}


#: the former name (callers outside this package build their own cache keys from it)
_model_info = model_identity
