"""The cost of the manifolds chapter's layer analysis at paper size, each component in its own regime.

At paper size a layer's analysis (:func:`replib.methods.manifolds.analyse_layer`) runs on the
``analysis_sample`` (200,000) tokens of the layer with k-means fitted on ``kmeans_fit`` (200,000) points,
the silhouette on ``sil_sample`` (20,000) of them, S_intra on at most ``max_per_type`` (1,000) instances a
type, and LID queried at ``lid_queries`` (50,000) points against every unique point. Two components, two
cost models:

* **LID's neighbour search** (cosine and Euclidean): ``lid_mle(backend="auto")`` (the analysis does not
  pass a backend) searches with torch on the GPU when the search compares more than
  :data:`~replib.metrics.lid.GPU_SEARCH_MIN_PAIRS` pairs, as at paper size (50,000 x 200,000 = 10¹⁰). Its
  cost is then counted, not timed: a brute-force distance matrix in float32 is ``2 q n d`` floating-point
  operations per metric (``q`` queries, ``n`` index points, the sample's size: an upper bound on the unique
  points, ``d`` the width), on the T4's FP32 peak (``Cost(on_gpu=True, precision="fp32")``); the top-k
  selection and the norms are ``O(q n)``, negligible beside ``d = 768``.
* **Everything else** (k-means for every k with its restarts, the silhouette, S_inter/S_intra raw,
  centred and per cluster, IsoScore, the per-cluster isotropy, and LID's CPU side: the float64 refinement of
  the candidates, duplicates, the estimator) runs on the CPU. It is measured on ``n`` and ``4n`` tokens of
  the spooled sample with every size parameter scaled by ``n / 200,000`` (:func:`scaled_config`), so the
  measured runs are in the paper's regime (k-means on every point, the silhouette on a tenth, LID's queries a
  quarter of the points, S_intra's cap at the same share of the tokens), fitted as ``a n^b`` and
  extrapolated to 200,000 tokens; the search's CPU seconds measured meanwhile (the time inside the neighbour
  search less its float64 refinement) are taken out, since the GPU does that part.

**A third size near the budget.** Two sizes 4x apart, extrapolated 20x, amplify timing noise on a shared
machine (an exponent off by 0.4 is a factor 20^0.4 = 3.3 at paper size), and the true cost mixes linear terms
(k-means, LID's refinement) with quadratic ones (the silhouette, S_intra's pairs) whose share grows with n. So
the rule (:func:`escalates`, applied by the rehearsal, never by hand): when a part's estimate from the two
sizes exceeds :data:`ESCALATE_SHARE` (90 %) of a Colab session (:data:`replib.parts.COLAB_T4`, 3 T4-hours),
its layer analysis is measured again at a third size, :data:`THIRD_SIZE` times the first (``16 n1``: 40,000
tokens), and the exponent and the extrapolation come from the two largest sizes (4x apart, extrapolated 5x
instead of 20x; :func:`add_analysis_size`). Every measured point stays in the cost (``sizes``, ``cpu``).

Both are per layer; a part's cost is the one measured layer (its last) times its number of layers.
The model assumes that k-means' iterations to convergence do not grow with the points (Lloyd's iteration is
linear in them) and that the last layer is representative of the others.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ..methods import manifolds as mf
from ..metrics import lid as lid_module
from ..parts import COLAB_T4
from .core import Cost, cpu_seconds, fit_exponent, timed

__all__ = [
    "ESCALATE_SHARE",
    "THIRD_SIZE",
    "add_analysis_size",
    "analysis_costs",
    "escalates",
    "fit_largest",
    "lid_search_cost",
    "lid_search_flops",
    "scaled_config",
]

#: the size parameters of the analysis scaled with the tokens analysed (:func:`scaled_config`)
SCALED = ("kmeans_fit", "sil_sample", "lid_queries", "max_per_type")
#: LID's metrics in the chapter's analysis
LID_METRICS = ("cosine", "euclidean")
#: a part whose two-size estimate exceeds this share of a Colab session is measured at a third size
ESCALATE_SHARE = 0.9
#: the third size of an escalated part's layer analysis, in multiples of the first (16 n1: 4x the second)
THIRD_SIZE = 16


def escalates(t4_hours: float, limit: float = COLAB_T4.t4_hours, share: float = ESCALATE_SHARE) -> bool:
    """Whether a part estimated at ``t4_hours`` from two sizes is measured at a third: ``t4_hours > share x
    limit`` (2.7 of the session's 3 T4-hours; see the module docstring)."""
    if not (t4_hours >= 0 and limit > 0 and 0 < share <= 1):
        raise ValueError(f"need t4_hours >= 0, limit > 0, 0 < share <= 1; got {t4_hours}, {limit}, {share}")
    return t4_hours > share * limit


def fit_largest(sizes, seconds, full: float) -> tuple[float, float]:
    """``(b, a full^b)``: the exponent of ``t = a n^b`` through the points of the two largest ``sizes`` and its
    extrapolation to ``full`` (the smaller sizes are kept as measurements, not fitted)."""
    if len(sizes) != len(seconds) or len(sizes) < 2:
        raise ValueError(f"need at least two sizes with their seconds; got {list(sizes)}, {list(seconds)}")
    top = np.argsort(np.asarray(sizes, float), kind="stable")[-2:]
    a, b = fit_exponent([sizes[i] for i in top], [seconds[i] for i in top])
    return b, a * float(full) ** b


def scaled_config(cfg, n: int, full: int):
    """The paper configuration (a :class:`~replib.config.ChapterConfig`) with its size parameters
    (:data:`SCALED`) scaled by ``n / full`` (a None, every point, stays None; at least 2 each), for a
    measurement on ``n`` of ``full`` tokens."""
    if not 0 < n <= full:
        raise ValueError(f"need 0 < n <= full; got n={n}, full={full}")
    scaled = {k: max(2, int(round(min(cfg[k], full) * n / full))) for k in SCALED if cfg.get(k) is not None}
    return cfg.replace(**scaled)


def lid_search_flops(n_index: int, n_queries: int, dim: int, n_metrics: int = len(LID_METRICS)) -> float:
    """Floating-point operations of LID's brute-force neighbour searches: ``2 q n d`` per metric (the
    ``q x n`` matrix of dot products; the norms and the top-k are ``O(q n)``)."""
    return 2.0 * n_metrics * float(n_queries) * float(n_index) * float(dim)


def lid_search_cost(cfg, full: int, dim: int, n_layers: int) -> Cost | None:
    """LID's neighbour searches of ``n_layers`` layers of ``full`` tokens as a GPU step in float32, or None when
    ``lid_mle(backend="auto")`` would not put them on the GPU (too few pairs: they stay CPU work)."""
    q = full if cfg.get("lid_queries") is None else min(int(cfg["lid_queries"]), full)
    if full * q <= lid_module.GPU_SEARCH_MIN_PAIRS:
        return None
    cost = Cost(f"LID's neighbour search ({len(LID_METRICS)} metrics, {q:,} queries x {full:,} points x {dim}, fp32)",
                [full], [0.0], [0.0], full * n_layers, on_gpu=True, precision="fp32")  # fmt: skip
    cost.flops_full = lid_search_flops(full, q, dim) * n_layers
    cost.notes.append("counted: 2 q n d per metric per layer, torch on the GPU (lid_mle backend='auto')")
    return cost


@contextlib.contextmanager
def _search_clock():
    """CPU seconds spent in LID's neighbour searches (:func:`replib.metrics.lid._knn_distances`) less their
    float64 refinement (``_refine``, CPU work at paper size too), while the block runs."""
    spent = {"search": 0.0, "refine": 0.0}
    originals = {"search": lid_module._knn_distances, "refine": lid_module._refine}

    def clocked(key):
        def call(*args, **kwargs):
            c0 = cpu_seconds()
            try:
                return originals[key](*args, **kwargs)
            finally:
                spent[key] += cpu_seconds() - c0

        return call

    lid_module._knn_distances, lid_module._refine = clocked("search"), clocked("refine")
    try:
        yield spent
    finally:
        lid_module._knn_distances, lid_module._refine = originals["search"], originals["refine"]


def _measure(X, tokens, cfg, n: int, full: int, on_gpu: bool) -> tuple[float, float, float]:
    """One layer's analysis on the first ``n`` rows with the size parameters scaled (:func:`scaled_config`):
    ``(cpu less the search when the GPU does it, wall, the search's CPU seconds)``."""
    if len(X) < n or len(tokens) < n:
        raise ValueError(f"need {n:,} rows and tokens; got {len(X):,} and {len(tokens):,}")
    small = scaled_config(cfg, n, full)
    with _search_clock() as spent:
        _, c, w = timed(mf.analyse_layer, np.asarray(X[:n]), tokens[:n], small, cfg.seed, lid_metrics=LID_METRICS)
    search = spent["search"] - spent["refine"]
    return c - (search if on_gpu else 0.0), w, search


def _fit(costs: list, full: int, n_layers: int) -> None:
    """Each cost's exponent and paper-size CPU seconds from its two largest sizes (:func:`fit_largest`)."""
    step = costs[0]
    step.exponent, one = fit_largest(step.sizes, step.cpu, full)
    step.cpu_full = one * n_layers
    if len(costs) > 1:
        gpu = costs[1]
        gpu.exponent, one = fit_largest(gpu.sizes, np.maximum(gpu.cpu, 1e-6), full)
        gpu.cpu_full = one * n_layers


def analysis_costs(X, tokens, cfg, n_layers: int, n1: int) -> list[Cost]:
    """The layer analysis of ``n_layers`` layers at paper size (see the module docstring): the CPU step
    measured on ``n1`` and ``4 n1`` rows of ``X`` (one layer), and LID's search as a GPU step when it is one."""
    full = int(cfg["analysis_sample"])
    gpu = lid_search_cost(cfg, full, X.shape[1], n_layers)
    sizes, cpu, wall, search = [n1, 4 * n1], [], [], []
    for n in sizes:
        c, w, s = _measure(X, tokens, cfg, n, full, gpu is not None)
        cpu.append(c)
        wall.append(w)
        search.append(s)
    what = (f"layer analysis on the CPU (k-means x{len(cfg['ks'])} ks x{cfg['n_init']} inits, silhouette, S_*, "
            f"IsoScore{', LID less its search' if gpu is not None else ', LID'}), sizes scaled with the tokens")  # fmt: skip
    step = Cost(what, sizes, cpu, wall, full * n_layers, repeats=n_layers)
    step.notes.append(f"one layer measured on {sizes[0]:,} and {sizes[1]:,} tokens with "
                      f"{', '.join(SCALED)} scaled by n/{full:,}; x{n_layers} layers")  # fmt: skip
    costs = [step]
    if gpu is not None:
        gpu.sizes, gpu.cpu, gpu.wall, gpu.flops_exact = list(sizes), search, [0.0, 0.0], True  # analytic FLOPs
        costs.append(gpu)
    _fit(costs, full, n_layers)
    return costs


def add_analysis_size(costs: list, X, tokens, cfg, n: int, source: str = "") -> list[Cost]:
    """The costs of :func:`analysis_costs` measured at one more size ``n`` (the first ``n`` rows of ``X``, which
    may be longer than the sample the first sizes came from: ``source`` says where its rows come from), every
    point kept, the exponent and extrapolation refitted on the two largest sizes (the escalation rule of the
    module docstring)."""
    step = costs[0]
    full = int(cfg["analysis_sample"])
    n_layers = step.full // full
    if n in step.sizes or not 0 < n <= full:
        raise ValueError(f"need a new size in (0, {full:,}]; got {n:,}, measured {step.sizes}")
    c, w, s = _measure(X, tokens, cfg, n, full, len(costs) > 1)
    step.sizes, step.cpu, step.wall = [*step.sizes, n], [*step.cpu, c], [*step.wall, w]
    if len(costs) > 1:
        gpu = costs[1]
        gpu.sizes, gpu.cpu, gpu.wall = [*gpu.sizes, n], [*gpu.cpu, s], [*gpu.wall, 0.0]
    _fit(costs, full, n_layers)
    two = sorted(step.sizes)[-2:]
    step.notes.append(f"measured again on {n:,} tokens{' (' + source + ')' if source else ''}; exponent and "
                      f"extrapolation from the two largest sizes, {two[0]:,} and {two[1]:,}")  # fmt: skip
    return costs
