"""cuda.py and CUDA's buffer rules, by hand and against the recordings: the MoE fusions' allocation dependencies are
what make a MoE model's GPU buffer equal llama.cpp's (switched off, the recorded Qwen3-30B-A3B at -c 4096 is
20,209,664 B short, at the fit's -c 8192 42,766,336 B); a dense model has none; a quantized tensor's last row is
padded to 512 values, and a weight in a CUDA buffer aligned to 128 bytes."""

from __future__ import annotations

import dataclasses
import json

import pytest
from graph_cases import ORACLE, model_of, settings_of

from kvplan.runtimes.llamacpp import Backend, FlashAttn, LlamaCppSettings, plan
from kvplan.runtimes.llamacpp.compute import CUDA, Placement, device_compute_buffers
from kvplan.runtimes.llamacpp.compute.alloc import BufferType
from kvplan.runtimes.llamacpp.compute.ggml import is_contiguous, new, permute, reshape, view
from kvplan.runtimes.llamacpp.context import cuda_fa_missing
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
    buft = BufferType("CUDA0", 128, cuda_rows=True)
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


def test_fa_auto_without_a_cuda_kernel_runs_the_graph_without_it() -> None:
    """llama.cpp's tiny DeepSeek-2 has one query head per latent KV head: CUDA has no flash-attention kernel for
    576/512 without grouped queries, so -fa auto's probe finds the op on the CPU and turns it off for the graph
    (the cache is already built). MLA caches have no V, so the layout is the same either way, and the GPU and
    host buffers are the ones llama.cpp recorded on the H200 with -fa off."""
    case = next(
        c
        for c in GRAPH
        if c["gguf"] == "tiny/deepseek2-moe.gguf" and c["params"]["fa"] == 0 and c["params"]["type_k"] == "f16"
    )
    model = model_of("tiny/deepseek2-moe.gguf")
    auto = dict(case["params"], fa=1)
    settings = dataclasses.replace(settings_of(auto), flash_attn=FlashAttn.AUTO, backend=Backend.CUDA)
    p = plan(model, settings)
    assert p.context.fa_off_in_graph.startswith("CUDA has no flash-attention kernel for K/V heads of 576/512")
    assert any("runs the graph without it" in n for n in p.notes)
    got = device_compute_buffers(p, Placement(1, (0,) * (model.n_layer_all + 1)), CUDA)
    assert got is not None
    assert [got[0].bytes, got[1].bytes] == [case["bytes"]["CUDA0"][2], case["bytes"]["CUDA_Host"][2]]
    on_cpu = plan(model, dataclasses.replace(settings, backend=Backend.CPU))  # the CPU has the kernel
    assert on_cpu.context.fa_off_in_graph == "" and on_cpu.context.flash_attn is FlashAttn.ON


def test_cuda_fa_kernels_by_head_size_and_cache_type() -> None:
    v3 = model_of("real/deepseek-v3.gguf")  # MLA 576/512, 128 query heads on the latent head
    assert cuda_fa_missing(v3, "f16", "f16") is None and cuda_fa_missing(v3, "q8_0", "q8_0") is None
    assert cuda_fa_missing(model_of("real/gpt-oss-20b.gguf"), "q4_0", "q4_1") is None  # 64/64
    assert cuda_fa_missing(model_of("real/gemma-3-12b.gguf"), "f16", "f16") is None  # 256/256
    assert cuda_fa_missing(v3, "iq4_nl", "f16") == "CUDA's flash attention does not read iq4_nl caches"
    # quantized V forces flash attention on (llama.cpp: "required for quantized V cache"): no probe then
    forced = plan(model_of("tiny/deepseek2-moe.gguf"), LlamaCppSettings(n_ctx=4096, type_k="q8_0", type_v="q8_0",
                                                                        backend="cuda"))  # fmt: skip
    assert forced.context.fa_off_in_graph == "" and forced.context.fa_on_cpu.startswith("CUDA has no")
    assert any("runs it on the CPU" in n and "not modelled" in n for n in forced.notes)
