"""One resolver for "a model the user has": a registry key, a Hugging Face id (``id@revision``), a local folder
in ``transformers`` or ``sentence-transformers`` layout, or a GloVe / word2vec file.

:func:`resolve_model` turns any of these (as a string or a :class:`~replib.models.ref.ModelRef`) into a
:class:`~replib.models.base.LoadedModel` with provenance (the weights' sha256 for local files, the Hub commit
otherwise), a content identity for the caches, and an embedding *recipe* inferred from the config's
architecture and the sentence-transformers pooling config (overridable with ``recipe=``).
:func:`replib.models.static.load_static_vectors` does the same for word-vector files; :func:`model_slug` gives
the short name used in record keys.

This module sits on top of the others (ref, files, hub, recipes, loading, tiny, fullsize); none imports it.
"""

from __future__ import annotations

from dataclasses import replace

from ..provenance import note_model
from .base import LoadedModel, check_precision, config_spec
from .errors import ModelUnavailableError
from .files import pooling_mode
from .fullsize import random_architecture
from .hub import hub_pooling, hub_snapshot
from .loading import load_config, load_from_folder, load_from_hub, load_model, placed
from .recipes import infer_recipe, model_config
from .ref import ModelRef, slugify
from .registry import MINILM_SAFETENSORS_SHA256, get_spec
from .tiny import _TINY, tiny_model

__all__ = ["forward_flops_per_token", "model_n_layers", "model_slug", "resolve_model"]

#: the licence line of a user's folder or Hub model
_USER_LICENCE = "unverified (user-supplied model)"


def model_slug(spec) -> str:
    """Short ``[a-z0-9_]`` name of a model for record keys: :attr:`ModelRef.slug` of the spec (or of the
    LoadedModel's reference); a spec that does not parse (a path that no longer exists) gives its last
    path component, slugified."""
    if isinstance(spec, ModelRef):
        return spec.slug
    if isinstance(spec, LoadedModel):
        if spec.ref is not None:
            return spec.ref.slug
        spec = spec.name
    try:
        return ModelRef.parse(spec).slug
    except ModelUnavailableError:
        return slugify(str(spec).rstrip("/").rsplit("/", 1)[-1])


def _sizes(ref: ModelRef) -> tuple:
    """Blocks, width and feed-forward width (None where not said) of a parsed spec, from the tiny models' sizes,
    the registry entry or the configuration (no weights)."""
    if ref.kind == "tiny":
        if ref.name == "tiny-proteinbert":
            return 6, 512, None
        return _TINY["num_hidden_layers"], _TINY["hidden_size"], _TINY["intermediate_size"]
    if ref.kind == "registry":
        entry = get_spec(ref.name)
        return entry.n_layers, entry.hidden_size, None
    if ref.kind in ("static", "glove"):
        raise ModelUnavailableError(f"{ref.location} is a word-vector file: it has no layers")
    if ref.kind in ("random", "trained"):
        raise ModelUnavailableError(f"{ref}: its number of layers and size are known once it is built (resolve_model)")
    c = model_config(ref)
    layers = getattr(c, "num_hidden_layers", None) or getattr(c, "n_layer", None)
    if layers is None:
        raise ModelUnavailableError(f"{ref}: its config has no number of layers")
    h = getattr(c, "hidden_size", None) or getattr(c, "d_model", None) or getattr(c, "n_embd", None)
    f = getattr(c, "intermediate_size", None) or getattr(c, "n_inner", None) or getattr(c, "d_inner", None)
    return int(layers), h, f


def model_n_layers(spec) -> int:
    """Number of Transformer blocks of a model spec, read from its registry entry or config (no weights)."""
    return _sizes(ModelRef.parse(spec))[0]


def forward_flops_per_token(spec) -> float:
    r"""Floating-point operations of one token through a model's Transformer blocks, from its registry entry or
    config (no weights): :math:`2 L (4 h^2 + 2 h f)`, twice the blocks' weights (attention projections
    :math:`4 h^2`, feed-forward :math:`2 h f`) for ``L`` blocks of width ``h`` and feed-forward width ``f``
    (4h where the entry or config does not say) :cite:`kaplan2020scaling`. Attention's scores and the embedding
    lookup are left out; a word-vector file (no forward pass) is 0.
    """
    ref = ModelRef.parse(spec)
    if ref.kind in ("static", "glove"):
        return 0.0
    layers, h, f = _sizes(ref)
    if h is None:
        raise ModelUnavailableError(f"{spec}: its config has no number of layers or width")
    h = int(h)
    f = int(f) if f else 4 * h
    return 2.0 * int(layers) * (4 * h * h + 2 * h * f)


