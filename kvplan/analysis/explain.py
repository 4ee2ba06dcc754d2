"""A llama.cpp startup log accounted for figure by figure (issue 25's `kvplan explain`, its library part): the
settings the log states re-planned by kvplan's own rules, and every figure the log prints about the context and
its memory side by side with kvplan's — equal at the log's precision (MiB to two decimals), with the rule that
produced it, or not explained and why."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kvplan.analysis.figure import Change, Figure
from kvplan.model import ModelDescription
from kvplan.runtimes.llamacpp import Backend, CacheKind, CachePlan, FlashAttn, LlamaCppSettings, MemoryPlan, plan
from kvplan.sources.llamacpp_log import LlamaCppLog, LoggedBuffer

if TYPE_CHECKING:
    from kvplan.runtimes.llamacpp.compute import ComputeBuffer

_FA = {"auto": FlashAttn.AUTO, "enabled": FlashAttn.ON, "disabled": FlashAttn.OFF}


@dataclass(frozen=True)
class Explanation:
    """A log's figures against kvplan's plan for the settings the log states, and what would change them."""

    settings: LlamaCppSettings
    figures: tuple[Figure, ...]
    notes: tuple[str, ...]
    kv_bytes: int = 0  # kvplan's KV cache / state for the log's settings
    compute_bytes: int | None = None  # its CPU compute buffer (None: a GPU log, or no graph)
    changes: tuple[Change, ...] = ()

    @property
    def explained(self) -> bool:
        return all(f.equal for f in self.figures)


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f}"


def settings_of(log: LlamaCppLog, model: ModelDescription | None = None) -> LlamaCppSettings:
    """The context parameters the log states (llama_context's block, the caches' types, --swa-full), and the
    buffer rules of the devices it names (CUDA where a CUDA buffer is printed; ROCm, Metal, Vulkan by their
    buffers' names: backend_of). Two caches of one size are
    --swa-full unless the log says otherwise or, with the `model`, the window capped at the context explains
    them."""
    s = _stated(log)
    if model is not None and s.swa_full and not log.swa_full:
        capped = plan(model, replace(s, swa_full=False))
        if _window_cells(capped) == log.iswa_cells.get("SWA"):
            return replace(s, swa_full=False)
    return s


def _stated(log: LlamaCppLog) -> LlamaCppSettings:
    need = ("n_ctx", "n_seq_max", "n_batch", "n_ubatch")
    missing = [k for k in need if log.setting(k) is None]
    if missing:
        from kvplan.errors import BadInputError

        raise BadInputError(f"the log does not print llama_context's {', '.join(missing)} (is it cut short?)")
    cache = log.caches[0] if log.caches else None
    return LlamaCppSettings(
        n_ctx=log.setting("n_ctx") or 0,
        n_seq=log.setting("n_seq_max") or 1,
        kv_unified=log.context.get("kv_unified") == "true",
        n_batch=log.setting("n_batch") or 2048,
        n_ubatch=log.setting("n_ubatch") or 512,
        type_k=cache.type_k if cache else "f16",
        type_v=cache.type_v if cache else "f16",
        flash_attn=_FA.get(log.context.get("flash_attn", "auto"), FlashAttn.AUTO),
        # (a hybrid iSWA memory does not say "full-size"; its window cache as large as the other is the same)
        swa_full=log.swa_full or (len(set(log.iswa_cells.values())) == 1 and len(log.iswa_cells) == 2),
        backend=backend_of(log),
        # the outputs the worst-case graph is reserved for (a newer llama-server sets it to -np); 0: -b's
        n_outputs_max=log.setting("n_outputs_max") or 0,
    )


#: the device buffers' names in a log → their backend (ggml_backend_*_buffer_type names: CUDA0, ROCm0, MTL0,
#: Vulkan0; a CUDA or ROCm host buffer "CUDA_Host" / "ROCm_Host"); RPC devices keep the CPU's rules
_BUFFER_PREFIXES = (("CUDA", Backend.CUDA), ("ROCm", Backend.ROCM), ("MTL", Backend.METAL), ("Metal", Backend.METAL),
                    ("Vulkan", Backend.VULKAN))  # fmt: skip


def backend_of(log: LlamaCppLog) -> Backend:
    """The buffer rules of the devices a log names (the first device backend its buffers name; else the CPU's)."""
    for b in log.buffers:
        for prefix, backend in _BUFFER_PREFIXES:
            if b.buffer.startswith(prefix):
                return backend
    return Backend.CPU


def _window_cells(p: MemoryPlan) -> int | None:
    return next((c.cells for c in p.caches if c.kind is CacheKind.ATTENTION and c.name == "sliding window"), None)


def explain_llamacpp(log: LlamaCppLog, model: ModelDescription) -> Explanation:
    """Every context and memory figure of the log against kvplan's plan of the same settings."""
    s = settings_of(log, model)
    p = plan(model, s)
    cpu = s.backend is Backend.CPU
    from kvplan.analysis import explain_devices as devices

    if devices.uses_devices(log) and model.tensor_weights is not None:  # on GPUs (or RPC devices): every buffer
        # per device, and the fit (both need the weights of each layer: a model file's tensors)
        dp = devices.place(log, model, s, p)
        figures = [*_context(log, p), *_caches(log, p, pair_buffers=False), *_states(log, p),
                   *devices.placement_figures(log, dp, p, s), *devices.fit_figures(log, dp, s)]  # fmt: skip
        notes = (*p.notes, *devices.host_notes(log))
        changes = devices.device_changes(log, dp, [("as the log ran", s), *_candidates(s)])
        total = sum(d.compute_bytes for d in dp.placement.devices)
        return Explanation(s, tuple(figures), notes, p.total_bytes, total, changes)
    compute = _cpu_compute(p) if cpu else None
    figures = [*_context(log, p), *_caches(log, p), *_states(log, p), *_weights(log, model),
               *_compute(log, p, compute)]  # fmt: skip
    notes = tuple(p.notes)
    if model.source_kind == "log":
        notes += (f"the model is the one the log's metadata dump describes ({model.name}, {model.arch}): the "
                  "context, KV and state figures follow from it; the weights and the compute graph need the "
                  "model file (-m FILE)",)  # fmt: skip
    return Explanation(s, tuple(figures), notes, p.total_bytes, compute.bytes if compute else None,
                       _changes(model, s, cpu))  # fmt: skip


def _cpu_compute(p: MemoryPlan) -> ComputeBuffer | None:
    from kvplan.runtimes.llamacpp.compute import cpu_compute_buffer

    return cpu_compute_buffer(p)


#: what users change to shrink or grow a llama.cpp context's memory, in llama.cpp's flags
def _candidates(s: LlamaCppSettings) -> list[tuple[str, LlamaCppSettings]]:
    out = []
    if s.type_k == "f16" and s.type_v == "f16":
        fa = FlashAttn.ON if s.flash_attn is FlashAttn.OFF else s.flash_attn  # (a quantized V needs it)
        for t in ("q8_0", "q4_0"):
            flags = f"-ctk {t} -ctv {t}" + (" -fa on" if s.flash_attn is FlashAttn.OFF else "")
            out.append((flags, replace(s, type_k=t, type_v=t, flash_attn=fa)))
    if s.n_seq > 1 and not s.kv_unified:
        out.append(("-kvu", replace(s, kv_unified=True)))
    if s.swa_full:
        out.append(("without --swa-full", replace(s, swa_full=False)))
    out.append((f"-c {s.n_ctx // 2}", replace(s, n_ctx=s.n_ctx // 2)))
    out.append((f"-c {s.n_ctx * 2}", replace(s, n_ctx=s.n_ctx * 2)))
    if s.n_ubatch > 128:
        out.append((f"-ub {s.n_ubatch // 2}", replace(s, n_ubatch=s.n_ubatch // 2)))
    return out


def _changes(model: ModelDescription, s: LlamaCppSettings, cpu: bool) -> tuple[Change, ...]:
    from kvplan.errors import KvplanError

    out = []
    for flags, changed in _candidates(s):
        try:
            p = plan(model, changed)
        except KvplanError:
            continue  # (a change llama.cpp refuses for this model is no option)
        compute = _cpu_compute(p) if cpu else None
        out.append(Change(flags, p.total_bytes, compute.bytes if compute else None))
    return tuple(out)


def _context(log: LlamaCppLog, p: MemoryPlan) -> list[Figure]:
    c = p.context
    out = []
    for key, mine, why in (
        ("n_ctx", c.n_ctx, "the context llama.cpp allocates: the asked one padded to 256 cells per sequence"),
        ("n_ctx_seq", c.n_ctx_seq, "each sequence's share (the whole context with -kvu)"),
        ("n_seq_max", c.n_seq, "-np"),
    ):
        got = log.setting(key)
        if got is not None:
            out.append(Figure(key, str(got), str(mine), got == mine, why))
    return out


def _caches(log: LlamaCppLog, p: MemoryPlan, pair_buffers: bool = True) -> list[Figure]:
    attention = [c for c in p.caches if c.kind is CacheKind.ATTENTION]
    logged = [c for c in log.caches if c.layers]  # (llama.cpp creates, and prints, an empty cache for no layers)
    out = []
    if log.failed and "kv cache" in log.failure and len(logged) < len(attention):  # the run stopped at a cache
        out += _failed(log, attention[len(logged)])
        attention = attention[: len(logged)]
    if len(logged) != len(attention):
        out.append(Figure("KV caches", str(len(logged)), str(len(attention)), False,
                          "not explained: the log and kvplan hold a different number of caches"))  # fmt: skip
        return out
    kv_buffers = [b for b in log.buffers if b.kind == "KV"] if pair_buffers else []
    if len(kv_buffers) != len(logged):  # (one buffer per device a cache spans: paired only one to one)
        kv_buffers = []
    for i, (got, mine) in enumerate(zip(logged, attention, strict=True)):
        name = mine.name
        total = mine.k_bytes + mine.v_bytes
        rows = [
            (f"{name}: cells", str(got.cells), str(mine.cells), mine.why or "cells per stream", None),
            (f"{name}: layers", str(got.layers), str(len(mine.layers)), "the layers this cache holds", None),
            (f"{name}: K ({got.type_k}), MiB", got.k_mib, _mib(mine.k_bytes), _width(p, mine, "K"), mine.k_bytes),
            (f"{name}: V ({got.type_v}), MiB", got.v_mib, _mib(mine.v_bytes), _width(p, mine, "V"), mine.v_bytes),
            (f"{name}: size, MiB", got.mib, _mib(total), "K + V", total),
        ]
        out += _compared(rows, kv_buffers[i] if i < len(kv_buffers) else None, name, mine.buffer_bytes)
    return out


def _failed(log: LlamaCppLog, cache: CachePlan) -> list[Figure]:
    """The KV cache buffer llama.cpp could not allocate (the run stopped there), against kvplan's, and the device
    memory the log says was left for it."""
    buffer, size = log.failed or ("", 0)
    equal = size == cache.buffer_bytes
    why = f"the {cache.name} cache's whole buffer on {buffer}, which llama.cpp could not allocate ({log.failure})"
    device = next((d for d in log.devices if d.name == buffer), None)
    before = [b for b in log.buffers if b.buffer == buffer]
    if device is not None and equal:
        used = sum(float(b.mib) for b in before)
        left = device.free_mib - used
        parts = " − ".join(f"{b.kind} {b.mib}" for b in before)
        why += (f": {device.free_mib:,} MiB free on {buffer} − {parts} MiB = {left:,.2f} MiB left, "
                f"{size / 2**20 - left:,.2f} MiB short")  # fmt: skip
    return [Figure(f"{cache.name}: {buffer} KV buffer not allocated, bytes", f"{size:,}", f"{cache.buffer_bytes:,}",
                   equal, why if equal else "not explained", cache.buffer_bytes)]  # fmt: skip


def _states(log: LlamaCppLog, p: MemoryPlan) -> list[Figure]:
    """The recurrent state (Mamba, RWKV, delta-net layers): rows per sequence, its R and S halves, its buffer."""
    mine = [c for c in p.caches if c.kind is CacheKind.RECURRENT]
    if len(log.states) != len(mine):
        why = "not explained: the log and kvplan hold a different number of recurrent states"
        return [Figure("recurrent states", str(len(log.states)), str(len(mine)), False, why)]
    buffers = [b for b in log.buffers if b.kind == "RS"]
    out = []
    for i, (got, c) in enumerate(zip(log.states, mine, strict=True)):
        rows_per = c.cells // (1 + p.context.n_rs_seq)
        total = c.k_bytes + c.v_bytes
        rows = [
            ("recurrent state: rows", str(got.cells), str(rows_per), c.why or "one row per sequence", None),
            (
                f"recurrent state: R ({got.type_r}), MiB",
                got.r_mib,
                _mib(c.k_bytes),
                "the conv / shift states",
                c.k_bytes,
            ),
            (f"recurrent state: S ({got.type_s}), MiB", got.s_mib, _mib(c.v_bytes), "the SSM / WKV states", c.v_bytes),
            ("recurrent state: size, MiB", got.mib, _mib(total), "R + S (+ P, the PLE history: none here)", total),
        ]
        out += _compared(rows, buffers[i] if i < len(buffers) else None, "recurrent state", c.buffer_bytes)
    return out


_Row = tuple[str, str, str, str, "int | None"]


def _compared(rows: list[_Row], buffer: LoggedBuffer | None, name: str, buffer_bytes: int) -> list[Figure]:
    """The rows as figures (a printed value kvplan does not reach is "not explained"), and the buffer's, if the
    log prints one for this cache."""
    if buffer is not None:
        rows = [*rows, (f"{name}: {buffer.buffer} {buffer.kind} buffer, MiB", buffer.mib, _mib(buffer_bytes),
                        "every tensor aligned to the buffer's alignment", buffer_bytes)]  # fmt: skip
    return [
        Figure(what, got, kv, got == kv, why if got == kv else "not explained", n) for what, got, kv, why, n in rows
    ]


def _width(p: MemoryPlan, cache: CachePlan, which: str) -> str:
    """The arithmetic of one half of a cache: cells × streams × the layers' widths × the type."""
    c, layers = p.context, [p.model.layers[il] for il in cache.layers]
    widths = {(x.n_head_kv, x.head_k if which == "K" else x.head_v) for x in layers}
    t = c.type_k if which == "K" else c.type_v
    per = f"{t.name} ({t.block_bytes} B per {t.block_elements})" if t.is_quantized else f"{t.name} {t.block_bytes} B"
    if len(widths) == 1:
        heads, head = next(iter(widths))
        width = f"{len(layers)} layers × {heads} KV heads × {head}"
    else:
        total = sum(x.k_width if which == "K" else x.v_width for x in layers)
        width = f"{len(layers)} layers' {which} widths ({total:,} values)"
    return f"{cache.cells:,} cells × {c.n_stream} stream(s) × {width} × {per}"


#: why a figure that depends on the model file's tensors is not explained, where kvplan has only the log's model
_NEEDS_FILE = "the model file's tensors decide it, and the log does not list them (give -m FILE)"


def _weights(log: LlamaCppLog, model: ModelDescription) -> list[Figure]:
    """The model buffers the log prints, where kvplan has no tensor sizes to place (a model from the log)."""
    if model.source_kind != "log":
        return []
    return [Figure(f"{b.buffer} model buffer, MiB", b.mib, "", False, f"not explained: {_NEEDS_FILE}")
            for b in log.buffers if b.kind == "model"]  # fmt: skip


def _compute(log: LlamaCppLog, p: MemoryPlan, got: ComputeBuffer | None) -> list[Figure]:
    """The compute buffers the log prints: a CPU-only log's against kvplan's (`got`, planned once)."""
    computes = [b for b in log.buffers if b.kind == "compute"]
    if not computes:
        return []
    if p.model.source_kind == "log":
        return [Figure(f"{b.buffer} compute buffer, MiB", b.mib, "", False, f"not explained: {_NEEDS_FILE}")
                for b in computes]  # fmt: skip
    if [b.buffer for b in computes] != ["CPU"]:
        why = ("not explained: the model's tensor sizes are not known (give the model file with -m FILE)"
               if log.devices else "not explained: the log names no devices ('using device' lines), so the "
               "GPUs' share of the model is not known")  # fmt: skip
        return [Figure(f"{b.buffer} compute buffer, MiB", b.mib, "", False, why) for b in computes]
    from kvplan.runtimes.llamacpp.compute import no_graph_reason

    if got is None:
        return [Figure("CPU compute buffer, MiB", computes[0].mib, "", False, f"not explained: {no_graph_reason(p)}")]
    parts = ", ".join(f"{role} {_mib(n)} MiB" for role, n in got.parts[:3])
    equal = computes[0].mib == _mib(got.bytes)
    why = f"llama.cpp's worst-case graph planned by ggml's allocator; at its peak: {parts}"
    return [Figure("CPU compute buffer, MiB", computes[0].mib, _mib(got.bytes), equal,
                   why if equal else "not explained", got.bytes)]  # fmt: skip


def model_for(log: LlamaCppLog, log_path: str, given: str | None) -> ModelDescription:
    """The model to re-plan: the one given, else the file the log says llama.cpp loaded, found where the log names
    it or beside the log, else the model the log's metadata dump describes (its weights and graph unknown)."""
    import os

    from kvplan.errors import UsageError
    from kvplan.sources import load_model

    if given:
        return load_model(given)
    places = [log.model_path] if log.model_path else []
    if log_path != "-" and log.model_path:
        places.append(os.path.join(os.path.dirname(log_path), os.path.basename(log.model_path)))
    for path in places:
        if os.path.isfile(path):
            return load_model(path)
    if "general.architecture" in log.metadata:  # the log describes its model: what it states follows from that
        from kvplan.sources.log_model import model_from_log

        return model_from_log(log, log_path)
    where = f"the log loaded {log.model_path}, which is not readable here" if log.model_path else (
        "the log names no model file")  # fmt: skip
    raise UsageError(
        f"{log_path}: {where}, and it has no metadata dump of the model (llama_model_loader's '- kv' lines); give "
        "the model with -m MODEL (a GGUF, spec, config.json, folder or catalog name)"
    )
