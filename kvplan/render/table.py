"""The Rich table shown by default."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from rich import box
from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from kvplan.plan import MemoryPlan
from kvplan.render.rows import HEADERS, cache_rows, human
from kvplan.report import format_size


def _summary(plan: MemoryPlan) -> Table:
    m = plan.model
    r = plan.runtime.values
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column()
    t.add_row("Model", escape(f"{m.name}  ({m.arch}; {m.source})"))
    layers = f"{m.n_layer_all} layers"
    if m.n_layer_nextn:
        layers += f" ({m.n_layer_nextn} nextn/MTP)"
    attn = m.attention_summary
    if m.memory.value not in ("kv", "none"):
        attn += f" + {m.memory.value} memory"
    if m.swa_type.value != "none":
        attn += f", {m.swa_type.value} window {m.n_swa}"
    t.add_row("Architecture", f"{layers}, {attn}, trained context {m.n_ctx_train}")
    ctx = f"{r['n_ctx_asked']} tokens asked → {r['n_ctx']} cells"
    if r["kv_unified"]:
        ctx += f" in one unified stream shared by {r['n_seq']} sequence(s)"
    elif r["n_stream"] > 1:
        ctx += f" ({r['n_ctx_seq']} per sequence × {r['n_stream']} streams)"
    t.add_row("Context", ctx)
    rs = f" · rs-seq {r['n_rs_seq']}" if r.get("n_rs_seq") else ""
    t.add_row(
        "Settings",
        f"{r['n_seq']} seq · K {r['type_k']} · V {r['type_v']} · flash-attn {r['flash_attn']}"
        f" · swa-full {'on' if r['swa_full'] else 'off'} · batch {r['n_batch']} · ubatch {r['n_ubatch']}{rs}",
    )
    return t


def make_console() -> Console:
    """The terminal's width on a terminal; wide enough for every column when piped into a file or doc."""
    return Console(highlight=False, width=None if sys.stdout.isatty() else 150)


def render_table(plans: Sequence[MemoryPlan], console: Console, units: str = "iec") -> None:
    total = sum(p.total_bytes for p in plans)
    what = "KV / state memory" + (" (main + MTP draft context)" if len(plans) > 1 else "")
    table = Table(
        box=box.SIMPLE_HEAVY,
        title=f"llama.cpp {what}: {format_size(total, units)} ({total:,} bytes)",
        title_justify="left",
    )
    first = 0 if len(plans) > 1 else 1  # the Context column only matters with a draft context
    for i, h in enumerate(HEADERS[first:], start=first):
        table.add_column(h, justify="left" if i < 3 else "right", no_wrap=True)
    rows = cache_rows(plans)
    for row in rows:
        is_total = row["cache"] == "total"
        table.add_row(
            *[escape(c) for c in human(row, units)[first:]],
            style="bold" if is_total else None,
            end_section=len(rows) > 1 and row is rows[-2],
        )
    parts: list[object] = [_summary(plans[0]), table]
    lines: list[str] = []
    for plan in plans:
        prefix = "MTP draft " if plan is not plans[0] else ""
        lines += [f"{prefix}{c.name}: {c.why}" for c in plan.caches if c.why]
    lines += [n for plan in plans for n in plan.notes]
    for line in dict.fromkeys(lines):
        parts.append(Text("• " + line, style="dim"))
    console.print(Group(*parts))  # type: ignore[arg-type]
