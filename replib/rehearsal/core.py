"""What every rehearsed part measures: costs at two sizes with the fitted exponent, floating-point work, the
vectors that feed the statistics at full size, and the T4 estimate (issue 26, items 3 and 4).

Times are taken twice: wall-clock seconds (``time.perf_counter``) and the process' CPU seconds
(``time.process_time``, every thread of the process). The machine the rehearsal ran on is shared, so the CPU
seconds, which do not grow when other processes take the cores, are what the extrapolations use.
"""

from __future__ import annotations

import math
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import psutil
import torch
from torch.utils import flop_counter as _fc
from torch.utils.flop_counter import FlopCounterMode

from ..embeddings.batching import length_batches

__all__ = [
    "ATTENTION_FLOPS",
    "COLAB_CPU_PER_CORE_HERE",
    "Cost",
    "L4_FP16_TFLOPS",
    "L4_FP32_TFLOPS",
    "MIN_MEASURED",
    "T4_EFFICIENCY",
    "T4_FP16_TFLOPS",
    "T4_FP32_EFFICIENCY",
    "T4_FP32_TFLOPS",
    "count_flops",
    "cpu_seconds",
    "feeder",
    "fit_exponent",
    "four_times",
    "length_flops",
    "model_length_flops",
    "padded_flops",
    "scaled_cost",
    "sentence_flops",
    "stats_items",
    "timed",
]

#: NVIDIA T4 datasheet: 65 TFLOP/s mixed precision (FP16 tensor cores, FP32 accumulate), 8.1 TFLOP/s FP32
T4_FP16_TFLOPS = 65.0
T4_FP32_TFLOPS = 8.1
#: NVIDIA L4 datasheet: 121 TFLOP/s FP16 tensor (dense; 242 with sparsity), 30.3 TFLOP/s FP32. The estimate
#: takes the same shares of these peaks as of the T4's (:data:`T4_EFFICIENCY`, :data:`T4_FP32_EFFICIENCY`): an
#: assumption, the L4's 300 GB/s memory bandwidth being no higher than the T4's 320 GB/s
L4_FP16_TFLOPS = 121.0
L4_FP32_TFLOPS = 30.3
#: share of the FP16 tensor peak a Hugging Face encoder reaches on a T4 in eager PyTorch with autocast (the
#: chapters' forward passes on CUDA): the card's 70 W cap holds its clocks below the 1.59 GHz boost under
#: sustained tensor load, and softmax, layer norms, GELU and the padding are memory-bound kernels on its
#: 320 GB/s; 25 % (16 TFLOP/s) is the estimate's value
T4_EFFICIENCY = 0.25
#: share of the FP32 peak of the training loops (the book trains in float32, no autocast): SGEMM runs close to
#: the 8.1 TFLOP/s on large matrices, the 320-768-wide layers, the optimizer and the memory-bound kernels
#: bring a step to about half
T4_FP32_EFFICIENCY = 0.5
#: Colab's T4 runtime has 2 vCPUs (one physical core, two hyperthreads): its CPU work (alignments, k-means,
#: accumulators) is taken to run at one core of this machine per second
COLAB_CPU_PER_CORE_HERE = 1.0


#: the sentence extractor's padded tokens per batch on a GPU and its shards (the batches the chapter forms there)
SENTENCE_BATCH_TOKENS, SENTENCE_SHARD = 8192, 2048
#: the smallest share of a step's items measured here (its estimate extrapolates at most 1 / this)
MIN_MEASURED = 0.1


def cpu_seconds() -> float:
    """CPU seconds used so far by this process (every thread), its live child processes (joblib's workers)
    and its finished children."""
    me = psutil.Process()
    total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:2])
        except psutil.Error:  # ended meanwhile: counted below once reaped
            pass
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return total + ru.ru_utime + ru.ru_stime


def timed(fn: Callable, *args, **kwargs):
    """``(result, cpu_seconds, wall_seconds)`` of one call (CPU: :func:`cpu_seconds`, child processes too)."""
    c0, w0 = cpu_seconds(), time.perf_counter()
    out = fn(*args, **kwargs)
    return out, cpu_seconds() - c0, time.perf_counter() - w0


