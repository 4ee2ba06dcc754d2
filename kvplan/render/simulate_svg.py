"""`simulate --svg`: KV blocks in use, running and waiting requests over time (preemptions marked), and the
distribution of TTFT and end-to-end latency floors, drawn from the document's own series."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from kvplan.render.chart import nice_step
from kvplan.report.document import Cell, Document

W, PANEL, LEFT, RIGHT, TOP = 760, 200, 70, 20, 30
COLORS = {"blocks": "#4c72b0", "running": "#55a868", "waiting": "#c44e52", "ttft": "#8172b2", "e2e": "#937860"}


def _rows(doc: Document, name: str) -> tuple[dict[str, Cell], ...]:
    return next((t.rows for t in doc.tables if t.name == name), ())


def _num(v: Cell) -> float:
    return float(v) if isinstance(v, (int, float)) else 0.0


def _axis(out: list[str], y0: float, height: float, ymax: float, label: str, fmt: str = "{:,.0f}") -> None:
    step = nice_step(ymax or 1)
    v = 0.0
    while v <= (ymax or 1) + 1e-9:
        y = y0 + height - v / (ymax or 1) * height
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(fmt.format(v))}</text>')
        v += step
    out.append(
        f'<text x="14" y="{y0 + height / 2:.1f}" transform="rotate(-90 14 {y0 + height / 2:.1f})" '
        f'text-anchor="middle">{escape(label)}</text>'
    )


def _polyline(points: Sequence[tuple[float, float]], color: str) -> str:
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    return f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{path}"/>'


def _buckets(rows: Sequence[dict[str, Cell]], t_end: float, n: int = 600) -> list[dict[str, float]]:
    """The series in ``n`` time buckets, each keeping its largest values (peaks stay visible)."""
    out = [{"blocks": 0.0, "running": 0.0, "waiting": 0.0, "preempted": 0.0} for _ in range(n)]
    for row in rows:
        i = min(n - 1, int(_num(row["start_s"]) / (t_end or 1) * n))
        b = out[i]
        b["blocks"] = max(b["blocks"], _num(row["blocks_used"]))
        b["running"] = max(b["running"], _num(row["running"]))
        b["waiting"] = max(b["waiting"], _num(row["waiting"]))
        b["preempted"] += _num(row["preempted"])
    return out


def render(doc: Document) -> str:
    steps = _rows(doc, "steps")
    requests = _rows(doc, "requests")
    usable = float(doc.data.get("kv_capacity", 0))
    unit = str(doc.data.get("kv_unit", "blocks"))
    t_end = max((_num(r["start_s"]) + _num(r["seconds"]) for r in steps), default=1.0)
    height = TOP + 3 * (PANEL + 50)
    inner = W - LEFT - RIGHT
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" viewBox="0 0 {W} {height}" '
        'font-family="sans-serif" font-size="11">',
        f'<text x="{LEFT}" y="18" font-size="13">{escape(doc.headline or "kvplan simulate")[:160]}</text>',
    ]
    buckets = _buckets(steps, t_end)
    n = len(buckets)

    def fx(i: float) -> float:
        return LEFT + i / n * inner

    # panel 1: KV blocks in use (share of the pool), preemptions as ticks
    y0 = TOP + 10
    _axis(out, y0, PANEL, 100.0, f"KV {unit} in use (%)")
    pts = [(fx(i), y0 + PANEL - b["blocks"] / (usable or 1) * PANEL) for i, b in enumerate(buckets)]
    out.append(_polyline(pts, COLORS["blocks"]))
    for i, b in enumerate(buckets):
        if b["preempted"]:
            out.append(f'<line x1="{fx(i):.1f}" y1="{y0}" x2="{fx(i):.1f}" y2="{y0 + 8}" stroke="#c44e52"/>')
    # panel 2: running and waiting requests
    y0 += PANEL + 50
    top = max(max((b["running"] for b in buckets), default=1), max((b["waiting"] for b in buckets), default=1), 1)
    _axis(out, y0, PANEL, top, "requests")
    for key in ("running", "waiting"):
        out.append(_polyline([(fx(i), y0 + PANEL - b[key] / top * PANEL) for i, b in enumerate(buckets)], COLORS[key]))
    out.append(f'<text x="{LEFT}" y="{y0 + PANEL + 30}">time → {t_end:,.1f} s (red ticks above: preemptions)</text>')
    out.append(f'<text x="{W - RIGHT - 160}" y="{y0 - 6}" fill="{COLORS["running"]}">running</text>')
    out.append(f'<text x="{W - RIGHT - 90}" y="{y0 - 6}" fill="{COLORS["waiting"]}">waiting</text>')
    # panel 3: latency floors, as distributions (share of requests at or under a latency)
    y0 += PANEL + 50
    series = {
        "ttft": sorted(_num(r["ttft_s"]) for r in requests if r.get("ttft_s") is not None),
        "e2e": sorted(_num(r["e2e_s"]) for r in requests if r.get("e2e_s") is not None),
    }
    xmax = max((v[-1] for v in series.values() if v), default=1.0) or 1.0
    _axis(out, y0, PANEL, 100.0, "requests (%)")
    for key, values in series.items():
        if values:
            pts = [(LEFT + v / xmax * inner, y0 + PANEL - (k + 1) / len(values) * PANEL) for k, v in enumerate(values)]
            out.append(_polyline(pts, COLORS[key]))
    out.append(f'<text x="{LEFT}" y="{y0 + PANEL + 30}">latency floor → {xmax:,.3g} s</text>')
    out.append(f'<text x="{W - RIGHT - 160}" y="{y0 - 6}" fill="{COLORS["ttft"]}">TTFT</text>')
    out.append(f'<text x="{W - RIGHT - 110}" y="{y0 - 6}" fill="{COLORS["e2e"]}">end to end</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
