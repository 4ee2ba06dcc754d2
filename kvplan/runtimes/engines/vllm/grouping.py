"""vLLM 0.33's KV cache groups: a port of ``get_kv_cache_groups`` (vllm/v1/core/kv_cache_planning.py).

In order: ``--disable-hybrid-kv-cache-manager`` promotes window layers to full attention
(``unify_hybrid_kv_cache_specs``); one spec for every layer is one group (``_get_kv_cache_groups_uniform_spec``);
layers of one type whose pages may differ share one group whose pages add up per block id
(``UniformTypeKVCacheSpecs``: full attention with MLA, sliding windows of one size, chunks of one size, states);
otherwise pages are unified (``unify_kv_cache_spec_page_size``: a smaller attention page takes a proportionally
larger block, a state page or an attention page that does not divide is padded, an MLA page that does not
divide is refused) and the layers split into groups of equal size (``_get_kv_cache_groups_uniform_page_size``).
The block-outermost packing (``_get_packed_kv_cache_groups``) applies only to block-outermost KV layouts, which
none of the backends kvplan sizes uses (every recorded case resolves a layer-outermost layout).
"""

from __future__ import annotations

from dataclasses import replace

from kvplan.errors import RefusedConfigError
from kvplan.runtimes.engines.paged import (
    CacheSpec,
    ChunkedLocalSpec,
    FullSpec,
    Grouping,
    KVGroup,
    LayerRef,
    SlidingWindowSpec,
    StateSpec,
)
from kvplan.units import cdiv

#: vLLM's message when an MLA page cannot be unified (kv_cache_planning.py)
_UNIFY_REFUSAL = "page size is not divisible by the maximum page size and cannot be padded"


def promote_windows(specs: dict[LayerRef, CacheSpec]) -> tuple[dict[LayerRef, CacheSpec], bool]:
    """_promote_local_kv_cache_specs: with full attention present, window layers allocate as full attention."""
    values = list(specs.values())
    has_full = any(type(v) in (FullSpec,) or v.mla_type for v in values)
    has_window = any(isinstance(v, (SlidingWindowSpec, ChunkedLocalSpec)) for v in values)
    if not (has_full and has_window):
        return specs, False
    full_blocks = {v.block_tokens for v in values if isinstance(v, FullSpec)}
    block = next(iter(full_blocks)) if len(full_blocks) == 1 else None
    out: dict[LayerRef, CacheSpec] = {}
    for ref, v in specs.items():
        if isinstance(v, (SlidingWindowSpec, ChunkedLocalSpec)):
            out[ref] = FullSpec(v.token_bytes, block or v.block_tokens)
        else:
            out[ref] = v
    return out, True


def _uniform_type(specs: list[CacheSpec]) -> bool:
    """UniformTypeKVCacheSpecs.is_uniform_type: one block size and one base type."""
    return len({v.block_tokens for v in specs}) == 1 and len({v.uniform_key for v in specs}) == 1


def unify_pages(specs: dict[LayerRef, CacheSpec]) -> tuple[dict[LayerRef, CacheSpec], list[str]]:
    """unify_kv_cache_spec_page_size."""
    pages = {v.page_bytes for v in specs.values()}
    if len(pages) <= 1:
        return specs, []
    biggest = max(pages)
    out: dict[LayerRef, CacheSpec] = {}
    scaled: set[int] = set()
    padded = 0
    for ref, v in specs.items():
        if v.page_bytes == biggest:
            out[ref] = v
        elif isinstance(v, StateSpec):
            out[ref] = replace(v, padded_page=biggest)
            padded += 1
        elif biggest % v.page_bytes == 0:
            out[ref] = replace(v, block_tokens=v.block_tokens * (biggest // v.page_bytes))
            scaled.add(out[ref].block_tokens)
        elif not v.mla_type:
            out[ref] = replace(v, padded_page=biggest)
            padded += 1
        else:
            raise RefusedConfigError(
                f"vllm: an MLA page of {v.page_bytes:,} B does not divide the largest page ({biggest:,} B) "
                f"(vLLM: '{_UNIFY_REFUSAL}')"
            )
    notes = []
    if scaled:
        sizes = ", ".join(map(str, sorted(scaled)))
        notes.append(f"page unification: smaller pages take proportionally larger blocks ({sizes} tokens)")
    if padded:
        notes.append(f"page unification: {padded} page(s) padded to {biggest:,} B")
    return out, notes


def group_layers(specs: dict[LayerRef, CacheSpec], hybrid_manager: bool) -> tuple[Grouping, dict[LayerRef, CacheSpec]]:
    """get_kv_cache_groups: the groups and every layer's spec as the groups hold it (after unification)."""
    notes: list[str] = []
    if not hybrid_manager:
        specs, promoted = promote_windows(specs)
        if promoted:
            notes.append("window layers allocate full-length KV (--disable-hybrid-kv-cache-manager)")
    values = list(specs.values())
    order = tuple(specs)
    if len(set(values)) == 1:
        return Grouping((KVGroup(values[0], order),), False, tuple(notes)), specs
    if _uniform_type(values):
        return Grouping((KVGroup(values[0], order),), True, tuple(notes)), specs
    specs, unify_notes = unify_pages(specs)
    notes += unify_notes
    buckets: dict[CacheSpec, list[LayerRef]] = {}
    for ref, v in specs.items():
        buckets.setdefault(v, []).append(ref)
    sizes = [len(b) for b in buckets.values()]
    group_size = max(sizes) if max(sizes) < min(sizes) * 1.5 else min(sizes)
    groups: list[KVGroup] = []
    padding = 0
    for spec, layers in buckets.items():
        n = cdiv(len(layers), group_size)
        padding += n * group_size - len(layers)
        groups.extend(KVGroup(spec, tuple(layers[k::n])) for k in range(n))  # strided: PP stages stay balanced
    if padding:
        notes.append(f"{padding} padding layer(s) make the groups equal (vLLM 'Add padding layers')")
    return Grouping(tuple(groups), False, tuple(notes)), specs
