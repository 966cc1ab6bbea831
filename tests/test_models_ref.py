"""ModelRef: one parsed type for the ``models`` parameter (chapters, CLI, card); relative paths made absolute at
the edge; slugs that never collide (issues 25 and 28)."""

import json
import os
import re

import pytest

from replib.models import (
    ModelRef,
    ModelUnavailableError,
    model_refs,
    model_slug,
    resolve_model,
)
from replib.models.resolve import model_n_layers

SLUG = re.compile(r"^[a-z0-9_]+$")


def _folder(path, n_layers=2):
    """A folder that parses as a transformers model (config.json only: nothing is loaded here)."""
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"model_type": "bert", "num_hidden_layers": n_layers}))
    return path


@pytest.fixture
def two_encoders(tmp_path):
    return _folder(tmp_path / "a" / "encoder"), _folder(tmp_path / "b" / "encoder", n_layers=3)


def test_kinds_names_and_round_trip(tmp_path, two_encoders):
    vec = tmp_path / "glove.small.txt"
    vec.write_text("the 0.1 0.2\n")
    cases = {
        "all-MiniLM-L6-v2": ("registry", "all-MiniLM-L6-v2", "minilm"),
        "sentence-transformers/all-MiniLM-L6-v2": ("registry", "all-MiniLM-L6-v2", "minilm"),  # alias -> key
        "prot_bert": ("registry", "prot_bert", "prot_bert"),
        "tiny-bert": ("tiny", "tiny-bert", "tinybert"),
        "tiny-esm": ("tiny", "tiny-esm", "tiny_esm"),
        "org/Some-Model": ("hub", "org/Some-Model", "org_some_model"),
        "org/Some-Model@abc1234": ("hub", "org/Some-Model", "org_some_model_abc1234"),
        str(two_encoders[0]): ("folder", "encoder", None),
        str(vec): ("static", "glove.small", None),
    }
    for spec, (kind, name, slug) in cases.items():
        ref = ModelRef.parse(spec)
        assert (ref.kind, ref.name) == (kind, name), spec
        assert SLUG.match(ref.slug), ref.slug
        if slug is not None:
            assert ref.slug == slug
        assert ModelRef.parse(str(ref)) == ref  # str(ref) is a spec that parses back to the same reference
        assert ModelRef.parse(ref) is ref
    assert ModelRef.parse("all-MiniLM-L6-v2").revision == "c5e0feb76a64bc391ec36b4f46f4c74ab2ce4dcb"
    assert ModelRef.parse("org/m@v2").revision == "v2" and ModelRef.parse("org/m").revision == "main"
    assert ModelRef.parse(str(vec)).path == vec and ModelRef.parse("gpt2").path is None


def test_relative_path_made_absolute_at_the_edge(tmp_path, two_encoders, monkeypatch):
    first, _ = two_encoders
    monkeypatch.chdir(tmp_path / "a")
    ref = ModelRef.parse("./encoder")
    assert ref.kind == "folder" and ref.spec == str(first) and os.path.isabs(ref.spec)
    assert ModelRef.parse("encoder", base_dir=tmp_path / "a") == ref
    monkeypatch.chdir(tmp_path / "b")  # a later step running elsewhere: the spec string still means folder a
    assert ModelRef.parse(str(ref)) == ref
    assert ModelRef.parse("./encoder") != ref  # ... while the same relative spec here is folder b
    assert [str(r) for r in model_refs("./encoder", ["x"])] == [str(tmp_path / "b" / "encoder")]


def test_slugs_are_unique_for_same_named_folders_and_hub_ids(two_encoders):
    a, b = (ModelRef.parse(p) for p in two_encoders)
    assert a.name == b.name == "encoder" and a.slug != b.slug
    assert a.slug.startswith("encoder_") and b.slug.startswith("encoder_")
    assert model_slug(str(two_encoders[0])) == a.slug and model_slug(a) == a.slug
    assert ModelRef.parse(str(two_encoders[0]) + "/").slug == a.slug  # the same folder, however written
    hub = {ModelRef.parse(s).slug for s in ("a/bert", "b/bert", "a/bert@v1", "a/bert@v2", "bert-base-uncased")}
    assert len(hub) == 5


