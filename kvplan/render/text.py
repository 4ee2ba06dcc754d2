"""Markdown and CSV: the same rows as the table, for docs and spreadsheets."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from kvplan.plan import MemoryPlan
from kvplan.render.rows import COLUMNS, HEADERS, cache_rows, caption, human


def render_markdown(plans: Sequence[MemoryPlan], units: str = "iec") -> str:
    lines = [
        f"**{caption(plans)}**",
        "",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "|".join("---" if i < 3 else "---:" for i in range(len(HEADERS))) + "|",
    ]
    for row in cache_rows(plans):
        cells = human(row, units)
        if row["cache"] == "total":
            cells = [f"**{c}**" if c else "" for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    for note in dict.fromkeys(n for plan in plans for n in plan.notes):
        lines.append("")
        lines.append(f"> {note}")
    return "\n".join(lines) + "\n"


def render_csv(plans: Sequence[MemoryPlan]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in cache_rows(plans):
        writer.writerow([row[c] for c in COLUMNS])
    return buf.getvalue()
