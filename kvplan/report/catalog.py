"""`kvplan models` as a document: the catalog, one row per model."""

from __future__ import annotations

from dataclasses import asdict

from kvplan.analysis.catalog import REFERENCE_CTX, CatalogEntry
from kvplan.report.document import DATA_FORMATS, Cell, Column, Document, Format, Kind, Table


def _row(e: CatalogEntry) -> dict[str, Cell]:
    row: dict[str, Cell] = asdict(e)
    shown = f"{e.params / 1e9:,.2f} B" if e.params else ""
    row["params_shown"] = shown if e.params_exact or not shown else f"≈{shown}"
    return row


def catalog_document(entries: list[CatalogEntry]) -> Document:
    columns = (
        Column("name", "Name"),
        Column("family", "Family", drop=6),
        Column("arch", "Arch", drop=2),
        Column("layers", "Layers", Kind.COUNT, drop=3),
        Column("attention", "Attention", drop=4),
        Column("n_ctx_train", "Trained ctx", Kind.COUNT),
        Column("kv_per_token_bytes", "KV / token", Kind.BYTES),
        Column("state_bytes", "Fixed state", Kind.BYTES, drop=5),
        Column("params_shown", "Params", drop=7, formats=frozenset({Format.TABLE, Format.MARKDOWN})),
        Column("params", "Params", Kind.COUNT, formats=DATA_FORMATS),
        Column("params_exact", "Params exact", formats=DATA_FORMATS),
        Column("weights", "Weights", drop=8),
        Column("hf_id", "Hugging Face id", drop=1),
    )
    rounded = any(e.params and not e.params_exact for e in entries)
    notes = (
        f"KV / token and fixed state (recurrent / compressor state) at llama.cpp's defaults: one sequence, "
        f"f16, {REFERENCE_CTX:,} tokens",
        "MODEL takes a catalog name or its Hugging Face id",
        "Params: the checkpoint's parameters, counted from its config or published"
        + (" (≈: the model card's rounded figure)" if rounded else "")
        + "; Weights: the checkpoint's storage format, which the serving engines load",
    )
    return Document(
        kind="models",
        headline=f"kvplan catalog: {len(entries)} models",
        tables=(Table("models", columns, tuple(_row(e) for e in entries)),),
        notes=notes,
    )
