"""The paged serving engines: shared types (paged.py), per-layer layout (layout.py), one module per engine."""

from kvplan.runtimes.engine_settings import EngineSettings
from kvplan.runtimes.engines.layout import capacity, layout
from kvplan.runtimes.engines.paged import (
    CacheSpec,
    Capacity,
    Engine,
    EngineLayout,
    KVGroup,
    LayerRef,
    pipeline_stages,
)
from kvplan.runtimes.engines.sglang import ENGINE as SGLANG
from kvplan.runtimes.engines.trtllm import ENGINE as TRTLLM
from kvplan.runtimes.engines.vllm import ENGINE as VLLM
from kvplan.runtimes.names import CACHE_DTYPE_BYTES

#: every engine kvplan plans for, by canonical name
ENGINES: dict[str, Engine] = {e.name: e for e in (VLLM, SGLANG, TRTLLM)}

__all__ = [
    "CACHE_DTYPE_BYTES",
    "ENGINES",
    "SGLANG",
    "TRTLLM",
    "VLLM",
    "CacheSpec",
    "Capacity",
    "Engine",
    "EngineLayout",
    "EngineSettings",
    "KVGroup",
    "LayerRef",
    "capacity",
    "layout",
    "pipeline_stages",
]
