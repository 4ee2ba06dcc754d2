"""`kvplan fit` for llama.cpp: what fits on which GPUs — weights + KV/state + overhead, per device.

llama.cpp places layer ``il`` on GPU ``upper_bound(splits, il / (n_layer + 1))`` (src/llama-model.cpp
load_tensors; the +1 is the output layer), keeps the input layer (token embeddings) on the CPU, and puts each
layer's KV / state with its layer (offload_kqv). The solvers are exact integer searches over the same layout
code as `estimate`: the answer fits and the next step does not.

``-c`` in `fit` is the context *each* sequence needs: N sequences of C tokens run as llama.cpp's
``-c N×C -np N`` (llama.cpp's -c is shared by its sequences).
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from kvplan.errors import BadInputError, KvplanError
from kvplan.layout.llamacpp import KV_PAD_CELLS, LlamaCppSettings, plan
from kvplan.model import ModelDescription
from kvplan.plan import MemoryPlan
from kvplan.weights import Weights, estimated, from_blocks, spread

GIB = 1 << 30
MIB = 1 << 20
#: per-GPU overhead when not given: CUDA context and the context-independent part of llama.cpp's compute buffer
#: (an estimate; `llama-fit-params --fit-print on` reports the compute buffer, e.g. 266 MiB for an 8B model at
#: ubatch 512), plus attention_scratch() below, which grows with the context
DEFAULT_OVERHEAD_BYTES = 1 * GIB
#: cache type pairs from least to most loss, for --cache-types auto
CACHE_TYPE_LADDER = (("f16", "f16"), ("q8_0", "q8_0"), ("q8_0", "q5_1"), ("q8_0", "q4_0"), ("q5_1", "q5_1"),
                     ("q5_0", "q5_0"), ("q4_1", "q4_1"), ("q4_0", "q4_0"))  # fmt: skip


@dataclass(frozen=True)
class Device:
    index: int
    memory_bytes: int
    layers: tuple[int, ...]
    weight_bytes: int
    kv_bytes: int
    overhead_bytes: int

    @property
    def used_bytes(self) -> int:
        return self.weight_bytes + self.kv_bytes + self.overhead_bytes

    @property
    def free_bytes(self) -> int:
        return self.memory_bytes - self.used_bytes


@dataclass(frozen=True)
class Placement:
    plan: MemoryPlan
    devices: tuple[Device, ...]
    host_weight_bytes: int  # the input layer, kept in host memory
    overhead_basis: str = ""

    @property
    def fits(self) -> bool:
        return all(d.free_bytes >= 0 for d in self.devices)


def model_weights(model: ModelDescription, weight_type: str | None, weight_bytes: int | None) -> Weights:
    blocks = model.extra.get("weight_blocks")
    if weight_bytes is not None:
        return spread(weight_bytes, model.n_layer_all, "given (--weight-bytes)")
    if isinstance(blocks, dict) and weight_type is None:
        return from_blocks(blocks, model.n_layer_all)
    if model.n_params is None:
        raise BadInputError(f"{model.source}: no tensor sizes and no parameter count; pass --weight-bytes SIZE, or "
                            "--params N with --weights TYPE")  # fmt: skip
    return estimated(model.n_params, weight_type or "q4_k_m", model.n_layer_all)


def layer_devices(n_layer_all: int, splits: Sequence[float]) -> list[int]:
    """The GPU of each layer and of the output layer (last entry), as llama.cpp's load_tensors assigns them."""
    total = sum(splits)
    if total <= 0 or any(s < 0 for s in splits):
        raise BadInputError("--tensor-split needs non-negative proportions that do not all vanish")
    cumulative, acc = [], 0.0
    for s in splits:
        acc += s
        cumulative.append(acc / total)
    n = n_layer_all + 1
    return [min(bisect.bisect_right(cumulative, il / n), len(splits) - 1) for il in range(n)]


def attention_scratch(p: MemoryPlan) -> tuple[int, str]:
    """The compute-buffer terms that grow with the context, per GPU: the KQ mask of one ubatch (f16 with flash
    attention, f32 without) and, with flash attention off, the f32 KQ scores n_head × cells × n_ubatch × 4 B.
    Checked against llama.cpp's own compute buffer (tests/fixtures/oracle/compute.json, CPU backend)."""
    r = p.runtime.values
    caches = [c.cells for c in p.caches if c.kind == "attention"]
    if not caches:
        return 0, ""
    cells, mask_cells = max(caches), sum(caches)  # one mask per cache (full, SWA) lives through the graph
    ubatch = int(r["n_ubatch"])
    if r["flash_attn_effective"] == "on":
        return mask_cells * ubatch * 2, f"KQ mask {mask_cells} cells × ubatch {ubatch} × 2 B"
    heads = max((la.n_head for la in p.model.layers if not la.recurrent), default=0)
    scores = (heads * cells + mask_cells) * ubatch * 4
    return scores, (f"flash attention off: KQ scores n_head {heads} × {cells} cells + mask {mask_cells} cells, "
                    f"× ubatch {ubatch} × 4 B")  # fmt: skip


