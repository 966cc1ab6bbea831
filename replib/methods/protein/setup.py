"""Set-up of the chapter: sizes per profile, the protein language models (or their tiny stand-ins) and the
mean-pooled protein embeddings."""

from __future__ import annotations

from collections.abc import Sequence

from ...embeddings import embed_proteins


# ------------------------------------------------------------------------------------ configuration
def config_for(profile: str) -> dict:
    """Sizes and settings of the chapter per profile (read by the notebook and the tests).

    ``paper``: current Swiss-Prot, the four models of the paper and four ESM-2 sizes, 3,578 proteins
    for the pair analysis (C(3578, 2) = 6,399,253 ≈ the paper's 6.4×10⁶ pairs). ``offline``: the
    real Swiss-Prot 2014 samples, tiny same-architecture random models (sequences cut at 256
    residues), 800 proteins (319,600 pairs). ``smoke``: a few hundred sequences and pairs. The pair
    proteins are the first ``n_pair_proteins`` of the random global sample, so their embeddings are
    rows of the global table.
    """
    common = dict(gap_open=10, gap_extend=1, matrix="pam250", min_ratio=5, seed=0)
    # fmt: off
    cfgs = {
        "smoke": dict(subset="5k", n_global=200, n_pair_proteins=40, n_biopython=100, n_local=200,
                      max_length=128, chunk_size=200, n_jobs=2, kmer_max=2, tiny=True, esm_models=["tiny-esm"]),
        "offline": dict(subset="20k", n_global=1500, n_pair_proteins=800, n_biopython=300, n_local=400,
                        max_length=256, chunk_size=20000, n_jobs=2, kmer_max=2, tiny=True,
                        esm_models=["tiny-esm"]),
        "paper": dict(subset="current", n_global=None, n_pair_proteins=3578, n_biopython=2000, n_local=5000,
                      max_length=1022, chunk_size=50000, n_jobs=-1, kmer_max=2, tiny=False,
                      esm_models=["esm2_t6_8M", "esm2_t12_35M", "esm2_t30_150M", "esm2_t33_650M"]),
    }
    # fmt: on
    if profile not in cfgs:
        raise ValueError(f"unknown profile {profile!r}; expected one of {sorted(cfgs)}")
    return {**common, **cfgs[profile]}


# ------------------------------------------------------------------------------ language-model glue
#: Paper models -> tiny same-architecture stand-ins (``tiny_model`` family, seed) for smoke/offline.
_TINY_STANDINS = {
    "prot_bert": ("protbert", 0),
    "prot_bert_bfd": ("protbert", 1),
    "prot_xlnet": ("protxlnet", 0),
    "proteinbert": ("proteinbert", 0),
    "tiny-esm": ("esm", 0),
}


def protein_models(profile: str, models=None) -> list[str]:
    """The global-table models of a profile (paper: the four of Hakim et al. and ESM-2 sizes), or ``models``
    (a spec or list of specs, :func:`replib.models.resolve_model`) when given."""
    cfg = config_for(profile)
    default = ["prot_bert", "prot_bert_bfd", "prot_xlnet", "proteinbert"] + list(cfg["esm_models"])
    if models is None:
        return default
    from ...models.resolve import select_models  # lazy: replib.models imports torch

    return select_models(models, default)


def model_label(name: str) -> str:
    """Row label of a model: registry keys as they are, anything else (a folder, a Hub id) by its slug."""
    from ...models import REGISTRY, model_slug  # lazy: replib.models imports torch

    return name if name in REGISTRY or name in _TINY_STANDINS else model_slug(name)


