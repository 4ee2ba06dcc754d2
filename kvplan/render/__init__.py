"""Renderers: any Document as table (drawn by Rich), JSON, Markdown or CSV; JUnit and SVG writers beside them.
Renderers only present: every number arrives computed."""

from __future__ import annotations

from kvplan.report.document import Document, Format
from kvplan.units import Units


def render(doc: Document, fmt: Format, units: Units = Units.IEC, width: int | None = None, colour: bool = False) -> str:
    """``doc`` as text in ``fmt``; ``width`` limits terminal tables (None: no limit, as when piped); ``colour``:
    the table format's emphasis and colour (a terminal only)."""
    if fmt is Format.JSON:
        from kvplan.render import json

        return json.render(doc)
    from kvplan.render.cells import printable_document

    doc = printable_document(doc)
    if fmt is Format.CSV:
        from kvplan.render import csv

        return csv.render(doc)
    if fmt is Format.MARKDOWN:
        from kvplan.render import markdown

        return markdown.render(doc, units)
    from kvplan.render import text

    return text.render(doc, units, width, colour)
