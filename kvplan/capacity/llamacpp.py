"""llama.cpp on GPUs: where each layer, its weights and its KV go, and the solvers over that placement.

llama.cpp puts layer ``il`` on the CPU when ``il < n_layer + 1 - n_gpu_layers``, else on GPU
``upper_bound(splits, (il - i_gpu_start) / act_gpu_layers)`` (src/llama-model.cpp load_tensors, float arithmetic;
index ``n_layer`` is the output layer), keeps the input layer (token embeddings) in host memory, and puts each
layer's KV / state with its layer (offload_kqv; ``-nkvo`` keeps it all in host memory). The solvers are exact
integer searches over the same layout code as ``estimate``: the answer fits and the next step does not.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvplan.capacity.llamacpp_settings import CACHE_TYPE_LADDER, settings_for
from kvplan.capacity.request import Request
from kvplan.capacity.results import (
    Alternative,
    DeviceUsage,
    FitResult,
    Mode,
    Shortfall,
    binding_constraint,
)
from kvplan.capacity.weights import Weights, model_weights, without_layers
from kvplan.errors import RefusedConfigError, UnsupportedError
from kvplan.model import ModelDescription
from kvplan.runtimes import LLAMACPP
from kvplan.runtimes.llamacpp import (
    Backend,
    CacheKind,
    FlashAttn,
    LlamaCppSettings,
    MemoryPlan,
    plan,
    plan_mtp_draft,
)
from kvplan.runtimes.llamacpp.memory import MTP_TENSORS_SKIPPED
from kvplan.runtimes.llamacpp.plan import KV_PAD_CELLS, LLAMA_MAX_SEQ
from kvplan.units import GIB

if TYPE_CHECKING:
    from kvplan.runtimes.llamacpp.pattern import Pattern

#: per-GPU overhead when not given: the CUDA context and the context-independent part of llama.cpp's compute
#: buffer (an estimate; `llama-fit-params --fit-print on` reports the compute buffer, e.g. 266 MiB for an 8B model
#: at ubatch 512); the part that grows with the context is compute_buffer() below
DEFAULT_OVERHEAD_BYTES = 1 * GIB
COMPUTE_BASIS = "llama.cpp's graph split over the devices (ports of its scheduler and allocator)"
#: how far CUDA's rules are proven (tests/runtimes/llamacpp/compute/test_cuda_recorded.py, test_cuda_graph_recorded.py)
CUDA_RULES = "CUDA's rules, recorded on an H200 (122 of 122 single-GPU placements equal)"


def default_backend(req: Request) -> Backend:
    """The buffer rules a plan on GPUs takes unless --backend says: ROCm's for an AMD Instinct preset (MI210 …
    MI355X), CUDA's otherwise."""
    model = req.hardware.model if req.hardware is not None else None
    return Backend.ROCM if model is not None and model.name.startswith("MI") else Backend.CUDA


def derived_rules(backend: Backend) -> str:
    """What an answer on a backend whose rules are not recorded says of them."""
    source = {Backend.ROCM: "ggml-cuda (HIP)", Backend.METAL: "ggml-metal", Backend.VULKAN: "ggml-vulkan"}
    return f"{backend.display}'s rules derived from {source.get(backend, 'its')} source, not recorded"


#: what a GPU's total memory holds that llama.cpp does not see free, where the compute is kvplan's own: an
#: estimate from public startup logs (total − free reported before loading: RTX 4090 24,563 − 23,040 MiB,
#: llama.cpp issue #27680 and Ollama issue #8923; H100 80 GB 79.65 − 78.6 GiB, Ollama issue #8098): 1.05 to
#: 1.49 GiB, so 1 GiB, as before; give --memory (the free memory) or --overhead where you know better
DEVICE_RESERVE_BYTES = 1 * GIB
RUN_COMMAND = "llama-server"
_MASK_BYTES = 2  # f16 KQ mask (flash attention); the f32 scores and mask without it are 4 B
_SCORE_BYTES = 4


def _f32(x: float) -> float:
    """x rounded to a C float, as llama.cpp's split arithmetic computes."""
    return float(struct.unpack("f", struct.pack("f", x))[0])


def layer_devices(n_layer_all: int, splits: Sequence[float], n_gpu_layers: int = -1) -> list[int]:
    """The device of each layer and of the output layer (last entry): a GPU index, or -1 for the host — as
    llama.cpp's load_tensors assigns them (``n_gpu_layers`` < 0: all)."""
    ngl = n_layer_all + 1 if n_gpu_layers < 0 else n_gpu_layers
    i_gpu_start = max(n_layer_all + 1 - ngl, 0)
    act = min(ngl, n_layer_all + 1)
    cumulative, acc = [], 0.0
    for s in splits:
        acc = _f32(acc + _f32(s))
        cumulative.append(acc)
    cumulative = [_f32(c / acc) for c in cumulative]
    out = []
    for il in range(n_layer_all + 1):
        if il < i_gpu_start or il - i_gpu_start >= act:
            out.append(-1)
        else:
            at = _f32(float(il - i_gpu_start) / act)
            out.append(min(bisect.bisect_right(cumulative, at), len(splits) - 1))
    return out


