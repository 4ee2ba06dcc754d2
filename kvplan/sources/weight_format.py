"""How a checkpoint stores its weights, from its config.json: ``quantization_config`` and ``torch_dtype``.

The quantizers' config blocks as transformers and vLLM read them (``quant_method``): ``mxfp4`` (gpt-oss),
``fp8`` (DeepSeek-V3, Qwen3-FP8: ``weight_block_size``), ``fbgemm_fp8``, ``compressed-tensors`` (its
``config_groups``: float 8 / int 4 or 8 / float 4), ``awq``, ``gptq``, ``bitsandbytes``, ``modelopt`` (NVFP4 /
FP8). A block kvplan does not read is kept as ``unknown``: the weights then need --weight-bytes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from kvplan.model import ModelDescription, WeightFormat

#: config.json's torch_dtype / dtype → the short names kvplan's weight types use
_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32"}


def _int(v: object, default: int = 0) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 20 else default


def _patterns(v: object) -> tuple[str, ...]:
    return tuple(str(p)[:200] for p in v[:10_000] if isinstance(p, str)) if isinstance(v, list) else ()


def read_weight_format(cfg: Mapping[str, Any], shown: str) -> WeightFormat:
    """The storage format ``cfg`` (a config.json named ``shown``) declares."""
    raw = cfg.get("torch_dtype", cfg.get("dtype"))
    text = cfg.get("text_config")
    if raw is None and isinstance(text, Mapping):
        raw = text.get("torch_dtype", text.get("dtype"))
    dtype = _DTYPES.get(str(raw).removeprefix("torch."), "") if isinstance(raw, str) else ""
    dtype_source = f"{shown}: torch_dtype {raw}" if dtype else f"{shown}: no torch_dtype (bf16 assumed)"
    q = cfg.get("quantization_config")
    if not isinstance(q, Mapping):
        return WeightFormat(dtype or "bf16", dtype_source, dtype or "bf16", assumed=not dtype)
    return _quantized(q, f"{shown}: quantization_config", dtype or "bf16")


def _quantized(q: Mapping[str, Any], where: str, dtype: str) -> WeightFormat:  # noqa: C901 - one per quantizer
    method = str(q.get("quant_method", "")).lower()[:40]
    keep = (
        _patterns(q.get("modules_to_not_convert")) or _patterns(q.get("ignore")) or _patterns(q.get("ignored_layers"))
    )
    src = f"{where} (quant_method {method})"
    if method == "mxfp4":
        return WeightFormat("mxfp4", src, dtype, bits=4, group_size=32, keep=keep)
    if method == "fp8":  # Fp8LinearMethod: weight_scale_inv per block, else one weight_scale
        block = q.get("weight_block_size")
        dims = tuple(_int(b) for b in block) if isinstance(block, list) and len(block) == 2 else ()
        if all(dims) and dims:
            return WeightFormat("fp8", src, dtype, bits=8, block=dims, keep=keep, scale="block")
        return WeightFormat("fp8", src, dtype, bits=8, keep=keep, scale="tensor")
    if method == "fbgemm_fp8":  # a float32 scale per row and the input_scale_ub scalar
        return WeightFormat("fp8", src, dtype, bits=8, keep=keep, scale="channel", extra=4)
    if method in ("awq", "gptq"):
        bits = _int(q.get("bits", q.get("w_bit")), 4)
        group = q.get("group_size", q.get("q_group_size", 128))
        g = -1 if group == -1 else _int(group, 128)
        refused = ""
        if method == "gptq" and q.get("desc_act") is True:
            refused = ("GPTQ group activation ordering (desc_act=True) is no longer supported. Use a checkpoint "
                       "with static activation ordering or desc_act=False.")  # fmt: skip
        return WeightFormat(method, src, dtype, bits=bits, group_size=g, keep=keep, refused=refused)
    if method == "bitsandbytes":
        if q.get("load_in_8bit") is True:
            return WeightFormat("bnb-8bit", src, dtype, bits=8, keep=keep)
        return WeightFormat("bnb-4bit", src, dtype, bits=4, group_size=64, keep=keep)
    if method == "modelopt":
        algo = str(q.get("quant_algo", "")).upper()
        if "NVFP4" in algo or "FP4" in algo:
            return WeightFormat("nvfp4", src + f", quant_algo {algo}", dtype, bits=4, group_size=16,
                                keep=_patterns(q.get("exclude_modules")) or keep)  # fmt: skip
        if "FP8" in algo:  # ModelOptFp8LinearMethod: one weight scale and one static input scale
            return WeightFormat("fp8", src + f", quant_algo {algo}", dtype, bits=8, scale="tensor", extra=4,
                                keep=_patterns(q.get("exclude_modules")) or keep)  # fmt: skip
    if method == "compressed-tensors":
        found = _compressed_tensors(q, src, dtype, keep)
        if found is not None:
            return found
    return WeightFormat(f"unknown ({method or 'no quant_method'})", src, dtype, keep=keep)


def _compressed_tensors(q: Mapping[str, Any], src: str, dtype: str, keep: tuple[str, ...]) -> WeightFormat | None:
    """The first config group's weight scheme (llm-compressor writes one for the Linear layers)."""
    groups = q.get("config_groups")
    if not isinstance(groups, Mapping):
        return None
    for group in list(groups.values())[:100]:
        w = group.get("weights") if isinstance(group, Mapping) else None
        if not isinstance(w, Mapping):
            continue
        bits, kind = _int(w.get("num_bits")), str(w.get("type", "int"))
        strategy = str(w.get("strategy", ""))
        block = w.get("block_structure")
        dims = tuple(_int(b) for b in block) if isinstance(block, list) and len(block) == 2 else ()
        g = _int(w.get("group_size"))
        detail = f"{src}, {kind} {bits}-bit, strategy {strategy}"
        if kind == "float" and bits == 8:
            if dims and all(dims):
                return WeightFormat("fp8", detail, dtype, bits=8, block=dims, keep=keep, scale="block")
            return WeightFormat("fp8", detail, dtype, bits=8, keep=keep,
                                scale="channel" if strategy == "channel" else "tensor")  # fmt: skip
        if kind == "float" and bits == 4:
            return WeightFormat("nvfp4", detail, dtype, bits=4, group_size=g or 16, keep=keep)
        if kind == "int" and bits in (4, 8):
            return WeightFormat("int-packed", detail, dtype, bits=bits,
                                group_size=g if strategy == "group" else -1, keep=keep)  # fmt: skip
    return None


