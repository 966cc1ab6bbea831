r"""The experiment of :cite:`mickus2024isotropy` (Sec. 3, App. A): trainable embeddings and a linear classifier.

The embeddings themselves are trainable parameters, followed by a linear classifier; Adam with PyTorch's
defaults, full batch, 1000 updates (250 for GLUE); after the updates IsoScore on the unpaired embeddings and
the silhouette of the classifier inputs against the labels are tracked. :func:`train_trajectory` is
deterministic under a seed and resumable (an atomic checkpoint every ``checkpoint_every`` updates).
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from scipy.stats import pearsonr, spearmanr
from tqdm.auto import tqdm

from ..._io import ShardWarning, atomic_path, cache_key, cache_root, progress_off
from ..._validation import OrientationWarning, check_array
from ...metrics.isoscore import isoscore
from ...metrics.silhouette import silhouette_score
from .algebra import _codes


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


def count_parameters(setup: ClassifierSetup) -> int:
    """Trainable parameters: the vectors plus the classifier, U·d + d_in·k (+ k with a bias)."""
    U, d = setup.embeddings.shape
    k = setup.n_outputs
    return U * d + setup.d_in * k + (k if setup.bias else 0)


@dataclass
class TrainConfig:
    """Training and evaluation sizes of one experiment (the chapter's per profile:
    :mod:`replib.methods.classifiers.config`)."""

    n_updates: int = 1000
    eval_every: int = 1
    seeds: tuple = (0, 1, 2, 3, 4)
    metric_sample: int | None = None
    lr: float = 1e-3
    checkpoint_every: int = 50
    other_seeds_eval_every: int | None = None  # coarser grid for seeds after the first (None: same)
    silhouette_sample: int | None = None  # the silhouette on these many items, the same for every seed and step


def _features(E, index, pair_features: str):
    if index.shape[1] == 1:
        return E[index[:, 0]]
    u, v = E[index[:, 0]], E[index[:, 1]]
    if pair_features == "concat":
        return torch.cat([u, v], dim=1)
    return torch.cat([u, v, (u - v).abs()], dim=1)


def _logits(E, index, clf: torch.nn.Linear, pair_features: str):
    r"""The classifier's logits of every item without building the item features.

    For features that are a concatenation of rows of ``E`` (one vector, or ``[u; v]``), the linear layer
    splits over the blocks of its weight: :math:`W[u; v] + b = (E W_u^\top)[i_u] + (E W_v^\top)[i_v] + b`.
    The products are taken over the ``n_units × k`` projections, so neither the forward pass nor the
    backward pass gathers or scatters ``n_items × d`` rows (the same gradients, to rounding); the blocks are
    stacked into one ``(m k, d)`` matrix, so that a pair costs one product with ``E`` each way, not two (the
    products with ``E`` are limited by memory: a skinny product reads all of ``E`` whatever its width). SBERT's
    ``(u, v, |u − v|)`` is not linear in ``E`` and goes through :func:`_features`."""
    if pair_features != "concat" and index.shape[1] > 1:
        return clf(_features(E, index, pair_features))
    (m, d), k = (index.shape[1], E.shape[1]), clf.weight.shape[0]
    P = E @ clf.weight.reshape(k, m, d).transpose(0, 1).reshape(m * k, d).T  # column block j: E W_j^T
    logits = sum(P[index[:, j], j * k : (j + 1) * k] for j in range(m))
    return logits if clf.bias is None else logits + clf.bias


def _load_checkpoint(path: Path, device) -> dict | None:
    """The state in ``path`` read with ``torch.load(weights_only=True)`` (nothing but tensors and plain
    containers is unpickled), or None with a :class:`~replib._io.ShardWarning` when it cannot be read
    (truncated, corrupted, or holding other objects): training then starts again from update 0."""
    try:
        state = torch.load(path, map_location=device, weights_only=True)
        if not isinstance(state, dict) or not {"meta", "step", "E", "clf", "opt", "rng", "rows"} <= set(state):
            raise ValueError("not a training checkpoint")
        return state
    except Exception as e:  # an unreadable checkpoint is recomputed, never fatal
        warnings.warn(
            f"checkpoint {path} is unreadable ({type(e).__name__}: {e}); training from update 0",
            ShardWarning,
            stacklevel=2,
        )
        return None


def _evaluate(setup, E, X_items, step, loss, acc, rng, metric_sample, device, silhouette_sample=None, last=False):
    """IsoScore on the unpaired vectors and silhouette of the classifier inputs (optionally on a sample)."""
    idx, cl = setup.index, setup.cluster_ids
    if metric_sample is not None and setup.n_items > metric_sample:
        pick = np.sort(rng.choice(setup.n_items, metric_sample, replace=False))
        units = np.unique(idx[pick].reshape(-1))
        Xs, E_eval, cl_s = (
            X_items[torch.from_numpy(pick).to(X_items.device)],
            E[torch.from_numpy(units).to(E.device)],
            cl[pick],
        )
    else:
        Xs, E_eval, cl_s = X_items, E, cl
    with warnings.catch_warnings():
        # fewer vectors than dimensions (small samples in smoke, WNLI): IsoScore is deflated, but the
        # trajectory is compared with itself; the chapter states the sizes
        warnings.simplefilter("ignore", OrientationWarning)
        iso = isoscore(E_eval.detach().cpu().numpy())  # float32: ssyrk blocks summed in float64, ~1e-9 from float64
    row = dict(step=int(step), isoscore=float(iso))
    fixed = silhouette_items(len(cl_s), silhouette_sample)
    if fixed is not None:
        at = torch.from_numpy(fixed).to(Xs.device)
        row["silhouette"] = _silhouette(Xs[at], cl_s[fixed], device)
        if last:  # the whole set once, at the end: how far the sample's value is from it
            row["silhouette_all"] = _silhouette(Xs, cl_s, device)
    else:
        row["silhouette"] = _silhouette(Xs, cl_s, device)
    return row | dict(loss=float(loss), accuracy=float(acc))


def silhouette_items(n_items: int, size: int | None):
    """The items the training loop's silhouette is taken on: ``size`` of ``n_items`` drawn once, with a generator
    seeded by ``n_items`` alone (the same items for every seed and every evaluation, so a trajectory and the
    spread across seeds compare the same points), sorted; None (every item) without a size or when ``size`` is
    not smaller than ``n_items``."""
    if size is None or size >= n_items:
        return None
    return np.sort(np.random.default_rng([2024, n_items]).choice(n_items, size, replace=False))


def _silhouette(X, labels, device) -> float:
    if len(np.unique(labels)) < 2:
        return float("nan")
    # float32 distances on the centred cloud: agrees with float64 to ~1e-7 (tested), twice as fast
    Xc = X.detach() - X.detach().mean(0, keepdim=True)
    return float(silhouette_score(Xc, labels, device=device, dtype=torch.float32))


def train_trajectory(
    setup: ClassifierSetup,
    *,
    seed: int = 0,
    n_updates: int = 1000,
    eval_every: int = 1,
    lr: float = 1e-3,
    metric_sample: int | None = None,
    silhouette_sample: int | None = None,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int = 50,
    device=None,
    progress: bool = True,
    on_update: Callable[[int], None] | None = None,
):
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
    silhouette_sample : int, optional
        The silhouette on the same :func:`silhouette_items` at every evaluation; at the last step also on
        every item (column ``silhouette_all``, NaN elsewhere).
    checkpoint : path, optional
        File holding the state (parameters, Adam moments, RNG state, trajectory), written atomically every
        ``checkpoint_every`` updates and at the end. If it matches this setup, seed, hyper-parameters and
        device type, training resumes from it (a finished run is returned as is, a longer one continues);
        the match does not cover the code. Read with ``torch.load(weights_only=True)``; an unreadable one
        is reported (:class:`~replib._io.ShardWarning`) and training starts from update 0.
    device : str, optional
        Where to train and compute silhouettes (default CUDA when available).
    progress : bool
    on_update : callable, optional
        Called with the number of updates done after every update (tests simulate a kill with it).

    Returns
    -------
    pandas.DataFrame
        Columns ``step, isoscore, silhouette, loss, accuracy`` (loss/accuracy before the update of that step;
        at the last step, of the final parameters).
    """
    if n_updates < 0 or eval_every < 1 or checkpoint_every < 1:
        raise ValueError("n_updates must be >= 0, eval_every and checkpoint_every >= 1")
    dev = _device(device)
    meta = _run_meta(setup, seed, eval_every, lr, metric_sample, dev, silhouette_sample)
    # the vectors, nn.Linear with PyTorch's default init under torch.manual_seed(seed), one Adam over both; BCE for
    # multi-hot targets, else cross-entropy; the generator of the metric samples
    torch.manual_seed(seed)
    E = torch.nn.Parameter(torch.from_numpy(setup.embeddings.copy()).to(dev))
    clf = torch.nn.Linear(setup.d_in, setup.n_outputs, bias=setup.bias).to(dev)
    opt = torch.optim.Adam([E, *clf.parameters()], lr=lr, fused=_fused_adam(dev))
    rng = np.random.default_rng([seed, 2024])
    index = torch.from_numpy(setup.index).to(dev)
    if setup.multilabel:
        y, loss_fn = torch.from_numpy(setup.targets.astype(np.float32)).to(dev), torch.nn.BCEWithLogitsLoss()
    else:
        y, loss_fn = torch.from_numpy(setup.targets).to(dev), torch.nn.CrossEntropyLoss()
    ckpt = Path(checkpoint) if checkpoint is not None else None
    state = _load_checkpoint(ckpt, dev) if ckpt is not None and ckpt.exists() else None
    rows, start = [], 0
    if state is not None:  # the parameters, Adam's moments, the generator and the rows of the checkpoint
        if state["meta"] != meta:
            raise ValueError(
                f"checkpoint {ckpt} belongs to another run ({state['meta']} != {meta}); delete it or pass another path"
            )
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

    def save(step: int) -> None:  # tensors, numbers, strings, lists and dicts only: _load_checkpoint's weights_only
        state = dict(meta=meta, step=step, E=E.detach().cpu(), clf=clf.state_dict(), opt=opt.state_dict())
        with atomic_path(ckpt, suffix=".tmp") as tmp:
            torch.save(state | dict(rng=rng.bit_generator.state, rows=rows), tmp)

    bar = tqdm(total=n_updates, initial=start, desc=f"{setup.name} seed {seed}", disable=progress_off(progress))
    for step in range(start, n_updates + 1):
        logits = _logits(E, index, clf, setup.pair_features)  # the loss and training accuracy, full batch
        loss = loss_fn(logits, y)
        with torch.no_grad():
            if setup.multilabel:
                acc = ((logits > 0) == (y > 0.5)).all(1).float().mean()
            else:
                acc = (logits.argmax(1) == y).float().mean()
        if (step % eval_every == 0 or step == n_updates) and not (rows and rows[-1]["step"] == step):
            with torch.no_grad():
                X = _features(E, index, setup.pair_features)
            ev = (rng, metric_sample, dev, silhouette_sample, step == n_updates)
            rows.append(_evaluate(setup, E, X, step, loss.item(), acc.item(), *ev))
            bar.set_postfix(iso=f"{rows[-1]['isoscore']:.4f}", sil=f"{rows[-1]['silhouette']:.4f}")
        if step == n_updates:
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        bar.update(1)
        if on_update is not None:
            on_update(step + 1)
        if ckpt is not None and (step + 1) % checkpoint_every == 0:
            save(step + 1)
    bar.close()
    if ckpt is not None:
        save(n_updates)
    return pd.DataFrame(rows)


