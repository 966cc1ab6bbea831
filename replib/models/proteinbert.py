"""A faithful PyTorch port of ProteinBERT {cite}`brandes2022proteinbert` (Keras upstream).

Architecture (``proteinbert/conv_and_global_attention_model.py::create_model`` upstream, read at
``nadavbra/protein_bert@83198c9``): a local track of width 128 and a global track of width 512,
6 blocks. Per block::

    g2s   = gelu(global @ W_g2s + b)                       # (b, 128), broadcast over positions
    nconv = gelu(conv1d(local, k=9, dilation=1, 'same'))
    wconv = gelu(conv1d(local, k=9, dilation=5, 'same'))
    local = LN(local + g2s + nconv + wconv)
    local = LN(local + gelu(local @ W_seq + b))
    d1    = gelu(global @ W_d1 + b)
    att   = GlobalAttention(global, local)                 # 4 heads, d_key 64, d_value 128
    global = LN(global + d1 + att)
    global = LN(global + gelu(global @ W_d2 + b))

LayerNorms use the Keras default ``epsilon = 1e-3``; GELU is exact (erf). The global attention has
one query per head from the global vector, ``Q = tanh(g W_q)``, ``K = tanh(S W_k)``,
``V = gelu(S W_v)``, ``softmax(Q K^T / sqrt(64))`` over **all** positions (no padding mask, as
upstream: the output depends on the padded length ``seq_len``; the book fixes ``seq_len = 512``).

Weights are the official pickle ``(n_annotations, model_weights, optimizer_weights)``;
``model_weights`` is the Keras ``get_weights()`` list (145 arrays) and is assigned **by order**
(same-shape pairs make shape matching ambiguous). Parameters are kept in the Keras layouts.
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import pickle
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .._io import cache_root, sha256_file
from ..data.store import ChecksumError, IncompleteDownloadError, download
from .registry import PROTEINBERT_WEIGHTS as W

ALPHABET = "ACDEFGHIKLMNPQRSTUVWXY"
TOKENS = list(ALPHABET) + ["<OTHER>", "<START>", "<END>", "<PAD>"]
TOKEN_TO_ID = {t: i for i, t in enumerate(TOKENS)}
VOCAB_SIZE = len(TOKENS)  # 26
N_ANNOTATIONS = 8943
DEFAULT_SEQ_LEN = 512
N_WEIGHTS = 145
LN_EPS = 1e-3


def tokenize(seqs, seq_len: int = DEFAULT_SEQ_LEN) -> np.ndarray:
    """Encode protein sequences as upstream: ``<START> seq <END>`` padded with ``<PAD>``.

    Residues outside ``ACDEFGHIKLMNPQRSTUVWXY`` map to ``<OTHER>``; input is upper-cased.

    Parameters
    ----------
    seqs : sequence of str
    seq_len : int
        Fixed padded length. Upstream does not truncate; sequences longer than ``seq_len - 2``
        raise here (filter or truncate them before, and say so).

    Returns
    -------
    numpy.ndarray of int64, shape (n_seqs, seq_len)

    Raises
    ------
    ValueError
        If a sequence is longer than ``seq_len - 2``.
    """
    out = np.full((len(seqs), seq_len), TOKEN_TO_ID["<PAD>"], dtype=np.int64)
    other = TOKEN_TO_ID["<OTHER>"]
    for i, s in enumerate(seqs):
        s = str(s).upper()
        if len(s) > seq_len - 2:
            raise ValueError(f"sequence {i} has {len(s)} residues > seq_len - 2 = {seq_len - 2}")
        ids = [TOKEN_TO_ID["<START>"]] + [TOKEN_TO_ID.get(c, other) for c in s] + [TOKEN_TO_ID["<END>"]]
        out[i, : len(ids)] = ids
    return out


class ProteinBertTokenizer:
    """Minimal tokenizer object so ProteinBERT looks like the other loaded models."""

    def __init__(self, seq_len: int = DEFAULT_SEQ_LEN):
        self.seq_len = int(seq_len)

    def __call__(self, seqs, seq_len: int | None = None) -> np.ndarray:
        return tokenize(seqs, self.seq_len if seq_len is None else seq_len)


def _gelu(x):
    return F.gelu(x, approximate="none")


def _layer_norm(x, gamma, beta):
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps=LN_EPS)


class ProteinBERT(nn.Module):
    """ProteinBERT in PyTorch with parameters in Keras layouts.

    Parameters
    ----------
    n_annotations : int
        Width of the GO-annotation input (8943 for the official weights).
    """

    #: upstream's architecture: track widths, blocks, attention heads and key width, kernel and wide dilation
    d_local, d_global, n_blocks, n_heads, d_key, kernel_size, wide_dilation = 128, 512, 6, 4, 64, 9, 5

    def __init__(self, n_annotations: int = N_ANNOTATIONS):
        super().__init__()
        self.n_annotations, self.vocab_size, self.d_value = n_annotations, VOCAB_SIZE, self.d_global // self.n_heads
        d_local, d_global, n_heads, vocab_size = self.d_local, self.d_global, self.n_heads, VOCAB_SIZE
        P = lambda *shape: nn.Parameter(torch.zeros(*shape))
        self.global_input_kernel = P(n_annotations, d_global)
        self.global_input_bias = P(d_global)
        self.embedding = P(vocab_size, d_local)
        shapes = {  # a block's parameters in Keras order (each block registers them in this order)
            "global_to_seq_kernel": (d_global, d_local),
            "global_to_seq_bias": (d_local,),
            "narrow_conv_kernel": (self.kernel_size, d_local, d_local),
            "narrow_conv_bias": (d_local,),
            "wide_conv_kernel": (self.kernel_size, d_local, d_local),
            "wide_conv_bias": (d_local,),
            "seq_norm1_gamma": (d_local,),
            "seq_norm1_beta": (d_local,),
            "seq_dense_kernel": (d_local, d_local),
            "seq_dense_bias": (d_local,),
            "seq_norm2_gamma": (d_local,),
            "seq_norm2_beta": (d_local,),
            "global_dense1_kernel": (d_global, d_global),
            "global_dense1_bias": (d_global,),
            "Wq": (n_heads, d_global, self.d_key),
            "Wk": (n_heads, d_local, self.d_key),
            "Wv": (n_heads, d_local, self.d_value),
            "global_norm1_gamma": (d_global,),
            "global_norm1_beta": (d_global,),
            "global_dense2_kernel": (d_global, d_global),
            "global_dense2_bias": (d_global,),
            "global_norm2_gamma": (d_global,),
            "global_norm2_beta": (d_global,),
        }
        self.blocks = nn.ModuleList()
        for _ in range(self.n_blocks):
            blk = nn.Module()
            for name, shape in shapes.items():
                setattr(blk, name, P(*shape))
            self.blocks.append(blk)
        self.output_seq_kernel = P(d_local, vocab_size)
        self.output_seq_bias = P(vocab_size)
        self.output_annotations_kernel = P(d_global, n_annotations)
        self.output_annotations_bias = P(n_annotations)

    # ----- weights -----
    def ordered_named_parameters(self) -> list[tuple[str, nn.Parameter]]:
        """Names (``block<i>.<name>`` in the blocks) and parameters in Keras ``get_weights()`` order (145 for the
        default config)."""
        head = ["global_input_kernel", "global_input_bias", "embedding"]
        tail = ["output_seq_kernel", "output_seq_bias", "output_annotations_kernel", "output_annotations_bias"]
        out = [(n, getattr(self, n)) for n in head]
        for i, blk in enumerate(self.blocks):
            out += [(f"block{i + 1}.{n}", p) for n, p in blk.named_parameters()]
        return out + [(n, getattr(self, n)) for n in tail]

    def ordered_parameters(self) -> list[nn.Parameter]:
        """Parameters in Keras ``get_weights()`` order (:meth:`ordered_named_parameters`)."""
        return [p for _, p in self.ordered_named_parameters()]

    def load_keras_weights(self, weights) -> ProteinBERT:
        """Assign a Keras ``get_weights()`` list by order, checking every shape.

        Raises
        ------
        ValueError
            If the number of arrays or any shape differs.
        """
        params = self.ordered_parameters()
        if len(weights) != len(params):
            raise ValueError(f"expected {len(params)} weight arrays, got {len(weights)}")
        with torch.no_grad():
            for i, (p, w) in enumerate(zip(params, weights)):
                w = np.asarray(w)
                if tuple(w.shape) != tuple(p.shape):
                    raise ValueError(f"weight {i}: shape {w.shape} != expected {tuple(p.shape)}")
                p.copy_(torch.from_numpy(np.ascontiguousarray(w, dtype=np.float32)))
        return self

    # ----- forward -----
    def _conv(self, x, kernel, bias, dilation):
        # x (b, L, d) ; Keras kernel (k, in, out) -> torch (out, in, k); 'same' padding, stride 1.
        w = kernel.permute(2, 1, 0)
        y = F.conv1d(x.transpose(1, 2), w, bias, padding="same", dilation=dilation)
        return y.transpose(1, 2)

    def _attention(self, blk, g, s):
        q = torch.tanh(torch.einsum("bd,hdk->bhk", g, blk.Wq))
        k = torch.tanh(torch.einsum("bld,hdk->bhlk", s, blk.Wk))
        v = _gelu(torch.einsum("bld,hdv->bhlv", s, blk.Wv))
        z = torch.softmax(torch.einsum("bhk,bhlk->bhl", q, k) / math.sqrt(self.d_key), dim=-1)
        y = torch.einsum("bhl,bhlv->bhv", z, v)
        return y.reshape(y.shape[0], -1)

    def forward(self, input_ids, annotations=None, *, return_hidden: bool = False):
        """Run the model.

        Parameters
        ----------
        input_ids : LongTensor (batch, seq_len)
            From :func:`tokenize`.
        annotations : Tensor (batch, n_annotations) or None
            GO annotations; ``None`` = all zeros (the embedding recipe).
        return_hidden : bool
            Also return the per-block hidden states.

        Returns
        -------
        dict
            ``local`` (b, L, 128): final ``seq-merge2-norm-block6``; ``global`` (b, 512): final
            ``global-merge2-norm-block6``; ``output_seq`` (b, L, 26) softmax; ``output_annotations``
            (b, n_annotations) sigmoid; with ``return_hidden``: ``local_hidden`` and ``global_hidden``,
            lists of the block outputs (index 0 = the inputs to block 1).
        """
        b = input_ids.shape[0]
        dtype = self.embedding.dtype
        if annotations is None:
            annotations = torch.zeros(b, self.n_annotations, dtype=dtype, device=input_ids.device)
        s = F.embedding(input_ids, self.embedding)
        g = _gelu(annotations.to(dtype) @ self.global_input_kernel + self.global_input_bias)
        local_hidden, global_hidden = [s], [g]
        for blk in self.blocks:
            g2s = _gelu(g @ blk.global_to_seq_kernel + blk.global_to_seq_bias)[:, None, :]
            nconv = _gelu(self._conv(s, blk.narrow_conv_kernel, blk.narrow_conv_bias, 1))
            wconv = _gelu(self._conv(s, blk.wide_conv_kernel, blk.wide_conv_bias, self.wide_dilation))
            s = _layer_norm(s + g2s + nconv + wconv, blk.seq_norm1_gamma, blk.seq_norm1_beta)
            s = _layer_norm(
                s + _gelu(s @ blk.seq_dense_kernel + blk.seq_dense_bias), blk.seq_norm2_gamma, blk.seq_norm2_beta
            )
            d1 = _gelu(g @ blk.global_dense1_kernel + blk.global_dense1_bias)
            att = self._attention(blk, g, s)
            g = _layer_norm(g + d1 + att, blk.global_norm1_gamma, blk.global_norm1_beta)
            g = _layer_norm(
                g + _gelu(g @ blk.global_dense2_kernel + blk.global_dense2_bias),
                blk.global_norm2_gamma,
                blk.global_norm2_beta,
            )
            local_hidden.append(s)
            global_hidden.append(g)
        out = {
            "local": s,
            "global": g,
            "output_seq": torch.softmax(s @ self.output_seq_kernel + self.output_seq_bias, dim=-1),
            "output_annotations": torch.sigmoid(g @ self.output_annotations_kernel + self.output_annotations_bias),
        }
        if return_hidden:
            out["local_hidden"], out["global_hidden"] = local_hidden, global_hidden
        return out


def weights_from_seed(shapes, is_gamma, seed: int = 0) -> list[np.ndarray]:
    """Deterministic random weights from a seed (numpy only, framework independent).

    1-D arrays ~ N(0, 0.1) (+1 for LayerNorm gammas); k-D kernels ~ U(-a, a), ``a = sqrt(3 / fan_in)``
    with ``fan_in = prod(shape[:-1])``. ``tools/make_proteinbert_fixture.py`` uses the same recipe on
    the Keras model, so both frameworks get identical arrays without storing 64 MB of weights.
    """
    rng = np.random.default_rng(seed)
    out = []
    for shape, gamma in zip(shapes, is_gamma):
        if len(shape) == 1:
            w = rng.normal(0.0, 0.1, size=shape) + (1.0 if gamma else 0.0)
        else:
            a = np.sqrt(3.0 / int(np.prod(shape[:-1])))
            w = rng.uniform(-a, a, size=shape)
        out.append(w.astype(np.float32))
    return out


def random_weights(model: ProteinBERT, seed: int = 0) -> list[np.ndarray]:
    """:func:`weights_from_seed` for ``model``'s parameters, in Keras order."""
    named = model.ordered_named_parameters()
    return weights_from_seed([tuple(p.shape) for _, p in named], [n.endswith("gamma") for n, _ in named], seed)


