"""The isotropy atlas page of the book (``book/atlas.md``), from the atlases :mod:`replib.atlas` computed.

``python -m bookkit.book.atlas --profile offline`` computes ``build/atlas/<profile>/atlas.json`` (the nightly
runs it after the offline run, whose training chapter leaves the trained models in the cache; the main job,
``python -m replib all``, computes it before it builds the book: :func:`for_book`). When the book
is staged (:func:`bookkit.book.book.stage`), :func:`stage_page` replaces the ``<!-- replib:atlas -->`` line of
the staged ``book/atlas.md`` by, for every profile found: a sortable table (one row per model and layer:
IsoScore, effective dimensions, average cosine, rogue dimensions), one figure per metric with a line per
model over its layers, and the models that could not be loaded with the reason. Without any atlas the
page says how to compute one.
"""

from __future__ import annotations

import argparse
import html
import json
import math
import sys
import traceback
from pathlib import Path

from matplotlib.figure import Figure  # no pyplot: no global backend or figure state
from threadpoolctl import threadpool_limits

from replib.atlas import ROW_METRICS, atlas_rows, compute_atlas, with_config
from replib.plotting import save_figure
from replib.profiles import PROFILES
from replib.tables import format_cell
from replib.training.loop import torch_threads

from ..errors import USER_ERRORS, one_line
from .figures import figure_md

ATLAS_PAGE = "book/atlas.md"
MARKER = "<!-- replib:atlas -->"
FIG_DIR = "atlas"  # beside the page in the staged book/
LABELS = {
    "isoscore": "IsoScore",
    "effective_dims": "effective dimensions",
    "avg_cosine": "average cosine",
    "rogue_share": "share of the average cosine in the rogue dimensions",
}
#: sorts the tables of class ``replib-sortable`` when a header is clicked (numbers numerically)
SORT_JS = """<script>
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("table.replib-sortable").forEach(function (table) {
    table.querySelectorAll("thead th").forEach(function (th, col) {
      th.style.cursor = "pointer";
      th.title = "sort by this column";
      th.addEventListener("click", function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var up = th.getAttribute("aria-sort") !== "ascending";
        table.querySelectorAll("thead th").forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", up ? "ascending" : "descending");
        rows.sort(function (a, b) {
          var x = a.cells[col].getAttribute("data-v"), y = b.cells[col].getAttribute("data-v");
          var nx = parseFloat(x), ny = parseFloat(y);
          var c = (isNaN(nx) || isNaN(ny)) ? String(x).localeCompare(String(y)) : nx - ny;
          return up ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
});
</script>"""


def _cell(v, sort_value=None) -> str:
    """A cell as the book's tables show it (:func:`replib.tables.format_cell`), sorted by its full value."""
    sv = v if sort_value is None else sort_value
    sv = "" if isinstance(sv, float) and not math.isfinite(sv) else sv
    num = ' class="num"' if isinstance(v, (int, float)) and not isinstance(v, bool) else ""
    return f'<td data-v="{html.escape(str(sv))}"{num}>{html.escape(format_cell(v))}</td>'


def table_html(atlas: dict) -> str:
    """The sortable table of an atlas: one row per model and layer."""
    head = ["model", "kind", "layer", "width", "rows"] + [LABELS[m] for m in ROW_METRICS] + ["rogue dimensions"]
    out = ['<div class="replib-table"><table class="replib-sortable replib-atlas">', "<thead><tr>"]
    out += [f'<th scope="col">{html.escape(h)}</th>' for h in head]
    out.append("</tr></thead><tbody>")
    for r in atlas_rows(atlas):
        cells = [_cell(r["label"]), _cell(r["kind"]), _cell(r["layer"]), _cell(r["n_features"]), _cell(r["n_rows"])]
        cells += [_cell(r[m]) for m in ROW_METRICS]
        cells.append(_cell(", ".join(map(str, r["rogue_dims"])), r["rogue_dims"][0] if r["rogue_dims"] else ""))
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def plot_metric(atlas: dict, metric: str, path: Path) -> Path:
    """One PNG: ``metric`` over the layers of every model of the atlas, a line per model."""
    fig = Figure(figsize=(7.5, 4.2))
    ax = fig.subplots()
    for m in atlas.get("models", []):
        if m.get("status") != "ok":
            continue
        layers = sorted(m["layers"], key=int)
        ys = [m["layers"][k][metric] for k in layers]
        style = "o" if len(layers) == 1 else "o-"
        ax.plot([int(k) for k in layers], ys, style, label=m["label"], markersize=4)
    ax.set_xlabel("layer (block output; 0 = first block, static vectors at 0)")
    ax.set_ylabel(LABELS[metric])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, dpi=110)  # the PNG carries its legend verdict (replib.plotting)
    return path


