"""Set-up of the chapter: the sample of proteins, the protein language models (or their tiny stand-ins) and
the mean-pooled protein embeddings of every model."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...embeddings import embed_proteins
from ...models import ModelRef, load_model, require_protein_model, resolve_model, tiny_model
from .config import stream_ranges
from .isotropy import global_isotropy
from .streamed import protein_layers, stream_protein_model

#: Paper models -> tiny same-architecture stand-ins (``tiny_model`` family, seed) for smoke/offline.
_TINY_STANDINS = {
    "prot_bert": ("protbert", 0),
    "prot_bert_bfd": ("protbert", 1),
    "prot_xlnet": ("protxlnet", 0),
    "proteinbert": ("proteinbert", 0),
    "tiny-esm": ("esm", 0),
}


# ------------------------------------------------------------------------------------------ proteins
def global_sample(sequences: Sequence[str], n_global: int | None, seed: int) -> tuple[np.ndarray, list[str]]:
    """A seeded random order of the proteins and its first ``n_global`` (all when None) sequences.

    The pair analysis takes the head of the same order, so its proteins are rows of the global table.

    Returns
    -------
    index : ndarray of int (positions in ``sequences``), seqs : list of str
    """
    order = np.random.default_rng(seed).permutation(len(sequences))
    index = order if n_global is None else order[:n_global]
    return index, [sequences[i] for i in index]


# ------------------------------------------------------------------------------------------ models
def model_label(ref) -> str:
    """Row label of a model (a :class:`~replib.models.ModelRef` or its spec): registry keys and ``tiny-esm`` as
    they are, anything else (a folder, a Hub id) by its slug."""
    ref = ModelRef.parse(ref)
    return ref.name if _profiles_own(ref) else ref.slug


def _profiles_own(ref: ModelRef) -> bool:
    """A registry key or ``tiny-esm``: a model of the profiles' tables. A folder or a Hub id is the reader's
    whatever its name (the rehearsal's stand-in folder ``.../prot_bert`` is not ``Rostlab/prot_bert``)."""
    return ref.kind == "registry" or (ref.kind == "tiny" and ref.name in _TINY_STANDINS)


def load_protein_model(ref, tiny: bool, seed: int = 0):
    """Load a registry model, or with ``tiny`` its tiny random same-architecture stand-in (``smoke`` and
    ``offline``); any other spec (a folder, a Hub id) through :func:`replib.models.resolve_model`, in every
    profile, once :func:`replib.models.require_protein_model` has accepted it.

    Raises
    ------
    replib.models.WrongModelKindError
        For a text model: "this chapter needs a protein model; <name> is a text model ...".
    """
    ref = ModelRef.parse(ref)
    if not _profiles_own(ref):  # a user's model (folder, Hub id, tiny-<family>)
        require_protein_model(ref)
        return resolve_model(ref, seed=seed)
    if tiny:
        family, s = _TINY_STANDINS.get(ref.name, (None, 0))
        if family is None:
            raise ValueError(f"no tiny stand-in for {ref.name!r}; known: {sorted(_TINY_STANDINS)}")
        return tiny_model(family, seed=seed + s)
    return load_model(ref.name)


@dataclass
class ModelEmbeddings:
    """The proteins' embeddings by every model of a configuration.

    Attributes
    ----------
    models : dict
        label -> (LoadedModel, ProteinEmbeddings).
    vectors : dict
        label -> (n_proteins, d) array: the mean-pooled last layer, ProteinBERT's global output.
    esm_layers : dict
        label -> IsoScore of the mean-pooled vectors of every layer (0 = embedding output), ESM models only.
    stats : dict
        Streamed (``cfg.stream``): label -> the :class:`~replib.metrics.LayerAccumulator` of the table's layer,
        whose ``vectors`` are then the pair proteins' rows only.
    missing : list
        Labels of models whose code path could not run (:class:`NotImplementedError` while loading).
    """

    models: dict = field(default_factory=dict)
    vectors: dict = field(default_factory=dict)
    esm_layers: dict = field(default_factory=dict)
    missing: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)


