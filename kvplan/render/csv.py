"""CSV: the document's main table with raw values (integer bytes), for spreadsheets and scripts."""

from __future__ import annotations

import csv
import io

from kvplan.report.document import Document, Format


def render(doc: Document) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    table = next((t for t in doc.tables if t.csv), None)
    if table is None:
        return ""
    cols = table.columns_for(Format.CSV)
    writer.writerow([c.key for c in cols])
    for row in [*table.rows, *([table.total] if table.total else [])]:
        writer.writerow(["" if row.get(c.key) is None else row.get(c.key) for c in cols])
    return buf.getvalue()
