"""Model weights: exact from a GGUF's tensor infos, or estimated from a parameter count × bits per weight.

Estimates use llama.cpp's own figures: the pure block types' exact bits per weight (GGML type sizes), and
for the K-quant mixes the model sizes llama.cpp's quantize tool lists for Llama-3-8B (tools/quantize,
8.03 B parameters, sizes in GiB), which include the higher-precision embedding and output tensors.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property

from kvplan.errors import BadInputError, RefusedConfigError
from kvplan.facts.ggml_types import GGML_TYPES_BY_NAME
from kvplan.model import ModelDescription, ParamCount, WeightFormat
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
#: --weights TYPE names that are a serving engine's checkpoint format (applied to the linear weights)
ENGINE_FORMATS = frozenset(_ENGINE_FORMATS)
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
    #: (name, layer, bytes) a CUDA buffer adds to a quantized tensor's last row (TensorWeights.cuda_extra)
    cuda_extra: tuple[tuple[str, int, int], ...] = ()

    @property
    def total_bytes(self) -> int:
        return self.input_bytes + sum(self.layer_bytes) + self.output_bytes

    @cached_property
    def tied_output_bytes(self) -> int:
        """The token embeddings llama.cpp loads again as the output layer (no output.weight: TENSOR_DUPLICATED);
        0 where the model has its own output head or the tensors are not known."""
        return sum(b for name, il, b in self.tensors if il == -2 and name == "token_embd.weight")

    @cached_property
    def names(self) -> tuple[str, ...]:
        """The tensors' names, one tuple per Weights (the override patterns' matches are kept per tuple)."""
        return tuple(name for name, _il, _b in self.tensors)

    @cached_property
    def bytes_by_name(self) -> dict[str, int]:
        """Each tensor's bytes by name (the weights a device's compute buffer copies in)."""
        return {name: b for name, _il, b in self.tensors}

    @cached_property
    def cuda_extra_by_name(self) -> dict[str, int]:
        """What a CUDA buffer allocates beyond each tensor's bytes, by name (where that is not 0)."""
        return {name: b for name, _il, b in self.cuda_extra}


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
            tw.cuda_extra,
        )
    if model.n_params is None:
        raise BadInputError(
            f"{model.source}: no tensor sizes and no parameter count; pass --weight-bytes SIZE, or "
            "--params N with --weights TYPE"
        )
    fmt, count = model.weight_format, model.param_count
    if fmt is not None and fmt.kind == "mxfp4" and count is not None and weight_type_name not in _MXFP4_ALL:
        total, basis = _mxfp4_gguf(count, weight_type_name or "q8_0")
        return spread(total, model.n_layer_all, basis)
    total, basis = estimate_bytes(model.n_params, weight_type_name or default_type)
    if model.params_source:
        basis += f"; parameters: {model.params_source}"
    return spread(total, model.n_layer_all, basis)


#: weight types that put every tensor in MXFP4 (a gpt-oss GGUF keeps its experts MXFP4 under any other label)
_MXFP4_ALL = ("f32",)


def _mxfp4_gguf(count: ParamCount, rest_type: str) -> tuple[int, str]:
    """A GGUF of an MXFP4-native checkpoint (gpt-oss): its routed experts stay MXFP4 (17 bytes per 32) whatever
    the file's label (every published gpt-oss GGUF keeps them so), the other tensors at ``rest_type`` (ggml-org's
    MXFP4 GGUF: q8_0)."""
    experts = count.expert_params
    rest = count.total - experts
    bpw = bits_per_weight(rest_type)
    total = experts * 17 // 32 + int(rest * bpw / 8)
    return total, (
        f"estimate: {experts / 1e9:.2f} B routed-expert parameters in MXFP4 (4.25 bits, as every gpt-oss GGUF keeps "
        f"them) + {rest / 1e9:.2f} B at {rest_type} ({bpw:.2f} bits); parameters: {count.basis}"
    )


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
        cuda_extra=tuple(t for t in weights.cuda_extra if t[1] not in drop),
    )


#: bytes of one unquantized element by a checkpoint's dtype
_DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
#: formats whose checkpoint totals are proven against a published safetensors index (tests/capacity/test_weights.py);
#: the others' per-linear layouts are vLLM's own (recorded), but which modules a quantizer left alone is only
#: what the config lists, so their totals stay labelled estimates
_PROVEN = frozenset({"bf16", "fp16", "fp32", "mxfp4"})


