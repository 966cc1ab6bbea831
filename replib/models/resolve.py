"""One resolver for "a model the user has": a registry key, a Hugging Face id (``id@revision``), a local folder
in ``transformers`` or ``sentence-transformers`` layout, or a GloVe / word2vec file.

:func:`resolve_model` turns any of these into a :class:`~replib.models.loading.LoadedModel` with provenance
(the weights' sha256 for local files, the Hub commit otherwise) and an embedding *recipe* inferred from the
config's architecture and the sentence-transformers pooling config (overridable with ``recipe=``).
:func:`replib.models.static.load_static_vectors` does the same for word-vector files. :func:`describe_model` only inspects
(no weights loaded), :func:`model_slug` gives the short name used in record keys.

Offline (``HF_HUB_OFFLINE=1``, or no route to the Hub), a Hub id that is not in the local cache fails at
once with :class:`ModelUnavailableError`, before any network call, instead of after the Hub client's
retries.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from dataclasses import dataclass, replace
from pathlib import Path

from ..provenance import note_model
from .errors import ModelUnavailableError
from .ref import ModelRef, model_refs, slugify
from .registry import MINILM_SAFETENSORS_SHA256, ModelSpec, get_spec

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
#: architectures (``config.model_type``) whose small vocabularies mark a protein model
_PROTEIN_VOCAB_MAX = 40


@dataclass(frozen=True)
class ModelSource:
    """What a model spec points at, before any weights are loaded.

    Attributes
    ----------
    kind : {"registry", "tiny", "hub", "local", "static"}
    name : str
        Display name (registry key, Hub id, folder or file name).
    location : str
        Registry key, Hub id, or absolute path.
    revision : str or None
        Hub revision asked for (``id@revision``), None for local files.
    layout : {"transformers", "sentence-transformers", "glove", "word2vec", None}
    transformer_dir : str or None
        Folder holding ``config.json`` and the weights (a sentence-transformers module path may differ from
        the root).
    """

    kind: str
    name: str
    location: str
    revision: str | None = None
    layout: str | None = None
    transformer_dir: str | None = None


# ----------------------------------------------------------------------------------------- inspection
def _st_transformer_dir(folder: Path) -> Path:
    """The folder of a sentence-transformers model's Transformer module (``modules.json``)."""
    mods = json.loads((folder / "modules.json").read_text())
    for m in mods:
        if str(m.get("type", "")).endswith("models.Transformer"):
            return folder / m.get("path", "")
    raise ModelUnavailableError(f"{folder}/modules.json has no Transformer module")


def describe_model(spec, revision: str | None = None) -> ModelSource:
    """Classify a model spec without loading it.

    Parameters
    ----------
    spec : str or path-like
        ``tiny-<family>``, a registry key or alias, an existing folder or file, or a Hub id
        (``org/name`` or ``org/name@revision``).
    revision : str, optional
        Hub revision (overrides an ``@revision`` suffix).

    Raises
    ------
    ModelUnavailableError
        For a path that does not exist (something that looks like a path, not a Hub id) or a folder in no
        known layout.
    """
    ref = ModelRef.parse(spec)
    if ref.kind in ("tiny", "registry"):
        return ModelSource(ref.kind, ref.name, ref.name, revision if ref.kind == "registry" else None)
    if ref.kind == "hub":
        return ModelSource("hub", ref.name, ref.name, revision or ref.revision or "main")
    p = ref.path
    if ref.kind == "static":
        from .static import static_layout

        return ModelSource("static", ref.name, str(p), None, static_layout(p))
    if (p / "modules.json").exists():
        return ModelSource("local", ref.name, str(p), None, "sentence-transformers", str(_st_transformer_dir(p)))
    return ModelSource("local", ref.name, str(p), None, "transformers", str(p))


def model_slug(spec) -> str:
    """Short ``[a-z0-9_]`` name of a model for record keys: :attr:`ModelRef.slug` of the spec (or of the
    LoadedModel's reference); a spec that does not parse (a path that no longer exists) gives its last
    path component, slugified."""
    if isinstance(spec, ModelRef):
        return spec.slug
    if hasattr(spec, "name") and hasattr(spec, "model"):  # a LoadedModel
        ref = getattr(spec, "ref", None)
        if ref is not None:
            return ref.slug
        spec = spec.name
    try:
        return ModelRef.parse(spec).slug
    except ModelUnavailableError:
        return slugify(str(spec).rstrip("/").rsplit("/", 1)[-1])


