"""Tests of replib.data: registry, fetch (folder and loopback-http mirror), exact parsers, residues.

The loader tests read the real offline mirror: ``$REPLIB_DATA_MIRROR`` or, if
unset, ``<repo>/../shared/data``; they are skipped with a reason when neither exists.
Download tests run against an ``http.server`` on 127.0.0.1 serving a temporary folder.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import threading
import time
from pathlib import Path

import pytest

from replib.data import (
    DATASETS,
    ChecksumError,
    DataNotFoundError,
    IncompleteDownloadError,
    fetch,
    load_glue,
    load_lm_corpus,
    load_polarity,
    load_sick,
    load_snli,
    load_sts,
    load_stsb,
    load_swissprot,
    validate_residues,
)
from replib.data.registry import DataFile

_DEFAULT_MIRROR = Path(__file__).resolve().parents[1].parent / "shared" / "data"
MIRROR = Path(os.environ.get("REPLIB_DATA_MIRROR") or _DEFAULT_MIRROR)
needs_mirror = pytest.mark.skipif(
    not MIRROR.is_dir(),
    reason="offline data mirror not found: set REPLIB_DATA_MIRROR to a folder laid out like shared/data "
    "(looked at %s)" % MIRROR,
)


@pytest.fixture
def mirror_env(monkeypatch, tmp_path):
    monkeypatch.setenv("REPLIB_DATA_MIRROR", str(MIRROR))
    monkeypatch.setenv("REPLIB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("REPLIB_DATA_OFFLINE", "1")


# ------------------------------------------------------------------------ registry
def test_registry_entries_are_complete():
    assert {
        "stsb",
        "sts12-16",
        "sick",
        "sentence_polarity",
        "snli",
        "glue",
        "senteval_transfer",
        "ptb",
        "wikitext2",
        "swissprot",
    } <= set(DATASETS)
    for ds in DATASETS.values():
        assert ds.licence and ds.description and ds.parser.startswith("load_")
        for rel, f in ds.files.items():
            assert f.path == "%s/%s" % (ds.name, rel)
            if f.in_mirror:
                assert f.sha256 is not None and len(f.sha256) == 64
            # every file says where it comes from
            assert f.urls or f.archive or f.canonical, f.path


@needs_mirror
def test_registry_checksums_match_mirror(tmp_path):
    """Every registered mirror file is found through fetch and passes its sha256."""
    n = 0
    for ds in DATASETS.values():
        for rel, f in ds.files.items():
            if f.in_mirror:
                p = fetch(ds.name, rel, mirror=MIRROR, cache=tmp_path, download_ok=False)
                assert p == MIRROR / f.path and p.stat().st_size == f.size
                n += 1
    assert n == 117


# ------------------------------------------------------------------------- loaders
@needs_mirror
@pytest.mark.parametrize("split,n", [("train", 5749), ("dev", 1500), ("test", 1379)])
def test_stsb_counts(mirror_env, split, n):
    df = load_stsb(split)
    assert len(df) == n
    assert df.score.between(0, 5).all()
    assert list(df.columns[-3:]) == ["score", "sentence1", "sentence2"]
    assert (df.sentence1.str.len() > 0).all() and (df.sentence2.str.len() > 0).all()
    assert len(load_stsb(split, variant="senteval_tokenized")) == n


@needs_mirror
@pytest.mark.parametrize("year,n", [(2012, 3108), (2013, 1500), (2014, 3750), (2015, 3000), (2016, 1186)])
def test_sts_counts(mirror_env, year, n):
    df = load_sts(year)
    assert len(df) == n
    assert df.score.between(0, 5).all()
    assert "subset" in df.columns


@needs_mirror
def test_sts13_subsets_and_aliases(mirror_env):
    counts = load_sts("STS13").subset.value_counts().to_dict()
    assert counts == {"FNWN": 189, "OnWN": 561, "headlines": 750}
    assert len(load_sts(13)) == 1500
    with pytest.raises(ValueError, match="2012..2016"):
        load_sts(2017)


@needs_mirror
def test_sick_polarity_snli(mirror_env):
    sick = load_sick("test")
    assert len(sick) == 4927 and sick.score.between(1, 5).all()
    assert set(sick.entailment) == {"NEUTRAL", "ENTAILMENT", "CONTRADICTION"}
    pol = load_polarity()
    assert len(pol) == 10662 and pol.label.sum() == 5331
    assert len(load_polarity("original_latin1_yoonkim")) == 10662
    snli = load_snli("dev")
    assert len(snli) == 9842
    assert snli.label.value_counts().to_dict() == {"entailment": 3329, "contradiction": 3278, "neutral": 3235}


@needs_mirror
@pytest.mark.parametrize(
    "task,split,n",
    [
        ("SST-2", "train", 67349),
        ("SST-2", "dev", 872),
        ("CoLA", "train", 8551),
        ("CoLA", "dev", 516),
        ("RTE", "train", 1244),
        ("WNLI", "dev", 70),
        ("MRPC", "train", 4076),
        ("MRPC", "test", 1725),
        ("SST-2-alps", "test", 872),
    ],
)
def test_glue_counts(mirror_env, task, split, n):
    assert len(load_glue(task, split)) == n


@needs_mirror
@pytest.mark.parametrize(
    "name,split,lines,tokens",
    [
        ("ptb", "test", 3761, 82430),
        ("ptb", "valid", 3370, 73760),
        ("wikitext2", "test", 4358, 245569),
        ("wikitext2", "valid", 3760, 217646),
    ],
)
def test_lm_corpus_token_counts(mirror_env, name, split, lines, tokens):
    text = load_lm_corpus(name, split)
    assert len(text) == lines
    assert sum(len(line.split()) + 1 for line in text) == tokens


@needs_mirror
def test_lm_train_offline_error_names_env_var_and_source(mirror_env):
    with pytest.raises(DataNotFoundError) as exc:
        load_lm_corpus("ptb", "train")
    msg = str(exc.value)
    assert "REPLIB_DATA_MIRROR" in msg and "simple-examples.tgz" in msg


@needs_mirror
def test_swissprot_5k(mirror_env):
    df = load_swissprot("5k")
    assert len(df) == 5000 and df.accession.is_unique
    assert df.length.median() == 301 and df.length.max() == 5147
    assert (df.length <= 1022).sum() == 4853
    assert all(g and all(x.startswith("GO:") for x in g) for g in df.go_bp)
    for acc, seq in zip(df.accession, df.sequence):
        validate_residues(seq, seq_id=acc)
    # Biopython agreement: same record count as header lines
    n_headers = sum(
        1 for line in open(MIRROR / "swissprot" / "swissprot_2014_01_goBP_random5k.fasta") if line.startswith(">")
    )
    assert n_headers == len(df)


_BLAST_DUMP = """BLAST header noise before the first record
>lcl|P12345 some protein GO:0008150 GO:0006412 GO:0008150
MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQFEVVHSLAKWKRQTLGQHDFSAGEGLYTHMKALRPDEDRLSPLHS
VYVDQWDWERVMGDGERQFSTLKSTVEAIWAGIKATEAAVSEEFGLAPFLPDQIHFVHSQELLSRYPDLDAKGRERAIAKDLGAVFLVGIGGKLSDGHRHDVRAPDYDDW

