"""kvplan's compute buffers against llama.cpp's own (tests/fixtures/oracle/compute_graph.json, recorded by
scripts/record_compute_graph.py with the oracle harness on the CPU backend): for every architecture kvplan builds
the graph of, every fixture model of it (llama.cpp's tiny test models, realistic shapes, Gemma 3 270M — as
metadata and as the real file's own tensors — and Phi-3 with the fused attn_qkv its converter writes, loaded as a
file) across context, ubatch, -np / -kvu, cache types, -fa and
--swa-full, the bytes of the compute buffer (and of the KV / state caches the same context allocated) equal
llama.cpp's."""

from __future__ import annotations

import json
from typing import Any

import pytest
from graph_cases import ORACLE, REAL, model_of, settings_of

from kvplan.runtimes.llamacpp import LlamaCppSettings, plan
from kvplan.runtimes.llamacpp.compute import cpu_compute_buffer
from kvplan.runtimes.llamacpp.compute.archs import BUILDERS

DOC = json.loads((ORACLE / "compute_graph.json").read_text())
CASES: list[dict[str, Any]] = DOC["cases"]


def _fast(case: dict[str, Any]) -> bool:
    p = case["params"]
    return case["gguf"] in (REAL, "GEN:phi3-fused-qkv") or (p["n_ctx"], p["n_ubatch"], p["swa_full"]) == (4096, 512, 0)


def test_the_recording_covers_every_builder() -> None:
    archs = {model_of(c["gguf"]).arch for c in CASES}
    assert archs == set(BUILDERS)
    assert len(CASES) >= 1000 and not any("error" in c for c in CASES)
    assert (
        sum(c["gguf"] == REAL for c in CASES)
        == len({json.dumps(c["params"]) for c in CASES if c["gguf"] == REAL})
        == 72
    )


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=() if _fast(c) else pytest.mark.slow) for c in CASES],
    ids=[f"{c['gguf'].rsplit('/', 1)[-1]}-{i}" for i, c in enumerate(CASES)],
)
def test_compute_buffer_equals_llama_cpp(case: dict[str, Any]) -> None:
    model = model_of(case["gguf"])
    p = plan(model, settings_of(case["params"]))
    got = cpu_compute_buffer(p)
    assert got is not None
    assert got.bytes == case["compute_bytes"]["CPU"], case["params"]
    if "context_bytes" in case:  # and the context's KV / state memory, the same run's
        assert sum(c.buffer_bytes for c in p.caches) == case["context_bytes"], case["params"]


def test_the_real_file_headline() -> None:
    """Issue 24's own case: Gemma 3 270M at -c 4096 -ub 512 holds 539,494,400 B, the logits 512 MiB of it."""
    got = cpu_compute_buffer(plan(model_of(REAL), LlamaCppSettings(n_ctx=4096)))
    assert got is not None and got.bytes == 539_494_400
    assert dict(got.parts)["logits"] == 262_144 * 512 * 4


def test_granite_swa_parts_without_a_graph_say_so() -> None:
    """Granite-SWA's dense graph is built; its experts, deepstack inputs or a layer without RoPE are not, and the
    answer says which instead of giving the dense graph's bytes."""
    from dataclasses import replace

    from kvplan.runtimes.llamacpp.compute import graph_of, no_graph_reason

    model = model_of("tiny/granite_swa-dense.gguf")
    assert model.graph is not None and graph_of(plan(model, LlamaCppSettings(n_ctx=512))) is not None
    for change in ({"n_expert": 4}, {"n_deepstack": 1}, {"rope_pattern_off": True}):
        odd = replace(model, graph=replace(model.graph, **change))  # type: ignore[arg-type]
        p = plan(odd, LlamaCppSettings(n_ctx=512))
        assert graph_of(p) is None and cpu_compute_buffer(p) is None
        assert "Granite-SWA's experts, deepstack inputs or layers without RoPE" in no_graph_reason(p)


@pytest.mark.parametrize(
    ("gguf", "change", "reason"),
    [
        ("tiny/grovemoe-moe.gguf", {"experts_per_group": 0}, "experts_per_group must be from 1"),
        ("tiny/deepseek32-moe.gguf", {"indexer_heads": 0}, "lightning indexer's heads, head size and top-k"),
        ("tiny/glm-dsa-moe.gguf", {"indexer_top_k": 0}, "lightning indexer's heads, head size and top-k"),
        ("tiny/hrm_text-dense.gguf", {"hrm": (1, 2, 0)}, "HRM-Text's stacks must fill its blocks"),
        ("tiny/hrm_text-dense.gguf", {"hrm": (2, 2, 2)}, "HRM-Text's stacks must fill its blocks"),
        ("tiny/laguna-moe.gguf", {"expert_gating": 0}, "Laguna's expert gating function 0 is none llama.cpp"),
        ("tiny/laguna-moe.gguf", {"gate_width": 7}, "attention gate 7 wide (neither per head nor per element)"),
        (
            "tiny/kimi-linear-moe.gguf",
            {"tensors": frozenset({"attn_kv_b"}), "all_optional": False},
            "Kimi-Linear files with the unsplit attn_kv_b",
        ),
        (
            "tiny/kimi-k3-moe.gguf",
            {"tensors": frozenset({"attn_kv_b"}), "all_optional": False},
            "Kimi K3 files with the unsplit attn_kv_b",
        ),
    ],
)
def test_facts_llama_cpp_refuses_give_no_graph(gguf: str, change: dict[str, object], reason: str) -> None:
    """A file llama.cpp's loader would refuse (an assert, a required key) gets no graph and the reason — never a
    division by zero or a loop that does not end."""
    from dataclasses import replace

    from kvplan.runtimes.llamacpp.compute import graph_of, no_graph_reason

    model = model_of(gguf)
    assert model.graph is not None
    p = plan(replace(model, graph=replace(model.graph, **change)), LlamaCppSettings(n_ctx=512))
    assert graph_of(p) is None and reason in no_graph_reason(p)