def select_models(models, default) -> list[str]:
    """A chapter's models as spec strings: ``default`` unchanged when ``models`` is None or empty, else
    ``str(ref)`` of each :func:`~replib.models.ref.model_refs` reference (relative paths made absolute,
    registry aliases made keys). Kept for the chapters that still take strings; new code uses
    :func:`~replib.models.ref.model_refs`.

    Raises
    ------
    ValueError
        For a ``models`` value that is neither a spec nor a list of specs, or a spec that does not parse.
    """
    if models is None or (isinstance(models, (list, tuple)) and not models):
        return [str(m) for m in default]
    return [str(r) for r in model_refs(models, ())]


def model_n_layers(spec) -> int:
    """Number of Transformer blocks of a model spec, read from its registry entry or config (no weights)."""
    from .tiny import _TINY

    src = describe_model(spec)
    if src.kind == "tiny":
        return 6 if src.name == "tiny-proteinbert" else int(_TINY["num_hidden_layers"])
    if src.kind == "registry":
        return get_spec(src.name).n_layers
    if src.kind == "static":
        raise ModelUnavailableError(f"{src.location} is a word-vector file: it has no layers")
    from transformers import AutoConfig

    if src.kind == "local":
        config = AutoConfig.from_pretrained(src.transformer_dir)
    else:
        local_only = check_hub_available(src.location, src.revision)
        config = AutoConfig.from_pretrained(src.location, revision=src.revision, local_files_only=local_only)
    n = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", None)
    if n is None:
        raise ModelUnavailableError(f"{spec}: its config has no number of layers")
    return int(n)


# ----------------------------------------------------------------------------------------- provenance
def _sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def weights_sha256(folder) -> str:
    """sha256 identifying the weights of a local transformers folder.

    One weight file (``model.safetensors`` or ``pytorch_model.bin``): its sha256. Sharded weights: the sha256
    of the lines ``<file name> <sha256>`` of every shard, sorted by name.

    Raises
    ------
    ModelUnavailableError
        If the folder holds no weight file.
    """
    folder = Path(folder)
    for name in WEIGHT_FILES:
        if (folder / name).is_file():
            return _sha256_file(folder / name)
    shards = sorted(folder.glob("model-*.safetensors")) or sorted(folder.glob("pytorch_model-*.bin"))
    if not shards:
        raise ModelUnavailableError(f"{folder} holds no weights ({' / '.join(WEIGHT_FILES)} or shards)")
    lines = "".join(f"{f.name} {_sha256_file(f)}\n" for f in shards)
    return hashlib.sha256(lines.encode()).hexdigest()


# ----------------------------------------------------------------------------------------- recipes
def _pooling_mode(folder: Path) -> str | None:
    """The sentence-transformers pooling mode (``mean``, ``cls``, ``max``...) from ``modules.json``."""
    if not (folder / "modules.json").exists():
        return None
    for m in json.loads((folder / "modules.json").read_text()):
        if str(m.get("type", "")).endswith("models.Pooling"):
            cfg = folder / m.get("path", "") / "config.json"
            if not cfg.exists():
                return "mean"  # sentence-transformers' default
            c = json.loads(cfg.read_text())
            modes = [
                re.sub(r"_tokens?$", "", k[len("pooling_mode_") :])
                for k, v in c.items()
                if k.startswith("pooling_mode_") and v is True
            ]
            return "+".join(sorted(modes)) or "mean"
    return None


def infer_recipe(config, pooling: str | None = None) -> str:
    """Embedding recipe of a model from its ``transformers`` config and its sentence-transformers pooling.

    ``esm`` for ESM models; ``protbert`` / ``protxlnet`` for BERT / XLNet with a residue-sized vocabulary
    (at most 40 tokens); ``sbert`` for a sentence-transformers model with mean pooling; ``text`` otherwise.

    Raises
    ------
    ModelUnavailableError
        For a sentence-transformers pooling other than mean (the book's ``sbert`` recipe is the
        attention-mask weighted mean); pass ``recipe="text"`` to use the model's token vectors anyway.
    """
    mt = getattr(config, "model_type", None)
    vocab = getattr(config, "vocab_size", None) or 10**9
    if mt == "esm":
        return "esm"
    if mt == "bert" and vocab <= _PROTEIN_VOCAB_MAX:
        return "protbert"
    if mt == "xlnet" and vocab <= _PROTEIN_VOCAB_MAX:
        return "protxlnet"
    if pooling is not None:
        if pooling != "mean":
            raise ModelUnavailableError(
                f"sentence-transformers pooling {pooling!r} has no recipe here (the 'sbert' "
                "recipe is mean pooling); pass recipe='text' to use the token vectors"
            )
        return "sbert"
    return "text"


