"""One type for "a model the user names": :class:`ModelRef`, the value of every chapter's ``models`` parameter,
of ``--model`` on the command line, of the card's model and of every model of the isotropy atlas.

A spec is parsed once, at the edge (:meth:`ModelRef.parse`): a registry key or alias, ``tiny-<family>``, a
folder or a word-vector file (made absolute there, so a relative ``./x`` means the same wherever it is used
later), a Hugging Face id ``org/name[@revision]``, the packaged GloVe vectors ``glove``, a full-size
architecture with random weights ``random:<architecture>`` or a model the training chapter trains
``trained:<task>``. ``str(ref)`` is the normalised spec, which parses back to the same reference, so it can
travel as a plain string (papermill parameters, JSON reports).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import ModelUnavailableError
from .files import st_transformer_dir
from .registry import RANDOM_ARCHITECTURES, REGISTRY, TINY_FAMILIES, TRAINED_TASKS, get_spec
from .static import static_layout

__all__ = ["SHORT_NAMES", "ModelRef", "model_refs", "slugify"]

#: the specs of a prefix and a name from a fixed list: ``random:<architecture>``, ``trained:<task>``
_NAMED = {"random": RANDOM_ARCHITECTURES, "trained": TRAINED_TASKS}
#: short names of the registry models used in record keys (any other model: :func:`slugify` of its name)
SHORT_NAMES = {
    "gpt2": "gpt2",
    "bert-base-uncased": "bert",
    "roberta-base": "roberta",
    "all-MiniLM-L6-v2": "minilm",
    "tiny-bert": "tinybert",
    "tiny-gpt2": "tinygpt2",
    "distilbert-base-uncased": "distilbert",
    "openai-gpt": "gpt",
    "all-mpnet-base-v2": "mpnet",
    "all-distilroberta-v1": "distilroberta",
}
#: suffixes of word-vector files (a missing path with one of them is reported as a missing file)
STATIC_SUFFIXES = (".txt", ".vec", ".bin", ".gz", ".w2v")
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")
#: hex digits of the absolute path's sha256 in the slug of a folder or file
_PATH_HASH_LEN = 6


def slugify(name: str) -> str:
    """``name`` lower-cased and reduced to ``[a-z0-9_]`` (runs of other characters become one ``_``)."""
    return re.sub(r"[^a-z0-9]+", "_", str(name).lower()).strip("_") or "model"


def _path_slug(path: Path, name: str) -> str:
    """``<name>_<6 hex of sha256(absolute path)>``: two folders of the same name never share a slug."""
    digest = hashlib.sha256(str(path).encode("utf-8")).hexdigest()[:_PATH_HASH_LEN]
    return f"{slugify(name)}_{digest}"


@dataclass(frozen=True)
class ModelRef:
    """A parsed model spec (no weights loaded).

    Attributes
    ----------
    spec : str
        The normalised spec: the registry key (an alias becomes its key), ``tiny-<family>``, the absolute
        path of a folder or file, or ``org/name[@revision]``. ``ModelRef.parse(ref.spec) == ref``.
    kind : {"registry", "tiny", "hub", "folder", "static", "glove", "random", "trained"}
        ``glove``: the packaged GloVe 6B 50d vectors; ``random``: a full-size architecture with seeded random
        weights (:func:`replib.models.fullsize.random_architecture`); ``trained``: a model the training
        chapter trains (read from its cache by :mod:`replib.atlas`).
    name : str
        Display name: registry key, ``tiny-<family>``, Hub id, folder name, file name without suffix, or the
        spec itself (``glove``, ``random:gpt2``, ``trained:text``).
    slug : str
        Short ``[a-z0-9_]`` name for record keys, cache folders and output folders: the book's short names
        for registry models (``minilm``, ``bert``...); a folder's or file's name plus 6 hex digits of its
        absolute path's sha256 (``my_encoder_3fa2c1``); a Hub id with its organisation and, when given, its
        revision (``org_name``, ``org_name_abc1234``).
    revision : str or None
        The Hub revision asked for (``org/name@revision``; ``main`` when none is), the registry's revision for a
        registry model, None otherwise.
    """

    spec: str
    kind: str
    name: str
    slug: str
    revision: str | None = None

    def __str__(self) -> str:
        return self.spec

    @property
    def path(self) -> Path | None:
        """The absolute path of a folder or file, None for other kinds."""
        return Path(self.spec) if self.kind in ("folder", "static") else None

    @property
    def location(self) -> str:
        """Where the model is: the absolute path of a folder or file, else its name (registry key, Hub id...)."""
        return self.spec if self.path is not None else self.name

    @property
    def layout(self) -> str | None:
        """A folder's ``transformers`` or ``sentence-transformers`` layout, a word-vector file's ``glove``,
        ``word2vec`` or ``word2vec-binary``; None for other kinds (nothing read for them)."""
        if self.kind == "static":
            return static_layout(self.path)
        if self.kind == "folder":
            return "sentence-transformers" if (self.path / "modules.json").exists() else "transformers"
        return None

    @property
    def transformer_dir(self) -> Path | None:
        """A folder's ``config.json`` and weights (a sentence-transformers model's Transformer module may sit
        in a sub-folder); None for other kinds."""
        if self.kind != "folder":
            return None
        return st_transformer_dir(self.path) if self.layout == "sentence-transformers" else self.path

    @classmethod
    def parse(cls, spec, base_dir=None) -> ModelRef:
        """Classify and normalise a model spec.

        Parameters
        ----------
        spec : str, path-like or ModelRef
            ``tiny-<family>``, ``glove``, ``random:<architecture>``, ``trained:<task>``, a registry key or alias,
            a folder or file (absolute, relative, or ``~/...``), or a Hugging Face id ``org/name[@revision]``. A
            ModelRef is returned unchanged.
        base_dir : path-like, optional
            Folder a relative path is taken from (default: the current directory).

        Returns
        -------
        ModelRef

        Raises
        ------
        ModelUnavailableError
            An empty spec, an unknown ``tiny-`` family, architecture or task, a path that does not exist, a folder that is no model,
            or a string that is neither a registry key, a path nor a Hub id.
        """
        if isinstance(spec, ModelRef):
            return spec
        if not isinstance(spec, (str, os.PathLike)):
            raise ModelUnavailableError(f"a model spec is a string or a path; got {spec!r}")
        s = str(spec).strip()
        if not s:
            raise ModelUnavailableError("empty model spec: give a registry key, a folder, or a Hugging Face id")
        if s.startswith("tiny-"):
            if s[len("tiny-") :] not in TINY_FAMILIES:
                raise ModelUnavailableError(f"unknown tiny model {s!r}; choose from tiny-{{{','.join(TINY_FAMILIES)}}}")
            return cls(s, "tiny", s, SHORT_NAMES.get(s, slugify(s)))
        if s == "glove":
            return cls(s, "glove", s, s)
        prefix, colon, name = s.partition(":")
        if colon and prefix in _NAMED:
            if name not in _NAMED[prefix]:
                raise ModelUnavailableError(f"unknown model {s!r}; choose from {prefix}:{{{','.join(_NAMED[prefix])}}}")
            return cls(s, prefix, s, slugify(s))
        path = _absolute(s, base_dir)
        if path.exists():
            return _path_ref(cls, path)
        try:
            key = get_spec(s).name
        except ValueError:
            key = None
        if key is not None:
            return cls(key, "registry", key, SHORT_NAMES.get(key, slugify(key)), get_spec(key).revision)
        return _hub_ref(cls, s, path)


def _absolute(s: str, base_dir) -> Path:
    p = Path(s).expanduser()
    if not p.is_absolute():
        p = Path(base_dir if base_dir is not None else os.getcwd()).expanduser() / p
    return Path(os.path.abspath(p))


def _path_ref(cls, path: Path) -> ModelRef:
    path = path.resolve()
    if path.is_dir():
        if not ((path / "config.json").exists() or (path / "modules.json").exists()):
            raise ModelUnavailableError(
                f"{path} is a folder but neither a transformers model (config.json) nor a "
                "sentence-transformers model (modules.json)"
            )
        return cls(str(path), "folder", path.name, _path_slug(path, path.name))
    if (path.parent / "config.json").is_file() or (path.parent / "modules.json").is_file():
        raise ModelUnavailableError(
            f"{path} is a file of the model folder {path.parent}, not a model: pass the folder ({path.parent})"
        )
    if path.suffix.lower() in _NOT_VECTORS:
        raise ModelUnavailableError(
            f"{path} is a {path.suffix} file, not a model: pass a model folder, a registry key, a Hugging Face id, "
            "or a word-vector file (GloVe or word2vec)"
        )
    return cls(str(path), "static", path.stem, _path_slug(path, path.stem))


#: file suffixes that are never a word-vector file (a model's configuration, weights or tokenizer)
_NOT_VECTORS = (".json", ".safetensors", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".onnx", ".model", ".yml", ".yaml")


def _hub_ref(cls, s: str, path: Path) -> ModelRef:
    if s.startswith((".", "/", "~")) or s.endswith(STATIC_SUFFIXES) or s.count("/") > 1:
        raise ModelUnavailableError(
            f"no such file or folder: {s!r} (looked for {path}; a Hugging Face id looks like 'org/name'; "
            f"registry keys: {sorted(REGISTRY)})"
        )
    hub_id, _, rev = s.partition("@")
    if not _HUB_ID.fullmatch(hub_id) or (rev and not re.fullmatch(r"[\w.\-/]+", rev)):
        raise ModelUnavailableError(f"{s!r} is neither a registry key, an existing path, nor a Hugging Face id")
    slug = slugify(hub_id.replace("/", "_")) + (f"_{slugify(rev)[:12]}" if rev else "")
    return cls(s if rev else hub_id, "hub", hub_id, slug, rev or "main")


def model_refs(models, default) -> tuple[ModelRef, ...]:
    """A chapter's models: its ``models`` parameter (one spec or a list of specs) or, when that is None or
    empty, the ``default`` list, each parsed with :meth:`ModelRef.parse`.

    Parameters
    ----------
    models : str, path-like, ModelRef, list of them, or None
    default : list of str or ModelRef

    Returns
    -------
    tuple of ModelRef

    Raises
    ------
    ValueError
        For a ``models`` value that is neither a spec nor a list of specs, or two specs naming the same model
        (their record keys would collide); :class:`ModelUnavailableError` (a ``ValueError``) for a bad spec.
    """
    if models is None or (isinstance(models, (list, tuple)) and not models):
        models = list(default)
    elif isinstance(models, (str, os.PathLike, ModelRef)):
        models = [models]
    elif not (isinstance(models, (list, tuple)) and all(isinstance(m, (str, os.PathLike, ModelRef)) for m in models)):
        raise ValueError(
            f"models must be a model spec or a list of specs (registry key, folder, Hub id); got {models!r}"
        )
    refs = tuple(ModelRef.parse(m) for m in models)
    seen: dict[str, ModelRef] = {}
    for r in refs:
        if r.slug in seen:
            raise ValueError(f"models {seen[r.slug].spec!r} and {r.spec!r} are the same model (slug {r.slug!r})")
        seen[r.slug] = r
    return refs
