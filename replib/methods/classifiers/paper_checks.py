"""Arithmetic on the paper's Tables 1 and 2 :cite:`mickus2024isotropy`: what its parameter counts imply.

Every parameter count of the paper is that of the trainable vectors plus a linear classifier:
:math:`U d + d k + k` with :math:`U` vectors of width :math:`d` and :math:`k` classes with a bias
(reference §2(c)). So each count implies a number of vectors :math:`U = (P - d k - k)/d`, which must be a whole
number, the same for the three models of one GLUE task (MiniLM 384-d, mpnet and RoBERTa 768-d), and at most
the items (one sentence per item) or twice the items (sentence pairs). These records check the transcribed
tables against that arithmetic; none is a result of the chapter.
"""

from __future__ import annotations

from ...papers import project_tables

#: width of each GLUE model's sentence vectors
WIDTHS = {"minilm": 384, "mpnet": 768, "roberta": 768}
#: classes of each GLUE task (MNLI: entailment, neutral, contradiction)
GLUE_CLASSES = {"cola": 2, "mnli": 3, "mrpc": 2, "qnli": 2, "qqp": 2, "rte": 2, "sst2": 2, "wnli": 2}


def implied_vectors(n_params: float, width: int, n_classes: int) -> float:
    """:math:`U = (P - d k - k)/d`: the vectors a parameter count implies beside a linear classifier with bias."""
    return (n_params - width * n_classes - n_classes) / width


def table2_records(tables: dict | None = None) -> dict:
    """Per GLUE task of Table 2 (``t2_<task>_...``):

    - ``params_minilm_fraction``: the fractional part of the vectors MiniLM's count implies (0: whole);
    - ``params_mpnet_minus_minilm``: mpnet's implied vectors minus MiniLM's (0: the same sentences);
    - ``params_roberta_minus_mpnet``: RoBERTa's count minus mpnet's (0: the same width and sentences);
    - ``vectors_per_item``: MiniLM's implied vectors over the task's items (at most 1 for single sentences,
      2 for pairs).
    """
    t2 = (tables or project_tables())["mickus2024"]
    out = {}
    for task, k in GLUE_CLASSES.items():
        p = {m: t2[f"T2/{task}/params_{m}"].value for m in WIDTHS}
        u = {m: implied_vectors(p[m], WIDTHS[m], k) for m in WIDTHS}
        out[f"t2_{task}_params_minilm_fraction"] = abs(u["minilm"] - round(u["minilm"]))
        out[f"t2_{task}_params_mpnet_minus_minilm"] = u["mpnet"] - u["minilm"]
        out[f"t2_{task}_params_roberta_minus_mpnet"] = p["roberta"] - p["mpnet"]
        out[f"t2_{task}_vectors_per_item"] = u["minilm"] / t2[f"T2/{task}/n_items"].value
    return out


def table1_records(tables: dict | None = None) -> dict:
    """Table 1's word-level rows (300-d word2vec, a linear classifier with bias):

    - ``t1_supersense_params_residual``: the supersense count minus 2,275 x 300 + 300 x 26 + 26 (0 when its
      items, the 26 WordNet noun supersenses and the bias account for it exactly);
    - ``t1_supersense_items_implied``: the items that count implies with 26 labels (2,275 if it reconciles);
    - ``t1_codwoe_pos_vectors_fraction``: the fractional part of the vectors CoDWoE's count implies with 4
      labels (0: a whole number);
    - ``t1_codwoe_pos_vectors_minus_items``: those vectors minus the 11,462 items (positive: the count does
      not reconcile with the items, reference §2(c)).
    """
    t1 = (tables or project_tables())["mickus2024"]
    sup_p, sup_n = t1["T1/supersense/n_params"].value, t1["T1/supersense/n_items"].value
    pos_u = implied_vectors(t1["T1/codwoe_pos/n_params"].value, 300, 4)
    return {
        "t1_supersense_params_residual": sup_p - (sup_n * 300 + 300 * 26 + 26),
        "t1_supersense_items_implied": implied_vectors(sup_p, 300, 26),
        "t1_codwoe_pos_vectors_fraction": abs(pos_u - round(pos_u)),
        "t1_codwoe_pos_vectors_minus_items": pos_u - t1["T1/codwoe_pos/n_items"].value,
    }
