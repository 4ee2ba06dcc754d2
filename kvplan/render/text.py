"""The terminal format: the answer, summary lines, aligned tables, the chart, notes — laid out by kvplan, drawn by
Rich (kvplan.render.terminal).

No number or name is ever cut. On a terminal narrower than a table, columns marked droppable are left out
(lowest priority first: the K / V split before anything else) and a note says which; if the table is still
too wide, each row is stacked as ``header: value`` lines. Piped output has no width limit. Rich's own layout
would shrink columns and cut cells (``4,0…``), so kvplan decides every width and line break first and Rich only
draws them: on a terminal with emphasis and colour (the answer, the header, FAIL, warnings), elsewhere as plain
text with no trailing spaces.
"""

from __future__ import annotations

import textwrap

from kvplan.render.cells import format_cell
from kvplan.render.terminal import Grid, Line, Piece, draw
from kvplan.report.document import Column, Document, Format, Kind, Table
from kvplan.units import Units

GAP = "  "
INDENT = "  "
#: cells drawn with emphasis on a terminal (a check's status column)
STATUS_STYLES = {"FAIL": "bold red", "ERROR": "bold red", "PASS": "green"}


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


def _span(widths: list[int]) -> int:
    return len(INDENT) + sum(widths) + len(GAP) * (len(widths) - 1)


def _wrapped(cells: list[str], widths: list[int], cols: list[Column]) -> list[str]:
    """A row's cells, the wrapping text ones broken into lines of their column's width."""
    return [
        "\n".join(textwrap.wrap(cell, w) or [""]) if c.wrap else cell
        for cell, w, c in zip(cells, widths, cols, strict=True)
    ]


def layout_table(table: Table, units: Units, width: int | None) -> tuple[Grid | list[Line], list[str]]:
    """The table as a grid of fixed column widths (or, too wide even without its droppable columns, stacked
    lines), and the headers of columns left out to fit ``width`` (None: no limit)."""
    cols = list(table.columns_for(Format.TABLE))
    dropped: list[str] = []
    header, rows, total = _cells(table, cols, units)
    if width is not None and _span(_width(header, rows, total)) > width:
        # too wide: a column with nothing in it goes first, and says nothing by going
        empty = {i for i in range(len(cols)) if not any(r[i] for r in [*rows, *([total] if total else [])])}
        cols = [c for i, c in enumerate(cols) if i not in empty]
    while True:
        header, rows, total = _cells(table, cols, units)
        widths = _width(header, rows, total)
        if width is None or _span(widths) <= width:
            break
        # shrink wrapping text first, the widest first, never below 24 characters
        while _span(widths) > width and (wrappable := [i for i, c in enumerate(cols) if c.wrap and widths[i] > 24]):
            i = max(wrappable, key=lambda j: widths[j])
            widths[i] = max(24, widths[i] - (_span(widths) - width))
        if _span(widths) <= width:
            break
        droppable = [c for c in cols if c.drop > 0]
        if not droppable:
            return _stacked(table, cols, units, width), dropped
        victim = min(droppable, key=lambda c: c.drop)
        for c in [c for c in droppable if c.drop == victim.drop]:
            cols.remove(c)
            dropped.append(c.header)
    right = [c.kind is not Kind.TEXT for c in cols]
    grid = Grid(
        INDENT,
        tuple(header),
        tuple(widths),
        tuple(right),
        tuple(tuple(_wrapped(r, widths, cols)) for r in rows),
        None if total is None else tuple(_wrapped(total, widths, cols)),
        STATUS_STYLES,
    )
    return grid, dropped


def render_table(table: Table, units: Units, width: int | None) -> tuple[list[str], list[str]]:
    """The table's lines as drawn (plain) and the headers of columns left out to fit ``width``."""
    block, dropped = layout_table(table, units, width)
    return draw([block] if isinstance(block, Grid) else block).splitlines(), dropped


def _stacked(table: Table, cols: list[Column], units: Units, width: int | None = None) -> list[Line]:
    """Each row as ``header: value`` lines (a table too wide for the terminal even without optional columns); a
    wrapping column's text broken at words to ``width``, under its first line (a word is never cut)."""
    label = max(len(c.header) for c in cols)
    lines: list[Line] = []
    for row in [*table.rows, *([table.total] if table.total else [])]:
        if lines:
            lines.append(Line())
        for c in cols:
            value = format_cell(row.get(c.key), c.kind, units)
            if value:
                style = STATUS_STYLES.get(value, "")
                head = f"{INDENT}{c.header.rjust(label)}: "
                room = None if width is None or not c.wrap else max(24, width - len(head))
                parts = _wrap(value, room) if room is not None else [value]
                for i, part in enumerate(parts or [value]):
                    lines.append(Line(Piece(head if i == 0 else " " * len(head)), Piece(part, style)))
    return lines


def _wrap(text: str, width: int | None, first: str = "", rest: str = "") -> list[str]:
    if width is None:
        return [first + text]
    return textwrap.wrap(
        text,
        width,
        initial_indent=first,
        subsequent_indent=rest,
        break_on_hyphens=False,
        break_long_words=False,
    )


def _head(doc: Document, width: int | None) -> list[Line | Grid]:
    """The answer (bold; red when it is "no") and the summary lines, labels bold."""
    out: list[Line | Grid] = []
    if doc.headline:
        style = "bold red" if doc.exit_code else "bold"
        out += [Line(Piece(line, style)) for line in _wrap(doc.headline, width, rest="  ")]
    label = max((len(k) for k, _ in doc.summary), default=0)
    for k, v in doc.summary:
        first = f"{k.ljust(label)}  "
        lines = _wrap(v, width, first, " " * len(first))
        out += [Line(Piece(line[: len(first)], "bold"), Piece(line[len(first) :])) for line in lines[:1]]
        out += [Line(Piece(line)) for line in lines[1:]]
    return out


def _bullets(label: str, style: str, items: tuple[str, ...] | list[str], width: int | None) -> list[Line | Grid]:
    """Warnings (``warning: ``, the label in ``style``) or notes (``• ``), each wrapped under itself."""
    out: list[Line | Grid] = []
    for item in items:
        lines = _wrap(item, width, label, "  ")
        out += [Line(Piece(label.rstrip(), style), Piece(line[len(label.rstrip()) :])) for line in lines[:1]]
        out += [Line(Piece(line)) for line in lines[1:]]
    return out


def render(doc: Document, units: Units, width: int | None, colour: bool = False) -> str:
    """The document for a terminal (``width`` its columns, ``colour`` its emphasis) or a pipe (None, False)."""
    out = _head(doc, width)
    notes = list(doc.notes)
    for table in doc.tables:
        if not table.columns_for(Format.TABLE):  # a data-only table (JSON / CSV)
            continue
        if out:
            out.append(Line())
        if table.title:
            out.append(Line(Piece(table.title, "bold")))
        block, dropped = layout_table(table, units, width)
        out += [block] if isinstance(block, Grid) else block
        if dropped:
            notes.append(f"left out at {width} columns: {', '.join(dropped)} (a wider terminal or -o csv has them)")
    if doc.chart is not None:
        from kvplan.render.chart import bars

        out.append(Line())
        out += [Line(Piece(line.rstrip(), "cyan")) for line in bars(doc.chart, units)]
    if doc.warnings or notes:
        out.append(Line())
    out += _bullets("warning: ", "bold yellow", doc.warnings, width)
    out += _bullets("• ", "", notes, width)
    return draw(out, colour)
