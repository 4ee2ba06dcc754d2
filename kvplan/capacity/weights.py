"""Model weights: exact from a GGUF's tensor infos, or estimated from a parameter count × bits per weight.

Estimates use llama.cpp's own figures: the pure block types' exact bits per weight (GGML type sizes), and
for the K-quant mixes the model sizes llama.cpp's quantize tool lists for Llama-3-8B (tools/quantize,
8.03 B parameters, sizes in GiB), which include the higher-precision embedding and output tensors.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kvplan.errors import BadInputError
from kvplan.facts.ggml_types import GGML_TYPES_BY_NAME
from kvplan.model import ModelDescription
from kvplan.units import GIB

_LLAMA3_8B_PARAMS = 8_030_261_248
#: tools/quantize QUANT_OPTIONS sizes on Llama-3-8B, GiB
_MIX_GIB = {
    "q2_k": 2.96,
    "q3_k_s": 3.41,
    "q3_k_m": 3.74,
    "q3_k_l": 4.03,
    "q4_k_s": 4.37,
    "q4_k_m": 4.58,
    "q5_k_s": 5.21,
    "q5_k_m": 5.33,
    "q6_k": 6.14,
}
#: ftype names that are one block type throughout
_PURE = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl", "iq4_xs", "mxfp4", "q1_0", "q2_0")
#: serving-engine checkpoint formats (quantized linear weights): fp8 / int8 with per-tensor or per-channel scales;
#: NVFP4 = e2m1 + one fp8 scale per 16 values; AWQ / GPTQ int4 = 4 bits + an fp16 scale and a 4-bit zero per
#: group of 128. Embeddings, norms and often the output head stay bf16, which the estimate leaves out.
_ENGINE_FORMATS = {"fp8": 8.0, "int8": 8.0, "nvfp4": 4.5, "awq": 4 + 20 / 128, "gptq": 4 + 20 / 128}
WEIGHT_TYPES = tuple(sorted([*_PURE, *_MIX_GIB, *_ENGINE_FORMATS]))
#: what an estimate assumes when no --weights is given
DEFAULT_LLAMACPP_WEIGHTS = "q4_k_m"
DEFAULT_ENGINE_WEIGHTS = "bf16"


def weight_type(name: object) -> str:
    """A known weight type name, lower-cased (raises ValueError listing the known ones)."""
    key = str(name).strip().lower()
    if key not in WEIGHT_TYPES:
        raise ValueError(f"unknown weight type {name!r}; known: {', '.join(WEIGHT_TYPES)}")
    return key


def bits_per_weight(name: str) -> float:
    key = weight_type(name)
    if key in _ENGINE_FORMATS:
        return _ENGINE_FORMATS[key]
    if key in _MIX_GIB:
        return _MIX_GIB[key] * GIB * 8 / _LLAMA3_8B_PARAMS
    t = GGML_TYPES_BY_NAME[key]
    return t.block_bytes * 8 / t.block_elements


@dataclass(frozen=True)
class Weights:
    """Weight bytes by where llama.cpp puts them: the input layer (token embeddings, kept in host memory),
    each repeating layer, and the output layer."""

    input_bytes: int
    layer_bytes: tuple[int, ...]  # index = layer
    output_bytes: int
    exact: bool
    basis: str
    expert_bytes: tuple[int, ...] = ()  # of each layer's bytes, its MoE experts' (exact weights only)
    tensors: tuple[tuple[str, int, int], ...] = ()  # (name, layer | -1 input | -2 output, bytes): exact only

    @property
    def total_bytes(self) -> int:
        return self.input_bytes + sum(self.layer_bytes) + self.output_bytes


def estimate_bytes(n_params: int, weight_type_name: str) -> tuple[int, str]:
    """(total weight bytes, basis) for ``n_params`` parameters of ``weight_type_name``."""
    bpw = bits_per_weight(weight_type_name)
    basis = f"estimate: {n_params / 1e9:.2f} B parameters × {bpw:.2f} bits ({weight_type_name})"
    return int(n_params * bpw / 8), basis


def spread(total: int, n_layer_all: int, basis: str) -> Weights:
    """``total`` bytes spread evenly over the layers (the output layer gets a layer's share)."""
    share = total // (n_layer_all + 1)
    return Weights(0, (share,) * n_layer_all, total - share * n_layer_all, exact=False, basis=basis)


def model_weights(
    model: ModelDescription,
    weight_type_name: str | None,
    weight_bytes: int | None,
    default_type: str = DEFAULT_LLAMACPP_WEIGHTS,
) -> Weights:
    """The weights of ``model``: given bytes, else the GGUF's exact tensors (unless a type asks for an estimate),
    else parameters × bits per weight."""
    if weight_bytes is not None:
        return spread(weight_bytes, model.n_layer_all, "given (--weight-bytes)")
    tw = model.tensor_weights
    if tw is not None and weight_type_name is None:
        return Weights(
            tw.input_bytes,
            tw.layer_bytes,
            tw.output_bytes,
            True,
            "exact: the GGUF's tensor sizes",
            tw.expert_bytes,
            tw.tensors,
        )
    if model.n_params is None:
        raise BadInputError(
            f"{model.source}: no tensor sizes and no parameter count; pass --weight-bytes SIZE, or "
            "--params N with --weights TYPE"
        )
    total, basis = estimate_bytes(model.n_params, weight_type_name or default_type)
    return spread(total, model.n_layer_all, basis)


def without_layers(weights: Weights, layers: range) -> Weights:
    """``weights`` with the tensors of ``layers`` not loaded (their bytes 0, their tensors gone)."""
    if not weights.exact or not len(layers):
        return weights
    drop = set(layers)
    return dataclasses.replace(
        weights,
        layer_bytes=tuple(0 if il in drop else b for il, b in enumerate(weights.layer_bytes)),
        expert_bytes=tuple(0 if il in drop else b for il, b in enumerate(weights.expert_bytes)),
        tensors=tuple(t for t in weights.tensors if t[1] not in drop),
    )
