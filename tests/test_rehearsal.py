"""The rehearsal (issue 39, item 4): a chapter's own notebook at a fraction of its sizes, its sizes scaled, the
rows of book/rehearsal.csv and the page that renders them."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import jupytext
import nbformat
import pytest
from test_data import needs_mirror  # the data tests' mirror check

from bookkit.bench import rehearsal as R
from replib.config import chapters, profile_params
from replib.data import load_wordnet_supersenses
from replib.models.fullsize import parameter_count
from replib.rehearsal import SIZES, at_full, glove_standin, read_forwards, scaled_params

ROOT = Path(__file__).resolve().parents[1]


def test_every_chapter_declares_its_sizes_and_they_are_parameters():
    assert set(SIZES) == set(chapters())
    for chapter, sizes in SIZES.items():
        params = profile_params(chapter, "paper")
        for name in [*sizes["scale"], *sizes.get("set", {})]:
            head, _, key = name.partition(".")
            assert head in params and (not key or key in params[head]), (chapter, name)


def test_the_smallest_share_serves_the_protein_chapter_enough_proteins_for_its_bootstrap():
    """At 0.005 the paper profile's 3,578 pair proteins became 18, fewer than the 20 groups the pair
    correlations' spread then took (a jackknife), and the rehearsal's notebook failed there; their bootstrap over
    the proteins needs its own least number of them."""
    from replib.methods.protein_isotropy.spreads import PAIR_BOOT_MIN_ITEMS

    p = scaled_params("protein_isotropy", profile_params("protein_isotropy", "paper"), 0.005)
    assert p["n_global"] >= p["n_pair_proteins"] >= PAIR_BOOT_MIN_ITEMS
    half = scaled_params("protein_isotropy", profile_params("protein_isotropy", "paper"), 0.5)["n_global"]
    assert half == math.ceil(0.5 * profile_params("protein_isotropy", "paper")["n_global"])  # above it: the share


@pytest.mark.slow  # a Python process that imports torch
def test_the_protein_rehearsal_trains_the_book_model_at_the_training_rehearsals_sizes(tmp_path):
    """The protein chapter trains the training chapter's protein LM when it is missing: in its rehearsal the
    paper profile's 6,000 updates on the current Swiss-Prot release (not in the mirror) failed the notebook."""
    code = (
        "import json, sys; from replib.rehearsal import install; install('protein_isotropy', 0.01, sys.argv[1]); "
        "from replib.training import config_for; print(json.dumps(config_for('paper')['protein']))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "log")], capture_output=True, text=True, check=True
    )
    served = json.loads(out.stdout.strip().splitlines()[-1])
    decl = SIZES["training_dynamics"]
    assert served == scaled_params("training_dynamics", decl["sizes"]("paper"), 0.01)["protein"]
    assert served["subset"] == "5k" and served["steps"] == math.ceil(0.01 * decl["sizes"]("paper")["protein"]["steps"])


@pytest.mark.slow  # a Python process that imports torch and builds ProteinBERT (16M parameters)
def test_the_rehearsal_serves_proteinbert_its_full_size_port_without_the_pickle(tmp_path):
    """The paper profile loads ProteinBERT's official pickle, which a rehearsal machine does not have: the
    kernel gets the full-size port on random weights instead (a GPU rehearsal failed on the missing pickle)."""
    code = (
        "import sys; from replib.rehearsal import install; install('protein_isotropy', 0.01, sys.argv[1]); "
        "from replib.models import loading; lm = loading.load_model('proteinbert'); "
        "print(type(lm.model).__name__, sum(p.numel() for p in lm.model.parameters()))"
    )
    env = dict(os.environ, REPLIB_CACHE_DIR=str(tmp_path / "cache"), HF_HUB_OFFLINE="1")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "log")], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    name, n = out.stdout.split()[-2:]
    assert name == "ProteinBERT" and int(n) == parameter_count("proteinbert")


def test_a_share_never_serves_fewer_items_than_labels():
    """At 1 % the supersense set-up got 23 words for its 23 supersenses and the silhouette refused them."""
    assert scaled_params("classifiers", profile_params("classifiers", "paper"), 0.01)["n_supersense"] >= 260


