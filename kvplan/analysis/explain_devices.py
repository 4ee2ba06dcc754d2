"""A llama.cpp log's placement on its devices, and its fit (`kvplan explain`): the devices the log names (their
free memory as llama.cpp saw it), the layers it offloaded and where each went, re-placed by kvplan
(kvplan.capacity.llamacpp.Target: weights, KV and compute per device, proven against llama.cpp), and every buffer
the log prints per device beside kvplan's; then llama.cpp's fit (`--fit on`, its default) re-run by kvplan's
port of common_fit_params on the same devices, its outcome beside the log's.

Where each layer went: the log's `layer N assigned to device X` lines (`-v`), else llama.cpp's default split by
the devices' free memory; where that does not give the model buffers the log prints, the contiguous split that
does (the log prints no -ts), and the answer says which."""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

from kvplan.analysis.figure import Change, Figure
from kvplan.capacity.llamacpp import Placement, Target
from kvplan.capacity.weights import model_weights
from kvplan.errors import KvplanError
from kvplan.facts.llama_server_args import FIT_FULL_CTX, FIT_MIN_CTX, FIT_TARGET_MIB
from kvplan.model import ModelDescription
from kvplan.runtimes.llamacpp import LlamaCppSettings, MemoryPlan
from kvplan.sources.llamacpp_log import LlamaCppLog

MIB = 1 << 20
#: buffers in host memory (the mmapped file, the CPU backend's repacked copies, pinned host memory)
HOST = frozenset({"CPU", "CPU_Mapped", "CPU_REPACK", "CUDA_Host", "ROCm_Host", "Vulkan_Host", "CPU_AARCH64"})
#: splits tried to find the one that gives the printed model buffers (the log prints no -ts); each costs a few
#: additions, so even four devices' every split of a 94-layer model is well under a second
MAX_SPLITS = 500_000


@dataclass(frozen=True)
class DevicePlacement:
    """What kvplan re-placed the log's model with, and how it knows."""

    target: Target
    placement: Placement
    where: tuple[int, ...]  # each layer's device, and the output layer's (last): -1 the host
    split_basis: str


def _mib(n: int) -> str:
    return f"{n / MIB:.2f}"


def device_of(log: LlamaCppLog, buffer: str) -> int | None:
    """The index of the device a buffer lives on (-1: the host), or None: a device the log does not name. An RPC
    server's buffers are named RPC0[endpoint] whichever device it is: the endpoint tells."""
    if buffer in HOST:
        return -1
    for i, d in enumerate(log.devices):
        if buffer == d.name or (buffer.startswith("RPC") and buffer.endswith(f"[{d.description}]")):
            return i
    return None


def uses_devices(log: LlamaCppLog) -> bool:
    """The log names devices (GPUs, RPC servers) llama.cpp could place layers on — even if it placed none."""
    return bool(log.devices)


def _splits_from_layers(log: LlamaCppLog) -> tuple[float, ...] | None:
    """-ts as layer counts, from the log's `layer N assigned to device X` lines."""
    if not log.layer_devices:
        return None
    names = [d.name for d in log.devices]
    counts = [0] * len(names)
    for name in log.layer_devices.values():
        if name in names:
            counts[names.index(name)] += 1
    return tuple(float(c) for c in counts) if any(counts) else None


def _model_buffers(log: LlamaCppLog) -> dict[int, str]:
    return {i: b.mib for b in log.buffers if b.kind == "model" and (i := device_of(log, b.buffer)) is not None
            and i >= 0}  # fmt: skip


