"""One cell of a table as text, in the units asked for (tables and Markdown; CSV and JSON keep raw values)."""

from __future__ import annotations

from kvplan.report.document import Cell, Kind
from kvplan.units import Units, format_seconds, format_size


def format_cell(value: Cell, kind: Kind, units: Units) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if kind is Kind.BYTES and isinstance(value, (int, float)):
        return format_size(value, units)
    if kind is Kind.COUNT and isinstance(value, int):
        return f"{value:,}"
    if kind is Kind.RATIO and isinstance(value, (int, float)):
        return f"{value:.3f}×"
    if kind is Kind.SHARE and isinstance(value, (int, float)):
        return f"{value:.1%}"
    if kind is Kind.SECONDS and isinstance(value, (int, float)):
        return format_seconds(value)
    return str(value)