>sp|Q9XYZ1| no annotation
ACDE
"""


def test_blast_dump_is_rewritten_to_the_mirror_layout():
    """Headers ``>sp|ACC| GO_BP=...`` (GO ids in defline order), sequences joined and wrapped at 60, the text
    before the first record ignored; written by hand from the format, not by the code."""
    import io

    from replib.data.swissprot import _rewrite_fasta

    out = io.StringIO()
    _rewrite_fasta(io.StringIO(_BLAST_DUMP), out)
    seq = _BLAST_DUMP.split("\n")[2] + _BLAST_DUMP.split("\n")[3]
    want = (
        ">sp|P12345| GO_BP=GO:0008150,GO:0006412,GO:0008150\n"
        + "".join(seq[i : i + 60] + "\n" for i in range(0, len(seq), 60))
        + ">sp|Q9XYZ1| GO_BP=\nACDE\n"
    )
    assert len(seq) == 221 and out.getvalue() == want  # 3 lines of 60, one of 41


def test_make_subset_draws_whole_records_and_keeps_their_bytes(tmp_path):
    import random

    from replib.data.swissprot import make_subset

    records = [
        ">sp|A%04d| GO_BP=GO:%07d\n" % (i, i) + "ACDEFGHIKL" * 6 + "\n" + "MNPQ" * (i % 5) + "\n" for i in range(50)
    ]
    records = [r.replace("\n\n", "\n") for r in records]  # a sequence of exactly 60 has no second line
    full = tmp_path / "full.fasta"
    full.write_text("".join(records))
    out = make_subset(full, 7, tmp_path / "sub.fasta", seed=5, sample_size=20)
    want = random.Random(5).sample(records, 20)[:7]
    assert out.read_text() == "".join(want)


@needs_mirror
def test_mirror_subset_is_a_fixed_point_of_the_rewrite():
    """The mirror's FASTA files are in the rewritten layout: rewriting one changes no byte."""
    import io

    from replib.data.swissprot import _rewrite_fasta

    src = (MIRROR / "swissprot" / "swissprot_2014_01_goBP_random5k.fasta").read_text()
    out = io.StringIO()
    _rewrite_fasta(io.StringIO(src), out)
    assert out.getvalue() == src


