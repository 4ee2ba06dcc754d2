"""kvplan's compute per device for llama-fit-params's flags, as llama.cpp's fit measures it: the projection the
device recordings (tests/fixtures/oracle/compute_devices.json, compute_cuda.json) are compared with."""

from __future__ import annotations

import dataclasses

from kvplan.model import ModelDescription

_FLAGS = {"-c": "ctx_size", "-ngl": "n_gpu_layers", "-np": "parallel", "-ncmoe": "n_cpu_moe", "-ctk": "cache_type_k",
          "-ctv": "cache_type_v", "-fa": "flash_attn", "-ub": "ubatch_size", "-b": "batch_size",
          "-ot": "override_tensor", "-ts": "tensor_split"}  # fmt: skip
_SWITCHES = {"-cmoe": "cpu_moe", "--swa-full": "swa_full", "-nkvo": "no_kv_offload"}


def projected(model: ModelDescription, devices: list[int], args: list[str], backend: str = "cpu") -> dict[str, int]:
    """kvplan's compute per device as llama.cpp's fit measures it, for llama-fit-params's flags (`backend` cpu:
    the RPC devices' rules; cuda: CUDA's)."""
    return {name: cols[2] for name, cols in projected_columns(model, devices, args, backend).items()}


def projected_columns(
    model: ModelDescription, devices: list[int], args: list[str], backend: str = "cpu"
) -> dict[str, list[int]]:
    """Each device's [weights, KV / state, compute] as llama.cpp's fit measures them (its model, context and
    compute columns), then the host's."""
    from kvplan.capacity.llamacpp import LlamaCppRuntime
    from kvplan.capacity.llamacpp_settings import settings_for
    from kvplan.capacity.request import Origin, Raw
    from kvplan.options.build import build_request
    from kvplan.runtimes.llamacpp import Backend

    raw = {
        "memory": Raw(",".join(f"{m}MiB" for m in devices), Origin("--memory")),
        "backend": Raw(backend, Origin("--backend")),
        "fit": Raw("off", Origin("--fit")),
    }
    flags = [a for a in args if a not in _SWITCHES]
    for flag, value in zip(flags[::2], flags[1::2], strict=True):
        raw[_FLAGS[flag]] = Raw(value, Origin(flag))
    for flag, dest in _SWITCHES.items():
        if flag in args:
            raw[dest] = Raw(True, Origin(flag))
    req = dataclasses.replace(build_request(model.source, raw, need_hardware=True), loaded=model)
    target = dataclasses.replace(LlamaCppRuntime().target(model, req), fit_projection=True)
    o = req.llamacpp
    placed = target.place(settings_for(o, o.backend or Backend.CUDA))
    assert placed.compute_basis.startswith("llama.cpp's graph split")
    out = {f"RPC{i}": [g.weight_bytes, g.kv_bytes, g.compute_bytes] for i, g in enumerate(placed.gpus)}
    out["Host"] = [placed.host.weight_bytes, placed.host.kv_bytes, placed.host.compute_bytes]
    return out
