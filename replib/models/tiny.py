"""Tiny random models for the ``smoke`` profile: same architecture classes and tokenisation as the
paper models, built from configs (no download), deterministic under a seed.

Tokenizer files are written once per process to a temporary folder (or ``$REPLIB_CACHE_DIR/tiny`` when that variable is set).
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import random
import shutil
import tempfile
from pathlib import Path

import sentencepiece as spm
import torch
import transformers as tr
from tokenizers import ByteLevelBPETokenizer

from .._io import atomic_write
from ..provenance import note_model
from .base import LoadedModel, config_spec, state_sha256, vocab_sha256
from .loading import minilm_dir
from .proteinbert import ProteinBERT, ProteinBertTokenizer, random_weights
from .registry import TINY_FAMILIES as FAMILIES
from .registry import TINY_RECIPES, ModelSpec

#: ProtBert / ProtBert-BFD ``vocab.txt`` order (30 tokens; ids 0..29).
PROTBERT_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"LAGVESIKRDTPNQFYMHCWXUBZO"]
#: ESM-2 vocabulary (33 tokens), as in ``facebook/esm2_*/vocab.txt``.
ESM_VOCAB = ["<cls>", "<pad>", "<eos>", "<unk>", *"LAGVSERTIDPKQNFYMHWCXBUZO.-", "<null_1>", "<mask>"]


def esm_config(hidden: int, layers: int) -> dict:
    """ESM-2's configuration at width ``hidden`` and ``layers`` blocks (the published ``config.json`` of
    ``facebook/esm2_*``: 20 heads, a feed-forward 4 times as wide, rotary positions), the real 33-token vocabulary."""
    return dict(
        vocab_size=len(ESM_VOCAB),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=20,
        intermediate_size=4 * hidden,
        max_position_embeddings=1026,
        position_embedding_type="rotary",
        token_dropout=True,
        emb_layer_norm_before=False,
        pad_token_id=1,
        mask_token_id=32,
    )


#: the licence line of a model with random weights
_NO_LICENCE = "n/a (random weights)"
_TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)


@functools.cache
def _root() -> Path:
    """``$REPLIB_CACHE_DIR/tiny``, else a folder of this process's own, removed when it exits."""
    if base := os.environ.get("REPLIB_CACHE_DIR"):
        folder = Path(base) / "tiny"
    else:
        folder = Path(tempfile.mkdtemp(prefix="replib-tiny-"))
        atexit.register(_remove_if_owner, folder, os.getpid())
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _remove_if_owner(folder: Path, pid: int) -> None:
    """At exit, remove ``folder`` in the process that made it (not in a forked child exiting)."""
    if os.getpid() == pid:
        shutil.rmtree(folder, ignore_errors=True)


def _write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda fh: fh.write(text), mode="w")


def _protbert_tok():
    d = _root() / "protbert"
    if not (d / "tokenizer_config.json").exists():  # written last
        _write_text(d / "vocab.txt", "\n".join(PROTBERT_VOCAB) + "\n")
        _write_text(d / "tokenizer_config.json", json.dumps({"do_lower_case": False}))
    return tr.BertTokenizer.from_pretrained(str(d), do_lower_case=False)


def _xlnet_tok():
    """Train (once) a word-level sentencepiece model on random residue text: one piece per residue."""
    d = _root() / "protxlnet"
    if not (d / "spiece.model").exists():
        d.mkdir(parents=True, exist_ok=True)
        rng = random.Random(0)
        aa = "LAGVESIKRDTPNQFYMHCW"
        with tempfile.TemporaryDirectory(dir=d) as work:  # trained aside, moved into place when complete
            text = Path(work) / "residues.txt"
            text.write_text(
                "\n".join(" ".join(rng.choice(aa) for _ in range(rng.randint(5, 40))) for _ in range(2000)) + "\n"
            )
            spm.SentencePieceTrainer.train(
                input=str(text),
                model_prefix=str(Path(work) / "spiece"),
                vocab_size=27,
                model_type="word",
                control_symbols=["<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>"],
                unk_id=0,
                bos_id=-1,
                eos_id=-1,
                pad_id=-1,
                minloglevel=2,
            )
            model = (Path(work) / "spiece.model").read_bytes()
        atomic_write(d / "spiece.model", lambda fh: fh.write(model))
    return tr.XLNetTokenizer.from_pretrained(str(d), do_lower_case=False)


def _esm_tok():
    d = _root() / "esm"
    if not (d / "vocab.txt").exists():
        _write_text(d / "vocab.txt", "\n".join(ESM_VOCAB) + "\n")
    return tr.EsmTokenizer.from_pretrained(str(d))


def _bert_tok():
    """bert-base-uncased WordPiece vocabulary, taken from the packaged MiniLM."""
    return tr.AutoTokenizer.from_pretrained(str(minilm_dir(verify=False)))


