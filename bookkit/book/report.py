"""Runner reports: the validation dashboard, merging reports, and drift between two nights.

A *report* is the JSON the runner writes (``build/runs/<profile>/report.json``): ``profile``,
``started``/``finished``, ``environment``, ``chapters`` (one entry per executed chapter) and ``claims``
(one entry per claim, see :class:`bookkit.claims.checker.ClaimResult`). A *bundle* holds several reports:
``{"kind": "replib-report-bundle", "reports": [...]}``.

Command line (``python -m replib report ...``):

- ``merge A.json B.json ... -o OUT.json``: one report per profile (a chapter run later replaces the
  same chapter run earlier; the parts of a chapter run in parts combine), written as a single report or,
  for several profiles, a bundle;
- ``drift OLD.json NEW.json``: the claims whose status or value changed (:func:`drift`);
- ``dashboard REPORT.json ... -o validation.md``: the validation page as Markdown.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from replib._io import confined
from replib.profiles import PROFILES
from replib.provenance import revision_label

from ..claims.claims import CLAIMS_SUFFIX, load_claims
from ..claims.seeds import check_chapter_seeds
from ..claims.status import STATUS_BADGE, STATUSES, closing_line, format_value
from ..claims.status import summarize as _summarize
from ..run.part_records import merge_chapter_entries
from ..run.run_report import bind_to_paper_models
from .pages import counts_text

BUNDLE_KIND = "replib-report-bundle"


# ------------------------------------------------------------------ reading, merging
def _check_report(rep: Any, where: str) -> dict:
    """``rep`` when it has the shape the merge, drift and dashboard read: a profile, a list of chapters (each
    with its name and status) and a list of claims (each with its chapter, key and a known status)."""
    if not isinstance(rep, dict) or not {"profile", "claims", "chapters"} <= set(rep):
        raise ValueError(f"{where}: not a runner report (needs 'profile', 'chapters' and 'claims')")
    if not isinstance(rep["profile"], str):
        raise ValueError(f"{where}: 'profile' is {rep['profile']!r}, not a profile name; not a runner report")
    need = {"chapters": ("chapter", "status"), "claims": ("chapter", "key", "status")}
    for field, keys in need.items():
        items = rep[field]
        if not isinstance(items, list):
            raise ValueError(f"{where}: '{field}' is not a list; not a runner report")
        for i, item in enumerate(items):
            bad = [k for k in keys if not isinstance(item, dict) or not isinstance(item.get(k), str)]
            if bad:
                raise ValueError(
                    f"{where}: {field}[{i}] has no {', '.join(repr(k) for k in bad)} (a text); not a runner report "
                    "(write reports with `replib run` or `replib report merge`)"
                )
            if field == "claims" and item["status"] not in STATUSES:
                raise ValueError(
                    f"{where}: claims[{i}] has the status {item['status']!r}, not one of {', '.join(STATUSES)}"
                )
    return rep


def load(path) -> list[dict]:
    """Read a report or a bundle from ``path``; returns a list of reports."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: cannot read a JSON report: {exc}") from None
    if isinstance(doc, dict) and doc.get("kind") == BUNDLE_KIND:
        return [_check_report(r, f"{path} report #{i + 1}") for i, r in enumerate(doc.get("reports", []))]
    return [_check_report(doc, str(path))]


def summarize(report: dict) -> dict:
    """The runner's summary counts, recomputed from the claims and chapters of ``report``."""
    return _summarize(report["claims"], report["chapters"])


def _merge_parts(chapter: str, profile: str, entries: list[tuple[dict, dict]], root) -> tuple[dict, list[dict]]:
    """One chapter run in parts (:mod:`bookkit.run.part_records`) from several reports: every part's newest done
    state, the claims checked again on the records of the done parts (the claims file under ``root``)."""
    if root is None:
        raise ValueError(f"merging the parts of {chapter} checks its claims again: run from the project or give --root")
    claims = load_claims(confined(Path(root) / "notebooks", f"{chapter}{CLAIMS_SUFFIX}", what="chapter"))
    entry, results = merge_chapter_entries(
        entries, claims, lambda cl, records: check_chapter_seeds(cl, profile, {None: records}, {None: None})
    )
    if entry.get("models_override"):  # a run on substituted models: values bound to the paper's stay unverified
        results = bind_to_paper_models(results, entry["models_override"], bool(entries[-1][1].get("rehearsal")))
    return entry, results


