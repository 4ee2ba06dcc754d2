"""kvplan as a library: the commands as functions, and the planner itself for sweeps.

Every command is a function taking the model (a reference as the command line takes it, or a model already
loaded with :func:`load_model`) and the command's settings as keyword arguments named as the deployments file
names them (``ctx_size``, ``parallel``, ``cache_type_k``, ``gpu``, ``engine``, ``max_model_len``, …; the
long flag with ``_`` for ``-``). Each returns the same typed :class:`~kvplan.report.document.Document` the
command line renders (``doc.to_dict()`` is its JSON). Errors are :class:`~kvplan.errors.KvplanError`
subclasses, named by the keyword: ``UsageError("cache_type_k: unknown cache type 'q8' (did you mean q8_0?)")``.
They print nothing and write no file (the command line's ``--svg`` and ``--junit`` are kvplan.render's
``chart.svg(doc.chart)``, ``simulate_svg.render(doc)`` and ``junit.junit(doc)``).

Under these keyword functions are the commands on typed requests (kvplan.commands, built by
kvplan.options.build), for callers that hold a :class:`~kvplan.capacity.request.Request` already.

For sweeps over many configurations, :func:`plan` goes straight to llama.cpp's allocation rules (no request,
no report) and :func:`planner` binds a model once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kvplan.errors import UsageError
from kvplan.model import ModelDescription
from kvplan.report.document import Document
from kvplan.runtimes.llamacpp import LlamaCppSettings, MemoryPlan
from kvplan.runtimes.llamacpp import plan as _plan
from kvplan.units import Units

__all__ = [
    "Document",
    "LlamaCppSettings",
    "MemoryPlan",
    "ModelDescription",
    "check",
    "compare",
    "curve",
    "estimate",
    "explain",
    "fit",
    "gpus",
    "load_model",
    "models",
    "plan",
    "planner",
    "simulate",
]


def _text(value: object, name: str) -> str:
    """A reference or a path given to the library: a str (or a path object), else kvplan's UsageError."""
    import os

    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise UsageError(f"expected a str (a path, URL or name), not {type(value).__name__}", name)
    return value


def load_model(ref: str, *, params: int | None = None) -> ModelDescription:
    """A model from a .gguf file or URL, a .yaml spec, a config.json or model folder, hf://ORG/REPO, a catalog
    name or the Hugging Face id of a catalog entry. ``params`` sets the parameter count (weight estimates)."""
    from kvplan.sources import load_model as load

    if params is not None and (isinstance(params, bool) or not isinstance(params, int) or not 0 < params < 1 << 53):
        raise UsageError(f"expected a whole number of parameters from 1 to 2^53, not {params!r}", "params")
    model = load(_text(ref, "model"))
    return (
        model if params is None else replace(model, n_params=params, param_count=None, params_source="given (params=)")
    )


def _run(command: str, model: str | ModelDescription | None, settings: dict[str, Any], units: str) -> Document:
    """The command on keyword settings: each keyword is a setting of kvplan.options.settings, parsed and checked as
    the command line and the deployments file do (errors name the keyword)."""
    from kvplan.capacity.request import Origin, Raw
    from kvplan.commands import run
    from kvplan.options.build import build
    from kvplan.options.commands import COMMANDS

    known = COMMANDS[command].library_keywords
    for key in settings:
        if key not in known:
            from kvplan.sources.files import did_you_mean

            raise UsageError(f"not a setting of {command}{did_you_mean(key, sorted(known))}", key)
    raw = {k: Raw(v, Origin(k)) for k, v in settings.items() if v is not None}
    positionals: dict[str, str] = {}
    loaded = None
    positional = {"check": "FILE", "explain": "LOG"}.get(command, "MODEL")
    if isinstance(model, ModelDescription):
        positionals["MODEL"], loaded = model.source, model
    elif model is not None or command not in ("models", "gpus"):
        positionals[positional] = _text(model, {"FILE": "path", "LOG": "log"}.get(positional, "model"))
    try:
        unit = Units(units)
    except ValueError:
        raise UsageError(f"expected iec, si or bytes, not {units!r}", "units") from None
    req = build(command, positionals, raw)
    if loaded is not None:
        req = _with_model(req, loaded)
    return run(command, req, unit)


def _with_model(req: Any, model: ModelDescription) -> Any:
    """The typed request with its model already loaded (a ModelDescription passed in)."""
    from kvplan.capacity.request import Request

    if isinstance(req, Request):
        return replace(req, loaded=model)
    return replace(req, request=replace(req.request, loaded=model))


def estimate(model: str | ModelDescription, *, units: str = "iec", **settings: Any) -> Document:
    """What llama.cpp allocates for KV cache and state, per cache, and why (``kvplan estimate``).

    >>> doc = estimate("llama-3.1-8b", ctx_size=4096)
    >>> doc.to_dict()["memory"]["total_bytes"]
    536870912
    """
    return _run("estimate", model, settings, units)


