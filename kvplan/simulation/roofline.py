"""A roofline floor for each engine step: the bytes it must read (weights once, every scheduled request's KV
history, the new KV it writes) against the GPU's memory bandwidth, and the FLOPs it must do (2 per parameter
per token, plus attention over the context) against the GPU's dense peak. A step takes at least the larger of
the two; decode steps are bandwidth-bound, prefill chunks compute-bound. It is a floor, never a measurement:
kernels, launch gaps, communication and the sampler all add time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvplan.model import ModelDescription


@dataclass(frozen=True)
class Hardware:
    bandwidth: float  # bytes/s per GPU
    peak_flops: float  # FLOP/s per GPU (dense)
    source: str


@dataclass(frozen=True)
class CostModel:
    """What one rank of the engine reads and computes per step (tensor parallelism splits both)."""

    weight_bytes: int  # read once per step
    flops_per_token: float  # 2 x parameters (this rank's share)
    kv_bytes_per_token: int  # this rank's KV bytes per token of context (full-attention layers)
    attention_flops_per_pair: float  # FLOPs per (query token, context token): QK and PV, this rank's heads
    hardware: Hardware
    windowed: tuple[tuple[int, int], ...] = ()  # (bytes per token, window) of sliding-window layers
    state_bytes: int = 0  # a request's recurrent state (Mamba / linear attention), read once per step

    def step(self, work: Iterable[tuple[int, int]]) -> StepCost:
        """``work``: (tokens computed this step, tokens of context before them) per scheduled request."""
        new = ctx = pairs = 0
        windowed = 0
        work = list(work)
        for n, before in work:
            new += n
            ctx += before + n
            pairs += n * before + n * (n + 1) // 2
        for b, w in self.windowed:  # a window's history + new
            windowed += sum(b * min(before + n, w + n) for n, before in work)
        return self._cost(len(work), new, ctx, pairs, windowed)

    def totals(self, rows: int, new: int, ctx: int, pairs: int) -> StepCost:
        """``step`` from its sums, for a model without sliding-window layers: ``rows`` requests, ``new`` tokens,
        ``ctx`` = Σ (before + n), ``pairs`` = Σ (n·before + n(n+1)/2) — the same integers, so the same cost."""
        assert not self.windowed, "sliding-window layers need each request's context: use step()"
        return self._cost(rows, new, ctx, pairs, 0)

    def _cost(self, rows: int, new: int, ctx: int, pairs: int, windowed: int) -> StepCost:
        read = self.weight_bytes + self.kv_bytes_per_token * ctx + windowed + self.state_bytes * rows
        flops = self.flops_per_token * new + self.attention_flops_per_pair * pairs
        h = self.hardware
        return StepCost(
            read, flops, max(read / h.bandwidth, flops / h.peak_flops), flops / h.peak_flops > read / h.bandwidth
        )


@dataclass(frozen=True, slots=True)
class StepCost:
    bytes: int
    flops: float
    seconds: float
    compute_bound: bool


def decode_floor(weights_read: int, kv_bytes: int, hardware: Hardware) -> tuple[int, float]:
    """One decode step of every sequence when the cache is full: the bytes it reads (the weights a token passes
    through, and the whole KV cache and state) and the time that takes at the GPUs' bandwidth (the ITL floor;
    decode is bandwidth-bound: its FLOPs are a small share of the peak)."""
    read = weights_read + kv_bytes
    return read, read / hardware.bandwidth


@dataclass(frozen=True)
class Active:
    """What one token passes through: the parameters (FLOPs) and the share of the weights a step reads at least."""

    params: int
    read_share: float  # of the weights: 1 for a dense model; an MoE's dense part plus its k of E routed experts
    note: str  # "" for a dense model


def active(model: ModelDescription, expert_fraction: float | None) -> Active:
    """A dense model: every parameter, every weight. An MoE: its active parameters (the spec's stated count, or
    the total less the routed experts a token skips), and a step reads at least the dense weights and the k
    routed experts every token uses (``expert_fraction``: the routed experts' share of the weights' bytes, exact
    from a GGUF's tensor infos). An MoE whose active count is unknown counts every parameter, and says so."""
    params = model.n_params or 0
    if model.active_share >= 1.0:
        return Active(params, 1.0, "")
    k, e = model.n_expert_used, model.n_expert
    count = model.active_params
    if count is None or not params:
        return Active(
            params,
            1.0,
            f"MoE ({k} of {e} experts per token) without an active-parameter count: FLOPs and reads count every "
            "expert, an overstatement rather than a floor (give active_params in a YAML spec)",
        )
    if expert_fraction is not None:
        share = 1.0 - expert_fraction * (1.0 - model.active_share)
        basis = "the routed experts' bytes from the GGUF"
    else:
        share = count / params
        basis = "weights in proportion to the parameters"
    return Active(
        count,
        share,
        f"MoE: {k} of {e} routed experts per token: FLOPs of {count / 1e9:.3g} B active parameters; a step reads "
        f"at least {share:.1%} of the weights (the dense part and one token's experts; {basis})",
    )


def expert_fraction(model: ModelDescription) -> float | None:
    """The routed experts' share of the bytes a step reads (every weight but the token embeddings), exact from a
    GGUF's tensor infos; None otherwise."""
    tw = model.tensor_weights
    if tw is None or not tw.expert_bytes:
        return None
    return sum(tw.expert_bytes) / max(1, tw.total_bytes - tw.input_bytes)


def token_costs(model: ModelDescription) -> tuple[Active, int, list[str]]:
    """What a token costs the roofline, for every engine: the active parameters and the weights' share a step
    reads, the attention FLOPs per (query, cached token) pair over the layers with a KV cache, and the notes that
    say what was assumed."""
    notes = []
    if not model.n_params:
        notes.append("no parameter count: FLOPs from the weights' bytes at 2 bytes per parameter")
    act = active(model, expert_fraction(model))
    if act.note:
        notes.append(act.note)
    attention = sum(
        2 * layer.n_head * (layer.head_k + layer.head_v)
        for layer in model.layers
        if layer.has_kv and not layer.recurrent and layer.n_head_kv
    )
    return act, attention, notes
