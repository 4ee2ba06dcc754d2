"""`kvplan curve`: bytes against context, per cache, from the same layout as `estimate`.

Shows where padding to 256 cells adds bytes, where sliding windows stop growing and the marginal cost of
one more token at each point.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kvplan.model import ModelDescription
from kvplan.runtimes.llamacpp import CacheKind, LlamaCppSettings, MemoryPlan, plan
from kvplan.units import parse_count

MAX_POINTS = 512


@dataclass(frozen=True)
class Contexts:
    """The contexts of a curve and the axis that shows them best."""

    points: tuple[int, ...]
    log_axis: bool  # doubling ranges and wide lists: log2; stepped ranges: linear


def parse_contexts(text: str) -> Contexts:
    """``1k,8k,32k`` (a list), ``1k:128k`` (doubling from 1k to 128k) or ``1k:64k:4k`` (a step); a range always
    ends with its end."""
    text = text.strip()
    log_axis = True
    if "," in text or ":" not in text:
        points = [parse_count(p) for p in text.split(",") if p.strip()]
        if points and max(points) < 16 * min(points):
            log_axis = False
    else:
        parts = text.split(":")
        if len(parts) not in (2, 3):
            raise ValueError(f"{text!r}: expected START:END or START:END:STEP")
        start, end = parse_count(parts[0]), parse_count(parts[1])
        if end < start:
            raise ValueError(f"{text!r}: the range must run from its start up to its end")
        if len(parts) == 3:
            step = parse_count(parts[2])
            if (end - start) // step + 2 > MAX_POINTS:
                raise ValueError(f"{text!r}: more than {MAX_POINTS} points; use a larger step")
            points = list(range(start, end + 1, step))
            log_axis = False
        else:
            points, v = [], start
            while v < end:
                points.append(v)
                v *= 2
        if points[-1:] != [end]:
            points.append(end)
    if not points:
        raise ValueError(f"{text!r}: give positive context sizes")
    if len(points) > MAX_POINTS:
        raise ValueError(f"{text!r}: more than {MAX_POINTS} points")
    return Contexts(tuple(sorted(set(points))), log_axis)


@dataclass(frozen=True)
class CurvePoint:
    n_ctx: int  # tokens asked
    cells: int  # cells llama.cpp allocates (all streams)
    cache_bytes: tuple[int, ...]  # per cache, in the order of Curve.caches (0 where a cache is absent)
    total_bytes: int
    per_token_bytes: int

    @property
    def padding_cells(self) -> int:
        return self.cells - self.n_ctx


@dataclass(frozen=True)
class Curve:
    model: ModelDescription
    first: MemoryPlan  # the plan at the first point (its settings describe the curve)
    caches: tuple[str, ...]
    points: tuple[CurvePoint, ...]
    log_axis: bool
    notes: tuple[str, ...]
    warnings: tuple[str, ...]


def curve(model: ModelDescription, settings: LlamaCppSettings, contexts: Contexts) -> Curve:
    plans = [plan(model, dataclasses.replace(settings, n_ctx=c)) for c in contexts.points]
    names: list[str] = []
    for p in plans:
        for c in p.caches:
            if c.name not in names:
                names.append(c.name)
    points = []
    capped_seen: set[str] = set()
    notes: list[str] = []
    for ctx, p in zip(contexts.points, plans, strict=True):
        by_name = {c.name: c.buffer_bytes for c in p.caches}
        for c in p.caches:
            grows_full = c.kind in (CacheKind.ATTENTION, CacheKind.INDEXER) and c.cells < p.context.n_ctx_seq
            if grows_full and c.name not in capped_seen:
                capped_seen.add(c.name)
                notes.append(f"{c.name}: stops growing at {c.cells:,} cells per stream (from {ctx:,} tokens on)")
        points.append(
            CurvePoint(ctx, p.context.n_ctx, tuple(by_name.get(n, 0) for n in names), p.total_bytes, p.per_token_bytes)
        )
    for i, name in enumerate(names):
        if len(points) > 1 and all(pt.cache_bytes[i] == points[0].cache_bytes[i] for pt in points):
            notes.append(f"{name}: constant over this range (fixed-size state)")
    over = [pt.n_ctx for pt, p in zip(points, plans, strict=True) if p.warnings]
    warnings = []
    if over:
        warnings.append(
            f"from {over[0]:,} tokens on, each sequence's context exceeds the model's trained context "
            f"{model.n_ctx_train:,} (llama.cpp warns: possible training context overflow)"
        )
    return Curve(model, plans[0], tuple(names), tuple(points), contexts.log_axis, tuple(notes), tuple(warnings))
