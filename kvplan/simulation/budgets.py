"""Budgets on a simulation: preemptions, failed requests, the p99 TTFT and ITL floors, the peak share of KV in use. The
same findings `estimate`, `fit` and `check` report (kvplan.capacity.budgets.Finding)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from kvplan.capacity.budgets import Finding
from kvplan.errors import UsageError
from kvplan.simulation.run import SimResult, percentile

#: budget key (file) → (flag, what it limits)
SIM_BUDGETS = {
    "max_preemptions": ("--max-preemptions", "preemptions over the run"),
    "max_failed": ("--max-failed", "requests the server fails (llama-server: context exceeded, prompt too long)"),
    "max_ttft_p99": ("--max-ttft-p99", "the p99 TTFT floor (500ms, 2s)"),
    "max_itl_p99": ("--max-itl-p99", "the p99 inter-token latency floor (50ms)"),
    "max_peak_kv": ("--max-peak-kv", "the peak share of KV blocks in use (90%)"),
}


@dataclass(frozen=True)
class SimBudgets:
    max_preemptions: int | None = None
    max_failed: int | None = None
    max_ttft_p99: float | None = None  # seconds
    max_itl_p99: float | None = None
    max_peak_kv: float | None = None  # share of the usable blocks

    @property
    def any(self) -> bool:
        return any(
            v is not None
            for v in (self.max_preemptions, self.max_failed, self.max_ttft_p99, self.max_itl_p99, self.max_peak_kv)
        )


_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(us|µs|ms|s)?\s*$", re.IGNORECASE)


def parse_budget(key: str, value: object, where: str) -> int | float:
    """A budget's value: a count of preemptions, a duration (seconds, or with us / ms / s), or a share."""
    text = str(value).strip()
    try:
        if key in ("max_preemptions", "max_failed"):
            if isinstance(value, bool) or not re.fullmatch(r"[0-9]+", text):
                raise ValueError
            return int(text)
        if key == "max_peak_kv":
            share = float(text[:-1]) / 100 if text.endswith("%") else float(text)
            if not 0 < share <= 1:
                raise ValueError
            return share
        m = _DURATION.match(text)
        if m is None or isinstance(value, bool):
            raise ValueError
        scale = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, None: 1.0}[(m.group(2) or "").lower() or None]
        seconds = float(m.group(1)) * scale
        if not (math.isfinite(seconds) and seconds > 0):
            raise ValueError
        return seconds
    except ValueError:
        expected = {
            "max_preemptions": "a whole number of preemptions (0)",
            "max_failed": "a whole number of requests (0)",
            "max_peak_kv": "a share of the KV blocks, 90% or 0.9",
        }.get(key, "a duration such as 500ms or 2s")
        raise UsageError(f"expected {expected}, not {value!r}", where) from None


def findings(result: SimResult, budgets: SimBudgets) -> tuple[Finding, ...]:
    out = []
    if budgets.max_preemptions is not None:
        n = sum(s.preempted for s in result.steps)
        out.append(Finding("max_preemptions", n <= budgets.max_preemptions, n, budgets.max_preemptions, "preemptions"))
    if budgets.max_failed is not None:
        n = sum(1 for q in result.requests if q.error is not None)
        out.append(Finding("max_failed", n <= budgets.max_failed, n, budgets.max_failed, "requests"))
    ttft = [q.first_token - q.arrival for q in result.requests if q.first_token is not None]
    for key, values, limit in (
        ("max_ttft_p99", ttft, budgets.max_ttft_p99),
        ("max_itl_p99", list(result.itl), budgets.max_itl_p99),
    ):
        if limit is not None:
            p99 = percentile(values, 99) or 0.0
            out.append(Finding(key, p99 <= limit, p99, limit, "seconds"))
    if budgets.max_peak_kv is not None:
        peak = max((s.blocks_used for s in result.steps), default=0) / (result.usable_blocks or 1)
        out.append(Finding("max_peak_kv", peak <= budgets.max_peak_kv, peak, budgets.max_peak_kv, "share"))
    return tuple(out)


def sim_budgets(given: dict[str, tuple[object, str]]) -> SimBudgets:
    """Budgets from raw values: budget key → (value, where it was given: a flag or FILE:LINE: KEY)."""
    v = {key: parse_budget(key, value, where) for key, (value, where) in given.items()}
    preemptions, failed = v.get("max_preemptions"), v.get("max_failed")
    return SimBudgets(
        None if preemptions is None else int(preemptions),
        None if failed is None else int(failed),
        v.get("max_ttft_p99"),
        v.get("max_itl_p99"),
        v.get("max_peak_kv"),
    )
