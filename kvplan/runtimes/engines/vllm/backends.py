"""Which attention backend vLLM 0.33 picks, and the kernel block sizes that decide its KV block size.

A reading of ``vllm/platforms/cuda.py`` (``_get_backend_priorities``: the priority list per GPU generation; the
first backend whose ``validate_configuration`` accepts the layer wins) and of each backend's
``get_supported_kernel_block_sizes`` / ``get_preferred_block_size`` (``vllm/v1/attention/backends``), kept to
the cases kvplan sizes. Every row is checked against vLLM's own selector in the recorded cases
(tests/fixtures/engines/vllm.json, ``backends``).

The block size then follows ``Platform.update_block_size_for_backend`` phase 1: the backend's preferred size for
the default of 16 — 16 when the backend takes multiples of 16, else its smallest kernel block (FlashMLA 64,
FlashInfer-MLA 32).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_BLOCK_SIZE = 16  # CacheConfig.DEFAULT_BLOCK_SIZE


@dataclass(frozen=True)
class Backend:
    """An attention backend as it matters for sizing: its kernel block sizes."""

    name: str
    kernel_blocks: tuple[int, ...]  # the supported kernel block sizes (the smallest first)
    multiple_of: bool  # any multiple of kernel_blocks[0] (vLLM MultipleOf), else exactly these sizes
    reason: str  # why vLLM picks it here

    def supports(self, block: int) -> bool:
        """AttentionBackend.supports_block_size: a multiple of a kernel block (hybrid blocks split into them)."""
        return any(block % k == 0 for k in self.kernel_blocks)

    def preferred(self, default: int = DEFAULT_BLOCK_SIZE) -> int:
        """AttentionBackend.get_preferred_block_size."""
        return default if self.supports(default) else min(self.kernel_blocks)

    @property
    def smallest(self) -> int:
        return min(self.kernel_blocks)


def _multiple(name: str, base: int, reason: str) -> Backend:
    return Backend(name, (base,), True, reason)


def _exact(name: str, sizes: tuple[int, ...], reason: str) -> Backend:
    return Backend(name, sizes, False, reason)


#: head sizes FlashInfer's kernels take (FlashInferBackend.get_supported_head_sizes)
FLASHINFER_HEADS = (64, 128, 256, 512)
#: head sizes the Triton-image-mask composites route (create_composite_attention_backend head_sizes)
COMPOSITE_HEADS = (256, 512)


def attention_backend(
    capability: tuple[int, int] | None, quantized: bool, head_size: int, sinks: bool, mm_prefix: bool
) -> Backend:
    """A standard (non-MLA) attention layer's backend: the first of the GPU generation's priority list whose
    validate_configuration accepts the layer. FlashAttention 4 counts as unavailable (the x86_64 wheel's
    vllm_flash_attn ships FA2 and FA3), so image-prefix attention (Gemma 3) falls to the Triton composites."""
    major = capability[0] if capability else 9
    if mm_prefix:  # bidirectional image-prefix attention: FlashAttention needs FA4 for it, FlashInfer has none
        if major == 9 and head_size in COMPOSITE_HEADS:
            return _multiple("TRITON_FLASH_ATTN", 16, "Hopper, image-prefix attention: Triton + FlashAttention 3")
        if major == 10 and head_size in COMPOSITE_HEADS:
            return _exact("TRITON_FLASHINFER", (64,), "Blackwell, image-prefix attention: Triton + FlashInfer")
        return _multiple("TRITON_ATTN", 16, f"image-prefix attention, head size {head_size}: Triton")
    if sinks:  # attention sinks (gpt-oss): FlashAttention 3 only, else Triton
        if major == 9:
            return _multiple("FLASH_ATTN", 16, "Hopper: FlashAttention 3 (takes attention sinks)")
        return _multiple("TRITON_ATTN", 16, "attention sinks need FlashAttention 3 (Hopper): Triton")
    if major == 10:
        if head_size in FLASHINFER_HEADS:
            return _exact("FLASHINFER", (16, 32, 64), "Blackwell (sm100): FlashInfer first")
        return _multiple("FLASH_ATTN", 16, f"Blackwell, head size {head_size} (not FlashInfer's): FlashAttention")
    if quantized and major != 9:
        if head_size in FLASHINFER_HEADS:
            return _exact("FLASHINFER", (16, 32, 64), "fp8 KV needs FlashAttention 3 (Hopper): FlashInfer")
        return _multiple("TRITON_ATTN", 16, "fp8 KV: Triton")
    if head_size <= 256 and head_size % 8 == 0:
        version = "3" if major == 9 else "2"
        return _multiple("FLASH_ATTN", 16, f"FlashAttention {version} (sm{major}x)")
    return _multiple("TRITON_ATTN", 16, f"head size {head_size}: Triton")


def mla_backend(capability: tuple[int, int] | None, quantized: bool) -> Backend:
    """An MLA layer's backend (dense MLA)."""
    major = capability[0] if capability else 9
    if major == 10:
        return _exact("FLASHINFER_MLA", (32, 64), "Blackwell (sm100): FlashInfer-MLA first")
    if major == 9:
        if quantized:
            return _exact("FLASHMLA", (64,), "Hopper with an fp8 KV cache: FlashMLA (FlashAttention-MLA is bf16 only)")
        return _multiple("FLASH_ATTN_MLA", 16, "Hopper (sm90): FlashAttention-MLA first")
    return _multiple("TRITON_MLA", 16, f"sm{major}x: the Hopper and Blackwell MLA kernels do not run here")


