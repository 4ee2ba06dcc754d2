"""Print the startup lines vLLM 0.33.0 logs about the KV cache, for one recorded case, from vLLM's own code.

usage (inside a venv with vllm==0.33.0):
    python scripts/engines/vllm_log_case.py '{"model": DIR, "gpu": {...}, "kv_cache_memory_bytes": B, ...}'

The case runs exactly as vllm_case.py runs it (vLLM's config, the real model class on the meta device, its
backends, block size, KV cache groups and blocks for the given budget). Then, through vLLM's own logger and
formatter: the API server's `non-default args: {…}` line (vLLM's log_non_default_args over the case's EngineArgs,
less `kv_cache_memory_bytes`: the log reads as a run whose profiling found that KV memory), the engine's config
line as EngineCore.__init__ logs it (`Initializing a V1 LLM engine (v%s) with
config: %s`, vLLM's VllmConfig printed by itself), the line Worker.determine_available_memory logs for that KV
memory (`Available KV cache memory: %s GiB`, vLLM's format_gib), and vLLM's update_kv_cache_capacity, which logs
`GPU KV cache size: N tokens, Maximum concurrency for M tokens per request: C x`. The lines go to stdout between
markers. Where that KV memory is too small for one request of max_model_len, vLLM's own check
(check_enough_kv_cache_memory, inside get_kv_cache_configs) raises its ValueError after the `Available` line, and
the log ends as a refused `vllm serve` does: EngineCore's `EngineCore failed to start.` and the traceback's last
line, `ValueError: To serve at least one request …`.
"""

from __future__ import annotations

import io
import logging
import os
import sys

os.environ["VLLM_LOGGING_LEVEL"] = "INFO"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import vllm_case
from vllm.engine.arg_utils import EngineArgs
from vllm.entrypoints.common.startup import log_non_default_args
from vllm.logger import init_logger
from vllm.utils.mem_utils import format_gib
from vllm.v1.core.kv_cache_utils import update_kv_cache_capacity
from vllm.version import __version__ as VLLM_VERSION


def _startup_lines(vc: object) -> None:
    """The lines vLLM logs before it plans the KV cache: the non-default args, the engine's config, the KV memory."""
    args = {k: vllm_case.CASE[k] for k in vllm_case.ENGINE_ARGS if k in vllm_case.CASE and k != "kv_cache_memory_bytes"}
    log_non_default_args(EngineArgs(model=vllm_case.CASE["model"], **args))
    init_logger("vllm.v1.engine.core").info("Initializing a V1 LLM engine (v%s) with config: %s", VLLM_VERSION, vc)
    init_logger("vllm.v1.worker.gpu_worker").info(
        "Available KV cache memory: %s GiB", format_gib(vllm_case.CASE["kv_cache_memory_bytes"])
    )


def main() -> None:
    captured = io.StringIO()
    plan = vllm_case.get_kv_cache_configs

    def logged_plan(vc: object, *rest: object) -> object:  # the startup lines come before vLLM's own check
        root = logging.getLogger("vllm")  # vLLM's logging is configured by now
        handler = root.handlers[0] if root.handlers else logging.StreamHandler()
        mine = logging.StreamHandler(captured)
        mine.setFormatter(handler.formatter)
        root.addHandler(mine)
        _startup_lines(vc)
        return plan(vc, *rest)

    vllm_case.get_kv_cache_configs = logged_plan
    try:
        vc, sched, _ = vllm_case.build()
    except ValueError as exc:  # vLLM refused: what `vllm serve` prints as it stops
        init_logger("vllm.v1.engine.core").error("EngineCore failed to start.")
        captured.write(f"ValueError: {exc}\n")
    else:
        update_kv_cache_capacity(vc, sched)
    print("VLLM_LOG_BEGIN")
    print(captured.getvalue(), end="")
    print("VLLM_LOG_END")


if __name__ == "__main__":
    main()
