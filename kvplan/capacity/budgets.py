"""Budgets: the one evaluator `estimate`, `fit` and `check` share. Findings carry numbers (bytes, tokens,
sequences, shares), never formatted text; the report builders format them in the units asked for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvplan.capacity.request import Budgets
from kvplan.capacity.results import FitResult, Solver


@dataclass(frozen=True)
class Outcome:
    """What the budgets are checked against: a plan on hardware (a fit) or a plan alone (an estimate)."""

    kv_bytes: int
    used_bytes: int | None  # None: the weights are not known
    n_seq: int
    ctx_per_seq: int  # tokens each sequence gets
    trained_ctx: int
    fits: bool | None = None  # None: no hardware
    need_bytes: int = 0  # what "fits" compares (see FitResult)
    have_bytes: int = 0
    device: str | None = None
    headroom: float | None = None


def outcome_of(r: FitResult) -> Outcome:
    return Outcome(
        r.kv_bytes,
        r.used_bytes,
        r.n_seq,
        r.ctx_per_seq,
        r.trained_ctx,
        r.fits,
        r.need_bytes,
        r.have_bytes,
        r.need_device,
        r.headroom,
    )


@dataclass(frozen=True)
class Finding:
    """One budget against its limit. ``unit``: bytes, tokens, sequences or share."""

    budget: str  # fits, max_kv, max_total, min_ctx, min_parallel, headroom
    passed: bool
    actual: int | float
    limit: int | float
    unit: str
    device: str | None = None  # fits: the tightest GPU
    capped_by_trained: bool = False  # min_ctx: the search stopped at the model's trained context

    def to_dict(self) -> dict[str, Any]:
        return {
            "budget": self.budget,
            "passed": self.passed,
            "actual": self.actual,
            "limit": self.limit,
            "unit": self.unit,
            "device": self.device,
            "capped_by_trained": self.capped_by_trained,
        }


def evaluate(o: Outcome, b: Budgets, solver: Solver | None) -> tuple[Finding, ...]:
    """Every budget of ``b`` (and, on hardware, that the plan fits) against the outcome; ``solver`` answers
    min_ctx and min_parallel on the hardware (without hardware they are checked against the configuration)."""
    out: list[Finding] = []
    if o.fits is not None:
        out.append(Finding("fits", o.fits, o.need_bytes, o.have_bytes, "bytes", o.device))
    if b.max_kv is not None:
        out.append(Finding("max_kv", o.kv_bytes <= b.max_kv, o.kv_bytes, b.max_kv, "bytes"))
    if b.max_total is not None:
        if o.used_bytes is None:
            raise ValueError("max_total needs the weights: a GGUF with tensors, or --params / --weight-bytes")
        out.append(Finding("max_total", o.used_bytes <= b.max_total, o.used_bytes, b.max_total, "bytes"))
    if b.min_ctx is not None:
        if solver is None:
            got, capped = o.ctx_per_seq, False
        else:
            limit = max(o.trained_ctx, b.min_ctx) if o.trained_ctx else b.min_ctx
            got = solver.max_ctx_per_seq(o.n_seq, limit)
            capped = got >= o.trained_ctx > 0 and got < b.min_ctx
        out.append(Finding("min_ctx", got >= b.min_ctx, got, b.min_ctx, "tokens", capped_by_trained=capped))
    if b.min_parallel is not None:
        got = o.n_seq if solver is None else solver.max_parallel(o.ctx_per_seq)
        out.append(Finding("min_parallel", got >= b.min_parallel, got, b.min_parallel, "sequences"))
    if b.headroom is not None and o.headroom is not None:
        out.append(Finding("headroom", o.headroom >= b.headroom, o.headroom, b.headroom, "share"))
    return tuple(out)