@needs_mirror
def test_swissprot_full_missing_gives_instructions(mirror_env):
    with pytest.raises(DataNotFoundError, match="ncbi-blast"):
        load_swissprot("full")


@needs_mirror
def test_mirror_verification_is_cached(mirror_env, tmp_path, monkeypatch):
    import replib.data.store as store

    monkeypatch.setattr(store, "_verified_memory", {})  # forget earlier verifications of this process
    fetch("snli", "s1.dev")
    db = tmp_path / "cache" / "data" / ".verified.json"  # $REPLIB_CACHE_DIR/data
    assert db.is_file() and str((MIRROR / "snli" / "s1.dev").resolve()) in db.read_text()
    store._verified_memory.clear()  # the on-disk record alone must avoid re-hashing
    calls = []
    monkeypatch.setattr(store, "hash_file", lambda p, algorithm="sha256": calls.append(p))
    t = time.perf_counter()
    for _ in range(50):
        fetch("snli", "s1.dev")
    assert time.perf_counter() - t < 0.5 and calls == []


def test_corrupted_local_mirror_is_rejected(monkeypatch, tmp_path):
    entry = DATASETS["wikitext2"].files["README"]
    bad = tmp_path / "mirror" / entry.path
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"x" * entry.size)
    monkeypatch.setenv("REPLIB_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(ChecksumError, match="sha256"):
        fetch("wikitext2", "README", mirror=tmp_path / "mirror", download_ok=False)


def test_missing_everything_is_clear(monkeypatch, tmp_path):
    monkeypatch.delenv("REPLIB_DATA_MIRROR", raising=False)
    monkeypatch.setenv("REPLIB_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(DataNotFoundError) as exc:
        fetch("stsb", "sts-dev.csv", download_ok=False)
    msg = str(exc.value)
    assert "REPLIB_DATA_MIRROR" in msg and "Stsbenchmark.tar.gz" in msg and "stsb/sts-dev.csv" in msg
    with pytest.raises(KeyError, match="known"):
        fetch("stsb", "nope.csv")


# ------------------------------------------------------------ loopback http mirror
class _Handler(http.server.SimpleHTTPRequestHandler):
    truncate = {}  # url path -> bytes actually sent (Content-Length stays the full size)

    def log_message(self, *args):
        pass

    def do_GET(self):
        cut = self.truncate.get(self.path)
        if cut is None:
            return super().do_GET()
        data = Path(self.translate_path(self.path)).read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[:cut])
        self.wfile.flush()
        self.close_connection = True


@pytest.fixture
def http_mirror(tmp_path):
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(_Handler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, "http://127.0.0.1:%d" % server.server_address[1]
    finally:
        _Handler.truncate = {}
        server.shutdown()
        server.server_close()


def _serve(root: Path, entry: DataFile, data: bytes) -> None:
    p = root / entry.path
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)


def _listing(folder: Path):
    """Files under ``folder``, the (empty) lock files of the cache entries left out."""
    if not folder.exists():
        return []
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.suffix != ".lock")


