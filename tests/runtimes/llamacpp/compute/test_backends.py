"""ROCm's, Metal's and Vulkan's buffer rules, read from their source (llama.cpp 2026-10-01) and worked by hand: no
recording of them exists here (no such GPU), so these tests pin the reading — each number below is the source's
formula applied by hand, not kvplan's code re-run."""

from __future__ import annotations

import dataclasses

import pytest
from graph_cases import model_of

from kvplan.facts.ggml_types import VULKAN_BUFFER_ALIGNMENT, VULKAN_MAX_BUFFER_SIZE
from kvplan.runtimes.llamacpp import Backend, FlashAttn, LlamaCppSettings, plan
from kvplan.runtimes.llamacpp.compute import CUDA, Placement, device_compute_buffers
from kvplan.runtimes.llamacpp.compute.alloc import DynAllocator, metal_alloc_size
from kvplan.runtimes.llamacpp.compute.sched import METAL, ROCM, VULKAN
from kvplan.runtimes.llamacpp.compute.tensor import Tensor
from kvplan.runtimes.llamacpp.context import fa_missing

MIB = 1 << 20


def _t(op: str, type_: str, ne: tuple[int, int, int, int], srcs: tuple[Tensor | None, ...] = ()) -> Tensor:
    size = {"f32": 4, "f16": 2, "i32": 4}[type_]
    nb = (size, size * ne[0], size * ne[0] * ne[1], size * ne[0] * ne[1] * ne[2])
    return Tensor(op, type_, ne, nb, nb[3] * ne[3], srcs)


