"""Evaluation on classification (Table 3 of :cite:`rajaee2021cluster`): flattened last-layer token matrix,
the authors' MLP, a fresh classifier for every condition."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.metrics import accuracy_score, matthews_corrcoef

from ..._io import hash_inputs, run_sharded
from ...embeddings.batching import _autocast, forward_precision, model_identity


# ----------------------------------------------------------------------------------------- classification
def pair_token_features(
    model,
    texts_a,
    texts_b=None,
    *,
    max_length: int = 64,
    batch_size: int = 32,
    cache_dir=None,
    shard_size: int = 512,
    progress: bool = True,
):
    """Last-layer token matrices padded to ``max_length``, as the authors' classification notebook.

    Each example (a sentence or a sentence pair) is tokenised with special tokens, truncated and padded to
    ``max_length``; the last hidden layer gives a ``(max_length, d)`` matrix per example **including**
    ``[CLS]``/``[SEP]``/padding rows (the notebook clusters all of them). The forward runs in the model's
    precision (:func:`replib.embeddings.batching.forward_precision`; part of the cache key).

    Parameters
    ----------
    cache_dir : path-like, optional
        Shard cache folder (:func:`replib._io.run_sharded`): ``shard_size`` examples per verified file, keyed
        by the model's identity, the texts and the settings; a rerun reads the shards instead of running
        the model, and an interrupted run resumes.

    Returns
    -------
    ndarray (n_examples, max_length, d) float32
    """
    tok = model.tokenizer
    texts_a = [str(t) for t in texts_a]
    texts_b = None if texts_b is None else [str(t) for t in texts_b]
    if texts_b is not None and len(texts_b) != len(texts_a):
        raise ValueError(f"{len(texts_a)} first texts but {len(texts_b)} second texts")
    if tok.pad_token is None:  # GPT-2 has no pad token: pad with EOS (rows are kept, masked in attention)
        tok.pad_token = tok.eos_token
    info = dict(
        model_identity(model),
        fn="pair_token_features",
        max_length=int(max_length),
        batch_size=int(batch_size),
        pad_token=str(tok.pad_token),
        inputs_a=hash_inputs(texts_a),
        inputs_b=None if texts_b is None else hash_inputs(texts_b),
    )

    def compute(start, stop):
        out = np.zeros((stop - start, max_length, model.spec.hidden_size), np.float32)
        for s in range(start, stop, batch_size):
            e = min(s + batch_size, stop)
            b = None if texts_b is None else texts_b[s:e]
            enc = tok(
                texts_a[s:e], b, truncation=True, max_length=max_length, padding="max_length", return_tensors="pt"
            )
            enc = {
                k: v.to(model.device) for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")
            }
            with torch.inference_mode(), _autocast(model.device, forward_precision(model)):
                h = model.model(**enc).last_hidden_state
            out[s - start : e - start] = h.float().cpu().numpy()
        return {"features": out}

    shards = run_sharded(
        len(texts_a), shard_size, compute, info=info, cache_dir=cache_dir, desc="features", progress=progress
    )
    if not shards:
        return np.zeros((0, max_length, model.spec.hidden_size), np.float32)
    return np.concatenate([sh["features"] for sh in shards])


class MLPClassifier:
    """The authors' classifier: flatten -> Dense(hidden, ReLU) -> Dense(1, sigmoid), binary cross-entropy."""

    def __init__(self, n_features: int, hidden: int = 100, seed: int = 0):
        g = torch.Generator().manual_seed(seed)
        self.net = torch.nn.Sequential(torch.nn.Linear(n_features, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))
        with torch.no_grad():  # seeded init independent of the global torch RNG
            for p in self.net.parameters():
                bound = 1.0 / np.sqrt(p.shape[-1] if p.ndim > 1 else n_features)
                p.uniform_(-bound, bound, generator=g)

    def state(self):
        return {k: v.detach().clone() for k, v in self.net.state_dict().items()}

    def predict(self, X):
        with torch.no_grad():
            return (self.net(torch.as_tensor(X, dtype=torch.float32)).squeeze(1) > 0).numpy().astype(int)


def classification_metric(task: str, y_true, y_pred) -> float:
    """Accuracy x 100, or Matthews correlation x 100 for CoLA (the paper's Table 3)."""
    if task == "CoLA":
        return 100.0 * matthews_corrcoef(y_true, y_pred)
    return 100.0 * accuracy_score(y_true, y_pred)


def train_classifier(
    clf: MLPClassifier,
    Xtr,
    ytr,
    Xval,
    yval,
    *,
    task: str,
    epochs: int = 10,
    lr: float = 3e-5,
    batch_size: int = 32,
    seed: int = 0,
) -> None:
    """Adam + BCE for ``epochs``; ``clf`` keeps the weights of the epoch with the best validation metric."""
    torch_g = torch.Generator().manual_seed(seed)
    X = torch.as_tensor(Xtr, dtype=torch.float32)
    y = torch.as_tensor(ytr, dtype=torch.float32)
    # foreach: one multi-tensor pass per step (bit-identical to the per-tensor loop, which CPU tensors get by default)
    opt = torch.optim.Adam(clf.net.parameters(), lr=lr, foreach=True)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    best, best_state = -np.inf, clf.state()
    for _ in range(epochs):
        clf.net.train()
        perm = torch.randperm(len(X), generator=torch_g)
        for s in range(0, len(X), batch_size):
            idx = perm[s : s + batch_size]
            opt.zero_grad()
            loss_fn(clf.net(X[idx]).squeeze(1), y[idx]).backward()
            opt.step()
        clf.net.eval()
        m = classification_metric(task, yval, clf.predict(Xval))
        if m > best:
            best, best_state = m, clf.state()
    clf.net.load_state_dict(best_state)


def compare_classification(feats, labels, splits, task: str, transforms: dict, *, epochs=10, lr=3e-5, seed=0):
    """Train one classifier per condition on (optionally post-processed) flattened token features.

    Parameters
    ----------
    feats : ndarray (n, L, d)
        Token matrices of all examples (train, val and eval together).
    labels : ndarray of int (n,)
    splits : dict with index arrays ``train``, ``val``, ``eval``
    transforms : dict name -> transform or None
        Each transform is fit on **all** token rows of all examples jointly (padding included), as the
        authors did on train+dev, then reshaped back to ``(n, L, d)``.

    Every condition gets a **new** classifier with the same seeded initial weights (the authors' notebook
    continued training the baseline's classifier for the post-processed features: a bug fixed here).

    Returns
    -------
    metrics : dict name -> the metric on the evaluation split
    fresh_init : bool
        Whether every classifier started from the same weights.
    """
    n, L, d = feats.shape
    flat_rows = feats.reshape(n * L, d).astype(np.float64)
    metrics, inits = {}, []
    for name, tr in transforms.items():
        rows = flat_rows if tr is None else tr.fit_transform(flat_rows)
        X = rows.reshape(n, L * d).astype(np.float32)
        clf = MLPClassifier(L * d, seed=seed)
        inits.append(clf.state())
        fit, val = splits["train"], splits["val"]
        train_classifier(clf, X[fit], labels[fit], X[val], labels[val], task=task, epochs=epochs, lr=lr, seed=seed)
        metrics[name] = classification_metric(task, labels[splits["eval"]], clf.predict(X[splits["eval"]]))
    fresh = all(all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a) for a, b in zip(inits, inits[1:]))
    return metrics, bool(fresh)
