"""Training from scratch (replib.training) and rogue dimensions (replib.metrics.rogue)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from replib.metrics import avg_pairwise_cosine, cosine_contributions, rogue_dimensions
from replib.training import (
    FLATTENING,
    TrainingInterrupted,
    config_for,
    eval_steps,
    flattening,
    generalisation_gap,
    log_spaced_steps,
    mask_tokens,
    over_minimum,
    relative_drop,
    residue_counts,
    train_lm,
    unigram_cross_entropy,
)
from replib.training.data import ESM_RECIPE, STANDARD_IDS, encode_protein, protein_batch
from replib.training.loop import lr_at

_MIRROR = Path(os.environ.get("REPLIB_DATA_MIRROR") or Path(__file__).resolve().parents[1].parent / "shared" / "data")
needs_mirror = pytest.mark.skipif(not _MIRROR.is_dir(), reason="offline data mirror not found (REPLIB_DATA_MIRROR)")


# ------------------------------------------------------------------------------------------ rogue dims
def test_cosine_contributions_sum_to_average_cosine(rng):
    X = rng.normal(size=(50, 7)) + rng.normal(size=7)
    assert np.isclose(cosine_contributions(X).sum(), avg_pairwise_cosine(X), atol=1e-12)


def test_cosine_contributions_match_brute_force(rng):
    X = rng.normal(size=(30, 5)) + 0.5
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    i, j = np.triu_indices(len(U), 1)
    brute = (U[i] * U[j]).mean(axis=0)
    assert np.allclose(cosine_contributions(X), brute, atol=1e-13)


def test_rogue_dimension_found_and_dominates(rng):
    X = rng.normal(size=(400, 20))
    X[:, 13] += 8.0  # one dimension with a large common offset: all rows point the same way along it
    r = rogue_dimensions(X, k=1)
    assert r.dims[0] == 13 and r.share > 0.95
    iso = rogue_dimensions(rng.normal(size=(400, 20)), k=3)
    assert abs(iso.avg_cosine) < 0.01  # isotropic Gaussian: no dominant dimension, cosine near 0


def test_rogue_dimensions_invariant_to_permutation_and_scale(rng):
    X = rng.normal(size=(100, 10)) + rng.normal(size=10)
    perm = rng.permutation(10)
    a, b = rogue_dimensions(X, 3), rogue_dimensions(3.7 * X[:, perm], 3)
    assert np.array_equal(perm[b.dims], a.dims) and np.isclose(a.share, b.share)


def test_rogue_dimensions_rejects_bad_k(rng):
    with pytest.raises(ValueError):
        rogue_dimensions(rng.normal(size=(10, 4)), k=5)


# ------------------------------------------------------------------------------------------ schedule/data
def test_log_spaced_steps():
    assert log_spaced_steps(16) == [0, 1, 2, 4, 8, 16]
    assert log_spaced_steps(100) == [0, 1, 2, 4, 8, 16, 32, 64, 100]
    assert log_spaced_steps(0) == [0]
    with pytest.raises(ValueError):
        log_spaced_steps(-1)


def test_eval_steps_are_the_checkpoints_and_eight_even_steps():
    assert eval_steps(512) == [0, 1, 2, 4, 8, 16, 32, 64, 128, 192, 256, 320, 384, 448, 512]
    assert set(log_spaced_steps(1000)) <= set(eval_steps(1000))
    assert {125, 250, 375, 500, 625, 750, 875, 1000} <= set(eval_steps(1000))
    assert eval_steps(6) == [0, 1, 2, 3, 4, 5, 6] and eval_steps(0) == [0]


def test_lr_warmup_and_decay():
    cfg = {"lr": 1.0, "warmup": 10, "steps": 100}
    assert lr_at(0, cfg) == 0 and lr_at(10, cfg) == 1.0 and np.isclose(lr_at(100, cfg), 0.1)


def test_mask_tokens_esm_recipe_proportions(rng):
    ids = rng.choice(STANDARD_IDS, size=(400, 500))
    maskable = np.ones_like(ids, dtype=bool)
    maskable[:, :2] = False
    inputs, labels = mask_tokens(ids, maskable, rng)
    sel = labels != -100
    assert not sel[:, :2].any()
    assert abs(sel[:, 2:].mean() - ESM_RECIPE["mask_prob"]) < 0.005
    assert np.array_equal(labels[sel], ids[sel])
    assert np.array_equal(inputs[~sel], ids[~sel])
    masked = (inputs == 32)[sel].mean()
    unchanged = (inputs == ids)[sel].mean()  # the 10 % kept plus random draws that hit the same residue
    assert abs(masked - 0.8) < 0.01
    assert abs(unchanged - (0.1 + 0.1 / 20)) < 0.01


def test_protein_batch_is_a_function_of_seed_and_step():
    seqs = ["ACDEFGHIKLMNPQRSTVWY" * 3, "MKV", "LLLLAAAAGG" * 5]
    a, b = protein_batch(seqs, 5, 0, 4, 16), protein_batch(seqs, 5, 0, 4, 16)
    c = protein_batch(seqs, 6, 0, 4, 16)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not all(np.array_equal(a[k], c[k]) for k in a)
    assert (a["clean_ids"][:, 0] == 0).all()  # <cls>


# ------------------------------------------------------------------------------ unigram baseline, flattening
def test_unigram_cross_entropy_matches_scikit_learn_log_loss(rng):
    from sklearn.metrics import log_loss

    counts = rng.integers(0, 50, size=12)
    counts[3] = 0  # an id never seen in training keeps a finite loss (add-one)
    targets = rng.integers(0, 12, size=300)
    p = (counts + 1) / (counts.sum() + 12)  # Laplace's rule, written out
    expected = log_loss(targets, np.tile(p, (len(targets), 1)), labels=np.arange(12))
    assert np.isclose(unigram_cross_entropy(counts, targets), expected, rtol=1e-12)
    # a model that has learned the frequencies of a skewed vocabulary beats the uniform guess ln V
    assert unigram_cross_entropy([1000, 10, 10, 10], [0] * 90 + [1] * 10) < np.log(4)


def test_unigram_cross_entropy_refuses_bad_input():
    with pytest.raises(ValueError, match="target ids"):
        unigram_cross_entropy([1, 2, 3], [0, 3])
    with pytest.raises(ValueError, match="no target"):
        unigram_cross_entropy([1, 2, 3], [])
    with pytest.raises(ValueError, match="non-negative"):
        unigram_cross_entropy([1, -2, 3], [0])


def test_residue_counts_equal_the_encoder_token_by_token():
    seqs = ["MKVLAAGIW", "xacdefghik", "BZUOX*-", ""]
    expected = np.bincount(np.concatenate([encode_protein(s) for s in seqs]), minlength=33)
    assert np.array_equal(residue_counts(seqs), expected)


def test_relative_drop_over_the_last_quarter():
    log = [{"step": s, "val_loss": v} for s, v in [(0, 5.0), (4, 3.0), (6, 2.5), (8, 2.4)]]
    assert np.isclose(relative_drop(log), (2.5 - 2.4) / 2.5)  # from step 6 = 3/4 of 8 to step 8
    assert np.isclose(relative_drop(log, 0.5), (3.0 - 2.4) / 3.0)
    rising = log[:-1] + [{"step": 8, "val_loss": 2.6}]
    assert relative_drop(rising) < 0  # overfitting: the loss rose again
    with pytest.raises(ValueError, match="no validation loss logged"):
        relative_drop([{"step": 0, "val_loss": 5.0}, {"step": 8, "val_loss": 2.0}])
    with pytest.raises(ValueError, match="last_frac"):
        relative_drop(log, 1.5)


def _curve(val, train):
    steps = [0, 256, 512, 768, 1024]
    return [{"step": s, "val_loss": v, "train_eval_loss": t} for s, v, t in zip(steps, val, train)]


def test_an_overfitted_curve_fails_the_flattening_criterion():
    # the last quarter changed the validation loss by less than 1 % in both runs; only the converged one is flat
    converged = _curve([7.6, 4.6, 4.3, 4.22, 4.2], [7.6, 4.5, 4.2, 4.12, 4.1])
    f = flattening(converged)
    assert f["flattened"] and np.isclose(f["gap"], 0.1 / 4.2) and f["over_min"] == 0.0
    # overfitted: the training loss fell on far below the validation loss, which rose from its minimum
    overfitted = _curve([7.6, 4.3, 3.98, 3.99, 4.01], [7.6, 4.0, 3.4, 3.0, 2.71])
    f = flattening(overfitted)
    assert f["rel_drop"] < FLATTENING["max_rel_drop"]  # the last-quarter criterion alone lets it pass
    assert f["gap"] > FLATTENING["max_gap"] and not f["flattened"]
    # the validation loss turned up by more than the bound: fails on its own, whatever the gap
    turned_up = _curve([7.6, 4.3, 3.98, 4.1, 4.2], [7.6, 4.3, 3.98, 4.05, 4.1])
    assert over_minimum(turned_up) > FLATTENING["max_over_min"] and not flattening(turned_up)["flattened"]
    with pytest.raises(ValueError, match="train_eval_loss"):
        generalisation_gap([{"step": 8, "val_loss": 2.0}])


# ------------------------------------------------------------------------------------------ cache key
@needs_mirror
def test_the_run_key_changes_with_each_input(tmp_path, monkeypatch):
    import shutil

    import pandas as pd

    from replib.training import cache, run_dir

    cfg = _tiny("protein")
    base = run_dir("protein", cfg, 0, root=tmp_path)
    assert run_dir("protein", dict(cfg), 0, root=tmp_path) == base  # the same inputs, the same folder
    assert run_dir("protein", cfg, 1, root=tmp_path) != base  # seed
    for field, value in [("steps", 7), ("lr", 1e-3), ("hidden", 32), ("subset", "20k"), ("n_val", 9)]:
        assert run_dir("protein", {**cfg, field: value}, 0, root=tmp_path) != base, field  # configuration
    # data: the same subset name with other sequences
    monkeypatch.setattr(cache, "load_swissprot", lambda subset: pd.DataFrame({"sequence": ["MKV", "ACDE"]}))
    cache._identity.cache_clear()
    assert run_dir("protein", cfg, 0, root=tmp_path) != base
    monkeypatch.undo()
    cache._identity.cache_clear()
    assert run_dir("protein", cfg, 0, root=tmp_path) == base
    # text: another corpus split, or the same split with one line changed
    text = _tiny("text")
    text_base = run_dir("text", text, 0, root=tmp_path)
    assert run_dir("text", {**text, "train_split": "test"}, 0, root=tmp_path) != text_base
    real = cache.load_lm_corpus
    monkeypatch.setattr(cache, "load_lm_corpus", lambda name, split: [*real(name, split)[:-1], "changed"])
    cache._identity.cache_clear()
    assert run_dir("text", text, 0, root=tmp_path) != text_base
    monkeypatch.undo()
    cache._identity.cache_clear()
    assert run_dir("text", text, 0, root=tmp_path) == text_base
    # code: one changed line in a training module, or another library version
    copy = tmp_path / "code"
    shutil.copytree(Path(cache.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert cache.code_version(copy) == cache.code_version()
    (copy / "loop.py").write_text((copy / "loop.py").read_text() + "\n# changed\n")
    changed = cache.code_version(copy)
    assert changed["source"] != cache.code_version()["source"]
    original = cache.code_version()
    monkeypatch.setattr(cache, "code_version", lambda: changed)
    assert run_dir("protein", cfg, 0, root=tmp_path) != base
    monkeypatch.setattr(cache, "code_version", lambda: {**original, "torch": "0.0"})
    assert run_dir("protein", cfg, 0, root=tmp_path) != base


# ------------------------------------------------------------------------------------------ resume
def _tiny(task):
    cfg = config_for("smoke")[task]
    cfg.update(steps=6, n_val=8, save_every=100, vocab=300, seq_len=16, batch=4)
    return cfg


def _weights(folder):
    from safetensors.numpy import load_file

    return load_file(str(folder / "model.safetensors"))


@needs_mirror
@pytest.mark.parametrize("task", ["protein", "text"])
def test_kill_and_resume_gives_bit_identical_weights(task, tmp_path):
    cfg = _tiny(task)
    full = train_lm(task, cfg, 3, root=tmp_path / "a", progress=False)

    def kill(step):
        if step == 5:  # resumable state was last saved at checkpoint step 4: step 5 is redone
            raise TrainingInterrupted(step)

    with pytest.raises(TrainingInterrupted):
        train_lm(task, cfg, 3, root=tmp_path / "b", callback=kill, progress=False)
    assert not (tmp_path / "b").joinpath(full.dir.name, "final").exists()
    resumed = train_lm(task, cfg, 3, root=tmp_path / "b", progress=False)
    wa, wb = _weights(full.final_dir), _weights(resumed.final_dir)
    assert wa.keys() == wb.keys()
    assert all(np.array_equal(wa[k], wb[k]) for k in wa)
    assert [r["step"] for r in resumed.log()] == eval_steps(6)
    assert [r["val_loss"] for r in resumed.log()] == [r["val_loss"] for r in full.log()]
    # a different seed gives different weights (the comparison can fail)
    other = train_lm(task, cfg, 4, root=tmp_path / "a", progress=False)
    assert not all(np.array_equal(wa[k], _weights(other.final_dir)[k]) for k in wa)


@needs_mirror
def test_a_run_killed_after_an_evaluation_only_step_resumes_to_the_same_result(tmp_path):
    cfg = {**_tiny("protein"), "steps": 12}  # evaluations at 3, 5, 6, 9, 11 besides the checkpoints 0, 1, 2, 4, 8
    assert set(eval_steps(12)) - set(log_spaced_steps(12)) == {3, 5, 6, 9, 11}
    full = train_lm("protein", cfg, 5, root=tmp_path / "a", progress=False)

    def kill(step):
        if step == 10:  # resumable state last saved at checkpoint 8: the evaluation at 9 is redone
            raise TrainingInterrupted(step)

    with pytest.raises(TrainingInterrupted):
        train_lm("protein", cfg, 5, root=tmp_path / "b", callback=kill, progress=False)
    resumed = train_lm("protein", cfg, 5, root=tmp_path / "b", progress=False)
    _same_run(full, resumed)
    assert resumed.training()["unigram"] == full.training()["unigram"]
    assert [r["step"] for r in resumed.log()] == eval_steps(12)


@needs_mirror
def test_final_folder_loads_through_model_layer(tmp_path):
    from replib.models import load_trained
    from replib.provenance import USED_MODELS
    from replib.training import CheckpointError

    run = train_lm("protein", _tiny("protein"), 0, root=tmp_path, progress=False)
    sums = json.loads((run.final_dir / "sha256.json").read_text())
    assert {"model.safetensors", "config.json", "vocab.txt"} <= set(sums)
    lm = load_trained(run.final_dir)
    assert lm.spec.recipe == "esm" and lm.spec.revision == "sha256:" + sums["model.safetensors"]
    assert any(e["resolved"] == lm.spec.revision for e in USED_MODELS)
    (run.final_dir / "model.safetensors").write_bytes(b"corrupt")
    with pytest.raises(ValueError, match="sha256"):
        load_trained(run.final_dir)
    with pytest.raises(CheckpointError, match=r"model\.safetensors: sha256 .* corrupted"):
        train_lm("protein", _tiny("protein"), 0, root=tmp_path, progress=False)  # a cached run is verified


@needs_mirror
@pytest.mark.parametrize("task", ["protein", "text"])
def test_the_recorded_unigram_baseline_scores_the_validation_tokens(task, tmp_path):
    from replib.training.loop import prepare_data

    cfg = _tiny(task)
    run = train_lm(task, cfg, 0, root=tmp_path, progress=False)
    data = prepare_data(task, cfg, 0, run.dir)
    if task == "protein":
        counts = np.bincount(np.concatenate([encode_protein(s) for s in data["train"]]), minlength=33)
        targets = np.concatenate([b["labels"][b["labels"] != -100] for b in data["val_batches"]])
    else:
        counts = np.bincount(data["train"], minlength=data["vocab_size"])
        targets = np.concatenate([b["input_ids"][:, 1:].ravel() for b in data["val_batches"]])
    expected = -np.mean([np.log((counts[t] + 1) / (counts.sum() + len(counts))) for t in targets])
    unigram = run.training()["unigram"]
    assert unigram["n_tokens"] == len(targets) and np.isclose(unigram["val_loss"], expected, rtol=1e-12)
    assert [r["step"] for r in run.log()] == eval_steps(cfg["steps"])  # the validation loss at every eval step
    assert not run.checkpoint(3).exists() and run.checkpoint(4).exists()  # weights at the checkpoints only
    # the loss on fixed training windows beside the validation loss at every logged step (the gap criterion)
    assert all(r["train_eval_loss"] > 0 for r in run.log())
    assert sum(b["input_ids"].shape[0] for b in data["train_eval_batches"]) == sum(
        b["input_ids"].shape[0] for b in data["val_batches"]
    )


def test_the_held_out_articles_cover_the_evaluation_words_and_are_not_trained_on():
    from replib.training.data import articles, hold_out

    lines = [" = A = ", " a b c ", " = = A1 = = ", " d e ", " = B = ", " f g h i ", " = C = ", " j k "]
    assert [len(g) for g in articles(lines)] == [4, 2, 2]  # a section heading stays inside its article
    held, rest = hold_out(lines, 13)  # article A has 13 words, its headings' included: A alone
    assert held == lines[:4] and rest == lines[4:]
    held, rest = hold_out(lines, 14)  # A is one word short: A and B
    assert held == lines[:6] and rest == lines[6:]
    with pytest.raises(ValueError, match="cannot hold out"):
        hold_out(lines, 100)


@needs_mirror
def test_the_offline_text_run_trains_on_every_article_but_the_held_out_ones():
    from replib.data.loaders import load_lm_corpus
    from replib.training.loop import text_lines

    cfg = config_for("offline")["text"]
    held, train = text_lines(cfg)
    test, valid = load_lm_corpus("wikitext2", "test"), load_lm_corpus("wikitext2", "valid")
    assert held + train[len(valid) :] == test and train[: len(valid)] == valid
    assert sum(len(line.split()) for line in held) >= cfg["n_val"] * cfg["seq_len"]  # the evaluation windows
    smoke = config_for("smoke")["text"]
    assert text_lines(smoke) == (test, valid)  # evaluation split not trained on: all of it evaluated


# ------------------------------------------------------------------ faults: kills, torn writes, corruption
_TRAIN_CHILD = """
import builtins, json, os, signal, sys, time
from replib.training import train_lm

