"""Full-size random-weight stand-ins of the papers' models, for the paper-scale rehearsal (issue 26).

Each stand-in is the paper model's architecture at its published size (layers, width, heads, feed-forward
width, vocabulary, positions: the model's ``config.json``), built offline from that configuration with
seeded random weights. It has the real model's parameter count, floating-point work per token and memory, so
timings, peak memory and cache sizes measured with it are those of the real model; its *values* (IsoScore,
correlations...) say nothing about the pretrained model.

Tokenizers: the real vocabularies where this book has them (ProtBert's 30 tokens, ESM-2's 33, the
bert-base-uncased WordPiece from the packaged MiniLM, which DistilBERT and MiniLM share and MPNet extends by four
specials, copied once into the tokenizer cache so that a copy of the cache serves them without the package); a byte-level BPE trained on the mirror's WikiText-2 and PTB text (valid and test) for GPT-2,
GPT and the RoBERTa family, with the real vocabulary size in the configuration (so the embedding matrices
have the real shape; the 3 MB of text give about 23,000 tokens, so words split a little more often than
with the real 50,000); ProtXLNet's word-level
sentencepiece of :mod:`replib.models.tiny` (one piece per residue, as the real one) with the real
vocabulary size (37) in the configuration.

:func:`fullsize_model` builds one in memory (:class:`~replib.models.base.LoadedModel`); :func:`save_fullsize`
writes a ``transformers`` folder (or a sentence-transformers folder: mean pooling and Normalize, as the SBERT
models) that ``--model FOLDER`` runs through every chapter (``python -m replib rehearsal`` writes them).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch
import transformers as tr
from tokenizers import ByteLevelBPETokenizer

from .._io import _umask, atomic_write, cache_root
from ..data import load_lm_corpus
from ..provenance import note_model
from .base import LoadedModel, config_spec, state_sha256, vocab_sha256
from .loading import minilm_dir
from .proteinbert import ProteinBERT, ProteinBertTokenizer, random_weights
from .registry import REGISTRY
from .tiny import _NO_LICENCE, _bert_tok, _esm_tok, _protbert_tok, _xlnet_tok, esm_config, random_spec

__all__ = [
    "FULLSIZE",
    "FullSize",
    "fullsize_config",
    "fullsize_model",
    "n_parameters",
    "parameter_count",
    "random_architecture",
    "save_fullsize",
]


@dataclass(frozen=True)
class FullSize:
    """One paper model's architecture.

    Attributes
    ----------
    name : str
        The registry key of the model it stands in for.
    config : str
        The ``transformers`` configuration class (``BertConfig``...), or ``ProteinBERT``.
    kwargs : dict
        The configuration's values (those of the model's published ``config.json``; the class defaults
        are the published ones where nothing is given).
    tokenizer : str
        ``protbert``, ``protxlnet``, ``esm``, ``bert``, ``mpnet``, ``bpe``, ``roberta`` or ``proteinbert``.
    """

    name: str
    config: str
    kwargs: dict = field(default_factory=dict)
    tokenizer: str = "bert"

    @property
    def recipe(self) -> str:
        """The embedding recipe: the paper model's own (:data:`replib.models.registry.REGISTRY`)."""
        return REGISTRY[self.name].recipe


_PROTBERT = dict(
    vocab_size=30,
    hidden_size=1024,
    num_hidden_layers=30,
    num_attention_heads=16,
    intermediate_size=4096,
    max_position_embeddings=40000,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
)


_ROBERTA = dict(vocab_size=50265, max_position_embeddings=514, type_vocab_size=1, pad_token_id=1, layer_norm_eps=1e-5)
#: registry key -> its architecture (ProtTrans: Elnaggar et al. 2021, Table 2 and the models' config.json;
#: ESM-2: Lin et al. 2023; ProteinBERT: Brandes et al. 2022; the text models: their Hugging Face configs)
FULLSIZE = {
    f.name: f
    for f in (
        FullSize("prot_bert", "BertConfig", _PROTBERT, "protbert"),
        FullSize("prot_bert_bfd", "BertConfig", _PROTBERT, "protbert"),
        FullSize(
            "prot_xlnet",
            "XLNetConfig",
            dict(vocab_size=37, d_model=1024, n_layer=30, n_head=16, d_inner=4096, mem_len=512),
            "protxlnet",
        ),
        FullSize("proteinbert", "ProteinBERT", dict(seq_len=512), "proteinbert"),
        FullSize("esm2_t6_8M", "EsmConfig", esm_config(320, 6), "esm"),
        FullSize("esm2_t12_35M", "EsmConfig", esm_config(480, 12), "esm"),
        FullSize("esm2_t30_150M", "EsmConfig", esm_config(640, 30), "esm"),
        FullSize("esm2_t33_650M", "EsmConfig", esm_config(1280, 33), "esm"),
        FullSize("bert-base-uncased", "BertConfig", {}, "bert"),
        FullSize(
            "all-MiniLM-L6-v2",
            "BertConfig",
            dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536),
            "bert",
        ),
        FullSize("distilbert-base-uncased", "DistilBertConfig", {}, "bert"),
        FullSize("openai-gpt", "OpenAIGPTConfig", {}, "bpe"),
        FullSize("gpt2", "GPT2Config", {}, "bpe"),
        FullSize("roberta-base", "RobertaConfig", _ROBERTA, "roberta"),
        FullSize("all-mpnet-base-v2", "MPNetConfig", dict(vocab_size=30527), "mpnet"),
        FullSize("all-distilroberta-v1", "RobertaConfig", dict(_ROBERTA, num_hidden_layers=6), "roberta"),
    )
}


