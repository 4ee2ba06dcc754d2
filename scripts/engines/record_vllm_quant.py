"""Record the bytes vLLM 0.33.0 allocates for a linear layer of each quantized checkpoint format
(tests/fixtures/engines/vllm_quant.json): the layouts kvplan.capacity.weights sizes checkpoints by.

usage: python3 scripts/engines/record_vllm_quant.py VLLM_VENV_PYTHON
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "engines" / "vllm_quant.json"

#: each format as its checkpoints' config.json states it
FORMATS = {
    "awq-4-g128": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"},
    "awq-4-g64": {"quant_method": "awq", "bits": 4, "group_size": 64, "zero_point": True, "version": "gemm"},
    "gptq-4-g128": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True},
    "gptq-4-g128-act": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": True, "sym": True},
    "gptq-8-g128": {"quant_method": "gptq", "bits": 8, "group_size": 128, "desc_act": False, "sym": True},
    "gptq-4-channel": {"quant_method": "gptq", "bits": 4, "group_size": -1, "desc_act": False, "sym": True},
    "fp8-block-128": {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3",
                      "weight_block_size": [128, 128]},
    "fp8-tensor": {"quant_method": "fp8", "activation_scheme": "dynamic"},
    "fbgemm-fp8": {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0, "modules_to_not_convert": []},
    "modelopt-fp8": {"quant_method": "modelopt", "quant_algo": "FP8"},
    "modelopt-nvfp4": {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16},
    "ct-w4a16-g128": {"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {
        "group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "symmetric": True,
                                                       "strategy": "group", "group_size": 128}}}},
    "ct-fp8-channel": {"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {
        "group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "symmetric": True,
                                                       "strategy": "channel"},
                    "input_activations": {"num_bits": 8, "type": "float", "symmetric": True,
                                          "strategy": "token", "dynamic": True}}}},
    "bnb-4bit": {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"},
}  # fmt: skip
SHAPES = [(14336, 4096), (4096, 14336), (1024, 4096), (5760, 2880)]


def main() -> None:
    python = sys.argv[1]
    cases = [
        {"id": f"{name}@{o}x{i}", "format": name, "quantization_config": block, "out": o, "in": i}
        for name, block in FORMATS.items()
        for o, i in SHAPES
    ]
    cases += [  # NVFP4 as vLLM's config code resolves a ModelOpt block (to modelopt_fp4), not by its quant_method
        {"id": f"modelopt-nvfp4-resolved@{o}x{i}", "format": "modelopt-nvfp4-resolved",
         "quantization_config": FORMATS["modelopt-nvfp4"], "out": o, "in": i, "resolve": True}
        for o, i in SHAPES
    ]  # fmt: skip
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(cases, fh)
    run = subprocess.run([python, str(Path(__file__).with_name("vllm_quant_case.py")), fh.name],
                         check=True, capture_output=True, text=True)  # fmt: skip
    for case, answer in zip(cases, json.loads(run.stdout), strict=True):
        case.update({k: v for k, v in answer.items() if k != "id"})
    OUT.write_text(json.dumps({"vllm": "0.33.0", "cases": cases}, indent=1) + "\n")
    print(f"{len(cases)} cases → {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