# ----------------------------------------------------------------------------------------- offline
def _hub_reachable(timeout: float = 0.8) -> bool:
    """Whether a TCP connection to the Hub opens within ``timeout`` seconds (DNS included, in a thread)."""
    import socket

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    host = re.sub(r"^https?://", "", endpoint).split("/")[0].split(":")[0]
    ok = []

    def probe():
        try:
            socket.create_connection((host, 443), timeout=timeout).close()
            ok.append(True)
        except OSError:
            pass

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(timeout)
    return bool(ok)


def hub_cached(hf_id: str, revision: str = "main", cache_dir=None) -> bool:
    """Whether ``config.json`` of ``hf_id@revision`` is in the local Hugging Face cache (no network)."""
    from huggingface_hub import try_to_load_from_cache

    got = try_to_load_from_cache(hf_id, "config.json", revision=revision, cache_dir=cache_dir)
    return isinstance(got, str)


def check_hub_available(hf_id: str, revision: str = "main", cache_dir=None) -> bool:
    """Fail fast when a Hub model cannot be had: returns ``local_files_only`` for ``from_pretrained``.

    With ``HF_HUB_OFFLINE=1`` no network call is made: a cached model loads from the cache, an uncached one
    raises. Without it, the Hub is probed once (under a second); unreachable means the same as offline.

    Raises
    ------
    ModelUnavailableError
        Not cached and offline, with what to do.
    """
    from .loading import offline_mode

    offline = offline_mode()
    if not offline and _hub_reachable():
        return False
    if hub_cached(hf_id, revision, cache_dir):
        return True
    why = "HF_HUB_OFFLINE=1 is set" if offline else "the Hugging Face Hub is not reachable"
    raise ModelUnavailableError(
        f"{hf_id}@{revision} is not in the local Hugging Face cache and {why}. Either download it once where "
        f"there is internet (`huggingface-cli download {hf_id} --revision {revision}`, or "
        f"`python -c \"from transformers import AutoModel; AutoModel.from_pretrained('{hf_id}')\"`) and copy the "
        "cache, or save the model to a folder and pass that folder's path (e.g. `--model /path/to/model`)."
    )


# ----------------------------------------------------------------------------------------- loading
def _spec_from_config(name: str, hf_id: str, revision: str, config, recipe: str, notes: str) -> ModelSpec:
    n_layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", None)
    hidden = getattr(config, "hidden_size", None) or getattr(config, "d_model", None)
    if n_layers is None or hidden is None:
        raise ModelUnavailableError(f"{name}: cannot read the number of layers / hidden size from its config")
    return ModelSpec(
        name,
        hf_id,
        revision,
        str(getattr(config, "model_type", "unknown")),
        int(hidden),
        int(n_layers),
        recipe,
        "unverified (user-supplied model)",
        pinned=len(revision) in (40, 64),
        safetensors=True,
        notes=notes,
    )