def place(log: LlamaCppLog, model: ModelDescription, s: LlamaCppSettings, p: MemoryPlan) -> DevicePlacement:
    """The log's model on its devices, as llama.cpp placed it."""
    weights = model_weights(model, None, None)
    memory = tuple(d.free_mib * MIB for d in log.devices)
    ngl = log.offloaded[0] if log.offloaded else -1
    on_host = [b for b in log.buffers if b.kind == "KV" and device_of(log, b.buffer) == -1]
    on_devices = [b for b in log.buffers if b.kind == "KV" and (device_of(log, b.buffer) or 0) >= 0]
    offloaded_all = log.offloaded is not None and log.offloaded[0] == log.offloaded[1]
    nkvo = bool(on_host) and (offloaded_all or not on_devices) and ngl != 0
    splits = _splits_from_layers(log)
    basis = "each layer's device as the log prints it (-v)" if splits else (
        "llama.cpp's default split, by each device's free memory")  # fmt: skip
    target = Target(model, weights, memory, splits, None, ngl, nkvo)
    want = _model_buffers(log)
    where = target.where()
    if not splits and len(memory) > 1 and not _weights_equal(target, where, want, s):
        found = _split_for(target, want, s)
        if found is None:
            basis += ("; no split of whole layers gives the model buffers the log prints (tensors moved by an -ot or "
                      "-ncmoe the log does not list?)")  # fmt: skip
        else:
            target = dataclasses.replace(target, splits=found)
            where = target.where()
            counts = ",".join(f"{x:g}" for x in found)
            basis = (f"the split whose weights give the model buffers the log prints (-ts {counts}: the log prints "
                     "no -ts, and llama.cpp's default split by free memory does not give them)")  # fmt: skip
    if weights.expert_bytes and not _weights_equal(target, where, want, s):
        n = _cpu_moe_for(target, want, s)
        if n is not None:
            target = dataclasses.replace(target, n_cpu_moe=n)
            where = target.where()
            basis += (f"; -ncmoe {n}: the first {n} layers' MoE experts in host memory give the model buffers the "
                      "log prints (the log prints no -ncmoe)")  # fmt: skip
    return DevicePlacement(target, target.place(s, p), tuple(where), basis)


def _cpu_moe_for(target: Target, want: dict[int, str], s: LlamaCppSettings) -> int | None:
    """The -ncmoe N (the first N layers' experts kept in host memory) whose placement gives the printed GPU model
    buffers, where one does."""
    for n in range(1, len(target.weights.layer_bytes) + 1):
        t = dataclasses.replace(target, n_cpu_moe=n)
        if _weights_equal(t, t.where(), want, s):
            return n
    return None


def _weights_equal(target: Target, where: list[int], want: dict[int, str], s: LlamaCppSettings) -> bool:
    w = target.device_weights(where, s.backend)
    return bool(want) and all(_mib(w[i]) == mib for i, mib in want.items())


def _split_for(target: Target, want: dict[int, str], s: LlamaCppSettings) -> tuple[float, ...] | None:
    """The layer counts per device, in order, whose weights give the printed model buffers: each candidate's
    weights by prefix sums over the offloaded layers (each layer's bytes as the loader places them, the output
    layer last), the one that matches confirmed by the placement itself."""
    n = len(target.memory)
    where = target.where()
    first = next((il for il, d in enumerate(where) if d >= 0), len(where))
    offloaded = len(where) - first
    # what one layer weighs on a device (the output layer last): each offloaded layer placed there alone
    per_layer = [target.device_weights([0 if j == il else -1 for j in range(len(where))], s.backend)[0]
                 for il in range(first, len(where))]  # fmt: skip
    prefix = [0]
    for b in per_layer:
        prefix.append(prefix[-1] + b)
    wanted = [want.get(i) for i in range(n)]
    tried = 0
    for cut in itertools.combinations(range(offloaded + n - 1), n - 1):  # stars and bars: counts summing up
        tried += 1
        if tried > MAX_SPLITS:
            return None
        counts, last = [], -1
        for c in (*cut, offloaded + n - 1):
            counts.append(c - last - 1)
            last = c
        at, ok = 0, True
        for d, c in enumerate(counts):
            mine = prefix[at + c] - prefix[at]
            at += c
            if wanted[d] is not None and _mib(mine) != wanted[d]:
                ok = False
                break
        if not ok or not any(counts):
            continue
        splits = tuple(float(c) for c in counts)
        t = dataclasses.replace(target, splits=splits)
        if _weights_equal(t, t.where(), want, s):
            return splits
    return None


