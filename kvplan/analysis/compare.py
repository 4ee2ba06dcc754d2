"""`kvplan compare`: the model's real attention layout next to MHA / GQA / MQA what-ifs, and every cache type.

Every number comes from the same llama.cpp layout as `estimate` (kvplan.layout.llamacpp.plan); a what-if
only changes the KV head count of the layers that have ordinary attention. Refused combinations are kept
as rows with llama.cpp's reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from kvplan.errors import RefusedConfigError
from kvplan.facts.ggml_types import LLAMA_CPP_CACHE_TYPES
from kvplan.model import Layer, MemoryKind, ModelDescription
from kvplan.runtimes.llamacpp import FlashAttn, LlamaCppSettings, MemoryPlan, plan

#: 1-byte float KV of the serving engines (vLLM / SGLang / TensorRT-LLM); not a llama.cpp cache type
FP8_TYPES = ("fp8_e4m3", "fp8_e5m2")
#: asymmetric K/V pairs people actually deploy (K keeps more precision than V)
MIXED_PAIRS = (("f16", "q8_0"), ("q8_0", "q4_0"), ("q8_0", "q5_0"), ("f16", "q4_0"), ("q8_0", "f16"))


def _what_if_layers(model: ModelDescription) -> list[Layer]:
    """Layers whose KV head count a what-if may change: ordinary attention (not MLA, not recurrent)."""
    if model.mla:
        return []
    return [la for la in model.layers if la.n_head_kv > 0 and not la.recurrent and la.n_head > 0]


def head_variants(model: ModelDescription) -> list[tuple[str, int | None]]:
    """(label, KV heads) rows: MHA, GQA groupings that divide the query heads evenly, MQA; None = as is."""
    layers = _what_if_layers(model)
    if not layers:
        return []
    n_head = layers[0].n_head
    real = layers[0].n_head_kv
    out: list[tuple[str, int | None]] = []
    for kv in sorted({d for d in range(1, n_head + 1) if n_head % d == 0} | {real}, reverse=True):
        if kv == n_head:
            label = "MHA"
        elif kv == 1:
            label = "MQA"
        else:
            label = f"GQA-{kv}"
        if kv == real:
            label += " (model)"
        out.append((label, kv))
    return out


def with_kv_heads(model: ModelDescription, kv_heads: int) -> ModelDescription:
    """The model with ``kv_heads`` on every what-if layer whose query heads it divides."""
    changed = {la.index for la in _what_if_layers(model) if la.n_head % kv_heads == 0}
    layers = tuple(dataclasses.replace(la, n_head_kv=kv_heads) if la.index in changed else la for la in model.layers)
    return dataclasses.replace(model, layers=layers)


def _fp8_bytes(p: MemoryPlan) -> tuple[int, int]:
    """(total, per-token) of an f16 plan with every f16 cache at 1 byte per value; f32 states unchanged."""
    total = sum(c.buffer_bytes // 2 if c.type_k == "f16" else c.buffer_bytes for c in p.caches)
    per_token = sum(c.per_token_bytes // 2 if c.type_k == "f16" else c.per_token_bytes for c in p.caches)
    return total, per_token


@dataclass(frozen=True)
class CompareRow:
    section: str  # attention, cache type, serving engines
    variant: str
    type_k: str
    type_v: str
    refused: str | None = None  # llama.cpp's reason, when it refuses the combination
    per_token_bytes: int | None = None
    totals: tuple[int, ...] = ()  # bytes at each context
    ratio: float | None = None  # total at the first context against the model's f16 total


@dataclass(frozen=True)
class Comparison:
    model: ModelDescription
    n_seq: int
    kv_unified: bool
    flash_attn: FlashAttn
    contexts: tuple[int, ...]
    rows: tuple[CompareRow, ...]
    notes: tuple[str, ...]


def _row(
    label: str,
    section: str,
    model: ModelDescription,
    settings: LlamaCppSettings,
    contexts: Sequence[int],
    baseline: int | None,
    fp8: bool = False,
) -> CompareRow:
    try:
        plans = [plan(model, dataclasses.replace(settings, n_ctx=c)) for c in contexts]
    except RefusedConfigError as exc:
        return CompareRow(
            section, label, settings.type_k, settings.type_v, refused=str(exc).removeprefix("llama.cpp refuses: ")
        )
    totals = [p.total_bytes for p in plans]
    per_token = plans[0].per_token_bytes
    if fp8:  # the f16 layout at 1 byte per K/V value
        totals = [_fp8_bytes(p)[0] for p in plans]
        per_token = _fp8_bytes(plans[0])[1]
    ratio = (totals[0] / baseline) if baseline else None
    return CompareRow(section, label, settings.type_k, settings.type_v, None, per_token, tuple(totals), ratio)


def compare(model: ModelDescription, settings: LlamaCppSettings, contexts: Sequence[int]) -> Comparison:
    """The model's attention layout next to MHA / GQA / MQA what-ifs and every cache type, at each context."""
    contexts = list(contexts) or [settings.n_ctx or model.n_ctx_train]
    f16 = dataclasses.replace(settings, type_k="f16", type_v="f16")
    base_plan = plan(model, dataclasses.replace(f16, n_ctx=contexts[0]))
    baseline = base_plan.total_bytes or None
    rows: list[CompareRow] = []
    notes: list[str] = []

    for label, kv in head_variants(model):
        variant = with_kv_heads(model, kv) if kv is not None else model
        rows.append(_row(label, "attention", variant, settings, contexts, baseline))
    if not rows:
        why = "MLA (a single latent K)" if model.mla else "no ordinary attention layers"
        notes.append(f"no MHA/GQA/MQA what-ifs: {model.name} has {why}")
    skipped = [la.index for la in model.layers if la.n_head_kv == 0 or la.recurrent]
    if rows and (skipped or model.memory not in (MemoryKind.KV, MemoryKind.NONE)):
        notes.append(
            "what-ifs change only ordinary attention layers; recurrent state, MLA, indexer and "
            "compressed caches are kept as the model has them"
        )

    pairs = [(t, t) for t in LLAMA_CPP_CACHE_TYPES] + list(MIXED_PAIRS)
    for tk, tv in pairs:
        s = dataclasses.replace(settings, type_k=tk, type_v=tv)
        rows.append(_row(f"K {tk} / V {tv}", "cache type", model, s, contexts, baseline))
    for fp8 in FP8_TYPES:
        rows.append(_row(f"K {fp8} / V {fp8}", "serving engines", model, f16, contexts, baseline, fp8=True))
    notes.append(
        "fp8 (e4m3/e5m2) rows: serving-engine KV (vLLM / SGLang / TensorRT-LLM) at 1 byte per value, "
        "laid out as llama.cpp would; llama.cpp itself has no fp8 cache type"
    )
    if settings.flash_attn is FlashAttn.OFF:
        notes.append("flash attention off: llama.cpp refuses every quantized V cache")
    notes.append(f"ratio: total at {contexts[0]:,} tokens against the model's f16 K / f16 V total")
    reasons: dict[str, list[str]] = {}
    for row in rows:
        if row.refused is not None:
            reasons.setdefault(row.refused, []).append(row.variant)
    for reason, variants in reasons.items():
        notes.append(f"refused ({', '.join(variants)}): {reason}")
    ctx = base_plan.context
    return Comparison(model, ctx.n_seq, ctx.kv_unified, settings.flash_attn, tuple(contexts), tuple(rows), tuple(notes))
