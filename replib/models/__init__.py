"""Model registry (pinned revisions), offline packaged models, tiny models for ``smoke``, and one resolver for
any model the user names (:class:`ModelRef`, :func:`resolve_model`).

Modules, lowest first (each imports only those above it): ``errors``, ``registry``,
``base`` (LoadedModel), ``files`` (what a folder holds), ``hub`` (offline-aware Hub access), ``static``
(word-vector files), ``ref`` (ModelRef: every model spec, parsed once), ``fingerprint`` (content_identity),
``proteinbert``, ``loading`` (registry models, trained models, GloVe), ``recipes`` (recipe checks without
weights), ``tiny``, ``fullsize``, ``resolve`` (resolve_model).
"""

from .base import LoadedModel, offline_mode
from .errors import (
    CorruptModelFileError,
    ModelUnavailableError,
    NoTokenizerError,
    UntrustedCodeError,
    WrongModelKindError,
)
from .files import folder_identity, weights_sha256
from .fingerprint import content_identity
from .hub import check_hub_available
from .loading import load_glove, load_model, load_trained, minilm_dir
from .proteinbert import ProteinBERT, ProteinBertTokenizer, load_proteinbert
from .recipes import infer_recipe, model_recipe, require_protein_model
from .ref import ModelRef, model_refs
from .registry import PROTEINBERT_WEIGHTS, REGISTRY, ModelSpec, get_spec, list_models
from .resolve import forward_flops_per_token, model_n_layers, model_slug, resolve_model
from .static import load_static_vectors
from .tiny import ESM_VOCAB, PROTBERT_VOCAB, tiny_model
