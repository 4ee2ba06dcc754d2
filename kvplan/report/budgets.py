"""Budget findings as a table and as prose: the numbers come from the evaluator, the units from the reader."""

from __future__ import annotations

from kvplan.capacity.budgets import Finding
from kvplan.capacity.deployment import Suggestion
from kvplan.report.document import DATA_FORMATS, Column, Format, Kind, Table
from kvplan.units import Units, format_seconds, format_size

HUMAN = frozenset({Format.TABLE, Format.MARKDOWN})


def amount(value: int | float, unit: str, units: Units) -> str:
    """A finding's number in words: bytes in the units asked for, tokens and sequences counted, shares in %."""
    if unit == "bytes":
        return format_size(value, units)
    if unit == "share":
        return f"{value:.1%}"
    if unit == "seconds":
        return format_seconds(value)
    return f"{int(value):,} {unit}"


def detail(f: Finding, units: Units) -> str:
    if f.budget == "fits":
        if f.passed:
            return ""
        return f"short by {format_size(f.actual - f.limit, units)}" + (f" on {f.device}" if f.device else "")
    if f.passed:
        return ""
    if f.unit == "bytes":
        return f"over by {format_size(f.actual - f.limit, units)} ({f.actual / f.limit - 1:.1%})"
    if f.budget == "min_ctx" and f.capped_by_trained:
        return "the model's trained context is the limit searched"
    over = f.budget.startswith("max")  # a ceiling (max_preemptions, max_peak_kv, ...), else a floor
    diff, word = (f.actual - f.limit, "over") if over else (f.limit - f.actual, "short")
    if f.unit == "share":
        return f"{diff:.1%} {word}"
    if f.unit == "seconds":
        return f"{format_seconds(diff)} {word}"
    return f"{int(diff):,} {f.unit} {word}"


def line(f: Finding, units: Units) -> str:
    """One failed budget as a sentence (stderr, notes)."""
    verb = "≥" if f.budget.startswith("min") or f.budget == "headroom" else "≤"
    if f.budget == "fits":
        return f"does not fit: {amount(f.actual, f.unit, units)} needed, {amount(f.limit, f.unit, units)} available"
    what = f"{f.budget} {amount(f.actual, f.unit, units)}, needs {verb} {amount(f.limit, f.unit, units)}"
    more = detail(f, units)
    return f"{what} ({more})" if more else what


COLUMNS = (
    Column("budget", "Budget"),
    Column("status", "Status"),
    Column("actual_text", "Actual", Kind.FIGURE, formats=HUMAN),
    Column("limit_text", "Limit", Kind.FIGURE, formats=HUMAN),
    Column("actual", "Actual", Kind.INT, formats=DATA_FORMATS),
    Column("limit", "Limit", Kind.INT, formats=DATA_FORMATS),
    Column("unit", "Unit", formats=DATA_FORMATS),
    Column("detail", "Detail", wrap=True),
)


def row(f: Finding, units: Units) -> dict[str, str | int | float | bool | None]:
    return {
        "budget": f.budget,
        "status": "PASS" if f.passed else "FAIL",
        "passed": f.passed,
        "actual_text": amount(f.actual, f.unit, units),
        "limit_text": amount(f.limit, f.unit, units),
        "actual": f.actual,
        "limit": f.limit,
        "unit": f.unit,
        "detail": detail(f, units),
    }


def suggestion_text(s: Suggestion) -> str:
    return "passes with " + " ".join(s.flags)


def table(findings: tuple[Finding, ...], units: Units) -> Table:
    """The budgets of one plan (estimate, fit) as a table of their own."""
    return Table("budget_rows", COLUMNS, tuple(row(f, units) for f in findings), title="Budgets", csv=False,
                 json=False)  # fmt: skip
