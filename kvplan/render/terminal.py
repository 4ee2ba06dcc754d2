"""Rich draws what kvplan laid out (kvplan.render.text): lines of styled pieces and tables whose every column
width and line break is already decided. Rich is imported here only, and only when something is drawn.

The settings that keep kvplan's guarantees (measured: tests/render/test_text.py):
- one Console exactly as wide as the widest thing drawn, so Rich never wraps, shrinks or crops (Rich's own table
  layout cuts numbers to ``4,0…``; and asked for "no limit", it pads every line to the console's width);
- columns of fixed width that never wrap (text that wraps was broken into lines by kvplan), 2-space gaps (one
  space of padding and a blank divider), no edge padding, a rule under the header and above the total;
- colour and emphasis only where ``colour`` is asked for (a terminal): never an ANSI code in a pipe or a file,
  whatever FORCE_COLOR or TTY_COMPATIBLE say, and NO_COLOR drops the colours (emphasis stays);
- cells are data: no markup, emoji or highlighting (``[1]`` and ``:x:`` print as typed);
- trailing spaces (Rich pads each cell to its column) are stripped from every line.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_TRAILING = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)$", re.M)


@dataclass(frozen=True)
class Piece:
    text: str
    style: str = ""  # a Rich style, drawn only on a terminal


@dataclass(frozen=True)
class Line:
    pieces: tuple[Piece, ...] = ()

    def __init__(self, *pieces: Piece) -> None:
        object.__setattr__(self, "pieces", pieces)

    @property
    def width(self) -> int:
        return sum(len(p.text) for p in self.pieces)


@dataclass(frozen=True)
class Grid:
    """A table laid out: the indent, the header, each column's width and alignment, the rows (a cell may hold
    several lines), the total row set apart, and the styles of cells by their text."""

    indent: str
    header: tuple[str, ...]
    widths: tuple[int, ...]
    right: tuple[bool, ...]
    rows: tuple[tuple[str, ...], ...]
    total: tuple[str, ...] | None = None
    cell_styles: Mapping[str, str] = field(default_factory=dict)

    @property
    def width(self) -> int:
        return len(self.indent) + sum(self.widths) + 2 * (len(self.widths) - 1)


def _table(grid: Grid, colour: bool) -> Any:
    from rich import box
    from rich.table import Column, Table
    from rich.text import Text

    rules = box.Box("    \n    \n ── \n    \n ── \n ── \n    \n    \n")  # under the header, above the total
    table = Table(
        *[
            Column(
                h,
                justify="right" if r else "left",
                width=w,
                no_wrap=True,
            )
            for h, w, r in zip(grid.header, grid.widths, grid.right, strict=True)
        ],
        box=rules,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
        header_style="bold" if colour else "",
        expand=False,
        collapse_padding=False,
    )

    def cells(row: tuple[str, ...]) -> list[Any]:
        return [Text(c, style=grid.cell_styles.get(c, "") if colour else "") for c in row]

    for row in grid.rows:
        table.add_row(*cells(row))
    if grid.total is not None:
        table.add_section()
        table.add_row(*cells(grid.total), style="bold" if colour else "")
    return table


def draw(blocks: Sequence[Line | Grid], colour: bool = False) -> str:
    """The blocks as text: with ANSI emphasis and colour when ``colour``, plain otherwise."""
    from rich.console import Console
    from rich.padding import Padding
    from rich.text import Text

    width = max((b.width for b in blocks), default=1) + 1
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=colour,
        color_system="standard" if colour else None,
        no_color=bool(os.environ.get("NO_COLOR")) if colour else True,
        markup=False,
        emoji=False,
        highlight=False,
        legacy_windows=False,
        soft_wrap=False,
    )
    for block in blocks:
        if isinstance(block, Grid):
            console.print(Padding(_table(block, colour), (0, 0, 0, len(block.indent)), expand=False), crop=False)
        else:
            text = Text(no_wrap=True, overflow="ignore")
            for piece in block.pieces:
                text.append(piece.text, piece.style if colour else "")
            console.print(text, no_wrap=True, overflow="ignore", crop=False)
    return _TRAILING.sub(r"\1", buffer.getvalue())