task, cfg, root, mode, arg = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5])
callback = None
if mode == "tear-log":  # the arg-th write of the log writes half its text, reaches the disk, and the process dies
    real_open, seen = builtins.open, [0]

    class Torn:
        def __init__(self, fh):
            self.fh = fh

        def write(self, text):
            self.fh.write(text[: len(text) // 2])
            self.fh.flush()
            os.fsync(self.fh.fileno())
            os.kill(os.getpid(), signal.SIGKILL)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def __getattr__(self, name):
            return getattr(self.fh, name)

    def tearing_open(file, mode="r", *a, **k):
        fh = real_open(file, mode, *a, **k)
        if "log.jsonl" in str(file) and ("w" in mode or "a" in mode):
            seen[0] += 1
            if seen[0] == int(arg):
                return Torn(fh)
        return fh

    builtins.open = tearing_open
elif mode == "kill-at":  # kill -9 right after update number arg
    callback = lambda step: os.kill(os.getpid(), signal.SIGKILL) if step == int(arg) else None
elif mode == "start-at":  # wait for a common start time
    while time.time() < arg:
        time.sleep(0.001)
run = train_lm(task, cfg, 3, root=root, progress=False, callback=callback)
print(json.dumps(run.sha256()))
"""


def _train_child(task, cfg, root, mode, arg="0"):
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]), TQDM_DISABLE="1")
    return subprocess.Popen(
        [sys.executable, "-c", _TRAIN_CHILD, task, json.dumps(cfg), str(root), mode, str(arg)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _same_run(a, b):
    wa, wb = _weights(a.final_dir), _weights(b.final_dir)
    assert wa.keys() == wb.keys() and all(np.array_equal(wa[k], wb[k]) for k in wa)
    assert a.log() == b.log()


@needs_mirror
@pytest.mark.parametrize("mode, arg", [("tear-log", 3), ("kill-at", 5)])
@pytest.mark.probe(
    "a training run killed (SIGKILL) while it writes its log, or right after an update",
    "the resumed run equals the uninterrupted one, log included; no torn line, no temporary file left behind",
)
def test_a_run_killed_mid_write_resumes_to_the_uninterrupted_result(tmp_path, mode, arg):
    """A real ``kill -9``: in the middle of writing the log (its third row, half written and on disk), or
    right after an update; the resumed run equals the uninterrupted one, log included."""
    import signal

    cfg = _tiny("text")
    full = train_lm("text", cfg, 3, root=tmp_path / "a", progress=False)
    child = _train_child("text", cfg, tmp_path / "b", mode, arg)
    _, err = child.communicate(timeout=600)
    assert child.returncode == -signal.SIGKILL, err[-2000:]
    run_b = tmp_path / "b" / full.dir.name
    assert not (run_b / "final").exists()
    lines = (run_b / "log.jsonl").read_text().splitlines()
    assert all(json.loads(line)["step"] >= 0 for line in lines)  # no torn line: every line is a whole row
    resumed = train_lm("text", cfg, 3, root=tmp_path / "b", progress=False)
    _same_run(full, resumed)
    assert len((run_b / "log.jsonl").read_text().splitlines()) == len(eval_steps(cfg["steps"]))
    assert [p.name for p in run_b.rglob(".*.tmp")] == []  # the killed writer's temporary is gone


@needs_mirror
@pytest.mark.probe(
    "a corrupted checkpoint or resume state of a training run", "`CheckpointError` naming the file (sha256)"
)
def test_a_corrupted_checkpoint_or_resume_state_is_refused(tmp_path):
    from replib.training.loop import CheckpointError, load_checkpoint_model

    cfg = _tiny("protein")
    run = train_lm("protein", cfg, 3, root=tmp_path, progress=False)
    ck = run.checkpoint(4)
    assert (ck.parent / (ck.name + ".sha256")).read_text().split()[0] == _sha256_of(ck)
    load_checkpoint_model(run, 4)
    _flip_a_byte(ck)
    with pytest.raises(CheckpointError, match=r"step_000004\.safetensors: sha256 .* differs"):
        load_checkpoint_model(run, 4)

    def stop(step):
        if step == 5:
            raise TrainingInterrupted(step)

    with pytest.raises(TrainingInterrupted):
        train_lm("protein", cfg, 3, root=tmp_path / "b", callback=stop, progress=False)
    (state,) = (tmp_path / "b").glob("*/resume-*/optim.safetensors")
    _flip_a_byte(state)
    with pytest.raises(CheckpointError, match="optim.safetensors: sha256 .* corrupted"):
        train_lm("protein", cfg, 3, root=tmp_path / "b", progress=False)
    (state.parent / "optim.safetensors.sha256").unlink()
    with pytest.raises(CheckpointError, match="no sha256 recorded"):
        train_lm("protein", cfg, 3, root=tmp_path / "b", progress=False)


@needs_mirror
def test_a_resume_on_another_thread_count_is_warned_about(tmp_path):
    """Bit-identical resumes hold on the same thread count only (float sums reduce in another order): a
    resume on another count says so instead of silently drifting."""
    torch = pytest.importorskip("torch")

    def stop(step):
        if step == 3:
            raise TrainingInterrupted(step)

    cfg = {**_tiny("protein"), "threads": None}  # the process's thread count, whatever it is
    with pytest.raises(TrainingInterrupted):
        train_lm("protein", cfg, 3, root=tmp_path, callback=stop, progress=False)
    before = torch.get_num_threads()
    torch.set_num_threads(before + 1)
    try:
        with pytest.warns(UserWarning, match=rf"resumed on {before + 1} torch threads, trained so far on {before}"):
            train_lm("protein", cfg, 3, root=tmp_path, progress=False)
    finally:
        torch.set_num_threads(before)


@needs_mirror
def test_a_run_trains_on_its_configured_threads_and_gives_the_process_its_own_back(tmp_path):
    torch = pytest.importorskip("torch")
    cfg = _tiny("protein")
    assert cfg["threads"] == 1 and config_for("offline")["text"]["threads"] == 1  # the small profiles: one
    seen, before = [], torch.get_num_threads()
    torch.set_num_threads(before + 1)
    try:
        run = train_lm("protein", cfg, 3, root=tmp_path, callback=lambda _: seen.append(torch.get_num_threads()),
                       progress=False)  # fmt: skip
        assert set(seen) == {1} and torch.get_num_threads() == before + 1
    finally:
        torch.set_num_threads(before)
    state = json.loads(
        (run.dir / json.loads((run.dir / "resume.json").read_text())["folder"] / "state.json").read_text()
    )
    assert state["threads"] == 1


def _sha256_of(path):
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _flip_a_byte(path):
    data = bytearray(Path(path).read_bytes())
    data[len(data) // 2] ^= 0x01
    Path(path).write_bytes(bytes(data))


@needs_mirror
def test_two_processes_starting_together_train_one_run_once(tmp_path):
    import time

    cfg = _tiny("text")
    start = time.time() + 10.0  # both children have imported torch by then
    children = [_train_child("text", cfg, tmp_path, "start-at", start) for _ in range(2)]
    outs = [c.communicate(timeout=600) for c in children]
    assert [c.returncode for c in children] == [0, 0], [err[-2000:] for _, err in outs]
    assert json.loads(outs[0][0]) == json.loads(outs[1][0])  # the same final files
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    lines = (run_dir / "log.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == eval_steps(cfg["steps"])  # trained once


# ------------------------------------------------------------------------------------------ step ranges
def test_step_ranges_cover_the_updates_and_end_on_resume_points():
    from replib.training.ranges import step_ranges

    assert step_ranges(50_000, 1000, 3) == [(1, 17_000), (17_001, 33_000), (33_001, 50_000)]
    assert step_ranges(50_000, 1000, 1) == [(1, 50_000)]
    for steps, every, n in [(50_000, 1000, 2), (768, 64, 5), (17, 4, 4), (8, 4, 2)]:
        ranges = step_ranges(steps, every, n)
        assert len(ranges) == n and ranges[0][0] == 1 and ranges[-1][1] == steps
        assert all(b[0] == a[1] + 1 for a, b in zip(ranges, ranges[1:]))  # consecutive, nothing twice or left out
        assert all(last % every == 0 and first <= last for first, last in ranges[:-1])
    with pytest.raises(ValueError, match="cannot be cut"):
        step_ranges(6, 100, 2)  # no resume point below the last update
    with pytest.raises(ValueError, match="cannot be cut"):
        step_ranges(8, 4, 3)  # one resume point (4) for two cuts
    with pytest.raises(ValueError):
        step_ranges(0, 4, 1)


def test_n_ranges_is_the_fewest_that_fit():
    from replib.training.ranges import n_ranges

    assert [n_ranges(h, 2.5) for h in (0.0, 2.5, 2.51, 5.0, 5.05, 7.6)] == [1, 1, 2, 2, 3, 4]
    with pytest.raises(ValueError):
        n_ranges(1.0, 0.0)


@needs_mirror
@pytest.mark.parametrize("task", ["protein", "text"])
def test_a_run_trained_in_step_ranges_equals_the_uninterrupted_run(task, tmp_path):
    from replib.training.ranges import resume_step, step_ranges, train_until

    cfg = {**_tiny(task), "steps": 12, "save_every": 3}  # cuts at 3 and 9: resume points that are not checkpoints
    whole = train_lm(task, cfg, 7, root=tmp_path / "a", progress=False)
    ranges = step_ranges(12, 3, 3)
    assert ranges == [(1, 3), (4, 9), (10, 12)]
    for _, last in ranges[:-1]:
        part = train_until(task, cfg, 7, last, root=tmp_path / "b", progress=False)
        assert resume_step(part.dir) == last and not part.final_dir.exists()  # stopped there, resumable
    assert train_until(task, cfg, 7, 3, root=tmp_path / "b", progress=False).dir == part.dir  # past it: nothing
    assert resume_step(part.dir) == 9
    done = train_until(task, cfg, 7, 12, root=tmp_path / "b", progress=False)
    _same_run(whole, done)  # bit-identical weights and the same log, row by row
    with pytest.raises(ValueError, match="multiple of save_every"):
        train_until(task, cfg, 7, 5, root=tmp_path / "c", progress=False)


@needs_mirror
def test_the_chapters_range_parts_train_one_run_in_turn(tmp_path, monkeypatch):
    import dataclasses

    from replib.config import chapter_config
    from replib.methods import training_dynamics as td
    from replib.parts import Budget, Part
    from replib.training.ranges import resume_step

    monkeypatch.setenv("REPLIB_CACHE_DIR", str(tmp_path / "cache"))
    whole = chapter_config("training_dynamics", "smoke", seed=3)
    every = whole["protein"]["save_every"]
    select = (("tasks", ("protein",)), ("until", (every,)))
    first = Part("protein-1", "training_dynamics", 0.5, Budget(0.1, 1.0, 1.0), models=(), steps=(), select=select)
    runs = td.train_runs(dataclasses.replace(whole, part=first))  # a range before the last: trains, stops
    assert list(runs) == ["protein"] and resume_step(runs["protein"].dir) == every < whole["protein"]["steps"]
    assert not runs["protein"].final_dir.exists() and td.progress_table(runs).loc["protein", "updates_done"] == every
    done = td.train_runs(whole)["protein"]  # the whole chapter (as the last range): resumes the same folder
    assert done.dir == runs["protein"].dir and (done.final_dir / "sha256.json").exists()
    _same_run(train_lm("protein", config_for("smoke")["protein"], 3, root=tmp_path / "ref", progress=False), done)


def test_task_ranges_are_the_range_parts_selections():
    """The rehearsal reads a range's first update from ``task_ranges``: the same cuts as the chapter's parts."""
    from replib.config import chapter_parts
    from replib.methods import training_dynamics as td

    paper = config_for("paper")
    for task in td.TASKS:
        ranges = td.task_ranges("paper", paper, task)
        ends = [dict(p.select)["until"][0] for p in chapter_parts("training_dynamics", "paper")
                if dict(p.select).get("tasks") == (task,)]  # fmt: skip
        assert [last for _, last in ranges] == ends and len(ends) >= 1  # one range: a session holds each run
        assert [first for first, _ in ranges] == [1, *[e + 1 for e in ends[:-1]]]


def test_the_flags_margins_are_positive_where_the_flags_hold(rng):
    from replib.methods import training_dynamics as td
    from replib.metrics import isoscore, s_inter, s_intra

    n, d = 300, 8
    types = rng.integers(0, 20, size=n)
    X0 = rng.normal(size=(n, d))  # isotropic at "step 0"
    X1 = (
        rng.normal(size=(n, d)) * np.r_[3.0, np.ones(d - 1) * 0.3] + 2.0
    )  # one direction and a shared mean: anisotropic
    X1 += 0.5 * rng.normal(size=(20, d))[types]  # tokens of one type closer together
    margins = td._flag_margins({"max_per_type": 50}, seed=0)
    Z = np.column_stack([X0, X1, types])
    rise, fall = avg_pairwise_cosine(X1) - avg_pairwise_cosine(X0), isoscore(X0) - isoscore(X1)
    assert rise > 0 and fall > 0
    assert margins["avg_cos_rise"](Z) == pytest.approx(rise) and margins["isoscore_fall"](Z) == pytest.approx(fall)
    intra_inter = s_intra(X1, types, 50, seed=0) - s_inter(X1, types, seed=0)
    assert margins["sintra_minus_sinter_final"](Z) == pytest.approx(intra_inter)
    swapped = np.column_stack([X1, X0, types])  # the end before the start: every flag reversed
    assert margins["avg_cos_rise"](swapped) < 0 and margins["isoscore_fall"](swapped) < 0


@needs_mirror
@pytest.mark.parametrize("task", ["protein", "text"])
def test_the_kept_end_layers_are_the_checkpoints_last_layers(task, tmp_path):
    """The last layer at the first and final checkpoint that measure_run keeps (the flags' margins read them)
    equals a forward pass of each checkpoint over the evaluation tokens, computed here."""
    import torch

    from replib.training import end_layers, eval_inputs, hidden_states, load_checkpoint_model, measure_run

    run = train_lm(task, _tiny(task), 0, root=tmp_path, progress=False)
    mcfg = dict(config_for("smoke")["measure"], n_tokens=40)
    measure_run(run, mcfg, progress=False)
    ends = end_layers(run, mcfg)
    inputs = eval_inputs(run, mcfg["n_tokens"])
    for name, step in (("first", 0), ("final", run.steps[-1])):
        with torch.no_grad():
            model = load_checkpoint_model(run, step)
            out = model(
                input_ids=torch.from_numpy(inputs["input_ids"]),
                attention_mask=torch.from_numpy(inputs["attention_mask"]),
                output_hidden_states=True,
            )
        expected = out.hidden_states[-1][torch.from_numpy(inputs["positions"])].double().numpy()
        np.testing.assert_allclose(ends[name], expected, rtol=1e-6, atol=1e-6)
        assert not np.allclose(ends[name], hidden_states(load_checkpoint_model(run, step), inputs)[0])
    assert np.array_equal(ends["types"], inputs["input_ids"][inputs["positions"]])
    assert np.array_equal(ends["groups"], np.nonzero(inputs["positions"])[0]) and len(ends["types"]) == 40
    blocks = hidden_states(load_checkpoint_model(run, run.steps[-1]), inputs)[1:]  # every block at the end
    np.testing.assert_allclose(ends["final_blocks"], np.stack(blocks), rtol=1e-6, atol=1e-6)
    from replib.methods.training_dynamics import depth_spearman

    layers, _ = measure_run(run, mcfg, progress=False)
    fin = layers[(layers.step == run.steps[-1]) & (layers.layer >= 1)]
    expected = spearmanr(fin.layer, fin.avg_cos)[0]  # summarize_run's depth_spearman_final
    assert depth_spearman(len(blocks))(np.concatenate(list(ends["final_blocks"]), axis=1)) == pytest.approx(expected)


def test_depth_spearman_orders_blocks_by_their_average_cosine():
    """+1 when each block shares more of a common direction than the one below, -1 when less."""
    from replib.methods.training_dynamics import depth_spearman

    rng = np.random.default_rng(0)
    noise = [rng.normal(size=(200, 8)) for _ in range(4)]
    rising = [x + 0.5 * k for k, x in enumerate(noise)]  # a growing common offset: a growing average cosine
    assert depth_spearman(4)(np.concatenate(rising, axis=1)) == pytest.approx(1.0)
    assert depth_spearman(4)(np.concatenate(rising[::-1], axis=1)) == pytest.approx(-1.0)


@needs_mirror
def test_training_draws_and_the_depth_spread_that_adds_them(tmp_path, monkeypatch):
    """measure_draws tabulates each seed's depth ordering as summarize_run computes it from the layer table; the
    depth claims' spread is the window bootstrap and the standard deviation between draws in quadrature; rows of
    another configuration never count, and fewer than ten draws give no between-draw spread."""
    import pandas as pd

    from replib.config import chapter_config
    from replib.methods import training_dynamics as td
    from replib.training import measure_run, summarize_run, trained_models

    monkeypatch.setenv("REPLIB_CACHE_DIR", str(tmp_path / "cache"))
    cfg = chapter_config("training_dynamics", "smoke", seed=0)
    draws = td.measure_draws("smoke", [0, 1], progress=False)
    assert sorted(zip(draws.seed, draws.task)) == [(s, t) for s in (0, 1) for t in ("protein", "text")]
    for row in draws.itertuples():
        assert row.config == td.config_digest("smoke", row.task) and len(row.block_avg_cos.split()) == 2
        run = trained_models([row.task], "smoke", row.seed, progress=False)[row.task]
        layers, emb = measure_run(run, dict(cfg["measure"]), progress=False)
        assert row.depth_spearman_final == pytest.approx(summarize_run(layers, emb)["depth_spearman_final"])

    rho = np.linspace(-1, 1, 10)
    rows = [{"profile": "smoke", "task": t, "config": td.config_digest("smoke", t), "seed": s, "depth_spearman_final": r}
            for t in td.TASKS for s, r in enumerate(rho)]  # fmt: skip
    stale = dict(rows[0], config="000000000000", depth_spearman_final=9.0)  # another configuration's draw
    other = dict(rows[0], profile="offline")
    path = tmp_path / "draws.csv"
    pd.DataFrame([*rows, stale, other]).to_csv(path, index=False)
    monkeypatch.setattr(td, "DRAWS_FILE", path)
    rec = td.draw_records("smoke")
    for task in td.TASKS:
        assert rec[f"{task}_depth_spearman_draws_n"] == 10
        assert rec[f"{task}_depth_spearman_draws_sd"] == pytest.approx(np.std(rho, ddof=1))
    assert np.isnan(td.draw_records("smoke", path=tmp_path / "absent.csv")["text_depth_spearman_draws_sd"])
    pd.DataFrame(rows[1:]).to_csv(tmp_path / "nine.csv", index=False)  # nine protein draws: too few for a spread
    nine = td.draw_records("smoke", path=tmp_path / "nine.csv")
    assert nine["protein_depth_spearman_draws_n"] == 9 and np.isnan(nine["protein_depth_spearman_draws_sd"])

    runs = td.train_runs(cfg)  # the seed-0 runs measure_draws trained
    with_draws = td.margin_records(runs, cfg, n_boot=20)
    monkeypatch.setattr(td, "DRAWS_FILE", tmp_path / "absent.csv")
    alone = td.margin_records(runs, cfg, n_boot=20)
    for task in td.TASKS:
        key = f"{task}_depth_spearman_final_spread"
        assert with_draws[key] ** 2 == pytest.approx(alone[key] ** 2 + np.var(rho, ddof=1))
        assert alone[f"{task}_depth_spearman_draws_n"] == 0
    measured = td.config_digest("smoke", "text")
    monkeypatch.setattr(td, "code_version", lambda: {"source": "an edited training loop"})
    assert td.config_digest("smoke", "text") != measured  # draws of other training code never count


def test_the_measured_training_draws_are_the_offline_configuration():
    """data/training_draws.csv holds ten distinct seeds of each offline run at the configuration the
    offline profile trains now (it fails when the configuration changes until the draws are measured again)."""
    from replib.methods import training_dynamics as td

    table = td.training_draws("offline")
    for task in td.TASKS:
        seeds = table[table.task == task].seed
        assert seeds.is_unique and len(seeds) >= td.MIN_DRAWS, (
            f'{task}: measure the draws again: python -c "from replib.methods.training_dynamics import write_draws; '
            f"write_draws('offline', range({td.MIN_DRAWS}))\" (about 20 CPU minutes)"
        )
