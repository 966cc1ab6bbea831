"""Model registry (pinned revisions), offline packaged models, tiny models for ``smoke``."""

from ..provenance import USED_MODELS, note_model, read_models_log
from .errors import (
    CorruptModelFileError,
    ModelUnavailableError,
    NoTokenizerError,
    UntrustedCodeError,
    WrongModelKindError,
)
from .loading import LoadedModel, load_glove, load_model, load_trained, minilm_dir, offline_mode
from .proteinbert import ProteinBERT, ProteinBertTokenizer, load_proteinbert
from .ref import ModelRef, model_refs
from .registry import PROTEINBERT_WEIGHTS, REGISTRY, ModelSpec, get_spec, list_models
from .resolve import (
    describe_model,
    infer_recipe,
    model_slug,
    resolve_model,
    select_models,
    weights_sha256,
)
from .static import load_static_vectors
from .tiny import ESM_VOCAB, PROTBERT_VOCAB, tiny_model

__all__ = [
    "LoadedModel",
    "load_glove",
    "load_model",
    "load_trained",
    "minilm_dir",
    "offline_mode",
    "ProteinBERT",
    "ProteinBertTokenizer",
    "load_proteinbert",
    "PROTEINBERT_WEIGHTS",
    "REGISTRY",
    "ModelSpec",
    "get_spec",
    "list_models",
    "ESM_VOCAB",
    "PROTBERT_VOCAB",
    "tiny_model",
    "USED_MODELS",
    "note_model",
    "read_models_log",
    "ModelUnavailableError",
    "describe_model",
    "infer_recipe",
    "load_static_vectors",
    "model_slug",
    "resolve_model",
    "weights_sha256",
    "select_models",
    "ModelRef",
    "model_refs",
    "CorruptModelFileError",
    "NoTokenizerError",
    "UntrustedCodeError",
    "WrongModelKindError",
]