def _device(device):
    return torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))


def _fused_adam(device) -> bool:
    """Whether Adam runs as one fused kernel (CPU and CUDA in this torch): the same update, one pass over
    the parameters instead of a dozen; part of a run's description (:func:`_run_meta`)."""
    return _device(device).type in ("cpu", "cuda")


def _run_meta(
    setup: ClassifierSetup, seed: int, eval_every: int, lr: float, metric_sample, device, silhouette_sample=None
) -> dict:
    """Everything that shapes a trajectory: the set-up, seed, evaluation grid, learning rate, metric samples and
    the device type (CPU and CUDA kernels differ in the last bits). A checkpoint is resumed only under the
    same description."""
    extra = {} if silhouette_sample is None else {"silhouette_sample": int(silhouette_sample)}
    return extra | dict(
        setup=setup.fingerprint(),
        seed=int(seed),
        eval_every=int(eval_every),
        lr=float(lr),
        metric_sample=metric_sample,
        device=_device(device).type,
        adam="fused" if _fused_adam(device) else "foreach",
    )


def run_seeds(setup: ClassifierSetup, config: TrainConfig, *, cache_dir=None, device=None, progress: bool = True):
    """:func:`train_trajectory` for every seed of ``config`` (the first on the ``eval_every`` grid, the others
    on ``other_seeds_eval_every``), checkpointed under ``cache_dir/runs`` in a file named by a hash of everything
    that shapes the trajectory (:func:`_run_meta`); one frame with a ``seed`` column."""
    frames = []
    for i, seed in enumerate(config.seeds):
        every = config.eval_every if i == 0 or not config.other_seeds_eval_every else config.other_seeds_eval_every
        meta = _run_meta(setup, seed, every, config.lr, config.metric_sample, device, config.silhouette_sample)
        ck = _cache_root(cache_dir) / "runs" / f"{setup.name}-seed{seed}-{cache_key(meta)}.pt"
        kw = {
            k: getattr(config, k) for k in ("n_updates", "lr", "metric_sample", "silhouette_sample", "checkpoint_every")
        }
        t = train_trajectory(setup, seed=seed, eval_every=every, checkpoint=ck, device=device, progress=progress, **kw)
        frames.append(t.assign(seed=seed, setup=setup.name))
    return pd.concat(frames, ignore_index=True)


