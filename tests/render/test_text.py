"""The terminal format never cuts a number or a name: at 80 and 100 columns every line fits, columns are left out
lowest priority first (and said so) or rows are stacked; piped output has no width limit; no trailing spaces."""

from __future__ import annotations

import re

import pytest
from helpers import EXAMPLES, kv

from kvplan.render.text import render, render_table
from kvplan.report.document import Column, Document, Kind, Table
from kvplan.units import Units

COMMANDS = [
    ["estimate", "gemma-3-27b", "-c", "32k", "-np", "4"],
    ["estimate", "deepseek-v3.2-exp", "-c", "64k", "--mtp"],
    ["estimate", "qwen3-next-80b-a3b", "-c", "128k", "-np", "2", "--max-kv", "1GiB"],
    ["fit", "qwen3-32b", "--gpu", "RTX-4090x2", "-ctk", "q8_0", "-ctv", "q8_0", "-fa", "on"],
    ["fit", "qwen3-32b", "--gpu", "RTX-4090", "-c", "128k"],
    ["fit", "gpt-oss-120b", "--engine", "vllm", "--gpu", "H100-80GB", "--weights", "mxfp4", "--cache-types", "auto"],
    ["compare", "llama-3.1-8b", "-c", "8k,32k,128k"],
    ["curve", "gemma-3-27b", "-c", "1k:128k"],
    ["check", str(EXAMPLES / "deployments.yaml")],
    ["models"],
    ["gpus"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2]))
@pytest.mark.parametrize("width", [80, 100])
def test_tables_fit_the_terminal_and_cut_nothing(args: list[str], width: int) -> None:
    narrow = kv(*args, width=width)
    wide = kv(*args)
    assert narrow.exit_code == wide.exit_code, narrow.output
    for line in narrow.stdout.splitlines():
        assert len(line) <= width, line
        assert line == line.rstrip()
        assert "…" not in line
    # every figure of the piped output that is still shown appears whole: nothing is shortened
    figures = set(re.findall(r"\d[\d,.]*\s(?:GiB|MiB|KiB|B)\b", wide.stdout))
    shown = set(re.findall(r"\d[\d,.]*\s(?:GiB|MiB|KiB|B)\b", narrow.stdout))
    assert shown <= figures


def test_piped_output_is_never_cut() -> None:
    out = kv("models").stdout
    names = [line.split()[0] for line in out.splitlines()[3:] if line.startswith("  ") and "─" not in line]
    assert len(names) == 70 and all(line == line.rstrip() for line in out.splitlines())


def _table(*widths: int) -> Table:
    columns = tuple(Column(f"c{i}", f"col{i}", Kind.COUNT, drop=i % 3) for i in range(len(widths)))
    row = {f"c{i}": int("9" * w) for i, w in enumerate(widths)}
    return Table("t", columns, (row,))


def test_columns_are_dropped_lowest_priority_first_then_rows_stacked() -> None:
    t = _table(12, 12, 12, 12, 12, 12)  # 6 columns of 15 characters (with separators)
    lines, dropped = render_table(t, Units.IEC, 80)
    assert dropped == ["col1", "col4"] and all(len(line) <= 80 for line in lines)
    assert "999,999,999,999" in lines[2]
    lines, dropped = render_table(_table(40, 40, 40), Units.IEC, 30)  # col0 (40 digits) cannot fit: stack
    assert lines[0].strip().startswith("col0: 9,999")
    assert all(value.replace(",", "").strip("9") == "" for value in (line.split(": ")[1] for line in lines if line))


def test_the_note_names_the_columns_left_out() -> None:
    doc = Document("x", tables=(_table(12, 12, 12, 12, 12, 12),))
    text = render(doc, Units.IEC, 80)
    assert "• left out at 80 columns: col1, col4 (a wider terminal or -o csv has them)" in text
    assert "left out" not in render(doc, Units.IEC, None)


def test_units_govern_every_figure() -> None:
    for units, foreign in (("si", ("GiB", "MiB", "KiB")), ("iec", (" GB", " MB", " kB"))):
        out = kv("fit", "gemma-3-27b", "--gpu", "RTX-4090", "-c", "8k", "--units", units).stdout
        assert not any(unit in out for unit in foreign), out
    out = kv("fit", "gpt-oss-120b", "--engine", "vllm", "--gpu", "H100-80GB", "--units", "bytes").stdout
    assert "GiB" not in out and "MiB" not in out and "KiB" not in out


def test_empty_columns_go_first_when_a_table_is_too_wide() -> None:
    """check's Detail column is empty when every budget passes: at 80 columns it is left out (saying nothing by
    going), so that the rows stay rows instead of being stacked."""
    out = kv("check", str(EXAMPLES / "deployments.yaml"), width=80).stdout.splitlines()
    assert out[2].split() == ["Deployment", "Budget", "Status", "Actual", "Limit"]
    assert "left out" not in "\n".join(out) and "Detail" in kv("check", str(EXAMPLES / "deployments.yaml")).stdout


def test_a_share_that_rounds_to_nothing_has_no_sign() -> None:
    """A change of -0.004 % (kvplan's suggested --max-model-len against a refusal's) prints as 0.0 %, not -0.0 %;
    real changes keep their sign."""
    from kvplan.render.cells import format_cell

    shown = [format_cell(v, Kind.SHARE, Units.IEC) for v in (-0.00004, 0.0, 0.5, -0.2)]
    assert shown == ["0.0%", "0.0%", "50.0%", "-20.0%"]