def sparse_mla_backend(capability: tuple[int, int] | None, quantized: bool, heads_per_rank: int) -> Backend:
    """DeepSeek-V3.2's sparse MLA layer's backend. FLASHMLA_SPARSE stores an fp8 cache packed as fp8_ds_mla
    (656 B per token); FlashInfer's sparse MLA stores the raw fp8 latent (576 B)."""
    major = capability[0] if capability else 9
    if major == 10:
        if quantized:
            return _multiple("FLASHINFER_MLA_SPARSE", 32, "Blackwell with an fp8 KV cache: FlashInfer sparse MLA")
        if heads_per_rank <= 16:  # FlashAttention-4 sparse MLA would come first; FA4 is not in the wheel
            return _multiple("FLASHINFER_MLA_SPARSE", 32, "Blackwell, ≤ 16 heads per GPU: FlashInfer sparse MLA")
        return _exact("FLASHMLA_SPARSE", (64,), "Blackwell, > 16 heads per GPU: FlashMLA sparse")
    if quantized:
        return _exact("FLASHMLA_SPARSE", (64,), "Hopper with an fp8 KV cache: FlashMLA sparse (fp8_ds_mla)")
    return _multiple("FLASH_ATTN_MLA_SPARSE", 64, "Hopper: FlashAttention sparse MLA")


#: the DeepSeek-V3.2 indexer's own backend (vllm/v1/attention/backends/mla/indexer.py: [64] on CUDA)
INDEXER = _exact("DEEPSEEK_V32_INDEXER", (64,), "the lightning indexer's kernel")


def preferred_block_size(backends: list[Backend], default: int = DEFAULT_BLOCK_SIZE) -> int:
    """Platform._preferred_block_size_for_backends: the smallest size every backend takes."""
    if len(backends) == 1:
        return backends[0].preferred(default)
    if all(b.supports(default) for b in backends):
        return default
    candidates = sorted({math.lcm(*combo) for combo in _products([list(b.kernel_blocks) for b in backends])})
    for candidate in candidates:
        if all(b.supports(candidate) for b in backends):
            return candidate
    raise ValueError("the attention backends share no block size")


def _products(lists: list[list[int]]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()]
    for items in lists:
        out = [(*combo, item) for combo in out for item in items]
    return out
