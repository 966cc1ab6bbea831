"""One configuration type for every chapter: ``replib.config.ChapterConfig`` built by ``chapter_config`` from each
chapter's table, validated by the project's one JSON Schema validator."""

import copy
import dataclasses
import importlib
import pickle
import re
from pathlib import Path

import pytest

from bookkit.project import toc_files
from replib.config import Params, chapter_config, chapters, execution_order, profile_params
from replib.profiles import PROFILES
from replib.schema import SchemaError

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = chapters()
TOC = toc_files(ROOT / "_toc.yml")


def test_every_chapter_is_declared_and_every_notebook_a_chapter_the_book_lists():
    """Discovery finds every chapter; each has its notebook, its page and its validation page in the table of
    contents (the book's order), and its papers in the bibliography: none can be left out silently."""
    notebooks = {p.stem for p in (ROOT / "notebooks").glob("*.md")}
    assert set(CHAPTERS) == notebooks
    # a chapter's name is its package's
    assert all(importlib.import_module(f"replib.methods.{n}").CHAPTER is ch for n, ch in CHAPTERS.items())
    assert sorted(f for f in TOC if f.startswith("notebooks/")) == sorted(f"notebooks/{c}" for c in CHAPTERS)
    assert {f"book/validation/{c}" for c in CHAPTERS} <= set(TOC)
    bib = set(re.findall(r"^@\w+\{([^,\s]+),", (ROOT / "book" / "references.bib").read_text(), re.M))
    assert {p for ch in CHAPTERS.values() for p in ch.papers} <= bib
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
    bad = copy.deepcopy(dict(CHAPTERS["isoscore"].table))
    bad["offline"]["sweep"] = "many"
    monkeypatch.setitem(CHAPTERS, "isoscore", dataclasses.replace(CHAPTERS["isoscore"], table=bad))
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
    book = [f.split("/", 1)[1] for f in TOC if f.startswith("notebooks/")]
    order = execution_order(book)
    assert sorted(order) == sorted(book)
    makers = {name for name, ch in CHAPTERS.items() if ch.readers}
    assert makers == {"training_dynamics"}
    for maker in makers:
        assert set(CHAPTERS[maker].readers) <= set(CHAPTERS)
        assert all(order.index(maker) < order.index(r) for r in CHAPTERS[maker].readers)
    assert [c for c in order if c not in makers] == [c for c in book if c not in makers]
    assert execution_order(["training_dynamics", "isoscore", "protein_isotropy"]) == [
        "training_dynamics",
        "isoscore",
        "protein_isotropy",
    ]
    assert execution_order(["protein_isotropy"]) == ["protein_isotropy"]
    assert execution_order(["isoscore", "training_dynamics"]) == ["isoscore", "training_dynamics"]
