"""The rehearsal's data at the papers' sizes (issue 26): what stands in for what this machine cannot download.

* Swiss-Prot: the full January 2014 set of the Debian package ``metastudent-data`` through the data layer
  (``python -m replib.data extract-swissprot``): 486,000 sequences against the paper's current release of
  about 570,000 (the costs are scaled to 570,000 where the T4 estimate is made).
* Cai et al.'s train splits (PTB, WikiText-2), not in the mirror: the mirror's own text of the same corpus
  (valid and test) concatenated, over again, to the train split's token count (PTB 929,589 tokens: 887,521
  words and 42,068 line ends, Mikolov's ``ptb.train.txt``; WikiText-2 2,088,628: Merity et al. 2016, Table 1),
  labelled a stand-in.
* STS, SICK and the SentEval/GLUE sets: as the mirror holds them.
"""

from __future__ import annotations

from ..data import load_lm_corpus, load_swissprot

__all__ = ["PAPER_SWISSPROT", "TRAIN_TOKENS", "corpus_standin", "corpus_tokens", "swissprot_standin"]

#: tokens of the train splits (words plus one end-of-line per line: the loaders' count)
TRAIN_TOKENS = {"ptb": 929_589, "wikitext2": 2_088_628}
#: sequences of the current Swiss-Prot release the paper used (about; Hakim et al. give ~570,000)
PAPER_SWISSPROT = 570_000


def corpus_tokens(lines) -> int:
    """Tokens of corpus lines as the loaders count them: whitespace-separated words plus one per line."""
    return sum(len(line.split()) + 1 for line in lines)


def corpus_standin(name: str, tokens: int | None = None) -> list[str]:
    """The mirror's ``name`` text (valid then test), repeated until it holds ``tokens`` tokens (default the
    train split's, :data:`TRAIN_TOKENS`): the stand-in for a train split that is not in the mirror."""
    if name not in TRAIN_TOKENS:
        raise ValueError(f"no train-split stand-in for {name!r}; corpora: {sorted(TRAIN_TOKENS)}")
    target = TRAIN_TOKENS[name] if tokens is None else int(tokens)
    source = load_lm_corpus(name, "valid") + load_lm_corpus(name, "test")
    out, n = [], 0
    while n < target:
        for line in source:
            out.append(line)
            n += len(line.split()) + 1
            if n >= target:
                break
    return out


def swissprot_standin():
    """The full Swiss-Prot 2014-01 set (486,000 sequences) through the data layer."""
    return load_swissprot("full")
