"""`kvplan gpus`: the GPU presets with the memory kvplan uses and where the figure comes from."""

from __future__ import annotations

from kvplan.capacity.hardware import GPU_TABLE
from kvplan.report.document import Cell, Column, Document, Kind, Table


def gpus_document() -> Document:
    columns = (
        Column("name", "Name"),
        Column("memory_bytes", "Memory", Kind.BYTES),
        Column("capability", "CUDA", drop=1),
        Column("source", "Source", wrap=True),
    )
    rows: list[dict[str, Cell]] = []
    for g in GPU_TABLE:
        cap = f"{g.capability[0]}.{g.capability[1]}" if g.capability else "-"
        rows.append({"name": g.name, "memory_bytes": g.memory_bytes, "capability": cap, "source": g.source})
    return Document(
        kind="gpus",
        headline=f"kvplan GPU presets: {len(rows)}",
        tables=(Table("gpus", columns, tuple(rows)),),
        notes=(
            "--gpu NAME[xN] takes a preset (any case; RTX4090 = RTX-4090); "
            "--memory SIZE takes your own figure; --gpus-file adds presets",
        ),
    )
