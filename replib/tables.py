"""The book's one table renderer: every data frame a chapter shows is drawn by :func:`table_html`.

:func:`replib.plotting.setup` registers it as the notebook's HTML formatter of ``pandas.DataFrame``
(:func:`register`), so ``display(df)`` and a cell ending in ``df`` both give a table that reads:

* readable headers: ``s_inter_centered`` reads "s inter centered", a unit suffix becomes the unit
  (``time_s`` reads "time (s)", ``peak_mb`` "peak (MB)", :data:`UNITS`);
* no index column when the index is the default 0, 1, 2, …; a named index becomes the first column;
* numbers at their precision (:func:`format_number`): an integer as it is, a float with 4 significant digits
  and never split into digits by the page (the book's CSS keeps a cell's number on one line and lets a wide
  table scroll sideways);
* "—" for a missing value (NaN, None, NaT), never ``nan`` or ``None``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from html import escape

import pandas as pd

__all__ = ["MISSING", "UNITS", "format_number", "format_cell", "header", "register", "table_html"]

#: what a missing value reads
MISSING = "—"
#: a column name's last ``_part`` that is a unit, and how the header writes it
UNITS = {
    "s": "s",
    "sec": "s",
    "seconds": "s",
    "ms": "ms",
    "min": "min",
    "minutes": "min",
    "h": "h",
    "mb": "MB",
    "gb": "GB",
    "kb": "kB",
    "pct": "%",
    "percent": "%",
}


def header(name) -> str:
    """A column name as a reader reads it: ``_`` as spaces, a trailing unit in parentheses (:data:`UNITS`);
    the levels of a multi-level name joined by spaces."""
    if isinstance(name, tuple):
        return " ".join(header(n) for n in name if str(n) != "")
    text = str(name)
    parts = text.split("_")
    unit = UNITS.get(parts[-1].lower()) if len(parts) > 1 else None
    words = " ".join(p for p in (parts[:-1] if unit else parts) if p)
    return f"{words} ({unit})" if unit else words


def _missing(v) -> bool:
    if v is None or v is pd.NaT:
        return True
    try:
        return bool(pd.isna(v)) if not isinstance(v, (list, tuple, dict, set)) else False
    except (TypeError, ValueError):
        return False


def format_number(v) -> str:
    """A number at its precision: an integer (or an integral float) as it is, other floats with 4 significant
    digits (below 10 000 without an exponent as long as 4 digits show it: 0.2574, 12.35, 1072), larger ones
    rounded to an integer, tiny ones with an exponent; ±inf as ∞."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, numbers.Integral):
        return str(int(v))
    v = float(v)
    if math.isnan(v):
        return MISSING
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    if abs(v) >= 1e4:
        return f"{v:.0f}" if abs(v) < 1e15 else f"{v:.3e}"
    return f"{v:.4g}"


def format_cell(v) -> str:
    """A cell's text: — when missing, :func:`format_number` for numbers, lists and mappings item by item, else
    ``str``."""
    if _missing(v):
        return MISSING
    if isinstance(v, numbers.Number) and not isinstance(v, complex):
        return format_number(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(format_cell(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{k}: {format_cell(x)}" for k, x in v.items()) + "}"
    return str(v)


def table_html(df: pd.DataFrame) -> str:
    """The HTML of a data frame as the book shows it (see the module's description); numbers are aligned
    right (class ``num``), and the table sits in a ``div.replib-table`` that scrolls sideways when it is
    wider than the page."""
    index = df.index  # a column, unless it is 0, 1, 2, … without a name (a reader learns nothing from it)
    plain = isinstance(index, pd.RangeIndex) or list(index) == list(range(len(index)))
    frame = df if plain and index.nlevels == 1 and index.name is None else df.reset_index()
    cols = list(frame.columns)
    out = ['<div class="replib-table"><table class="dataframe replib-table">', "<thead><tr>"]
    out += [f'<th scope="col">{escape(header(c))}</th>' for c in cols]
    out.append("</tr></thead><tbody>")
    for row in frame.itertuples(index=False, name=None):
        cells = []
        for v in row:
            num = isinstance(v, numbers.Number) and not isinstance(v, bool) and not _missing(v)
            cells.append(('<td class="num">' if num else "<td>") + escape(format_cell(v)) + "</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def register(shell) -> bool:
    """Make :func:`table_html` the notebook's HTML of ``shell`` for every ``pandas.DataFrame``; False outside
    IPython (``shell`` None)."""
    if shell is None or not hasattr(shell, "display_formatter"):
        return False
    shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, table_html)
    return True
