"""The deployments file: every entry becomes a typed Request through the same settings table as the command line.

    deployments:
      - name: chat-8b
        model: llama-3.1-8b          # catalog name or HF id, .gguf, .yaml spec or config.json (relative to this file)
        engine: llama.cpp            # or vllm / sglang / trtllm
        ctx_per_seq: 32k             # or ctx_size: 128k (llama.cpp's -c, shared by the sequences)
        parallel: 4
        cache_type_k: q8_0
        gpu: RTX-4090x2              # or memory: [24GiB, 24GiB]
        budgets: {max_kv: 8GiB, max_total: 40GiB, min_ctx: 32k, min_parallel: 4, headroom: 10%}

Every key is a setting's file key (README, "CI checks"); the file is validated completely before anything runs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from kvplan.capacity.request import Origin, Raw, Request
from kvplan.errors import SpecError
from kvplan.options.build import WORKLOAD_KEYS, beside, build_request, build_sim_budgets, build_workload
from kvplan.options.settings import SETTINGS, SIM_BUDGETS
from kvplan.simulation.budgets import SimBudgets
from kvplan.simulation.workload import Workload
from kvplan.sources.files import Node, did_you_mean, load_nodes, read_text

#: file key → setting dest, for every setting with a file key (budgets live under ``budgets:``, a workload's
#: keys under ``workload:``)
_KEYS: dict[str, str] = {}
_BUDGET_KEYS: dict[str, str] = {}
for _s in SETTINGS:
    for _key in (_s.file_key, *_s.aliases):
        if _key is None or _key.startswith("workload."):
            continue
        if _key.startswith("budgets."):
            if _s.dest not in SIM_BUDGETS:
                _BUDGET_KEYS[_key.removeprefix("budgets.")] = _s.dest
        else:
            _KEYS[_key] = _s.dest
ENTRY_KEYS = ("name", "model", "budgets", "workload", *_KEYS)
#: keys whose meaning changed: what to write instead
_RENAMED = {
    "ctx": "ctx was per sequence; write ctx_per_seq (tokens per sequence) or ctx_size (llama.cpp's -c, shared by "
    "the sequences); serving engines: max_model_len",
    "kv_cache_type": "write cache_type_k / cache_type_v (llama.cpp) or kv_cache_dtype (engines)",
}


@dataclass(frozen=True)
class Deployment:
    name: str
    path: str
    line: int
    request: Request
    workload: Workload | None = None  # `workload:`: the deployment is also simulated (vLLM)
    sim_budgets: SimBudgets = field(default_factory=SimBudgets)


def load_deployments(path: str) -> list[Deployment]:
    """Every deployment of the file as a request; the first problem is a FILE:LINE: KEY error."""
    text = read_text(path, "a deployments file")
    root = load_nodes(text, path, "the file is empty; expected a 'deployments' list")
    if not isinstance(root.value, dict) or "deployments" not in root.value:
        raise SpecError(path, root.line, "deployments", "expected a mapping with a 'deployments' list")
    extra = sorted(set(root.value) - {"deployments"})
    if extra:
        raise SpecError(path, root.value[extra[0]].line, extra[0], "unknown top-level key (only 'deployments')")
    items = root.value["deployments"]
    if not isinstance(items.value, list) or not items.value:
        raise SpecError(path, items.line, "deployments", "expected a non-empty list of deployments")
    out: list[Deployment] = []
    names: set[str] = set()
    for i, node in enumerate(items.value):
        dep = _deployment(path, f"deployments[{i}]", node, i)
        if dep.name in names:
            raise SpecError(path, node.line, f"deployments[{i}].name", f"duplicate deployment name {dep.name!r}")
        names.add(dep.name)
        out.append(dep)
    return out


def _settings(path: str, where: str, entry: dict[str, Node]) -> dict[str, Raw]:
    """The entry's settings as raw values, each with its file, line and key."""
    raw: dict[str, Raw] = {}
    for key, child in entry.items():
        if key in ("name", "model", "budgets", "workload"):
            continue
        if key in _RENAMED:
            raise SpecError(path, child.line, f"{where}.{key}", _RENAMED[key])
        if key not in _KEYS:
            raise SpecError(path, child.line, f"{where}.{key}", f"unknown key{did_you_mean(key, ENTRY_KEYS)}")
        raw[_KEYS[key]] = Raw(_value(child), Origin(f"{where}.{key}", path, child.line))
    if "budgets" in entry:
        b = entry["budgets"]
        if not isinstance(b.value, dict):
            raise SpecError(path, b.line, f"{where}.budgets", "expected a mapping")
        for key, child in b.value.items():
            if key in SIM_BUDGETS:
                continue  # a simulation budget (_simulation)
            if key not in _BUDGET_KEYS:
                known = [*_BUDGET_KEYS, *SIM_BUDGETS]
                hint = did_you_mean(key, known)
                raise SpecError(
                    path, child.line, f"{where}.budgets.{key}", f"unknown budget; expected {', '.join(known)}{hint}"
                )
            raw[_BUDGET_KEYS[key]] = Raw(child.value, Origin(f"{where}.budgets.{key}", path, child.line))
    return raw