def atlas_markdown(atlas: dict, fig_dir: Path) -> str:
    """The section of one atlas: settings, figures (written into ``fig_dir``, linked as ``atlas/...``: the
    folder :data:`FIG_DIR` beside the page), the sortable table and the models not computed."""
    profile = atlas["profile"]
    ok = [m for m in atlas["models"] if m["status"] == "ok"]
    s = atlas.get("settings", {})
    lines = [
        f"## Profile `{profile}`",
        "",
        f"Computed {atlas.get('created', '?')} for {len(ok)} of {len(atlas['models'])} models, at most "
        f"{s.get('max_rows')} rows per layer (a seeded subsample), seed {s.get('seed')}; each model's sample is "
        "listed below the table.",
        "",
    ]
    for metric in ROW_METRICS:
        name = f"{profile}-{metric}.png"
        plot_metric(atlas, metric, Path(fig_dir) / name)
        alt = f"{LABELS[metric]} per layer of every model of the {profile} atlas"
        caption = (
            f"{LABELS[metric][:1].upper()}{LABELS[metric][1:]} per layer, profile `{profile}`: one line per model."
        )
        lines += [*figure_md(f"{FIG_DIR}/{name}", alt, caption), ""]
    lines += ["```{raw} html", table_html(atlas), "```", ""]
    gone = [m for m in atlas["models"] if m["status"] != "ok"]
    if gone:
        lines += ["Not in this atlas:", ""]
        lines += [f"- **{m['label']}** ({m['status']}): {m['reason']}" for m in gone]
        lines.append("")
    lines += ["Models:", "", *[f"- **{m['label']}** ({m['kind']}): {_described(m)}" for m in ok], ""]
    return "\n".join(lines)


def _described(m: dict) -> str:
    """A model's note, where its weights came from and its sample, in one line."""
    s, model = m.get("sample") or {}, m.get("model") or {}
    data = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in s.items() if k != "data")
    rev = str(model.get("revision") or "")
    where = rev if rev.startswith("sha256:") else model.get("source") or ""  # a trained model: its weights
    return "; ".join(x for x in (m.get("note"), f"`{where}`" if where else "", f"{s.get('data', '?')}: {data}") if x)


def stage_page(stage_dir: Path, atlas_dir: Path) -> Path | None:
    """Fill the staged atlas page (``stage_dir/book/atlas.md``) from ``atlas_dir``: :data:`MARKER` becomes every
    atlas's section, or how to compute one; returns the page, or None when the book has no atlas page."""
    page = Path(stage_dir) / ATLAS_PAGE
    if not page.exists():
        return None
    files = [Path(atlas_dir) / p / "atlas.json" for p in PROFILES]  # in profile order
    atlases = [json.loads(f.read_text()) for f in files if f.exists()]
    if atlases:
        body = "\n".join(
            [*(atlas_markdown(a, page.parent / FIG_DIR) for a in atlases), "```{raw} html", SORT_JS, "```"]
        )
    else:
        body = (
            "No atlas was computed for this build of the book. Compute one with "
            "`python -m bookkit.book.atlas --profile offline` (it writes `build/atlas/offline/atlas.json`) and build "
            "the book again."
        )
    text = page.read_text()
    page.write_text(text.replace(MARKER, body) if MARKER in text else text + "\n" + body + "\n")
    return page


def for_book(profile: str, root: Path, progress: bool = False, threads: int | None = None) -> list[str]:
    """The atlas of ``profile`` for the book the main job builds (``python -m replib all``), into
    ``root/build/atlas/<profile>`` where :func:`stage_page` reads it; each model's card resumes from its
    ``card.json`` and its layers from the embedding cache, so a second build costs little. The paper profile's
    atlas is a part of its own (the nightly's paper parts). ``threads``: torch's and the BLAS' threads while it
    computes (a lane's share of the cores when the chapters' kernels run beside it; None: as they are).
    Returns the keys of the models that failed (named on one line each)."""
    if profile == "paper":
        return []
    out = Path(root) / "build" / "atlas" / profile
    with threadpool_limits(threads), torch_threads(threads):
        atlas = compute_atlas(out, profile, progress=progress)
    failed = [m for m in atlas["models"] if m["status"] == "failed"]
    for m in atlas["models"]:
        if m["status"] != "ok":
            print(f"atlas {profile}: {m['key']} {m['status']}: {m['reason']}")
    print(
        f"atlas {profile}: {len(atlas['models']) - len(failed)} of {len(atlas['models'])} models, {out / 'atlas.json'}"
    )
    return [m["key"] for m in failed]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bookkit.book.atlas", description="compute the isotropy atlas")
    ap.add_argument("--profile", choices=PROFILES, default="offline")
    ap.add_argument("-o", "--output", type=Path, help="folder (default build/atlas/<profile>)")
    ap.add_argument("--n-lines", type=int, help="WikiText-2 lines per text model")
    ap.add_argument("--n-proteins", type=int, help="Swiss-Prot sequences per protein model")
    ap.add_argument("--max-rows", type=int, help="rows per layer kept for the metrics")
    ap.add_argument("--device", help="torch device (default: cuda when available)")
    ap.add_argument("--debug", action="store_true", help="show the traceback of an error")
    a = ap.parse_args(argv)
    sizes = {"n_lines": a.n_lines, "n_proteins": a.n_proteins, "max_rows": a.max_rows}
    out = a.output or Path("build") / "atlas" / a.profile
    try:
        cfg = with_config(**{k: v for k, v in sizes.items() if v is not None})
        atlas = compute_atlas(out, a.profile, cfg=cfg, device=a.device)
    except USER_ERRORS as exc:  # one line, as the book's command line says it (bookkit.errors)
        if a.debug:
            traceback.print_exc()
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    failed = [m["key"] for m in atlas["models"] if m["status"] == "failed"]
    print(f"atlas {a.profile}: {out / 'atlas.json'}; failed: {failed or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