def compute_buffer(p: MemoryPlan) -> tuple[int, str]:
    """The compute-buffer terms that grow with the context, per GPU: the KQ mask of one ubatch (f16 with flash
    attention, f32 without) and, with flash attention off, the f32 KQ scores n_head × cells × n_ubatch × 4 B.
    Checked against llama.cpp's own compute buffer (tests/fixtures/oracle/compute.json, CPU backend)."""
    ctx = p.context
    caches = [c.cells for c in p.caches if c.kind is CacheKind.ATTENTION]
    if not caches:
        return 0, ""
    cells, mask_cells = max(caches), sum(caches)  # one mask per cache (full, SWA) lives through the graph
    ubatch = ctx.n_ubatch
    if ctx.flash_attn is FlashAttn.ON:
        return mask_cells * ubatch * _MASK_BYTES, f"KQ mask {mask_cells:,} cells × ubatch {ubatch:,} × 2 B"
    heads = max((la.n_head for la in p.model.layers if not la.recurrent), default=0)
    scores = (heads * cells + mask_cells) * ubatch * _SCORE_BYTES
    return scores, (
        f"flash attention off: KQ scores n_head {heads} × {cells:,} cells + mask {mask_cells:,} cells, "
        f"× ubatch {ubatch:,} × 4 B"
    )


@dataclass(frozen=True)
class Placement:
    """One configuration placed on the devices."""

    settings: LlamaCppSettings
    plan: MemoryPlan
    gpus: tuple[DeviceUsage, ...]
    host: DeviceUsage
    compute_basis: str
    draft: Placement | None = None  # -md: the draft model's own placement (already added to gpus and host)

    @property
    def fits(self) -> bool:
        return all((d.free_bytes or 0) >= 0 for d in self.gpus)

    @property
    def devices(self) -> tuple[DeviceUsage, ...]:
        host = self.host
        return self.gpus + ((host,) if host.weight_bytes or host.kv_bytes else ())

    @property
    def tightest(self) -> DeviceUsage:
        return min(self.gpus, key=lambda d: d.free_bytes or 0)