def _gpt2_tok():
    """A tiny byte-level BPE (GPT-2 pre-tokenisation) trained on a few built-in sentences."""
    d = _root() / "gpt2"
    if not (d / "vocab.json").exists():
        d.mkdir(parents=True, exist_ok=True)
        corpus = [
            "The quick brown fox jumps over the lazy dog.",
            "A man is playing a guitar.",
            "Isotropy of embedding spaces is measured with IsoScore.",
            "Hello world, hello tokens!",
            "Protein sequences and sentences are embedded the same way.",
        ] * 20
        bpe = ByteLevelBPETokenizer()
        bpe.train_from_iterator(corpus, vocab_size=400, min_frequency=1, special_tokens=["<|endoftext|>"])
        bpe.save_model(str(d))
    return tr.GPT2TokenizerFast.from_pretrained(str(d))


def random_spec(name: str, model, recipe: str, notes: str, extra=None) -> ModelSpec:
    """The spec of a model with random weights (``revision`` ``random``), its sizes read from its configuration
    (ProteinBERT: the port's widths and blocks)."""
    kw = dict(safetensors=False, notes=notes, extra=extra or {})
    if isinstance(model, ProteinBERT):
        head = (name, f"local:{name}", "random", "proteinbert", model.d_global, model.n_blocks, recipe, _NO_LICENCE)
        return ModelSpec(*head, **kw)
    return config_spec(name, f"local:{name}", "random", model.config, recipe, _NO_LICENCE, **kw)


def tiny_model(family: str, seed: int = 0) -> LoadedModel:
    """A tiny random model with the real architecture class and tokeniser of a paper model.

    Parameters
    ----------
    family : {"protbert", "protxlnet", "esm", "bert", "gpt2", "proteinbert"}
        ``protbert``: :class:`~transformers.BertModel` + the real 30-token ProtBert vocabulary
        (``do_lower_case=False``); ``protxlnet``: :class:`~transformers.XLNetModel` + a word-level
        sentencepiece model (left padding, trailing ``<sep><cls>``); ``esm``:
        :class:`~transformers.EsmModel` + the real ESM-2 vocabulary; ``bert``: BertModel with the
        bert-base-uncased WordPiece vocabulary (recipe ``text``); ``gpt2``: GPT2Model with a tiny
        byte-level BPE; ``proteinbert``: the ProteinBERT port (real dims) with seeded random weights.
    seed : int

    Returns
    -------
    LoadedModel
        On CPU, eval mode, ``source = "random:seed=<seed>"``.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown tiny family {family!r}; choose from {FAMILIES}")
    random.seed(seed)
    torch.manual_seed(seed)
    L, H = _TINY["num_hidden_layers"], _TINY["hidden_size"]
    if family == "protbert":
        tok = _protbert_tok()
        model = tr.BertModel(
            tr.BertConfig(vocab_size=len(PROTBERT_VOCAB), max_position_embeddings=1024, **_TINY),
            add_pooling_layer=False,
        )
    elif family == "protxlnet":
        tok = _xlnet_tok()
        model = tr.XLNetModel(
            tr.XLNetConfig(vocab_size=len(tok), d_model=H, n_layer=L, n_head=2, d_inner=64, mem_len=512)
        )
    elif family == "esm":
        tok = _esm_tok()
        model = tr.EsmModel(tr.EsmConfig(**(esm_config(H, L) | _TINY)), add_pooling_layer=False)  # ESM-2's, tiny
    elif family == "bert":
        tok = _bert_tok()
        model = tr.BertModel(tr.BertConfig(vocab_size=tok.vocab_size, **_TINY), add_pooling_layer=False)
    elif family == "gpt2":
        tok = _gpt2_tok()
        eos = tok.convert_tokens_to_ids("<|endoftext|>")
        cfg = tr.GPT2Config(
            vocab_size=len(tok), n_embd=H, n_layer=L, n_head=2, n_positions=1024, bos_token_id=eos, eos_token_id=eos
        )
        model = tr.GPT2Model(cfg)
    else:
        model = ProteinBERT()
        model.load_keras_weights(random_weights(model, seed))
        tok = ProteinBertTokenizer(64)
    extra = {"local_dim": 128, "seq_len": 64} if family == "proteinbert" else None
    spec = random_spec(f"tiny-{family}", model, TINY_RECIPES[family], "tiny random model", extra)
    note_model(f"tiny-{family}", kind="random", source=f"random:seed={seed}")
    identity = {"tiny": family, "seed": seed, "state_sha256": state_sha256(model), "vocab_sha256": vocab_sha256(tok)}
    return LoadedModel(f"tiny-{family}", model.eval(), tok, spec, "cpu", f"random:seed={seed}", identity=identity)