def with_checkpoint(
    model: ModelDescription, block: dict[str, Any] | None, params_source: str | None, shown: str
) -> ModelDescription:
    """``model`` with what a spec's checkpoint block says: the storage format, the parameters counted from its
    config (exact, and then the parameter count), and where the count comes from."""
    out: dict[str, Any] = {}
    if params_source:
        out["params_source"] = params_source
    elif model.n_params is not None:
        out["params_source"] = f"{shown}: params"
    if block:
        fmt = block.get("format")
        if isinstance(fmt, str):
            dims = block.get("block")
            out["weight_format"] = WeightFormat(
                fmt,
                str(block.get("source") or f"{shown}: checkpoint.format"),
                fmt if fmt in ("bf16", "fp16", "fp32") else "bf16",
                bits={"mxfp4": 4, "fp8": 8}.get(fmt, 0),
                group_size=32 if fmt == "mxfp4" else 0,
                block=tuple(dims) if isinstance(dims, list) else (),
            )
        config = block.get("config")
        if isinstance(config, dict):
            from kvplan.sources.graph_facts import graph_facts_from_config
            from kvplan.sources.param_count import count_params
            from kvplan.sources.state_hparams import with_config_state

            out["graph"] = graph_facts_from_config(config)
            state = with_config_state(model.recurrent_params, config)
            if state is not model.recurrent_params:
                out["recurrent_params"] = state
            counted = count_params(config)
            if counted is not None:
                out["param_count"] = counted
                out["n_params"] = counted.total
                out.setdefault("params_source", f"counted from {shown}'s checkpoint.config ({counted.basis})")
    return dataclasses.replace(model, **out) if out else model