def merge(reports: Iterable[dict], root=None) -> list[dict]:
    """Merge reports: one per profile, in PROFILES order; for each chapter the latest run wins.

    Runs of single chapters (``--chapters X``) on different nights or machines combine into one report
    per profile; a chapter present in several reports is taken from the one that started last. A chapter
    whose latest entry is a part (``--part``) is merged from every report of its parts instead: each part's
    newest done run, the claims checked again on their records (the claims file under ``root``, the
    project), a claim of a part that has not run ``missing``.
    """
    by_profile: dict[str, list[dict]] = {}
    for rep in reports:
        by_profile.setdefault(rep["profile"], []).append(rep)
    out = []
    for profile in sorted(by_profile, key=lambda p: (PROFILES.index(p) if p in PROFILES else len(PROFILES), p)):
        reps = sorted(by_profile[profile], key=lambda r: r.get("started") or "")
        if len(reps) == 1:
            out.append(reps[0])
            continue
        chapters: dict[str, tuple[dict, dict]] = {}
        for rep in reps:
            for ch in rep["chapters"]:
                chapters[ch["chapter"]] = (ch, rep)
        merged = {
            "profile": profile,
            "started": reps[0].get("started"),
            "finished": reps[-1].get("finished"),
            "environment": reps[-1].get("environment", {}),
            "chapters": [],
            "claims": [],
            "merged_from": [
                {
                    "started": r.get("started"),
                    "finished": r.get("finished"),
                    "git_commit": r.get("environment", {}).get("git_commit"),
                }
                for r in reps
            ],
        }
        for name, (ch, rep) in chapters.items():
            if "parts" in ch:
                entries = [(c, r) for r in reps for c in r["chapters"] if c["chapter"] == name and "parts" in c]
                entry, results = _merge_parts(name, profile, entries, root)
                merged["chapters"].append({**entry, "started": rep.get("started")})
                merged["claims"].extend(results)
                continue
            merged["chapters"].append({**ch, "started": rep.get("started")})
            merged["claims"].extend(c for c in rep["claims"] if c["chapter"] == name)
        merged["summary"] = summarize(merged)
        out.append(merged)
    return out


def bundle(reports: list[dict]) -> dict:
    return {"kind": BUNDLE_KIND, "reports": reports}


# ------------------------------------------------------------------ Markdown cells
def md_value(v) -> str:
    """A value for a Markdown table cell (:func:`bookkit.claims.status.format_value`, pipes escaped)."""
    return md_cell(format_value(v))


def md_cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _box(kind: str, text: str) -> list[str]:
    """A MyST admonition (``note``, ``warning``) holding ``text``, then a blank line."""
    return [f"```{{{kind}}}", text, "```", ""]


# ------------------------------------------------------------------ the dashboard
LEGEND = (
    "**reproduced**: the paper's value within a tolerance derived from its printed precision (or its stated "
    "±, or our value's spread); **consistent**: a property that would fail if the science broke holds; "
    "**sanity**: holds by construction (an invariance, a count fixed by the data), never evidence; "
    "**deviates**: the check holds on a stand-in that differs from the paper's set-up, for the stated reason; "
    "**expected failure**: the paper's statement does not hold here beyond the value's spread, for the stated "
    "scientific reason; **inconclusive**: the value's spread (over its sample or over seeds) straddles the "
    "bound, so no verdict is drawn; **unverified**: needs pretrained weights, a GPU or data that the "
    "profile does not have; **failed**: a check failed, a value is missing or the chapter did not run."
)


def chapter_titles(reports: list[dict]) -> dict[str, str]:
    """chapter -> its title (the first report's that ran it), in the order the reports ran them."""
    titles = {}
    for rep in reports:
        for ch in rep["chapters"]:
            titles.setdefault(ch["chapter"], ch.get("title") or ch["chapter"])
    return titles


def _note(c: dict) -> str:
    if c["status"] in ("deviates", "expected_failure"):
        what = "deviation" if c["status"] == "deviates" else "expected failure"
        return f"{what}: " + (c.get("deviation") or c["detail"])
    return f"{c['status']}: {c['detail']}" if c["status"] in ("unverified", "failed") else c["detail"]


def models_used(rep: dict) -> list[dict]:
    """The model weights a report's chapters loaded (from each chapter's ``models``, as noted by
    :func:`replib.provenance.note_model`), one entry per distinct weights with the chapters that used them."""
    out: dict[tuple, dict] = {}
    for ch in rep.get("chapters", []):
        for m in ch.get("models") or []:
            key = (m.get("name"), m.get("kind"), revision_label(m))
            e = out.setdefault(key, {**m, "chapters": []})
            if ch["chapter"] not in e["chapters"]:
                e["chapters"].append(ch["chapter"])
    return sorted(out.values(), key=lambda m: (str(m.get("name")), revision_label(m)))


