"""JSON: the document's data, tables, notes and warnings under one schema version; every size in integer bytes."""

from __future__ import annotations

import json

from kvplan.report.document import Document


def render(doc: Document) -> str:
    return json.dumps(doc.to_dict(), indent=2, ensure_ascii=False) + "\n"
