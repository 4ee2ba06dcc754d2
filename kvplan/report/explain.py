"""`kvplan explain`: a llama.cpp startup log's figures next to kvplan's, each with the rule behind it."""

from __future__ import annotations

from kvplan.analysis.explain import Explanation
from kvplan.errors import EXIT_NO
from kvplan.model import ModelDescription
from kvplan.report.document import DATA_FORMATS, Cell, Column, Document, Kind, Table
from kvplan.units import Units


def explain_document(e: Explanation, runs: int, model: ModelDescription, units: Units) -> Document:
    """The figures table, the settings the log states, and a warning where the file held several runs."""
    s = e.settings
    n_equal = sum(f.equal for f in e.figures)
    n = len(e.figures)
    headline = (
        f"llama.cpp log: all {n} figures equal kvplan's plan of the same settings"
        if e.explained
        else f"llama.cpp log: {n - n_equal} of {n} figures not explained"
    )
    columns = (
        Column("figure", "Figure", wrap=True),
        Column("log", "Log"),
        Column("kvplan", "kvplan"),
        Column("equal", "Equal"),
        Column("why", "Why", wrap=True),
        Column("kvplan_bytes", "kvplan bytes", Kind.INT, formats=DATA_FORMATS),
    )
    rows: list[dict[str, Cell]] = [
        {"figure": f.what, "log": f.logged, "kvplan": f.kvplan, "equal": f.equal, "why": f.why,
         "kvplan_bytes": f.kvplan_bytes}
        for f in e.figures
    ]  # fmt: skip
    settings_line = (
        f"-c {s.n_ctx} -np {s.n_seq}{' -kvu' if s.kv_unified else ''} -b {s.n_batch} -ub {s.n_ubatch} "
        f"-ctk {s.type_k} -ctv {s.type_v} -fa {s.flash_attn.value}{' --swa-full' if s.swa_full else ''} "
        f"({s.backend.value} buffers)"
    )
    change_columns = (
        Column("flags", "What would change it", wrap=True),
        Column("kv_bytes", "KV / state", Kind.BYTES),
        Column("kv_change", "Δ KV", Kind.SHARE),
        Column("compute_bytes", "Compute", Kind.BYTES),
        Column("compute_change", "Δ compute", Kind.SHARE, drop=1),
    )
    changes: list[dict[str, Cell]] = [
        {
            "flags": c.flags,
            "kv_bytes": c.kv_bytes,
            "kv_change": _share(c.kv_bytes, e.kv_bytes),
            "compute_bytes": c.compute_bytes,
            "compute_change": _share(c.compute_bytes, e.compute_bytes),
        }
        for c in e.changes
    ]
    warnings = []
    if runs > 1:
        warnings.append(f"the file holds {runs} runs; the last one is explained")
    return Document(
        kind="explain",
        headline=headline,
        summary=(
            ("model", f"{model.name} ({model.arch}) from {model.source}"),
            ("settings the log states", settings_line),
        ),
        tables=(
            Table("figures", columns, tuple(rows)),
            Table(
                "changes",
                change_columns,
                tuple(changes),
                title="What would change it (kvplan's plan of each)",
                csv=False,
            ),
        ),
        notes=("MiB as llama.cpp prints them (two decimals); kvplan's exact bytes are in JSON", *e.notes),
        warnings=tuple(warnings),
        data={
            "explained": e.explained,
            "runs": runs,
            "kv_bytes": e.kv_bytes,
            "compute_bytes": e.compute_bytes,
            "model": {"name": model.name, "arch": model.arch, "source": model.source},
            "settings": {
                "n_ctx": s.n_ctx,
                "n_seq": s.n_seq,
                "kv_unified": s.kv_unified,
                "n_batch": s.n_batch,
                "n_ubatch": s.n_ubatch,
                "type_k": s.type_k,
                "type_v": s.type_v,
                "flash_attn": s.flash_attn.value,
                "swa_full": s.swa_full,
                "backend": s.backend.value,
            },
        },
        exit_code=0 if e.explained else EXIT_NO,
    )


def _share(new: int | None, old: int | None) -> float | None:
    """The change as a share of the log's figure (+0.5 = half as much again)."""
    return None if new is None or not old else new / old - 1