def environment_lines(rep: dict) -> list[str]:
    env = rep.get("environment", {}) or {}
    lines = [
        f"- Python {env.get('python', '?')} on `{env.get('platform', '?')}`, device `{env.get('device', '?')}`, "
        f"commit `{(env.get('git_commit') or '?')[:10]}`"
    ]
    pk = env.get("packages", {}) or {}
    if pk:
        lines.append(
            "- packages: " + ", ".join(f"{k} {v}" for k, v in sorted(pk.items(), key=lambda kv: kv[0].lower()))
        )
    used = models_used(rep)
    if used:
        lines.append(
            "- model weights (what was served; `sha256:` a verified file, a 40-hex id the Hub commit): "
            + "; ".join(
                f"`{m['name']}` {m['kind']} @ `{revision_label(m)[:19]}` ({', '.join(m['chapters'])})" for m in used
            )
        )
    models = None if used else (env.get("models") or rep.get("models"))  # older reports
    if isinstance(models, dict) and models:
        lines.append(
            "- models (pinned revisions): " + ", ".join(f"`{k}` @ `{str(v)[:12]}`" for k, v in sorted(models.items()))
        )
    elif isinstance(models, list) and models:
        lines.append("- models: " + ", ".join(f"`{m}`" for m in models))
    if rep.get("merged_from"):
        lines.append(f"- merged from {len(rep['merged_from'])} runs")
    return lines


def _substituted_notes(reports: list[dict]) -> list[str]:
    """A warning for a paper-scale rehearsal, a note for a run on the reader's models."""
    out = []
    for rep in reports:
        override = rep.get("models_override")
        if rep.get("rehearsal"):
            out += _box(
                "warning",
                f"**Paper-scale rehearsal, not a reproduction** (profile `{rep['profile']}`): the "
                "paper profile's code paths and data sizes ran with substituted models "
                f"({md_cell(json.dumps(override))}). Claims bound to the papers' models are reported unverified.",
            )
        elif override:
            out += _box(
                "note",
                f"Profile `{rep['profile']}` ran on the reader's models ({md_cell(json.dumps(override))}): "
                "claims bound to the papers' models are reported unverified; per-model values are keyed by the "
                "model's short name.",
            )
    return out


def _at_a_glance(reports: list[dict], chapters: list[str], links: dict[str, str]) -> list[str]:
    """Per profile the closing line, then per chapter its run and its claims counted per status (three or four
    narrow columns: the statuses are listed in one cell, so the table fits the text column)."""
    out = ["## At a glance", ""]
    for rep in reports:
        s = summarize(rep)  # recomputed: older reports lack the newer statuses
        out.append(
            f"- profile `{rep['profile']}` (run {rep.get('started', '?')} → {rep.get('finished', '?')}), "
            f"{len(rep['claims'])} claims: **{closing_line(s)}**"
            + (f"; {s['chapter_failures']} chapter(s) did not complete" if s.get("chapter_failures") else "")
        )
    out.append("")
    multi = len(reports) > 1  # the profile column only when several profiles are shown
    out += [
        "| chapter | " + ("profile | " if multi else "") + "run | claims |",
        "|---|" + ("---|" if multi else "") + "---|---|",
    ]
    for ch in chapters:
        short = f"[{ch}]({links[ch]})" if ch in links else ch
        for rep in reports:
            run = next((c for c in rep["chapters"] if c["chapter"] == ch), None)
            if run is None:
                continue
            claims = [c for c in rep["claims"] if c["chapter"] == ch]
            state = f"{run.get('seconds', '?')} s" if run.get("status") == "ok" else f"❌ {run.get('status')}"
            out.append(
                f"| {short} | " + (f"`{rep['profile']}` | " if multi else "") + f"{state} | {counts_text(claims)} |"
            )
    return [*out, ""]


