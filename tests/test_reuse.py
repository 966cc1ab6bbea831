"""Don't redo what is done: unchanged chapters are reused, anything that could change them re-executes."""

import json
import shutil
from pathlib import Path

import pytest

from bookkit.run import reuse, runner
from replib.embeddings.batching import RESULT_ENV
from replib.models import tiny_model

FIXTURES = Path(__file__).parent / "fixtures" / "runner"


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "p"
    shutil.copytree(FIXTURES, root)
    shutil.copytree(
        Path(__file__).resolve().parents[1] / "replib", root / "replib", ignore=shutil.ignore_patterns("__pycache__")
    )
    return root


def _run(root, out, **kw):
    msgs = []
    rep = runner.run("smoke", chapters=kw.pop("chapters", ["good"]), out_dir=out, root=root, progress=msgs.append, **kw)
    return rep, msgs


def _reused(msgs):
    return any("unchanged, reused" in m for m in msgs)


@pytest.mark.chapter
def test_second_run_reuses_and_keeps_the_report(project, tmp_path):
    out = tmp_path / "out"
    first, msgs = _run(project, out)
    assert not _reused(msgs) and (out / "notebooks" / "good.inputs.json").exists()
    mtime = (out / "notebooks" / "good.ipynb").stat().st_mtime_ns
    second, msgs = _run(project, out)
    assert _reused(msgs) and second["chapters"][0].get("reused")
    assert (out / "notebooks" / "good.ipynb").stat().st_mtime_ns == mtime
    assert [c["status"] for c in second["claims"]] == [c["status"] for c in first["claims"]]
    report = (out / "report.json").read_text()
    third, msgs = _run(project, out)
    assert third.get("unchanged") and (out / "report.json").read_text() == report  # nothing rewritten


@pytest.mark.parametrize(
    "change",
    [
        lambda root: (root / "notebooks" / "good.md").write_text((root / "notebooks" / "good.md").read_text() + "\n"),
        lambda root: (root / "replib" / "metrics" / "__init__.py").write_text(
            (root / "replib" / "metrics" / "__init__.py").read_text() + "\n# changed\n"
        ),
        lambda root: (root / "replib" / "data" / "mirror_files.tsv").write_text(
            (root / "replib" / "data" / "mirror_files.tsv").read_text() + "\n"
        ),
    ],
    ids=["chapter source", "replib code", "data registry"],
)
@pytest.mark.chapter
def test_a_changed_input_re_executes(project, tmp_path, change):
    out = tmp_path / "out"
    _run(project, out)
    change(project)
    _, msgs = _run(project, out)
    assert not _reused(msgs)


@pytest.mark.chapter
def test_another_seed_or_force_re_executes(project, tmp_path):
    out = tmp_path / "out"
    _run(project, out, seeds=[0])
    _, msgs = _run(project, out, seeds=[1])
    assert not _reused(msgs)
    _, msgs = _run(project, out, seeds=[1])
    assert _reused(msgs)
    _, msgs = _run(project, out, seeds=[1], force=True)
    assert not _reused(msgs)


@pytest.mark.chapter
def test_a_failed_execution_is_never_reused(project, tmp_path):
    out = tmp_path / "out"
    rep, _ = _run(project, out, chapters=["broken"])
    assert rep["chapters"][0]["status"] != "ok"
    assert not (out / "notebooks" / "broken.inputs.json").exists()
    _, msgs = _run(project, out, chapters=["broken"])
    assert not _reused(msgs)


@pytest.mark.chapter
def test_a_changed_claims_file_re_checks_without_re_executing(project, tmp_path):
    out = tmp_path / "out"
    first, _ = _run(project, out)
    claims = project / "notebooks" / "good.claims.yml"
    claims.write_text(
        claims.read_text().replace("smoke: {tolerance: {abs: 0.01}}", "smoke: {tolerance: {abs: 0.0001}}")
    )
    second, msgs = _run(project, out)
    assert _reused(msgs)
    status = {c["key"]: c["status"] for c in second["claims"]}
    assert status["answer"] == "failed"  # 0.501 is outside ±0.0001 of 0.5: the new check ran on the kept notebook


@pytest.mark.chapter
def test_a_tampered_or_partial_manifest_is_not_trusted(project, tmp_path):
    out = tmp_path / "out"
    _run(project, out)
    m = out / "notebooks" / "good.inputs.json"
    doc = json.loads(m.read_text())
    doc["parts"]["parameters"]["profile"] = "offline"  # parts no longer match the fingerprint
    m.write_text(json.dumps(doc))
    _, msgs = _run(project, out)
    assert not _reused(msgs)
    m.write_text(m.read_text()[:40])  # truncated
    _, msgs = _run(project, out)
    assert not _reused(msgs)


