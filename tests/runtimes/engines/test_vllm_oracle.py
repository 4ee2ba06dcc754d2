"""kvplan's vLLM numbers against vLLM 0.33.0's own planning code (recorded by scripts/engines/record_vllm.py).

Every recorded case: the backends vLLM picks, its block size, its KV cache groups (kind, layers, page), the
bytes per block id of every pipeline stage, the blocks, the max_model_len it settles on (auto-fit included),
the "GPU KV cache size: N tokens" and "Maximum concurrency" figures — or, where vLLM refuses to start, a
refusal from kvplan too.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kvplan.capacity.hardware import gpu_table
from kvplan.errors import RefusedConfigError
from kvplan.model import ModelDescription
from kvplan.runtimes.engines import VLLM, Capacity, EngineSettings
from kvplan.runtimes.engines.paged import RankMemory
from kvplan.sources.hf_config import load_hf_config

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "engines"
RECORDED = json.loads((FIXTURES / "vllm.json").read_text())
CASES: list[dict[str, Any]] = RECORDED["cases"]
KINDS = {
    "FullAttentionSpec": "full",
    "SlidingWindowSpec": "sliding_window",
    "ChunkedLocalAttentionSpec": "chunked_local",
    "MLAAttentionSpec": ("mla", "indexer"),
    "MambaSpec": "state",
}


@cache
def model(name: str) -> ModelDescription:
    return load_hf_config(str(FIXTURES / "configs" / name))


def case_id(c: dict[str, Any]) -> str:
    case = c["case"]
    extra = "-".join(
        f"{k}={v}" for k, v in case.items() if k not in ("model", "gpu", "kv_cache_memory_bytes") and v is not None
    )
    return f"{case['model']}-{case['gpu']['preset']}" + (f"-{extra}" if extra else "")


def settings(case: dict[str, Any]) -> EngineSettings:
    g = gpu_table()[case["gpu"]["preset"].replace("-", "").upper()]
    assert g.memory_bytes == case["gpu"]["mem"] and list(g.capability or ()) == case["gpu"]["cap"]
    s = EngineSettings(
        kv_cache_dtype=case.get("kv_cache_dtype") or "auto",
        tensor_parallel_size=case.get("tensor_parallel_size", 1),
        pipeline_parallel_size=case.get("pipeline_parallel_size", 1),
        block_size=case.get("block_size"),
        max_model_len=case.get("max_model_len"),
        max_num_batched_tokens=case.get("max_num_batched_tokens"),
        disable_hybrid_kv_cache_manager=case.get("disable_hybrid_kv_cache_manager", False),
        capability=g.capability,
        gpu_name=g.name,
        kv_cache_memory_bytes=case["kv_cache_memory_bytes"],
        enable_prefix_caching=case.get("enable_prefix_caching"),
        mamba_ssm_cache_dtype=case.get("mamba_ssm_cache_dtype"),
    )
    return VLLM.resolve(s, g.memory_bytes, g.name)


def startup(case: dict[str, Any]) -> Capacity:
    s = settings(case)
    return VLLM.startup(model(case["model"]), s, RankMemory(case["gpu"]["mem"], 0, 0))


def _group(cap: Capacity, i: int) -> dict[str, Any]:
    """A group as the first pipeline stage's worker holds it (vLLM's recorded kv_cache_config[0])."""
    g = cap.layout.groups[i]
    own = [ref for ref in g.layers if ref in set(cap.layout.stages[0])]
    specs = [cap.layout.specs[ref] for ref in (own or g.layers)]
    kinds = sorted({sp.kind for sp in specs})
    return {"layers": len(own), "kind": kinds, "block_size": specs[0].block_tokens,
            "pages": sorted({sp.page_bytes for sp in specs})}  # fmt: skip


@pytest.mark.parametrize("recorded", [c for c in CASES if "ok" in c], ids=case_id)
def test_capacity_equals_vllm(recorded: dict[str, Any]) -> None:
    want = recorded["ok"]
    cap = startup(recorded["case"])
    lay = cap.layout
    assert set(lay.backends) == set(want["backends"])
    assert lay.block_tokens == want["block_size"]
    got_groups = [_group(cap, i) for i in range(len(lay.groups))]
    want_groups = [
        {"layers": g["layers"], "kind": KINDS[g["spec"]["type"]], "block_size": g["spec"]["block_size"],
         "pages": g["layer_pages"]}
        for g in want["groups"]
    ]  # fmt: skip
    assert len(got_groups) == len(want_groups)
    for wanted in want_groups:  # vLLM's MLAAttentionSpec is kvplan's MLA latent or DSA indexer
        kinds = {wanted.pop("kind")} if isinstance(wanted["kind"], str) else set(wanted.pop("kind"))
        match = next(
            g for g in got_groups
            if set(g["kind"]) <= kinds and {k: v for k, v in g.items() if k != "kind"} == wanted
        )  # fmt: skip
        got_groups.remove(match)
    assert [lay.stage_block_bytes(i) for i in range(len(lay.stages))] == want["bytes_per_block"]
    assert cap.blocks == want["num_blocks"]
    assert cap.max_model_len == want["max_model_len"]
    assert cap.tokens == want["kv_cache_tokens"]
    assert cap.concurrency == want["concurrency"]
    assert lay.settings.max_num_batched_tokens == want["resolved"]["max_num_batched_tokens"]
    assert lay.settings.max_num_seqs == want["resolved"]["max_num_seqs"]


@pytest.mark.parametrize("recorded", [c for c in CASES if "error" in c], ids=case_id)
def test_refuses_where_vllm_refuses(recorded: dict[str, Any]) -> None:
    with pytest.raises(RefusedConfigError) as refused:
        startup(recorded["case"])
    estimate = re.search(r"estimated maximum model length is (\d+)", recorded["error"]["message"])
    if estimate:  # the same estimate of the longest context that fits
        assert f"the estimated maximum model length is {estimate.group(1)}" in str(refused.value)


def test_the_suite_is_large_and_covers_the_families() -> None:
    models = {c["case"]["model"] for c in CASES}
    gpus = {c["case"]["gpu"]["preset"] for c in CASES}
    assert len(CASES) >= 300
    assert gpus >= {"A100-80GB", "L40S", "RTX-4090", "H100-80GB", "H200", "B200"}
    assert {"nemotron-h-8b", "qwen3-next-80b-a3b", "falcon-h1-7b", "jamba-1.5-mini", "lfm2-1.2b"} <= models