def _arch(name: str) -> FullSize:
    if name not in FULLSIZE:
        raise ValueError(f"no full-size stand-in for {name!r}; known: {sorted(FULLSIZE)}")
    return FULLSIZE[name]


def fullsize_config(name: str):
    """The ``transformers`` configuration of a paper model at full size (ProteinBERT: its port's dimensions,
    as a dict)."""
    arch = _arch(name)
    if arch.config == "ProteinBERT":
        return dict(arch.kwargs)
    return getattr(tr, arch.config)(**arch.kwargs)


def n_parameters(model) -> int:
    """Number of parameters of a ``torch.nn.Module``."""
    return int(sum(p.numel() for p in model.parameters()))


# ------------------------------------------------------------------------------------------ tokenizers
def _tok_root() -> Path:
    return cache_root("fullsize") / "tokenizers"


def _mirror_text() -> list[str]:
    """WikiText-2 and PTB, valid and test (the mirror's English LM text)."""
    return [line for c in ("wikitext2", "ptb") for s in ("valid", "test") for line in load_lm_corpus(c, s)]


def _bpe_files(kind: str, vocab_size: int) -> Path:
    """A byte-level BPE (GPT-2's pre-tokenisation) trained once on :func:`_mirror_text`, ``vocab_size`` at most
    (``kind="roberta"``: RoBERTa's five specials first, ids 0-4; else GPT-2's ``<|endoftext|>``, id 0)."""
    d = _tok_root() / f"{kind}-{vocab_size}"
    if not (d / "merges.txt").exists():  # written last
        specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"] if kind == "roberta" else ["<|endoftext|>"]
        bpe = ByteLevelBPETokenizer()
        bpe.train_from_iterator(_mirror_text(), vocab_size=vocab_size, min_frequency=2, special_tokens=specials)
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=d) as work:
            bpe.save_model(work)
            vocab, merges = (Path(work) / "vocab.json").read_bytes(), (Path(work) / "merges.txt").read_bytes()
        atomic_write(d / "vocab.json", lambda fh: fh.write(vocab))
        atomic_write(d / "merges.txt", lambda fh: fh.write(merges))
    return d


#: the packaged MiniLM's tokenizer files: bert-base-uncased's WordPiece, lower-cased, 512 positions
_BERT_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def _wordpiece_files(kind: str, names: tuple[str, ...]) -> Path:
    """A folder of the tokenizer cache holding ``names`` of the packaged MiniLM's tokenizer files (copied once: a
    machine without the package runs the stand-ins from a copy of the cache)."""
    d = _tok_root() / kind
    for name in names:
        if not (d / name).exists():
            data = (Path(minilm_dir(verify=False)) / name).read_bytes()
            atomic_write(d / name, lambda fh, data=data: fh.write(data))
    return d


def _tokenizer(arch: FullSize, vocab_size: int):
    kind = arch.tokenizer
    if kind == "protbert":
        return _protbert_tok()
    if kind == "protxlnet":
        return _xlnet_tok()
    if kind == "esm":
        return _esm_tok()
    if kind == "proteinbert":
        return ProteinBertTokenizer(arch.kwargs["seq_len"])
    if kind == "bert":
        return tr.AutoTokenizer.from_pretrained(str(_wordpiece_files("bert", _BERT_FILES)))
    if kind == "mpnet":  # MPNet's vocabulary is bert-base-uncased's and four specials (<s> </s> <pad> <mask>)
        return tr.MPNetTokenizerFast.from_pretrained(str(_wordpiece_files("mpnet", ("vocab.txt",))), do_lower_case=True)
    cls = tr.RobertaTokenizerFast if kind == "roberta" else tr.GPT2TokenizerFast
    return cls.from_pretrained(str(_bpe_files(kind, vocab_size)))


# ------------------------------------------------------------------------------------------ models
def _module(arch: FullSize):
    return ProteinBERT() if arch.config == "ProteinBERT" else tr.AutoModel.from_config(fullsize_config(arch.name))


def parameter_count(name: str) -> int:
    """Parameters of a stand-in (the paper model's), counted on PyTorch's ``meta`` device: no weights are
    allocated or initialised, so it takes milliseconds even for the 650M-parameter ESM-2."""
    with torch.device("meta"):
        return n_parameters(_module(_arch(name)))


