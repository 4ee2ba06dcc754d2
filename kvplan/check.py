"""`kvplan check`: deployments and budgets from a YAML file, evaluated with the same layout code as
`estimate` and `fit`. Each deployment passes, fails a budget (with the nearest setting that passes), or
errors (its model cannot be read) without hiding the others.

File format (README, "CI checks"):

    deployments:
      - name: chat-8b
        model: llama-3.1-8b          # catalog name, .gguf, .yaml spec or config.json (relative to this file)
        engine: llama.cpp            # or vllm / sglang / trtllm
        ctx: 32k                     # per sequence
        parallel: 4
        cache_type_k: q8_0
        gpu: RTX-4090x2              # or memory: [24GiB, 24GiB]
        budgets: {max_kv: 8GiB, max_total: 40GiB, min_ctx: 32k, min_parallel: 4, headroom: 10%}
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any

from kvplan.errors import EXIT_BAD_INPUT, EXIT_CHECK_FAILED, EXIT_OK, KvplanError, SpecError
from kvplan.report import format_size

SETTING_KEYS = {
    "ctx", "parallel", "cache_type_k", "cache_type_v", "flash_attn", "kv_unified", "swa_full", "batch", "ubatch",
    "rs_seq", "tp", "pp", "kv_cache_dtype", "block_size", "gpu_memory_utilization", "mem_fraction_static",
    "free_gpu_memory_fraction", "backend", "max_num_batched_tokens", "disable_hybrid_kv_cache_manager",
}  # fmt: skip
DEPLOYMENT_KEYS = {"name", "model", "engine", "gpu", "memory", "tensor_split", "weights", "weight_bytes", "params",
                   "overhead", "budgets", *SETTING_KEYS}  # fmt: skip
BUDGET_KEYS = {"max_kv", "max_total", "min_ctx", "min_parallel", "headroom"}
ENGINES = ("llama.cpp", "vllm", "sglang", "trtllm")


@dataclass
class Deployment:
    name: str
    line: int
    values: dict[str, Any]
    budgets: dict[str, Any]
    base_dir: str


@dataclass
class Finding:
    budget: str
    passed: bool
    actual: str
    limit: str
    detail: str = ""


@dataclass
class Result:
    name: str
    status: str  # pass | fail | error
    findings: list[Finding] = field(default_factory=list)
    suggestion: str = ""
    error: str = ""
    exit_code: int = EXIT_OK
    summary: dict[str, Any] = field(default_factory=dict)


def _count(value: Any, path: str, line: int, key: str) -> int:
    from kvplan.units import parse_count

    if isinstance(value, bool):
        raise SpecError(path, line, key, f"expected a count, not {value!r}")
    if isinstance(value, int) and value > 0:
        return value
    try:
        n = parse_count(str(value))
    except ValueError as exc:
        raise SpecError(path, line, key, str(exc)) from None
    if n <= 0:
        raise SpecError(path, line, key, "must be positive")
    return n


def _size(value: Any, path: str, line: int, key: str) -> int:
    from kvplan.hardware import parse_size

    try:
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else parse_size(str(value))
    except ValueError as exc:
        raise SpecError(path, line, key, str(exc)) from None


def _validate_settings(d: dict, values: dict[str, Any], path: str, where: str) -> None:
    """Types of the remaining deployment keys, checked at load time so evaluation cannot trip on them."""

    def fail(key: str, what: str) -> SpecError:
        return SpecError(path, d[key].line, f"{where}.{key}", what)

    if "rs_seq" in d:
        v = d["rs_seq"].value
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise fail("rs_seq", "expected a non-negative integer")
    if "params" in d:
        from kvplan.weights import parse_params

        try:
            if isinstance(d["params"].value, bool):
                raise ValueError
            values["params"] = parse_params(d["params"].value)
        except ValueError:
            raise fail("params", "expected a parameter count such as 8.03e9") from None
    if "flash_attn" in d:
        v = d["flash_attn"].value
        v = {True: "on", False: "off"}.get(v, v) if isinstance(v, bool) else v  # YAML 1.1 reads on/off as booleans
        if v not in ("on", "off", "auto"):
            raise fail("flash_attn", "expected on, off or auto")
        values["flash_attn"] = v
    for key in ("kv_unified", "swa_full", "disable_hybrid_kv_cache_manager"):
        if key in d and not isinstance(d[key].value, bool):
            raise fail(key, "expected true or false")
    for key in ("gpu_memory_utilization", "mem_fraction_static", "free_gpu_memory_fraction"):
        if key in d:
            v = d[key].value
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
                raise fail(key, "expected a fraction in (0, 1]")
    for key in ("model", "cache_type_k", "cache_type_v", "kv_cache_dtype", "backend", "weights", "gpu", "name"):
        if key in d and not isinstance(d[key].value, (str, int)):
            raise fail(key, "expected text")
    if "tensor_split" in d:
        v = d["tensor_split"].value
        items = [x.value for x in v] if isinstance(v, list) else str(v).split(",")
        try:
            values["tensor_split"] = ",".join(str(float(x)) for x in items)
        except (TypeError, ValueError):
            raise fail("tensor_split", "expected proportions such as 1,1") from None


def load_deployments(path: str) -> list[Deployment]:
    from kvplan.sources.spec import _load_nodes, _Node, _plain, did_you_mean

    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise SpecError(path, None, None, f"cannot read file: {exc.strerror or exc}") from None
    root = _load_nodes(text, path)
    if not isinstance(root.value, dict) or "deployments" not in root.value:
        raise SpecError(path, root.line, "deployments", "expected a mapping with a 'deployments' list")
    extra = set(root.value) - {"deployments"}
    if extra:
        key = sorted(extra)[0]
        raise SpecError(path, root.value[key].line, key, "unknown top-level key (only 'deployments')")
    items = root.value["deployments"]
    if not isinstance(items.value, list) or not items.value:
        raise SpecError(path, items.line, "deployments", "expected a non-empty list of deployments")
    out, names = [], set()
    base = os.path.dirname(os.path.abspath(path))
    for i, node in enumerate(items.value):
        where = f"deployments[{i}]"
        if not isinstance(node.value, dict):
            raise SpecError(path, node.line, where, "expected a mapping")
        d: dict[str, _Node] = node.value
        for key, child in d.items():
            if key not in DEPLOYMENT_KEYS:
                raise SpecError(path, child.line, f"{where}.{key}", f"unknown key{did_you_mean(key, DEPLOYMENT_KEYS)}")
        if "model" not in d:
            raise SpecError(path, node.line, f"{where}.model", "missing (a catalog name, .gguf, .yaml or config.json)")
        name = str(d["name"].value) if "name" in d else f"deployment-{i + 1}"
        if name in names:
            raise SpecError(path, d["name"].line, f"{where}.name", f"duplicate deployment name {name!r}")
        names.add(name)
        engine = str(d["engine"].value) if "engine" in d else "llama.cpp"
        if engine not in ENGINES:
            raise SpecError(path, d["engine"].line, f"{where}.engine", f"expected one of {', '.join(ENGINES)}")
        if "gpu" in d and "memory" in d:
            raise SpecError(path, d["gpu"].line, f"{where}.gpu", "give gpu or memory, not both")
        values: dict[str, Any] = {k: _plain(v) for k, v in d.items() if k != "budgets"}
        values["engine"] = engine
        for key in ("ctx", "parallel", "batch", "ubatch", "tp", "pp", "block_size", "max_num_batched_tokens"):
            if key in d:
                values[key] = _count(d[key].value, path, d[key].line, f"{where}.{key}")
        _validate_settings(d, values, path, where)
        for key in ("weight_bytes", "overhead"):
            if key in d:
                values[key] = _size(d[key].value, path, d[key].line, f"{where}.{key}")
        if "memory" in d:
            mem = d["memory"].value
            mem_list = mem if isinstance(mem, list) else [d["memory"]]
            values["memory"] = [_size(m.value, path, m.line, f"{where}.memory") for m in mem_list]
        budgets: dict[str, Any] = {}
        if "budgets" in d:
            b = d["budgets"]
            if not isinstance(b.value, dict):
                raise SpecError(path, b.line, f"{where}.budgets", "expected a mapping")
            for key, child in b.value.items():
                if key not in BUDGET_KEYS:
                    raise SpecError(path, child.line, f"{where}.budgets.{key}",
                                    f"unknown budget; expected {', '.join(sorted(BUDGET_KEYS))}")  # fmt: skip
                if key in ("max_kv", "max_total"):
                    budgets[key] = _size(child.value, path, child.line, f"{where}.budgets.{key}")
                elif key in ("min_ctx", "min_parallel"):
                    budgets[key] = _count(child.value, path, child.line, f"{where}.budgets.{key}")
                else:
                    text = str(child.value).strip()
                    try:
                        frac = float(text.removesuffix("%")) / (100 if text.endswith("%") else 1)
                    except ValueError:
                        frac = -1.0
                    if not 0 <= frac < 1:
                        raise SpecError(path, child.line, f"{where}.budgets.headroom", "expected 0%..99% (or 0..0.99)")
                    budgets[key] = frac
            needs_hw = budgets.get("min_ctx") or budgets.get("min_parallel") or budgets.get("headroom") is not None
            if needs_hw and "gpu" not in d and "memory" not in d:
                raise SpecError(path, b.line, f"{where}.budgets",
                                "min_ctx, min_parallel and headroom need hardware (gpu or memory)")  # fmt: skip
        out.append(Deployment(name, node.line, values, budgets, base))
    return out


# --- evaluation --------------------------------------------------------------------------------------


def _model_ref(dep: Deployment) -> str:
    ref = str(dep.values["model"])
    from kvplan.sources.remote import is_remote

    if is_remote(ref) or os.path.isabs(ref):
        return ref
    candidate = os.path.join(dep.base_dir, ref)
    return candidate if os.path.exists(candidate) else ref


def _llama_settings(v: dict[str, Any], ctx: int, parallel: int):
    from kvplan.layout.llamacpp import LlamaCppSettings

    return LlamaCppSettings(
        n_ctx=ctx * parallel, n_seq=parallel, kv_unified=bool(v.get("kv_unified", False)),
        n_batch=v.get("batch", 2048), n_ubatch=v.get("ubatch", 512), type_k=str(v.get("cache_type_k", "f16")),
        type_v=str(v.get("cache_type_v", v.get("cache_type_k", "f16"))), flash_attn=str(v.get("flash_attn", "auto")),
        swa_full=bool(v.get("swa_full", False)), n_rs_seq=int(v.get("rs_seq", 0)),
        backend=str(v.get("backend", "cuda" if ("gpu" in v or "memory" in v) else "cpu")),
    )  # fmt: skip


def _hardware(v: dict[str, Any]) -> tuple[list[int], str] | None:
    from kvplan.hardware import memory_label, parse_gpus

    if "gpu" in v:
        return parse_gpus(str(v["gpu"]))
    if "memory" in v:
        return list(v["memory"]), memory_label(list(v["memory"]))
    return None


def evaluate(dep: Deployment) -> Result:
    try:
        if dep.values["engine"] == "llama.cpp":
            return _evaluate_llama(dep)
        return _evaluate_engine(dep)
    except KvplanError as exc:
        return Result(dep.name, "error", error=str(exc), exit_code=exc.exit_code)


def _evaluate_llama(dep: Deployment, suggest: bool = True) -> Result:
    from kvplan import fit as solver
    from kvplan.layout.llamacpp import plan
    from kvplan.sources import load_model

    v, b = dep.values, dep.budgets
    model = load_model(_model_ref(dep))
    if "params" in v:
        model = dataclasses.replace(model, n_params=int(v["params"]))
    ctx = v.get("ctx") or model.n_ctx_train
    parallel = v.get("parallel", 1)
    settings = _llama_settings(v, ctx, parallel)
    p = plan(model, settings)
    result = Result(dep.name, "pass", summary={"kv_bytes": p.total_bytes, "ctx": ctx, "parallel": parallel})
    findings = result.findings
    if "max_kv" in b:
        findings.append(Finding("max_kv", p.total_bytes <= b["max_kv"], format_size(p.total_bytes),
                                format_size(b["max_kv"]), _over(p.total_bytes, b["max_kv"])))  # fmt: skip
    hw = _hardware(v)
    placement = None
    if hw is not None:
        mem, label = hw
        weights = solver.model_weights(model, v.get("weights"), v.get("weight_bytes"))
        overhead = v.get("overhead")
        splits = tuple(float(x) for x in str(v["tensor_split"]).split(",")) if "tensor_split" in v else None
        target = solver.Target(model, weights, tuple(mem), splits, overhead)
        placement = target.place(settings)
        used = sum(d.used_bytes for d in placement.devices)
        result.summary.update({"used_bytes": used, "gpus": label})
        worst = min(placement.devices, key=lambda d: d.free_bytes)
        findings.append(Finding("fits", placement.fits, f"{format_size(worst.used_bytes)} on GPU{worst.index}",
                                format_size(worst.memory_bytes), "" if placement.fits else
                                f"short by {format_size(-worst.free_bytes)} on GPU{worst.index}"))  # fmt: skip
        if "max_total" in b:
            findings.append(Finding("max_total", used <= b["max_total"], format_size(used),
                                    format_size(b["max_total"]), _over(used, b["max_total"])))  # fmt: skip
        if "headroom" in b:
            ok = all(d.free_bytes >= b["headroom"] * d.memory_bytes for d in placement.devices)
            least = min(d.free_bytes / d.memory_bytes for d in placement.devices)
            findings.append(Finding("headroom", ok, f"{least:.1%} free", f"{b['headroom']:.0%}",
                                    "" if ok else f"GPU needs {b['headroom']:.0%} free, has {least:.1%}"))  # fmt: skip
        if "min_ctx" in b:
            best = target.max_context(settings, max(b["min_ctx"], ctx))
            got = best.plan.runtime.values["n_ctx_asked"] // parallel if best else 0
            findings.append(Finding("min_ctx", got >= b["min_ctx"], f"{got} tokens fit", str(b["min_ctx"]),
                                    "" if got >= b["min_ctx"] else f"max ctx that fits: {got}"))  # fmt: skip
        if "min_parallel" in b:
            best = target.max_parallel(dataclasses.replace(settings, n_ctx=ctx))
            got = best.plan.runtime.values["n_seq"] if best else 0
            findings.append(Finding("min_parallel", got >= b["min_parallel"], f"{got} sequences fit",
                                    str(b["min_parallel"]), "" if got >= b["min_parallel"] else
                                    f"max parallel that fits at ctx {ctx}: {got}"))  # fmt: skip
    if not all(f.passed for f in findings):
        result.status, result.exit_code = "fail", EXIT_CHECK_FAILED
        result.suggestion = _suggest(settings, dep) if suggest else ""
    return result


def _over(actual: int, limit: int) -> str:
    return "" if actual <= limit else f"over by {format_size(actual - limit)} ({actual / limit - 1:.1%})"


def _passes(settings, dep: Deployment) -> bool:
    """Would this llama.cpp setting pass every budget of ``dep``? (each suggestion is verified this way)"""
    trial = Deployment(dep.name, dep.line, dict(dep.values), dep.budgets, dep.base_dir)
    trial.values.update({"cache_type_k": settings.type_k, "cache_type_v": settings.type_v,
                         "flash_attn": settings.flash_attn, "ctx": settings.n_ctx // settings.n_seq,
                         "parallel": settings.n_seq})  # fmt: skip
    try:
        return _evaluate_llama(trial, suggest=False).status == "pass"
    except KvplanError:
        return False


def _suggest(settings, dep: Deployment) -> str:
    """The nearest setting that passes: a cheaper cache type, else a smaller context per sequence."""
    from kvplan.fit import CACHE_TYPE_LADDER

    start = [*CACHE_TYPE_LADDER].index((settings.type_k, settings.type_v)) + 1 if (
        settings.type_k, settings.type_v) in CACHE_TYPE_LADDER else 0  # fmt: skip
    for tk, tv in CACHE_TYPE_LADDER[start:]:
        s = dataclasses.replace(settings, type_k=tk, type_v=tv, flash_attn="on" if tv != "f16" else settings.flash_attn)
        if _passes(s, dep):
            fa = " -fa on" if tv != "f16" and settings.flash_attn != "on" else ""
            return f"passes with -ctk {tk} -ctv {tv}{fa}"
    per_seq = settings.n_ctx // settings.n_seq
    lo, hi = 0, per_seq // 256  # largest multiple of 256 tokens per sequence that passes
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _passes(dataclasses.replace(settings, n_ctx=mid * 256 * settings.n_seq), dep):
            lo = mid
        else:
            hi = mid
    if lo and _passes(dataclasses.replace(settings, n_ctx=lo * 256 * settings.n_seq), dep):
        return f"max ctx that passes: {lo * 256} tokens per sequence"
    return "no cache type or context passes; more memory or a smaller model is needed"


def _evaluate_engine(dep: Deployment) -> Result:
    from kvplan.engine_fit import make_target, solve
    from kvplan.layout.serving import EngineSettings
    from kvplan.sources import load_model

    v, b = dep.values, dep.budgets
    model = load_model(_model_ref(dep))
    if "params" in v:
        model = dataclasses.replace(model, n_params=int(v["params"]))
    hw = _hardware(v)
    if hw is None:
        raise SpecError(dep.base_dir, dep.line, f"{dep.name}.gpu", f"{v['engine']} deployments need gpu or memory")
    mem, label = hw
    tp, pp = v.get("tp", 1), v.get("pp", 1)
    if len(mem) != tp * pp:
        raise SpecError(dep.base_dir, dep.line, f"{dep.name}.tp", f"{len(mem)} GPU(s) for tp {tp} × pp {pp}")
    if "weight_bytes" not in v and not model.n_params:
        raise SpecError(dep.base_dir, dep.line, f"{dep.name}.params", "no parameter count: give params or weight_bytes")
    ctx = v.get("ctx") or model.n_ctx_train
    parallel = v.get("parallel", 1)
    s = EngineSettings(engine=v["engine"], cache_dtype=str(v.get("kv_cache_dtype", "auto")), tp=tp, pp=pp,
                       block_size=v.get("block_size"), max_num_batched_tokens=v.get("max_num_batched_tokens"),
                       hybrid_kv_cache=not v.get("disable_hybrid_kv_cache_manager", False),
                       gpu_memory_utilization=float(v.get("gpu_memory_utilization", 0.92)),
                       mem_fraction_static=v.get("mem_fraction_static"),
                       free_gpu_memory_fraction=float(v.get("free_gpu_memory_fraction", 0.9)))  # fmt: skip
    target = make_target(model, s, mem, label, v.get("weights"), v.get("weight_bytes"), v.get("overhead"))
    found = solve(target, ctx, parallel)
    cap = found.capacity
    kv_bytes = found.reserved_bytes  # what the deployment's sequences reserve, per GPU
    fits_requests = found.requests
    result = Result(dep.name, "pass", summary={"kv_bytes": kv_bytes, "ctx": ctx, "parallel": parallel,
                                               "kv_tokens_per_gpu": cap.tokens, "gpus": label})  # fmt: skip
    f = result.findings
    f.append(Finding("fits", found.fits, f"{fits_requests} × {ctx}-token sequences", f"{parallel} sequences",
                     "" if found.fits else f"KV for {fits_requests} sequences of {ctx} tokens"))  # fmt: skip
    if "max_kv" in b:
        f.append(Finding("max_kv", kv_bytes <= b["max_kv"], format_size(kv_bytes), format_size(b["max_kv"]),
                         _over(kv_bytes, b["max_kv"])))  # fmt: skip
    if "max_total" in b:
        used = target.weight_bytes_per_rank + target.overhead_bytes + kv_bytes
        f.append(Finding("max_total", used <= b["max_total"], format_size(used), format_size(b["max_total"]),
                         _over(used, b["max_total"])))  # fmt: skip
    if "min_parallel" in b:
        f.append(Finding("min_parallel", fits_requests >= b["min_parallel"], f"{fits_requests} sequences fit",
                         str(b["min_parallel"])))  # fmt: skip
    if "min_ctx" in b:
        one = cap.max_context(parallel, max(b["min_ctx"], model.n_ctx_train))
        f.append(Finding("min_ctx", one >= b["min_ctx"], f"{one} tokens fit for {parallel} sequence(s)",
                         str(b["min_ctx"])))  # fmt: skip
    if "headroom" in b:
        needed = parallel * cap.layout.request_blocks(ctx) if s.engine == "vllm" else 0
        free = cap.blocks - needed if s.engine == "vllm" else cap.requests_that_fit(ctx) - parallel
        share = free / cap.blocks if s.engine == "vllm" and cap.blocks else (
            free / max(1, cap.requests_that_fit(ctx)))  # fmt: skip
        f.append(Finding("headroom", share >= b["headroom"], f"{share:.1%} of the KV pool free",
                         f"{b['headroom']:.0%}"))  # fmt: skip
    if not all(x.passed for x in f):
        result.status, result.exit_code = "fail", EXIT_CHECK_FAILED
        if 1 <= fits_requests < parallel:
            result.suggestion = f"max parallel that fits at ctx {ctx}: {fits_requests}"
        elif fits_requests == 0 and (best := cap.max_context(parallel, ctx)):
            result.suggestion = f"max ctx that fits for {parallel} sequence(s): {best} tokens"
    return result


def overall_exit(results: list[Result]) -> int:
    codes = {r.exit_code for r in results}
    for code in (EXIT_BAD_INPUT, 4, EXIT_CHECK_FAILED):
        if code in codes:
            return code
    return EXIT_OK
