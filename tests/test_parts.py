"""The paper profile in parts (replib.parts, replib.config.chapter_parts): the definitions of every chapter,
what a part selects, the cells it runs, and the shard ranges of the sharded jobs."""

import importlib.util
import re
from pathlib import Path
from types import SimpleNamespace

import jupytext
import numpy as np
import pytest

from bookkit.run import part_records as kit_parts
from bookkit.run import runner
from bookkit.run.parts import cell_steps, select_cells
from replib._io import run_sharded, shard_span
from replib.config import chapter_config, chapter_parts, chapters, find_part
from replib.methods import protein_isotropy as P
from replib.methods import training_dynamics as td
from replib.methods.manifolds.config import layer_ranges
from replib.methods.protein_isotropy import config as PC
from replib.methods.protein_isotropy.streamed import stream_protein_model
from replib.parts import COLAB_T4, REST, Budget, Part, check_parts
from replib.profiles import PROFILES

ROOT = Path(__file__).resolve().parents[1]
#: the nightly's rule for names (scripts/nightly_tasks.py SAFE_NAME) and a hosted runner's job limit
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
HOSTED_LIMIT_MINUTES = 330


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("chapter", sorted(chapters()))
def test_every_chapter_is_in_parts_in_every_profile(chapter, profile):
    parts = chapter_parts(chapter, profile)
    assert len(parts) >= 2 and parts[-1].name == REST and parts[-1].needs == tuple(p.name for p in parts[:-1])
    assert sum(p.fraction for p in parts) == pytest.approx(1.0, abs=0.02)
    default = chapter_config(chapter, profile).model_specs
    for p in parts:
        assert SAFE_NAME.match(p.name) and p.chapter == chapter
        assert not p.budget.within(COLAB_T4), (p.name, p.budget)  # one Colab T4 session
        assert p.models is None or set(p.models) <= set(default), p.name  # the profile's own models
        assert p.steps is None or set(p.steps) <= set(chapters()[chapter].steps)
    # a paper part's job (its limit plus the set-up around it) fits a hosted runner's 6 hours
    if profile == "paper":
        for p in parts:
            row = kit_parts.part_row(chapter, p, profile, 21600 if chapter != "manifolds" else 43200, [])
            assert row["timeout_minutes"] <= HOSTED_LIMIT_MINUTES, (chapter, p.name)


def test_the_paper_splits_where_the_issue_asks():
    protein = [p.name for p in chapter_parts("protein_isotropy", "paper")]
    assert {"prot_bert", "prot_bert_bfd", "prot_xlnet-1", "proteinbert", "esm2_t33_650M-1", "align-1"} <= set(protein)
    assert [p.shards for p in chapter_parts("protein_isotropy", "paper") if p.name.startswith("align-")] == [
        (k, 4) for k in range(4)
    ]
    assert [p.name for p in chapter_parts("isoscore", "paper")] == ["bert", "distilbert", "gpt", "gpt2", REST]
    training = chapter_parts("training_dynamics", "paper")
    for task in ("protein", "text"):  # each run within a session (issue 39): one part, which measures it
        mine = [p for p in training if dict(p.select).get("tasks") == (task,)]
        assert [p.name for p in mine] == [task] and dict(mine[0].select)["until"] == (6_000,)
        assert mine[0].needs == () and mine[0].records == (f"{task}_*",) and mine[0].runs("measure")
    assert {"glue-minilm", "glue-mpnet", "glue-distilroberta"} <= {
        p.name for p in chapter_parts("classifiers", "paper")
    }
    manifolds = chapter_parts("manifolds", "paper")
    for model in ("bert", "distilbert", "gpt", "gpt2"):  # every layer of every model and corpus, once
        for corpus in ("ptb", "wikitext2"):
            cells = [p for p in manifolds if re.fullmatch(f"{model}-{corpus}(-[0-9]+)?", p.name)]
            chosen = [v for p in cells for v in dict(p.select).get("layers", range(6 if model == "distilbert" else 12))]
            assert cells and chosen == list(range(6 if model == "distilbert" else 12)), (model, corpus)