def test_metal_flash_attention_allocates_its_scratch_with_its_result() -> None:
    # a prompt batch of 512 tokens, 32 query heads of 128 over 4,096 f16 cells of 8 KV heads, with a mask
    q = _t("NONE", "f32", (128, 512, 32, 1))
    k = _t("NONE", "f16", (128, 4096, 8, 1))  # row stride nb11 = 256 B
    v = _t("NONE", "f16", (128, 4096, 8, 1))
    mask = _t("NONE", "f16", (4096, 512, 1, 1))
    fa = _t("FLASH_ATTN_EXT", "f32", (128, 32, 512, 1), (q, k, v, mask))
    result = 128 * 32 * 512 * 4
    pad = 64 * (256 * 8 + 256 * 8 + 2 * 512)  # OP_FLASH_ATTN_EXT_NCPSG × (K rows + V rows + mask rows)
    blk = (512 // 8) * (4096 // 64)  # one byte per (8 queries × 64 cells) block, padded to 32
    tmp = 4 * (32 * 32 * 1 * 32 * (128 + 2))  # min(512, 32) queries × 32 heads × 32 workgroups × (V + S, M)
    kv_f16 = 2 * 128 * 4096 * 8 * 2  # f16 copies of K and V, reserved even for an f16 cache
    assert metal_alloc_size(fa) == result + pad + blk + tmp + kv_f16 == 42_536_960
    # a single token (the vector kernel's blocks: 1 query × 32 cells)
    q1 = _t("NONE", "f32", (128, 1, 32, 1))
    mask1 = _t("NONE", "f16", (4096, 1, 1, 1))
    fa1 = _t("FLASH_ATTN_EXT", "f32", (128, 32, 1, 1), (q1, k, v, mask1))
    assert metal_alloc_size(fa1) == (
        128 * 32 * 4 + 64 * (256 * 8 * 2 + 2) + 128 + 4 * (1 * 32 * 32 * 130) + kv_f16
    )  # (4,096 / 32 = 128 blocks)
    # sparse attention's index lists where the graph sets n_kv_max (DeepSeek-V3.2's top-k: 2,048 cells)
    fa.param = "n_kv_max=2048"
    assert metal_alloc_size(fa) == 42_536_960 + 4 * 2048 * 512


def test_metal_moe_products_sorts_and_top_k() -> None:
    w = _t("NONE", "f16", (4096, 14336, 8, 1))  # 8 experts
    ids = _t("NONE", "i32", (2, 512, 1, 1))  # 2 used per token, 512 tokens
    x = _t("NONE", "f32", (4096, 2, 512, 1))
    mm = _t("MUL_MAT_ID", "f32", (14336, 2, 512, 1), (w, x, ids))
    assert metal_alloc_size(mm) == mm.nbytes + 4 * 8 + 4 * 8 * 512 + 8 + 256 * 4
    probs = _t("NONE", "f32", (128, 512, 1, 1))
    assert metal_alloc_size(_t("ARGSORT", "i32", (128, 512, 1, 1), (probs,))) == 2 * 128 * 512 * 4
    assert metal_alloc_size(_t("TOP_K", "i32", (8, 512, 1, 1), (probs,))) == 2 * 4 * 128 * 512
    assert metal_alloc_size(probs) == probs.nbytes


def test_vulkan_chunks_a_compute_buffer_at_its_suballocation_block() -> None:
    assert (VULKAN.alignment, VULKAN.buffer_type(0).max_size) == (VULKAN_BUFFER_ALIGNMENT, VULKAN_MAX_BUFFER_SIZE)
    a = DynAllocator(64, VULKAN_MAX_BUFFER_SIZE)
    a.alloc(700 * MIB)
    a.alloc(700 * MIB)  # does not fit the first 1 GiB chunk's 324 MiB left: a second chunk
    assert len(a.chunks) == 2 and a.size == 1400 * MIB
    big = DynAllocator(64, VULKAN_MAX_BUFFER_SIZE)
    big.alloc(3 << 30)  # a tensor larger than the block (a long vocabulary's logits) takes a chunk of its own
    assert big.size == 3 << 30


def test_rocm_is_cudas_rules_unrecorded() -> None:
    assert dataclasses.replace(ROCM, name="CUDA", recorded=True) == CUDA
    assert not (ROCM.recorded or METAL.recorded or VULKAN.recorded)
    assert [b.alignment for b in Backend] == [32, 128, 128, 32, 64]
    assert [b.recorded for b in Backend] == [True, True, False, False, False]


def test_each_backends_flash_attention_kernels() -> None:
    v3 = model_of("real/deepseek-v3.gguf")  # MLA: K 576, V 512
    gemma = model_of("real/gemma-3-12b.gguf")  # 256 / 256
    assert fa_missing(Backend.METAL, v3, "f16", "f16") is None
    assert fa_missing(Backend.METAL, gemma, "q8_0", "q4_0") == (
        "Metal's flash attention reads K and V caches of one type among bf16, f16, f32, q4_0, q4_1, q5_0, q5_1, q8_0"
    )
    assert fa_missing(Backend.VULKAN, gemma, "iq4_nl", "iq4_nl") is None
    assert fa_missing(Backend.VULKAN, gemma, "q4_k", "f16") == "Vulkan's flash attention does not read q4_k caches"
    assert fa_missing(Backend.ROCM, v3, "iq4_nl", "f16") == "ROCm's flash attention does not read iq4_nl caches"
    assert fa_missing(Backend.CPU, v3, "iq4_nl", "f16") is None


@pytest.mark.parametrize("backend", [Backend.METAL, Backend.VULKAN])
def test_a_head_size_without_a_kernel_turns_auto_off_in_the_graph(backend: Backend) -> None:
    """Phi-2's 80-wide heads have kernels everywhere; a model with 100-wide heads (not in Metal's list, not a
    multiple of 8) has none on Metal or Vulkan: -fa auto builds the cache for flash attention, then runs without."""
    model = model_of("tiny/llama-dense.gguf")
    layers = tuple(dataclasses.replace(x, head_k=100, head_v=100) for x in model.layers)
    odd = dataclasses.replace(model, layers=layers)
    p = plan(odd, LlamaCppSettings(n_ctx=4096, flash_attn=FlashAttn.AUTO, backend=backend))
    assert p.context.fa_off_in_graph.startswith(f"{backend.display} has no flash-attention kernel for K/V heads of 100")
    assert any(f"{backend.display}'s kernels read from" in n for n in p.notes)


def test_metal_places_the_graph_with_its_own_scratch_and_says_it_is_not_recorded() -> None:
    model = model_of("real/llama-3.1-8b.gguf")
    settings = LlamaCppSettings(n_ctx=131072, flash_attn=FlashAttn.ON)
    where = Placement(1, (0,) * (model.n_layer_all + 1))
    got = {}
    for backend, rules in ((Backend.CUDA, CUDA), (Backend.METAL, METAL)):
        p = plan(model, dataclasses.replace(settings, backend=backend))
        buffers = device_compute_buffers(p, where, rules)
        assert buffers is not None
        got[backend] = buffers[0]
    # at 131,072 cells the flash-attention op's f16 K and V scratch (2 × 131,072 × 8 × 128 × 2 B = 512 MiB) outgrows
    # the logits CUDA's buffer peaks at
    assert got[Backend.METAL].bytes > got[Backend.CUDA].bytes + 400 * MIB
    assert got[Backend.METAL].parts[0][0] == "attention"
    assert "Metal" not in got[Backend.CUDA].basis and "MTL rules derived from its source" in got[Backend.METAL].basis


def test_an_amd_preset_plans_with_rocms_rules_and_every_format_says_so() -> None:
    from helpers import kv

    doc = kv("fit", "llama-3.1-8b", "--gpu", "MI300X", "-c", "8192", "--fit", "off", "-o", "json").json()
    assert doc["llamacpp"]["runtime"]["backend"] == "rocm"
    assert all("ROCm's rules derived from ggml-cuda (HIP) source, not recorded" in c["basis"]
               for c in doc["llamacpp"]["compute"])  # fmt: skip
    table = kv("fit", "llama-3.1-8b", "--gpu", "MI300X", "-c", "8192", "--fit", "off").stdout
    assert "rocm buffer rules, derived from its source, not recorded" in table
    cuda = kv("fit", "llama-3.1-8b", "--gpu", "H100-80GB", "-c", "8192", "--fit", "off", "-o", "json").json()
    assert cuda["llamacpp"]["runtime"]["backend"] == "cuda"
    # --backend overrides the preset's
    metal = kv("fit", "llama-3.1-8b", "--gpu", "MI300X", "--backend", "metal", "-c", "8192", "--fit", "off",
               "-o", "json").json()  # fmt: skip
    assert metal["llamacpp"]["runtime"]["backend"] == "metal"
