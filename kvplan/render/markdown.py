"""Markdown: the answer (or a caption) in bold, summary lines, GitHub tables, notes as quotes — for PRs and docs."""

from __future__ import annotations

from kvplan.render.cells import format_cell
from kvplan.report.document import Document, Format, Kind
from kvplan.units import Units


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def render(doc: Document, units: Units) -> str:
    lines: list[str] = []
    top = doc.headline or doc.caption
    if top:
        lines.append(f"**{_escape(top)}**")
    if doc.headline and doc.caption:
        lines += ["", _escape(doc.caption)]
    if doc.summary:
        lines.append("")
        lines += [f"- {k}: {_escape(v)}" for k, v in doc.summary]
    for table in doc.tables:
        cols = table.columns_for(Format.MARKDOWN)
        if not cols:  # a data-only table (JSON / CSV)
            continue
        if lines:
            lines.append("")
        if table.title:
            lines += [f"*{_escape(table.title)}*", ""]
        lines.append("| " + " | ".join(c.header for c in cols) + " |")
        lines.append("|" + "|".join("---" if c.kind is Kind.TEXT else "---:" for c in cols) + "|")
        for row in table.rows:
            lines.append("| " + " | ".join(_escape(format_cell(row.get(c.key), c.kind, units)) for c in cols) + " |")
        if table.total:
            cells = [format_cell(table.total.get(c.key), c.kind, units) for c in cols]
            lines.append("| " + " | ".join(f"**{_escape(x)}**" if x else "" for x in cells) + " |")
    for warning in doc.warnings:
        lines += ["", f"> **warning:** {_escape(warning)}"]
    for note in doc.notes:
        lines += ["", f"> {_escape(note)}"]
    return "\n".join(lines) + "\n"
