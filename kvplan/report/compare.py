"""`kvplan compare` as a document: one row per what-if, bytes at each context, llama.cpp's refusals kept."""

from __future__ import annotations

from kvplan.analysis.compare import Comparison
from kvplan.report.document import Cell, Column, Document, Format, Kind, Table

HUMAN_AND_DATA = frozenset({Format.MARKDOWN, Format.CSV, Format.JSON})


def compare_document(c: Comparison) -> Document:
    columns = [
        Column("section", "Section", drop=1),
        Column("variant", "Variant"),
        Column("status", "Status", drop=3),
        Column("per_token_bytes", "Per token", Kind.BYTES),
    ]
    columns += [Column(f"bytes_at_{n}", f"@ {n:,}", Kind.BYTES) for n in c.contexts]
    columns += [Column("ratio", "vs f16", Kind.RATIO), Column("reason", "Refused because", formats=HUMAN_AND_DATA)]
    rows: list[dict[str, Cell]] = []
    for r in c.rows:
        row: dict[str, Cell] = {
            "section": r.section,
            "variant": r.variant,
            "type_k": r.type_k,
            "type_v": r.type_v,
            "status": "refused" if r.refused else "ok",
            "per_token_bytes": r.per_token_bytes,
            "ratio": r.ratio,
            "reason": r.refused,
        }
        for n, total in zip(c.contexts, r.totals, strict=False):
            row[f"bytes_at_{n}"] = total
        rows.append(row)
    m = c.model
    caption = (
        f"{m.name} ({m.arch}) · llama.cpp · {c.n_seq} seq · FA {c.flash_attn.value}"
        f"{' · kv-unified' if c.kv_unified else ''} · contexts {', '.join(f'{n:,}' for n in c.contexts)}"
    )
    return Document(
        kind="compare",
        headline=f"kvplan compare: {m.name}",
        tables=(Table("rows", tuple(columns), tuple(rows)),),
        notes=c.notes,
        caption=caption,
        data={"model": m.name, "contexts": list(c.contexts)},
    )