def fit_exponent(sizes: Sequence[float], seconds: Sequence[float]) -> tuple[float, float]:
    """``(a, b)`` of ``t = a · n^b`` fitted by least squares in log-log (two sizes: through both points)."""
    x, y = np.log(np.asarray(sizes, float)), np.log(np.maximum(np.asarray(seconds, float), 1e-9))
    if len(x) < 2 or np.ptp(x) == 0:
        raise ValueError("need two different sizes to fit an exponent")
    b, log_a = np.polyfit(x, y, 1)
    return float(math.exp(log_a)), float(b)


@dataclass
class Cost:
    """One step's cost: measured at ``sizes`` (items), extrapolated to ``full`` items.

    Attributes
    ----------
    what : str
    sizes : list of int
    cpu, wall : list of float
        Seconds at each size (CPU of this process; wall clock).
    full : int
        The paper's number of items.
    exponent : float
        ``b`` of ``cpu = a · n^b`` (1.0 when measured at full size).
    cpu_full : float
        CPU seconds at ``full`` items (measured when ``sizes[-1] == full``, else extrapolated).
    flops_full : float or None
        Floating-point operations at ``full`` items (counted on a sample, scaled by items).
    on_gpu : bool
        Whether the paper profile runs this step on the GPU (forward passes) or on the CPU.
    precision : {"fp16", "fp32"}
        How a GPU step runs there: forward passes under autocast (FP16 tensor cores), training in float32.
    """

    what: str
    sizes: list
    cpu: list
    wall: list
    full: int
    exponent: float = 1.0
    cpu_full: float = 0.0
    flops_full: float | None = None
    on_gpu: bool = False
    notes: list = field(default_factory=list)
    precision: str = "fp16"
    flops_exact: bool = False
    repeats: int = 1

    @property
    def t4_seconds(self) -> float:
        """Seconds of a T4 at the paper's size: FLOPs over the peak of :attr:`precision` times its assumed
        efficiency (GPU steps), or the CPU seconds here at one core a second (CPU steps)."""
        return self.card_seconds("t4")

    @property
    def l4_seconds(self) -> float:
        """The same on an L4 (its peaks, the T4's efficiencies; CPU steps as on the T4's runtime)."""
        return self.card_seconds("l4")

    def card_seconds(self, card: str) -> float:
        if not self.on_gpu:
            return self.cpu_full / COLAB_CPU_PER_CORE_HERE
        fp16, fp32 = {"t4": (T4_FP16_TFLOPS, T4_FP32_TFLOPS), "l4": (L4_FP16_TFLOPS, L4_FP32_TFLOPS)}[card]
        peak, eff = (fp32, T4_FP32_EFFICIENCY) if self.precision == "fp32" else (fp16, T4_EFFICIENCY)
        return (self.flops_full or 0.0) / (peak * 1e12 * eff)

    @property
    def extrapolation(self) -> float:
        """The paper's items over the largest measured size (1.0: measured at full size), per repeat: ``full``
        may count :attr:`repeats` identical pieces of work (layers of one shape, checkpoints), each the measured
        one. A GPU step whose FLOPs were counted over every batch of the paper's items (:func:`padded_flops`, or
        batches of one shape) is not extrapolated: 1.0."""
        if self.flops_exact and self.on_gpu:
            return 1.0
        if not (self.full and self.sizes and self.sizes[-1]):
            return 1.0
        return max(1.0, self.full / (self.repeats * self.sizes[-1]))

    @property
    def measured_fraction(self) -> float:
        """The largest measured size over the paper's (1.0: measured at full size)."""
        return min(1.0, self.sizes[-1] / self.full) if self.full else 1.0

    def as_dict(self) -> dict:
        return dict(asdict(self), measured_fraction=self.measured_fraction, extrapolation=self.extrapolation)

    @classmethod
    def from_dict(cls, d: dict) -> Cost:
        """A cost back from :meth:`as_dict` (a stored part result)."""
        names = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in names})