def embed_models(cfg, seqs: Sequence[str], cache_dir=None, progress: bool = True, client=None) -> ModelEmbeddings:
    """Load every model of ``cfg`` (:func:`load_protein_model`) and embed ``seqs`` (:func:`replib.embeddings.embed_proteins`,
    at most ``cfg.max_length`` residues): the last layer, and every layer of ESM models. A part with
    ``cfg.shards`` embeds its share of the sequences (the vectors of those only); with a Dask ``client``
    (:func:`replib.distributed.dask_client`) the shards are computed on its workers."""
    require_protein_models(cfg)  # a reader's text model is refused before anything is loaded
    out = ModelEmbeddings()
    for ref in cfg.models:
        name = model_label(ref)
        try:
            lm = load_protein_model(ref, cfg.tiny, seed=cfg.seed)
        except NotImplementedError as exc:  # a model family whose code path is not available here
            out.missing.append(name)
            print("skipped", name, "-", exc)
            continue
        if cfg.get("stream"):  # the paper path: a part's shard range of the stream, or every range merged
            state_dir = None if cache_dir is None else Path(cache_dir) / "streams"
            st = stream_protein_model(
                lm, seqs, n_keep=cfg.n_pair_proteins, max_length=cfg.max_length, state_dir=state_dir,
                ranges=stream_ranges(str(ref), cfg.profile), shards=cfg.shards, progress=progress,
            )  # fmt: skip
            layers = protein_layers(lm)
            out.models[name] = (lm, st)
            out.vectors[name] = st.kept[layers[-1]]
            out.stats[name] = st.stats[layers[-1]]
            if lm.spec.recipe == "esm":
                out.esm_layers[name] = [st.stats[layer].summary()["isoscore"] for layer in layers]
            continue
        is_esm = lm.spec.recipe == "esm"
        layers = tuple(range(lm.spec.n_layers + 1)) if is_esm else (-1,)
        where = {"shards": cfg.shards}
        if client is not None:
            where.update(client=client, loader=functools.partial(load_protein_model, ref, cfg.tiny, cfg.seed))
        emb = embed_proteins(
            lm, seqs, layers=layers, max_length=cfg.max_length, cache_dir=cache_dir, progress=progress, **where
        )
        out.models[name] = (lm, emb)
        out.vectors[name] = emb.pooled["global"] if lm.spec.recipe == "proteinbert" else emb.pooled[layers[-1]]
        if is_esm:
            out.esm_layers[name] = [global_isotropy(emb.pooled[layer])["isoscore"] for layer in layers]
    return out


def require_protein_models(cfg) -> None:
    """Refuse a configuration whose models are not all protein models (the reader's ``--model`` can name any
    model): :func:`replib.models.require_protein_model` of every model that is not one of the profile's own,
    before any weights are loaded.

    Raises
    ------
    replib.models.WrongModelKindError
        "this chapter needs a protein model; <name> is a text model ...".
    """
    own = set(cfg.default_models)
    for ref in cfg.models:
        if str(ref) not in own:
            require_protein_model(ref)


def user_models(cfg, embedded: ModelEmbeddings) -> list[str]:
    """Labels of the reader's models (those not among the profile's own): recorded under their own label,
    never compared with the paper."""
    own = {model_label(m) for m in cfg.default_models}
    return [n for n in embedded.vectors if n not in own]


def local_model(embedded: ModelEmbeddings) -> str:
    """The model of the per-residue analysis: ProtBERT (or its stand-in) when it ran, else the first model
    with per-residue vectors (the reader's first model; ProteinBERT has only its global output)."""
    if "prot_bert" in embedded.models:
        return "prot_bert"
    return next(n for n, (lm, _) in embedded.models.items() if lm.spec.recipe != "proteinbert")
