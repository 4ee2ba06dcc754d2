"""Model weights: exact from a GGUF's tensor infos, or estimated from a parameter count × bits per weight.

Estimates use llama.cpp's own figures: the pure block types' exact bits per weight (GGML type sizes), and
for the K-quant mixes the model sizes llama.cpp's quantize tool lists for Llama-3-8B (tools/quantize,
8.03 B parameters, sizes in GiB), which include the higher-precision embedding and output tensors.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.errors import BadInputError
from kvplan.ggml_types import GGML_TYPES_BY_NAME

_LLAMA3_8B_PARAMS = 8_030_261_248
#: tools/quantize QUANT_OPTIONS sizes on Llama-3-8B, GiB
_MIX_GIB = {"q2_k": 2.96, "q3_k_s": 3.41, "q3_k_m": 3.74, "q3_k_l": 4.03, "q4_k_s": 4.37, "q4_k_m": 4.58,
            "q5_k_s": 5.21, "q5_k_m": 5.33, "q6_k": 6.14}  # fmt: skip
#: ftype names that are one block type throughout
_PURE = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl", "iq4_xs", "mxfp4", "q1_0",
         "q2_0")  # fmt: skip


#: serving-engine checkpoint formats (quantized linear weights): fp8 / int8 with per-tensor or per-channel scales;
#: NVFP4 = e2m1 + one fp8 scale per 16 values; AWQ / GPTQ int4 = 4 bits + an fp16 scale and a 4-bit zero per
#: group of 128. Embeddings, norms and often the output head stay bf16, which the estimate leaves out.
_ENGINE_FORMATS = {"fp8": 8.0, "int8": 8.0, "nvfp4": 4.5, "awq": 4 + 20 / 128, "gptq": 4 + 20 / 128}


def bits_per_weight(name: str) -> float:
    key = name.strip().lower()
    if key in _ENGINE_FORMATS:
        return _ENGINE_FORMATS[key]
    if key in _MIX_GIB:
        return _MIX_GIB[key] * (1 << 30) * 8 / _LLAMA3_8B_PARAMS
    if key in _PURE:
        t = GGML_TYPES_BY_NAME[key]
        return t.block_bytes * 8 / t.block_elements
    known = ", ".join(sorted([*_PURE, *_MIX_GIB, *_ENGINE_FORMATS]))
    raise BadInputError(f"unknown weight type {name!r}; known: {known}")


@dataclass(frozen=True)
class Weights:
    """Weight bytes by where llama.cpp puts them: the input layer (token embeddings, kept on the CPU),
    each repeating layer, and the output layer."""

    input_bytes: int
    layer_bytes: dict[int, int]
    output_bytes: int
    exact: bool
    basis: str

    @property
    def total_bytes(self) -> int:
        return self.input_bytes + sum(self.layer_bytes.values()) + self.output_bytes


def from_blocks(blocks: dict[str, int], n_layer_all: int) -> Weights:
    """From GGUF tensor bytes grouped by ``input`` / ``output`` / layer index (see gguf_source)."""
    layers = {int(k): v for k, v in blocks.items() if k.isdigit() and int(k) < n_layer_all}
    other = sum(v for k, v in blocks.items() if not k.isdigit() or int(k) >= n_layer_all)
    input_bytes = blocks.get("input", 0)
    return Weights(input_bytes=input_bytes, layer_bytes=layers, output_bytes=other - input_bytes, exact=True,
                   basis="exact: the GGUF's tensor sizes")  # fmt: skip


def parse_params(text: str) -> int:
    """A parameter count: ``32e9``, ``8030261248`` or ``7.6B``."""
    t = str(text).strip().upper()
    n = float(t.removesuffix("B")) * (1e9 if t.endswith("B") else 1)
    if not n > 0:
        raise ValueError(f"{text!r} is not a positive parameter count")
    return int(n)


def estimate_bytes(n_params: int, weight_type: str) -> tuple[int, str]:
    """(total weight bytes, basis) for ``n_params`` parameters of ``weight_type``."""
    bpw = bits_per_weight(weight_type)
    return int(n_params * bpw / 8), f"estimate: {n_params / 1e9:.2f} B parameters × {bpw:.2f} bits ({weight_type})"


def spread(total: int, n_layer_all: int, basis: str) -> Weights:
    """``total`` bytes spread evenly over the layers (the output layer gets a layer's share)."""
    share = total // (n_layer_all + 1)
    layers = dict.fromkeys(range(n_layer_all), share)
    return Weights(input_bytes=0, layer_bytes=layers, output_bytes=total - share * n_layer_all, exact=False,
                   basis=basis)  # fmt: skip


def estimated(n_params: int, weight_type: str, n_layer_all: int) -> Weights:
    """Parameters × bits per weight, spread evenly over the layers."""
    total, basis = estimate_bytes(n_params, weight_type)
    return spread(total, n_layer_all, basis)