def _layers(where: tuple[int, ...], device: int) -> str:
    mine = [il for il, d in enumerate(where) if d == device]
    if not mine:
        return "no layers"
    out = " (the output layer)" if mine[-1] == len(where) - 1 else ""
    return f"layers {mine[0]}–{mine[-1]}{out}" if len(mine) > 1 else f"layer {mine[0]}{out}"


def placement_figures(log: LlamaCppLog, dp: DevicePlacement, p: MemoryPlan, s: LlamaCppSettings) -> list[Figure]:
    """Every buffer the log prints per device beside kvplan's: model, KV (per cache), compute."""
    pl, where = dp.placement, dp.where
    kv = dp.target.device_kv(p, list(where), s)  # (per cache: the placement keeps each device's total)
    usage = [*pl.gpus, pl.host]
    exact = "exact from the GGUF's tensor infos" if dp.target.weights.exact else dp.target.weights.basis
    out: list[Figure] = []
    kv_seen: dict[int, int] = {}
    for b in log.buffers:
        i = device_of(log, b.buffer)
        if i is None or b.kind not in ("model", "KV", "compute") or b.buffer == "CPU_REPACK":
            continue
        d = i if i >= 0 else len(usage) - 1
        where_d = _layers(where, i) if i >= 0 else "the token embeddings and the layers kept in host memory"
        if b.kind == "model":
            mine, why = usage[d].weight_bytes, f"{where_d}: their weights, {exact}; {dp.split_basis}"
        elif b.kind == "KV":
            caches = [c for c in range(len(p.caches)) if kv[c][d]]  # the caches with layers here, in order
            k = kv_seen.get(d, 0)
            kv_seen[d] = k + 1
            if k >= len(caches):
                out.append(Figure(f"{b.buffer} KV buffer, MiB", b.mib, "-", False,
                                  "not explained: kvplan places no more caches here"))  # fmt: skip
                continue
            c = caches[k]
            mine = kv[c][d]
            why = f"the {p.caches[c].name} cache's layers here ({where_d})" + (" (-nkvo)" if dp.target.no_kv_offload
                                                                                else "")  # fmt: skip
        else:
            mine = usage[d].compute_bytes
            parts = ", ".join(f"{role} {_mib(n)} MiB" for role, n in usage[d].compute_parts[:3])
            why = "llama.cpp's graph split over the devices, each split planned by ggml's allocator" + (
                f"; at its peak: {parts}" if parts else "")  # fmt: skip
        equal = _mib(mine) == b.mib
        if not equal and b.buffer == "CPU_Mapped" and b.kind == "model" and float(b.mib) > mine / MIB:
            why += (
                " (llama.cpp maps the file's range from the first to the last tensor kept in host memory, "
                "the tensors between them that went to a GPU included: the file's tensor order decides it)"
            )
        out.append(Figure(f"{b.buffer} {b.kind} buffer, MiB", b.mib, _mib(mine), equal,
                          why if equal else f"not explained: kvplan's {why}", mine))  # fmt: skip
    return out


def host_notes(log: LlamaCppLog) -> tuple[str, ...]:
    """What the log holds that kvplan does not plan, said rather than compared."""
    out = []
    for b in log.buffers:
        if b.buffer == "CPU_REPACK":
            out.append(f"CPU_REPACK model buffer {b.mib} MiB: the CPU backend's repacked copies of some host tensors "
                       "(ggml-cpu's extra buffer type, chosen by the CPU's instruction set): not planned")  # fmt: skip
    return tuple(dict.fromkeys(out))


