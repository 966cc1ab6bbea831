"""The content a model spec stands for, without loading it: what a cache of whole results (a chapter run reused
by the book kit, a card) must be keyed by so that re-pointing ``--model ./x`` at other files never serves the
old results."""

from __future__ import annotations

from pathlib import Path

from huggingface_hub import try_to_load_from_cache

from .._io import sha256_file
from .errors import ModelUnavailableError
from .files import folder_identity, pooling_mode
from .ref import ModelRef
from .registry import MINILM_SAFETENSORS_SHA256, get_spec

__all__ = ["content_identity"]


def content_identity(spec, *, cache_dir=None) -> dict:
    """What the outputs of a model spec depend on, by content, read without loading weights.

    Parameters
    ----------
    spec : str, path-like or ModelRef
    cache_dir : path-like, optional
        Hugging Face cache folder (for the commit a cached Hub revision points at).

    Returns
    -------
    dict
        Always ``kind`` and ``name``. A folder: :func:`~replib.models.files.folder_identity` of the folder
        holding the weights (weights, config and tokenizer hashes) and its sentence-transformers pooling mode;
        a word-vector file: its sha256; a registry model: its key and pinned revision (the packaged MiniLM: its
        verified weights' sha256); a Hub id: the revision asked for and, when cached, the commit it resolves to;
        a tiny or random model and the packaged GloVe: the name (their weights follow from the code, the seed and
        the installed package). Never a path.

    Raises
    ------
    ModelUnavailableError
        For a ``trained:`` model (its weights are the training chapter's run, keyed there).
    """
    ref = ModelRef.parse(spec)
    out = {"kind": ref.kind, "name": ref.name}
    if ref.kind in ("tiny", "random", "glove"):
        return out
    if ref.kind == "trained":
        raise ModelUnavailableError(f"{ref}: a trained model's identity is its training run's (replib.training)")
    if ref.kind == "registry":
        entry = get_spec(ref.name)
        weights = MINILM_SAFETENSORS_SHA256 if entry.name == "all-MiniLM-L6-v2" else None
        return {**out, "revision": entry.revision, "packaged_weights_sha256": weights}
    if ref.kind == "static":
        return {**out, "sha256": sha256_file(ref.path)}
    if ref.kind == "folder":
        return {**out, **folder_identity(ref.transformer_dir), "pooling": pooling_mode(ref.path)}
    cached = try_to_load_from_cache(ref.name, "config.json", revision=ref.revision, cache_dir=cache_dir)
    commit = Path(cached).parent.name if isinstance(cached, str) else None
    return {**out, "revision": ref.revision, "commit": commit}
