"""Reliability of model loading and of the embedding cache (issue 28, items 1, 2, 3, 6, 10, 11, 12, 13): each
test feeds the bad input or the fault and checks the clear error, or that no stale result is served."""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import huggingface_hub.constants
import numpy as np
import pytest
import torch

from replib.embeddings import embed_sentences
from replib.methods.classifiers.sbert import _sbert_model
from replib.models import (
    CorruptModelFileError,
    ModelRef,
    ModelUnavailableError,
    NoTokenizerError,
    UntrustedCodeError,
    WrongModelKindError,
    content_identity,
    load_static_vectors,
    model_n_layers,
    model_recipe,
    model_slug,
    require_protein_model,
    resolve_model,
    tiny_model,
)
from replib.models.files import folder_identity, weight_files
from replib.models.static import static_layout

ROOT = Path(__file__).resolve().parents[1]
TEXTS = ["A man is playing a Guitar.", "Isotropy of embedding spaces.", "The cat sat on the mat today."]


def _save_tiny(folder: Path, family: str = "bert", seed: int = 0, tokenizer: bool = True) -> Path:
    lm = tiny_model(family, seed=seed)
    lm.model.save_pretrained(folder)
    if tokenizer:
        lm.tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture
def no_network(monkeypatch, tmp_path):
    """Offline, an empty Hugging Face cache, and any connection attempt fails the test."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))

    def refuse(*args, **kwargs):
        raise AssertionError("a network connection was attempted")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


# ------------------------------------------------------------------------ 1. code shipped with a model
def _folder_with_code(folder: Path, marker: Path) -> Path:
    """A model folder whose config.json has an auto_map to its own module; importing that module writes
    ``marker``. Weights and a vocabulary are present, so only the code decides whether it loads."""
    folder.mkdir()
    (folder / "evil.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('the folder ran its code')\n"
        "from transformers import BertConfig, BertModel\n"
        "class EvilConfig(BertConfig):\n    model_type = 'evilbert'\n"
        "class EvilModel(BertModel):\n    config_class = EvilConfig\n"
    )
    config = {
        "model_type": "evilbert",
        "architectures": ["EvilModel"],
        "auto_map": {"AutoConfig": "evil.EvilConfig", "AutoModel": "evil.EvilModel"},
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "vocab_size": 30,
    }
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "model.safetensors").write_bytes(b"not read: the folder is refused before its weights")
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b"]) + "\n")
    return folder


@pytest.mark.probe(
    'a model folder whose `config.json` has an `auto_map` (its own Python), prompt answered "y"',
    "refused before anything is imported, naming the file; `trust_remote_code` is off everywhere",
)
def test_auto_map_never_runs_the_folders_code_even_when_the_prompt_is_answered_yes(tmp_path):
    marker = tmp_path / "marker.txt"
    folder = _folder_with_code(tmp_path / "evil-model", marker)
    script = textwrap.dedent(
        f"""
        from replib.models import UntrustedCodeError, resolve_model
        try:
            resolve_model({str(folder)!r}, device="cpu")
        except UntrustedCodeError as exc:
            print("REFUSED", exc)
        """
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_MODULES_CACHE=str(tmp_path / "modules"), HF_HUB_OFFLINE="1")
    out = subprocess.run(
        [sys.executable, "-c", script], input="y\ny\ny\n", capture_output=True, text=True, env=env, timeout=300
    )
    assert not marker.exists(), "the model folder's own code was imported"
    assert "REFUSED" in out.stdout, out.stdout + out.stderr
    assert str(folder / "config.json") in out.stdout and "auto_map" in out.stdout
    assert "trust_remote_code" not in out.stderr  # no prompt was shown


def test_auto_map_is_refused_by_every_reader_of_a_config(tmp_path):
    marker = tmp_path / "marker.txt"
    folder = _folder_with_code(tmp_path / "evil-model", marker)
    for read in (model_n_layers, model_recipe, require_protein_model):
        with pytest.raises(UntrustedCodeError, match="config.json has an 'auto_map'"):
            read(str(folder))
    tok_code = _save_tiny(tmp_path / "tok-code")  # a plain model whose tokenizer config names code
    cfg = json.loads((tok_code / "tokenizer_config.json").read_text())
    cfg["auto_map"] = {"AutoTokenizer": ["evil.EvilTokenizer", None]}
    (tok_code / "tokenizer_config.json").write_text(json.dumps(cfg))
    with pytest.raises(UntrustedCodeError, match="tokenizer_config.json has an 'auto_map'"):
        resolve_model(str(tok_code), device="cpu")
    assert not marker.exists()


@pytest.mark.probe(
    "a sentence-transformers folder (the classifiers chapter) with an `auto_map`, or a "
    "`modules.json` naming a module outside `sentence_transformers`",
    "`UntrustedCodeError` naming the file, before sentence-transformers reads the folder",
)
def test_a_sentence_transformers_folder_with_code_is_refused_naming_the_file(tmp_path):
    """The classifiers chapter loads a reader's folder with sentence-transformers, not resolve_model: the same
    refusal, before sentence-transformers reads the folder (before: transformers' 'contains custom code')."""
    marker = tmp_path / "marker.txt"
    folder = _folder_with_code(tmp_path / "evil-sbert", marker)
    with pytest.raises(UntrustedCodeError, match=f"{folder / 'config.json'} has an 'auto_map'"):
        _sbert_model(str(folder))
    plain = _save_tiny(tmp_path / "custom-module")  # a plain encoder whose modules.json names its own module
    (plain / "evil_module.py").write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n")
    (plain / "modules.json").write_text(
        json.dumps(
            [
                {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                {"idx": 1, "name": "1", "path": "", "type": "evil_module.Mod"},
            ]
        )
    )
    with pytest.raises(UntrustedCodeError, match=f"{plain / 'modules.json'} names the module 'evil_module.Mod'"):
        _sbert_model(str(plain))
    assert not marker.exists()


# ------------------------------------------------------------------------ 2. content-based cache key
@pytest.mark.probe(
    "`--model ./x` re-pointed at other weights",
    "a new cache key (weights, config, dtype, loaded shards): recomputed, never the old results",
)
def test_repointed_folder_recomputes_instead_of_serving_old_embeddings(tmp_path):
    """The same path with other weights, another config, another tokenizer or another dtype: a new cache
    key, and the cached call returns what a fresh computation gives."""
    folder, cache = _save_tiny(tmp_path / "x", seed=0), tmp_path / "emb"

    def cached_and_fresh(**kw):
        lm = resolve_model(str(folder), device="cpu", **kw)
        return embed_sentences(lm, TEXTS, cache_dir=cache, progress=False), embed_sentences(lm, TEXTS, progress=False)

    def n_keys():
        return len(list(cache.glob("*/manifest.json")))

    first, _ = cached_and_fresh()
    assert n_keys() == 1
    _save_tiny(folder, seed=1)  # 1. other weights at the same path (tokenizer and config rewritten identically)
    got, fresh = cached_and_fresh()
    assert n_keys() == 2 and not np.allclose(got.means, first.means)
    np.testing.assert_array_equal(got.means, fresh.means)
    config = json.loads((folder / "config.json").read_text())  # 2. same weights, another configuration
    config["layer_norm_eps"] = 0.5
    (folder / "config.json").write_text(json.dumps(config))
    got, fresh = cached_and_fresh()
    assert n_keys() == 3
    np.testing.assert_array_equal(got.means, fresh.means)
    tok = json.loads((folder / "tokenizer_config.json").read_text())  # 3. another tokenizer setting
    tok["do_lower_case"] = not tok.get("do_lower_case", True)
    (folder / "tokenizer_config.json").write_text(json.dumps(tok))
    got, fresh = cached_and_fresh()
    assert n_keys() == 4
    np.testing.assert_array_equal(got.means, fresh.means)
    got, fresh = cached_and_fresh(dtype=torch.float64)  # 4. another dtype
    assert n_keys() == 5
    np.testing.assert_array_equal(got.means, fresh.means)
    manifest = json.loads(next(cache.glob("*/manifest.json")).read_text())
    assert str(folder) not in json.dumps(manifest)  # the key holds content, never the path


def test_content_identity_of_a_spec_follows_the_files_not_the_path(tmp_path, monkeypatch):
    """What a cache of whole results (a reused chapter run, a card) keys a ``--model`` spec by."""
    folder = _save_tiny(tmp_path / "x", seed=0)
    before = content_identity(str(folder))
    assert str(folder) not in json.dumps(before)
    monkeypatch.chdir(tmp_path)
    assert content_identity("./x") == before
    copy = tmp_path / "elsewhere" / "x"
    copy.parent.mkdir()
    _save_tiny(copy, seed=0)
    assert content_identity(str(copy)) == before  # the same files elsewhere: the same content
    _save_tiny(folder, seed=1)  # other weights at the same path
    assert content_identity(str(folder)) != before
    assert content_identity("tiny-bert") == {"kind": "tiny", "name": "tiny-bert"}
    assert content_identity("all-MiniLM-L6-v2")["revision"] == "c5e0feb76a64bc391ec36b4f46f4c74ab2ce4dcb"


def test_identity_covers_exactly_the_shards_transformers_loads(tmp_path):
    folder = tmp_path / "sharded"
    tiny_model("bert").model.save_pretrained(folder, max_shard_size="100KB")
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    listed = sorted(set(index["weight_map"].values()))
    assert len(listed) > 1 and [f.name for f in weight_files(folder)] == listed
    before = folder_identity(folder)
    (folder / "model-99999-of-99999.safetensors").write_bytes(b"a stale shard the index does not list")
    assert folder_identity(folder) == before
    with open(folder / listed[0], "ab") as f:  # a listed shard changed
        f.write(b" ")
    assert folder_identity(folder)["weights_sha256"] != before["weights_sha256"]


# ------------------------------------------------------------------------ 3. same folder name
@pytest.mark.probe(
    "two model folders with the same name",
    "distinct slugs (name + 6 hex of the path) in the cache, the records and the card",
)
def test_same_named_folders_get_distinct_slugs_and_cards(tmp_path):
    a, b = _save_tiny(tmp_path / "a" / "enc", seed=0), _save_tiny(tmp_path / "b" / "enc", seed=1)
    assert model_slug(str(a)) != model_slug(str(b))
    la, lb = resolve_model(str(a), device="cpu"), resolve_model(str(b), device="cpu")
    assert la.name == lb.name == "enc" and model_slug(la) != model_slug(lb)
    cache = tmp_path / "emb"
    ea = embed_sentences(la, TEXTS, cache_dir=cache, progress=False)
    eb = embed_sentences(lb, TEXTS, cache_dir=cache, progress=False)
    assert len(list(cache.glob("*/manifest.json"))) == 2 and not np.allclose(ea.means, eb.means)


# ------------------------------------------------------------------------ 6. truncated word2vec binary
class _Hang(Exception):
    pass


def _word2vec_binary(path: Path, words, vectors) -> Path:
    with open(path, "wb") as f:
        f.write(f"{len(words)} {vectors.shape[1]}\n".encode())
        for w, v in zip(words, vectors):
            f.write(w.encode() + b" " + struct.pack(f"<{len(v)}f", *v) + b"\n")
    return path


@pytest.mark.probe(
    "a truncated word2vec binary",
    "an error within seconds naming the file",
)
def test_truncated_word2vec_binary_fails_within_seconds(tmp_path):
    words = ["the", "cat", "sat", "on", "mat"]
    vectors = -np.abs(np.random.default_rng(0).normal(size=(5, 8))).astype(np.float32) - 1.0  # 0xbf.. bytes
    full = _word2vec_binary(tmp_path / "vectors.bin", words, vectors)
    assert static_layout(full) == "word2vec-binary"
    w, M, _ = load_static_vectors(full)
    assert w == words
    np.testing.assert_array_equal(M, vectors)
    data = full.read_bytes()
    for cut in (len(data) - 10, len(data) // 2, len(b"5 8\n") + 2):  # inside a vector, mid-file, inside a word
        trunc = tmp_path / f"cut{cut}.bin"
        trunc.write_bytes(data[:cut])

        def hang(signum, frame, cut=cut):
            raise _Hang(f"load_static_vectors still running after 10 s on a file cut at {cut} bytes")

        old = signal.signal(signal.SIGALRM, hang)
        signal.alarm(10)
        try:
            with pytest.raises(CorruptModelFileError, match="is truncated"):
                load_static_vectors(trunc)
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)


# ------------------------------------------------------------------------ 10. relative --model ./x
def test_relative_folder_still_loads_after_the_working_directory_changes(tmp_path, monkeypatch):
    _save_tiny(tmp_path / "work" / "enc")
    monkeypatch.chdir(tmp_path / "work")
    spec = str(ModelRef.parse("./enc"))  # what a chapter receives from `--model ./enc`
    monkeypatch.chdir(tmp_path)  # the runner executes the chapter from another folder
    lm = resolve_model(spec, device="cpu")
    assert lm.name == "enc" and lm.source == str(tmp_path / "work" / "enc")


# ------------------------------------------------------------------------ 11. folder without tokenizer
@pytest.mark.probe(
    "a folder without tokenizer files (also through sentence-transformers, in the classifiers chapter)",
    '"no tokenizer in FOLDER"',
)
def test_folder_without_tokenizer_says_so(tmp_path):
    folder = _save_tiny(tmp_path / "no-tok", tokenizer=False)
    with pytest.raises(
        NoTokenizerError, match=r"no tokenizer in .*no-tok \(expected one of: tokenizer.json, vocab.txt"
    ):
        resolve_model(str(folder), device="cpu")


def test_a_sentence_transformers_folder_without_tokenizer_says_so(tmp_path):
    """The classifiers chapter's route (before: sentence-transformers built a tokenizer with no vocabulary and
    embedded every sentence as unknown tokens, silently)."""
    folder = _save_tiny(tmp_path / "no-tok", tokenizer=False)
    with pytest.raises(NoTokenizerError, match=r"no tokenizer in .*no-tok \(expected one of: tokenizer.json"):
        _sbert_model(str(folder))


# ------------------------------------------------------------------------ 12. a Hub id offline
@pytest.mark.probe(
    "a Hub id used offline",
    '"not cached, and offline" with what to do',
)
def test_hub_id_of_a_registry_model_offline_says_not_cached_and_offline(no_network, tmp_path):
    from replib.methods.classifiers import polarity_setup

    spec = str(ModelRef.parse("sentence-transformers/all-mpnet-base-v2"))
    with pytest.raises(ModelUnavailableError, match="not in the local Hugging Face cache and this machine is offline"):
        polarity_setup(spec, n_items=12, seed=0, cache_dir=tmp_path, progress=False)
    with pytest.raises(ModelUnavailableError, match="not in the local Hugging Face cache.*--model /path/to/model"):
        resolve_model("someone/not-cached-anywhere")


# ------------------------------------------------------------------------ 13. wrong kind of model
@pytest.mark.probe(
    "a text model given to the protein chapter",
    '"this chapter needs a protein model": the chapter is not run (one line, no kernel started), the others run',
)
def test_protein_chapter_refuses_a_text_model_before_loading_it(tmp_path):
    text_folder = _save_tiny(tmp_path / "my-text-encoder")
    esm_folder = _save_tiny(tmp_path / "my-esm", family="esm")
    vec = tmp_path / "glove.txt"
    vec.write_text("the 0.1 0.2\n")
    for spec in (str(text_folder), "bert-base-uncased", "tiny-bert"):
        with pytest.raises(WrongModelKindError, match="this chapter needs a protein model; .* is a text model"):
            require_protein_model(spec)
    with pytest.raises(WrongModelKindError, match="glove is a word-vector file"):
        require_protein_model(str(vec))
    assert [require_protein_model(s) for s in (str(esm_folder), "prot_bert", "tiny-protxlnet")] == [
        "esm",
        "protbert",
        "protxlnet",
    ]


# ------------------------------------------------------------------------ the Hub route, from a local cache
def _hub_cache(cache: Path, repo: str, folder: Path, commit: str = "0123456789abcdef0123456789abcdef01234567") -> Path:
    """``folder``'s files laid out as the Hugging Face cache holds ``repo`` at ``main`` (no network needed)."""
    root = cache / ("models--" + repo.replace("/", "--"))
    snap = root / "snapshots" / commit
    snap.mkdir(parents=True)
    for f in folder.iterdir():
        (snap / f.name).write_bytes(f.read_bytes())
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text(commit)
    return snap


def test_cached_hub_model_loads_offline_with_its_commit_and_code_is_refused(no_network, tmp_path):
    cache = tmp_path / "hub"
    _hub_cache(cache, "someone/tiny-enc", _save_tiny(tmp_path / "src"))
    lm = resolve_model("someone/tiny-enc", cache_dir=cache, device="cpu")
    commit = "0123456789abcdef0123456789abcdef01234567"  # what refs/main points at, not "main"
    assert lm.identity == {"hub": "someone/tiny-enc", "commit": commit, "dtype": "torch.float32"}
    assert lm.source == f"hf:someone/tiny-enc@{commit}" and lm.spec.revision == commit
    assert lm.spec.recipe == "text" and lm.ref.slug == "someone_tiny_enc"
    assert embed_sentences(lm, TEXTS, progress=False).means.shape == (3, 32)
    _hub_cache(cache, "someone/evil", _folder_with_code(tmp_path / "evil", tmp_path / "marker.txt"))
    with pytest.raises(UntrustedCodeError, match="someone/evil@main: .*config.json has an 'auto_map'"):
        resolve_model("someone/evil", cache_dir=cache, device="cpu")
    assert not (tmp_path / "marker.txt").exists()
