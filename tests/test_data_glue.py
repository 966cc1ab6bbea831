"""GLUE's own files through the data layer (the classifiers chapter's paper profile, App. A): registered with
their published sha256, read from a loopback-http mirror, parsed into the rows and columns of nyu-mll/glue."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import http.server
import io
import threading
import zipfile

import pytest

from replib.data import DATASETS, ChecksumError, IncompleteDownloadError, fetch, load_glue_train, loaders


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def http_mirror(tmp_path):
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield root, "http://127.0.0.1:%d" % server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _zip(member: str, text: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(member, text)
    return buf.getvalue()


def _register(monkeypatch, root, name: str, data: bytes) -> None:
    """Serve ``data`` as the archive ``name`` and register it with the fixture's sha256 (the real entry's
    URL and notes kept)."""
    rel = "canonical/" + name
    real = DATASETS["glue"].files[rel]
    entry = dataclasses.replace(real, sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    monkeypatch.setitem(DATASETS["glue"].files, rel, entry)
    (root / entry.path).parent.mkdir(parents=True, exist_ok=True)
    (root / entry.path).write_bytes(data)


@pytest.fixture
def glue_env(monkeypatch, tmp_path, http_mirror):
    root, url = http_mirror
    monkeypatch.setenv("REPLIB_DATA_MIRROR", url)
    monkeypatch.setenv("REPLIB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("REPLIB_DATA_OFFLINE", "1")  # the mirror only: nothing from the canonical URLs
    return root


def _expect_rows(monkeypatch, task: str, n: int) -> None:
    monkeypatch.setitem(loaders.GLUE_TRAIN, task, (*loaders.GLUE_TRAIN[task][:-1], n))


MNLI_HEADER = (
    "index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
    "sentence2_parse\tsentence1\tsentence2\tlabel1\tgold_label"
)


def _mnli_row(i: int, premise: str, hypothesis: str, label: str) -> str:
    return "\t".join([str(i), "1", "1a", "fiction", "(", "(", "(", "(", premise, hypothesis, label, label])


def test_every_glue_task_is_registered_with_its_published_checksum():
    files = DATASETS["glue"].files
    assert set(loaders.GLUE_TRAIN) == {"cola", "sst2", "mrpc", "qqp", "mnli", "qnli", "rte", "wnli"}
    for task, (archive, *_rest) in loaders.GLUE_TRAIN.items():
        entry = files["canonical/" + (archive or "mrpc_dev_ids.tsv")]
        assert len(entry.sha256) == 64 and entry.size > 0 and not entry.in_mirror, task
        assert entry.urls == ("https://dl.fbaipublicfiles.com/glue/data/" + (archive or "mrpc_dev_ids.tsv"),)
    assert files["canonical/MNLI.zip"].size == 312783507  # the published download size
    assert files["canonical/CoLA.zip"].sha256.startswith("f212fcd8")


def test_mnli_quotes_and_labels_through_a_loopback_mirror(monkeypatch, tmp_path, glue_env):
    rows = [
        _mnli_row(0, 'He said "yes', "He agreed.", "entailment"),  # an unbalanced quote stays in its field
        _mnli_row(1, "A man sleeps.", "A man runs.", "contradiction"),
        _mnli_row(2, "It rains.", "It is wet.", "neutral"),
    ]
    data = _zip("MNLI/train.tsv", MNLI_HEADER + "\n" + "\n".join(rows) + "\n")
    _register(monkeypatch, glue_env, "MNLI.zip", data)
    _expect_rows(monkeypatch, "mnli", 3)
    df = load_glue_train("mnli")
    assert list(df.columns) == ["premise", "hypothesis", "label"]
    assert df.premise.tolist() == ['He said "yes', "A man sleeps.", "It rains."]
    assert df.label.tolist() == [0, 2, 1]  # nyu-mll/glue's order: entailment, neutral, contradiction
    assert (tmp_path / "cache" / "data" / "glue" / "canonical" / "MNLI.zip").read_bytes() == data


def test_cola_without_header_and_sst2_with_one(monkeypatch, glue_env):
    cola = "gj04\t1\t\tOur friends won't buy this analysis.\ngj04\t0\t*\tThey drank the pub.\n"
    _register(monkeypatch, glue_env, "CoLA.zip", _zip("CoLA/train.tsv", cola))
    _register(monkeypatch, glue_env, "SST-2.zip", _zip("SST-2/train.tsv", "sentence\tlabel\ngood film \t1\n"))
    _expect_rows(monkeypatch, "cola", 2)
    _expect_rows(monkeypatch, "sst2", 1)
    cola_df = load_glue_train("cola")
    assert cola_df.sentence.tolist() == ["Our friends won't buy this analysis.", "They drank the pub."]
    assert cola_df.label.tolist() == [1, 0]
    assert load_glue_train("sst2").to_dict("records") == [{"sentence": "good film ", "label": 1}]


def test_mrpc_train_is_the_microsoft_file_without_glues_dev_pairs(monkeypatch, tmp_path, glue_env):
    msr = (
        "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
        "1\t11\t12\tA cat.\tThe cat.\n0\t21\t22\tA dog.\tA bird.\n1\t31\t32\tRain.\tIt rains.\n"
    )
    monkeypatch.setitem(
        DATASETS["senteval_transfer"].files,
        "MRPC/msr_paraphrase_train.txt",
        dataclasses.replace(
            DATASETS["senteval_transfer"].files["MRPC/msr_paraphrase_train.txt"],
            sha256=hashlib.sha256(msr.encode()).hexdigest(),
            size=len(msr.encode()),
        ),
    )
    (glue_env / "senteval_transfer" / "MRPC").mkdir(parents=True)
    (glue_env / "senteval_transfer" / "MRPC" / "msr_paraphrase_train.txt").write_text(msr)
    _register(monkeypatch, glue_env, "mrpc_dev_ids.tsv", b"21\t22\n")
    _expect_rows(monkeypatch, "mrpc", 2)
    df = load_glue_train("mrpc")
    assert df.to_dict("records") == [
        {"sentence1": "A cat.", "sentence2": "The cat.", "label": 1},
        {"sentence1": "Rain.", "sentence2": "It rains.", "label": 1},
    ]


def test_a_different_release_or_a_bad_line_is_refused_with_the_file(monkeypatch, glue_env):
    rte = "index\tsentence1\tsentence2\tlabel\n0\tA.\tB.\tentailment\n1\tC.\tD.\tmaybe\n"
    _register(monkeypatch, glue_env, "RTE.zip", _zip("RTE/train.tsv", rte))
    with pytest.raises(ValueError, match=r"RTE/train.tsv\] line 3: label 'maybe'"):
        load_glue_train("rte")
    wnli = "index\tsentence1\tsentence2\tlabel\n0\tA.\tB.\t1\n"
    _register(monkeypatch, glue_env, "WNLI.zip", _zip("WNLI/train.tsv", wnli))
    with pytest.raises(ValueError, match="1 rows, expected 635"):  # the real count of nyu-mll/glue
        load_glue_train("wnli")
    with pytest.raises(ValueError, match="must be one of"):
        load_glue_train("stsb")


def test_bytes_that_are_not_the_published_archive_are_refused(monkeypatch, tmp_path, glue_env):
    """The real entry (published sha256 and size): a wrong file of the right size fails its sha256, a short
    one its size; neither is left in the cache."""
    entry = DATASETS["glue"].files["canonical/WNLI.zip"]
    (glue_env / entry.path).parent.mkdir(parents=True)
    (glue_env / entry.path).write_bytes(b"x" * entry.size)
    with pytest.raises(ChecksumError, match="sha256"):
        fetch("glue", "canonical/WNLI.zip")
    (glue_env / entry.path).write_bytes(b"x" * 100)
    with pytest.raises(IncompleteDownloadError, match="the registry expects 28999"):
        fetch("glue", "canonical/WNLI.zip")
    assert not (tmp_path / "cache" / "data" / "glue" / "canonical" / "WNLI.zip").exists()


def test_the_paper_profile_reads_glue_through_the_data_layer(monkeypatch, glue_env):
    from replib.methods.classifiers import config, setups

    assert config.TABLE["paper"]["glue_source"] == "canonical"
    qqp = "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n7\t1\t2\tWhy?\tHow?\t0\n"
    _register(monkeypatch, glue_env, "QQP-clean.zip", _zip("QQP/train.tsv", qqp))
    _expect_rows(monkeypatch, "qqp", 1)
    df, cols = setups._glue_frame("qqp", "canonical")
    assert cols == ("question1", "question2") and df.to_dict("records") == [
        {"question1": "Why?", "question2": "How?", "label": 0}
    ]


def test_prefetch_fetches_every_file_with_a_source_and_fails_on_any_miss(monkeypatch, tmp_path, capsys):
    """``python -m replib.data prefetch`` (run by the nightly's paper job before it goes offline)."""
    from replib.data import __main__ as cli

    asked = []

    def fake_fetch(name, rel):
        asked.append(f"{name}/{rel}")
        if rel == "canonical/MNLI.zip":
            raise OSError("connection refused")
        path = tmp_path / rel.replace("/", "_")
        path.write_bytes(b"x" * 2_000_000)
        return path

    monkeypatch.setattr(cli, "fetch", fake_fetch)
    assert cli.main(["prefetch", "--dataset", "glue", "--dataset", "swissprot"]) == 1
    out = capsys.readouterr().out
    assert "FAILED   glue/canonical/MNLI.zip: connection refused" in out and "1 failed" in out
    assert "ok       glue/canonical/CoLA.zip 2.0 MB" in out
    assert "glue/canonical/QQP-clean.zip" in asked and "swissprot/uniprot_sprot.fasta.gz" in asked
    assert "swissprot/swissprot_2014_01_goBP_full.fasta" not in asked  # generated locally, no source
    asked.clear()
    assert cli.main(["prefetch", "--dataset", "wordnet"]) == 0 and asked == ["wordnet/wordnet-base_3.0-37_all.deb"]