def _what_is_reproduced(reports: list[dict], titles: dict[str, str]) -> list[str]:
    """The values reproduced within tolerance, those deviating or failing, and the unverified by reason."""
    pairs = [(r["profile"], c) for r in reports for c in r["claims"]]
    out = ["## What this book reproduces, and what it does not", ""]
    by_ch, not_repro, unver = {}, [], {}
    for p, c in pairs:
        if c["status"] == "reproduced":
            item = f"`{c['key']}` {md_value(c['value'])} vs {md_value(c['paper_value'])}"
            by_ch.setdefault((c["chapter"], p), []).append(item)
        elif c["status"] in ("deviates", "expected_failure", "inconclusive", "failed"):
            not_repro.append(
                f"- {STATUS_BADGE[c['status']]} `{c['key']}` ({titles.get(c['chapter'], c['chapter'])}, `{p}`): "
                f"{md_cell(_note(c))}"
            )
        elif c["status"] == "unverified":
            unver.setdefault(c["detail"], []).append(f"`{c['key']}` (`{p}`)")
    if by_ch:
        out += ["Paper values reproduced within tolerance (value vs paper):", ""]
        out += [f"- {md_cell(titles.get(ch, ch))} (`{p}`): " + "; ".join(items) for (ch, p), items in by_ch.items()]
    else:
        out.append(
            "No paper value was reproduced within tolerance in these runs (the properties checked are listed below)."
        )
    out.append("")
    if not_repro:
        out += ["Deviating, failing as documented, inconclusive or failing:", "", *not_repro, ""]
    if unver:
        out += ["Unverified, by reason:", ""]
        out += [f"- {md_cell(reason)}: {', '.join(keys)}" for reason, keys in unver.items()]
        out.append("")
    return out


def chapter_claims_markdown(ch: str, reports: list[dict], title: str, claim_links: dict) -> list[str]:
    """One chapter's claims: a warning per profile it did not complete in, then a row per claim with the
    paper's value and, per profile, our value, its status, the check and the note in one cell (at most two
    columns besides the profiles, so the table fits the text column)."""
    rows = {}
    for rep in reports:
        for c in rep["claims"]:
            if c["chapter"] == ch:
                rows.setdefault(c["key"], {})[rep["profile"]] = c
    present = [r["profile"] for r in reports if any(r["profile"] in v for v in rows.values())]
    out = [f"### {title}", ""] if title else []
    for rep in reports:
        run = next((c for c in rep["chapters"] if c["chapter"] == ch), None)
        if run and run.get("status") != "ok":
            out += _box(
                "warning",
                f"Profile `{rep['profile']}`: the chapter did not complete "
                f"({run.get('status')}): {md_cell(run.get('error') or '')[:600]}",
            )
    out += [
        "| claim | paper (source) | " + " | ".join(f"ours, `{p}`" for p in present) + " |",
        "|---|---|" + "---|" * len(present),
    ]
    for key, per in rows.items():
        first = next(iter(per.values()))
        cells = []
        for p in present:
            c = per.get(p)
            cells.append(
                "—"
                if c is None
                else f"{md_value(c['value'])} {STATUS_BADGE.get(c['status'], c['status'])}"
                f"<br><small>{md_cell(c['check'])}: {md_cell(_note(c))}</small>"
            )
        target = claim_links.get((ch, key))
        where = f" · {{ref}}`computed here <{target}>`" if target else ""
        out.append(
            f"| {md_cell(first['claim'])}<br><small>`{key}`{where}</small> | "
            f"{md_value(first['paper_value'])}<br><small>{md_cell(first['source'])}</small> | "
            + " | ".join(cells)
            + " |"
        )
    return [*out, ""]


def _provisional_notes(reports: list[dict]) -> list[str]:
    """A note for each report written after the first of its seeds (:func:`bookkit.run.runner.run`'s
    ``after_first_seed``): its verdicts rest on that seed alone until the run has ended."""
    out = []
    for rep in reports:
        p = rep.get("provisional")
        if p:
            done, seeds = " ".join(map(str, p["seeds_done"])), " ".join(map(str, p["seeds"]))
            out += _box(
                "note",
                f"Provisional (profile `{rep['profile']}`): these verdicts rest on seed {done} alone; the run "
                f"goes on with seeds {seeds}, and this book is built again with every seed's verdicts when it ends "
                "(a claim whose verdict then depends on the seed is inconclusive).",
            )
    return out


