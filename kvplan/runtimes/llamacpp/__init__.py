"""llama.cpp, byte-exact: context derivation (context.py), memory modules (memory.py), the plan (plan.py)."""

from kvplan.runtimes.llamacpp.context import LlamaCppSettings, derive_context
from kvplan.runtimes.llamacpp.memory import plan, plan_mtp_draft
from kvplan.runtimes.llamacpp.plan import Backend, CacheKind, CachePlan, Context, FlashAttn, MemoryPlan

__all__ = [
    "Backend",
    "CacheKind",
    "CachePlan",
    "Context",
    "FlashAttn",
    "LlamaCppSettings",
    "MemoryPlan",
    "derive_context",
    "plan",
    "plan_mtp_draft",
]