def load_protein_model(name: str, profile: str, seed: int = 0):
    """Load a registry model (``paper``) or its tiny random same-architecture stand-in (``smoke``/``offline``);
    any other spec (a folder, a Hub id) through :func:`replib.models.resolve_model`, in every profile.

    Uses :func:`replib.models.load_model` / :func:`replib.models.tiny_model`.
    """
    from ...models import REGISTRY, load_model, resolve_model, tiny_model  # lazy: replib.models imports torch

    cfg = config_for(profile)
    if name not in REGISTRY and name not in _TINY_STANDINS:  # a user's model (folder, Hub id, tiny-<family>)
        return resolve_model(name, seed=seed)
    if cfg["tiny"]:
        family, s = _TINY_STANDINS.get(name, (None, 0))
        if family is None:
            raise ValueError(f"no tiny stand-in for {name!r}; known: {sorted(_TINY_STANDINS)}")
        return tiny_model(family, seed=seed + s)
    return load_model(name)


def embed_global(lm, seqs: Sequence[str], layers=(-1,), max_length: int = 1022, cache_dir=None, progress: bool = True):
    """Mean-pooled protein embeddings through :func:`replib.embeddings.embed_proteins` (the model's recipe).

    Returns the :class:`~replib.embeddings.ProteinEmbeddings`; ``.pooled[layer]`` is (n, d) and for
    ProteinBERT ``.pooled["global"]`` is its 512-d global output.
    """
    return embed_proteins(lm, list(seqs), layers=layers, max_length=max_length, cache_dir=cache_dir, progress=progress)


# ------------------------------------------------------------------------- this book's trained model
def load_book_model(profile: str, seed: int = 0):
    """This book's own ESM-2-style masked protein LM, trained from scratch on Swiss-Prot by
    :func:`replib.training.trained_model` at ``profile``'s sizes (read from the training cache, or trained
    now: the ``training_dynamics`` chapter and this chapter share the one artefact), loaded through
    :func:`replib.models.load_trained` (sha256-verified). Not a model of the paper."""
    from ...models import load_trained
    from ...training import trained_model

    run = trained_model("protein", profile, seed)
    return load_trained(run.final_dir, name="book-esm-trained"), run


def book_model_analysis(
    lm,
    seqs_global: Sequence[str],
    n_pair: int,
    pairs,
    aln,
    *,
    max_length: int,
    n_local: int,
    min_ratio: float,
    cache_dir=None,
    progress: bool = True,
) -> dict:
    """The protein chapter's measurements for one model, as for the paper's models.

    Global isotropy of the mean-pooled last layer (:func:`global_isotropy`) and per layer; per-residue
    isotropy over the first ``n_local`` proteins (:func:`accumulate_residues`); the embedding-distance vs
    alignment correlations (Pearson and Spearman) on the pairs of the first ``n_pair`` proteins.

    Returns
    -------
    dict with ``global`` (dict), ``layer_isoscores`` (list), ``local`` (DataFrame),
    ``local_mean_eff_dims`` (float), ``pair_table`` (DataFrame of pair measures), ``corr`` (DataFrame).
    """
    import pandas as pd

    from .isotropy import HAKIM2025_CORRELATIONS, global_isotropy
    from .pairs import embedding_pair_stats, pair_correlations
    from .residues import accumulate_residues

    layers = tuple(range(lm.spec.n_layers + 1))
    emb = embed_global(lm, seqs_global, layers=layers, max_length=max_length, cache_dir=cache_dir, progress=progress)
    E = emb.pooled[layers[-1]]
    acc = accumulate_residues(
        lm, list(seqs_global[:n_local]), layer=-1, max_length=max_length, min_ratio=min_ratio, progress=progress
    )
    df = pd.concat([embedding_pair_stats(E[:n_pair], pairs), aln[["score", "identity"]]], axis=1)
    corr = pd.DataFrame(
        [
            {
                "method": m,
                **{f"{a}–{b}": pair_correlations(df, method=m).loc[a, b] for (a, b) in HAKIM2025_CORRELATIONS},
            }
            for m in ("pearson", "spearman")
        ]
    )
    return {
        "global": global_isotropy(E),
        "layer_isoscores": [global_isotropy(emb.pooled[l])["isoscore"] for l in layers],
        "local": acc.table(),
        "local_mean_eff_dims": acc.mean_effective_dimensions(),
        "pair_table": df,
        "corr": corr,
    }
