"""One cell of a table as text, in the units asked for (tables and Markdown; CSV and JSON keep raw values)."""

from __future__ import annotations

import dataclasses
import re

from kvplan.report.document import Cell, Document, Kind
from kvplan.units import Units, format_seconds, format_size

#: what must not reach a terminal, a log or a file as itself: C0 and C1 controls (escape sequences, carriage
#: returns), DEL, lone surrogates (not encodable), and the bidirectional overrides that reorder what is shown;
#: JSON escapes C0 itself and the rest with UNSAFE_PAST_C0 (render/json.py)
UNSAFE_PAST_C0 = "\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069"
_UNPRINTABLE = re.compile(f"[\x00-\x1f{UNSAFE_PAST_C0}]")


def _escaped(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(text: str) -> str:
    """``text`` with every character that could drive a terminal or break a file escaped as \\xNN / \\uNNNN."""
    return _UNPRINTABLE.sub(_escaped, text)


def _clean(value: object) -> object:
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_clean(v) for v in value)
    return value


def printable_document(doc: Document) -> Document:
    """``doc`` with every text it shows (answer, summary, cells, notes, chart labels) printable; JSON keeps the
    exact strings (its own escapes carry them safely)."""
    chart = doc.chart
    if chart is not None:
        chart = dataclasses.replace(
            chart,
            title=printable(chart.title),
            series=tuple(dataclasses.replace(s, name=printable(s.name)) for s in chart.series),
        )
    return dataclasses.replace(
        doc,
        headline=None if doc.headline is None else printable(doc.headline),
        caption=None if doc.caption is None else printable(doc.caption),
        summary=tuple((printable(k), printable(v)) for k, v in doc.summary),
        tables=tuple(
            dataclasses.replace(t, rows=_clean(t.rows), total=_clean(t.total), title=_clean(t.title))  # type: ignore[arg-type]
            for t in doc.tables
        ),
        notes=tuple(printable(n) for n in doc.notes),
        warnings=tuple(printable(w) for w in doc.warnings),
        data=_clean(doc.data),  # type: ignore[arg-type]
        chart=chart,
    )


def format_cell(value: Cell, kind: Kind, units: Units) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if kind is Kind.BYTES and isinstance(value, (int, float)):
        return format_size(value, units)
    if kind is Kind.COUNT and isinstance(value, int):
        return f"{value:,}"
    if kind is Kind.RATIO and isinstance(value, (int, float)):
        return f"{value:.3f}×"
    if kind is Kind.SHARE and isinstance(value, (int, float)):
        return f"{value + 0.0:.1%}".replace("-0.0%", "0.0%")  # a change that rounds to nothing has no sign
    if kind is Kind.SECONDS and isinstance(value, (int, float)):
        return format_seconds(value)
    return str(value)
