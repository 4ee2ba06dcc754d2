"""Write the startup lines SGLang 0.5.23 logs about its KV pool for one case, on a machine without a GPU.

usage (inside a venv with sglang==0.5.23; see scripts/engines/README.md):
    python scripts/engines/sglang_log_case.py '{"model": DIR, "gpu": {...}, "available_bytes": A, ...}'

The case runs as in sglang_case.py (SGLang's argument resolution, ModelConfig, the KVCacheConfigurator a
ModelRunner makes) and then ``KVCacheConfigurator.configure`` itself — the sizing and the pools, built on the
meta device, so SGLang's own pool classes log their "KV Cache is allocated" (and "Mamba Cache is allocated",
"Use sliding window memory pool") lines with their own arithmetic — under SGLang's own logger format
(``configure_logger`` with the " TP0" prefix). The ``server_args=`` line is SGLang's ``_server_args_for_logging``.

Three lines are the recorder's, in SGLang's wording, and the index says so: "Load weight begin" / "Load weight
end" carry the free memory the case gives SGLang (before and after the weights) rounded as SGLang prints it, and
the scheduler's summary line carries SGLang's answers (max_total_num_tokens, max_running_requests, context_len,
chunked_prefill_size; its free memory is what the pool leaves, before CUDA graphs would take theirs). "Memory
pool end" is left out: its free memory would be measured after the allocation.
Prints the log on stdout, then one line ``SGLANG_CASE_RESULT {json}`` with SGLang's answers.
"""

from __future__ import annotations

import io
import json
import logging
import os
import sys
import traceback
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import sglang_case as sc  # configures the stand-in platform from sys.argv[1]
import torch
from sglang.srt.entrypoints.engine import _server_args_for_logging
from sglang.srt.runtime_context import get_schedule
from sglang.srt.utils.common import configure_logger

GB = 1 << 30


def record() -> tuple[str, dict[str, Any]]:
    buffer = io.StringIO()
    sa, mc, kvc, model_cls, window = sc.configurator()
    configure_logger(sa, prefix=" TP0")
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logging.Formatter("[%(asctime)s TP0] %(message)s", datefmt="%Y-%m-%d %H:%M:%S"))
    root.addHandler(handler)
    own = logging.getLogger("recorder")  # the recorder's lines, in SGLang's wording
    engine_log = logging.getLogger("sglang.srt.entrypoints.engine")
    engine_log.disabled, engine_log.level = False, logging.INFO
    engine_log.info(f"server_args={_server_args_for_logging(sa)}")
    pre, available = sc.CASE["pre_bytes"], sc.CASE["available_bytes"]
    own.info(f"Load weight begin. avail mem={pre / GB:.2f} GB")
    own.info(f"Load weight end. elapsed=1.00 s, type={model_cls}, dtype={mc.dtype}, avail mem={available / GB:.2f} GB, "
             f"mem usage={(pre - available) / GB:.2f} GB.")  # fmt: skip
    kvc.device = "meta"  # the pools' tensors take no memory; their sizes are SGLang's
    torch.meta = torch.cpu  # type: ignore[attr-defined]  # the pools ask for the device's module (streams)
    result = kvc.configure(pre_model_load_memory=pre / GB)
    sizes = result
    sched = get_schedule()
    left = available / GB - getattr(result.token_to_kv_pool, "mem_usage", 0.0)  # before CUDA graphs
    own.info(f"max_total_num_tokens={sizes.max_total_num_tokens}, chunked_prefill_size={sched.chunked_prefill_size}, "
             f"max_prefill_tokens={sa.max_prefill_tokens}, max_running_requests={sizes.max_running_requests}, "
             f"context_len={mc.context_len}, available_gpu_mem={left:.2f} GB")  # fmt: skip
    lines = [line for line in buffer.getvalue().splitlines() if "Memory pool end" not in line]
    return "\n".join(lines) + "\n", sc.answer(mc, kvc, model_cls, window, sizes)


if __name__ == "__main__":
    try:
        log, answer = record()
        print(log, end="")
        out: dict[str, Any] = {"ok": answer}
    except Exception as exc:
        out = {"error": {"type": type(exc).__name__, "message": str(exc).strip().splitlines()[0][:400]}}
        if os.environ.get("SGLANG_CASE_DEBUG"):
            traceback.print_exc()
    print("SGLANG_CASE_RESULT " + json.dumps(out))
