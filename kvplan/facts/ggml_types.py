"""GGML tensor types: block size and bytes per block.

Kept here (not imported from the ``gguf`` package) so the estimate path does not pay for numpy;
``tests/test_ggml_types.py`` proves this table equals ``gguf.GGML_QUANT_SIZES``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GGMLType:
    id: int
    name: str
    block_elements: int
    block_bytes: int

    def row_bytes(self, n_elements: int) -> int:
        """ggml_row_size: bytes of a row of ``n_elements`` values (integer math, as ggml)."""
        return self.block_bytes * n_elements // self.block_elements

    @property
    def is_quantized(self) -> bool:
        return self.block_elements > 1


#: MATRIX_ROW_PADDING (ggml-cuda/common.cuh): a CUDA buffer pads a quantized tensor's last row to a multiple of
#: this many values (ggml_backend_cuda_buffer_type_get_alloc_size), weights, caches and compute tensors alike
CUDA_MATRIX_ROW_PADDING = 512
#: ggml_backend_cuda_buffer_type_get_alignment (the HIP / ROCm build of the same source too)
CUDA_BUFFER_ALIGNMENT = 128
#: ggml_backend_metal_buffer_type_{shared,private,mapped}_get_alignment (ggml-metal.cpp): 32
METAL_BUFFER_ALIGNMENT = 32
#: ggml_backend_vk_buffer_type_get_alignment (ggml-vulkan.cpp) is the device's minStorageBufferOffsetAlignment:
#: 4 on AMD's drivers, 16 on NVIDIA's, up to 64 on Intel's; kvplan takes the largest (a source reading: the
#: device's own value may allocate a few bytes less per tensor)
VULKAN_BUFFER_ALIGNMENT = 64
#: ggml_backend_vk_buffer_type_get_max_size: the suballocation block, 1 GiB unless GGML_VK_SUBALLOCATION_BLOCK_SIZE
#: (or the device's maxMemoryAllocationSize, when smaller) says otherwise; a compute buffer is allocated in chunks
#: of at most this (ggml_dyn_tallocr's max_chunk_size)
VULKAN_MAX_BUFFER_SIZE = 1 << 30


def cuda_alloc_size(t: GGMLType, ne0: int, nbytes: int) -> int:
    """ggml_backend_cuda_buffer_type_get_alloc_size ([TAG_ALLOC_SIZE_EXPAND]): a tensor's bytes, a quantized one's
    last row padded to a multiple of CUDA_MATRIX_ROW_PADDING values so that the kernels may read past its end."""
    if t.is_quantized and ne0 % CUDA_MATRIX_ROW_PADDING:
        nbytes += t.row_bytes(CUDA_MATRIX_ROW_PADDING - ne0 % CUDA_MATRIX_ROW_PADDING)
    return nbytes


_TABLE = [
    (0, "f32", 1, 4),
    (1, "f16", 1, 2),
    (2, "q4_0", 32, 18),
    (3, "q4_1", 32, 20),
    (6, "q5_0", 32, 22),
    (7, "q5_1", 32, 24),
    (8, "q8_0", 32, 34),
    (9, "q8_1", 32, 36),
    (10, "q2_k", 256, 84),
    (11, "q3_k", 256, 110),
    (12, "q4_k", 256, 144),
    (13, "q5_k", 256, 176),
    (14, "q6_k", 256, 210),
    (15, "q8_k", 256, 292),
    (16, "iq2_xxs", 256, 66),
    (17, "iq2_xs", 256, 74),
    (18, "iq3_xxs", 256, 98),
    (19, "iq1_s", 256, 50),
    (20, "iq4_nl", 32, 18),
    (21, "iq3_s", 256, 110),
    (22, "iq2_s", 256, 82),
    (23, "iq4_xs", 256, 136),
    (24, "i8", 1, 1),
    (25, "i16", 1, 2),
    (26, "i32", 1, 4),
    (27, "i64", 1, 8),
    (28, "f64", 1, 8),
    (29, "iq1_m", 256, 56),
    (30, "bf16", 1, 2),
    (34, "tq1_0", 256, 54),
    (35, "tq2_0", 256, 66),
    (39, "mxfp4", 32, 17),
    (40, "nvfp4", 64, 36),
    (41, "q1_0", 128, 18),
    (42, "q2_0", 64, 18),
]

GGML_TYPES_BY_ID: dict[int, GGMLType] = {t[0]: GGMLType(*t) for t in _TABLE}
GGML_TYPES_BY_NAME: dict[str, GGMLType] = {t.name: t for t in GGML_TYPES_BY_ID.values()}

#: Cache types llama.cpp's CLI accepts for -ctk / -ctv (common/arg.cpp), in its order.
LLAMA_CPP_CACHE_TYPES: tuple[str, ...] = (
    "f32",
    "f16",
    "bf16",
    "q8_0",
    "q4_0",
    "q4_1",
    "iq4_nl",
    "q5_0",
    "q5_1",
)


def cache_type(name: str) -> GGMLType:
    """The GGML type for a llama.cpp cache type name (case-insensitive)."""
    key = name.strip().lower()
    if key not in LLAMA_CPP_CACHE_TYPES:
        raise ValueError(f"unknown cache type {name!r}; llama.cpp accepts {', '.join(LLAMA_CPP_CACHE_TYPES)}")
    return GGML_TYPES_BY_NAME[key]