def test_scaled_params_scale_the_sizes_only(monkeypatch):
    params = profile_params("isoscore", "paper")
    out = scaled_params("isoscore", params, 0.1)
    assert out["n_lines"] == -(-params["n_lines"] // 10) and out["split"] == "test"
    assert {k: v for k, v in out.items() if k not in ("n_lines", "split")} == {
        k: v for k, v in params.items() if k not in ("n_lines", "split")
    }
    assert scaled_params("isoscore", params, 1.0)["n_lines"] == params["n_lines"]
    monkeypatch.setitem(SIZES, "x", {"scale": ("n",)})  # a whole data set whose count nothing declares
    with pytest.raises(ValueError, match="n is the whole data set"):
        scaled_params("x", {"n": None}, 0.5)


def test_training_runs_scale_by_their_updates():
    params = profile_params("training_dynamics", "paper")
    out = scaled_params("training_dynamics", params, 0.01)
    for run in ("protein", "text"):
        assert out[run]["steps"] == -(-params[run]["steps"] // 100) < params[run]["steps"]
        assert {k: out[run][k] for k in ("batch", "seq_len", "layers")} == {
            k: params[run][k] for k in ("batch", "seq_len", "layers")
        }
    assert out["protein"]["subset"] == "5k" and out["text"]["train_split"] == "test"  # the mirror's


@needs_mirror
def test_whole_data_sets_scale_to_the_count_of_the_data_layer():
    """A size that means the whole data set scales to the fraction of the data set's count (the published
    counts: Pang & Lee's 10,662 sentences, SNLI's 9,842 dev pairs, the STS sets' 3,108 / 1,500 / 3,750 / 3,000 /
    1,186 / 4,927 / 1,379 pairs; PTB's 42,068 and WikiText-2's 36,718 train lines), not refused."""
    out = scaled_params("classifiers", profile_params("classifiers", "paper"), 0.1)
    assert (out["n_polarity"], out["n_snli"]) == (1067, 985)
    sts = (3108 + 1500 + 3750 + 3000 + 1186 + 4927 + 1379) / 7
    out = scaled_params("cluster_isotropy", profile_params("cluster_isotropy", "paper"), 0.1)
    assert out["max_pairs"] == math.ceil(0.1 * sts) and len(out["clf_sizes"]) == 3
    out = scaled_params("manifolds", profile_params("manifolds", "paper"), 0.01)
    assert out["corpora"] == {"ptb": ["ptb", "test", 421], "wikitext2": ["wikitext2", "test", 368]}


@pytest.mark.slow
def test_glove_standin_has_gloves_shape_and_the_word_setups_find_their_words():
    """Where GloVe's package is missing the rehearsal's kernel serves a stand-in of its shape (400,000 x 50) whose
    first words are WordNet's, so that the supersense set-up (2,275 nouns) finds its words as in GloVe."""
    words, vectors = glove_standin()
    assert vectors.shape == (400_000, 50) and len(set(words)) == len(words) == 400_000
    nouns = load_wordnet_supersenses("noun")
    assert sum(w in nouns and w.isalpha() for w in words[:20_000]) > 2275


def test_a_timeout_ends_every_process_below_the_child(tmp_path):
    """A chapter killed at its time limit takes its kernel (a session of its own) with it."""
    pid_file = tmp_path / "pid"
    proc = subprocess.Popen(["bash", "-c", f"setsid sleep 60 & echo $! > {pid_file}; wait"])
    while not pid_file.exists() or not pid_file.read_text().strip():
        time.sleep(0.05)
    status, _ = R._wait(proc.pid, 0.5)
    grandchild = Path(f"/proc/{int(pid_file.read_text())}/stat")
    time.sleep(0.2)
    assert status == "timeout" and (
        not grandchild.exists() or grandchild.read_text().rsplit(")", 1)[1].split()[0] == "Z"
    )


def test_at_full_is_the_line_through_the_shares():
    assert at_full([0.01, 0.1], [12.0, 30.0]) == pytest.approx(210.0)  # 10 + 200 f
    assert at_full([0.1], [30.0]) == pytest.approx(300.0)  # one share: all of it grows


def test_rows_keep_other_chapters_and_resume(tmp_path, monkeypatch):
    calls = []

    def fake(chapter, fractions, workdir, root, **kw):
        calls.append(chapter)
        return {"chapter": chapter, "part": "all", "status": "failed" if chapter == "manifolds" else "ok",
                "cpu_seconds": 1.0, "peak_rss_gb": 0.1, "model": "a,b"}  # fmt: skip

    monkeypatch.setattr(R, "rehearse_chapter", fake)
    out = tmp_path / "rehearsal.csv"
    R.rehearse(["isoscore", "manifolds"], out, tmp_path, tmp_path)
    R.rehearse(["isoscore", "manifolds"], out, tmp_path, tmp_path)
    assert calls == ["isoscore", "manifolds", "manifolds"]  # the ok row kept
    rows = R.read_csv(out, R.COLUMNS)
    assert [(r["chapter"], r["part"], r["model"]) for r in rows] == [
        ("isoscore", "all", "a,b"),
        ("manifolds", "all", "a,b"),
    ]


def test_an_unmeasured_chapter_gets_no_number_and_the_command_that_measures_it(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "rehearse_chapter", lambda *a, **k: pytest.fail("--unmeasured runs nothing"))
    out = tmp_path / "rehearsal.csv"
    R.write_rows(out, [{"chapter": "isoscore", "part": "all", "status": "ok", "cpu_seconds": 3.0}])
    R.rehearse(["isoscore", "manifolds"], out, tmp_path, tmp_path, fractions=(0.01, 0.005), unmeasured=True)
    kept, new = R.read_csv(out, R.COLUMNS)
    assert (kept["chapter"], kept["cpu_seconds"]) == ("isoscore", "3.0")
    numbers = [k for k in R.COLUMNS if k not in ("chapter", "part", "status", "note") and new[k]]
    assert (new["chapter"], new["status"], numbers) == ("manifolds", "missing", [])
    assert (
        new["note"].startswith("not yet measured on a GPU")
        and "rehearsal manifolds --fraction 0.005 0.01" in new["note"]
    )


def test_the_books_table_has_one_all_row_per_chapter_and_the_page_renders_it():
    rows = R.read_csv(ROOT / "book" / "rehearsal.csv", R.COLUMNS)
    assert sorted(r["chapter"] for r in rows) == sorted(chapters()) and {r["part"] for r in rows} == {"all"}
    for r in rows:  # a row not measured to the end says why, names the command and shows no partial number
        assert r["status"] == "ok" or ("tools/gpu_rehearsal.sh" in r["note"] and not r["t4_hours_estimate"]
                                       and not r["cpu_seconds"] and not r["peak_rss_gb"] and not r["cache_gb"]), r  # fmt: skip
    assert "<!-- replib:table book/rehearsal.csv -->" in (ROOT / "book" / "rehearsal.md").read_text()


@pytest.mark.chapter
def test_the_rehearsal_runs_the_chapters_own_notebook(tmp_path):
    """The isoscore chapter in smoke size on a tiny config-built BERT: the executed notebook is the chapter's
    own (its code cells), run at half its sizes, and the logged forward passes are that kernel's."""
    work = tmp_path / "work"
    row = R.rehearse_chapter("isoscore", [0.5], work, ROOT, profile="smoke", models=["tiny-bert"], timeout=1800)
    assert row["status"] == "ok", (work / "isoscore" / "f0.5" / "run.log").read_text()[-3000:]
    executed = nbformat.read(ROOT / "build" / "runs" / "smoke" / "notebooks" / "isoscore.ipynb", as_version=4)
    ran = [c.source for c in executed.cells if c.cell_type == "code"]
    own = [c.source for c in jupytext.read(ROOT / "notebooks" / "isoscore.md").cells if c.cell_type == "code"]
    assert own and all(code in ran for code in own)  # every cell of the chapter's notebook, as written
    configs, batches = read_forwards(work / "isoscore" / "f0.5" / "forwards.jsonl")
    assert [c["config"]["hidden_size"] for c in configs.values()] == [32]  # the tiny BERT, in that kernel
    assert batches and all(b["batch"] >= 1 and b["length"] >= 1 and not b["training"] for b in batches)
    served = [json.loads(line)["served"] for line in (work / "isoscore" / "f0.5" / "forwards.jsonl").read_text().splitlines()
              if line.startswith('{"served"')]  # fmt: skip
    assert served and served[0]["n_lines"] == -(-profile_params("isoscore", "smoke")["n_lines"] // 2)
    assert float(row["t4_hours_estimate"]) > 0 and float(row["cpu_seconds"]) > 0


def test_the_whole_costs_at_least_what_a_share_cost(tmp_path):
    """At tiny shares the start-up's spread can hide the growth (the larger share took less CPU here): the
    estimate is then the largest share's, never the negative value of the line through them."""
    runs = [(0.005, 100.0, tmp_path / "a.jsonl"), (0.01, 90.0, tmp_path / "b.jsonl")]  # no forward passes logged
    cost = R.chapter_cost(runs)
    assert cost["cpu_seconds_other"] == 100.0 and cost["t4_hours_estimate"] == pytest.approx(100.0 / 3600)


def test_predicted_wall_is_the_line_through_the_earlier_shares():
    assert R.predicted_wall([(0.01, 40.0)], 0.1) == pytest.approx(400.0)  # one share: through the origin
    assert R.predicted_wall([(0.01, 40.0), (0.03, 60.0)], 0.1) == pytest.approx(130.0)  # 30 s + 1000 s x f


def _fake_runs(monkeypatch, seconds, status=None):
    """``_run`` replaced: a run at share f takes ``seconds(f)`` of a fake clock and ends with ``status(f)``."""
    clock, ran = [0.0], []

    def fake(chapter, f, work, root, profile, models, limit):
        ran.append((f, limit))
        took = min(seconds(f), limit)
        clock[0] += took
        st = (status or (lambda f: "ok"))(f) if seconds(f) <= limit else "timeout"
        return {"fraction": f, "status": st, "cpu": took, "wall": took, "peak_rss_gb": 1.0 + f, "cache_gb": 0.0,
                "log": Path("/nonexistent")}  # fmt: skip

    monkeypatch.setattr(R, "_run", fake)
    monkeypatch.setattr(R.time, "monotonic", lambda: clock[0])
    return ran


def test_a_share_predicted_past_the_deadline_is_left_out_and_the_row_rests_on_the_others(tmp_path, monkeypatch):
    ran = _fake_runs(monkeypatch, lambda f: 30 + 1000 * f)  # 40 s, 60 s, 130 s
    row = R.rehearse_chapter("isoscore", [0.1, 0.01, 0.03], tmp_path, tmp_path, models=[], deadline=200)
    assert [f for f, _ in ran] == [0.01, 0.03] and row["status"] == "ok"  # 100 s spent, 130 s predicted, 100 left
    assert row["fraction_of_paper"] == "0.03" and row["extrapolation"] == "33.3"
    assert "share 0.1 (predicted past the deadline) left out" in row["note"]
    ran = _fake_runs(monkeypatch, lambda f: 30 + 1000 * f)
    row = R.rehearse_chapter("isoscore", [0.01, 0.03, 0.1], tmp_path, tmp_path, models=[], deadline=240)
    assert [f for f, _ in ran] == [0.01, 0.03, 0.1] and row["fraction_of_paper"] == "0.1"


def test_a_share_that_passes_its_limit_keeps_the_smaller_shares_row(tmp_path, monkeypatch):
    ran = _fake_runs(monkeypatch, lambda f: 30 + 1000 * f if f < 0.1 else 1e6)
    row = R.rehearse_chapter("isoscore", [0.01, 0.03, 0.1], tmp_path, tmp_path, models=[], deadline=300)
    assert ran[-1] == (0.1, 200) and row["status"] == "ok" and row["fraction_of_paper"] == "0.03"
    assert "share 0.1 (timeout) left out" in row["note"]
    ran = _fake_runs(monkeypatch, lambda f: 10, status=lambda f: "failed")
    row = R.rehearse_chapter("isoscore", [0.01, 0.1], tmp_path, tmp_path, models=[], deadline=300)
    assert [f for f, _ in ran] == [0.01] and row["status"] == "failed"
    assert "a smaller share failed" in row["note"]


def test_a_rows_replaced_data_reads_as_words():
    """The book's table showed the manifolds chapter's corpora as a Python repr with None (the whole split)."""
    note = R._data_note("manifolds")
    assert "None" not in note and "[" not in note and "'" not in note and "ptb test" in note