def dashboard_markdown(
    reports: list[dict],
    chapter_links: dict[str, str] | None = None,
    claim_links: dict[tuple[str, str], str] | None = None,
    paper_pages: dict[str, str] | None = None,
) -> str:
    """The validation page: the runs and each chapter's claims counted per status, what is and is not
    reproduced, the environment, then every claim of every chapter.

    Parameters
    ----------
    reports : runner reports (several profiles are shown side by side; same-profile reports are merged)
    chapter_links : chapter -> relative link to its page (chapters without one are shown unlinked)
    claim_links : (chapter, key) -> MyST target placed before the cell that computed the claim's value
        (:func:`bookkit.book.pages.claim_target`); each claim then links to that cell
    paper_pages : chapter -> the document of its own validation page (the book's split per paper): the
        claims are listed there, and here a link to each
    """
    links = chapter_links or {}
    out = [
        "# Validation report",
        "",
        "Every claim of every chapter, as checked by the headless runner (`python -m replib run`), "
        "generated from the runner's JSON report when this book was built. " + LEGEND,
        "",
    ]
    if not reports:
        out += _box(
            "note",
            "No runner report was found when this book was built. Run "
            "`python -m replib run --profile smoke` (or `offline`) first.",
        )
        return "\n".join(out)
    reports = merge(reports)
    titles = chapter_titles(reports)
    out += _provisional_notes(reports)
    out += _substituted_notes(reports)
    out += _at_a_glance(reports, list(titles), links)
    out += _what_is_reproduced(reports, titles)
    out += ["## Environment", ""]
    for rep in reports:
        out += [f"Profile `{rep['profile']}`:", ""] + environment_lines(rep) + [""]
    out += ["## Every claim", ""]
    if paper_pages:
        out += ["Every claim of each paper, with the paper's numbers, is on that paper's page:", ""]
        out += [f"- {{doc}}`{md_cell(titles.get(ch, ch))} <{paper_pages[ch]}>`" for ch in titles if ch in paper_pages]
        return "\n".join([*out, ""])
    for ch in titles:
        title = md_cell(titles.get(ch, ch))
        title = f"[{title}]({links[ch]})" if ch in links else title
        out += chapter_claims_markdown(ch, reports, title, claim_links or {})
    return "\n".join(out)


# ------------------------------------------------------------------ drift between two sets of reports
#: the fields of a drift row
DRIFT_FIELDS = "profile chapter key change old_status new_status old_value new_value relative_change".split()


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def relative_change(old, new) -> float | None:
    """(new - old) / |old| for numbers (``inf`` when old is 0 and new is not); None otherwise."""
    if not (_num(old) and _num(new)):
        return None
    if old == new:
        return 0.0
    if old == 0 or not math.isfinite(old):
        return math.inf
    return (new - old) / abs(old)


def drift(old: list[dict], new: list[dict], rtol: float = 1e-9) -> list[dict]:
    """Claims whose status or value changed between two sets of reports (matched by profile, chapter, key).

    Values are equal when both are numbers within ``rtol`` (relative) or when they compare equal
    otherwise. Claims present on one side only are reported as ``added`` / ``removed``.
    """

    def index(reps):
        return {(r["profile"], c["chapter"], c["key"]): c for r in merge(reps) for c in r["claims"]}

    a, b = index(old), index(new)
    rows = []
    for k in sorted(set(a) | set(b)):
        ca, cb = a.get(k), b.get(k)
        va, vb = (ca or {}).get("value"), (cb or {}).get("value")
        sa, sb = (ca or {}).get("status", "absent"), (cb or {}).get("status", "absent")
        rel = relative_change(va, vb)
        if ca is None or cb is None:
            change = "added" if ca is None else "removed"
        elif sa != sb:
            change = "status"
        elif rel is not None and (abs(rel) <= rtol or math.isnan(rel)) or rel is None and va == vb:
            continue
        else:
            change = "value"
        rows.append(dict(zip(DRIFT_FIELDS, (*k, change, sa, sb, va, vb, rel))))
    return rows


def _rel(r) -> str:
    if r is None:
        return "—"
    if math.isinf(r):
        return "∞"
    return f"{r:+.2%}"


def format_drift(rows: list[dict]) -> str:
    """Drift rows as a Markdown table (or a one-line note when nothing changed)."""
    if not rows:
        return "No claim changed status or value."
    out = ["| profile | chapter | claim | change | status | value | relative change |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        status = r["old_status"] if r["old_status"] == r["new_status"] else f"{r['old_status']} → {r['new_status']}"
        out.append(
            f"| {r['profile']} | {r['chapter']} | `{r['key']}` | {r['change']} | {status} "
            f"| {md_value(r['old_value'])} → {md_value(r['new_value'])} | {_rel(r['relative_change'])} |"
        )
    n_status = sum(1 for r in rows if r["change"] in ("status", "added", "removed"))
    return "\n".join([*out, "", f"{len(rows)} claim(s) changed, {n_status} of them in status."])