def _kept(name: str, patterns: tuple[str, ...]) -> bool:
    """Whether module ``name`` matches a quantizer's "not converted" pattern (a module path with ``*``, a path
    prefix, a last component, or compressed-tensors' ``re:`` form, read literally)."""
    from fnmatch import fnmatchcase

    for raw in patterns:
        pat = raw.removeprefix("re:").replace(".*", "*").strip("^$") if raw.startswith("re:") else raw
        if fnmatchcase(name, pat) or fnmatchcase(name, pat + ".*") or name.rsplit(".", 1)[-1] == pat:
            return True
        if "*" not in pat and (name.endswith("." + pat) or f".{pat}." in name):
            return True
    return False


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _linear_bytes(fmt: WeightFormat, out_f: int, in_f: int) -> int:
    """One quantized linear weight's bytes as the format stores it — the tensors vLLM 0.33.0's quant methods
    create for it (create_weights; recorded: tests/fixtures/engines/vllm_quant.json). Raises ValueError with vLLM's
    message for a shape vLLM refuses."""
    n = out_f * in_f
    k = fmt.kind
    if k == "mxfp4":  # e2m1 blocks of 32 (16 bytes) + one e8m0 scale byte each
        return n // 2 + _ceil(n, 32)
    if k == "fp8":
        if fmt.block:  # weight_scale_inv: one float32 per block
            return n + _ceil(out_f, fmt.block[0]) * _ceil(in_f, fmt.block[1]) * 4 + fmt.extra
        return n + (out_f * 4 if fmt.scale == "channel" else 4) + fmt.extra
    g = in_f if fmt.group_size in (0, -1) else fmt.group_size
    if k in ("awq", "int-packed") and in_f % g:
        raise ValueError(f"the input size {in_f} is not a multiple of group_size {g} (vLLM refuses the layer)")
    groups = max(1, in_f // g)
    if k in ("awq", "gptq"):  # qweight and qzeros (packed int32) + scales per group in the model dtype
        return n * fmt.bits // 8 + groups * out_f * fmt.bits // 8 + groups * out_f * 2
    if k == "int-packed":  # compressed-tensors: weight_packed + bf16 weight_scale per group + weight_shape
        return n * fmt.bits // 8 + groups * out_f * 2 + 16
    if k == "nvfp4":  # e2m1 + one fp8 scale per 16 + two float32 global scales
        return n // 2 + _ceil(n, 16) + 8
    if k == "bnb-4bit":  # nf4 / fp4 + one float32 absmax per 64
        return n // 2 + _ceil(n, 64) * 4
    if k in ("bnb-8bit", "int8"):  # int8 + float32 row scales
        return n + out_f * 4
    raise ValueError(k)


def engine_format(name: str) -> WeightFormat:
    """The format ``--weights NAME`` means for a serving engine's checkpoint: fp8 with 128×128 block scales (the
    DeepSeek / Qwen FP8 releases), int8 per channel, NVFP4, AWQ / GPTQ 4-bit in groups of 128."""
    bits = {"fp8": 8, "int8": 8, "nvfp4": 4, "awq": 4, "gptq": 4}[name]
    return WeightFormat(
        name,
        f"--weights {name}",
        bits=bits,
        group_size={"nvfp4": 16, "awq": 128, "gptq": 128}.get(name, 0),
        block=(128, 128) if name == "fp8" else (),
        scale="block" if name == "fp8" else "",
    )


def checkpoint_weights(count: ParamCount, fmt: WeightFormat, loaded_dtype: str | None = None) -> tuple[int, str, bool]:
    """(bytes, basis, exact) of a checkpoint counted by ``count`` and stored as ``fmt``: its quantized linear weights
    in the format's own tensors, everything else at ``loaded_dtype`` (what the engine holds them in: the
    checkpoint's dtype, a float32 checkpoint loaded as bf16) — the sum a safetensors index states."""
    other_bytes = _DTYPE_BYTES.get(loaded_dtype or fmt.dtype, 2)
    if fmt.kind in _DTYPE_BYTES:
        dtype = loaded_dtype or fmt.kind
        b = _DTYPE_BYTES.get(dtype, 2)
        return count.total * b, f"{count.total:,} parameters × {b} B ({dtype}; {fmt.source})", not fmt.assumed
    quant = [
        x for x in count.linears if x.quantized and not _kept(x.name, fmt.keep) and (x.expert or fmt.kind != "mxfp4")
    ]
    q_params = sum(x.params for x in quant)
    if fmt.refused:
        raise RefusedConfigError(f"{fmt.source}: vLLM refuses the checkpoint: {fmt.refused}")
    try:
        q_bytes = sum(_linear_bytes(fmt, x.out_features, x.in_features) * x.count for x in quant)
    except ValueError as exc:
        raise RefusedConfigError(f"{fmt.source}: {fmt.kind}: {exc}") from None
    rest = count.total - q_params
    total = q_bytes + rest * other_bytes
    what = "routed experts" if fmt.kind == "mxfp4" else "linear weights"
    dtype = loaded_dtype or fmt.dtype
    basis = (
        f"{fmt.kind} {what} ({q_params / 1e9:.2f} B parameters at {q_bytes / q_params * 8:.2f} bits) + the other "
        f"{rest / 1e9:.2f} B parameters at {dtype}; {fmt.source}"
        if q_params
        else f"{count.total:,} parameters × {other_bytes} B ({dtype}; {fmt.source})"
    )
    return total, basis, fmt.kind in _PROVEN and not fmt.assumed
