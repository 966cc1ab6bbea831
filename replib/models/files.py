"""What a model folder holds, read without loading it: which weight files ``transformers`` loads and their
hashes, the tokenizer files, the configuration (refused when it asks to run the folder's own code), the
sentence-transformers layout, and the content identity the caches are keyed by."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from .._io import sha256_file
from .errors import ModelUnavailableError, NoTokenizerError, UntrustedCodeError

__all__ = [
    "WEIGHT_FILES",
    "TOKENIZER_FILES",
    "check_no_remote_code",
    "folder_identity",
    "pooling_mode",
    "require_tokenizer",
    "st_transformer_dir",
    "weight_files",
    "weights_sha256",
]

#: single-file weights, in the order ``transformers`` prefers them (safetensors first)
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
#: indexes of sharded weights (``weight_map``: parameter -> shard file)
SHARD_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
#: files that hold a vocabulary: a folder needs one of them to be tokenized
TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
    "spm.model",
)
#: other files that change how text is tokenized (part of the content identity when present)
TOKENIZER_SETTINGS = ("tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "merges.txt")
#: configuration files that may name Python code of the folder (``auto_map``)
CODE_CONFIGS = ("config.json", "tokenizer_config.json")


def weight_files(folder) -> list[Path]:
    """The weight files ``transformers`` loads from ``folder``: ``model.safetensors`` (else
    ``pytorch_model.bin``), else the shards the index lists, else the shards found by name.

    Raises
    ------
    ModelUnavailableError
        If the folder holds no weights.
    """
    folder = Path(folder)
    for name in WEIGHT_FILES:
        if (folder / name).is_file():
            return [folder / name]
    for index in SHARD_INDEXES:
        if (folder / index).is_file():
            shards = sorted(set(json.loads((folder / index).read_text()).get("weight_map", {}).values()))
            missing = [s for s in shards if not (folder / s).is_file()]
            if missing:
                raise ModelUnavailableError(f"{folder / index} lists shards that are missing: {missing[:3]}")
            if shards:
                return [folder / s for s in shards]
    shards = sorted(folder.glob("model-*.safetensors")) or sorted(folder.glob("pytorch_model-*.bin"))
    if not shards:
        raise ModelUnavailableError(f"{folder} holds no weights ({' / '.join(WEIGHT_FILES)} or shards)")
    return shards


def weights_sha256(folder) -> str:
    """sha256 identifying the weights of a local transformers folder.

    One weight file (``model.safetensors`` or ``pytorch_model.bin``): its sha256. Sharded weights: the sha256
    of the lines ``<file name> <sha256>`` of every shard loaded (:func:`weight_files`), sorted by name.

    Raises
    ------
    ModelUnavailableError
        If the folder holds no weight file.
    """
    files = weight_files(folder)
    if len(files) == 1 and files[0].name in WEIGHT_FILES:
        return sha256_file(files[0])
    return _listing_sha256(files)


def _listing_sha256(files) -> str:
    lines = "".join(f"{f.name} {sha256_file(f)}\n" for f in sorted(files, key=lambda f: f.name))
    return hashlib.sha256(lines.encode()).hexdigest()


def check_no_remote_code(folder) -> None:
    """Refuse a folder whose configuration names its own Python code (``auto_map``): the book never runs code
    shipped with a model (``trust_remote_code=False`` everywhere, no prompt).

    Raises
    ------
    UntrustedCodeError
        Naming the file that holds the ``auto_map``.
    """
    for name in CODE_CONFIGS:
        path = Path(folder) / name
        if path.is_file() and "auto_map" in _read_json(path):
            raise UntrustedCodeError(
                f"{path} has an 'auto_map': the model needs its own Python code, which replib never runs "
                "(trust_remote_code=False); use a model whose architecture transformers ships"
            )


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelUnavailableError(f"{path} is not readable JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ModelUnavailableError(f"{path} is not a JSON object")
    return data


def require_tokenizer(folder) -> None:
    """Fail early, with the files expected, when a model folder holds no tokenizer.

    Raises
    ------
    NoTokenizerError
    """
    folder = Path(folder)
    if not any((folder / f).is_file() for f in TOKENIZER_FILES):
        raise NoTokenizerError(
            f"no tokenizer in {folder} (expected one of: {', '.join(TOKENIZER_FILES)}); save the model's "
            "tokenizer there (tokenizer.save_pretrained(folder))"
        )


def folder_identity(folder, known_weights_sha256: str | None = None) -> dict:
    """The content a local model's outputs depend on: the weight files loaded and their hash, and the hashes
    of ``config.json`` and of the tokenizer files. Paths are not part of it (a copied folder has the same
    identity; the same path with other files has another).

    Parameters
    ----------
    folder : path-like
        The folder holding ``config.json`` and the weights.
    known_weights_sha256 : str, optional
        The weights' hash when already known (a verified packaged copy): not recomputed.

    Returns
    -------
    dict
        ``weights_sha256``, ``weight_files`` (names), ``config_sha256``, ``tokenizer_sha256`` (over the lines
        ``<name> <sha256>`` of the tokenizer files present).
    """
    folder = Path(folder)
    files = weight_files(folder)
    tok = [folder / f for f in TOKENIZER_FILES + TOKENIZER_SETTINGS if (folder / f).is_file()]
    return {
        "weights_sha256": known_weights_sha256 or weights_sha256(folder),
        "weight_files": [f.name for f in files],
        "config_sha256": sha256_file(folder / "config.json") if (folder / "config.json").is_file() else None,
        "tokenizer_sha256": _listing_sha256(tok),
    }


#: files sentence-transformers never reads (exports, documentation): left out of a folder's identity
_NOT_READ = re.compile(r"(^|/)(\..*|.*\.md|onnx/.*|openvino/.*|.*\.onnx|.*\.h5|.*\.msgpack|.*\.ot|.*\.gguf)$")


def st_folder_identity(folder) -> dict:
    """The content a sentence-transformers folder's output vectors depend on: its Transformer module's
    :func:`folder_identity` (weights, ``config.json``, tokenizer) and the sha256 over the lines
    ``<relative path> <sha256>`` of every other file it holds (``modules.json``, the Pooling and Normalize
    modules, ``sentence_bert_config.json`` with ``max_seq_length``, Dense weights...), exports and
    documentation left out. Paths of the folder itself are not part of it.
    """
    folder = Path(folder)
    inner = st_transformer_dir(folder) if (folder / "modules.json").is_file() else folder
    ident = folder_identity(inner)
    skip = {f.resolve() for f in weight_files(inner)}
    others = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and p.resolve() not in skip and not _NOT_READ.search(p.relative_to(folder).as_posix())
    )
    lines = "".join(f"{p.relative_to(folder).as_posix()} {sha256_file(p)}\n" for p in others)
    return {**ident, "module_files_sha256": hashlib.sha256(lines.encode()).hexdigest()}


def st_module(folder, kind: str) -> dict | None:
    """The entry of ``modules.json`` in ``folder`` whose type is ``kind`` (``Transformer``, ``Pooling``...), None
    when there is none."""
    mods = json.loads((Path(folder) / "modules.json").read_text())
    return next((m for m in mods if str(m.get("type", "")).rpartition(".")[2] == kind), None)


def st_transformer_dir(folder: Path) -> Path:
    """The folder of a sentence-transformers model's Transformer module (``modules.json``)."""
    m = st_module(folder, "Transformer")
    if m is None:
        raise ModelUnavailableError(f"{folder}/modules.json has no Transformer module")
    return Path(folder) / m.get("path", "")


def pooling_mode(folder: Path) -> str | None:
    """The sentence-transformers pooling mode (``mean``, ``cls``, ``max``...) from ``modules.json``."""
    folder = Path(folder)
    if not (folder / "modules.json").exists() or (m := st_module(folder, "Pooling")) is None:
        return None
    cfg = folder / m.get("path", "") / "config.json"
    if not cfg.exists():
        return "mean"  # sentence-transformers' default
    c = json.loads(cfg.read_text())
    if isinstance(c.get("pooling_mode"), str):  # sentence-transformers 6 writes the mode by name
        return c["pooling_mode"]
    modes = [
        re.sub(r"_tokens?$", "", k[len("pooling_mode_") :])
        for k, v in c.items()
        if k.startswith("pooling_mode_") and v is True
    ]
    return "+".join(sorted(modes)) or "mean"
