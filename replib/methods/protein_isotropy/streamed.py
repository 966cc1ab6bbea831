"""The protein chapter's embeddings at Swiss-Prot size without holding them.

In the ``paper`` profile (``cfg.stream``) every model's mean-pooled vectors are streamed
(:func:`replib.methods.streaming.stream_layers`) into one accumulator per layer (:func:`protein_layers`); only
the rows of the pair proteins (the head of the seeded permutation) are kept. A model cut into shard ranges (a
part per range, :mod:`replib.parts`) streams each range into its own state; the chapter's ``rest`` merges them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..._io import hash_inputs
from ...embeddings import embed_proteins, model_identity
from ..streaming import StreamedLayers, merge_streams, stream_layers

__all__ = ["protein_layers", "stream_protein_model"]


def protein_layers(lm) -> list:
    """The layers streamed for a protein model: every hidden state of an ESM-2 model (0 = embedding output),
    ProteinBERT's ``"global"`` output, the last hidden state (-1) of the others; the last one is the table's."""
    if lm.spec.recipe == "proteinbert":
        return ["global"]
    if lm.spec.recipe == "esm":
        return list(range(lm.spec.n_layers + 1))
    return [-1]


def stream_protein_model(
    lm,
    seqs: Sequence[str],
    *,
    n_keep: int,
    max_length: int,
    state_dir=None,
    ranges: int = 1,
    shards: tuple[int, int] | None = None,
    shard_size: int = 256,
    compute: Callable[[int, int], dict] | None = None,
    info: dict | None = None,
    progress: bool = True,
) -> StreamedLayers:
    """Stream one model's pooled vectors of ``seqs`` (:func:`protein_layers`), keeping the first ``n_keep``
    proteins' rows of the last layer.

    Parameters
    ----------
    ranges : int
        The stream is cut into this many shard ranges (the chapter's parts of a model too large for one
        session); the whole stream is their merge (:func:`~replib.methods.streaming.merge_streams`).
    shards : (k, n), optional
        Only range k of n (a part): its state is written, and its partial result returned.
    compute, info : optional
        Another source of vectors (the rehearsal's) and what determines it; default the model's forward
        passes (the mean-pooled vectors of :func:`replib.embeddings.embed_proteins`, no cache: the stream's state
        is the checkpoint), keyed by the model's identity and the sequences.
    """
    layers = protein_layers(lm)
    if compute is None:
        hidden = tuple(layer for layer in layers if layer != "global") or (-1,)

        def compute(a: int, b: int) -> dict:
            emb = embed_proteins(lm, list(seqs[a:b]), layers=hidden, max_length=max_length, progress=False)
            return {layer: emb.pooled[layer] for layer in layers}

        info = dict(model_identity(lm), fn="embed_proteins/mean", max_length=max_length, inputs=hash_inputs(seqs))
    elif info is None:
        raise ValueError("a compute of your own needs info= (what determines its output)")
    kw = dict(
        layers=layers,
        info=info,
        keep=range(min(n_keep, len(seqs))),
        keep_layers=[layers[-1]],
        state_dir=state_dir,
        desc=f"stream {lm.name}",
        progress=progress,
    )
    if shards is not None:
        return stream_layers(len(seqs), shard_size, compute, shards=shards, **kw)
    if ranges == 1:
        return stream_layers(len(seqs), shard_size, compute, **kw)
    return merge_streams(stream_layers(len(seqs), shard_size, compute, shards=(k, ranges), **kw) for k in range(ranges))
