"""cuda.py and CUDA's buffer rules, by hand and against the recordings: the MoE fusions' allocation dependencies are
what make a MoE model's GPU buffer equal llama.cpp's (switched off, the recorded Qwen3-30B-A3B at -c 4096 is
20,209,664 B short, at the fit's -c 8192 42,766,336 B); a dense model has none; a quantized tensor's last row is
padded to 512 values, and a weight in a CUDA buffer aligned to 128 bytes."""

from __future__ import annotations

import dataclasses
import json

import pytest
from graph_cases import ORACLE, model_of, settings_of

from kvplan.runtimes.llamacpp import plan
from kvplan.runtimes.llamacpp.compute import CUDA, Placement, device_compute_buffers
from kvplan.runtimes.llamacpp.compute.alloc import BufferType
from kvplan.runtimes.llamacpp.compute.ggml import is_contiguous, new, permute, reshape, view
from kvplan.sources.gguf_reader import TensorInfo
from kvplan.sources.gguf_source import _cuda_extra

GRAPH = json.loads((ORACLE / "compute_cuda_graph.json").read_text())["cases"]


def _recorded(gguf: str) -> dict[str, object]:
    return next(c for c in GRAPH if c["gguf"] == gguf and c["params"]["fa"] == 1 and c["params"]["type_k"] == "f16")


def _gpu_bytes(case: dict[str, object], rules: object = CUDA) -> int:
    model = model_of(str(case["gguf"]))
    p = plan(model, settings_of(case["params"]))  # type: ignore[arg-type]
    got = device_compute_buffers(p, Placement(1, (0,) * (model.n_layer_all + 1)), rules)  # type: ignore[arg-type]
    assert got is not None
    return got[0].bytes


@pytest.mark.parametrize(
    ("gguf", "short_without"),
    # Qwen3-30B-A3B: softmax top-k routing and the weighted sum, both fused; DeepSeek-V3: expert groups leave only
    # the weighted sum; Llama 3.1 8B: nothing to fuse
    [("real/qwen3-30b-a3b.gguf", 20_209_664), ("real/deepseek-v3.gguf", 536_576), ("real/llama-3.1-8b.gguf", 0)],
)
def test_the_fusion_dependencies_carry_the_moe_cases(gguf: str, short_without: int) -> None:
    case = _recorded(gguf)
    recorded = case["bytes"]["CUDA0"][2]  # type: ignore[index]
    assert _gpu_bytes(case) == recorded
    assert recorded - _gpu_bytes(case, dataclasses.replace(CUDA, fusion_deps=False)) == short_without


def test_a_quantized_row_is_padded_to_512_values() -> None:
    buft = BufferType("CUDA0", 128, row_padding=512)
    q8 = new("q8_0", (576, 4096, 1, 1), "CPY", ())  # an MLA K cache's rows: 576 values, 612 B
    assert buft.alloc_size(q8) == 612 * 4096 + 448 * 34 // 32  # one last row of 448 more values
    assert buft.alloc_size(new("q8_0", (1024, 8, 1, 1), "CPY", ())) == 1088 * 8  # a multiple of 512: none
    assert buft.alloc_size(new("f16", (576, 8, 1, 1), "CPY", ())) == 576 * 2 * 8  # not quantized: none


def test_a_weights_cuda_extra_is_its_padding_then_128_byte_alignment() -> None:
    # gpt-oss's expert rows: 2880 MXFP4 values (1,530 B); 192 values more (102 B), then to a multiple of 128
    t = TensorInfo("blk.0.ffn_down_exps.weight", 39, (2880, 2880, 32), 0)
    size = t.n_bytes + 102
    assert _cuda_extra(t) == -(-size // 128) * 128 - t.n_bytes == 128  # (the tensor itself: 128-byte multiple)
    assert _cuda_extra(TensorInfo("blk.0.attn_q.weight", 12, (4096, 4096), 0)) == 0  # q4_K, 4096 wide: none
    assert _cuda_extra(TensorInfo("blk.0.attn_norm.weight", 0, (2880,), 0)) == 0  # f32, 11,520 B: none
    assert _cuda_extra(TensorInfo("blk.0.attn_sinks.weight", 0, (24,), 0)) == 128 - 96  # f32, 96 B


def test_is_contiguous_skips_dimensions_of_one() -> None:
    t = new("f32", (8, 4, 1, 1), "ADD", ())
    assert is_contiguous(t) and is_contiguous(reshape(t, 8, 1, 4))
    assert not is_contiguous(permute(t, 1, 0, 2, 3))
    assert not is_contiguous(view(t, (4, 4), (t.nb[1],), 0))  # rows of 4 out of 8