def fit(model: str | ModelDescription, *, units: str = "iec", **settings: Any) -> Document:
    """What fits on the GPUs, for llama.cpp or ``engine="vllm"|"sglang"|"trtllm"`` (``kvplan fit``)."""
    return _run("fit", model, settings, units)


def compare(model: str | ModelDescription, *, units: str = "iec", **settings: Any) -> Document:
    """MHA / GQA / MQA what-ifs and every cache type, side by side (``kvplan compare``; ``contexts="8k,32k"``)."""
    return _run("compare", model, settings, units)


def curve(model: str | ModelDescription, *, units: str = "iec", **settings: Any) -> Document:
    """Bytes against context per cache (``kvplan curve``; ``contexts="1k:128k"``)."""
    return _run("curve", model, settings, units)


def simulate(model: str | ModelDescription, *, units: str = "iec", **settings: Any) -> Document:
    """A workload through llama-server's slots, vLLM's or SGLang's scheduler (``kvplan simulate``;
    ``gpu="H100-80GB"``, ``request_rate=10``, ``engine="sglang"``, ``chunked_prefill_size=4096``, …)."""
    return _run("simulate", model, settings, units)


def check(path: str, *, units: str = "iec") -> Document:
    """Every deployment of a deployments file against its budgets (``kvplan check``)."""
    return _run("check", path, {}, units)


def models(*, arch: str | None = None, family: str | None = None) -> Document:
    """The built-in catalog (``kvplan models``)."""
    return _run("models", None, {"arch": arch, "family": family}, "iec")


def explain(log: str, *, model: str | None = None, gpu: str | None = None, units: str = "iec") -> Document:
    """A llama.cpp, vLLM or SGLang startup log against kvplan's plan of the settings it states, figure by figure
    (``kvplan explain``; ``model``: what the log loaded, where its own path is not readable here; ``gpu``: a vLLM or
    SGLang log's GPU preset, which the log does not name)."""
    return _run("explain", log, {"log_model": model, "gpu": gpu}, units)


def gpus() -> Document:
    """The GPU presets (``kvplan gpus``)."""
    return _run("gpus", None, {}, "iec")


def plan(model: ModelDescription, settings: LlamaCppSettings | None = None, **fields: Any) -> MemoryPlan:
    """llama.cpp's exact allocation for ``model`` under ``settings`` (a LlamaCppSettings, or its fields as
    keywords: ``n_ctx``, ``n_seq``, ``kv_unified``, ``type_k``, ``type_v``, ``flash_attn``, ``swa_full``, …).

    >>> m = load_model("llama-3.1-8b")
    >>> plan(m, n_ctx=4096).total_bytes
    536870912
    """
    if not isinstance(model, ModelDescription):
        raise UsageError(f"expected a ModelDescription (load_model), not {type(model).__name__}", "model")
    if settings is None:
        s = LlamaCppSettings()
    elif isinstance(settings, LlamaCppSettings):
        s = replace(settings, **{k: _field(k, getattr(settings, k)) for k in _kinds()})
    else:
        raise UsageError(f"expected LlamaCppSettings, not {type(settings).__name__}", "settings")
    return _plan(model, replace(s, **{k: _field(k, v) for k, v in fields.items()}) if fields else s)


_KINDS: dict[str, type] = {}


def _kinds() -> dict[str, type]:
    """Each LlamaCppSettings field → the kind of its default (int, bool, str or an enum)."""
    if not _KINDS:
        from dataclasses import fields as dataclass_fields

        _KINDS.update({f.name: type(f.default) for f in dataclass_fields(LlamaCppSettings)})
    return _KINDS


def _field(name: str, value: Any) -> Any:
    """``value`` as field ``name`` of LlamaCppSettings takes it (a whole number, a bool, a str, an enum's value),
    else kvplan's UsageError naming the field; llama.cpp's own checks (ranges, types) follow in plan. Cheap:
    a sweep calls it for every plan."""
    kind = _kinds().get(name)
    if kind is None:
        from kvplan.sources.files import did_you_mean

        raise UsageError(f"not a field of LlamaCppSettings{did_you_mean(name, list(_kinds()))}", name)
    if kind is int:
        if type(value) is not int:
            raise UsageError(f"expected a whole number, not {value!r}", name)
    elif kind is bool:
        if type(value) is not bool:
            raise UsageError(f"expected True or False, not {value!r}", name)
    elif kind is str:
        if not isinstance(value, str):
            raise UsageError(f"expected a str, not {value!r}", name)
    elif not isinstance(value, kind):
        try:
            return kind(value)
        except ValueError:
            choices = ", ".join(str(e.value) for e in kind)  # type: ignore[attr-defined]
            raise UsageError(f"expected one of {choices}, not {value!r}", name) from None
    return value


def planner(model: ModelDescription) -> Callable[..., MemoryPlan]:
    """``plan`` bound to one model, for sweeps: ``p = planner(m); [p(n_ctx=c) for c in contexts]``."""

    def bound(settings: LlamaCppSettings | None = None, **fields: Any) -> MemoryPlan:
        return plan(model, settings, **fields)

    return bound