def test_glm5_next_has_no_graph_on_its_gather_path() -> None:
    """GLM-5-Next's k-pool indexer takes another graph (a gather of the selected latents) for a ubatch of at most 16
    tokens over more cells than it selects: kvplan builds the scatter path only (recorded) and says so for the other,
    rather than plan the wrong graph; at 17 tokens, or with fewer cells than it selects, the scatter path is built."""
    from kvplan.runtimes.llamacpp.compute import graph_of, no_graph_reason

    model = model_of("real/glm5-next-shape.gguf")  # top-k 2,048: 2,051 cells selected of 4,096
    small = plan(model, LlamaCppSettings(n_ctx=4096, n_batch=16, n_ubatch=16))
    assert graph_of(small) is None and "gathered selection" in no_graph_reason(small)
    assert graph_of(plan(model, LlamaCppSettings(n_ctx=4096, n_batch=17, n_ubatch=17))) is not None
    assert graph_of(plan(model, LlamaCppSettings(n_ctx=2048, n_batch=16, n_ubatch=16))) is not None


def test_deepseek4_hash_layers_route_by_token() -> None:
    """DeepSeek-V4's leading hash_layer_count layers pick their experts by the token's row of ffn_gate_tid2eid
    (deepseek4.cpp), built from the source: a metadata-only GGUF cannot carry that i32 table, so the recorded shape
    has none. Those layers sort no router scores and gather i32 expert ids instead; the rest are unchanged."""
    from dataclasses import replace

    from kvplan.runtimes.llamacpp.compute import graph_of

    model = model_of("real/deepseek4-shape.gguf")
    assert model.graph is not None and model.graph.dsv4 == (4, 256, 0)
    hashed = replace(model, graph=replace(model.graph, dsv4=(4, 256, 3)))
    settings = LlamaCppSettings(n_ctx=4096)
    plain_graph, hash_graph = graph_of(plan(model, settings)), graph_of(plan(hashed, settings))
    assert plain_graph is not None and hash_graph is not None

    def routed(gf: Any) -> tuple[int, int]:
        sorts = sum(n.op == "ARGSORT" for n in gf.nodes)
        ids = [n for n in gf.nodes if n.op == "GET_ROWS" and n.srcs[0].name.endswith("ffn_gate_tid2eid")]
        assert all(n.type == "i32" and n.ne[:2] == (4, 512) for n in ids)
        return sorts, len(ids)

    assert routed(plain_graph) == (12, 0)
    assert routed(hash_graph) == (9, 3)


@pytest.mark.parametrize(
    ("gguf", "missing", "why"),
    [
        ("real/deepseek4-shape.gguf", {"dsv4": (0, 0, 0)}, "output groups"),
        ("real/deepseek4-shape.gguf", {"dsv4": (3, 256, 0)}, "dividing the heads"),
        ("real/qwen4exp-shape.gguf", {"hc_low_rank": 0}, "low rank must be known"),
        ("real/qwen4exp-shape.gguf", {"ple": (4, 64, 4, 3)}, "PLE heads must fill the embedding"),
    ],
)
def test_hyper_connection_models_without_their_keys_have_no_graph(gguf: str, missing: dict[str, Any], why: str) -> None:
    """A DeepSeek-V4 or Qwen4exp description without the keys its loader requires (as a config.json, whose
    conversion of them is not ported, gives it) builds no graph and says why, instead of one of the wrong shape."""
    from dataclasses import replace

    from kvplan.runtimes.llamacpp.compute import graph_of, no_graph_reason

    model = model_of(gguf)
    assert model.graph is not None
    p = plan(replace(model, graph=replace(model.graph, **missing)), LlamaCppSettings(n_ctx=4096))
    assert graph_of(p) is None and why in no_graph_reason(p)
    assert graph_of(plan(model, LlamaCppSettings(n_ctx=4096))) is not None


#: graph facts a GGUF states and a config.json's conversion may not: each zeroed in turn
_ZEROED: dict[str, Any] = {
    "hc_count": 0, "hc_low_rank": 0, "attn_res_block": 0, "indexer_block": 0, "kpool": 0, "indexer_heads": 0,
    "indexer_top_k": 0, "n_rot": 0, "kv_lora_rank": 0, "q_lora_rank": 0, "n_expert_used": 0, "n_expert": 0,
    "n_ff_exp": 0, "n_ff": 0, "expert_latent": 0, "dsv4": (0, 0, 0), "ple": (0, 0, 0, 0), "hrm": (0, 0, 0),
}  # fmt: skip


@pytest.mark.slow
def test_every_builder_builds_or_says_why_with_a_fact_missing() -> None:
    """Hostile or partial descriptions: for every fixture model of every builder, each fact above zeroed in turn
    gives a graph or no graph with its reason — never an exception (a crash would be exit 70)."""
    from dataclasses import replace

    from kvplan.runtimes.llamacpp.compute import graph_of, no_graph_reason

    ggufs = sorted({c["gguf"] for c in CASES if c["gguf"].startswith(("tiny/", "real/"))})
    checked = 0
    for gguf in ggufs:
        model = model_of(gguf)
        if model.graph is None:
            continue
        for name, value in _ZEROED.items():
            p = plan(replace(model, graph=replace(model.graph, **{name: value})), LlamaCppSettings(n_ctx=4096))
            if graph_of(p) is None:
                assert no_graph_reason(p)
            checked += 1
    assert checked > 3000