def default_overhead(p: MemoryPlan) -> tuple[int, str]:
    """The per-GPU overhead estimate when none is given: 1 GiB base + the context-dependent attention scratch."""
    scratch, why = attention_scratch(p)
    basis = f"{DEFAULT_OVERHEAD_BYTES / GIB:.2f} GiB estimate (CUDA context + llama.cpp compute buffer)"
    if scratch:
        basis += f" + {scratch / MIB:,.0f} MiB {why}"
    return (
        DEFAULT_OVERHEAD_BYTES + scratch,
        basis + "; measure with llama-fit-params --fit-print on and pass --overhead",
    )


@dataclass(frozen=True)
class Target:
    """A model with its weights on some GPUs: what every placement and solver works on."""

    model: ModelDescription
    weights: Weights
    memory: tuple[int, ...]
    splits: tuple[float, ...] | None = None  # --tensor-split proportions (default: by memory)
    overhead: int | None = None  # per GPU; None: default_overhead() of each configuration

    def place(self, settings: LlamaCppSettings) -> Placement:
        """Weights, KV / state and overhead of every GPU for one configuration (raises if llama.cpp refuses)."""
        model, weights, memory = self.model, self.weights, self.memory
        p = plan(model, settings)
        where = layer_devices(model.n_layer_all, self.splits or [float(m) for m in memory])
        w = [0] * len(memory)
        kv = [0] * len(memory)
        for il, b in weights.layer_bytes.items():
            w[where[il]] += b
        w[where[-1]] += weights.output_bytes
        for cache in p.caches:
            for il, b in zip(cache.layers, cache.layer_bytes, strict=True):
                kv[where[min(il, len(where) - 1)]] += b
        if self.overhead is None:
            overhead, basis = default_overhead(p)
        else:
            overhead, basis = self.overhead, f"{self.overhead / GIB:.2f} GiB (given)"
        devices = tuple(
            Device(i, memory[i], tuple(il for il in range(model.n_layer_all) if where[il] == i), w[i], kv[i], overhead)
            for i in range(len(memory))
        )
        return Placement(p, devices, weights.input_bytes, basis)

    def fitting(self, settings: LlamaCppSettings) -> Placement | None:
        """The placement if llama.cpp accepts the settings and every GPU has room, else None."""
        try:
            placement = self.place(settings)
        except KvplanError:
            return None
        return placement if placement.fits else None

    def max_context(self, settings: LlamaCppSettings, limit: int) -> Placement | None:
        """The largest context per sequence (a multiple of 256 tokens, at most ``limit``) that fits for
        settings.n_seq sequences; None if 256 does not."""
        hi = max(1, limit // KV_PAD_CELLS)

        def at(k: int) -> Placement | None:
            return self.fitting(per_sequence(settings, settings.n_seq, k * KV_PAD_CELLS))

        best = at(1)
        if best is None:
            return None
        top = at(hi)
        if top is not None:
            return top
        lo = 1  # fits (best); hi does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            found = at(mid)
            if found is not None:
                lo, best = mid, found
            else:
                hi = mid
        return best

    def max_parallel(self, settings: LlamaCppSettings) -> Placement | None:
        """The most parallel sequences (1..256) of settings.n_ctx tokens each that fit (each count is checked:
        padding makes the total not strictly monotone)."""
        best = None
        for n in range(1, 257):
            p = self.fitting(per_sequence(settings, n, settings.n_ctx))
            if p is not None:
                best = p
        return best

    def cheapest_cache_types(self, settings: LlamaCppSettings) -> tuple[tuple[str, str], Placement] | None:
        """The first (least lossy) K/V type pair with which settings.n_seq sequences of settings.n_ctx fit."""
        for tk, tv in CACHE_TYPE_LADDER:
            s = per_sequence(dataclasses.replace(settings, type_k=tk, type_v=tv), settings.n_seq, settings.n_ctx)
            p = self.fitting(s)
            if p is not None:
                return (tk, tv), p
        return None


def per_sequence(settings: LlamaCppSettings, n_seq: int, ctx_per_seq: int) -> LlamaCppSettings:
    """llama.cpp settings for ``n_seq`` sequences of ``ctx_per_seq`` tokens each (-c N×C -np N)."""
    return dataclasses.replace(settings, n_seq=n_seq, n_ctx=n_seq * ctx_per_seq)
