"""One configuration type for every chapter: ``replib.config.ChapterConfig`` built by ``chapter_config`` from each
chapter's table, validated by the project's one JSON Schema validator."""

import copy
import pickle
from pathlib import Path

import pytest

from replib.config import (
    CHAPTERS,
    SHARED_ARTEFACTS,
    Params,
    chapter_config,
    chapter_table,
    execution_order,
    profile_params,
)
from replib.profiles import PROFILES
from replib.schema import SchemaError

ROOT = Path(__file__).resolve().parents[1]


def test_every_chapter_has_a_table_and_every_notebook_a_config():
    notebooks = {p.stem for p in (ROOT / "notebooks").glob("*.md")}
    assert set(CHAPTERS) == notebooks
    for chapter in CHAPTERS:
        source = (ROOT / "notebooks" / f"{chapter}.md").read_text()
        assert f'chapter_config("{chapter}", profile' in source, (
            f"{chapter} does not build its parameters by chapter_config"
        )


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
@pytest.mark.parametrize("profile", PROFILES)
def test_every_table_follows_its_schema(chapter, profile):
    params = profile_params(chapter, profile)
    assert isinstance(params["models"], list)
    cfg = chapter_config(chapter, profile, seed=3)
    assert cfg.chapter == chapter and cfg.profile == profile and cfg.seed == 3
    assert cfg.model_specs == params["models"]
    assert pickle.loads(pickle.dumps(cfg)) == cfg  # travels to worker processes as it is


def test_a_table_that_breaks_its_schema_names_chapter_profile_and_place(monkeypatch):
    table = chapter_table("isoscore")
    bad = copy.deepcopy(table.TABLE)
    bad["offline"]["sweep"] = "many"
    monkeypatch.setattr(table, "TABLE", bad)
    with pytest.raises(SchemaError, match=r"isoscore config \(offline\): sweep: 'many' is not of type 'integer'"):
        chapter_config("isoscore", "offline")
    bad["offline"]["sweep"] = 21
    bad["offline"]["typo"] = 1
    with pytest.raises(SchemaError, match="isoscore config .offline.*typo"):
        chapter_config("isoscore", "offline")


def test_bad_arguments_are_refused_clearly():
    with pytest.raises(ValueError, match="unknown chapter 'isoscores'"):
        chapter_config("isoscores", "smoke")
    with pytest.raises(ValueError, match="unknown profile 'fast'"):
        chapter_config("isoscore", "fast")
    with pytest.raises(ValueError, match="seed must be an integer"):
        chapter_config("isoscore", "smoke", seed="0")
    with pytest.raises(ValueError, match="model spec"):
        chapter_config("isoscore", "smoke", models=3)


def test_profile_none_is_automatic(monkeypatch):
    monkeypatch.setenv("REPLIB_PROFILE", "smoke")
    assert chapter_config("isoscore", None).profile == "smoke"


def test_params_are_read_only_with_attribute_and_item_access():
    cfg = chapter_config("manifolds", "smoke")
    assert cfg.ks == cfg["ks"] == (2, 3, 4, 5) and cfg.get("nothing", 7) == 7 and "ks" in cfg
    assert isinstance(cfg.corpora, Params) and cfg.corpora.ptb == ("ptb", "test", 250)
    with pytest.raises(AttributeError, match="manifolds config .smoke. has no parameter 'kss'"):
        _ = cfg.kss
    with pytest.raises(KeyError, match="no parameter 'kss'"):
        _ = cfg["kss"]
    with pytest.raises(AttributeError, match="read-only"):
        cfg.params.ks = (2,)
    with pytest.raises(TypeError):
        cfg.params["ks"] = (2,)
    with pytest.raises(AttributeError):
        cfg.profile = "paper"  # frozen
    assert cfg.params.thaw()["ks"] == [2, 3, 4, 5]  # a plain editable copy


def test_replace_changes_parameters_and_refuses_unknown_ones():
    cfg = chapter_config("manifolds", "smoke")
    small = cfg.replace(ks=(2, 3), lid_k=10)
    assert small.ks == (2, 3) and small.lid_k == 10 and cfg.ks == (2, 3, 4, 5) and small.models == cfg.models
    with pytest.raises(KeyError, match="no parameters"):
        cfg.replace(kss=(2,))


def test_models_are_the_readers_or_the_profiles():
    assert chapter_config("isoscore", "offline").model_specs == ["all-MiniLM-L6-v2"]
    assert chapter_config("isoscore", "offline", models=[]).model_specs == ["all-MiniLM-L6-v2"]
    cfg = chapter_config("isoscore", "offline", models="gpt2")
    assert cfg.model_specs == ["gpt2"] and cfg.models[0].slug == "gpt2"
    assert chapter_config("training_dynamics", "smoke").models == ()


def test_derived_parameters_depend_on_the_chosen_models(tmp_path):
    own = chapter_config("classifiers", "offline")
    assert own.sbert_model == own.sbert_label == "all-MiniLM-L6-v2"
    mine = chapter_config("classifiers", "offline", models=["gpt2", "all-MiniLM-L6-v2"])
    assert mine.sbert_model == "gpt2" and mine.sbert_label == "gpt2"
    assert chapter_config("classifiers", "offline", models="all-MiniLM-L6-v2").sbert_label == "minilm"


def test_a_maker_of_a_shared_artefact_runs_before_its_readers():
    """The training chapter makes the trained runs the protein chapter reads: executed first; the rest keep
    their order, and a maker or reader run alone is unchanged."""
    book = list(CHAPTERS)
    order = execution_order(book)
    assert sorted(order) == sorted(book)
    for maker, readers in SHARED_ARTEFACTS.items():
        assert maker in CHAPTERS and set(readers) <= set(CHAPTERS)
        assert all(order.index(maker) < order.index(r) for r in readers)
    assert [c for c in order if c not in SHARED_ARTEFACTS] == [c for c in book if c not in SHARED_ARTEFACTS]
    assert execution_order(["training_dynamics", "isoscore", "protein_isotropy"]) == [
        "training_dynamics",
        "isoscore",
        "protein_isotropy",
    ]
    assert execution_order(["protein_isotropy"]) == ["protein_isotropy"]
    assert execution_order(["isoscore", "training_dynamics"]) == ["isoscore", "training_dynamics"]
