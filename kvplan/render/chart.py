"""Charts of a curve: terminal bars and a self-contained SVG line chart (one line per cache and the total).

The SVG has a y-axis title and round ticks in the units asked for, x labels thinned so none overlap, a log2
context axis for doubling ranges and a linear one for stepped ranges, and every point of the range, its end
included.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from xml.sax.saxutils import escape as _xml_escape

from kvplan.report.document import Chart
from kvplan.units import Units, format_size

_IEC = (("B", 1), ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40))
_SI = (("B", 1), ("kB", 10**3), ("MB", 10**6), ("GB", 10**9), ("TB", 10**12))
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def escape(text: str) -> str:
    from kvplan.render.cells import printable

    return _xml_escape(printable(text))


def bars(chart: Chart, units: Units, width: int = 48) -> list[str]:
    """Text bars of the total at each context (linear scale)."""
    xs, totals = chart.xs, chart.series[-1].values
    top = max(totals, default=0) or 1
    label = max((len(f"{x:,}") for x in xs), default=1)
    lines = []
    for x, total in zip(xs, totals, strict=True):
        eighths = round(total / top * width * 8)
        bar = "█" * (eighths // 8) + (" ▏▎▍▌▋▊▉"[eighths % 8] if eighths % 8 else "")
        lines.append(f"{x:>{label},} │{bar:<{width}} {format_size(total, units)}")
    return lines


def nice_step(span: float, target: int = 5) -> float:
    """A 1-2-5 step that cuts ``span`` into about ``target`` intervals."""
    if span <= 0:
        return 1.0
    raw = span / target
    power = 10.0 ** math.floor(math.log10(raw))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        if m * power >= raw:
            return m * power
    return 10.0 * power


def y_scale(ymax: int, units: Units) -> tuple[str, int, list[float]]:
    """(unit name, bytes per unit, tick values in that unit) for an axis from 0 to at least ``ymax``."""
    if units is Units.BYTES:
        name, size = "bytes", 1
    else:
        table = _IEC if units is Units.IEC else _SI
        name, size = table[0]
        for n, s in table:
            if ymax >= s:
                name, size = n, s
    top = ymax / size if ymax else 1.0
    step = nice_step(top)
    ticks = [i * step for i in range(math.ceil(top / step - 1e-9) + 1)]
    return name, size, ticks


def _tick_label(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}".rstrip("0").rstrip(".")


def svg(chart: Chart, units: Units) -> str:
    w, h, left, right, top, bottom = 800, 440, 100, 190, 44, 64
    xs = chart.xs
    ymax = max((v for s in chart.series for v in s.values), default=0)
    unit, size, ticks = y_scale(ymax, units)
    yspan = ticks[-1] * size if ticks[-1] else 1
    plot_w, plot_h = w - left - right, h - top - bottom

    def fx(x: int) -> float:
        lo, hi = (math.log2(xs[0]), math.log2(xs[-1])) if chart.log_x else (xs[0], xs[-1])
        pos = math.log2(x) if chart.log_x else x
        return left + ((pos - lo) / (hi - lo) if hi > lo else 0.5) * plot_w

    def fy(y: float) -> float:
        return top + (1 - y / yspan) * plot_h

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        'font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
        f'<text x="{left}" y="22" font-size="14">{escape(chart.title)}</text>',
    ]
    for t in ticks:
        y = fy(t * size)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{w - right}" y2="{y:.1f}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{_tick_label(t)}</text>')
    out.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{w - right}" y2="{top + plot_h}" stroke="black"/>')
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="black"/>')
    ytitle = f"KV / state memory ({unit})"
    out.append(
        f'<text x="20" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 20 {top + plot_h / 2:.1f})">{escape(ytitle)}</text>'
    )
    for x in thin_labels(xs, fx):
        out.append(
            f'<line x1="{fx(x):.1f}" y1="{top + plot_h}" x2="{fx(x):.1f}" y2="{top + plot_h + 4}" stroke="black"/>'
        )
        out.append(f'<text x="{fx(x):.1f}" y="{top + plot_h + 18}" text-anchor="middle">{x:,}</text>')
    scale = "log2 scale" if chart.log_x else "linear scale"
    out.append(f'<text x="{left + plot_w / 2:.1f}" y="{h - 16}" text-anchor="middle">context (tokens, {scale})</text>')
    for i, s in enumerate(chart.series):
        total = i == len(chart.series) - 1
        color = "black" if total else COLORS[i % len(COLORS)]
        pts = " ".join(f"{fx(x):.1f},{fy(v):.1f}" for x, v in zip(xs, s.values, strict=True))
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{pts}"/>')
        out.append(f'<text x="{w - right + 10}" y="{top + 16 * i + 4}" fill="{color}">{escape(s.name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def thin_labels(xs: Sequence[int], fx: Callable[[int], float], char_px: float = 7.0, gap_px: float = 10.0
                ) -> list[int]:  # fmt: skip
    """The x values to label so that no two labels overlap; the first and the last are always labelled."""
    if not xs:
        return []

    def half(x: int) -> float:
        return len(f"{x:,}") * char_px / 2

    last = xs[-1]
    kept = [xs[0]]
    for x in xs[1:-1]:
        if (
            fx(x) - half(x) >= fx(kept[-1]) + half(kept[-1]) + gap_px
            and fx(last) - half(last) >= fx(x) + half(x) + gap_px
        ):
            kept.append(x)
    if last != xs[0]:
        if fx(last) - half(last) < fx(kept[-1]) + half(kept[-1]) + gap_px and len(kept) > 1:
            kept.pop()
        kept.append(last)
    return kept
