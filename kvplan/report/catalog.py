"""`kvplan models` as a document: the catalog, one row per model."""

from __future__ import annotations

from dataclasses import asdict

from kvplan.analysis.catalog import REFERENCE_CTX, CatalogEntry
from kvplan.report.document import Column, Document, Kind, Table


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
        Column("hf_id", "Hugging Face id", drop=1),
    )
    notes = (
        f"KV / token and fixed state (recurrent / compressor state) at llama.cpp's defaults: one sequence, "
        f"f16, {REFERENCE_CTX:,} tokens",
        "MODEL takes a catalog name or its Hugging Face id",
    )
    return Document(
        kind="models",
        headline=f"kvplan catalog: {len(entries)} models",
        tables=(Table("models", columns, tuple(asdict(e) for e in entries)),),
        notes=notes,
    )
