"""The catalog as typed entries: each model's layout summary and its KV bytes per token (at 4096 tokens, one
sequence, f16, llama.cpp's defaults) and fixed state."""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.errors import UsageError
from kvplan.model import MemoryKind, ModelDescription, SwaType
from kvplan.runtimes.llamacpp import CacheKind, LlamaCppSettings, plan
from kvplan.sources.catalog import catalog_names, load_catalog_model

REFERENCE_CTX = 4096


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    arch: str
    layers: int
    attention: str
    n_ctx_train: int
    kv_per_token_bytes: int
    state_bytes: int
    hf_id: str | None
    family: str | None
    params: int | None = None  # the checkpoint's parameters (exact where counted or published)
    params_exact: bool = False  # False: the model card's rounded figure
    weights: str | None = None  # the checkpoint's native storage format (bf16, fp8, mxfp4, …)


def catalog_entries(arch: str | None = None, family: str | None = None) -> list[CatalogEntry]:
    """The catalog's models, those of one GGUF architecture and / or one family where given; a filter that
    matches nothing is a usage error naming the values there are (a typo is not an empty catalog)."""
    models = [load_catalog_model(name) for name in catalog_names()]
    for flag, value, of in (("--arch", arch, lambda m: m.arch), ("--family", family, _family)):
        if value is not None:
            known = sorted({of(m) for m in models})
            models = [m for m in models if of(m) == value.strip().lower()]
            if not models:
                raise UsageError(f"no catalog model of {value!r}; the catalog has: {', '.join(known)}", flag)
    out = []
    for m in models:
        name = m.name
        p = plan(m, LlamaCppSettings(n_ctx=REFERENCE_CTX))
        state = sum(
            c.buffer_bytes
            for c in p.caches
            if c.per_token_bytes == 0 and c.kind in (CacheKind.RECURRENT, CacheKind.COMPRESSED)
        )
        attention = m.attention_summary
        if m.memory not in (MemoryKind.KV, MemoryKind.NONE):
            attention += f" ({m.memory.value})"
        if m.swa_type is not SwaType.NONE:
            attention += f"+{'chunked' if m.swa_type is SwaType.CHUNKED else 'SWA'} {m.n_swa}"
        out.append(
            CatalogEntry(
                name,
                m.arch,
                m.n_layer_all,
                attention,
                m.n_ctx_train,
                p.per_token_bytes,
                state,
                m.spec.hf_id if m.spec else None,
                _family(m),
                m.n_params,
                m.params_source.startswith(("counted", "published")),
                m.weight_format.kind if m.weight_format else None,
            )
        )
    return out


def _family(m: ModelDescription) -> str:
    return (m.spec.family if m.spec and m.spec.family else m.arch).lower()