class UntrustedWeightsError(ValueError):
    """A weight pickle whose sha256 is not the registered one and that no caller vouched for."""


#: what a Keras ``get_weights()`` pickle of numpy arrays may reference (numpy 1.x and 2.x module names)
_ALLOWED_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
}


class _ArraysOnlyUnpickler(pickle.Unpickler):
    """Unpickler that resolves only numpy array reconstruction (defence in depth for user-vouched files)."""

    def find_class(self, module, name):
        if (module, name) in _ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"weight pickle references {module}.{name}, which a file of numpy arrays never needs: refused"
        )


def read_verified_pickle(path, sha256: str | None = None):
    """Read a ProteinBERT weight pickle after checking the sha256 **of the bytes that are unpickled**.

    The file is read once into memory, hashed, and unpickled from that buffer, so it cannot change between
    the check and the load.

    Parameters
    ----------
    path : path-like
    sha256 : str, optional
        A checksum the caller vouches for (a copy they verified themselves). Without it the file must have
        the registered sha256 of the official weights (:data:`~replib.models.registry.PROTEINBERT_WEIGHTS`).
        A vouched-for file is read with an unpickler that resolves nothing but numpy arrays.

    Raises
    ------
    UntrustedWeightsError
        The file's sha256 is neither the registered one nor the given one; nothing was unpickled.
    """
    path = Path(path)
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest == W["sha256"] and (sha256 is None or sha256.lower() == digest):
        return pickle.loads(data)
    if sha256 is None:
        raise UntrustedWeightsError(
            f"{path}: sha256 {digest} is not the registered sha256 of the official ProteinBERT weights "
            f"({W['sha256']}, {W['filename']}); a pickle can run arbitrary code, so it was not loaded. If you "
            f"trust this file, pass its checksum explicitly: load_model('proteinbert', local_dir=..., "
            f"sha256='{digest}') or load_proteinbert(path, sha256=...)."
        )
    if sha256.lower() != digest:
        raise UntrustedWeightsError(
            f"{path}: sha256 {digest} differs from the sha256 you gave ({sha256}); the file was not loaded"
        )
    return _ArraysOnlyUnpickler(io.BytesIO(data)).load()


