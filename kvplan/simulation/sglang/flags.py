"""SGLang's scheduler flags, as `simulate --engine sglang` reads them (kept apart: the command line imports it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SglangSchedule:
    """SGLang's scheduler flags (None: SGLang's default for the GPU)."""

    chunked_prefill_size: int | None = None  # --chunked-prefill-size
    max_prefill_tokens: int | None = None  # --max-prefill-tokens (16384)
    schedule_policy: str = "fcfs"  # --schedule-policy
    schedule_conservativeness: float = 1.0  # --schedule-conservativeness
    enable_mixed_chunk: bool = False  # --enable-mixed-chunk
    disable_overlap_schedule: bool = False  # --disable-overlap-schedule
