"""`kvplan curve` as a document: one row per context, the bytes of each cache, and a bar chart for terminals."""

from __future__ import annotations

from kvplan.analysis.curve import Curve
from kvplan.report.document import Cell, Chart, Column, Document, Kind, Series, Table


def chart(c: Curve) -> Chart:
    series = [Series(name, tuple(p.cache_bytes[i] for p in c.points)) for i, name in enumerate(c.caches)]
    series.append(Series("total", tuple(p.total_bytes for p in c.points)))
    return Chart(_caption(c), tuple(p.n_ctx for p in c.points), tuple(series), c.log_axis)


def _caption(c: Curve) -> str:
    ctx, m = c.first.context, c.model
    return (
        f"{m.name} ({m.arch}) · llama.cpp · {ctx.n_seq} seq · K {ctx.type_k.name} / V {ctx.type_v.name} · "
        f"FA {ctx.flash_attn_asked.value}{' · swa-full' if ctx.swa_full else ''}"
    )


def curve_document(c: Curve, decode: tuple[tuple[int, float], ...] = (), decode_basis: str = "") -> Document:
    """``decode``: per point, the bytes a decode step reads and its ITL floor (with --gpu)."""
    columns = [
        Column("n_ctx", "Context", Kind.COUNT),
        Column("cells", "Cells", Kind.COUNT, drop=2),
        Column("padding_cells", "Padding", Kind.COUNT, drop=1),
    ]
    columns += [Column(name, name, Kind.BYTES, drop=3) for name in c.caches]
    columns += [Column("total_bytes", "Total", Kind.BYTES), Column("per_token_bytes", "Per token", Kind.BYTES)]
    if decode:
        columns += [
            Column("decode_bytes", "Decode reads", Kind.BYTES, drop=4),
            Column("itl_floor_s", "ITL floor", Kind.SECONDS),
        ]
    rows: list[dict[str, Cell]] = []
    for p in c.points:
        row: dict[str, Cell] = {
            "n_ctx": p.n_ctx,
            "cells": p.cells,
            "padding_cells": p.padding_cells,
            "total_bytes": p.total_bytes,
            "per_token_bytes": p.per_token_bytes,
        }
        row.update(zip(c.caches, p.cache_bytes, strict=True))
        if decode:
            row["decode_bytes"], row["itl_floor_s"] = decode[len(rows)]
        rows.append(row)
    return Document(
        kind="curve",
        headline=f"kvplan curve: {c.model.name}",
        caption=_caption(c),
        tables=(Table("rows", tuple(columns), tuple(rows)),),
        notes=(*c.notes, *((decode_basis,) if decode else ())),
        warnings=c.warnings,
        chart=chart(c),
        data={"model": c.model.name, "series": list(c.caches), "axis": "log2" if c.log_axis else "linear"},
    )