def fullsize_model(name: str, seed: int = 0) -> LoadedModel:
    """A paper model's architecture at full size with seeded random weights, in memory, on CPU, in eval mode.

    Parameters
    ----------
    name : str
        A key of :data:`FULLSIZE` (the registry key of the paper model).
    seed : int

    Returns
    -------
    LoadedModel
        Named ``fullsize-<name>``, ``source = "random:seed=<seed>"``; its identity (embedding cache key) holds
        the weights' and vocabulary's hashes.
    """
    arch = _arch(name)
    torch.manual_seed(seed)
    model = _module(arch)
    if arch.config == "ProteinBERT":
        model.load_keras_weights(random_weights(model, seed))
    model.eval()
    vocab = getattr(getattr(model, "config", None), "vocab_size", 0)
    tok = _tokenizer(arch, vocab)
    extra = {"ProteinBERT": {"local_dim": 128, **arch.kwargs}, "XLNetConfig": {"mem_len": 512}}.get(arch.config)
    spec = random_spec(f"fullsize-{name}", model, arch.recipe, f"full-size random-weight stand-in of {name}", extra)
    note_model(spec.name, kind="random", source=f"random:seed={seed}")
    identity = {"fullsize": name, "seed": seed, "state_sha256": state_sha256(model), "vocab_sha256": vocab_sha256(tok)}
    return LoadedModel(spec.name, model, tok, spec, "cpu", f"random:seed={seed}", identity=identity)


def _sbert_files(folder: Path, hidden: int, max_seq_length: int) -> None:
    """The sentence-transformers layout around a ``transformers`` folder: mean pooling, then Normalize."""
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]
    pooling = {
        "word_embedding_dimension": hidden,
        "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True,
        "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False,
    }
    (folder / "1_Pooling").mkdir()
    (folder / "2_Normalize").mkdir()
    (folder / "modules.json").write_text(json.dumps(modules, indent=2))
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling, indent=2))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_seq_length}))


def save_fullsize(name: str, out_dir, *, seed: int = 0, sbert: bool | None = None) -> Path:
    """Write a full-size stand-in as a model folder that :func:`replib.models.resolve_model` (and ``--model``)
    loads: ``config.json``, ``model.safetensors`` and the tokenizer's files; with ``sbert`` (default: the
    architecture's own) the sentence-transformers layout too (mean pooling, Normalize).

    The folder is written beside ``out_dir`` and renamed into place when complete; an existing ``out_dir`` is
    an error (nothing is overwritten). ProteinBERT is not a ``transformers`` model: use :func:`fullsize_model`.

    Returns
    -------
    pathlib.Path
        ``out_dir``.
    """
    arch = _arch(name)
    if arch.config == "ProteinBERT":
        raise ValueError("ProteinBERT is not a transformers model: build it in memory with fullsize_model()")
    out = Path(out_dir).expanduser().resolve()
    if out.exists():
        raise FileExistsError(f"{out} exists; remove it or choose another folder")
    lm = fullsize_model(name, seed=seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        lm.model.save_pretrained(str(work), safe_serialization=True)
        lm.tokenizer.save_pretrained(str(work))
        if arch.recipe == "sbert" if sbert is None else sbert:
            limit = min(512, int(getattr(lm.model.config, "max_position_embeddings", 514)) - 2)
            _sbert_files(work, lm.spec.hidden_size, limit)
        os.chmod(work, 0o777 & ~_umask())
        os.replace(work, out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return out


# ------------------------------------------------------------------------------------------ the atlas's
def random_architecture(arch: str, seed: int = 0) -> LoadedModel:
    """A full-size architecture with seeded random weights, on CPU in eval mode (the isotropy atlas's rows
    ``random-bert-base`` and ``random-gpt2``).

    Parameters
    ----------
    arch : {"bert-base", "gpt2"}
        ``transformers.BertConfig()`` (12 layers, width 768, 12 heads) or ``transformers.GPT2Config()``
        (the 124M GPT-2: 12 layers, width 768), the vocabulary size set to the tokenizer's (the
        bert-base-uncased WordPiece of the packaged MiniLM, for both).
    seed : int

    Returns
    -------
    LoadedModel
        Recipe ``text``, ``source = "random:seed=<seed>"``.
    """
    tok = _bert_tok()  # the bert-base-uncased WordPiece
    torch.manual_seed(seed)
    if arch == "bert-base":
        cfg = tr.BertConfig(vocab_size=tok.vocab_size)
        model = tr.BertModel(cfg, add_pooling_layer=False)
    elif arch == "gpt2":
        cfg = tr.GPT2Config(vocab_size=tok.vocab_size)
        model = tr.GPT2Model(cfg)
    else:
        raise ValueError(f"unknown architecture {arch!r}; expected 'bert-base' or 'gpt2'")
    name = f"random-{arch}"
    spec = config_spec(name, f"local:{name}", "random", cfg, "text", _NO_LICENCE)
    return LoadedModel(name, model.eval(), tok, spec, "cpu", f"random:seed={seed}")
