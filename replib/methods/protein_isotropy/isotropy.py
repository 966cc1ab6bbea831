r"""Global isotropy of a table of protein embeddings :cite:`hakim2025protein`: the paper's reported numbers,
effective dimensions :math:`k = \iota (n - 1) + 1` and their rounding, IsoScore and average pairwise cosine."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..._optional import optional_import, require
from ..._validation import check_array
from ...metrics import avg_pairwise_cosine, isoscore
from ...papers import project_table

_isoscore_package = optional_import("IsoScore.IsoScore")  # the authors' implementation (independent oracle)

#: The 20 standard amino acids (one-letter codes, alphabetical).
AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"

#: the width of each of Hakim et al.'s models (their configurations), the n of k = ι(n − 1) + 1
PAPER_MODEL_WIDTHS = {"prot_bert": 1024, "prot_bert_bfd": 1024, "prot_xlnet": 1024, "proteinbert": 512}
_HAKIM = project_table("hakim2025")

#: Reported global results of Hakim et al. 2025 (rows ``global/<model>/<stat>`` of ``data/papers/hakim2025.csv``;
#: seed 000 [S], table number unknown): ``{model: {label, n, isoscore, eff_dims}}``
HAKIM2025_REPORTED = {
    m: {
        "label": _HAKIM[f"global/{m}/isoscore"].row,
        "n": n,
        "isoscore": _HAKIM[f"global/{m}/isoscore"].value,
        "eff_dims": int(_HAKIM[f"global/{m}/eff_dims"].value),
    }
    for m, n in PAPER_MODEL_WIDTHS.items()
    if f"global/{m}/isoscore" in _HAKIM
}

#: Reported Pearson correlations for ProtBERT (rows ``corr/<a>/<b>`` of ``data/papers/hakim2025.csv``; seed 000
#: [S]; upper triangle only): ``{(a, b): r}``
HAKIM2025_CORRELATIONS = {(n.parts[1], n.parts[2]): n.value for n in _HAKIM.values() if n.parts[0] == "corr"}


# ------------------------------------------------------------------------------ effective dimensions
def effective_dimensions_from_isoscore(iota, n_features):
    r"""Effective dimensions :math:`k = \iota (n - 1) + 1` :cite:`rudman2022isoscore`.

    Parameters
    ----------
    iota : float or array_like
        IsoScore(s) in [0, 1].
    n_features : int or array_like
        Ambient dimension n (≥ 2).

    Returns
    -------
    float or ndarray
        A real number in [1, n]; equal to the participation ratio of the covariance.
    """
    iota = np.asarray(iota, dtype=np.float64)
    n = np.asarray(n_features, dtype=np.float64)
    if np.any(iota < 0) or np.any(iota > 1) or not np.all(np.isfinite(iota)):
        raise ValueError("IsoScore must lie in [0, 1]")
    if np.any(n < 2):
        raise ValueError("n_features must be at least 2")
    k = iota * (n - 1.0) + 1.0
    return float(k) if k.ndim == 0 else k


def round_effective_dimensions(k, rule: str = "ceil"):
    """Integer effective dimensions under a rounding ``rule`` (``ceil``, ``round`` or ``floor``).

    Hakim et al. :cite:`hakim2025protein` report integers; ``ceil`` is the rule that reproduces all
    four of them from the reported IsoScores (see :func:`rounding_rule_matches`). ``round`` is
    round-half-to-even, as Python's ``round``.
    """
    fns = {"ceil": np.ceil, "round": np.rint, "floor": np.floor}
    if rule not in fns:
        raise ValueError(f"rule must be one of {sorted(fns)}; got {rule!r}")
    out = fns[rule](np.asarray(k, dtype=np.float64)).astype(np.int64)
    return int(out) if out.ndim == 0 else out


def rounding_rule_matches(reported: dict | None = None, rule: str = "ceil") -> int:
    """How many reported integers equal ``rule(ι(n−1)+1)`` of the reported IsoScores ι.

    Parameters
    ----------
    reported : dict, optional
        ``{model: {"n": int, "isoscore": float, "eff_dims": int}}``; default
        :data:`HAKIM2025_REPORTED`.
    rule : {"ceil", "round", "floor"}
    """
    reported = HAKIM2025_REPORTED if reported is None else reported
    k = {m: effective_dimensions_from_isoscore(v["isoscore"], v["n"]) for m, v in reported.items()}
    return sum(int(round_effective_dimensions(k[m], rule) == int(v["eff_dims"])) for m, v in reported.items())


def global_isotropy(E) -> dict:
    r"""IsoScore, effective dimensions (real, ceil, round) and average pairwise cosine of embeddings.

    Parameters
    ----------
    E : array_like of shape (n_proteins, n_features)
        One (e.g. mean-pooled) vector per protein.

    Returns
    -------
    dict
        ``n_samples``, ``n_features``, ``isoscore`` ι, ``eff_dims`` = ι(n−1)+1, ``eff_dims_ceil``,
        ``eff_dims_round`` and ``avg_cosine`` (exact over all pairs) :cite:`rudman2022isoscore`.
    """
    E = check_array(E, name="E", min_samples=2, min_features=2, warn_fewer_samples=True)
    return _isotropy_row(E.shape[0], E.shape[1], isoscore(E), avg_pairwise_cosine(E))


def accumulated_isotropy(acc) -> dict:
    """:func:`global_isotropy` of every vector folded into a :class:`~replib.metrics.LayerAccumulator` (the
    streamed paper path): the same keys, from the accumulated covariance and running sums."""
    s = acc.summary()
    return _isotropy_row(s["n_samples"], s["n_features"], s["isoscore"], s["avg_cosine"])


def _isotropy_row(n_samples: int, n_features: int, iota: float, avg_cosine: float) -> dict:
    k = effective_dimensions_from_isoscore(iota, n_features)
    return {
        "n_samples": n_samples,
        "n_features": n_features,
        "isoscore": iota,
        "eff_dims": k,
        "eff_dims_ceil": round_effective_dimensions(k, "ceil"),
        "eff_dims_round": round_effective_dimensions(k, "round"),
        "avg_cosine": avg_cosine,
    }


# ------------------------------------------------------------------------------ the chapter's tables
def rounding_table(reported: dict | None = None) -> pd.DataFrame:
    """The paper's reported IsoScores ι and widths n through k = ι(n−1)+1 and each rounding rule, beside the
    reported integer (:data:`HAKIM2025_REPORTED` by default)."""
    reported = HAKIM2025_REPORTED if reported is None else reported
    rows = []
    for v in reported.values():
        k = effective_dimensions_from_isoscore(v["isoscore"], v["n"])
        rules = {rule: round_effective_dimensions(k, rule) for rule in ("ceil", "round", "floor")}
        head = {"model": v["label"], "n": v["n"], "reported IsoScore": v["isoscore"], "k = ι(n−1)+1": k}
        rows.append({**head, **rules, "reported": v["eff_dims"]})
    return pd.DataFrame(rows)


def global_table(vectors: dict, models: dict, baselines: dict, stats: dict | None = None) -> pd.DataFrame:
    """:func:`global_isotropy` of every model's vectors (column ``model``: the loaded model's name) and of
    every composition baseline, one row per representation (column ``embedding``). A model in ``stats``
    (label -> :class:`~replib.metrics.LayerAccumulator`, the streamed paper path) is measured on every vector
    it accumulated (:func:`accumulated_isotropy`), not on its kept ``vectors`` (the pair proteins only)."""
    stats = stats or {}
    rows = [
        {
            "embedding": name,
            "model": models[name][0].name,
            **(accumulated_isotropy(stats[name]) if name in stats else global_isotropy(E)),
        }
        for name, E in vectors.items()
    ]
    rows += [
        {"embedding": name, "model": "composition (no parameters)", **global_isotropy(E)}
        for name, E in baselines.items()
    ]
    return pd.DataFrame(rows)


def global_records(glob: pd.DataFrame, tiny: bool, user_models: list) -> dict:
    """The global table's claimed numbers: the two composition baselines; the reader's models under their
    label; each of the paper's four models that ran under its name with its real weights (``tiny`` false),
    else its stand-in under ``standin_<name>`` (never compared with the paper). A model's keys depend on that
    model only, so a part that runs one model records its own (:mod:`replib.parts`)."""
    G = glob.set_index("embedding")
    out = {}
    for stat in ("isoscore", "eff_dims", "avg_cosine"):
        out[f"aa_composition_{stat}"] = G.loc["aa_composition", stat]
        out[f"2mer_composition_{stat}"] = G.loc["2mer_composition", stat]
    paper_models = [n for n in ("prot_bert", "prot_bert_bfd", "prot_xlnet", "proteinbert") if n in G.index]
    for stat in ("isoscore", "eff_dims", "eff_dims_ceil", "avg_cosine"):
        for name in user_models:  # the reader's models, under their label; never compared with the paper
            out[f"{name}_{stat}"] = G.loc[name, stat]
        paper_keys = {  # the claims' keys, spelled out
            "prot_bert": f"prot_bert_{stat}",
            "prot_bert_bfd": f"prot_bert_bfd_{stat}",
            "prot_xlnet": f"prot_xlnet_{stat}",
            "proteinbert": f"proteinbert_{stat}",
        }
        for name in paper_models:  # pretrained: compared with the paper; tiny random stand-ins: recorded apart
            out[f"standin_{name}_{stat}" if tiny else paper_keys[name]] = G.loc[name, stat]
    return out


def esm_layer_records(esm_layers: dict, tiny: bool) -> dict:
    """IsoScore per layer of each ESM-2 model (``esm_<name>_layer_isoscores``), or of the tiny stand-in
    (``standin_esm_layer_isoscores``)."""
    return {
        ("standin_esm_layer_isoscores" if tiny else f"esm_{name.replace('-', '_')}_layer_isoscores"): values
        for name, values in esm_layers.items()
    }


def esm_layer_curves(models: dict) -> pd.DataFrame:
    """IsoScore of the mean-pooled vectors per layer of every ESM model, against the relative depth
    (0 = embedding output, 1 = last layer); columns model (name and depth), depth, isoscore."""
    rows = []
    for lm, emb in models.values():
        if lm.spec.recipe != "esm":
            continue
        streamed = hasattr(emb, "stats")  # a StreamedLayers of the paper path: its accumulators
        per_layer = emb.stats if streamed else emb.pooled
        layers = sorted(layer for layer in per_layer if isinstance(layer, int))
        label = f"{lm.name} ({lm.spec.n_layers} layers)"
        for layer in layers:
            X = per_layer[layer]
            isoscore_l = X.summary()["isoscore"] if streamed else global_isotropy(X)["isoscore"]
            rows.append({"model": label, "depth": layer / layers[-1], "isoscore": isoscore_l})
    return pd.DataFrame(rows, columns=["model", "depth", "isoscore"])


def package_difference(E) -> float:
    """|IsoScore of the authors' package − :func:`global_isotropy`'s| on ``E`` (an independent check)."""
    package = require(_isoscore_package, "IsoScore", "the comparison with the authors' IsoScore package")
    return abs(float(package.IsoScore(E)) - global_isotropy(E)["isoscore"])