def test_a_model_over_the_session_is_cut_into_ranges_that_fit_it():
    # the declared T4-hours are the rehearsal's measurements (book/rehearsal.csv): a model over 3 is cut into
    # shard ranges of at most 2.5 each (a margin for the measurement's spread), one part per range
    parts = chapter_parts("protein_isotropy", "paper")
    for spec, hours in PC._T4_HOURS.items():
        n = PC.stream_ranges(spec, "paper")
        assert hours / n <= 2.5 or (n == 1 and hours <= COLAB_T4.t4_hours), (spec, hours, n)
        mine = [p for p in parts if p.models == (spec,)]
        if n > 1:
            assert [(p.name, p.shards) for p in mine] == [(f"{spec}-{k + 1}", (k, n)) for k in range(n)]
        else:
            assert [p.name for p in mine] == [spec] and mine[0].shards is None
    assert max(PC.stream_ranges(s, "paper") for s in PC._T4_HOURS) > 2  # a split other than halves is covered
    assert {PC.stream_ranges(s, "offline") for s in PC._T4_HOURS} == {1}


@pytest.mark.parametrize("n_ranges", [2, 3, 4])
def test_a_protein_stream_in_any_number_of_ranges_is_the_whole_stream(rng, tmp_path, n_ranges):
    seqs = ["M" * int(k) for k in rng.integers(5, 30, size=37)]
    X = {layer: rng.standard_normal((len(seqs), 6)) for layer in range(3)}
    lm = SimpleNamespace(name="toy", spec=SimpleNamespace(recipe="esm", n_layers=2))

    def compute(a, b):
        return {layer: X[layer][a:b] for layer in X}

    kw = dict(n_keep=11, max_length=64, shard_size=4, compute=compute, info={"toy": 1}, progress=False)
    whole = stream_protein_model(lm, seqs, **kw)
    parts = [stream_protein_model(lm, seqs, state_dir=tmp_path, shards=(k, n_ranges), **kw) for k in range(n_ranges)]
    assert sum(p.n_rows for p in parts) == len(seqs)

    def boom(a, b):
        raise AssertionError("the whole stream must read the parts' states back")

    merged = stream_protein_model(lm, seqs, state_dir=tmp_path, ranges=n_ranges, **{**kw, "compute": boom})
    assert merged.n_rows == whole.n_rows == len(seqs)
    np.testing.assert_allclose(merged.kept[2], whole.kept[2], rtol=0, atol=0)
    np.testing.assert_array_equal(merged.kept[2], X[2][:11].astype(np.float32))
    for layer in X:
        for key, value in whole.stats[layer].summary().items():
            assert merged.stats[layer].summary()[key] == pytest.approx(value, rel=1e-9), (layer, key)


def test_a_part_is_validated_when_defined():
    ok = Budget(1.0, 4.0, 2.0)
    with pytest.raises(ValueError, match="t4_hours 4 > 3"):
        Part("x", "protein_isotropy", 0.5, Budget(4.0, 4.0, 2.0))
    with pytest.raises(ValueError, match="must match"):
        Part("x; rm -rf /", "protein_isotropy", 0.5, ok)
    with pytest.raises(ValueError, match="fraction"):
        Part("x", "protein_isotropy", 0.0, ok)
    with pytest.raises(ValueError, match="shards"):
        Part("x", "protein_isotropy", 0.5, ok, shards=(2, 2))
    a = Part("a", "c", 0.5, ok, steps=("s",))
    with pytest.raises(ValueError, match="unknown steps"):
        check_parts("c", [a, Part(REST, "c", 0.5, ok)], steps=("t",))
    with pytest.raises(ValueError, match="last part must be"):
        check_parts("c", [a, Part("b", "c", 0.5, ok)], steps=("s",))
    with pytest.raises(ValueError, match="fractions sum"):
        check_parts("c", [a, Part(REST, "c", 0.1, ok)], steps=("s",))
    with pytest.raises(ValueError, match="names its steps"):
        check_parts("c", [Part("all", "c", 0.5, ok), Part(REST, "c", 0.5, ok)], steps=("s",))
    with pytest.raises(ValueError, match="listed twice"):
        check_parts("c", [a, a, Part(REST, "c", 0.01, ok)], steps=("s",))


