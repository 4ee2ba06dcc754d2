"""llama.cpp's own fit (`common_fit_params`, common/fit.cpp of the vendored llama.cpp), ported: the context, the
layers per device and the tensor overrides llama-server's `--fit on` chooses so that every device keeps its
`--fit-target` free.

The port follows the C++ step by step — (1) the projection at the flags given; (2) the context lowered by linear
interpolation between the trained context and `--fit-ctx`; (3) layers filled back to front by false position,
MoE layers first with their experts in host memory; (4) MoE layers converted to full layers front to back, and
one more layer with part of its FFN overflowing (UP, GATE or ATTN). Every projection is kvplan's placement
(weights and KV exact per device, proven against llama.cpp) plus the compute and overhead per device: the fit's
answers equal llama.cpp's where the compute per device is what llama.cpp measures (`--overhead`, from
`llama-fit-params --fit-print on`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from kvplan.capacity.llamacpp import Target
from kvplan.capacity.request import Request
from kvplan.facts.llama_server_args import FIT_MIN_CTX, FIT_TARGET_MIB
from kvplan.model import ModelDescription
from kvplan.runtimes.llamacpp import LlamaCppSettings
from kvplan.runtimes.llamacpp.overrides import own

MIB = 1 << 20

#: the overflow patterns of a layer's first partial layer (common_layer_fraction_t)
ATTN, UP, GATE, MOE = "attn", "up", "gate", "moe"
_PATTERNS = {
    ATTN: r"blk\.{il}\.ffn_(gate|up|gate_up|down).*",
    UP: r"blk\.{il}\.ffn_(gate|gate_up|down).*",
    GATE: r"blk\.{il}\.ffn_down.*",
    MOE: r"blk\.{il}\.ffn_(up|down|gate_up|gate)_(ch|)exps",
}
_MOE_ALL = r"blk\.\d+\.ffn_(up|down|gate_up|gate)_(ch|)exps"


class FitError(Exception):
    """common_params_fit_exception: llama.cpp's fit gives up (its message). What it changed before (the context:
    common_params_fit_impl lowers cparams->n_ctx in place) stays: llama.cpp warns and runs with it."""

    def __init__(self, message: str, n_ctx: int = 0, steps: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.n_ctx = n_ctx
        self.steps = steps


@dataclass
class _Ngl:
    n_layer: int = 0
    n_part: int = 0
    overflow: str = MOE

    @property
    def n_full(self) -> int:
        return self.n_layer - self.n_part


@dataclass(frozen=True)
class FitChoice:
    """What `llama-fit-params` prints: -c, -ngl (-1: unchanged), -ts (several devices) and -ot."""

    n_ctx: int
    n_gpu_layers: int
    tensor_split: tuple[int, ...] | None
    overrides: tuple[tuple[str, str], ...]  # (pattern, "CPU" | "GPUn")
    steps: tuple[str, ...] = field(default=(), compare=False)
    #: per GPU, the memory it lacks to keep every layer and expert at the chosen context (0: none)
    short_of_all: tuple[int, ...] = field(default=(), compare=False)
    #: llama.cpp's fit gave up (its message): the flags given run, with the context it set before
    gave_up: str = field(default="", compare=False)

    def _placement(self) -> str:
        """llama-fit-params' words: -ts without its trailing zeros, and none when one device is left
        (tools/fit-params/fit-params.cpp trims the split before printing it)."""
        out = f"-c {self.n_ctx} -ngl {self.n_gpu_layers}"
        split = list(self.tensor_split or ())
        while len(split) > 1 and split[-1] == 0:
            split.pop()
        if len(split) > 1:
            out += " -ts " + ",".join(str(x) for x in split)
        return out

    def short(self) -> str:
        """-c, -ngl, -ts and how many -ot patterns (the headline's)."""
        n = len(self.overrides)
        return self._placement() + (f" -ot (the {n} pattern{'s' if n > 1 else ''} below)" if n else "")

    def args(self) -> str:
        """The arguments as llama-fit-params prints them (devices named GPUn)."""
        ot = ",".join(f"{p}={b}" for p, b in self.overrides)
        return self._placement() + (f' -ot "{ot}"' if ot else "")


def fit_params(  # noqa: C901 - common_params_fit_impl, one function as in llama.cpp
    target: Target,
    settings: LlamaCppSettings,
    *,
    ctx_given: bool,
    margins_mib: tuple[int, ...] = (FIT_TARGET_MIB,),
    n_ctx_min: int = FIT_MIN_CTX,
) -> FitChoice:
    model = target.model
    target = dataclasses.replace(target, fit_projection=True)  # common_get_device_memory_data's projections
    nd = len(target.memory)
    margins = [(margins_mib[i] if i < len(margins_mib) else margins_mib[-1]) * MIB for i in range(nd)]
    free = list(target.memory)
    hp_ngl = model.n_layer + (model.n_layer_nextn if target.mtp else 0)  # common_get_device_memory_data
    hp_nct = model.n_ctx_train
    hp_nex = model.n_expert if target.weights.expert_bytes else 0
    n_streams = 1 if settings.kv_unified else max(1, settings.n_seq)
    steps: list[str] = []
    if model.n_expert and not hp_nex:
        steps.append(
            "an estimate: without a GGUF's tensor infos the MoE experts' sizes are unknown, so layers move whole "
            "(llama.cpp moves experts first)"
        )
    elif not target.weights.exact:
        steps.append(f"the weights are an {target.weights.basis}")

    def usage(t: Target, n_ctx: int) -> tuple[list[int], list[int]]:
        """(total, model bytes) per device for one configuration."""
        p = t.place(dataclasses.replace(settings, n_ctx=n_ctx))
        return [d.used_bytes for d in p.gpus], [d.weight_bytes for d in p.gpus]

    n_ctx = settings.n_ctx if ctx_given else hp_nct * n_streams
    n_ctx_max = hp_nct * n_streams
    n_ctx_min_total = n_ctx_min * n_streams
    full, model_bytes = usage(target, n_ctx)
    projected_free = [f - u for f, u in zip(free, full, strict=True)]
    if all(pf >= m for pf, m in zip(projected_free, margins, strict=True)):
        steps.append("the flags as given leave every device its target: no change")
        return FitChoice(n_ctx, -1, None, (), tuple(steps))

    # step 2: a lower context
    global_surplus = sum(projected_free) - sum(margins)
    if global_surplus < 0 and not ctx_given and n_ctx_max > n_ctx_min_total:
        used_target = sum(free) - sum(margins)
        if nd > 1:
            per_layer = sum(model_bytes) // hp_ngl
            used_target -= (nd + 1) * per_layer // (2 if hp_nex == 0 else 6)
        used_min = sum(usage(target, n_ctx_min_total)[0])
        used_max = sum(full)
        n_ctx = n_ctx_min_total
        if used_target > used_min:
            n_ctx += (n_ctx_max - n_ctx_min_total) * (used_target - used_min) // (used_max - used_min)
            align = 256 * n_streams
            n_ctx = max(n_ctx - n_ctx % align, n_ctx_min_total)
            steps.append(f"context lowered from {n_ctx_max:,} to {n_ctx:,} (linear between the projections)")
            if nd <= 1:
                return FitChoice(n_ctx, -1, None, (), tuple(steps))
        else:
            steps.append(f"context lowered to --fit-ctx {n_ctx:,}; not enough: layers move")
    if target.n_gpu_layers != -1:  # llama.cpp's default, auto
        raise FitError(f"n_gpu_layers already set by user to {target.n_gpu_layers}, abort", n_ctx, tuple(steps))
    if target.overrides or target.n_cpu_moe:  # -ot, and -cmoe / -ncmoe (llama.cpp adds them as overrides)
        raise FitError("model_params::tensor_buft_overrides already set by user, abort", n_ctx, tuple(steps))
    if nd > 1 and target.splits and any(target.splits):  # all zero is not "set" (the default split)
        raise FitError("model_params::tensor_split already set by user, abort", n_ctx, tuple(steps))

    def configure(ngl: list[_Ngl], overflow_to: list[str]) -> Target:
        """set_ngl_tensor_split_tbo: -ngl, -ts and the overrides of the partial layers."""
        n_gpu_layers = sum(n.n_layer for n in ngl)
        il0 = hp_ngl + 1 - n_gpu_layers
        overrides: list[tuple[str, str]] = []
        for d, n in enumerate(ngl):
            il0 += n.n_full
            for il in range(il0, il0 + n.n_part):
                kind = n.overflow if il == il0 else MOE
                overrides.append((own(_PATTERNS[kind].format(il=il)), overflow_to[d] if il == il0 else "CPU"))
            il0 += n.n_part
        # all zero is no split at all: llama.cpp then splits by the devices' free memory
        splits = tuple(float(n.n_layer) for n in ngl) if nd > 1 and n_gpu_layers else None
        return dataclasses.replace(
            target, n_gpu_layers=n_gpu_layers, overrides=tuple(overrides), splits=splits, n_cpu_moe=0
        )

    def mem_for(ngl: list[_Ngl], overflow_to: list[str]) -> list[int]:
        return usage(configure(ngl, overflow_to), n_ctx)[0]

    surplus_cpu_moe = 0
    if hp_nex > 0:
        moe_cpu = dataclasses.replace(target, overrides=((own(_MOE_ALL), "CPU"),), n_cpu_moe=0)
        used = usage(moe_cpu, n_ctx)[0]
        surplus_cpu_moe = sum(f - u - m for f, u, m in zip(free, used, margins, strict=True))
    targets = [f - m for f, m in zip(free, margins, strict=True)]
    overflow_to = ["CPU"] * nd
    ngl = [_Ngl() for _ in range(nd)]
    mem = mem_for(ngl, overflow_to)

    # step 3: fill layers back to front (an MoE's with their experts in host memory)
    for d in range(nd - 1, -1, -1):
        unassigned = hp_ngl + 1 - sum(ngl[j].n_layer for j in range(d + 1, nd))
        high = [dataclasses.replace(n) for n in ngl]
        high[d].n_layer = unassigned
        if hp_nex > 0:
            high[d].n_part = high[d].n_layer if d < nd - 1 else high[d].n_layer - 1
        if high[d].n_layer <= 0:
            continue
        mem_high = mem_for(high, overflow_to)
        if mem_high[d] <= targets[d]:
            ngl, mem = high, mem_high
            continue
        delta = high[d].n_layer - ngl[d].n_layer
        while delta > 1:
            step = _step(delta, targets[d], mem[d], mem_high[d])
            test = [dataclasses.replace(n) for n in ngl]
            test[d].n_layer += step
            if hp_nex:
                test[d].n_part += step - 1 if d == nd - 1 and test[d].n_part == 0 else step
            mem_test = mem_for(test, overflow_to)
            if mem_test[d] <= targets[d]:
                ngl, mem = test, mem_test
            else:
                high, mem_high = test, mem_test
            delta = high[d].n_layer - ngl[d].n_layer
    steps.append("layers filled back to front: " + ", ".join(f"GPU{d} {n.n_layer}" for d, n in enumerate(ngl)))
    if hp_nex == 0 or surplus_cpu_moe <= 0:
        return _choice(n_ctx, ngl, overflow_to, configure, nd, steps)

    # step 4: MoE layers made whole front to back, then part of one more layer
    dense_start = nd
    for d in range(nd - 1, -1, -1):
        if ngl[d].n_layer > 0:
            dense_start = d
            continue
        break
    d = 0
    while d <= dense_start < nd:
        high = [dataclasses.replace(n) for n in ngl]
        for j in range(dense_start, nd):
            move = high[j].n_layer if j < nd - 1 else high[j].n_layer - 1
            high[d].n_layer += move
            high[j].n_layer -= move
            high[j].n_part = 0
        dense_start_high = nd - 1
        # llama.cpp's counts are uint32_t: moving "all but one" layer off a last device that holds none wraps, and a
        # device left with 2^32 - 1 layers projects far over any target; kvplan, which cannot project that, takes
        # it as over the target too and keeps what it had (found by the property test in test_fit_oracle)
        wrapped = any(n.n_layer < 0 for n in high)
        mem_high = mem if wrapped else mem_for(high, overflow_to)
        if wrapped:
            steps.append(f"GPU{d}: the layers left on the devices after it cannot move (a count would wrap)")
        elif mem_high[d] > targets[d]:
            delta = high[d].n_full - ngl[d].n_full
            while delta > 1:
                step = _step(delta, targets[d], mem[d], mem_high[d])
                test = [dataclasses.replace(n) for n in ngl]
                start_test, converted = dense_start, 0
                while start_test < nd:
                    c = min(step - converted, test[start_test].n_part)
                    test[start_test].n_layer -= c
                    test[start_test].n_part -= c
                    test[d].n_layer += c
                    converted += c
                    if test[start_test].n_part > 0:
                        break
                    start_test += 1
                mem_test = mem_for(test, overflow_to)
                if mem_test[d] <= targets[d]:
                    ngl, mem, dense_start = test, mem_test, start_test
                else:
                    high, mem_high, dense_start_high = test, mem_test, start_test
                delta = high[d].n_full - ngl[d].n_full
        else:
            ngl, mem, dense_start = high, mem_high, dense_start_high
        if ngl[dense_start].n_layer > (0 if d < nd - 1 else 1):
            test = [dataclasses.replace(n) for n in ngl]
            start_test = dense_start
            test[start_test].n_layer -= 1
            test[start_test].n_part -= 1
            test[d].n_layer += 1
            test[d].n_part += 1
            if test[start_test].n_part == 0:
                start_test += 1
            test[d].overflow = UP
            to_test = list(overflow_to)
            if d < nd - 1:
                to_test[d] = f"GPU{d + 1}"

            def fits(m: list[int], d: int = d) -> bool:
                return m[d] < targets[d] and (d + 1 == nd or m[d + 1] < targets[d + 1])

            mem_test = mem_for(test, to_test)
            if fits(mem_test):
                ngl, overflow_to, mem, dense_start = test, to_test, mem_test, start_test
                test = [dataclasses.replace(n) for n in test]
                test[d].overflow = GATE
                mem_test = mem_for(test, to_test)
                if fits(mem_test):
                    ngl, overflow_to, mem, dense_start = test, to_test, mem_test, start_test
            else:
                test[d].overflow = ATTN
                mem_test = mem_for(test, to_test)
                if fits(mem_test):
                    ngl, overflow_to, mem, dense_start = test, to_test, mem_test, start_test
        d += 1
    steps.append(
        "MoE layers made whole front to back: "
        + ", ".join(f"GPU{d} {n.n_layer} ({n.n_part} with experts in host memory)" for d, n in enumerate(ngl))
    )
    return _choice(n_ctx, ngl, overflow_to, configure, nd, steps)


def _step(delta: int, target: int, low: int, high: int) -> int:
    """The false-position step, in uint32 as llama.cpp computes it."""
    num, den = delta * (target - low), high - low
    if den == 0:
        return 1
    step = abs(num) // abs(den) * (1 if (num >= 0) == (den > 0) else -1)  # int64 division truncates toward 0
    step &= 0xFFFFFFFF  # then uint32_t
    return min(max(step, 1), delta - 1)


def _choice(
    n_ctx: int,
    ngl: list[_Ngl],
    overflow_to: list[str],
    configure: Callable[[list[_Ngl], list[str]], Target],
    nd: int,
    steps: list[str],
) -> FitChoice:
    t = configure(ngl, overflow_to)
    split = tuple(n.n_layer for n in ngl) if nd > 1 else None
    return FitChoice(n_ctx, t.n_gpu_layers, split, t.overrides, tuple(steps))


def choose(
    model: ModelDescription, req: Request, margins_mib: tuple[int, ...], n_ctx_min: int
) -> tuple[FitChoice, Request]:
    """llama.cpp's fit for the request (its flags as given, on its GPUs), and the request with the chosen flags —
    what `llama-server --fit on` would run — for the ordinary placement and answer."""
    from kvplan.capacity.llamacpp import LlamaCppRuntime

    o = req.llamacpp
    runtime = LlamaCppRuntime()
    target = runtime.target(model, req)
    settings = runtime.base_settings(req)
    try:
        given = bool(o.ctx_size) or o.ctx_per_seq is not None  # -c 0 (the trained context) is n_ctx_auto
        choice = fit_params(target, settings, ctx_given=given, margins_mib=margins_mib,
                            n_ctx_min=n_ctx_min)  # fmt: skip
    except FitError as exc:  # common_fit_params: a warning, and the flags given with the context it chose
        gave_up = f"gives up: {exc}; llama.cpp warns and runs with the flags given"
        choice = FitChoice(exc.n_ctx, -1, None, (), (*exc.steps, gave_up), gave_up=str(exc))
        chosen = dataclasses.replace(o, ctx_size=choice.n_ctx, ctx_per_seq=None)
        return choice, dataclasses.replace(req, llamacpp=chosen)
    if choice.n_gpu_layers >= 0 or choice.overrides:
        whole = target.place(dataclasses.replace(settings, n_ctx=choice.n_ctx)).gpus
        short = tuple(
            max(0, d.used_bytes - (d.memory_bytes or 0) + m * MIB)
            for d, m in zip(whole, (margins_mib * len(whole))[: len(whole)], strict=True)
        )
        choice = dataclasses.replace(choice, short_of_all=short)
    chosen = dataclasses.replace(
        o,
        ctx_size=choice.n_ctx,
        ctx_per_seq=None,
        # what the fit leaves unchanged stays as given (-ngl, -ts, -ot, -cmoe / -ncmoe)
        n_gpu_layers=o.n_gpu_layers if choice.n_gpu_layers < 0 else choice.n_gpu_layers,
        tensor_split=tuple(float(x) for x in choice.tensor_split) if choice.tensor_split else o.tensor_split,
        override_tensor=choice.overrides or o.override_tensor,
    )
    return choice, dataclasses.replace(req, llamacpp=chosen)
