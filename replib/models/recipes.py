"""A model's embedding *recipe* (how :mod:`replib.embeddings` tokenises and pools for it), inferred from its
configuration without loading weights, and the checks a chapter makes before it loads a model of the wrong
kind (a text model in the protein chapter)."""

from __future__ import annotations

from .errors import ModelUnavailableError, WrongModelKindError
from .files import pooling_mode
from .hub import hub_pooling, hub_snapshot
from .loading import load_config
from .ref import ModelRef
from .registry import PROTEIN_RECIPES, TEXT_RECIPES, TINY_RECIPES, get_spec

__all__ = ["infer_recipe", "model_config", "model_recipe", "require_protein_model"]

#: architectures (``config.model_type``) whose small vocabularies mark a protein model
_PROTEIN_VOCAB_MAX = 40


def infer_recipe(config, pooling: str | None = None) -> str:
    """Embedding recipe of a model from its ``transformers`` config and its sentence-transformers pooling.

    ``esm`` for ESM models; ``protbert`` / ``protxlnet`` for BERT / XLNet with a residue-sized vocabulary
    (at most 40 tokens); ``sbert`` for a sentence-transformers model with mean pooling; ``text`` otherwise.

    Parameters
    ----------
    config : transformers.PretrainedConfig
        The model's configuration.
    pooling : str, optional
        The sentence-transformers pooling mode (:func:`~replib.models.files.pooling_mode`).

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


def model_recipe(spec, *, cache_dir=None) -> str:
    """The recipe :func:`~replib.models.resolve_model` would give a spec, read from the registry, the tiny
    family or the configuration files (no weights loaded); ``static`` for a word-vector file.

    Raises
    ------
    ModelUnavailableError
        A spec that does not parse, a Hub model not cached while offline, a configuration with code.
    """
    ref = ModelRef.parse(spec)
    if ref.kind == "tiny":
        return TINY_RECIPES[ref.name[len("tiny-") :]]
    if ref.kind == "registry":
        return get_spec(ref.name).recipe
    if ref.kind in ("static", "glove"):
        return "static"
    if ref.kind == "random":
        return "text"
    if ref.kind == "trained":
        return "esm" if ref.name == "trained:protein" else "text"
    config = model_config(ref, cache_dir)
    pooling = pooling_mode(ref.path) if ref.kind == "folder" else hub_pooling(ref.name, ref.revision, cache_dir)
    return infer_recipe(config, pooling)


def model_config(ref: ModelRef, cache_dir=None):
    """The ``transformers`` configuration of a folder or Hub model (:func:`~replib.models.loading.load_config`;
    a Hub model's configuration files only are brought)."""
    if ref.kind == "folder":
        return load_config(ref.transformer_dir)
    return load_config(hub_snapshot(ref.name, ref.revision, cache_dir, configs_only=True))


def _kind_of(recipe: str) -> str:
    if recipe in PROTEIN_RECIPES:
        return "a protein model"
    if recipe in TEXT_RECIPES:
        return "a text model"
    return "a word-vector file" if recipe == "static" else f"a model with recipe {recipe!r}"


def require_protein_model(spec, *, cache_dir=None) -> str:
    """Refuse, before any weights are loaded, a model a protein chapter cannot embed sequences with.

    Returns
    -------
    str
        The model's recipe (one of ``protbert``, ``protxlnet``, ``esm``, ``proteinbert``).

    Raises
    ------
    WrongModelKindError
        "this chapter needs a protein model; <name> is a text model ...".
    """
    recipe = model_recipe(spec, cache_dir=cache_dir)
    if recipe not in PROTEIN_RECIPES:
        raise WrongModelKindError(
            f"this chapter needs a protein model; {ModelRef.parse(spec).name} is {_kind_of(recipe)} (recipe "
            f"{recipe!r}). Give a protein model: a registry key (prot_bert, esm2_t6_8M, ...), tiny-esm, or a folder "
            "or Hub id of an ESM-2, ProtBert or ProtXLNet model"
        )
    return recipe