def test_model_refs_default_single_list_and_errors(two_encoders):
    a, b = (str(p) for p in two_encoders)
    assert model_refs(None, ["gpt2", "tiny-bert"]) == (ModelRef.parse("gpt2"), ModelRef.parse("tiny-bert"))
    assert model_refs([], ["gpt2"]) == (ModelRef.parse("gpt2"),)
    assert [r.spec for r in model_refs(a, ["gpt2"])] == [a]
    assert [r.kind for r in model_refs([a, b, ModelRef.parse("gpt2")], [])] == ["folder", "folder", "registry"]
    with pytest.raises(ValueError, match="model spec or a list"):
        model_refs(3, [])
    with pytest.raises(ValueError, match="same model"):
        model_refs(["gpt2", "openai-community/gpt2"], [])  # an alias of the same registry model
    with pytest.raises(ModelUnavailableError, match="no such file"):
        model_refs(["./does-not-exist"], [])


@pytest.mark.parametrize(
    "spec,match",
    [
        ("", "empty model spec"),
        ("tiny-nope", "unknown tiny model"),
        ("./missing/model", "no such file or folder"),
        ("not a model!", "neither a registry key"),
        ("random:llama", r"unknown model 'random:llama'; choose from random:\{bert-base,gpt2\}"),
        ("trained:dna", r"unknown model 'trained:dna'; choose from trained:\{text,protein\}"),
    ],
)
def test_bad_specs(spec, match):
    with pytest.raises(ModelUnavailableError, match=match):
        ModelRef.parse(spec)


def test_empty_folder_is_no_model(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelUnavailableError, match="neither a transformers model"):
        ModelRef.parse(tmp_path / "empty")


def test_functions_accept_a_model_ref(two_encoders):
    a, b = (ModelRef.parse(p) for p in two_encoders)
    assert a.location == a.spec and (a.kind, a.layout, a.transformer_dir) == ("folder", "transformers", a.path)
    assert model_n_layers(a) == 2 and model_n_layers(b) == 3
    assert model_n_layers(ModelRef.parse("gpt2")) == 12
    tiny = ModelRef.parse("tiny-bert")
    lm = resolve_model(tiny)
    assert lm.name == "tiny-bert" and lm.ref == tiny and model_slug(lm) == "tinybert"


def test_every_former_grammar_parses_to_the_one_model_ref():
    """The atlas's specs, the registry's keys and Hub ids, and the SBERT models are one grammar (issue 38)."""
    from replib.atlas import atlas_entries
    from replib.methods.classifiers.sbert import sbert_ref
    from replib.models import get_spec, list_models

    for spec, kind in [("glove", "glove"), ("random:bert-base", "random"), ("random:gpt2", "random"),
                       ("trained:text", "trained"), ("trained:protein", "trained")]:  # fmt: skip
        ref = ModelRef.parse(spec)
        assert (ref.kind, ref.name, str(ref)) == (kind, spec, spec) and SLUG.match(ref.slug)
        assert ModelRef.parse(str(ref)) == ref and ref.path is None and ref.layout is None
    kinds = {e.ref.kind for p in ("smoke", "offline", "paper") for e in atlas_entries(p)}
    assert kinds == {"tiny", "glove", "trained", "random", "registry", "hub"}
    assert ModelRef.parse("sentence-transformers/all-mpnet-base-v2") == ModelRef.parse("all-mpnet-base-v2")
    sbert = list_models("sbert")
    assert len(sbert) == 3  # the SBERT models are the registry's: its key and its Hub id are one model
    for key in sbert:
        assert sbert_ref(get_spec(key).hf_id) == sbert_ref(key) == ModelRef.parse(key)
    for other in ("bert-base-uncased", "glove", "random:gpt2", "tiny-bert"):
        with pytest.raises(ValueError, match="not a sentence-transformers model"):
            sbert_ref(other)


def test_a_folder_named_as_a_registry_sbert_model_is_the_folder(tmp_path):
    """The rehearsal's stand-in folder ``.../all-MiniLM-L6-v2`` is loaded, not the packaged MiniLM of that name."""
    from replib.methods.classifiers.sbert import _sbert_source, sbert_ref

    folder = tmp_path / "all-MiniLM-L6-v2"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bert"}')
    assert _sbert_source(sbert_ref(str(folder))) == str(folder.resolve())
