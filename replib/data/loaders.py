"""Exact parsers of the registered text data sets.

Files are parsed by hand (``line.split('\\t')``), never with ``pandas.read_csv``,
whose quoting rules silently merge or drop rows of STS-B, MRPC and SICK.  Lines
are split on ``'\\n'`` only (not :meth:`str.splitlines`, which also breaks on
``\\x85``, ``\\u2028`` and friends), a trailing ``'\\r'`` is removed, and sentence
fields are stripped of surrounding whitespace.  Every loader checks its field
counts and raises :class:`ValueError` with the file and line number otherwise.
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence

import pandas as pd

from .registry import _STS_SUBSETS
from .store import fetch

__all__ = [
    "load_stsb",
    "load_sts",
    "load_sick",
    "load_polarity",
    "load_snli",
    "load_glue",
    "load_glue_train",
    "load_lm_corpus",
    "read_lines",
]


def read_lines(path, encoding: str = "utf-8") -> list[str]:
    """Read a text file as a list of lines, split on ``'\\n'`` only, without line ends.

    A final newline does not create an empty last line; a trailing ``'\\r'`` is
    removed from every line; a UTF-8 byte-order mark is dropped.
    """
    with open(path, "rb") as fh:
        return _split_lines(fh.read().decode(encoding).removeprefix("\ufeff"))


def _split_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _fields(line: str, n: int, path, lineno: int, at_least: bool = False) -> list[str]:
    parts = line.split("\t")
    if len(parts) < n or (len(parts) != n and not at_least):
        raise ValueError(
            "%s line %d: expected %s%d tab-separated fields, got %d: %r"
            % (path, lineno, "at least " if at_least else "", n, len(parts), line[:200])
        )
    return parts


def _tsv(path, header: list | None, convert, columns: list) -> pd.DataFrame:
    """The lines of a tab-separated file after its ``header`` line (its exact fields; None: no header line),
    each of ``len(columns)`` fields, as rows ``convert(fields)``."""
    lines = read_lines(path)
    if header is not None and lines[0].split("\t") != header:
        raise ValueError("%s: unexpected header %r" % (path, lines[0]))
    start = 0 if header is None else 1
    rows = [convert(_fields(line, len(columns), path, i)) for i, line in enumerate(lines[start:], start + 1)]
    return pd.DataFrame(rows, columns=columns)


def _check_split(split: str, allowed: Sequence[str], what: str) -> None:
    if split not in allowed:
        raise ValueError("%s split must be one of %s, got %r" % (what, ", ".join(allowed), split))


def load_stsb(split: str = "test", variant: str = "original") -> pd.DataFrame:
    """Load an STS Benchmark split (Cer et al. 2017, ``cer2017semeval``).

    Parameters
    ----------
    split : {"train", "dev", "test"}
        5,749 / 1,500 / 1,379 pairs.
    variant : {"original", "senteval_tokenized"}
        The official files, or SentEval's tokenized and lower-cased copy.

    Returns
    -------
    pandas.DataFrame
        Columns ``genre, file, year, id, score, sentence1, sentence2``; ``score``
        is float in [0, 5].  Extra trailing source columns of some lines are dropped.
    """
    _check_split(split, ("train", "dev", "test"), "STS-B")
    _check_split(variant, ("original", "senteval_tokenized"), "STS-B variant")
    rel = "sts-%s.csv" % split if variant == "original" else "senteval_tokenized/sts-%s.csv" % split
    path = fetch("stsb", rel)
    rows = []
    for i, line in enumerate(read_lines(path), 1):
        f = _fields(line, 7, path, i, at_least=True)
        score = float(f[4])
        if not 0.0 <= score <= 5.0:
            raise ValueError("%s line %d: score %r outside [0, 5]" % (path, i, f[4]))
        rows.append((f[0], f[1], f[2], f[3], score, f[5].strip(), f[6].strip()))
    return pd.DataFrame(rows, columns=["genre", "file", "year", "id", "score", "sentence1", "sentence2"])


def _sts_year(year: int | str) -> str:
    s = str(year).upper().replace("STS", "")
    if s.isdigit():
        y = int(s) % 100
        key = "STS%02d" % y
        if key in _STS_SUBSETS:
            return key
    raise ValueError("STS year must be one of 2012..2016 (or 12..16, 'STS12'..'STS16'), got %r" % (year,))


def load_sts(year: int | str) -> pd.DataFrame:
    """Load the SemEval STS test set of one year (STS12..STS16), SentEval layout.

    Only pairs with a gold score are kept (STS15/16 gold files have empty lines
    for unscored pairs; STS13 ``SMT`` has no input file).  Sentences are
    SentEval's Moses-tokenized, lower-cased text.

    Parameters
    ----------
    year : int or str
        2012..2016, 12..16 or ``"STS12"``..``"STS16"``.

    Returns
    -------
    pandas.DataFrame
        Columns ``subset, sentence1, sentence2, score``; 3,108 / 1,500 / 3,750 /
        3,000 / 1,186 rows for 2012..2016.
    """
    key = _sts_year(year)
    rows = []
    for subset in _STS_SUBSETS[key]:
        inp = fetch("sts12-16", "%s-en-test/STS.input.%s.txt" % (key, subset))
        gs = fetch("sts12-16", "%s-en-test/STS.gs.%s.txt" % (key, subset))
        pairs, scores = read_lines(inp), read_lines(gs)
        if len(pairs) != len(scores):
            raise ValueError("%s has %d lines but %s has %d" % (inp, len(pairs), gs, len(scores)))
        for i, (line, score) in enumerate(zip(pairs, scores), 1):
            if score.strip() == "":
                continue
            f = _fields(line, 2, inp, i)
            rows.append((subset, f[0].strip(), f[1].strip(), float(score)))
    return pd.DataFrame(rows, columns=["subset", "sentence1", "sentence2", "score"])


_SICK_FILES = {"train": "SICK_train.txt", "trial": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}


def load_sick(split: str = "test") -> pd.DataFrame:
    """Load SICK (Marelli et al. 2014, ``marelli2014sick``), SentEval copy.

    Parameters
    ----------
    split : {"train", "trial", "test"}
        4,500 / 500 / 4,927 pairs.

    Returns
    -------
    pandas.DataFrame
        Columns ``pair_id, sentence1, sentence2, score`` (relatedness, 1-5) and
        ``entailment`` (NEUTRAL / ENTAILMENT / CONTRADICTION).
    """
    _check_split(split, tuple(_SICK_FILES), "SICK")
    path = fetch("sick", _SICK_FILES[split])
    return _tsv(
        path,
        ["pair_ID", "sentence_A", "sentence_B", "relatedness_score", "entailment_judgment"],
        lambda f: (int(f[0]), f[1].strip(), f[2].strip(), float(f[3]), f[4].strip()),
        ["pair_id", "sentence1", "sentence2", "score", "entailment"],
    )


_POLARITY = {"nltk_utf8": "utf-8", "original_latin1_yoonkim": "latin-1", "senteval_mr": "utf-8"}


def load_polarity(variant: str = "nltk_utf8") -> pd.DataFrame:
    """Load the Pang & Lee sentence polarity data set v1.0 (``pang2005seeing``).

    Parameters
    ----------
    variant : {"nltk_utf8", "original_latin1_yoonkim", "senteval_mr"}
        NLTK's UTF-8 copy (preferred), the original ISO-8859-1 bytes, or
        SentEval's tokenized "MR" copy.

    Returns
    -------
    pandas.DataFrame
        Columns ``text, label``: 5,331 positive rows (label 1) then 5,331
        negative rows (label 0), in file order.
    """
    _check_split(variant, tuple(_POLARITY), "polarity variant")
    rows = []
    for name, label in (("rt-polarity.pos", 1), ("rt-polarity.neg", 0)):
        path = fetch("sentence_polarity", "%s/%s" % (variant, name))
        rows.extend((line.strip(), label) for line in read_lines(path, _POLARITY[variant]))
    return pd.DataFrame(rows, columns=["text", "label"])


def load_snli(split: str = "dev") -> pd.DataFrame:
    """Load SNLI 1.0 (``bowman2015snli``) in SentEval's format (tokenized; no '-' labels).

    Parameters
    ----------
    split : {"dev", "test"}
        9,842 / 9,824 pairs (train is not registered).

    Returns
    -------
    pandas.DataFrame
        Columns ``premise, hypothesis, label`` (entailment / neutral / contradiction).
    """
    _check_split(split, ("dev", "test"), "SNLI")
    cols = [read_lines(fetch("snli", "%s.%s" % (prefix, split))) for prefix in ("s1", "s2", "labels")]
    if not len(cols[0]) == len(cols[1]) == len(cols[2]):
        raise ValueError("SNLI %s: s1/s2/labels have %d/%d/%d lines" % (split, *map(len, cols)))
    names = ("premise", "hypothesis", "label")
    return pd.DataFrame({name: [s.strip() for s in col] for name, col in zip(names, cols)})


def _mrpc(path) -> pd.DataFrame:
    return _tsv(
        path,
        ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
        lambda f: (int(f[0]), f[1], f[2], f[3].strip(), f[4].strip()),
        ["label", "id1", "id2", "sentence1", "sentence2"],
    )


GLUE_TASKS = {
    # task: {split: (dataset, file)}
    "SST-2": {s: ("senteval_transfer", "SST/binary/sentiment-" + s) for s in ("train", "dev", "test")},
    "SST-2-alps": {s: ("glue", "SST-2/%s.tsv" % s) for s in ("train", "dev", "test")},
    "CoLA": {s: ("glue", "CoLA_tokenized/%s.tsv" % s) for s in ("train", "dev")},
    "RTE": {s: ("glue", "RTE/%s.tsv" % s) for s in ("train", "dev", "test")},
    "WNLI": {s: ("glue", "WNLI/%s.tsv" % s) for s in ("train", "dev", "test")},
    "MRPC": {s: ("senteval_transfer", "MRPC/msr_paraphrase_%s.txt" % s) for s in ("train", "test")},
}


def load_glue(task: str, split: str) -> pd.DataFrame:
    """Load one split of a GLUE task (``wang2018glue``) from the copies that exist offline.

    Parameters
    ----------
    task : {"SST-2", "SST-2-alps", "CoLA", "RTE", "WNLI", "MRPC"}
        - ``SST-2``: SentEval's SST binary, train 67,349 / dev 872 (= GLUE sizes)
          / test 1,821 (SST's labelled test, not GLUE's unlabelled one).
        - ``SST-2-alps``: the forest-snow/alps re-split (train 60,614 / dev
          6,735 from GLUE train; test 872 = GLUE dev).
        - ``CoLA``: lower-cased, tokenized; train 8,551, dev 516 (= out-of-domain dev).
        - ``RTE`` (train 1,244 / dev 139 / test 1,384) and ``WNLI`` (565 / 70 / 71):
          re-splits of GLUE train+dev; ``test`` has labels and is NOT GLUE test.
        - ``MRPC``: Microsoft Research Paraphrase Corpus, train 4,076 / test 1,725.
    split : str
        A split available for the task (see above).

    Returns
    -------
    pandas.DataFrame
        ``sentence, label`` (SST-2, CoLA); ``index, sentence1, sentence2, label``
        (RTE: label string, WNLI: int); ``label, id1, id2, sentence1, sentence2`` (MRPC).
    """
    if task not in GLUE_TASKS:
        raise ValueError(
            "GLUE task must be one of %s, got %r (MNLI, QNLI, QQP are not available offline; "
            "STS-B: use load_stsb)" % (", ".join(GLUE_TASKS), task)
        )
    _check_split(split, tuple(GLUE_TASKS[task]), "GLUE " + task)
    path = fetch(*GLUE_TASKS[task][split])
    if task in ("SST-2", "SST-2-alps", "CoLA"):
        columns = ["sentence", "label"]
        return _tsv(path, columns if task == "SST-2-alps" else None, lambda f: (f[0].strip(), int(f[1])), columns)
    if task == "MRPC":
        return _mrpc(path)
    label = int if task == "WNLI" else str.strip
    columns = ["index", "sentence1", "sentence2", "label"]
    return _tsv(path, columns, lambda f: (int(f[0]), f[1].strip(), f[2].strip(), label(f[3])), columns)


#: GLUE's classification tasks, as GLUE's own archives hold their training sets (``glue/canonical/<archive>``):
#: archive, member, header (None: CoLA has none), {column: field}, label field, label names (None: already 0/1)
#: and the number of training rows of Hugging Face's ``nyu-mll/glue`` built from the same files. The columns are
#: that data set's, so the paper profile reads the same rows under the same names.
GLUE_TRAIN = {
    "cola": ("CoLA.zip", "CoLA/train.tsv", None, {"sentence": 3}, 1, None, 8551),
    "sst2": ("SST-2.zip", "SST-2/train.tsv", 2, {"sentence": 0}, 1, None, 67349),
    "qqp": ("QQP-clean.zip", "QQP/train.tsv", 6, {"question1": 3, "question2": 4}, 5, None, 363846),
    "mnli": (
        "MNLI.zip",
        "MNLI/train.tsv",
        12,
        {"premise": 8, "hypothesis": 9},
        11,
        ("entailment", "neutral", "contradiction"),
        392702,
    ),
    "qnli": (
        "QNLIv2.zip",
        "QNLI/train.tsv",
        4,
        {"question": 1, "sentence": 2},
        3,
        ("entailment", "not_entailment"),
        104743,
    ),
    "rte": ("RTE.zip", "RTE/train.tsv", 4, {"sentence1": 1, "sentence2": 2}, 3, ("entailment", "not_entailment"), 2490),
    "wnli": ("WNLI.zip", "WNLI/train.tsv", 4, {"sentence1": 1, "sentence2": 2}, 3, None, 635),
    "mrpc": (None, None, None, {"sentence1": 3, "sentence2": 4}, 0, None, 3668),
}


def load_glue_train(task: str) -> pd.DataFrame:
    """The training set of a GLUE classification task from GLUE's own files (the paper profile's App. A).

    The archives are registered with their published size and sha256 (``glue/canonical/*``) and fetched through
    the data layer like every other file (mirror, cache, download). MRPC's training set is SentEval's copy of
    the Microsoft training file without the pairs GLUE lists as its dev set (``mrpc_dev_ids.tsv``).

    Parameters
    ----------
    task : {"cola", "sst2", "mrpc", "qqp", "mnli", "qnli", "rte", "wnli"}

    Returns
    -------
    pandas.DataFrame
        The task's text columns as in Hugging Face's ``nyu-mll/glue`` (e.g. ``premise, hypothesis`` for MNLI)
        and an integer ``label`` (the index of the label's name there); as many rows as that data set's train
        split (8,551 CoLA ... 392,702 MNLI), else :class:`ValueError`.
    """
    if task not in GLUE_TRAIN:
        raise ValueError("GLUE task must be one of %s, got %r" % (", ".join(sorted(GLUE_TRAIN)), task))
    archive, member, n_fields, columns, label_at, names, n_rows = GLUE_TRAIN[task]
    if task == "mrpc":
        path = fetch("senteval_transfer", "MRPC/msr_paraphrase_train.txt")
        dev_path = fetch("glue", "canonical/mrpc_dev_ids.tsv")
        dev = {tuple(_fields(line, 2, dev_path, i)) for i, line in enumerate(read_lines(dev_path), 1)}
        df = _mrpc(path)
        df = df[[(a, b) not in dev for a, b in zip(df.id1, df.id2)]]
        rows = [tuple(r) for r in df[["sentence1", "sentence2", "label"]].itertuples(index=False)]
    else:
        path = fetch("glue", "canonical/" + archive)
        where = "%s [%s]" % (path, member)
        with zipfile.ZipFile(path) as zf:
            lines = _split_lines(zf.read(member).decode("utf-8"))
        start = 0 if n_fields is None else 1
        width = n_fields or 4
        rows = []
        for i, line in enumerate(lines[start:], start + 1):
            f = _fields(line, width, where, i)
            label = f[label_at].strip()
            if names is None:
                if label not in ("0", "1"):
                    raise ValueError("%s line %d: label %r is not 0 or 1" % (where, i, label))
                y = int(label)
            elif label in names:
                y = names.index(label)
            else:
                raise ValueError("%s line %d: label %r is not one of %s" % (where, i, label, ", ".join(names)))
            rows.append((*(f[c] for c in columns.values()), y))
    if len(rows) != n_rows:
        raise ValueError(
            "GLUE %s train: %d rows, expected %d (the train split of nyu-mll/glue); a different version of %s"
            % (task, len(rows), n_rows, path)
        )
    return pd.DataFrame(rows, columns=[*columns, "label"])


_LM = {
    "ptb": {s: "mikolov/ptb.%s.txt" % s for s in ("train", "valid", "test")},
    "wikitext2": {s: "%s.txt" % s for s in ("train", "valid", "test")},
}


def load_lm_corpus(name: str, split: str) -> list[str]:
    """Load a language-modelling corpus as its list of raw lines (no line ends).

    Parameters
    ----------
    name : {"ptb", "wikitext2"}
        Mikolov's Penn Treebank text or WikiText-2 v1 (tokenized, ``<unk>``).
    split : {"train", "valid", "test"}
        ``valid``/``test`` are in the offline mirror; ``train`` is downloaded from
        the canonical archive (paper profile).

    Returns
    -------
    list of str
        The lines, empty lines included.  Token count with one ``<eos>`` per
        line, ``sum(len(l.split()) + 1 for l in lines)``: PTB test 82,430 /
        valid 73,760; WikiText-2 test 245,569 / valid 217,646.
    """
    if name not in _LM:
        raise ValueError("LM corpus must be one of %s, got %r" % (", ".join(_LM), name))
    _check_split(split, tuple(_LM[name]), name)
    return read_lines(fetch(name, _LM[name][split]))