def summarize_runs(runs) -> dict:
    """Correlations on the first seed's trajectory; start/end values, gains and the largest standard
    deviation across seeds at the steps all seeds share; with a sampled silhouette, ``silhouette_sample_err``:
    its largest distance from the silhouette of every item at the last step of a seed (0 without a sample)."""
    first = runs[runs.seed == runs.seed.iloc[0]]
    out = trajectory_correlations(first)
    a, b = first.iloc[0], first.iloc[-1]
    out.update(
        isoscore_start=float(a.isoscore),
        isoscore_end=float(b.isoscore),
        silhouette_start=float(a.silhouette),
        silhouette_end=float(b.silhouette),
        silhouette_gain=float(b.silhouette - a.silhouette),
        isoscore_drop=float(a.isoscore - b.isoscore),
        accuracy_end=float(b.accuracy),
        loss_end=float(b.loss),
    )
    common = runs.groupby("step").seed.nunique()
    steps = common[common == runs.seed.nunique()].index
    sub = runs[runs.step.isin(steps)]
    if runs.seed.nunique() > 1:
        sd = sub.groupby("step")[["isoscore", "silhouette"]].std()
        out.update(
            seed_std_max=float(sd.max().max()), seed_std_mean=float(sd.mean().mean()), n_seeds=int(runs.seed.nunique())
        )
    else:
        out.update(seed_std_max=float("nan"), seed_std_mean=float("nan"), n_seeds=1)
    out["silhouette_sample_err"] = 0.0  # the silhouette on every item: no sample
    if "silhouette_all" in runs:  # a sampled silhouette: its largest distance from every item's, at the ends
        ends = runs.dropna(subset=["silhouette_all"])
        out["silhouette_sample_err"] = float((ends.silhouette - ends.silhouette_all).abs().max())
    return out


def trajectory_correlations(traj) -> dict:
    """Pearson r and Spearman ρ between the IsoScore and silhouette series of one trajectory."""
    t = traj.dropna(subset=["isoscore", "silhouette"])
    if len(t) < 3:
        raise ValueError("need at least 3 evaluated steps for a correlation")
    return dict(
        pearson=float(pearsonr(t.isoscore, t.silhouette)[0]),
        spearman=float(spearmanr(t.isoscore, t.silhouette)[0]),
        n_points=int(len(t)),
    )


def _cache_root(cache_dir=None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    return cache_root("classifiers")