def scaled_cost(
    what: str, run: Callable[[int], object], sizes: Sequence[int], full: int, units: Callable[[int], int] | None = None,
    **kw,
) -> tuple[Cost, list]:  # fmt: skip
    """Run ``run(n)`` at each of ``sizes`` (at least 4x apart for an exponent), fit ``cpu = a n^b`` and
    extrapolate to ``full`` (a size equal to ``full`` is the measurement itself).

    ``units(n)``, when given, is the work of the first ``n`` items in a finer unit (residues, tokens: items of
    unequal length), and the fit and ``full`` are in that unit.

    Returns
    -------
    Cost, and the results of ``run`` at each size
    """
    sizes = sorted(int(n) for n in sizes)
    outs, cpu, wall = [], [], []
    for n in sizes:
        out, c, w = timed(run, n)
        outs.append(out)
        cpu.append(c)
        wall.append(w)
    x = [int(units(n)) for n in sizes] if units is not None else sizes
    cost = Cost(what, x, cpu, wall, int(full), **kw)
    if x[-1] >= full:
        cost.cpu_full = cpu[-1]
    else:
        a, b = fit_exponent(x, cpu)
        cost.exponent, cost.cpu_full = b, a * float(full) ** b
    return cost, outs


def four_times(units: Callable[[int], int], n1: int, n_max: int) -> int:
    """The smallest item count whose work (``units``) is at least four times that of the first ``n1`` items
    (at most ``n_max``)."""
    target, n = 4 * units(n1), 4 * n1
    while n > n1 + 1 and units(n - 1) >= target:
        n -= 1
    while units(n) < target and n < n_max:
        n += 1
    return n