def _deployment(path: str, where: str, node: Node, index: int) -> Deployment:
    if not isinstance(node.value, dict):
        raise SpecError(path, node.line, where, "expected a mapping")
    entry: dict[str, Node] = node.value
    raw = _settings(path, where, entry)
    if "model" not in entry:
        raise SpecError(path, node.line, f"{where}.model", "missing (a catalog name, .gguf, .yaml or config.json)")
    model = entry["model"].value
    if not isinstance(model, str) or not model.strip():
        raise SpecError(path, entry["model"].line, f"{where}.model", "expected a model name or path")
    name = entry["name"].value if "name" in entry else f"deployment-{index + 1}"
    if not isinstance(name, (str, int)) or isinstance(name, bool):
        raise SpecError(path, entry["name"].line, f"{where}.name", "expected text")
    request = build_request(_model_ref(model, path), raw, where=Origin(where, path, node.line))
    workload, budgets = _simulation(path, where, entry)
    return Deployment(str(name), path, node.line, request, workload, budgets)


def _simulation(path: str, where: str, entry: dict[str, Node]) -> tuple[Workload | None, SimBudgets]:
    """The entry's `workload:` and its simulation budgets, validated with file, line and key."""
    raw: dict[str, Raw] = {}
    wl = entry.get("workload")
    if wl is not None:
        if not isinstance(wl.value, dict) or not wl.value:
            raise SpecError(path, wl.line, f"{where}.workload", "expected a mapping (request_rate: 10, ...)")
        for key, child in wl.value.items():
            if key not in WORKLOAD_KEYS:
                raise SpecError(
                    path, child.line, f"{where}.workload.{key}", f"unknown key{did_you_mean(key, WORKLOAD_KEYS)}"
                )
            value = beside(str(child.value), path) if key == "trace" else child.value
            raw[WORKLOAD_KEYS[key]] = Raw(value, Origin(f"{where}.workload.{key}", path, child.line))
    b = entry.get("budgets")
    limits: dict[str, Raw] = {}
    for key, child in b.value.items() if b is not None and isinstance(b.value, dict) else ():
        if key in SIM_BUDGETS:
            limits[key] = Raw(child.value, Origin(f"{where}.budgets.{key}", path, child.line))
    if limits and wl is None:
        key = next(iter(limits))
        raise SpecError(path, b.line if b else 0, f"{where}.budgets.{key}", "a simulation budget needs a workload:")
    if wl is not None and not limits:
        raise SpecError(path, wl.line, f"{where}.workload", f"a workload needs a budget: {', '.join(SIM_BUDGETS)}")
    workload = build_workload(raw, Origin(f"{where}.workload", path, wl.line)) if wl is not None else None
    return workload, build_sim_budgets(limits)


def _value(node: Node) -> object:
    """A scalar, or a list of scalars (memory: [24GiB, 24GiB], tensor_split: [1, 1])."""
    if isinstance(node.value, list):
        return [item.value for item in node.value]
    return node.value


def _model_ref(ref: str, path: str) -> str:
    """A model named in the deployments file ``path``: the file beside it where there is one (written relative to
    the working directory, so that reports name no absolute path); else the reference as it is (a catalog name)."""
    shown = beside(ref, path)
    return shown if os.path.exists(shown) else ref
