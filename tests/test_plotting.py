"""The figure helpers: the legend rule (replib.plotting.legend_problems), its stamp in the PNG a notebook shows,
and the paper-vs-ours figure."""

from __future__ import annotations

import base64
import io

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import seaborn as sns

from replib import plotting


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _two_lines(legend: bool):
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [0, 1, 4], label="a")
    ax.plot([0, 1, 2], [1, 1, 1.5], label="b")
    ax.set(title="t", xlabel="x", ylabel="y")
    if legend:
        ax.legend()
    return fig


def test_two_series_need_a_legend():
    assert plotting.legend_problems(_two_lines(legend=True)) == []
    problems = plotting.legend_problems(_two_lines(legend=False))
    assert problems == ["axes 1: 2 series and no legend"], problems


@pytest.mark.parametrize(
    "missing, setter",
    [
        ("a title", dict(xlabel="x", ylabel="y")),
        ("an x label", dict(title="t", ylabel="y")),
        ("a y label", dict(title="t", xlabel="x")),
    ],
)
def test_a_single_series_needs_a_title_and_both_axis_labels(missing, setter):
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [0, 1, 4])
    ax.set(**setter)
    problems = plotting.legend_problems(fig)
    assert len(problems) == 1 and missing in problems[0], problems
    ax.set(title="t", xlabel="x", ylabel="y")
    assert plotting.legend_problems(fig) == []
    assert plotting.legend_stamp(fig) == "ok: single series with a title and labelled axes"


def test_error_bars_and_reference_rules_are_not_series():
    df = pd.DataFrame({"group": list("aabbcc"), "score": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    ax = sns.barplot(data=df, x="group", y="score")  # one bar container and three error-bar lines
    ax.axhline(3.0, color="k", ls=":")
    ax.set_title("scores")
    assert plotting.legend_problems(ax.figure) == []
    ax.plot([0, 1, 2], [2, 3, 4])  # a second, unlabelled series is not a rule
    assert plotting.legend_problems(ax.figure) == ["axes 1: 2 series and no legend"]


def test_a_colour_scale_needs_its_colour_bar_even_with_a_legend():
    rng = np.random.default_rng(0)
    fig, ax = plt.subplots()
    hb = ax.hexbin(rng.random(200), rng.random(200), gridsize=5)
    ax.axvline(0.3, ls="--", label="threshold")
    ax.legend()
    ax.set(title="t", xlabel="x", ylabel="y")
    problems = plotting.legend_problems(fig)
    assert problems == ["axes 1: a colour-mapped PolyCollection without a colour bar"], problems
    fig.colorbar(hb, ax=ax, label="count")
    assert plotting.legend_problems(fig) == []


def test_panels_share_a_colour_bar_only_when_they_share_its_scale():
    rng = np.random.default_rng(1)
    fig, axes = plt.subplots(1, 2)
    hbs = [ax.hexbin(rng.random(200), rng.random(200), gridsize=5, mincnt=1) for ax in axes]
    for ax in axes:
        ax.set(title="t", xlabel="x", ylabel="y")
    fig.colorbar(hbs[-1], ax=axes)  # one colour bar, two scales: the first panel's colours are unexplained
    assert plotting.legend_problems(fig) == ["axes 1: a colour-mapped PolyCollection without a colour bar"]
    norm = matplotlib.colors.LogNorm(vmin=1, vmax=max(h.get_array().max() for h in hbs))
    for h in hbs:
        h.set_norm(norm)
    assert plotting.legend_problems(fig) == []


def test_a_figure_legend_and_shared_or_sup_labels_count():
    df = pd.DataFrame({"x": [1, 2, 1, 2], "y": [1.0, 2.0, 3.0, 4.0], "h": list("aabb"), "c": list("ppqq")})
    g = sns.relplot(data=df, x="x", y="y", hue="h", col="c", kind="line")
    assert plotting.legend_problems(g.figure) == []  # the FacetGrid's legend is the figure's
    fig, axes = plt.subplots(1, 2, sharey=True)
    for ax in axes:
        ax.scatter([0, 1], [1, 0])
        ax.set(title="panel", xlabel="x")
    axes[0].set_ylabel("shared y")
    assert plotting.legend_problems(fig) == []
    axes[1].set_xlabel("")
    fig.supxlabel("common x")
    assert plotting.legend_problems(fig) == []


def test_the_notebook_png_carries_the_stamp_and_survives_a_late_backend():
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.core.pylabtools import select_figure_formats

    shell = InteractiveShell.instance()
    select_figure_formats(shell, {"png"})
    assert plotting.stamp_legends(shell)

    def shown(fig) -> dict:
        data, _ = shell.display_formatter.format(fig)
        return plotting.png_text(base64.b64decode(data["image/png"]))

    assert shown(_two_lines(legend=False))[plotting.LEGEND_KEY] == "missing: axes 1: 2 series and no legend"
    assert shown(_two_lines(legend=True))[plotting.LEGEND_KEY] == "ok: legend"
    select_figure_formats(shell, {"png"})  # the inline backend starting later replaces the formatter...
    assert plotting.LEGEND_KEY not in shown(_two_lines(legend=True))
    shell.events.trigger("post_execute")  # ...and the end of the cell wraps it again, before the figures show
    assert shown(_two_lines(legend=True))[plotting.LEGEND_KEY] == "ok: legend"


def test_png_text_reads_what_matplotlib_writes_and_rejects_other_files():
    buf = io.BytesIO()
    _two_lines(legend=True).savefig(buf, format="png", metadata={"replib:legend": "ok: legend", "Title": "t"})
    assert plotting.png_text(buf.getvalue())["replib:legend"] == "ok: legend"
    with pytest.raises(ValueError, match="not a PNG"):
        plotting.png_text(b"GIF89a....")


def test_paper_vs_ours_places_each_claim_at_ours_over_paper_with_its_band():
    rows = [
        {"label": "a", "paper": 2.0, "ours": 3.0, "low": 1.5, "high": 2.5, "status": "failed"},
        {"label": "b", "paper": -0.5, "ours": -0.45, "low": -0.6, "high": -0.4, "status": "reproduced"},
        {"label": "c", "paper": 0.8, "ours": -0.2, "status": "deviates"},  # the other sign: at the left edge
        {"label": "d", "paper": 1e-5, "ours": None, "status": "unverified"},
        {"label": "zero", "paper": 0.0, "ours": 0.1, "status": "reproduced"},  # no ratio: left out
    ]
    fig = plotting.plot_paper_vs_ours(rows, title="t")
    ax = fig.axes[0]
    assert [t.get_text().split(" (")[0] for t in ax.get_yticklabels()] == ["a", "b", "c", "d"]
    points = {tuple(np.round(o, 6)) for c in ax.collections if hasattr(c, "get_offsets") for o in c.get_offsets()}
    assert (1.5, 0.0) in points and (0.9, 1.0) in points
    left = ax.get_xlim()[0]
    assert (round(left, 6), 2.0) in points
    bands = [seg for c in ax.collections if type(c).__name__ == "LineCollection" for seg in c.get_segments()]
    assert any(np.allclose(s, [[0.75, 0], [1.25, 0]]) for s in bands)
    assert any(np.allclose(s, [[0.8, 1], [1.2, 1]]) for s in bands)
    assert plotting.legend_problems(fig) == []
    labels = {t.get_text() for t in ax.get_legend().get_texts()}
    assert {"failed", "reproduced", "deviates", "the paper's value", "accepted by the tolerance"} <= labels