def _fake_entry(monkeypatch, data: bytes) -> DataFile:
    """Register a small synthetic file (so the download tests need no real data)."""
    entry = DataFile("stsb/tiny.txt", hashlib.sha256(data).hexdigest(), len(data), data.count(b"\n"), canonical="test")
    monkeypatch.setitem(DATASETS["stsb"].files, "tiny.txt", entry)
    return entry


def test_http_mirror_download_verified_and_cached(monkeypatch, tmp_path, http_mirror):
    root, url = http_mirror
    data = b"genre\tfile\n" * 1000
    entry = _fake_entry(monkeypatch, data)
    _serve(root, entry, data)
    cache = tmp_path / "cache"
    monkeypatch.setenv("REPLIB_DATA_MIRROR", url)
    monkeypatch.setenv("REPLIB_CACHE_DIR", str(cache))
    path = fetch("stsb", "tiny.txt")
    assert path == cache / "data" / "stsb" / "tiny.txt" and path.read_bytes() == data
    (root / entry.path).unlink()  # second call is served from the cache
    assert fetch("stsb", "tiny.txt").read_bytes() == data
    assert [n for n in _listing(cache) if n.endswith(".part")] == []


def test_http_mirror_corrupted_file_is_rejected(monkeypatch, tmp_path, http_mirror):
    root, url = http_mirror
    data = b"0123456789\n" * 100
    entry = _fake_entry(monkeypatch, data)
    _serve(root, entry, data.replace(b"5", b"6", 1))  # same size, one byte changed
    cache = tmp_path / "cache"
    with pytest.raises(ChecksumError, match="sha256"):
        fetch("stsb", "tiny.txt", mirror=url, cache=cache)
    assert _listing(cache / "stsb") == []


def test_http_mirror_truncated_download_leaves_nothing_that_looks_complete(monkeypatch, tmp_path, http_mirror):
    root, url = http_mirror
    data = b"abcdefghij\n" * 5000
    entry = _fake_entry(monkeypatch, data)
    _serve(root, entry, data)
    _Handler.truncate = {"/" + entry.path: 1000}
    cache = tmp_path / "cache"
    with pytest.raises(IncompleteDownloadError):
        fetch("stsb", "tiny.txt", mirror=url, cache=cache, timeout=5)
    assert _listing(cache / "stsb") == [".tiny.txt.partial"]  # the bytes received, kept to resume
    _Handler.truncate = {}
    # this server ignores ranges: the download starts again and the whole is verified
    assert fetch("stsb", "tiny.txt", mirror=url, cache=cache, timeout=5).read_bytes() == data
    assert _listing(cache / "stsb") == ["tiny.txt"]


def test_http_mirror_missing_file_falls_back_then_fails_clearly(monkeypatch, tmp_path, http_mirror):
    root, url = http_mirror
    _fake_entry(monkeypatch, b"x\n")
    with pytest.raises(DataNotFoundError, match="HTTP 404"):
        fetch("stsb", "tiny.txt", mirror=url, cache=tmp_path / "cache", download_ok=False)


@needs_mirror
def test_http_mirror_real_layout(monkeypatch, tmp_path, http_mirror):
    """A real file served over loopback http parses to the same rows as the folder mirror."""
    root, url = http_mirror
    for rel in ("sts-dev.csv",):
        src = MIRROR / "stsb" / rel
        _serve(root, DATASETS["stsb"].files[rel], src.read_bytes())
    monkeypatch.setenv("REPLIB_DATA_MIRROR", url)
    monkeypatch.setenv("REPLIB_CACHE_DIR", str(tmp_path / "cache"))
    assert len(load_stsb("dev")) == 1500
    assert (tmp_path / "cache" / "data" / "stsb" / "sts-dev.csv").is_file()


