"""vLLM: its defaults, backends, per-layer KV and state specs, groups and capacity (a port of its own planning)."""

from kvplan.runtimes.engines.vllm.engine import ENGINE, VLLM

__all__ = ["ENGINE", "VLLM"]
