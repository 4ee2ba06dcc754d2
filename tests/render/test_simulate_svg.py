"""`simulate --svg` (kvplan.render.simulate_svg): drawn from the steps' intervals, titles that fit, ticks."""

from __future__ import annotations

import re

from kvplan.render.simulate_svg import TITLE_CHARS, W, _wrap, buckets, render
from kvplan.report.document import Document, Table


def _step(start: float, seconds: float, blocks: int, running: int = 1, waiting: int = 0) -> dict[str, object]:
    return {"start_s": start, "seconds": seconds, "blocks_used": blocks, "running": running, "waiting": waiting,
            "preempted": 0}  # fmt: skip


def test_a_long_step_covers_every_bucket_it_spans() -> None:
    """One step of 5 s in a 10 s run over 10 buckets: buckets 0–4 hold its values; an idle gap after the last step
    keeps its state (the pool holds its blocks between steps) — never a false zero."""
    rows = [_step(0.0, 5.0, 100), _step(6.0, 1.0, 40)]
    b = buckets(rows, 10.0, 10)  # type: ignore[arg-type]
    assert [x["blocks"] for x in b] == [100, 100, 100, 100, 100, 100, 40, 40, 40, 40]


def test_short_steps_in_one_bucket_keep_the_peak() -> None:
    rows = [_step(0.0, 0.01, 10), _step(0.01, 0.01, 70), _step(0.02, 0.01, 30)]
    assert buckets(rows, 1.0, 10)[0]["blocks"] == 70  # type: ignore[arg-type]


def test_nothing_before_the_first_step() -> None:
    assert [x["blocks"] for x in buckets([_step(5.0, 1.0, 9)], 10.0, 10)][:5] == [0, 0, 0, 0, 0]  # type: ignore[arg-type]


def test_the_title_wraps_to_the_width_and_is_never_cut() -> None:
    headline = "vLLM: " + " ".join(f"word{i}" for i in range(60))
    lines = _wrap(headline)
    assert all(len(x) <= TITLE_CHARS for x in lines) and " ".join(lines) == headline
    assert _wrap("x" * (2 * TITLE_CHARS + 3)) == ["x" * TITLE_CHARS, "x" * TITLE_CHARS, "xxx"]


def test_both_axes_have_labelled_ticks() -> None:
    steps = Table("steps", (), tuple(_step(float(i), 1.0, 10 * i, i, 0) for i in range(20)))  # type: ignore[arg-type]
    requests = Table("requests", (), ({"ttft_s": 0.5, "e2e_s": 3.0}, {"ttft_s": 1.0, "e2e_s": 4.0}))
    doc = Document("simulate", "a headline", tables=(steps, requests), data={"kv_capacity": 200})
    svg = render(doc)
    assert svg.startswith("<svg") and f'width="{W}"' in svg
    bottom = re.findall(r'<text x="[\d.]+" y="[\d.]+" text-anchor="middle">([\d.,]+)</text>', svg)
    assert {"0", "5", "10", "15", "20"} <= set(bottom)  # time ticks, panels 1 and 2
    assert {"1", "2", "3", "4"} <= set(bottom)  # latency ticks, panel 3
    left = re.findall(r'text-anchor="end">([\d.,]+)</text>', svg)
    assert {"0", "20", "40", "60", "80", "100"} <= set(left)
    assert "time (s)" in svg and "latency floor (s)" in svg
