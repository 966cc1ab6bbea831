"""Shared machinery of the embedding extractors: length-sorted batches, padding on the recipe's side,
hidden states under ``torch.inference_mode`` and (CUDA only) autocast."""

from __future__ import annotations

import contextlib

import numpy as np


def _autocast(device: str, amp: bool):
    import torch

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
    import torch

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
    import torch

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


def _model_info(lm, amp: bool) -> dict:
    """What of the model shapes its outputs (part of every cache key): identity and weights (the weights' sha256
    for local files, not their folder or name), the device type and the precision (autocast runs on CUDA only)."""
    device = str(getattr(lm, "device", "cpu")).split(":")[0]
    if getattr(lm, "weights_sha256", None):
        ident = {"weights_sha256": lm.weights_sha256, "recipe": lm.spec.recipe}
    else:
        ident = {"model": lm.name, "revision": lm.spec.revision, "recipe": lm.spec.recipe, "source": lm.source}
    return {**ident, "device": device, "autocast": bool(amp) and device == "cuda"}


# ----------------------------------------------------------------------------------------- proteins
