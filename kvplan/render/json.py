"""JSON: the document's data, tables, notes and warnings under one schema version; every size in integer bytes."""

from __future__ import annotations

import json
import re

from kvplan.render.cells import UNSAFE_PAST_C0
from kvplan.report.document import Document

#: what JSON itself writes raw but a terminal must not get (DEL, C1 controls, bidirectional overrides) and what
#: UTF-8 cannot carry (lone surrogates): written as JSON's \\uNNNN escapes, which read back as the same string
_RAW = re.compile(f"[{UNSAFE_PAST_C0}]")


def render(doc: Document) -> str:
    """Strings kept exact: C0 controls escaped by JSON itself, the rest of _RAW by the same escapes."""
    text = json.dumps(doc.to_dict(), indent=2, ensure_ascii=False)
    return _RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"
