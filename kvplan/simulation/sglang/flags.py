"""SGLang's scheduler flags, as `simulate --engine sglang` reads them (kept apart: the command line imports it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SglangSchedule:
    """SGLang's scheduler flags that shape only its scheduler (runtimes.names.SGLANG_SCHEDULE). Those that also size
    its pools — --chunked-prefill-size, --max-prefill-tokens, --disable-overlap-schedule — are engine settings
    (runtimes.engine_settings.EngineSettings), read from there by every command, simulate included."""

    schedule_policy: str = "fcfs"  # --schedule-policy
    schedule_conservativeness: float = 1.0  # --schedule-conservativeness
    enable_mixed_chunk: bool = False  # --enable-mixed-chunk