def test_a_part_narrows_the_models_and_the_parameters_and_names_its_steps():
    cfg = chapter_config("isoscore", "paper", part="gpt")
    assert cfg.model_specs == ["openai-gpt"] and cfg.part.name == "gpt"
    assert cfg.runs("contextual") and not cfg.runs("synthetic")
    whole = chapter_config("isoscore", "paper")
    assert whole.part is None and whole.runs("synthetic") and len(whole.models) == 4
    name = next(p.name for p in chapter_parts("manifolds", "paper") if p.name.startswith("gpt2-wikitext2"))
    m = chapter_config("manifolds", "paper", part=name)
    assert list(m.corpora) == ["wikitext2"] and list(m.named_models) == ["GPT2"]
    glue = chapter_config("classifiers", "paper", part="glue-mpnet")
    assert glue.model_specs == ["all-mpnet-base-v2"] and glue.sbert_model == "all-mpnet-base-v2"
    t = chapter_config("training_dynamics", "paper", part="text")
    assert t.selected("tasks", ("protein", "text")) == ["text"]
    assert td.range_end(t, "text") == 6_000 and t.runs("measure") and not t.runs("views")
    assert td.range_end(chapter_config("training_dynamics", "paper"), "text") == 6_000  # the whole chapter
    assert chapter_config("training_dynamics", "paper").selected("tasks", ("protein", "text")) == ["protein", "text"]
    align = chapter_config("protein_isotropy", "smoke", part="align-2")
    assert align.models == () and align.shards == (1, 2)
    assert (
        chapter_config("protein_isotropy", "smoke", part=REST).model_specs
        == chapter_config("protein_isotropy", "smoke").model_specs
    )
    with pytest.raises(ValueError, match="has no part 'nope'.*parts: bert, distilbert"):
        chapter_config("isoscore", "paper", part="nope")


def test_a_readers_models_stand_in_for_the_profiles_by_position():
    # as many models as the profile has: the part runs the reader's model in its model's place (the rehearsal's
    # full-size stand-ins); another number of models: the part runs all of them
    four = ["tiny-bert", "tiny-gpt2", "tiny-esm", "tiny-protbert"]
    assert chapter_config("isoscore", "paper", models=four, part="gpt").model_specs == ["tiny-esm"]
    assert chapter_config("isoscore", "paper", models=["tiny-bert"], part="gpt").model_specs == ["tiny-bert"]


@pytest.mark.parametrize("n_shards", [0, 1, 5, 7, 128])
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_shard_ranges_cover_every_shard_once(n_shards, n):
    spans = [shard_span((k, n), n_shards) for k in range(n)]
    assert [i for s in spans for i in s] == list(range(n_shards))
    assert max(len(s) for s in spans) - min(len(s) for s in spans) <= 1
    assert shard_span(None, n_shards) == range(n_shards)
    with pytest.raises(ValueError):
        shard_span((n, n), n_shards)


def test_a_sharded_job_in_parts_equals_it_whole_and_the_whole_reads_the_parts_back(tmp_path):
    computed = []

    def compute(a, b):
        computed.append(a)
        return {"x": np.arange(a, b, dtype=np.float64) ** 2}

    whole = np.concatenate([s["x"] for s in run_sharded(23, 4, compute, info={"t": 1}, progress=False)])
    computed.clear()
    pieces = [
        run_sharded(23, 4, compute, info={"t": 1}, cache_dir=tmp_path, progress=False, shards=(k, 3)) for k in (0, 1, 2)
    ]
    assert len(computed) == 6  # every shard once, over the three parts
    np.testing.assert_array_equal(np.concatenate([s["x"] for p in pieces for s in p]), whole)
    computed.clear()
    again = run_sharded(23, 4, compute, info={"t": 1}, cache_dir=tmp_path, progress=False)
    assert computed == []  # the whole job reads what the parts stored
    np.testing.assert_array_equal(np.concatenate([s["x"] for s in again]), whole)


def test_the_alignment_pairs_in_shard_ranges_are_the_rows_of_the_whole(rng, tmp_path):
    aa = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
    seqs = ["".join(rng.choice(aa, size=int(rng.integers(15, 40)))) for _ in range(12)]
    pairs = P.all_pairs(len(seqs))
    whole = P.alignment_pair_stats(seqs, pairs, chunk_size=10, progress=False)
    pieces = [
        P.alignment_pair_stats(seqs, pairs, chunk_size=10, progress=False, out_dir=tmp_path, shards=(k, 3))
        for k in range(3)
    ]
    assert [len(p) for p in pieces] == [30, 20, 16]  # 66 pairs in 7 chunks of 10: chunks 0-2, 3-4, 5-6
    stacked = np.concatenate([p[["i", "j", "score", "matches", "length"]].to_numpy() for p in pieces])
    np.testing.assert_array_equal(stacked, whole[["i", "j", "score", "matches", "length"]].to_numpy())