def fit_figures(log: LlamaCppLog, dp: DevicePlacement, s: LlamaCppSettings) -> list[Figure]:
    """llama.cpp's fit as the log tells it, beside kvplan's port of it on the same devices and flags."""
    from kvplan.capacity.llamacpp_fit import FitError, fit_params

    fit = log.fit
    if fit is None or not fit.outcome or not log.devices:
        return []
    given_ngl = _given_ngl(fit.outcome)
    target = dataclasses.replace(dp.target, n_gpu_layers=given_ngl)  # (its splits: None where the default split)
    targets = _fit_targets(log)
    ctx_given = fit.reduced is None and not fit.full_ctx_asked
    settings = s if ctx_given else dataclasses.replace(s, n_ctx=0)
    try:
        choice = fit_params(target, settings, ctx_given=ctx_given, margins_mib=tuple(targets),
                            n_ctx_min=FIT_FULL_CTX if fit.full_ctx_asked else FIT_MIN_CTX)  # fmt: skip
    except FitError as exc:
        mine = f"gave up: {exc}"
        logged = f"gave up: {fit.outcome}"
        return [Figure("llama.cpp's fit", logged, mine, logged == mine,
                       "the flags given leave a device short of its target, and llama.cpp's fit does not change "
                       "flags the user set: it runs them as given" if logged == mine else "not explained")]  # fmt: skip
    except KvplanError as exc:
        return [Figure("llama.cpp's fit", fit.outcome, "-", False, f"not explained: kvplan cannot fit it: {exc}")]
    total = log.offloaded[1] if log.offloaded else 0
    mine_ngl = total if choice.n_gpu_layers < 0 and given_ngl < 0 else max(choice.n_gpu_layers, given_ngl)
    logged_ngl = log.offloaded[0] if log.offloaded else -1
    logged = f"-c {log.setting('n_ctx')} -ngl {logged_ngl}"
    mine = f"-c {choice.n_ctx} -ngl {mine_ngl}"
    if fit.outcome != "success":
        logged = f"gave up: {fit.outcome}"
    steps = "; ".join(choice.steps) or "no change"
    equal = logged == mine
    return [Figure("llama.cpp's fit (its -c and -ngl)", logged, mine, equal,
                   f"kvplan's port of common_fit_params on the log's devices: {steps}" if equal
                   else f"not explained: {steps}")]  # fmt: skip


def _fit_targets(log: LlamaCppLog) -> list[int]:
    """Each device's free-memory target (MiB) as the log's fit states it (-fitt), else llama.cpp's default."""
    stated = log.fit.targets_mib if log.fit else {}
    return [stated.get(d.description, stated.get("", FIT_TARGET_MIB)) for d in log.devices]


def _given_ngl(outcome: str) -> int:
    """The -ngl the user gave, where llama.cpp's fit says so in giving up."""
    head = "n_gpu_layers already set by user to "
    if outcome.startswith(head):
        digits = outcome[len(head) :].split(",", 1)[0].strip()
        if digits.lstrip("-").isdigit():
            return int(digits)
    return -1


def device_changes(
    log: LlamaCppLog, dp: DevicePlacement, candidates: list[tuple[str, LlamaCppSettings]]
) -> tuple[Change, ...]:
    """Each change placed on the log's devices as the log's run was (kvplan fit's placement): its KV / state, its
    compute over every device and the host, and whether every device keeps llama.cpp's fit target free (1,024 MiB
    unless the log's fit says otherwise)."""
    targets = _fit_targets(log)
    out = []
    for flags, changed in candidates:
        try:
            pl = dp.target.place(changed)
        except KvplanError:
            continue  # (a change llama.cpp refuses for this model is no option)
        free = [(d.free_bytes or 0, log.devices[i].name, t) for i, (d, t) in enumerate(zip(pl.gpus, targets,
                                                                                            strict=True))]  # fmt: skip
        short = [(f, name, t) for f, name, t in free if f < t * MIB]
        if not short:
            verdict = f"every device keeps {min(targets):,} MiB free" if free else "no device"
        else:
            f, name, t = min(short)
            verdict = (f"{name} short by {_mib(t * MIB - f)} MiB of its {t:,} MiB target" if f >= 0
                       else f"does not fit: {name} over by {_mib(-f)} MiB")  # fmt: skip
        compute = sum(d.compute_bytes for d in pl.devices)
        out.append(Change(flags, pl.plan.total_bytes, compute, verdict))
    return tuple(out)
