"""``python -m replib run --model``: model specs reach every chapter's ``models`` parameter, and claims bound
to the paper's models are not reported as reproduced on another model (issue 14)."""

import json
import shutil
from pathlib import Path

import pytest

from bookkit.run import runner

FIXTURES = Path(__file__).parent / "fixtures" / "runner"


def test_model_options_are_parsed_once_at_the_edge(tmp_path):
    from bookkit.cli import _model_specs
    from replib.models import ModelRef

    chapters = ["good", "wrong"]
    got = _model_specs(["tiny-bert", "good=tiny-gpt2", "random:gpt2", "good=gpt2"], chapters, tmp_path)
    parse = ModelRef.parse
    assert got == {"*": (parse("tiny-bert"), parse("random:gpt2")), "good": (parse("tiny-gpt2"), parse("gpt2"))}
    assert _model_specs(None, chapters, tmp_path) == {}
    with pytest.raises(ValueError, match="empty"):
        _model_specs(["good="], chapters, tmp_path)
    with pytest.raises(ValueError, match="'x=y' is neither a registry key"):
        _model_specs(["x=y"], chapters, tmp_path)  # not a chapter's name: the whole value is the spec


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runner-models") / "project"
    shutil.copytree(FIXTURES, tmp)
    nb = tmp / "notebooks" / "good.md"
    text = nb.read_text().replace("profile = None\n", "profile = None\nmodels = None\n", 1)
    nb.write_text(text + '\n```{code-cell}\nrecord("models_seen", models)\n```\n')
    return tmp


@pytest.mark.chapter
def test_models_reach_the_chapter_and_paper_values_are_not_compared(project):
    models = {"*": ["/some folder/my-model", "org/name@abc"]}
    rep = runner.run(
        "smoke", chapters=["good"], out_dir=project / "out", root=project, progress=lambda *_: None, models=models
    )
    import nbformat

    from replib.record import read_records

    records = read_records(nbformat.read(str(project / "out" / "notebooks" / "good.ipynb"), as_version=4))
    assert records["models_seen"] == models["*"]  # a list, through papermill's YAML parameters
    claims = {c["key"]: c for c in rep["claims"]}
    assert claims["answer"]["status"] == "unverified" and "bound to the paper's models" in claims["answer"]["detail"]
    assert claims["flag"]["status"] == "consistent"  # a property claim still applies to any model
    assert rep["models_override"] == models and rep["chapters"][0]["models_override"] == models["*"]
    assert "rehearsal" not in rep


@pytest.mark.chapter
def test_rehearsal_is_labelled_and_needs_models(project):
    with pytest.raises(ValueError, match="--model"):
        runner.run("paper", chapters=["good"], root=project, progress=lambda *_: None, rehearsal=True)
    rep = runner.run(
        "smoke",
        chapters=["good"],
        root=project,
        progress=lambda *_: None,
        models={"good": ["tiny-bert"]},
        rehearsal=True,
    )
    assert rep["rehearsal"] is True and all(c.get("rehearsal") for c in rep["claims"])
    assert (project / "build" / "runs" / "rehearsal" / "report.json").exists()
    assert "rehearsal" in {c["key"]: c for c in rep["claims"]}["answer"]["detail"]


@pytest.mark.chapter
def test_dashboard_labels_substituted_runs(project):
    from bookkit.book.report import dashboard_markdown

    rep = runner.run(
        "smoke", chapters=["good"], root=project, progress=lambda *_: None, models={"*": ["tiny-bert"]}, rehearsal=True
    )
    md = dashboard_markdown([rep])
    assert "Paper-scale rehearsal, not a reproduction" in md and "tiny-bert" in md
    rep = runner.run(
        "smoke",
        chapters=["good"],
        out_dir=project / "o2",
        root=project,
        progress=lambda *_: None,
        models={"*": ["tiny-bert"]},
    )
    assert "ran on the reader's models" in dashboard_markdown([rep])


def _fixture_as(tmp_path, chapter: str):
    """A copy of the fixture project whose good chapter is named ``chapter`` (file, claims and table of
    contents)."""
    root = tmp_path / "project"
    shutil.copytree(FIXTURES, root)
    notebooks = root / "notebooks"
    (notebooks / "good.md").rename(notebooks / f"{chapter}.md")
    claims = (notebooks / "good.claims.yml").read_text().replace("chapter: good", f"chapter: {chapter}", 1)
    (notebooks / f"{chapter}.claims.yml").write_text(claims)
    (notebooks / "good.claims.yml").unlink()
    (root / "_toc.yml").write_text((root / "_toc.yml").read_text().replace("notebooks/good", f"notebooks/{chapter}"))
    return root


@pytest.mark.chapter
def test_a_text_model_given_to_the_protein_chapter_is_refused_before_it_runs(tmp_path):
    """Issue 28, 13: one line naming the refusal, no kernel started (before: the chapter ran and each of its
    claims failed with the same refusal)."""
    root = _fixture_as(tmp_path, "protein_isotropy")
    lines = []
    rep = runner.run(
        "smoke", chapters=["protein_isotropy"], root=root, progress=lines.append, models={"*": ["tiny-bert"]}
    )
    (entry,) = rep["chapters"]
    assert entry["status"] == "error" and rep["claims"] == [] and rep["summary"]["chapter_failures"] == 1
    assert entry["error"].startswith("WrongModelKindError: this chapter needs a protein model; tiny-bert is a text")
    assert entry["models_override"] == ["tiny-bert"]
    assert any(x.startswith("[protein_isotropy] not run: WrongModelKindError") for x in lines)
    assert not (root / "build" / "runs" / "smoke" / "notebooks" / "protein_isotropy.ipynb").exists()
    rep = runner.run(
        "smoke", chapters=["protein_isotropy"], root=root, progress=lines.append, models={"*": ["tiny-esm"]}
    )
    assert rep["chapters"][0]["status"] == "ok"  # a protein model runs