def test_archive_member_extraction(monkeypatch, tmp_path, http_mirror):
    """Canonical archives: a member is extracted and verified; a wrong member checksum is rejected."""
    import io
    import zipfile

    from replib.data.registry import Archive

    root, url = http_mirror
    data = b"line one\nline two\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("pkg/member.txt", data)
    (root / "pkg.zip").write_bytes(buf.getvalue())
    good = DataFile(
        "stsb/member.txt",
        hashlib.sha256(data).hexdigest(),
        len(data),
        2,
        archive=Archive(url + "/pkg.zip", "pkg/member.txt", True),
    )
    bad = DataFile("stsb/bad.txt", "0" * 64, len(data), 2, archive=Archive(url + "/pkg.zip", "pkg/member.txt", True))
    monkeypatch.setitem(DATASETS["stsb"].files, "member.txt", good)
    monkeypatch.setitem(DATASETS["stsb"].files, "bad.txt", bad)
    monkeypatch.delenv("REPLIB_DATA_MIRROR", raising=False)
    cache = tmp_path / "cache"
    assert fetch("stsb", "member.txt", cache=cache).read_bytes() == data
    with pytest.raises(DataNotFoundError, match="sha256"):
        fetch("stsb", "bad.txt", cache=cache)
    assert not (cache / "stsb" / "bad.txt").exists()


# -------------------------------------------------------------------------- residues
def test_residue_policies():
    seq = "MKUZOBXA"
    assert validate_residues(seq) == seq
    assert validate_residues(seq, "prottrans_bert") == "MKXXXXXA"
    assert validate_residues(seq, "prottrans_xlnet") == "MK" + "<unk>" * 5 + "A"
    assert validate_residues(seq, "proteinbert") == "MKU" + "<OTHER>" * 3 + "XA"
    assert validate_residues(seq, "align") == "MKCZKBXA"


@pytest.mark.parametrize(
    "seq,letters,positions", [("MKvLA", "'v'", "3"), ("MK*A-", "'*', '-'", "3, 5"), ("ACDJ", "'J'", "4")]
)
def test_residue_errors_name_id_letters_positions(seq, letters, positions):
    with pytest.raises(ValueError) as exc:
        validate_residues(seq, "prottrans_bert", seq_id="P12345")
    msg = str(exc.value)
    assert "P12345" in msg and letters in msg and "position(s) %s " % positions in msg


def test_residue_errors_empty_and_unknown_policy():
    with pytest.raises(ValueError, match="empty"):
        validate_residues("", seq_id="Q1")
    with pytest.raises(ValueError, match="unknown residue policy"):
        validate_residues("ACD", "esm")


