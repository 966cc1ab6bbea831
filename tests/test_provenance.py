"""Model provenance: every loader notes the weights it served; the runner's log round-trips."""

import json
import os

import pytest

from replib import provenance
from replib.provenance import MODELS_LOG_ENV, note_model, read_models_log, revision_label


def test_note_model_appends_json_lines_and_reads_back_deduplicated(tmp_path, monkeypatch):
    log = tmp_path / "sub" / "models.jsonl"
    monkeypatch.setenv(MODELS_LOG_ENV, str(log))
    a = note_model(
        "gpt2", kind="hub", source="hf:gpt2@abc", hf_id="gpt2", revision="a" * 40, resolved="a" * 40, pinned=True
    )
    note_model(
        "gpt2", kind="hub", source="hf:gpt2@abc", hf_id="gpt2", revision="a" * 40, resolved="a" * 40, pinned=True
    )
    note_model("tiny-gpt2", kind="random", source="random:seed=3")
    with open(log, "a") as fh:
        fh.write('{"name": "cut-off')  # a kernel killed mid-write leaves a partial line
    got = read_models_log(log)
    assert [e["name"] for e in got] == ["gpt2", "tiny-gpt2"]
    assert got[0] == a and revision_label(got[0]) == "a" * 40 and revision_label(got[1]) == "random:seed=3"
    assert len(log.read_text().splitlines()) == 4 and json.loads(log.read_text().splitlines()[0])["name"] == "gpt2"
    assert read_models_log(tmp_path / "absent.jsonl") == []


def test_unpinned_hub_model_warns_with_the_served_commit(monkeypatch):
    monkeypatch.delenv(MODELS_LOG_ENV, raising=False)
    with pytest.warns(UserWarning, match="not pinned.*served commit " + "b" * 40):
        note_model(
            "openai-gpt",
            kind="hub",
            source="hf:openai-gpt@main",
            hf_id="openai-gpt",
            revision="main",
            resolved="b" * 40,
            pinned=False,
        )


def test_loaders_note_what_they_served(monkeypatch):
    from replib.models import load_model, tiny_model
    from replib.models.registry import MINILM_SAFETENSORS_SHA256

    monkeypatch.setattr(provenance, "USED_MODELS", [])
    monkeypatch.delenv(MODELS_LOG_ENV, raising=False)
    tiny_model("bert", seed=5)
    load_model("all-MiniLM-L6-v2", device="cpu")
    tiny, mini = provenance.USED_MODELS
    assert tiny["name"] == "tiny-bert" and tiny["kind"] == "random" and tiny["source"] == "random:seed=5"
    assert mini["kind"] == "packaged" and mini["resolved"] == "sha256:" + MINILM_SAFETENSORS_SHA256
    assert mini["revision"] == "c5e0feb76a64bc391ec36b4f46f4c74ab2ce4dcb" and mini["pinned"] is True


def test_data_files_fetched_are_noted_in_the_same_log_apart_from_the_models(tmp_path, monkeypatch):
    from replib.data import DATASETS, fetch
    from replib.provenance import note_data, read_data_log

    log = tmp_path / "chapter.jsonl"
    monkeypatch.setenv(MODELS_LOG_ENV, str(log))
    note_model("tiny-gpt2", kind="random", source="random:seed=3")
    note_data("stsb", "sts-dev.csv", checksum="sha256:" + "c" * 64, source="mirror")
    note_data("stsb", "sts-dev.csv", checksum="sha256:" + "c" * 64, source="cache")  # read twice: one entry
    assert [e["name"] for e in read_models_log(log)] == ["tiny-gpt2"]  # the data entries are not models
    assert read_data_log(log) == [
        {"dataset": "stsb", "file": "sts-dev.csv", "checksum": "sha256:" + "c" * 64, "source": "mirror"}
    ]
    # fetch notes what it serves, with the checksum it verified
    mirror = os.environ.get("REPLIB_DATA_MIRROR")
    if not mirror:
        pytest.skip("REPLIB_DATA_MIRROR is not set: no data file to serve")
    small = [(d.name, r, f) for d in DATASETS.values() for r, f in d.files.items() if f.sha256 and f.size]
    name, rel, entry = min(small, key=lambda x: x[2].size)
    fetch(name, rel, mirror=mirror, cache=tmp_path / "cache", download_ok=False)
    assert read_data_log(log)[-1] == {
        "dataset": name,
        "file": rel,
        "checksum": "sha256:" + entry.sha256,
        "source": "mirror",
    }