@pytest.mark.chapter
def test_the_training_chapter_says_model_does_not_apply_and_runs_on_its_own(tmp_path):
    """The training chapter trains its own models: ``--model`` is not passed to it (it ran before and silently
    ignored it), the run says so, and the chapter's entry carries no reader's model."""
    root = _fixture_as(tmp_path, "training_dynamics")
    lines = []
    rep = runner.run(
        "smoke", chapters=["training_dynamics"], root=root, progress=lines.append, models={"*": ["tiny-bert"]}
    )
    (entry,) = rep["chapters"]
    assert entry["status"] == "ok" and "models_override" not in entry
    assert any(x.startswith("[training_dynamics] --model does not apply") for x in lines)
    executed = json.loads((root / "build" / "runs" / "smoke" / "notebooks" / "training_dynamics.ipynb").read_text())
    injected = [c for c in executed["cells"] if "injected-parameters" in c.get("metadata", {}).get("tags", [])]
    assert injected and all("tiny-bert" not in "".join(c["source"]) for c in injected)  # not passed as a parameter


def test_an_expected_failure_of_the_profiles_model_that_holds_on_another_model_is_consistent():
    from bookkit.claims.checker import XFAIL_HOLDS
    from bookkit.run.run_report import bind_to_paper_models

    holds = {
        "check": "property gt 3.4",
        "status": "failed",
        "detail": f"{XFAIL_HOLDS}(MiniLM has little to gain) but holds now (9.2 gt 3.4): update the claims file",
    }
    broken = {"check": "property gt 5.0", "status": "failed", "detail": "check failed: property does not hold"}
    kept = {"check": "property gt 0", "status": "expected_failure", "detail": "does not hold here, as documented"}
    out = bind_to_paper_models([holds, broken, kept], ["/models/wide"], rehearsal=False)
    assert out[0]["status"] == "consistent" and "holds on this model" in out[0]["detail"]
    assert "update the claims file" not in out[0]["detail"]
    assert [r["status"] for r in out[1:]] == ["failed", "expected_failure"]  # a failing property stays failing
    assert holds["status"] == "failed"  # the input is not changed


@pytest.mark.chapter
@pytest.mark.probe(
    "the training chapter's preparation for several seeds fails (its declaration's `prepare`)",
    'one line, "preparation failed, each seed does its own", and the seeds run as without it (each '
    "notebook trains what is missing and reports what fails); runs not yet started are cancelled, "
    "the workers end with the call",
)
def test_the_training_chapters_preparation_runs_once_for_the_seeds_about_to_execute(tmp_path, monkeypatch):
    """The chapter's declared ``prepare``: before executing two or more seeds of the training chapter, the runner calls its
    preparation once with exactly those seeds (not for seeds reused unchanged, not for one seed), and the
    chapter's time includes it."""
    root = _fixture_as(tmp_path, "training_dynamics")
    calls = []

    def fake(chapter, profile, seeds, progress=True):
        calls.append((chapter, profile, list(seeds)))
        return [("text", s) for s in seeds]

    monkeypatch.setattr(runner, "prepare_chapter", fake)
    lines = []
    rep = runner.run("smoke", chapters=["training_dynamics"], root=root, progress=lines.append, seeds=[0, 1])
    assert calls == [("training_dynamics", "smoke", [0, 1])]
    (entry,) = rep["chapters"]
    assert entry["status"] == "ok" and entry["prepare_seconds"] >= 0
    per_seed = sum(s["seconds"] for s in entry["seeds"].values())
    assert entry["seconds"] == pytest.approx(per_seed + entry["prepare_seconds"], abs=0.15)
    assert any(
        x.startswith("[training_dynamics] prepared for seeds 0 1 in ") and x.endswith("(text seed 0, text seed 1)")
        for x in lines
    )
    before = lines.index("[training_dynamics] preparing seeds 0 1 ...")  # announced, after a progress line
    assert lines[before - 1].startswith("[progress] training_dynamics seed 0: ")
    runner.run("smoke", chapters=["training_dynamics"], root=root, progress=lines.append, seeds=[0, 1, 2])
    assert calls[1:] == []  # seeds 0 and 1 reused unchanged: seed 2 alone prepares nothing (its notebook trains)
    runner.run("smoke", chapters=["training_dynamics"], root=root, progress=lines.append, seeds=[1, 2], force=True)
    assert calls[1:] == [("training_dynamics", "smoke", [1, 2])]

    def broken(chapter, profile, seeds, progress=True):
        raise OSError("disk full")

    monkeypatch.setattr(runner, "prepare_chapter", broken)  # a failed preparation: the seeds run as without one
    rep = runner.run("smoke", chapters=["training_dynamics"], root=root, progress=lines.append, seeds=[3, 4])
    assert rep["chapters"][0]["status"] == "ok" and "prepare_seconds" not in rep["chapters"][0]
    assert "[training_dynamics] preparation failed, each seed does its own: OSError: disk full" in lines
    monkeypatch.setattr(runner, "prepare_chapter", fake)
    other = _fixture_as(tmp_path / "other", "classifiers")
    runner.run("smoke", chapters=["classifiers"], root=other, progress=lines.append, seeds=[0, 1])
    assert len(calls) == 2  # a chapter without a preparation
