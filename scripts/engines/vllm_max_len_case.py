"""vLLM 0.33.0's own max_model_len for a list of configs, on a machine without a GPU: print JSON.

usage (inside the vllm==0.33.0 venv; see scripts/engines/README.md):
    python scripts/engines/vllm_max_len_case.py CASES.json   # [{"id", "model": DIR, "max_model_len", ...}]

For each case vLLM builds its ModelConfig as `vllm serve` does (`EngineArgs(...).create_model_config()`: the
config read through transformers with vLLM's rope patching, the architecture's convertor, the tokenizer_config.json
beside it, `_get_and_verify_max_len`), and the answer is `model_config.max_model_len` or the ValueError vLLM raises.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import vllm_platform

vllm_platform.configure({"name": "NVIDIA H100 80GB HBM3", "mem": 81559 * 2**20, "cap": (9, 0)})

from vllm.engine.arg_utils import EngineArgs  # noqa: E402

out = []
for case in json.load(open(sys.argv[1])):  # noqa: SIM115
    args = {k: case[k] for k in ("max_model_len", "disable_sliding_window") if k in case}
    try:
        mc = EngineArgs(model=case["model"], skip_tokenizer_init=True, **args).create_model_config()
        out.append({"id": case["id"], "max_model_len": mc.max_model_len})
    except Exception as exc:
        out.append({"id": case["id"], "error": f"{type(exc).__name__}: {exc}"[:600]})
print(json.dumps(out, indent=1))
