"""The terminal format: the answer, summary lines, aligned tables, notes. Plain text, no colour, no trailing spaces.

No number or name is ever cut. On a terminal narrower than a table, columns marked droppable are left out
(lowest priority first: the K / V split before anything else) and a note says which; if the table is still
too wide, each row is stacked as ``header: value`` lines. Piped output has no width limit.
"""

from __future__ import annotations

import textwrap

from kvplan.render.cells import format_cell
from kvplan.report.document import Column, Document, Format, Kind, Table
from kvplan.units import Units

GAP = "  "
INDENT = "  "


def _cells(table: Table, cols: list[Column], units: Units) -> tuple[list[str], list[list[str]], list[str] | None]:
    header = [c.header for c in cols]
    rows = [[format_cell(row.get(c.key), c.kind, units) for c in cols] for row in table.rows]
    total = [format_cell(table.total.get(c.key), c.kind, units) for c in cols] if table.total else None
    return header, rows, total


def _width(header: list[str], rows: list[list[str]], total: list[str] | None) -> list[int]:
    widths = [len(h) for h in header]
    for row in [*rows, *([total] if total else [])]:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], *(len(part) for part in cell.split("\n")))
    return widths


def _line(cells: list[str], widths: list[int], cols: list[Column]) -> str:
    parts = []
    for cell, w, c in zip(cells, widths, cols, strict=True):
        parts.append(cell.ljust(w) if c.kind is Kind.TEXT else cell.rjust(w))
    return (INDENT + GAP.join(parts)).rstrip()


def _wrapped_rows(cells: list[str], widths: list[int], cols: list[Column]) -> list[str]:
    """A row whose wrapping text cells take several lines."""
    split = [
        textwrap.wrap(cell, w) or [""] if c.wrap else [cell] for cell, w, c in zip(cells, widths, cols, strict=True)
    ]
    height = max(len(s) for s in split)
    lines = []
    for i in range(height):
        lines.append(_line([s[i] if i < len(s) else "" for s in split], widths, cols))
    return lines


def render_table(table: Table, units: Units, width: int | None) -> tuple[list[str], list[str]]:
    """The table's lines and the headers of columns left out to fit ``width`` (None: no limit)."""
    cols = list(table.columns_for(Format.TABLE))
    dropped: list[str] = []
    while True:
        header, rows, total = _cells(table, cols, units)
        widths = _width(header, rows, total)
        span = len(INDENT) + sum(widths) + len(GAP) * (len(widths) - 1)
        if width is None or span <= width:
            break
        wrappable = [i for i, c in enumerate(cols) if c.wrap and widths[i] > 24]
        if wrappable:  # shrink wrapping text first, never below 24 characters
            i = max(wrappable, key=lambda j: widths[j])
            over = span - width
            widths[i] = max(24, widths[i] - over)
            if len(INDENT) + sum(widths) + len(GAP) * (len(widths) - 1) <= width:
                return _emit(table, cols, header, rows, total, widths), dropped
        droppable = [c for c in cols if c.drop > 0]
        if not droppable:
            return _stacked(table, cols, units), dropped
        victim = min(droppable, key=lambda c: c.drop)
        same = [c for c in droppable if c.drop == victim.drop]
        for c in same:
            cols.remove(c)
            dropped.append(c.header)
    return _emit(table, cols, header, rows, total, widths), dropped


def _emit(
    table: Table,
    cols: list[Column],
    header: list[str],
    rows: list[list[str]],
    total: list[str] | None,
    widths: list[int],
) -> list[str]:
    lines = [_line(header, widths, cols)]
    rule = INDENT + "─" * (sum(widths) + len(GAP) * (len(widths) - 1))
    lines.append(rule)
    for row in rows:
        lines += _wrapped_rows(row, widths, cols)
    if total is not None:
        lines.append(rule)
        lines += _wrapped_rows(total, widths, cols)
    return lines


def _stacked(table: Table, cols: list[Column], units: Units) -> list[str]:
    """Each row as ``header: value`` lines (a table too wide for the terminal even without optional columns)."""
    label = max(len(c.header) for c in cols)
    lines: list[str] = []
    for row in [*table.rows, *([table.total] if table.total else [])]:
        if lines:
            lines.append("")
        for c in cols:
            value = format_cell(row.get(c.key), c.kind, units)
            if value:
                lines.append(f"{INDENT}{c.header.rjust(label)}: {value}".rstrip())
    return lines


def render(doc: Document, units: Units, width: int | None) -> str:
    out: list[str] = []
    if doc.headline:
        out += (
            textwrap.wrap(doc.headline, width, break_on_hyphens=False, break_long_words=False, subsequent_indent="  ")
            if width
            else [doc.headline]
        )
    if doc.summary:
        label = max(len(k) for k, _ in doc.summary)
        for k, v in doc.summary:
            first = f"{k.ljust(label)}  "
            if width is None:
                out.append((first + v).rstrip())
            else:
                out += textwrap.wrap(
                    v,
                    width,
                    initial_indent=first,
                    subsequent_indent=" " * len(first),
                    break_on_hyphens=False,
                    break_long_words=False,
                )
    notes = list(doc.notes)
    for table in doc.tables:
        if not table.columns_for(Format.TABLE):  # a data-only table (JSON / CSV)
            continue
        if out:
            out.append("")
        if table.title:
            out.append(table.title)
        lines, dropped = render_table(table, units, width)
        out += lines
        if dropped:
            notes.append(f"left out at {width} columns: {', '.join(dropped)} (a wider terminal or -o csv has them)")
    if doc.chart is not None:
        from kvplan.render.chart import bars

        out.append("")
        out += [line.rstrip() for line in bars(doc.chart, units)]
    if doc.warnings or notes:
        out.append("")
    out += _bullets("warning: ", doc.warnings, width)
    out += _bullets("• ", notes, width)
    return "\n".join(out) + "\n"


def _bullets(prefix: str, items: tuple[str, ...] | list[str], width: int | None) -> list[str]:
    lines: list[str] = []
    for item in items:
        if width is None:
            lines.append(prefix + item)
        else:
            indent = " " * len(prefix) if prefix == "• " else "  "
            lines += textwrap.wrap(
                item,
                width,
                initial_indent=prefix,
                subsequent_indent=indent,
                break_on_hyphens=False,
                break_long_words=False,
            )
    return lines
