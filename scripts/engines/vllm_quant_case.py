"""The weight tensors vLLM 0.33.0 allocates for one linear layer of each quantized checkpoint format: print JSON.

usage (inside the vllm==0.33.0 venv; see scripts/engines/README.md):
    python scripts/engines/vllm_quant_case.py CASES.json   # [{"id", "quantization_config", "out", "in"}]

For each case vLLM reads the config block as it reads a checkpoint's (``get_quantization_config(method)
.from_config(block)``; with ``resolve``, the method picked first by the override probes ModelConfig runs for a
ModelOpt block: NVFP4 is claimed by ``modelopt_fp4``) and builds a ``ReplicatedLinear(in, out)`` with it on the
meta device: the quant method's ``create_weights`` registers the tensors the checkpoint's weights load into
(qweight, qzeros, scales, g_idx, weight_scale_inv, …). The answer is each tensor's shape, dtype and bytes, or
vLLM's error.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import vllm_platform

vllm_platform.configure({"name": "NVIDIA H100 80GB HBM3", "mem": 81559 * 2**20, "cap": (9, 0)})

import torch  # noqa: E402
from vllm.config import VllmConfig, set_current_vllm_config  # noqa: E402
from vllm.distributed import parallel_state  # noqa: E402
from vllm.engine.arg_utils import EngineArgs  # noqa: E402
from vllm.model_executor.layers.linear import ReplicatedLinear  # noqa: E402
from vllm.model_executor.layers.quantization import get_quantization_config  # noqa: E402

MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures", "engines",
                     "configs", "llama-3.1-8b")  # fmt: skip
#: ModelConfig._verify_quantization's override probes that can claim a ModelOpt block, in its order ("modelopt"
#: claims FP8 algorithms only; "modelopt_fp4" NVFP4)
RESOLVE_ORDER = ("modelopt", "modelopt_fp4", "modelopt_mxfp8", "modelopt_mixed")
out = []
model_config = EngineArgs(model=MODEL, skip_tokenizer_init=True).create_model_config()
with set_current_vllm_config(VllmConfig(model_config=model_config)):
    parallel_state.init_distributed_environment(
        world_size=1, rank=0, local_rank=0, distributed_init_method="tcp://127.0.0.1:0", backend="gloo"
    )
    parallel_state.initialize_model_parallel(1, 1, backend="gloo")
    for case in json.load(open(sys.argv[1])):  # noqa: SIM115
        block = case["quantization_config"]
        try:
            method = block["quant_method"]
            if case.get("resolve"):  # as ModelConfig._verify_quantization picks it: the overrides, in its order
                for name in RESOLVE_ORDER:
                    override = get_quantization_config(name).override_quantization_method(block, None)
                    if override is not None:
                        method = override
                        break
            qc = get_quantization_config(method).from_config(block)
            with torch.device("meta"):
                layer = ReplicatedLinear(case["in"], case["out"], bias=False, quant_config=qc,
                                         prefix="model.layers.0.mlp.up_proj", params_dtype=torch.bfloat16)  # fmt: skip
            tensors = {n: {"shape": list(p.shape), "dtype": str(p.dtype).removeprefix("torch."),
                           "bytes": p.numel() * p.element_size()} for n, p in layer.named_parameters()}  # fmt: skip
            out.append({"id": case["id"], "config_class": type(qc).__name__, "tensors": tensors,
                        "bytes": sum(t["bytes"] for t in tensors.values())})  # fmt: skip
        except Exception as exc:  # the refusal is the recorded answer
            out.append({"id": case["id"], "error": f"{type(exc).__name__}: {exc}"[:400]})
print(json.dumps(out, indent=1))