def resolve_model(
    spec,
    *,
    recipe: str | None = None,
    device=None,
    dtype=None,
    cache_dir=None,
    seed: int = 0,
    precision: str | None = None,
):
    """Load any model the user has, with provenance and an inferred embedding recipe.

    Parameters
    ----------
    spec : str, path-like, ModelRef or LoadedModel
        ``tiny-<family>`` (random smoke models), ``random:<architecture>`` (full-size, random weights), a
        registry key or alias, a folder (``transformers`` or ``sentence-transformers`` layout), or a Hugging
        Face id ``org/name[@revision]`` (see
        :meth:`~replib.models.ref.ModelRef.parse`). A LoadedModel is returned unchanged.
    recipe : str, optional
        Override the inferred recipe (``text``, ``sbert``, ``protbert``, ``protxlnet``, ``esm``).
    device, dtype, cache_dir, seed
        As :func:`~replib.models.load_model`; ``seed`` for tiny models.
    precision : {"fp32", "bf16", "fp16"}, optional
        The precision of the model's forward passes (:attr:`~replib.models.base.LoadedModel.precision`, read
        by the extractors of :mod:`replib.embeddings`); None: float32 (a LoadedModel keeps its own).

    Returns
    -------
    LoadedModel
        ``weights_sha256`` set for local weights, ``identity`` (what the embedding cache key is built from),
        ``source`` the folder or ``hf:<id>@<commit>``, ``ref`` the parsed spec.

    Raises
    ------
    ModelUnavailableError
        Unknown spec, missing path, a word-vector file or a trained model (loaded elsewhere), or a Hub id not
        cached while offline (raised before any network call);
        its subclasses for a model that ships code (:class:`~replib.models.errors.UntrustedCodeError`) or a
        folder without a tokenizer (:class:`~replib.models.errors.NoTokenizerError`).
    """
    if precision is not None:
        check_precision(precision)
    if isinstance(spec, LoadedModel):
        return spec if precision in (None, spec.precision) else replace(spec, precision=precision)
    ref = ModelRef.parse(spec)
    if ref.kind == "tiny":
        lm = tiny_model(ref.name[len("tiny-") :], seed=seed)
    elif ref.kind == "random":
        lm = random_architecture(ref.name.partition(":")[2], seed=seed)
    elif ref.kind == "registry":
        lm = load_model(ref.name, device=device, dtype=dtype, cache_dir=cache_dir)
    elif ref.kind in ("static", "glove"):
        raise ModelUnavailableError(f"{ref.location} is a word-vector file: load it with load_static_vectors()")
    elif ref.kind == "trained":
        raise ModelUnavailableError(f"{ref}: the training chapter's models load from its cache (replib.atlas)")
    elif ref.kind == "folder":
        lm = _load_local(ref, recipe, device, dtype)
    else:
        lm = _load_hub(ref, recipe, device, dtype, cache_dir)
    if recipe is not None and recipe != lm.spec.recipe:
        lm.spec = replace(lm.spec, recipe=recipe)
    lm.ref = ref
    if precision is not None:
        lm.precision = precision
    return lm


def _load_local(ref: ModelRef, recipe, device, dtype) -> LoadedModel:
    tdir = ref.transformer_dir
    config = load_config(tdir)  # refuses an auto_map before transformers reads the folder
    rec = recipe or infer_recipe(config, pooling_mode(ref.path))
    model, tok, identity = load_from_folder(tdir, rec, config.model_type)
    sha = identity["weights_sha256"]
    matches = "all-MiniLM-L6-v2" if sha == MINILM_SAFETENSORS_SHA256 else None
    notes = f"local {ref.layout} folder; weights sha256 {sha}" + (f" (= registry {matches})" if matches else "")
    spec = config_spec(ref.name, f"local:{ref.location}", sha, model.config, rec, _USER_LICENCE, notes=notes)
    note_model(ref.name, kind="local", source=ref.location, revision=sha, resolved=f"sha256:{sha}", pinned=True)
    lm = LoadedModel(ref.name, model, tok, spec, source=ref.location, weights_sha256=sha, identity=identity)
    return placed(lm, device, dtype)


def _load_hub(src: ModelRef, recipe, device, dtype, cache_dir) -> LoadedModel:
    # the files come through the book's downloader (size cap, deadlines, checksums); refuses an auto_map
    config_dir = hub_snapshot(src.name, src.revision, cache_dir)
    config = load_config(config_dir)
    rec = recipe or infer_recipe(config, hub_pooling(src.location, src.revision, cache_dir))
    model, tok, commit = load_from_hub(src.location, src.revision, rec, config.model_type, False, cache_dir)
    commit = commit or config_dir.name  # the snapshot folder the configuration was read from is the commit
    notes = f"Hub {src.location}@{src.revision}"
    spec = config_spec(src.name, src.location, commit, model.config, rec, _USER_LICENCE, notes=notes)
    source = f"hf:{src.location}@{commit}"
    pinned = len(src.revision) == 40
    note_model(
        src.name, kind="hub", source=source, hf_id=src.location, revision=src.revision, resolved=commit, pinned=pinned
    )
    identity = {"hub": src.location, "commit": commit}
    return placed(LoadedModel(src.name, model, tok, spec, source=source, identity=identity), device, dtype)