@dataclass(frozen=True)
class Target:
    """A model with its weights on some GPUs: what every placement and solver works on."""

    model: ModelDescription
    weights: Weights
    memory: tuple[int, ...]
    splits: tuple[float, ...] | None = None  # -ts proportions (default: by memory)
    #: per GPU (one value for every GPU, or one each); None: kvplan's own compute (or, without a graph, the
    #: estimate DEFAULT_OVERHEAD_BYTES + compute_buffer)
    overhead: tuple[int, ...] | None = None
    n_gpu_layers: int = -1  # -ngl (< 0: all)
    no_kv_offload: bool = False
    n_cpu_moe: int = 0  # the first N layers keep their MoE experts in host memory (-ncmoe N; -cmoe: all)
    overrides: tuple[tuple[str, str], ...] = ()  # -ot: (regex, buffer), first match wins
    draft: Target | None = None  # -md: the draft model on the same GPUs (its -ngld; no overrides)
    draft_types: tuple[str, str] = ("f16", "f16")  # -ctkd / -ctvd
    mtp: bool = False  # --mtp: the MTP draft context on the main model's weights (nextn layers' KV)
    first_gpu: int = 0  # the place of memory[0] among the GPUs (-sm none -mg N: the one GPU llama.cpp uses)
    split_none: bool = False  # -sm none: model->devices is the main GPU alone
    #: the compute as llama.cpp's fit projects it (no_alloc: the graph callback's backend assignments are lost),
    #: not as a context allocates it
    fit_projection: bool = False
    #: per GPU, the memory a --gpu preset's total holds that llama.cpp never sees free (CUDA context, driver,
    #: display): DEVICE_RESERVE_BYTES for a preset; 0 for --memory, which is the free memory llama.cpp sees
    device_reserve: int = 0

    def place(self, settings: LlamaCppSettings, p: MemoryPlan | None = None) -> Placement:
        """Weights, KV / state, compute and overhead of every device for one configuration (raises where
        llama.cpp refuses the configuration); with a draft model, its weights, KV and compute added on the
        devices it lands on (common_fit_params adds the extra model's memory device by device)."""
        main = self._place(settings, p)
        if self.draft is not None:
            d = self.draft._place(dataclasses.replace(settings, type_k=self.draft_types[0], type_v=self.draft_types[1]))
        elif self.mtp:  # the same weights (shares_model): only the draft context's KV and compute
            mtp_plan = plan_mtp_draft(self.model, settings, *self.draft_types)
            bare = dataclasses.replace(self.weights, input_bytes=0, output_bytes=0, tensors=(), expert_bytes=(),
                                       layer_bytes=tuple(0 for _ in self.weights.layer_bytes))  # fmt: skip
            d = dataclasses.replace(self, weights=bare, overrides=(), n_cpu_moe=0)._place(settings, mtp_plan)
        else:
            return main
        explicit = self.overhead is not None  # a measured overhead: the draft's compute is in it, as the main's

        def add(a: DeviceUsage, b: DeviceUsage) -> DeviceUsage:
            layers = (a.layers, b.layers)
            return dataclasses.replace(
                a,
                weight_bytes=a.weight_bytes + b.weight_bytes,
                kv_bytes=a.kv_bytes + b.kv_bytes,
                compute_bytes=a.compute_bytes + (0 if explicit else b.compute_bytes),
                layers=layers[0] if layers[0] is not None else layers[1],
            )

        gpus = tuple(add(a, b) for a, b in zip(main.gpus, d.gpus, strict=True))
        return dataclasses.replace(main, gpus=gpus, host=add(main.host, d.host), draft=d)

    def _place(self, settings: LlamaCppSettings, p: MemoryPlan | None = None) -> Placement:
        model, memory = self.model, self.memory
        own_plan = p is None  # (a draft's plan is given: its caches stay as planned)
        p = p or plan(model, settings)
        # all zero (or none): llama.cpp's default split, by each device's memory (load_tensors' all_zero)
        where = self.where()
        n = len(memory)
        w = self.device_weights(where, p.context.backend)
        kv = [sum(per_cache) for per_cache in zip(*self.device_kv(p, where, settings, own_plan), strict=True)]
        computes = [0] * (n + 1)
        parts: list[tuple[tuple[str, int], ...]] = [()] * (n + 1)
        exact = self._compute_exact(p, where, computes, parts) if self.overhead is None else None
        if exact is not None:
            basis, overheads = exact, [self.device_reserve] * n
        elif self.overhead is None:
            compute, basis = compute_buffer(p)
            computes = [compute] * n + [0]
            overheads = [DEFAULT_OVERHEAD_BYTES] * n
        else:
            basis = "included in --overhead"
            overheads = list(self.overhead) if len(self.overhead) == n else [self.overhead[0]] * n
        gpus = tuple(
            DeviceUsage(
                f"GPU{self.first_gpu + i}",
                memory[i],
                _span([il for il in range(model.n_layer_all) if where[il] == i]),
                w[i],
                kv[i],
                computes[i],
                overheads[i],
                parts[i],
            )
            for i in range(n)
        )
        host_layers = [il for il in range(model.n_layer_all) if where[il] == -1]
        host = DeviceUsage("host", None, _span(host_layers), w[-1], kv[-1], computes[-1], 0, parts[-1])
        return Placement(settings, p, gpus, host, basis)

    def where(self) -> list[int]:
        """Each layer's device and the output layer's (last): a GPU index, -1 the host — by -ts, or by each
        device's memory (llama.cpp's default split; an all-zero -ts is the default too)."""
        splits = self.splits if self.splits and any(self.splits) else [float(m) for m in self.memory]
        return layer_devices(self.model.n_layer_all, splits, self.n_gpu_layers)

    def device_weights(self, where: list[int], backend: Backend) -> list[int]:
        """Each GPU's weights and the host's (last), as llama.cpp's loader places the tensors."""
        weights = self.weights
        w = [0] * (len(self.memory) + 1)  # the last slot is the host
        cuda_extra = weights.cuda_extra if backend.cuda_like else ()
        moved = self._moved(weights) if self.overrides or (self.n_cpu_moe and cuda_extra) else {}
        if self.overrides:  # tensor by tensor, as llama.cpp's loader does with buffer overrides
            _by_tensor(weights.tensors, where, moved, w)
        else:
            experts = weights.expert_bytes[: self.n_cpu_moe] if self.n_cpu_moe else ()
            for il, b in enumerate(weights.layer_bytes):
                e = experts[il] if il < len(experts) else 0  # llama.cpp's tensor buffer overrides: experts to host
                w[where[il]] += b - e
                w[-1] += e
            w[where[-1]] += weights.output_bytes
            w[-1] += weights.input_bytes
        if where[-1] == -1 and moved.get("token_embd.weight", -1) == -1:
            # tied embeddings with the output layer in host memory: the duplicate is the token embeddings' own
            # tensor in the same buffer, held once (llama.cpp's logs of Gemma 3 270M at -ngl 0: 235.16 MiB of host
            # weights, mapped, or loaded with -lm none as 222.51 MiB + its 12.66 MiB of repacked tensors)
            w[-1] -= weights.tied_output_bytes
        _by_tensor(cuda_extra, where, moved, w, host=False)  # (CUDA's buffers: on the GPUs only)
        return w

    def device_kv(
        self, p: MemoryPlan, where: list[int], settings: LlamaCppSettings, own_plan: bool = True
    ) -> list[list[int]]:
        """Each cache's bytes on each GPU and on the host (last): a layer's cache lives with its layer (-nkvo:
        on the host)."""
        host_caches = None  # a layer's cache in host memory is a CPU buffer's (llama_kv_cache: no CUDA padding)
        if own_plan and p.context.backend is not Backend.CPU and (self.no_kv_offload or -1 in where):
            host_caches = plan(self.model, dataclasses.replace(settings, backend=Backend.CPU)).caches
        out = []
        for ic, cache in enumerate(p.caches):
            kv = [0] * (len(self.memory) + 1)
            for j, (il, b) in enumerate(zip(cache.layers, cache.layer_bytes, strict=True)):
                d = -1 if self.no_kv_offload else where[min(il, len(where) - 1)]
                kv[d] += host_caches[ic].layer_bytes[j] if d == -1 and host_caches is not None else b
            out.append(kv)
        return out or [[0] * (len(self.memory) + 1)]

    def _compute_exact(
        self, p: MemoryPlan, where: list[int], out: list[int], parts: list[tuple[tuple[str, int], ...]]
    ) -> str | None:
        """Each device's compute buffer and the host's, from llama.cpp's graph split over this placement, and its
        basis (None where kvplan has no graph for the architecture)."""
        from kvplan.runtimes.llamacpp.compute import Placement as Devices
        from kvplan.runtimes.llamacpp.compute import device_compute_buffers
        from kvplan.runtimes.llamacpp.compute.sched import RULES

        if self.draft is not None or self.mtp or self.split_none:
            return None
        rules = self._override_rules()
        n = len(self.memory)
        devices = Devices(
            n_devices=n,
            where=tuple(where),
            rules=tuple(rules),
            kv_on_host=self.no_kv_offload,
            pipeline_parallel=n > 1 and all(d != -1 for d in where) and not rules and not self.no_kv_offload,
            pins=not self.fit_projection,
        )
        backend = p.context.backend
        w = self.weights
        extra = w.cuda_extra_by_name if backend.cuda_like else None
        got = device_compute_buffers(p, devices, RULES[backend], w.bytes_by_name, extra)
        if got is None:
            return None
        for i, c in enumerate(got):
            out[i], parts[i] = c.bytes, c.parts
        if backend is Backend.CPU:
            return COMPUTE_BASIS
        return f"{COMPUTE_BASIS}; {CUDA_RULES if backend is Backend.CUDA else derived_rules(backend)}"

    def _override_rules(self) -> list[tuple[Pattern, int]]:
        """The tensor buffer overrides in llama.cpp's order: -ot's (pattern → GPU index, -1 for the host), then
        -ncmoe / -cmoe's experts to the host."""
        from kvplan.runtimes.llamacpp.overrides import compiled, own

        rules = [(compiled(p), -1 if b.upper() == "CPU" else int(re.match(r"^[A-Za-z]+(\d+)", b).group(1)))  # type: ignore[union-attr]
                 for p, b in self.overrides]  # fmt: skip
        ncmoe = r"blk\.{il}\.ffn_(up|down|gate|gate_up)_(ch|)exps"
        rules += [(compiled(own(ncmoe.format(il=il))), -1) for il in range(self.n_cpu_moe)]
        return rules

    def _moved(self, weights: Weights) -> Mapping[str, int]:
        """Each tensor a buffer override moves → its device (-1 the host): the first -ot pattern its name matches
        (std::regex_search, in linear time: runtimes.llamacpp.pattern), then -ncmoe / -cmoe's (patterns of their
        own, after the user's)."""
        from kvplan.runtimes.llamacpp.overrides import destinations

        rules = self._override_rules()
        return destinations(rules, weights.names) if rules else {}

    def fitting(self, settings: LlamaCppSettings) -> Placement | None:
        """The placement if llama.cpp accepts the settings and every GPU has room, else None."""
        try:
            placement = self.place(settings)
        except RefusedConfigError:
            return None  # a configuration llama.cpp refuses is one that does not run here
        return placement if placement.fits else None

    def max_context(self, settings: LlamaCppSettings, n_seq: int, limit: int) -> Placement | None:
        """The largest context per sequence (a multiple of 256 tokens, at most ``limit``) with which ``n_seq``
        sequences fit; None if 256 does not. Bisection: the bytes do not shrink as the context grows."""
        hi = max(1, limit // KV_PAD_CELLS)

        def at(k: int) -> Placement | None:
            return self.fitting(per_sequence(settings, n_seq, k * KV_PAD_CELLS))

        best = at(1)
        if best is None:
            return None
        top = at(hi)
        if top is not None:
            return top
        lo = 1  # fits (best); hi does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            found = at(mid)
            if found is not None:
                lo, best = mid, found
            else:
                hi = mid
        return best

    def max_parallel(self, settings: LlamaCppSettings, ctx_per_seq: int) -> Placement | None:
        """The most sequences (1..256) of ``ctx_per_seq`` tokens each that fit. The bytes grow with the count,
        but llama.cpp refuses some counts outright (a batch smaller than the sequences, MiniMax-01's ubatch
        rule), so the search bisects over ``n → the largest count ≤ n llama.cpp accepts``, which is monotone;
        refused counts cost no plan."""
        placed: dict[int, Placement | None] = {}
        refused: set[int] = set()

        def accepted(n: int) -> int:  # the largest count <= n llama.cpp does not refuse (0: none)
            while n >= 1:
                if n not in refused:
                    if n not in placed:
                        try:
                            p = self.place(per_sequence(settings, n, ctx_per_seq))
                        except RefusedConfigError:
                            refused.add(n)
                            n -= 1
                            continue
                        placed[n] = p if p.fits else None
                    return n
                n -= 1
            return 0

        def fits(n: int) -> bool:
            k = accepted(n)
            return k >= 1 and placed[k] is not None

        best = largest(1, LLAMA_MAX_SEQ, fits)
        return None if best is None else placed[accepted(best)]

    def cheapest_cache_types(self, settings: LlamaCppSettings) -> Placement | None:
        """The first (least lossy) K/V type pair with which ``settings`` fits."""
        for tk, tv in CACHE_TYPE_LADDER:
            p = self.fitting(dataclasses.replace(settings, type_k=tk, type_v=tv))
            if p is not None:
                return p
        return None

    def max_gpu_layers(self, settings: LlamaCppSettings) -> int | None:
        """The most layers (-ngl) that fit on the GPUs with this configuration; None if even 0 does not."""
        p = plan(self.model, settings)

        def fits(ngl: int) -> bool:
            return dataclasses.replace(self, n_gpu_layers=ngl).place(settings, p).fits

        # bisection: a layer more on the GPUs never needs less of their memory (its weights and KV move there;
        # the compute buffer's share of a layer is far smaller), as the context and sequence searches assume
        return largest(0, self.model.n_layer_all + 1, fits)


def _overhead_basis(target: Target, placement: Placement) -> str:
    """What the overhead row stands for: given, the preset's CUDA context estimate, nothing (--memory is free
    memory), or — without llama.cpp's graph — the old estimate that covers the compute buffer too."""
    if target.overhead is not None:
        return "given (--overhead)"
    if not placement.compute_basis.startswith(COMPUTE_BASIS):
        return (
            "estimate: CUDA context + llama.cpp's fixed compute buffer (kvplan has no graph for this architecture "
            "yet); measure with llama-fit-params --fit-print on and pass --overhead"
        )
    if target.device_reserve:
        return (
            "the CUDA context and driver's share of a --gpu preset's total (an estimate from public logs); give "
            "--memory with the free memory llama.cpp reports to leave it out"
        )
    return "none: --memory is the free memory llama.cpp sees"


def largest(lo: int, hi: int, fits: Callable[[int], bool]) -> int | None:
    """The largest n in [lo, hi] with fits(n), for a fits that holds up to a point and not beyond (bisection);
    None if not even lo fits."""
    if fits(hi):
        return hi
    if not fits(lo):
        return None
    while hi - lo > 1:  # fits(lo), not fits(hi)
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _span(layers: list[int]) -> tuple[int, int] | None:
    return (layers[0], layers[-1]) if layers else None


def per_sequence(settings: LlamaCppSettings, n_seq: int, ctx_per_seq: int) -> LlamaCppSettings:
    """llama.cpp settings for ``n_seq`` sequences of ``ctx_per_seq`` tokens each (-c N×C -np N)."""
    return dataclasses.replace(settings, n_seq=n_seq, n_ctx=n_seq * ctx_per_seq)


def cache_label(type_k: str, type_v: str) -> str:
    return type_k if type_k == type_v else f"K {type_k} / V {type_v}"


def run_command(model: ModelDescription, ref: str) -> str:
    """llama-server with the model: the GGUF given, else the catalog model's name as a GGUF file."""
    gguf = ref if ref.lower().endswith(".gguf") or "://" in ref else f"{model.name}.gguf"
    return f"{RUN_COMMAND} -m {gguf}"


def _split_args(target: Target) -> list[str]:
    """-sm none -mg N, and -ts as given (all zero is llama.cpp's default split: left out)."""
    out = ["-sm", "none", "-mg", str(target.first_gpu)] if target.split_none else []
    if target.splits and any(target.splits):
        out += ["-ts", ",".join(f"{x:g}" for x in target.splits)]
    return out


def run_args(model: ModelDescription, target: Target, placement: Placement) -> tuple[str, ...]:
    """llama-server's arguments that reproduce ``placement`` on ``target``: every flag the answer depends on
    (llama.cpp's defaults are left out only where they are llama.cpp's defaults too)."""
    s, ctx = placement.settings, placement.plan.context
    default = LlamaCppSettings()
    args = ["-c", str(ctx.n_ctx_asked), "-np", str(ctx.n_seq), "-ctk", ctx.type_k.name, "-ctv", ctx.type_v.name,
            "-fa", ctx.flash_attn_asked.value]  # fmt: skip
    if s.n_batch != default.n_batch:
        args += ["-b", str(s.n_batch)]
    if s.n_ubatch != default.n_ubatch:
        args += ["-ub", str(s.n_ubatch)]
    if ctx.kv_unified:
        args.append("-kvu")
    if ctx.swa_full:
        args.append("--swa-full")
    args += _split_args(target)
    ngl = target.n_gpu_layers
    args += ["-ngl", str(model.n_layer_all + 1 if ngl < 0 else ngl)]
    if target.no_kv_offload:
        args.append("-nkvo")
    if target.overrides:
        args += ["-ot", ",".join(f"{p}={b}" for p, b in target.overrides)]
    if target.n_cpu_moe:
        args += ["-cmoe"] if target.n_cpu_moe >= model.n_layer_all else ["-ncmoe", str(target.n_cpu_moe)]
    if target.draft is not None:
        dm = target.draft.model
        gguf = dm.source if dm.source.lower().endswith(".gguf") or "://" in dm.source else f"{dm.name}.gguf"
        dngl = target.draft.n_gpu_layers
        args += ["-md", gguf, "-ngld", str(dm.n_layer_all + 1 if dngl < 0 else dngl)]
    if target.mtp:
        args += ["--spec-type", "draft-mtp"]
    if (target.draft is not None or target.mtp) and target.draft_types != ("f16", "f16"):
        args += ["-ctkd", target.draft_types[0], "-ctvd", target.draft_types[1]]
    args += ["--fit", "off"]
    return tuple(args)


class LlamaCppSolver:
    """The budget questions (max context, max sequences) on a fixed target."""

    def __init__(self, target: Target, base: LlamaCppSettings) -> None:
        self.target, self.base = target, base

    def max_ctx_per_seq(self, n_seq: int, limit: int) -> int:
        found = self.target.max_context(self.base, n_seq, limit)
        return found.plan.context.n_ctx_seq if found else 0

    def max_parallel(self, ctx_per_seq: int) -> int:
        found = self.target.max_parallel(self.base, ctx_per_seq)
        return found.plan.context.n_seq if found else 0


@dataclass(frozen=True)
class LlamaCppFit:
    """llama.cpp's side of a fit answer: the placement (with the exact memory plan) and the target."""

    placement: Placement
    target: Target


def _loaded(model: ModelDescription, weights: Weights, load_mtp: bool) -> Weights:
    """The weights llama.cpp loads: without the nextn / MTP blocks' tensors unless the MTP draft is asked for
    (load_mtp, which the draft model's params inherit from the main's: common_base_params_to_speculative)."""
    if model.arch in MTP_TENSORS_SKIPPED and not load_mtp:
        return without_layers(weights, range(model.n_layer, model.n_layer_all))
    return weights


class LlamaCppRuntime:
    """llama.cpp (llama-server / llama-cli), byte-exact."""

    name = LLAMACPP
    label = "llama.cpp"

    def target(self, model: ModelDescription, req: Request) -> Target:
        assert req.hardware is not None  # build_request(need_hardware=True)
        o = req.llamacpp
        overhead = req.overhead
        weights = _loaded(model, model_weights(model, req.weights, req.weight_bytes), o.mtp)
        if o.override_tensor and not weights.tensors:
            raise req.origin("override_tensor").error("needs the tensors' names and sizes: a GGUF (its tensor infos)")
        for _, buft in o.override_tensor:
            index = re.match(r"^[A-Za-z]+(\d+)", buft)
            if index is not None and int(index.group(1)) >= req.hardware.count:
                raise req.origin("override_tensor").error(f"{buft}: there are {req.hardware.count} GPU(s)")
        if (o.cpu_moe or o.n_cpu_moe) and not weights.expert_bytes:
            dest = "cpu_moe" if o.cpu_moe else "n_cpu_moe"
            raise req.origin(dest).error(
                "needs the MoE expert tensors' sizes: a GGUF of an MoE model (its tensor infos), not "
                f"{'an estimate' if not weights.exact else 'a model without experts'}"
            )
        memory, splits, first = req.hardware.memory_bytes, o.tensor_split, 0
        if o.split_mode == "row":  # make_gpu_buft_list: CUDA's backend registers no split buffer type any more
            device = f"{(o.backend or default_backend(req)).label}0"
            raise RefusedConfigError(
                f"llama.cpp: -sm row: device {device} does not support split buffers (make_gpu_buft_list: the "
                "CUDA, ROCm, Metal and Vulkan backends provide no split buffer type; -sm tensor took its place)"
            )
        if o.split_mode == "tensor":
            raise UnsupportedError(
                "-sm tensor: llama.cpp's experimental tensor parallelism (weights and KV split across the GPUs) is "
                "not planned yet; plan with -sm layer (the default) or -sm none"
            )
        if o.split_mode == "none":  # llama_model_load_from_file_impl: every device but main_gpu is dropped
            first = o.main_gpu or 0
            if first >= req.hardware.count:
                raise RefusedConfigError(
                    f"llama.cpp: invalid value for main_gpu: {first} (available devices: {req.hardware.count})"
                )
            memory, splits = (memory[first],), None
            if overhead is not None and len(overhead) > 1:
                overhead = (overhead[first],)
        draft = None
        dm = req.draft  # -md, loaded at the edge (kvplan.capacity.deployment.load_models)
        assert dm is not None or not o.model_draft, "load_models(req) first"
        if dm is not None:
            draft = Target(
                dm,
                _loaded(dm, model_weights(dm, req.weights, None), False),  # -md and --mtp: one or the other
                memory,
                splits,  # the draft inherits the main model's -ts (common_base_params_to_speculative)
                overhead,
                -1 if o.gpu_layers_draft is None else o.gpu_layers_draft,
                o.no_kv_offload,
                first_gpu=first,
                split_none=o.split_mode == "none",
            )
        return Target(
            model,
            weights,
            memory,
            splits,
            overhead,
            -1 if o.n_gpu_layers is None else o.n_gpu_layers,
            o.no_kv_offload,
            model.n_layer_all if o.cpu_moe else (o.n_cpu_moe or 0),
            o.override_tensor,
            draft,
            (o.cache_type_k_draft or "f16", o.cache_type_v_draft or "f16"),
            o.mtp,
            first,
            o.split_mode == "none",
            device_reserve=DEVICE_RESERVE_BYTES if req.hardware is not None and req.hardware.model is not None else 0,
        )

    def base_settings(self, req: Request) -> LlamaCppSettings:
        return settings_for(req.llamacpp, default_backend(req))

    def solver(self, model: ModelDescription, req: Request) -> LlamaCppSolver:
        return LlamaCppSolver(self.target(model, req), self.base_settings(req))

    def fit(self, model: ModelDescription, req: Request) -> FitResult:
        o = req.llamacpp
        target = self.target(model, req)
        base = self.base_settings(req)
        n_seq = o.parallel or 1
        trained = model.n_ctx_train
        # validate the configuration once: a setting llama.cpp refuses is an error, not "does not fit"
        plan(model, per_sequence(base, n_seq, min(KV_PAD_CELLS, trained or KV_PAD_CELLS)))
        if req.cache_types_auto:
            mode = Mode.CACHE_TYPES
            s = base if o.ctx_size is not None else per_sequence(base, n_seq, o.ctx_per_seq or trained)
            found, asked = target.cheapest_cache_types(s), dataclasses.replace(s, type_k="q4_0", type_v="q4_0")
        elif o.ctx_size is not None or (o.ctx_per_seq is not None and o.parallel is not None):
            mode, asked = Mode.CHECK, base
            found = target.fitting(base)
        elif o.ctx_per_seq is not None:
            mode, asked = Mode.MAX_PARALLEL, per_sequence(base, 1, o.ctx_per_seq)
            found = target.max_parallel(base, o.ctx_per_seq)
        else:
            mode, asked = Mode.MAX_CTX, per_sequence(base, n_seq, KV_PAD_CELLS)
            found = target.max_context(base, n_seq, trained)
        if found is not None:
            return self._result(model, req, target, found, mode, True)
        placement = target.place(asked)
        result = self._result(model, req, target, placement, mode, False)
        return dataclasses.replace(result, shortfall=self._shortfall(target, placement, mode))

    def _result(
        self, model: ModelDescription, req: Request, target: Target, placement: Placement, mode: Mode, fits: bool
    ) -> FitResult:
        p = placement.plan
        ctx = p.context
        gpus = placement.gpus
        used = sum(d.used_bytes for d in gpus)
        capped = mode is Mode.MAX_CTX and fits and ctx.n_ctx_asked // ctx.n_seq >= model.n_ctx_train
        tight = placement.tightest
        return FitResult(
            runtime=self.name,
            runtime_label=self.label,
            model_name=model.name,
            mode=mode,
            fits=fits,
            ctx_per_seq=ctx.n_ctx_seq,
            n_seq=ctx.n_seq,
            cache=cache_label(ctx.type_k.name, ctx.type_v.name),
            hardware_label=req.hardware.label if req.hardware else "",
            devices=placement.devices,
            kv_bytes=p.total_bytes + (placement.draft.plan.total_bytes if placement.draft is not None else 0),
            used_bytes=used,
            headroom=min((d.free_share or 0.0) for d in gpus),
            need_bytes=tight.used_bytes,
            have_bytes=tight.memory_bytes or 0,
            need_device=tight.name,
            run_command=run_command(model, req.model),
            run_args=(*run_args(model, target, placement), *(t for f in req.server_flags for t in f.tokens))
            if fits
            else (),
            weights_basis=target.weights.basis,
            overhead_basis=_overhead_basis(target, placement),
            trained_ctx=model.n_ctx_train,
            capped_by_trained=capped,
            shared=ctx.kv_unified and ctx.n_seq > 1,
            warnings=p.warnings,
            detail=LlamaCppFit(placement, target),
        )

    def _shortfall(self, target: Target, placement: Placement, mode: Mode) -> Shortfall:
        """The binding constraint on the tightest GPU, and configurations the solvers verified to fit."""
        d = placement.tightest
        assert d.memory_bytes is not None
        constraint = binding_constraint(d.memory_bytes, d.weight_bytes, d.overhead_bytes, d.compute_bytes)
        ctx = placement.plan.context
        n_seq, per_seq = ctx.n_seq, ctx.n_ctx_seq
        asked = placement.settings
        alternatives: list[Alternative] = []

        def add(
            what: str, found: Placement | None, flags: Callable[[Placement], tuple[str, ...]], detail: str = ""
        ) -> None:
            if found is not None:
                c = found.plan.context
                alternatives.append(Alternative(what, flags(found), c.n_ctx_seq, c.n_seq, detail))

        def ctx_flags(f: Placement) -> tuple[str, ...]:
            return ("-c", str(f.plan.context.n_ctx_asked), "-np", str(f.plan.context.n_seq))

        if mode is not Mode.MAX_CTX:
            add("max-ctx", target.max_context(asked, n_seq, per_seq), ctx_flags)
        if mode is not Mode.MAX_PARALLEL and n_seq > 1:
            add("max-parallel", target.max_parallel(asked, per_seq), ctx_flags)
        if mode is not Mode.CACHE_TYPES:
            add(
                "cache-types",
                target.cheapest_cache_types(asked),
                lambda f: ("-ctk", f.plan.context.type_k.name, "-ctv", f.plan.context.type_v.name),
            )
        try:
            ngl = target.max_gpu_layers(asked)
        except RefusedConfigError:
            ngl = None
        if ngl is not None and ngl > 0:
            moved = target.model.n_layer_all + 1 - ngl
            found = dataclasses.replace(target, n_gpu_layers=ngl).place(asked)
            add(
                "gpu-layers",
                found,
                lambda f: ("-ngl", str(ngl)),
                f"{moved} of {target.model.n_layer_all + 1} layers (with their KV) in host memory, which is slower",
            )
        return Shortfall(
            constraint,
            d.name,
            d.memory_bytes,
            d.weight_bytes,
            d.kv_bytes,
            d.compute_bytes,
            d.overhead_bytes,
            tuple(alternatives),
        )


RUNTIME = LlamaCppRuntime()


def _by_tensor(
    entries: Sequence[tuple[str, int, int]], where: list[int], moved: Mapping[str, int], w: list[int], host: bool = True
) -> None:
    """Each (name, layer, bytes) added to its device: where an override moved it, else its layer's (-1 the input
    layer, -2 the output layer); `host` False leaves out what lands in host memory."""
    for name, il, b in entries:
        d = moved.get(name, -1 if il == -1 else where[-1] if il == -2 else where[il])
        if host or d != -1:
            w[d] += b
