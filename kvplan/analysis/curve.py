"""`kvplan curve`: bytes against context, per cache, from the same layout as `estimate`.

Shows where padding to 256 cells adds bytes, where sliding windows stop growing and the marginal cost of
one more token at each point. A terminal bar chart and an SVG line chart are drawn from the same rows.
"""

from __future__ import annotations

import dataclasses
import math
from xml.sax.saxutils import escape

from kvplan.layout.llamacpp import LlamaCppSettings, plan
from kvplan.model import ModelDescription
from kvplan.report import Column, Report, format_size
from kvplan.units import parse_count

MAX_POINTS = 512


def parse_contexts(text: str) -> list[int]:
    """``1k,8k,32k`` (a list), ``1k:128k`` (doubling from 1k to 128k) or ``1k:128k:4k`` (a step)."""
    text = text.strip()
    if "," in text or ":" not in text:
        points = [parse_count(p) for p in text.split(",") if p.strip()]
    else:
        parts = text.split(":")
        if len(parts) not in (2, 3):
            raise ValueError(f"{text!r}: expected START:END or START:END:STEP")
        start, end = parse_count(parts[0]), parse_count(parts[1])
        if start <= 0 or end < start:
            raise ValueError(f"{text!r}: the range must run from a positive start up to its end")
        points = []
        if len(parts) == 3:
            step = parse_count(parts[2])
            if step <= 0:
                raise ValueError(f"{text!r}: the step must be positive")
            if (end - start) // step + 1 > MAX_POINTS:
                raise ValueError(f"{text!r}: more than {MAX_POINTS} points; use a larger step")
            points = list(range(start, end + 1, step))
        else:
            v = start
            while v < end:
                points.append(v)
                v *= 2
            points.append(end)
    if not points or any(p <= 0 for p in points):
        raise ValueError(f"{text!r}: give positive context sizes")
    if len(points) > MAX_POINTS:
        raise ValueError(f"{text!r}: more than {MAX_POINTS} points")
    return sorted(set(points))


def curve(model: ModelDescription, settings: LlamaCppSettings, contexts: list[int]) -> Report:
    plans = [plan(model, dataclasses.replace(settings, n_ctx=c)) for c in contexts]
    names: list[str] = []
    for p in plans:
        for c in p.caches:
            if c.name not in names:
                names.append(c.name)
    rows = []
    capped_seen: set[str] = set()
    notes: list[str] = []
    for ctx, p in zip(contexts, plans, strict=True):
        r = p.runtime.values
        row = {"n_ctx": ctx, "cells": r["n_ctx"], "padding_cells": r["n_ctx"] - ctx}
        for c in p.caches:
            row[c.name] = c.bytes
            grows_full = c.kind in ("attention", "indexer") and c.cells < r["n_ctx_seq"]
            if grows_full and c.name not in capped_seen:
                capped_seen.add(c.name)
                notes.append(f"{c.name}: stops growing at {c.cells} cells per stream (from {ctx} tokens on)")
        row["total_bytes"] = p.total_bytes
        row["per_token_bytes"] = p.per_token_bytes
        rows.append(row)
    for name in names:
        if all(row.get(name) == rows[0].get(name) for row in rows) and len(rows) > 1:
            notes.append(f"{name}: constant over this range (fixed-size state)")
    columns = [Column("n_ctx", "Context", "int"), Column("cells", "Cells", "int"),
               Column("padding_cells", "Padding", "int")]  # fmt: skip
    columns += [Column(name, name, "bytes") for name in names]
    columns += [Column("total_bytes", "Total", "bytes"), Column("per_token_bytes", "Per token", "bytes")]
    r0 = plans[0].runtime.values
    caption = (
        f"{model.name} ({model.arch}) · llama.cpp · {r0['n_seq']} seq · K {r0['type_k']} / V {r0['type_v']}"
        f" · FA {r0['flash_attn']}{' · swa-full' if r0['swa_full'] else ''}"
    )
    return Report(title=f"kvplan curve: {model.name}", caption=caption, columns=columns, rows=rows,
                  notes=notes, kind="curve", meta={"model": model.name, "series": names})  # fmt: skip


def bar_chart(report: Report, units: str = "iec", width: int = 48) -> list[str]:
    """Text bars of the total at each context (linear scale)."""
    top = max((r["total_bytes"] for r in report.rows), default=0) or 1
    lines = []
    for r in report.rows:
        eighths = round(r["total_bytes"] / top * width * 8)
        bar = "█" * (eighths // 8) + (" ▏▎▍▌▋▊▉"[eighths % 8] if eighths % 8 else "")
        lines.append(f"{r['n_ctx']:>9,} │{bar:<{width}} {format_size(r['total_bytes'], units)}")
    return lines


def render_svg(report: Report, units: str = "iec") -> str:
    """A self-contained SVG line chart: one line per cache and the total, context on a log2 axis."""
    w, h, left, right, top, bottom = 760, 420, 90, 180, 40, 50
    series = [*report.meta.get("series", []), "total_bytes"]
    xs = [r["n_ctx"] for r in report.rows]
    ymax = max((r.get(s, 0) or 0 for r in report.rows for s in series), default=1) or 1
    lx0, lx1 = math.log2(min(xs)), math.log2(max(xs))
    span = (lx1 - lx0) or 1.0

    def px(x: int) -> float:
        return left + (math.log2(x) - lx0) / span * (w - left - right)

    def py(y: float) -> float:
        return top + (1 - y / ymax) * (h - top - bottom)

    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" '
           f'font-size="12"><rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14">{escape(report.caption)}</text>',
           f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="black"/>']  # fmt: skip
    for i in range(5):
        y = ymax * i / 4
        out.append(f'<text x="{left - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{escape(format_size(y, units))}</text>')
        out.append(f'<line x1="{left}" y1="{py(y):.1f}" x2="{w - right}" y2="{py(y):.1f}" stroke="#eee"/>')
    for x in xs if len(xs) <= 12 else xs[:: max(1, len(xs) // 12)]:
        out.append(f'<text x="{px(x):.1f}" y="{h - bottom + 16}" text-anchor="middle">{x:,}</text>')
    out.append(f'<text x="{(left + w - right) / 2}" y="{h - 10}" text-anchor="middle">context (tokens)</text>')
    for i, s in enumerate(series):
        pts = " ".join(f"{px(r['n_ctx']):.1f},{py(r.get(s, 0) or 0):.1f}" for r in report.rows)
        color = "black" if s == "total_bytes" else colors[i % len(colors)]
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{pts}"/>')
        label = "total" if s == "total_bytes" else s
        out.append(f'<text x="{w - right + 8}" y="{top + 16 * i + 4}" fill="{color}">{escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
