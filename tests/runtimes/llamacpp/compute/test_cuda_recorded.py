"""kvplan's CUDA rules (kvplan/runtimes/llamacpp/compute/sched.py CUDA, cuda.py) against llama.cpp's own compute
buffers on a real GPU: tests/fixtures/oracle/compute_cuda.json, written by scripts/oracle/cuda/record.sh on an
H200 (the single-device placements of compute_devices.json — partial offload, -ncmoe / -cmoe, -nkvo, quantized
caches, -fa off — measured as llama.cpp's fit measures them): the weights, KV and compute of the GPU and of the
host. Before the CUDA fusions' allocation dependencies and the padded quantized rows were ported, 60 of these 122
compute buffers were equal and 57 weight columns; now every column of every case is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fit_projection import projected_columns
from gguf_files import sparse_fit_model
from helpers import FIXTURES

import kvplan

RECORDED = FIXTURES / "oracle" / "compute_cuda.json"
DOC: dict[str, Any] = json.loads(RECORDED.read_text()) if RECORDED.exists() else {"cases": []}
CASES = [c for c in DOC["cases"] if "error" not in c["bytes"]]
#: the GPU's memory as the recording names it (nvidia-smi: "NVIDIA H200, 143771 MiB, ..."): flags given, it
#: changes no projection; it only has to hold them
_MIB = next((int(p.split()[0]) for p in str(DOC.get("gpu", "")).split(",") if p.strip().endswith("MiB")), 143_771)


def test_the_recording_is_there() -> None:
    assert len(CASES) == len(DOC["cases"]) == 122 and "H200" in DOC["gpu"]


@pytest.mark.parametrize("case", CASES, ids=[f"{c['model']}-{c['type']}-{' '.join(c['args'])}" for c in CASES])
def test_cuda_compute_equals_llama_cpp(case: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> None:
    folder: Path = tmp_path_factory.getbasetemp() / "cuda-models"
    folder.mkdir(exist_ok=True)
    path = folder / f"{case['model']}-{case['type']}.gguf"
    if not path.exists():
        sparse_fit_model(path, case["model"], case["type"])
    mine = projected_columns(kvplan.load_model(str(path)), [_MIB], case["args"], backend="cuda")
    # llama.cpp's model, context and compute columns: the weights with CUDA's padded rows and 128-byte alignment,
    # the caches (a host layer's in a CPU buffer), the compute buffers
    assert {"GPU0": mine["RPC0"], "Host": mine["Host"]} == {
        "GPU0": case["bytes"]["CUDA0"],
        "Host": case["bytes"]["Host"],
    }