def stats_items(full: int, flops_per_item: float, budget: float, cap: int | None = None) -> int:
    """How many of ``full`` items the streamed statistics take here: all of them when their accumulator work
    (``flops_per_item``: rows x layers x 2 d² for a covariance) fits ``budget`` floating-point operations,
    else as many as fit, but at least :data:`MIN_MEASURED` of them (an estimate extrapolates at most 10x), at
    most ``cap``."""
    n = full if flops_per_item * full <= budget else int(budget // max(flops_per_item, 1.0))
    n = min(full, max(n, 1, math.ceil(MIN_MEASURED * full)))
    return min(n, cap) if cap is not None else n


def _cpu_sdpa(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    return _fc.sdpa_flop_count(query_shape, key_shape, value_shape)


def _cpu_sdpa_backward(grad_out_shape, query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    return _fc.sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


#: ``FlopCounterMode`` has formulas for the CUDA kernels of ``scaled_dot_product_attention`` but none for the CPU
#: one, so attention counted 0 FLOPs here (a tiny BERT: 3.22 GFLOP instead of 4.29): the CPU kernel and its
#: backward counted as torch counts the CUDA ones (the two batched products QKᵀ and AV, 4·b·h·s²·d_head)
ATTENTION_FLOPS = {
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _cpu_sdpa,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward: _cpu_sdpa_backward,
}


def count_flops(fn: Callable, *args, **kwargs) -> float:
    """Floating-point operations of one call, counted by ``torch.utils.flop_counter.FlopCounterMode`` (matrix
    products and attention, the CPU attention kernel included: :data:`ATTENTION_FLOPS`)."""
    with FlopCounterMode(display=False, custom_mapping=ATTENTION_FLOPS) as counter:
        fn(*args, **kwargs)
    return float(counter.get_total_flops())


def length_flops(count: Callable[[int], float], lengths: Sequence[int] = (64, 128, 256)) -> Callable[[int], float]:
    """FLOPs of one sequence as a function of its padded length ``L``: ``count(L)`` (the FLOPs of one sequence
    of ``L`` tokens, :func:`count_flops`) at three lengths, through which the quadratic ``a + b·L + c·L²``
    passes (a Transformer's products are linear in ``L``, its attention quadratic: exact, not a fit)."""
    x = np.asarray(lengths, float)
    if len(set(lengths)) != 3:
        raise ValueError(f"need three different lengths, got {list(lengths)}")
    coef = np.polyfit(x, [count(int(n)) for n in lengths], 2)
    return lambda n: float(np.polyval(coef, float(n)))


def model_length_flops(lm) -> Callable[[int], float]:
    """:func:`length_flops` of a ``transformers`` model's forward pass (``lm.model``, every hidden state) on one
    sequence of ``L`` ordinary tokens: the cost of a sequence padded to ``L`` does not depend on its tokens or
    weights, so it is counted on a copy of the architecture on the ``meta`` device (shapes only, no arithmetic;
    no attention mask, which costs what an all-ones mask costs), or on the model itself where the architecture
    does not run on ``meta``."""
    import torch

    def one(model, n: int) -> None:
        device = next(model.parameters()).device
        ids = torch.full((1, n), 5, dtype=torch.long, device=device)
        with torch.no_grad():
            model(input_ids=ids, output_hidden_states=True)

    try:
        with torch.device("meta"):
            shape = type(lm.model)(lm.model.config).eval()
        count_flops(one, shape, 8)
    except Exception:  # an architecture with data-dependent steps: the real model
        shape = lm.model
    return length_flops(lambda n: count_flops(one, shape, n))


def sentence_flops(lm, texts) -> float:
    """FLOPs of the sentence extractor's forward passes over ``texts`` on a GPU, counted batch by batch (its
    batches of :data:`SENTENCE_BATCH_TOKENS` padded tokens in shards of :data:`SENTENCE_SHARD`, padding included:
    :func:`~replib.rehearsal.core.padded_flops`)."""
    lengths = [len(ids) for ids in lm.tokenizer(list(texts), truncation=True, max_length=512)["input_ids"]]
    return padded_flops(model_length_flops(lm), lengths, SENTENCE_BATCH_TOKENS, shard_size=SENTENCE_SHARD)


def padded_flops(
    per_sequence: Callable[[int], float], lengths, batch_tokens: int, *, shard_size: int | None = None,
    max_batch: int = 256,
) -> float:  # fmt: skip
    """FLOPs of the forward passes over the batches the chapter forms: ``lengths`` (tokens, in the chapter's
    order) cut into shards of ``shard_size`` (one shard when ``None``), each shard into length-sorted batches
    of at most ``batch_tokens`` padded tokens (:func:`replib.embeddings.batching.length_batches`); a batch of
    ``n`` sequences padded to ``L`` costs ``n · per_sequence(L)`` (its padding included)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    step = shard_size or max(len(lengths), 1)
    total = 0.0
    for s in range(0, len(lengths), step):
        part = lengths[s : s + step]
        for b in length_batches(part, batch_tokens, max_batch):
            total += len(b) * per_sequence(int(part[b].max()))
    return total


def feeder(basis: dict, seed: int, *, rows_per_item: int = 1, noise: float = 0.05) -> Callable[[int, int], dict]:
    """``compute(a, b)`` of full-width stand-in vectors for the statistics at paper size: for each layer, rows
    of ``basis[layer]`` (the stand-in model's real outputs at the measured size) drawn with replacement, plus
    Gaussian noise of ``noise`` times each coordinate's spread, ``rows_per_item`` rows per item; seeded by
    ``(seed, a)``, so a shard always gets the same rows (a resumed stream equals an uninterrupted one)."""
    basis = {k: np.asarray(v, np.float32) for k, v in basis.items()}
    spread = {k: v.std(axis=0).astype(np.float32) * noise for k, v in basis.items()}

    def compute(a: int, b: int) -> dict:
        rng = np.random.default_rng([seed, a])
        n = (b - a) * rows_per_item
        out = {}
        for k, B in basis.items():
            idx = rng.integers(0, len(B), n)
            out[k] = B[idx] + rng.standard_normal((n, B.shape[1]), dtype=np.float32) * spread[k]
        return out

    return compute
