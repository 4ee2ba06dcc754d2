"""`simulate --svg`: KV blocks in use, running and waiting requests over time (preemptions marked), and the
distribution of TTFT and end-to-end latency floors, drawn from the document's own series.

Each engine step covers its interval [start, start + seconds]: a time bucket takes the largest values of the steps
that overlap it, and a bucket no step covers (the engine idle, or a step shorter than a bucket elsewhere) keeps
the state the last step left — the pool holds its blocks between steps, so the curves never drop to a false zero.
The headline wraps to the width; both axes of every panel carry labelled ticks."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape as _html_escape

from kvplan.render.cells import printable
from kvplan.render.chart import nice_step
from kvplan.report.document import Cell, Document

W, PANEL, LEFT, RIGHT, TOP = 760, 200, 70, 20, 30
COLORS = {"blocks": "#4c72b0", "running": "#55a868", "waiting": "#c44e52", "ttft": "#8172b2", "e2e": "#937860"}
#: characters of the 13 px headline per line (≈ 7 px each) and its line height
TITLE_CHARS, TITLE_LINE = (W - LEFT - RIGHT) // 7, 16
KEYS = ("blocks", "running", "waiting")
#: each series and the steps-table column it is drawn from
COLUMNS = {"blocks": "blocks_used", "running": "running", "waiting": "waiting"}


def _rows(doc: Document, name: str) -> tuple[dict[str, Cell], ...]:
    return next((t.rows for t in doc.tables if t.name == name), ())


def _num(v: Cell) -> float:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else 0.0


def _wrap(text: str, width: int = TITLE_CHARS) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken at spaces (a longer word is split)."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        while len(word) > width:
            if line:
                lines.append(line)
                line = ""
            lines.append(word[:width])
            word = word[width:]
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line] if line else lines or [""]


def _y_axis(out: list[str], y0: float, height: float, ymax: float, label: str) -> None:
    top = ymax or 1
    step = nice_step(top)
    v = 0.0
    while v <= top + 1e-9:
        y = y0 + height - v / top * height
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<line x1="{LEFT - 4}" y1="{y:.1f}" x2="{LEFT}" y2="{y:.1f}" stroke="#555"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(f"{v:,.4g}")}</text>')
        v += step
    out.append(f'<line x1="{LEFT}" y1="{y0}" x2="{LEFT}" y2="{y0 + height}" stroke="#555"/>')
    out.append(
        f'<text x="14" y="{y0 + height / 2:.1f}" transform="rotate(-90 14 {y0 + height / 2:.1f})" '
        f'text-anchor="middle">{escape(label)}</text>'
    )


def _x_axis(out: list[str], y_base: float, xmax: float, label: str) -> None:
    """Labelled ticks along the bottom of a panel for 0 … ``xmax`` (seconds)."""
    inner = W - LEFT - RIGHT
    top = xmax or 1
    step = nice_step(top, 6)
    out.append(f'<line x1="{LEFT}" y1="{y_base:.1f}" x2="{W - RIGHT}" y2="{y_base:.1f}" stroke="#555"/>')
    v = 0.0
    while v <= top + 1e-9:
        x = LEFT + v / top * inner
        out.append(f'<line x1="{x:.1f}" y1="{y_base:.1f}" x2="{x:.1f}" y2="{y_base + 4:.1f}" stroke="#555"/>')
        out.append(f'<text x="{x:.1f}" y="{y_base + 15:.1f}" text-anchor="middle">{escape(f"{v:,.4g}")}</text>')
        v += step
    out.append(f'<text x="{LEFT + inner / 2:.1f}" y="{y_base + 30:.1f}" text-anchor="middle">{escape(label)}</text>')


def _polyline(points: Sequence[tuple[float, float]], color: str) -> str:
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    return f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{path}"/>'


def buckets(rows: Sequence[dict[str, Cell]], t_end: float, n: int = 600) -> list[dict[str, float]]:
    """The series in ``n`` time buckets: each bucket the largest values of the steps whose interval overlaps it
    (peaks stay visible), a bucket no step overlaps the state the step before it left (none before the first)."""
    span = t_end or 1.0
    out: list[dict[str, float] | None] = [None] * n
    preempted = [0.0] * n
    for row in rows:
        start = _num(row["start_s"])
        end = start + max(0.0, _num(row["seconds"]))
        first = min(n - 1, max(0, int(start / span * n)))
        last = min(n - 1, max(first, math.ceil(end / span * n) - 1))
        values = {
            k: _num(row[c]) for k, c in (("blocks", "blocks_used"), ("running", "running"), ("waiting", "waiting"))
        }
        for i in range(first, last + 1):
            b = out[i]
            out[i] = values.copy() if b is None else {k: max(b[k], values[k]) for k in KEYS}
        preempted[first] += _num(row["preempted"])
    filled: list[dict[str, float]] = []
    state = dict.fromkeys(KEYS, 0.0)
    for i, b in enumerate(out):
        if b is not None:
            state = b
        filled.append({**state, "preempted": preempted[i]})
    return filled


def escape(text: str) -> str:
    return _html_escape(printable(text))


def render(doc: Document) -> str:
    steps = _rows(doc, "steps")
    requests = _rows(doc, "requests")
    usable = float(doc.data.get("kv_capacity", 0))
    unit = str(doc.data.get("kv_unit", "blocks"))
    t_end = max((_num(r["start_s"]) + _num(r["seconds"]) for r in steps), default=1.0)
    title = _wrap(doc.headline or "kvplan simulate")[:4]
    top = TOP + (len(title) - 1) * TITLE_LINE
    gap = 60  # below a panel: its x-axis ticks and label
    height = top + 3 * (PANEL + gap) + 10
    inner = W - LEFT - RIGHT
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" viewBox="0 0 {W} {height}" '
        'font-family="sans-serif" font-size="11">',
        *(
            f'<text x="{LEFT}" y="{18 + k * TITLE_LINE}" font-size="13">{escape(line)}</text>'
            for k, line in enumerate(title)
        ),
    ]
    series = buckets(steps, t_end)
    n = len(series)

    def fx(i: float) -> float:
        return LEFT + i / n * inner

    # panel 1: KV blocks in use (share of the pool), preemptions as ticks
    y0 = top + 10
    _y_axis(out, y0, PANEL, 100.0, f"KV {unit} in use (%)")
    out.append(_polyline([(fx(i), y0 + PANEL - b["blocks"] / (usable or 1) * PANEL) for i, b in enumerate(series)],
                         COLORS["blocks"]))  # fmt: skip
    for i, b in enumerate(series):
        if b["preempted"]:
            out.append(f'<line x1="{fx(i):.1f}" y1="{y0}" x2="{fx(i):.1f}" y2="{y0 + 8}" stroke="#c44e52"/>')
    _x_axis(out, y0 + PANEL, t_end, "time (s); red ticks at the top: preemptions")
    # panel 2: running and waiting requests
    y0 += PANEL + gap
    most = max(max((b["running"] for b in series), default=1), max((b["waiting"] for b in series), default=1), 1)
    _y_axis(out, y0, PANEL, most, "requests")
    for key in ("running", "waiting"):
        out.append(_polyline([(fx(i), y0 + PANEL - b[key] / most * PANEL) for i, b in enumerate(series)], COLORS[key]))
    _x_axis(out, y0 + PANEL, t_end, "time (s)")
    out.append(f'<text x="{W - RIGHT - 160}" y="{y0 - 6}" fill="{COLORS["running"]}">running</text>')
    out.append(f'<text x="{W - RIGHT - 90}" y="{y0 - 6}" fill="{COLORS["waiting"]}">waiting</text>')
    # panel 3: latency floors, as distributions (share of requests at or under a latency)
    y0 += PANEL + gap
    latencies = {
        "ttft": sorted(_num(r["ttft_s"]) for r in requests if r.get("ttft_s") is not None),
        "e2e": sorted(_num(r["e2e_s"]) for r in requests if r.get("e2e_s") is not None),
    }
    xmax = max((v[-1] for v in latencies.values() if v), default=1.0) or 1.0
    _y_axis(out, y0, PANEL, 100.0, "requests (%)")
    for key, values in latencies.items():
        if values:
            pts = [(LEFT + v / xmax * inner, y0 + PANEL - (k + 1) / len(values) * PANEL) for k, v in enumerate(values)]
            out.append(_polyline(pts, COLORS[key]))
    _x_axis(out, y0 + PANEL, xmax, "latency floor (s)")
    out.append(f'<text x="{W - RIGHT - 160}" y="{y0 - 6}" fill="{COLORS["ttft"]}">TTFT</text>')
    out.append(f'<text x="{W - RIGHT - 110}" y="{y0 - 6}" fill="{COLORS["e2e"]}">end to end</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
