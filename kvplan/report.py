"""A report: titled rows with typed columns, rendered the same way as a table, Markdown, CSV or JSON.

``compare`` and ``curve`` build reports; the renderers only present. Byte columns hold integers; the
units (IEC, SI or plain bytes) are applied by the table and Markdown renderers, never mixed in one table.
CSV and JSON always carry integer bytes.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from typing import Any

UNITS = ("iec", "si", "bytes")
_IEC = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_SI = ("B", "kB", "MB", "GB", "TB", "PB")


def format_size(n: int | float, units: str = "iec") -> str:
    """Bytes in one unit system: IEC (1024, KiB…), SI (1000, kB…) or plain bytes with separators."""
    if units == "bytes":
        return f"{int(n):,}"
    base, names = (1024, _IEC) if units == "iec" else (1000, _SI)
    value = float(n)
    for unit in names:
        if abs(value) < base or unit == names[-1]:
            return f"{int(value)} B" if unit == "B" else f"{value:.2f} {unit}"
        value /= base
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    kind: str = "text"  # text | int | bytes | ratio
    terminal: bool = True  # False: left out of the terminal table (too wide), kept in Markdown / CSV / JSON


@dataclass
class Report:
    title: str
    caption: str
    columns: list[Column]
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    kind: str = "report"
    meta: dict[str, Any] = field(default_factory=dict)

    def cell(self, row: dict[str, Any], col: Column, units: str) -> str:
        v = row.get(col.key)
        if v is None:
            return ""
        if col.kind == "bytes" and isinstance(v, (int, float)):
            return format_size(v, units)
        if col.kind == "ratio" and isinstance(v, (int, float)):
            return f"{v:.3f}×"
        return str(v)


def render_markdown(report: Report, units: str = "iec") -> str:
    head = [f"**{report.title}**", "", report.caption] if report.kind == "fit" else [f"**{report.caption}**"]
    lines = [*head, "", "| " + " | ".join(c.header for c in report.columns) + " |"]
    lines.append("|" + "|".join("---:" if c.kind != "text" else "---" for c in report.columns) + "|")
    for row in report.rows:
        lines.append("| " + " | ".join(report.cell(row, c, units) for c in report.columns) + " |")
    for note in report.notes:
        lines += ["", f"> {note}"]
    return "\n".join(lines) + "\n"


def render_csv(report: Report) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([c.key for c in report.columns])
    for row in report.rows:
        writer.writerow(["" if row.get(c.key) is None else row[c.key] for c in report.columns])
    return buf.getvalue()


def render_json(report: Report) -> str:
    doc = {"schema_version": 1, "kind": report.kind, "caption": report.caption, **report.meta,
           "columns": [c.key for c in report.columns], "rows": report.rows, "notes": report.notes}  # fmt: skip
    return json.dumps(doc, indent=2)


def render_table(report: Report, units: str = "iec") -> None:
    from rich import box
    from rich.console import Group
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    from kvplan.render.table import make_console

    table = Table(box=box.SIMPLE_HEAVY, title=report.title, caption=report.caption, title_justify="left",
                  caption_justify="left")  # fmt: skip
    columns = [c for c in report.columns if c.terminal]
    for c in columns:
        table.add_column(c.header, justify="left" if c.kind == "text" else "right", no_wrap=True)
    for row in report.rows:
        table.add_row(*[escape(report.cell(row, c, units)) for c in columns])
    parts: list[Any] = [table] + [Text("• " + n, style="dim") for n in report.notes]
    make_console().print(Group(*parts))
