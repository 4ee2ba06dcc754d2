"""Budgets on a simulation: preemptions, failed requests, the p99 TTFT and ITL floors, the peak share of KV in use. The
same findings `estimate`, `fit` and `check` report (kvplan.capacity.budgets.Finding)."""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.capacity.budgets import Finding
from kvplan.simulation.run import SimResult


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


def findings(result: SimResult, budgets: SimBudgets) -> tuple[Finding, ...]:
    out = []
    if budgets.max_preemptions is not None:
        n = result.series.preemptions
        out.append(Finding("max_preemptions", n <= budgets.max_preemptions, n, budgets.max_preemptions, "preemptions"))
    if budgets.max_failed is not None:
        n = result.stats.failed
        out.append(Finding("max_failed", n <= budgets.max_failed, n, budgets.max_failed, "requests"))
    for key, values, limit in (
        ("max_ttft_p99", result.stats.ttft, budgets.max_ttft_p99),
        ("max_itl_p99", result.stats.itl, budgets.max_itl_p99),
    ):
        if limit is not None:
            p99 = values.percentile(99) or 0.0
            out.append(Finding(key, p99 <= limit, p99, limit, "seconds"))
    if budgets.max_peak_kv is not None:
        peak = result.series.peak_blocks / (result.usable_blocks or 1)
        out.append(Finding("max_peak_kv", peak <= budgets.max_peak_kv, peak, budgets.max_peak_kv, "share"))
    return tuple(out)