def fetch_weights(cache_dir=None, *, url=None, sha256=None, size=None, timeout: float = 60.0) -> Path:
    """Download (once) and verify the official ProteinBERT weight pickle.

    Parameters
    ----------
    cache_dir : path-like, optional
        Defaults to ``$REPLIB_CACHE_DIR/proteinbert`` (``~/.cache/replib/proteinbert``).
    url, sha256, size : optional
        Defaults from :data:`replib.models.registry.PROTEINBERT_WEIGHTS`.
    timeout : float
        Seconds for the connection and for each read (a server that never answers raises
        :class:`replib.data.store.DownloadTimeoutError`).

    Returns
    -------
    pathlib.Path
        Path of the verified pickle.

    Raises
    ------
    ValueError
        On a size or sha256 mismatch (nothing is left at the final path).
    """
    url, sha256, size = url or W["url"], sha256 or W["sha256"], size or W["size"]
    root = Path(cache_dir) / "proteinbert" if cache_dir else cache_root("proteinbert")
    root.mkdir(parents=True, exist_ok=True)
    path = root / W["filename"]
    if not path.exists():
        if os.environ.get("HF_HUB_OFFLINE") == "1" or os.environ.get("REPLIB_OFFLINE") == "1":
            raise ValueError(f"ProteinBERT weights not at {path} and offline mode is on")
        try:
            download(url, path, sha256, size=size, timeout=timeout)  # atomic, sha256-verified, timed out
        except (ChecksumError, IncompleteDownloadError) as exc:
            raise ValueError(f"ProteinBERT weights failed verification: {exc}") from exc
    if path.stat().st_size != size or sha256_file(path) != sha256:
        bad = path.with_suffix(".bad")
        os.replace(path, bad)
        raise ValueError(f"ProteinBERT weights failed verification (size/sha256); moved to {bad}")
    return path


def load_proteinbert(path=None, *, cache_dir=None, sha256: str | None = None) -> ProteinBERT:
    """Build :class:`ProteinBERT` and load the official pickle (downloaded and verified if needed).

    The pickle holds ``(n_annotations, model_weights, optimizer_weights)``. Whatever the route, the sha256 of
    the bytes is checked before they are unpickled (:func:`read_verified_pickle`): the registered checksum,
    or ``sha256`` for a copy the caller vouches for.

    Raises
    ------
    UntrustedWeightsError
        ``path`` has neither the registered sha256 nor ``sha256``.
    """
    if path is None:
        path = fetch_weights(cache_dir)
    n_annotations, model_weights, _opt = read_verified_pickle(path, sha256)
    model = ProteinBERT(n_annotations=int(n_annotations))
    return model.load_keras_weights(model_weights).eval()