class _Shell:
    """The part of IPython's shell that select_cells uses."""

    def __init__(self):
        self.input_transformers_post = []

    def run(self, code: str) -> str:
        lines = code.splitlines(keepends=True)
        for t in self.input_transformers_post:
            lines = t(lines)
        return "".join(lines)


def test_a_part_skips_the_cells_of_the_steps_it_does_not_run():
    assert cell_steps("\n# step: embed, local\nx = 1\n") == ("embed", "local")
    assert cell_steps("x = 1  # step: embed\n") is None and cell_steps("") is None
    shell, part = _Shell(), find_part("protein_isotropy", "smoke", "prot_bert")
    assert select_cells(part, shell=shell)
    assert shell.run("# step: local\nx = 1\n") == "# step: local\nx = 1\n"
    skipped = shell.run("# step: tables\nx = 1\n")
    assert "x = 1" not in skipped and "not in part prot_bert" in skipped
    assert shell.run("y = 2\n") == "y = 2\n"  # unmarked cells run in every part
    assert select_cells(None, shell=shell) is False and shell.input_transformers_post == []  # the whole chapter
    assert select_cells(part) is False  # no IPython kernel: nothing is skipped


@pytest.mark.parametrize("chapter", sorted(chapters()))
def test_every_chapter_takes_a_part_and_marks_its_cells_with_known_steps(chapter):
    text = (ROOT / "notebooks" / f"{chapter}.md").read_text()
    assert re.search(r"^part = None\b", text, re.M), "the parameters cell has no `part = None`"
    assert "part=part)" in text and "select_cells(cfg.part)" in text
    cells = [c.source for c in jupytext.reads(text, fmt="md:myst").cells if c.cell_type == "code"]
    marked = [s for c in cells if (s := cell_steps(c)) is not None]
    steps = set(chapters()[chapter].steps)
    assert {s for m in marked for s in m} == steps  # every step has its cells, every mark names a step


def test_the_nightly_prefetches_every_model_of_the_paper_profiles_part_list():
    """scripts/nightly.py prefetch --parts takes what `run --profile paper --list-parts --json` prints: the
    models of every chapter's parts, each once, downloaded before the paper job goes offline."""
    spec = importlib.util.spec_from_file_location("nightly_tasks", ROOT / "scripts" / "nightly_tasks.py")
    tasks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tasks)
    rows = runner.part_list("paper", root=ROOT, states=False)
    assert {r["chapter"] for r in rows} == set(chapters())
    models = tasks.paper_models(rows)
    assert "prot_bert" in models and len(models) == len(set(models))
    assert models == sorted({m for r in rows for m in r.get("models") or []})


def test_layer_ranges_keep_each_part_within_a_session():
    assert layer_ranges(12, 0.2, 0.5) == [list(range(12))]  # 2.9 h: one part
    assert layer_ranges(12, 0.25, 0.5) == [list(range(6)), list(range(6, 12))]  # 3.5 h: two, the first 2.0
    # the first range computes the stream too: 4 layers x 0.7 + 0.45 = 3.25 > 3, so ranges of 3
    assert layer_ranges(12, 0.7, 0.45) == [list(range(k, k + 3)) for k in (0, 3, 6, 9)]
    assert layer_ranges(12, 0.7, 0.0) == [list(range(k, k + 4)) for k in (0, 4, 8)]
    assert layer_ranges(2, 5.0, 0.0) == [[0], [1]]  # never more ranges than layers
    assert layer_ranges(3, 1.0, 0.0) == [[0, 1, 2]]  # exactly the limit fits
    for p in chapter_parts("manifolds", "paper"):
        chosen = dict(p.select).get("layers")
        if chosen is not None:
            assert p.name[-2] == "-" and (p.needs == () or p.needs[0].endswith("-1")), p.name
            cfg = chapter_config("manifolds", "paper", part=p.name)
            assert cfg.selected("layers", range(12)) == list(chosen)
