"""kvplan's SGLang numbers against SGLang 0.5.23's own pool sizing (recorded by scripts/engines/record_sglang.py).

Every recorded case: mem_fraction_static as SGLang resolves it, the page size, the full (and SWA) token pool,
the Mamba state pool and max_running_requests — or a refusal where SGLang fails or falls back to a generic
model class that does not size the state.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kvplan.capacity.hardware import gpu_table
from kvplan.errors import RefusedConfigError
from kvplan.model import ModelDescription
from kvplan.runtimes.engines import SGLANG, Capacity, EngineSettings, capacity, layout
from kvplan.runtimes.engines.sglang import model_mem_fraction
from kvplan.sources.hf_config import load_hf_config

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "engines"
RECORDED = json.loads((FIXTURES / "sglang.json").read_text())
CASES: list[dict[str, Any]] = RECORDED["cases"]
#: SGLang's generic fallback class: it runs these, but sizes every layer as attention (no state pool)
FALLBACK = "TransformersForCausalLM"


@cache
def model(name: str) -> ModelDescription:
    return load_hf_config(str(FIXTURES / "configs" / name))


def case_id(c: dict[str, Any]) -> str:
    case = c["case"]
    extra = "-".join(
        f"{k}={v}"
        for k, v in case.items()
        if k not in ("model", "gpu", "pre_bytes", "available_bytes", "weight_bytes") and v is not None
    )
    return f"{case['model']}-{case['gpu']['preset']}-{extra}"


def settings(case: dict[str, Any]) -> EngineSettings:
    g = gpu_table()[case["gpu"]["preset"].replace("-", "").upper()]
    assert g.memory_bytes == case["gpu"]["mem"]
    return EngineSettings(
        kv_cache_dtype=case.get("kv_cache_dtype") or "auto",
        tensor_parallel_size=case.get("tp_size", 1),
        block_size=case.get("page_size"),
        max_model_len=case.get("context_length"),
        mem_fraction_static=case.get("mem_fraction_static"),
        max_total_tokens=case.get("max_total_tokens"),
        swa_full_tokens_ratio=case.get("swa_full_tokens_ratio"),
        max_mamba_cache_size=case.get("max_mamba_cache_size"),
        chunked_prefill_size=case.get("chunked_prefill_size"),
        max_prefill_tokens=case.get("max_prefill_tokens"),
        disable_overlap_schedule=bool(case.get("disable_overlap_schedule")),
        max_num_seqs=case.get("max_running_requests"),
        enable_prefix_caching=False if case.get("disable_radix_cache") else None,
        capability=g.capability,
        gpu_name=g.name,
    )


def plan(case: dict[str, Any]) -> Capacity:
    m = model(case["model"])
    s = settings(case)
    return capacity(m, SGLANG, s, case["gpu"]["mem"], case["weight_bytes"], 0, layout(m, SGLANG, s))


@pytest.mark.parametrize(
    "recorded", [c for c in CASES if "ok" in c and c["ok"]["model_class"] != FALLBACK], ids=case_id
)
def test_pools_equal_sglang(recorded: dict[str, Any]) -> None:
    want, case = recorded["ok"], recorded["case"]
    s = settings(case)
    m = model(case["model"])
    assert model_mem_fraction(m, s, case["gpu"]["mem"]) == want["mem_fraction_static"]
    cap = plan(case)
    assert cap.layout.block_tokens == want["page_size"]
    assert cap.tokens == want["max_total_num_tokens"]
    assert cap.swa_tokens == want["swa_max_total_num_tokens"]
    assert cap.state_slots == (want["max_mamba_cache_size"] or 0)
    if want["mamba_cache_per_req"]:
        assert (
            max(cap.layout.stage_state_bytes(i) for i in range(len(cap.layout.stages))) == want["mamba_cache_per_req"]
        )
    assert cap.max_requests is None or cap.max_requests == want["max_running_requests"]


#: SGLang's own words when the memory left holds no KV or state pool: kvplan answers "does not fit" (0 tokens)
NO_MEMORY = ("Loaded weights leave no GPU memory", "Not enough GPU memory for hybrid")


def _no_memory(c: dict[str, Any]) -> bool:
    return "error" in c and c["error"]["message"].startswith(NO_MEMORY)


@pytest.mark.parametrize("recorded", [c for c in CASES if _no_memory(c)], ids=case_id)
def test_no_pool_where_sglang_finds_no_memory(recorded: dict[str, Any]) -> None:
    cap = plan(recorded["case"])
    assert cap.tokens == 0 and cap.requests_that_fit(1) == 0


@pytest.mark.parametrize(
    "recorded",
    [c for c in CASES if ("error" in c and not _no_memory(c)) or ("ok" in c and c["ok"]["model_class"] == FALLBACK)],
    ids=case_id,
)
def test_refuses_where_sglang_fails_or_falls_back(recorded: dict[str, Any]) -> None:
    with pytest.raises(RefusedConfigError):
        plan(recorded["case"])


#: the recorded server arguments as SGLang's own flags on kvplan's command line
FLAGS = {"tp_size": "--tp-size", "page_size": "--page-size", "kv_cache_dtype": "--kv-cache-dtype",
         "mem_fraction_static": "--mem-fraction-static", "context_length": "--context-length",
         "max_running_requests": "--max-running-requests", "max_total_tokens": "--max-total-tokens",
         "swa_full_tokens_ratio": "--swa-full-tokens-ratio", "max_mamba_cache_size": "--max-mamba-cache-size",
         "chunked_prefill_size": "--chunked-prefill-size", "max_prefill_tokens": "--max-prefill-tokens"}  # fmt: skip
SWITCHES = {"disable_radix_cache": "--disable-radix-cache", "disable_overlap_schedule": "--disable-overlap-schedule"}
#: the arguments that reach SGLang's sizing through flags added since the first recordings
LATER = ("max_total_tokens", "swa_full_tokens_ratio", "max_mamba_cache_size", "chunked_prefill_size",
         "max_prefill_tokens", "disable_overlap_schedule", "disable_radix_cache")  # fmt: skip


def _cli_cases() -> list[dict[str, Any]]:
    return [
        c
        for c in CASES
        if "ok" in c and c["ok"]["model_class"] != FALLBACK and any(c["case"].get(k) is not None for k in LATER)
    ]


@pytest.mark.parametrize("recorded", _cli_cases(), ids=case_id)
def test_the_command_line_reaches_sglangs_pools(recorded: dict[str, Any]) -> None:
    """The same cases through `kvplan fit` as a user types them (SGLang's flag names, the weights given): each
    flag reaches the sizing — the pools equal SGLang's, and the run line carries the flags."""
    from helpers import kv

    case, want = recorded["case"], recorded["ok"]
    tp = case.get("tp_size", 1)
    args = ["fit", str(FIXTURES / "configs" / case["model"]), "--engine", "sglang", "--params", "1e9",
            "--gpu", f"{case['gpu']['preset']}x{tp}" if tp > 1 else case["gpu"]["preset"],
            "--weight-bytes", str(case["weight_bytes"] * tp), "-o", "json"]  # fmt: skip
    for key, flag in FLAGS.items():
        if case.get(key) is not None:
            args += [flag, str(case[key])]
    args += [flag for key, flag in SWITCHES.items() if case.get(key)]
    r = kv(*args)
    assert r.exit_code == 0, r.stderr
    engine = r.json()["engine"]
    assert engine["kv_tokens_per_gpu"] == want["max_total_num_tokens"]
    assert engine["swa_tokens_per_gpu"] == want["swa_max_total_num_tokens"]
    assert engine["state_slots"] == (want["max_mamba_cache_size"] or 0)
    run_args = r.json()["run_args"]
    for key, flag in {**FLAGS, **SWITCHES}.items():
        if case.get(key) and key not in ("tp_size", "context_length", "kv_cache_dtype", "page_size"):
            assert flag in run_args, (flag, run_args)