# ------------------------------------------------------------------------ WordNet (Debian wordnet-base)
def _ar(members: dict) -> bytes:
    out = b"!<arch>\n"
    for name, data in members.items():
        out += (f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n").encode() + data
        if len(data) % 2:
            out += b"\n"
    return out


def test_deb_reader_extracts_a_member_and_rejects_what_is_not_there(tmp_path):
    import io
    import lzma
    import tarfile

    from replib.data.wordnet import deb_file

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        payload = b"00001740 03 n 01 entity 0 000 | odd-length payload"
        info = tarfile.TarInfo("./usr/share/wordnet/data.noun")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    deb = tmp_path / "x.deb"
    deb.write_bytes(
        _ar({"debian-binary": b"2.0\n", "control.tar.xz": b"x", "data.tar.xz": lzma.compress(buf.getvalue())})
    )
    assert deb_file(deb, "usr/share/wordnet/data.noun") == payload
    assert deb_file(deb, "./usr/share/wordnet/data.noun") == payload
    with pytest.raises(KeyError, match="no usr/share/wordnet/index.noun"):
        deb_file(deb, "usr/share/wordnet/index.noun")
    (tmp_path / "bad.deb").write_bytes(b"PK\x03\x04 a zip, not a deb")
    with pytest.raises(ValueError, match="bad magic"):
        deb_file(tmp_path / "bad.deb", "usr/share/wordnet/data.noun")


@pytest.fixture(scope="module")
def wordnet():
    """WordNet through the data layer: the mirror if it has the .deb, else the cache, else deb.debian.org."""
    from replib.data import load_wordnet_supersenses, load_wordnet_tag_counts

    return {pos: load_wordnet_supersenses(pos) for pos in ("noun", "verb", "adj", "adv")}, load_wordnet_tag_counts()


def test_wordnet_lemma_counts_match_the_published_statistics(wordnet):
    by_pos, _ = wordnet
    # WordNet 3.0 wnstats(7WN): unique strings per part of speech
    assert {p: len(d) for p, d in by_pos.items()} == {"noun": 117798, "verb": 11529, "adj": 21479, "adv": 4481}
    nouns = {lab for s in by_pos["noun"].values() for lab in s}
    assert len(nouns) == 26 and "noun.Tops" in nouns and all(lab.startswith("noun.") for lab in nouns)
    assert len({lab for s in by_pos["verb"].values() for lab in s}) == 15
    assert {"noun.animal", "noun.person", "noun.food", "noun.artifact"} <= by_pos["noun"]["dog"]
    assert "noun.animal" not in by_pos["noun"]["government"]


def test_wordnet_tag_counts_say_which_words_are_mostly_nouns(wordnet):
    _, tags = wordnet
    assert tags["government"]["noun"] > 0 and set(tags["government"]) == {"noun"}
    assert tags["have"]["verb"] > tags["have"].get("noun", 0)  # "the haves" is a noun, rarely
    with pytest.raises(ValueError, match="pos must be one of"):
        from replib.data import load_wordnet_supersenses

        load_wordnet_supersenses("preposition")


# ------------------------------------------------------------------------ SemCor (NLTK's XML conversion)
def _semcor_xml(sentences) -> bytes:
    """A tag file in SemCor's format (a synthetic text, never a copy of SemCor): ``sentences`` is a list of
    token lists, each token ``word`` (untagged), ``(word, pos)`` or ``(word, pos, lemma, wnsn)``."""
    out = ['<contextfile concordance="brown">', '<context filename="br-x01" paras="yes">', '<p pnum="1">']
    for k, tokens in enumerate(sentences, 1):
        out.append(f'<s snum="{k}">')
        for t in tokens:
            if isinstance(t, str):
                out.append(f"<punc>{t}</punc>" if t in ".,;" else f'<wf cmd="ignore">{t}</wf>')
            elif len(t) == 2:
                out.append(f'<wf cmd="ignore" pos="{t[1]}">{t[0]}</wf>')
            else:
                out.append(f'<wf cmd="done" pos="{t[1]}" lemma="{t[2]}" wnsn="{t[3]}" lexsn="2:38:00::">{t[0]}</wf>')
        out.append("</s>")
    return "\n".join(out + ["</p>", "</context>", "</contextfile>"]).encode()


def _semcor_zip(files: dict) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("semcor/README", b"not a tag file")
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


_SEMCOR_TEXT = [
    [("The", "DT"), ("dog", "NN", "dog", "1"), ("ran", "VBD", "run", "1"), "home", "."],
    [("Fulton_County", "NNP", "group", "1"), ("runs", "VBZ", "run", "2"), ("the", "DT"), "company", "."],
    [("He", "PRP"), ("had", "VBD", "have", "1;2"), ("been", "VBN", "be", "0"), ("saying", "VBG", "say", "3")],
]


def test_semcor_parser_reads_tokens_tags_and_single_senses_of_verbs():
    from replib.data.semcor import parse_semcor_xml

    s1, s2, s3 = parse_semcor_xml(_semcor_xml(_SEMCOR_TEXT), "brown1/br-x01")
    assert s1.tokens == ("The", "dog", "ran", "home", ".") and s1.doc == "brown1/br-x01" and s1.snum == "1"
    assert [(v.index, v.lemma, v.sense, v.tag) for v in s1.verbs] == [(2, "run", "1", "VBD")]  # the noun is no verb
    assert s2.tokens[0] == "Fulton County" and s2.text == "Fulton County runs the company ."  # multi-word unit
    assert [(v.index, v.sense, v.tag) for v in s2.verbs] == [(1, "2", "VBZ")]
    # several senses ("1;2") and sense 0 are no single sense: only "saying" counts
    assert [(v.index, v.lemma, v.sense, v.tag) for v in s3.verbs] == [(3, "say", "3", "VBG")]
    with pytest.raises(ValueError, match="not a SemCor XML"):
        parse_semcor_xml(b"<s><wf>unclosed</s>", "brown1/bad")
    with pytest.raises(ValueError, match="no sentence"):
        parse_semcor_xml(b"<contextfile/>", "brown1/empty")


def test_semcor_zip_reads_every_tag_file_of_the_three_concordances(tmp_path):
    from replib.data.semcor import read_semcor_zip

    one, two = _semcor_xml(_SEMCOR_TEXT[:1]), _semcor_xml(_SEMCOR_TEXT[1:])
    path = tmp_path / "semcor.zip"
    path.write_bytes(_semcor_zip({"semcor/brownv/tagfiles/br-x02.xml": two, "semcor/brown1/tagfiles/br-x01.xml": one}))
    sentences = read_semcor_zip(path)
    assert [s.doc for s in sentences] == ["brown1/br-x01", "brownv/br-x02", "brownv/br-x02"]
    path.write_bytes(_semcor_zip({"semcor/brown1/other/br-x01.xml": one}))
    with pytest.raises(ValueError, match="no semcor/brown"):
        read_semcor_zip(path)


def test_semcor_entry_is_pinned_by_nltks_published_md5():
    entry = DATASETS["semcor"].files["semcor.zip"]
    assert entry.md5 == "46c095f0ab7090132567f87252af724f" and entry.size == 4397021  # NLTK's index.xml
    assert entry.urls == ("https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/semcor.zip",)
    assert not entry.in_mirror and entry.sha256 is None and DATASETS["semcor"].parser == "load_semcor"


def test_semcor_through_a_loopback_mirror_and_a_wrong_md5_refused(monkeypatch, tmp_path, http_mirror):
    """The loader reads the zip through the data layer; bytes that are not the registered ones are refused."""
    import dataclasses

    from replib.data import load_semcor

    root, url = http_mirror
    data = _semcor_zip({"semcor/brown2/tagfiles/br-x01.xml": _semcor_xml(_SEMCOR_TEXT)})
    real = DATASETS["semcor"].files["semcor.zip"]
    entry = dataclasses.replace(real, md5=hashlib.md5(data).hexdigest(), size=len(data))  # the fixture's md5
    monkeypatch.setitem(DATASETS["semcor"].files, "semcor.zip", entry)
    _serve(root, entry, data)
    monkeypatch.setenv("REPLIB_DATA_MIRROR", url)
    monkeypatch.setenv("REPLIB_CACHE_DIR", str(tmp_path / "cache"))
    sentences = load_semcor()
    assert len(sentences) == 3 and sentences[0].verbs[0].lemma == "run"
    assert (tmp_path / "cache" / "data" / "semcor" / "semcor.zip").read_bytes() == data
    # the same bytes against NLTK's published md5 (they are not NLTK's zip): refused, nothing cached
    monkeypatch.setitem(DATASETS["semcor"].files, "semcor.zip", dataclasses.replace(real, size=len(data)))
    cache = tmp_path / "other"
    with pytest.raises(ChecksumError, match="md5"):
        fetch("semcor", "semcor.zip", mirror=url, cache=cache)
    assert _listing(cache / "semcor") == []


def test_semcor_missing_offline_says_where_it_comes_from(monkeypatch, tmp_path):
    from replib.data import load_semcor

    monkeypatch.setenv("REPLIB_DATA_MIRROR", str(tmp_path / "mirror"))
    monkeypatch.setenv("REPLIB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("REPLIB_DATA_OFFLINE", "1")
    with pytest.raises(DataNotFoundError) as exc:
        load_semcor()
    msg = str(exc.value)
    assert "semcor/semcor.zip" in msg and "REPLIB_DATA_MIRROR" in msg and "nltk_data" in msg