def resolve_model(
    spec,
    *,
    revision: str | None = None,
    recipe: str | None = None,
    device=None,
    dtype=None,
    cache_dir=None,
    seed: int = 0,
):
    """Load any model the user has, with provenance and an inferred embedding recipe.

    Parameters
    ----------
    spec : str, path-like, ModelRef or LoadedModel
        ``tiny-<family>`` (random smoke models), a registry key or alias, a folder (``transformers`` or
        ``sentence-transformers`` layout), or a Hugging Face id ``org/name[@revision]`` (see
        :meth:`~replib.models.ref.ModelRef.parse`). A LoadedModel is returned unchanged. Word-vector files go through :func:`load_static_vectors`.
    revision : str, optional
        Hub revision (commit hash recommended).
    recipe : str, optional
        Override the inferred recipe (``text``, ``sbert``, ``protbert``, ``protxlnet``, ``esm``).
    device, dtype, cache_dir, seed
        As :func:`~replib.models.load_model`; ``seed`` for tiny models.

    Returns
    -------
    LoadedModel
        ``weights_sha256`` set for local weights (the embedding cache key), ``source`` the folder or
        ``hf:<id>@<commit>``.

    Raises
    ------
    ModelUnavailableError
        Unknown spec, missing path, or a Hub id not cached while offline (raised before any network call).
    """
    from .loading import LoadedModel, load_model
    from .tiny import tiny_model

    if isinstance(spec, LoadedModel):
        return spec
    ref = ModelRef.parse(spec)
    if revision and ref.kind == "hub" and revision != ref.revision:
        ref = ModelRef.parse(f"{ref.name}@{revision}")
    src = describe_model(ref, revision)
    if src.kind == "tiny":
        lm = tiny_model(src.name[len("tiny-") :], seed=seed)
    elif src.kind == "registry":
        lm = load_model(src.name, device=device, dtype=dtype, cache_dir=cache_dir)
    elif src.kind == "static":
        raise ModelUnavailableError(f"{src.location} is a word-vector file: load it with load_static_vectors()")
    elif src.kind == "local":
        lm = _load_local(src, recipe, device, dtype)
    else:
        local_only = check_hub_available(src.location, src.revision, cache_dir)
        lm = _load_hub(src, recipe, device, dtype, cache_dir, local_only)
    if recipe is not None and recipe != lm.spec.recipe:
        lm.spec = replace(lm.spec, recipe=recipe)
    lm.ref = ref
    return lm


def _finish(model, dtype, device):
    if dtype is not None:
        model = model.to(dtype)
    return model.to(device).eval()


def _load_local(src: ModelSource, recipe, device, dtype):
    from transformers import AutoConfig, AutoModel

    from .loading import LoadedModel, _default_device, _load_tokenizer

    tdir = Path(src.transformer_dir)
    sha = weights_sha256(tdir)
    config = AutoConfig.from_pretrained(str(tdir))
    rec = recipe or infer_recipe(config, _pooling_mode(Path(src.location)))
    kw = (
        {"use_safetensors": True}
        if (tdir / "model.safetensors").exists() or any(tdir.glob("model-*.safetensors"))
        else {}
    )
    if config.model_type == "xlnet":
        kw["mem_len"] = 512
    model = _finish(AutoModel.from_pretrained(str(tdir), **kw), dtype, _default_device(device))
    matches = "all-MiniLM-L6-v2" if sha == MINILM_SAFETENSORS_SHA256 else None
    notes = f"local {src.layout} folder; weights sha256 {sha}" + (f" (= registry {matches})" if matches else "")
    spec = _spec_from_config(src.name, f"local:{src.location}", sha, config, rec, notes)
    tok = _load_tokenizer(spec, str(tdir), True)
    note_model(src.name, kind="local", source=src.location, revision=sha, resolved=f"sha256:{sha}", pinned=True)
    return LoadedModel(src.name, model, tok, spec, _default_device(device), src.location, weights_sha256=sha)


def _load_hub(src: ModelSource, recipe, device, dtype, cache_dir, local_only: bool):
    from transformers import AutoConfig, AutoModel

    from .loading import LoadedModel, _default_device, _load_tokenizer

    kw = dict(revision=src.revision, cache_dir=cache_dir, trust_remote_code=False, local_files_only=local_only)
    config = AutoConfig.from_pretrained(src.location, **kw)
    pooling = None
    try:  # a sentence-transformers repository: its pooling config decides the recipe
        from huggingface_hub import hf_hub_download

        mods = hf_hub_download(
            src.location, "modules.json", revision=src.revision, cache_dir=cache_dir, local_files_only=local_only
        )
        pooling = _pooling_mode(Path(mods).parent) or None
    except Exception:
        pooling = None
    rec = recipe or infer_recipe(config, pooling)
    mkw = dict(kw)
    if config.model_type == "xlnet":
        mkw["mem_len"] = 512
    model = _finish(AutoModel.from_pretrained(src.location, **mkw), dtype, _default_device(device))
    commit = getattr(model.config, "_commit_hash", None) or src.revision
    spec = _spec_from_config(src.name, src.location, commit, config, rec, f"Hub {src.location}@{src.revision}")
    tok = _load_tokenizer(replace(spec, revision=src.revision), src.location, False)
    source = f"hf:{src.location}@{commit}"
    note_model(
        src.name,
        kind="hub",
        source=source,
        hf_id=src.location,
        revision=src.revision,
        resolved=commit,
        pinned=len(src.revision) == 40,
    )
    return LoadedModel(src.name, model, tok, spec, _default_device(device), source)
