"""`kvplan gpus`: the GPU presets with the memory kvplan uses and where the figure comes from."""

from __future__ import annotations

from kvplan.capacity.hardware import GPU_TABLE
from kvplan.report.document import Cell, Column, Document, Format, Kind, Table


def gpus_document() -> Document:
    columns = (
        Column("name", "Name"),
        Column("memory_bytes", "Memory", Kind.BYTES),
        Column("capability", "CUDA", drop=1),
        Column("source", "Source", wrap=True),
        # the roofline's columns (simulate, curve --gpu), in JSON: None where --bandwidth / --peak-tflops are needed
        Column("bandwidth_bytes_per_s", "Bandwidth", Kind.COUNT, formats=frozenset({Format.JSON})),
        Column("peak_flops", "Dense BF16 peak", Kind.COUNT, formats=frozenset({Format.JSON})),
        Column("perf_source", "Roofline source", formats=frozenset({Format.JSON})),
    )
    rows: list[dict[str, Cell]] = []
    for g in GPU_TABLE:
        cap = f"{g.capability[0]}.{g.capability[1]}" if g.capability else "-"
        bw, flops, perf = (int(g.perf[0]), int(g.perf[1]), g.perf[2]) if g.perf is not None else (None, None, None)
        rows.append({"name": g.name, "memory_bytes": g.memory_bytes, "capability": cap, "source": g.source,
                     "bandwidth_bytes_per_s": bw, "peak_flops": flops, "perf_source": perf})  # fmt: skip
    return Document(
        kind="gpus",
        headline=f"kvplan GPU presets: {len(rows)}",
        tables=(Table("gpus", columns, tuple(rows)),),
        notes=(
            "--gpu NAME[xN] takes a preset (any case; RTX4090 = RTX-4090); "
            "--memory SIZE takes your own figure; --gpus-file adds presets",
        ),
    )