def test_fingerprint_parts(project):
    fp = reuse.fingerprint(project, "good", {"profile": "smoke", "seed": 3})
    assert set(fp["parts"]) == {"chapter_source", "replib_code", "parameters", "python", "packages"}
    assert fp["parts"]["parameters"] == {"profile": "smoke", "seed": 3}
    assert fp != reuse.fingerprint(project, "good", {"profile": "smoke", "seed": 4})


@pytest.mark.probe(
    "a table that replib reads from `data/` changed after a chapter ran (a new training draw, a corrected paper number)",
    "a new fingerprint: the chapter re-executes",
)
def test_the_tables_replib_reads_from_data_change_the_fingerprint(project):
    """A chapter reads tables from ``data/`` beside ``replib`` (the papers' numbers, the training draws): a new
    row re-executes it."""
    table = project / "data" / "training_draws.csv"
    table.parent.mkdir(exist_ok=True)
    table.write_text("profile,task,config,seed,depth_spearman_final\n")
    before = reuse.fingerprint(project, "good", {"profile": "smoke"})["fingerprint"]
    table.write_text(table.read_text() + "offline,text,c0ffee,0,1.0\n")
    assert reuse.fingerprint(project, "good", {"profile": "smoke"})["fingerprint"] != before


@pytest.mark.probe(
    "a kept chapter run under other result-changing settings (`NVIDIA_TF32_OVERRIDE`, `CUBLAS_WORKSPACE_CONFIG`, ...)",
    "a new fingerprint: the chapter re-executes (the embedding cache keys them too)",
)
def test_a_setting_that_changes_results_changes_the_fingerprint(project, monkeypatch):
    for name in RESULT_ENV:
        monkeypatch.delenv(name, raising=False)
    plain = reuse.fingerprint(project, "good", {"profile": "smoke"})
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "1")  # TF32 matmuls in the chapter's kernel: other numbers
    tf32 = reuse.fingerprint(project, "good", {"profile": "smoke"})
    assert tf32["fingerprint"] != plain["fingerprint"] and tf32["parts"]["env"] == {"NVIDIA_TF32_OVERRIDE": "1"}
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")
    assert reuse.fingerprint(project, "good", {"profile": "smoke"})["fingerprint"] != tf32["fingerprint"]


def test_an_unchanged_book_is_not_rebuilt(smoke_book, monkeypatch, tmp_path, capsys):
    from bookkit.book import book

    root = Path(__file__).resolve().parents[1]
    calls = []

    def fake_build(cmd, cwd):  # stands in for jupyter-book: writes an index.html
        calls.append(cmd)
        (Path(cwd) / "_build" / "html").mkdir(parents=True, exist_ok=True)
        (Path(cwd) / "_build" / "html" / "index.html").write_text("built")
        return type("P", (), {"returncode": 0})()

    monkeypatch.setattr(book.subprocess, "run", fake_build)
    stage = tmp_path / "book"
    html = book.build("smoke", root=root, stage_dir=stage)
    assert len(calls) == 1 and (html / "index.html").exists()
    assert book.build("smoke", root=root, stage_dir=stage) == html
    assert len(calls) == 1 and "not rebuilt" in capsys.readouterr().out
    book.build("smoke", root=root, stage_dir=stage, force=True)
    assert len(calls) == 2
    (stage / "_build" / "html" / "index.html").unlink()  # a missing build is rebuilt
    book.build("smoke", root=root, stage_dir=stage)
    assert len(calls) == 3 and not (tmp_path / "book.staging").exists()


def test_tree_digest_sees_content_and_names(tmp_path):
    from bookkit.book.book import tree_digest

    (tmp_path / "a").write_text("x")
    d0 = tree_digest(tmp_path)
    (tmp_path / "_build").mkdir()
    (tmp_path / "_build" / "out.html").write_text("ignored")
    assert tree_digest(tmp_path) == d0
    (tmp_path / "a").write_text("y")
    assert tree_digest(tmp_path) != d0


def test_a_model_folder_is_fingerprinted_by_its_content_not_its_path(project, tmp_path):
    """Re-pointing ``--model ./x`` at new weights re-executes; the same files elsewhere reuse (issue 28)."""

    def _save_tiny(folder, seed):
        lm = tiny_model("bert", seed=seed)
        lm.model.save_pretrained(folder)
        lm.tokenizer.save_pretrained(folder)
        return folder

    folder = _save_tiny(tmp_path / "x", seed=0)

    def fp(spec):
        return reuse.fingerprint(project, "good", {"profile": "smoke", "models": [spec]}, code="c")

    before = fp(str(folder))
    assert str(folder) not in json.dumps(before)  # no path in the fingerprint
    copy = tmp_path / "elsewhere" / "x"
    copy.parent.mkdir()
    assert fp(str(_save_tiny(copy, seed=0))) == before  # the same files at another path: reused
    _save_tiny(folder, seed=1)  # other weights at the same path: executed again
    assert fp(str(folder)) != before
