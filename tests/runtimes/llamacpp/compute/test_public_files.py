"""The two GGUFs the public CUDA logs loaded (tests/fixtures/logs/llamacpp/public/), reconstructed from their logs
(scripts/oracle/reconstruct_public_gguf.py): llama.cpp's own KV and compute buffers on the CPU backend for them
(tests/fixtures/oracle/compute_public.json, scripts/oracle/record_public_gguf.py) equal kvplan's — the early
DeepSeek-V2 conversion (no MLA keys: K and V decompressed by attn_kv_b, attention as MHA) is the graph the public
log showed kvplan had wrong — and on the logs' own CUDA GPUs the model, KV and compute buffers each log prints
equal kvplan's placement, but one (said below)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from graph_cases import ORACLE, model_of, settings_of
from helpers import FIXTURES

from kvplan.analysis.explain import settings_of as log_settings
from kvplan.capacity.llamacpp import Target
from kvplan.capacity.weights import model_weights
from kvplan.runtimes.llamacpp import plan
from kvplan.runtimes.llamacpp.compute import cpu_compute_buffer
from kvplan.sources.llamacpp_log import read_log

CASES: list[dict[str, Any]] = json.loads((ORACLE / "compute_public.json").read_text())["cases"]
PUBLIC = FIXTURES / "logs" / "llamacpp" / "public"
INDEX: dict[str, dict[str, Any]] = json.loads((PUBLIC / "index.json").read_text())["logs"]
MIB = 1 << 20


def test_the_recording_covers_both_files() -> None:
    assert {c["file"] for c in CASES} == {"deepseek-coder-v2-lite-q4_0-early", "gpt-oss-20b-mxfp4"}
    assert len(CASES) >= 20 and not any("error" in c for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['file']}-{json.dumps(c['params'], sort_keys=True)}")
def test_kv_and_compute_equal_llama_cpp(case: dict[str, Any]) -> None:
    p = plan(model_of(f"FILE:{case['file']}"), settings_of(case["params"]))
    compute = cpu_compute_buffer(p)
    assert p.total_bytes == case["context_bytes"]
    assert compute is not None and compute.bytes == case["compute_bytes"], case["params"]


def _buffers(name: str) -> dict[str, str]:
    return {f"{b.buffer} {b.kind}": b.mib for b in read_log(str(PUBLIC / name)).buffers}


@pytest.mark.parametrize("name", sorted(INDEX))
def test_the_cuda_buffers_each_public_log_prints(name: str) -> None:
    """Each log's run re-placed by kvplan on its GPU (the free memory the log states, the --n-cpu-moe its
    repository records, CUDA's rules, the log's n_outputs_max): the GPU's model buffer, its KV buffers and the
    GPU's and pinned host memory's compute buffers, as llama.cpp printed them (the run that failed prints no
    compute buffer). The host's mapped model buffer is a range of the file, whose tensor order the log does not
    show: not compared."""
    entry, log = INDEX[name], read_log(str(PUBLIC / name))
    model = model_of(f"FILE:{entry['file']}")
    placed = Target(model, model_weights(model, None, None), (log.devices[0].free_mib * MIB,),
                    n_cpu_moe=entry["n_cpu_moe"]).place(log_settings(log, model))  # fmt: skip
    gpu, host, printed = placed.gpus[0], placed.host, _buffers(name)
    mine = {"CUDA0 model": gpu.weight_bytes, "CUDA0 compute": gpu.compute_bytes,
            "CUDA_Host compute": host.compute_bytes}  # fmt: skip
    kv_printed = sum(float(b.mib) for b in log.buffers if b.kind == "KV")
    if log.failed:
        assert log.failed[1] == gpu.kv_bytes and not placed.fits
    else:
        assert f"{kv_printed:.2f}" == f"{gpu.kv_bytes / MIB:.2f}"
    agree = {k: f"{mine[k] / MIB:.2f}" == printed[k] for k in mine if k in printed}
    assert agree == {k: k not in entry.get("cuda_differs", {}) for k in agree}, (mine, printed)
