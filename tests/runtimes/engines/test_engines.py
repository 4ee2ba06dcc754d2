"""Serving engines: the worked examples of ../shared/reference/serving-engines-kv.md §5, reproduced exactly."""

from __future__ import annotations

import dataclasses
import math

import pytest
from helpers import FIXTURES, kv

from kvplan.capacity.engines import EngineRuntime
from kvplan.capacity.hardware import parse_gpus, parse_memory
from kvplan.capacity.request import Budgets, Request
from kvplan.capacity.results import FitResult
from kvplan.errors import RefusedConfigError
from kvplan.runtimes.engines import ENGINES, EngineLayout, EngineSettings
from kvplan.runtimes.engines import capacity as engine_capacity
from kvplan.runtimes.engines import layout as engine_layout
from kvplan.runtimes.engines import pipeline_stages as vllm_stages
from kvplan.runtimes.engines.sglang import mem_fraction_static as sglang_mem_fraction
from kvplan.runtimes.engines.vllm.engine import batch_defaults
from kvplan.sources import load_model

GIB = 1 << 30


def layout(model, s: EngineSettings | None = None, engine: str = "vllm") -> EngineLayout:
    return engine_layout(model, ENGINES[engine], s or EngineSettings())


def capacity(model, s: EngineSettings, gpu: int, weights: int, overhead: int, engine: str = "vllm"):
    return engine_capacity(model, ENGINES[engine], s, gpu, weights, overhead)


def fit(
    model,
    engine: str,
    gpus: list[int],
    *,
    ctx: int | None = None,
    seqs: int | None = None,
    tp: int = 1,
    weight_bytes: int | None = None,
    auto: bool = False,
    gpu: str | None = None,
    **options,
) -> FitResult:
    hw = parse_gpus(gpu) if gpu else parse_memory(tuple(gpus))
    req = Request(
        "m",
        engine,
        engine=EngineSettings(max_model_len=ctx, tensor_parallel_size=tp, **options),
        hardware=hw,
        budgets=Budgets(min_parallel=seqs),  # seqs: that many must fit at once (--min-parallel)
        weight_bytes=weight_bytes,
        cache_types_auto=auto,
    )
    return EngineRuntime(ENGINES[engine]).fit(model, req)


T = 80 * GIB
W = 8_030_261_248 * 2  # Llama-3-8B bf16 weights
X = 3 * GIB  # assumed profiled activations + graphs


def test_llama3_8b_unit_sizes_and_tp_split() -> None:
    m = load_model("llama-3.1-8b")
    for engine in ("vllm", "sglang", "trtllm"):
        assert layout(m, engine=engine).bytes_per_token == 131072
    assert layout(m, EngineSettings(kv_cache_dtype="fp8")).bytes_per_token == 65536
    v = layout(m)
    assert v.block_tokens == 16 and v.block_bytes == 2 * 1024 * 1024
    assert layout(m, engine="trtllm").block_bytes == 4 * 1024 * 1024
    # 8 KV heads: tp 2/4/8 split them, tp 16 replicates (1 head per rank)
    assert [layout(m, EngineSettings(tensor_parallel_size=tp)).bytes_per_token for tp in (2, 4, 8, 16)] == [
        65536,
        32768,
        16384,
        16384,
    ]
    assert layout(m, EngineSettings(tensor_parallel_size=16)).replicated


def test_llama3_8b_capacity_per_engine() -> None:
    m = load_model("llama-3.1-8b")
    v = capacity(m, EngineSettings(max_model_len=8192), T, W, X, engine="vllm")
    assert v.kv_budget_bytes == 59_745_650_279 and v.blocks == 28_488 and v.tokens == 455_808
    assert round(v.concurrency, 2) == 55.64
    assert round(capacity(m, EngineSettings(max_model_len=131072), T, W, X, engine="vllm").concurrency, 2) == 3.48
    # SGLang 0.5.23: 512 + 1.5 × 8192 + 128 (tp) + 2 × 256 (decode graphs) + 58 prefill graph sizes × 8 MiB
    assert sglang_mem_fraction(T) == round((81920 - 13904) / 81920, 3) == 0.83
    s = capacity(m, EngineSettings(), T, W, 0, engine="sglang")
    assert s.tokens == int(((T - GIB // 2 - W) - (T - GIB // 2) * (1 - 0.83)) // 131072) == 418_017
    t = capacity(m, EngineSettings(), T, W, X, engine="trtllm")
    assert t.kv_budget_bytes == 59_472_654_336 and t.blocks == 14_179 and t.tokens == 453_728


@pytest.mark.parametrize(
    ("name", "engine", "dtype", "per_token", "tokens_in_40gib"),
    [
        ("deepseek-v3", "vllm", "auto", 70272, 611_184),
        ("deepseek-v3", "sglang", "auto", 70272, 611_191),
        ("deepseek-v3", "trtllm", "auto", 70272, 611_168),
        ("deepseek-v3", "vllm", "fp8", 35136, 1_222_336),
        ("deepseek-v3", "trtllm", "fp8", 35136, 1_222_368),
        ("deepseek-v3.2-exp", "vllm", "fp8", 48068, 893_504),
        ("deepseek-v3.2-exp", "sglang", "fp8", 48068, 893_504),
        ("deepseek-v3.2-exp", "trtllm", "fp8", 43188, 994_464),
    ],
)
def test_deepseek_mla_in_a_40gib_budget(
    name: str, engine: str, dtype: str, per_token: int, tokens_in_40gib: int
) -> None:
    lay = layout(load_model(name), EngineSettings(kv_cache_dtype=dtype, tensor_parallel_size=8), engine=engine)
    assert lay.bytes_per_token == per_token and lay.kv_heads_per_rank is None and lay.replicated
    budget = 40 * GIB
    tokens = budget // lay.block_bytes * lay.block_tokens
    assert tokens == tokens_in_40gib


def test_unsupported_layouts_are_refused() -> None:
    with pytest.raises(RefusedConfigError, match="state pages"):
        layout(load_model("qwen3-next-80b-a3b"), engine="trtllm")
    with pytest.raises(RefusedConfigError, match="no model class for jamba"):
        layout(load_model("jamba-1.5-mini"), engine="sglang")
    with pytest.raises(RefusedConfigError, match="removed MiniMaxText01"):
        layout(load_model("minimax-m1"), engine="vllm")
    with pytest.raises(RefusedConfigError, match="VSWA"):
        layout(load_model("gemma-3-27b"), engine="trtllm")


def test_impossible_parallel_layouts_are_refused() -> None:
    m = load_model("llama-3.1-8b")  # 32 heads, 8 KV heads, 32 layers
    with pytest.raises(RefusedConfigError, match=r"heads \(32\) must be divisible by tensor parallel size \(3\)"):
        layout(m, EngineSettings(tensor_parallel_size=3))
    with pytest.raises(RefusedConfigError, match="exceeds the 32 layers"):
        layout(m, EngineSettings(pipeline_parallel_size=33))
    layout(m, EngineSettings(tensor_parallel_size=32))  # 8 KV heads replicated 4 times: allowed
    q = load_model("qwen3-32b")  # 64 heads, 8 KV heads: tp 16 replicates each KV head twice
    assert layout(q, EngineSettings(tensor_parallel_size=16)).kv_heads_per_rank == 1


def test_vllm_pipeline_stages_follow_get_pp_indices() -> None:
    assert vllm_stages(32, 4) == [8, 8, 8, 8]
    assert vllm_stages(22, 4) == [5, 6, 6, 5]
    assert vllm_stages(5, 3) == [2, 2, 1]
    assert vllm_stages(61, 4) == [15, 15, 16, 15]
    lay = layout(load_model("deepseek-v3"), EngineSettings(pipeline_parallel_size=4))
    assert [len(st) for st in lay.stages] == [15, 15, 16, 15]
    # V3.2: each MLA layer brings its indexer 'layer' onto the same stage
    lay = layout(load_model("deepseek-v3.2-exp"), EngineSettings(pipeline_parallel_size=2))
    assert [len(st) for st in lay.stages] == [62, 60]
    assert lay.block_bytes == 64 * (576 * 2 + 132) * 31
    # Gemma 3n: 35 layers split 9/9/9/8; the last stage's layers all reuse earlier KV and hold no blocks
    m = load_model("gemma-3n-e4b")
    lay = layout(m, EngineSettings(pipeline_parallel_size=4))
    assert lay.stage_ranges == ((0, 8), (9, 17), (18, 26), (27, 34)) and lay.stages[3] == ()
    cap = capacity(m, EngineSettings(pipeline_parallel_size=4, max_model_len=32768), 24 * GIB, 4 * GIB, X)
    assert cap.kv_bytes(3) == 0 and cap.blocks == min(cap.stage_blocks) and len(cap.stage_blocks) == 3


def _swa_model(n_full: int, n_swa: int, swa_head: int = 64, full_head: int = 64, window: int = 128):
    """gpt-oss-like layers: the first n_swa sliding, then n_full full (8 KV heads)."""
    m = load_model("gpt-oss-20b")
    base = m.layers[0]
    layers = tuple(
        dataclasses.replace(
            base,
            index=i,
            swa=i < n_swa,
            head_k=swa_head if i < n_swa else full_head,
            head_v=swa_head if i < n_swa else full_head,
        )
        for i in range(n_full + n_swa)
    )
    return dataclasses.replace(m, layers=layers, n_layer_all=len(layers), n_swa=window)


def test_vllm_hybrid_groups_gpt_oss_by_hand() -> None:
    m = load_model("gpt-oss-20b")  # 12 sliding (W 128) + 12 full, 8 KV heads × 64, bf16
    s = EngineSettings(max_num_batched_tokens=8192)
    lay = layout(m, s)
    page = 16 * 8 * (64 + 64) * 2  # 32,768 B per layer per block of 16
    assert [(g.spec.kind, len(g.layers)) for g in lay.groups] == [("sliding_window", 12), ("full", 12)]
    assert lay.block_bytes == 12 * page
    assert lay.in_flight_tokens == 2 * 8192  # async scheduling keeps two batches in flight
    # full: cdiv(131072, 16) = 8192; window: cdiv(min(127 + 16384, 131072), 16) + 1 = 1033
    assert lay.request_blocks(131072) == 8192 + 1033
    cap = capacity(m, dataclasses.replace(s, max_model_len=131072), T, 13 * GIB, X)
    budget = math.ceil(T * 0.92) - 13 * GIB - X
    assert cap.blocks == budget // (12 * page)
    assert cap.concurrency == cap.blocks / 9225 and cap.tokens == int(cap.blocks / 9225 * 131072)
    # short requests: the window never holds more than the request
    assert lay.request_blocks(1000) == 63 + 64
    off = layout(m, dataclasses.replace(s, disable_hybrid_kv_cache_manager=True))
    assert len(off.groups) == 1 and off.block_bytes == 24 * page and off.request_blocks(131072) == 8192


def test_vllm_grouping_rules() -> None:
    # Gemma-3-27B: 52 sliding + 10 full -> group size 10: 6 sliding groups (9,9,9,9,8,8) + 1 full, 8 padding
    lay = layout(load_model("gemma-3-27b"), EngineSettings(max_num_batched_tokens=2048))
    assert sorted(len(g.layers) for g in lay.groups) == [8, 8, 9, 9, 9, 9, 10]
    assert lay.block_bytes == 10 * 16 * 16 * 256 * 2
    assert any("8 padding layer" in n for n in lay.notes)
    # strided assignment: layers[k::6], so each group spans the whole depth (PP stages stay balanced)
    swa_groups = [g for g in lay.groups if g.spec.kind == "sliding_window"]
    assert [ref.layer for ref in swa_groups[0].layers[:2]] == [0, 7]
    # 12 sliding + 13 full: max < 1.5 × min, so the group size is 13 (one padding layer), not 12
    lay = layout(_swa_model(13, 12), EngineSettings())
    assert [len(g.layers) for g in lay.groups] == [12, 13] and lay.block_bytes == 13 * 16 * 8 * 128 * 2
    # 8 sliding + 24 full: group size 8, three full groups
    lay = layout(_swa_model(24, 8), EngineSettings())
    assert [len(g.layers) for g in lay.groups] == [8, 8, 8, 8]


def test_vllm_page_unification() -> None:
    # full layers of head 128, sliding of head 64: the sliding pages are half, so their blocks hold 32 tokens
    lay = layout(_swa_model(4, 4, swa_head=64, full_head=128), EngineSettings())
    blocks = {g.spec.kind: g.spec.block_tokens for g in lay.groups}
    assert blocks == {"sliding_window": 32, "full": 16}
    assert {g.spec.page_bytes for g in lay.groups} == {16 * 8 * 256 * 2}
    assert lay.block_tokens == 16 and any("page unification" in n for n in lay.notes)
    # a page that does not divide the largest is padded to it (vLLM 0.33; earlier versions refused)
    odd = layout(_swa_model(4, 4, swa_head=64, full_head=96), EngineSettings())
    assert {odd.specs[g.layers[0]].page_bytes for g in odd.groups} == {16 * 8 * 192 * 2}
    assert {odd.specs[g.layers[0]].content_bytes for g in odd.groups} == {16 * 8 * 192 * 2, 16 * 8 * 128 * 2}


def test_vllm_mla_block_size_follows_the_backend() -> None:
    """The MLA kernel vLLM picks sets the block: FlashAttention-MLA (16) on Hopper with bf16, FlashMLA (64) with
    fp8, FlashInfer-MLA (32) on Blackwell, Triton MLA (16) on Ampere / Ada (recorded from vLLM's selector)."""
    m = load_model("deepseek-v3")

    def block(cap: tuple[int, int], dtype: str = "auto") -> tuple[int, tuple[str, ...]]:
        lay = layout(m, EngineSettings(capability=cap, kv_cache_dtype=dtype))
        return lay.block_tokens, lay.backends

    assert block((9, 0)) == (16, ("FLASH_ATTN_MLA",)) and block((9, 0), "fp8") == (64, ("FLASHMLA",))
    assert block((10, 0)) == (32, ("FLASHINFER_MLA",)) and block((8, 0)) == (16, ("TRITON_MLA",))
    assert layout(m, EngineSettings(capability=(10, 0), block_size=64)).block_tokens == 64
    assert batch_defaults(80 * GIB, "H100-80GB", (9, 0)) == (8192, 1024)
    assert batch_defaults(80 * GIB, "A100-80GB", (8, 0)) == (2048, 256) == batch_defaults(24 * GIB, "L4", (8, 9))
    assert batch_defaults(180 * GIB, "B200", (10, 0)) == (16384, 1024)


def test_sglang_hybrid_swa_pools_by_hand() -> None:
    m = load_model("gpt-oss-120b")  # 18 sliding + 18 full, 8 × (64 + 64) × 2 B = 2,048 B per layer
    s = EngineSettings(mem_fraction_static=0.85)
    cap = capacity(m, s, T, 30 * GIB, 0, engine="sglang")
    pre = T - GIB // 2
    budget = int((pre - 30 * GIB) - pre * (1 - 0.85))
    cell = 18 * 2048 + 0.8 * 18 * 2048
    assert cap.kv_budget_bytes == budget and cap.tokens == int(budget // cell)
    assert cap.swa_tokens == int(cap.tokens * 0.8)
    # a 100k request holds 100k full tokens but only its 128-token window in the SWA pool
    assert cap.requests_that_fit(100_000) == cap.tokens // 100_000
    # Gemma 3 is not a hybrid-SWA model in SGLang: every layer gets a full-length pool
    g = layout(load_model("gemma-3-27b"), engine="sglang")
    assert not g.swa_pool and all(sp.kind == "full" for sp in g.specs.values())
    assert any("without hybrid SWA pools" in n for n in g.notes)


_BOUNDARY_CASES = [
    (engine, name)
    for engine in ("vllm", "sglang", "trtllm")
    for name in ("llama-3.1-8b", "qwen3-32b", "deepseek-v3", "gpt-oss-20b", "gemma-3-12b")
    if not (engine == "trtllm" and name.startswith(("gpt-oss", "gemma")))  # TensorRT-LLM VSWA is refused
]


@pytest.mark.parametrize(("engine", "name"), _BOUNDARY_CASES)
def test_solver_answers_hold_at_the_boundary(engine: str, name: str) -> None:
    model = load_model(name)
    mem = [80 * GIB] * 2

    def solve(ctx: int | None, seqs: int | None) -> FitResult:
        return fit(model, engine, mem, ctx=ctx, seqs=seqs, tp=2, weight_bytes=40 * GIB, gpu="H100-80GBx2")

    # max parallel at 32k: n fit, n + 1 do not
    found = solve(32768, None)
    n = found.n_seq
    assert n >= 1 and found.fits
    cap = found.detail.capacity
    if engine == "vllm":
        assert n * cap.layout.request_blocks(32768) <= cap.blocks - 1 < (n + 1) * cap.layout.request_blocks(32768)
    else:
        assert cap.requests_that_fit(32768) == n
    # max context for 4 sequences: it fits, one more token does not (or it is the model's own limit)
    found = solve(None, 4)
    c = found.ctx_per_seq
    cap = found.detail.capacity
    assert found.fits and cap.requests_that_fit(c) >= 4
    assert c == model.n_ctx_train or cap.requests_that_fit(c + 1) < 4
    # a check of the answer agrees
    assert solve(c, 4).detail.requests >= 4 and (c == model.n_ctx_train or solve(c + 1, 4).detail.requests < 4)


def test_cache_types_auto_takes_the_least_lossy_dtype_that_fits() -> None:
    m = load_model("llama-3.1-70b")
    gpus = [80 * GIB] * 4
    assert fit(m, "vllm", gpus, ctx=32768, seqs=8, tp=4, auto=True).cache == "bf16 (auto)"
    need_fp8 = fit(m, "vllm", gpus, ctx=131072, seqs=6, tp=4, auto=True)
    assert fit(m, "vllm", gpus, ctx=131072, seqs=6, tp=4).detail.requests < 6
    assert need_fp8.fits and need_fp8.cache == "fp8"
    assert not fit(m, "vllm", gpus, ctx=131072, seqs=64, tp=4, auto=True).fits


def test_fit_with_an_engine_through_the_cli() -> None:
    r = kv(
        "fit",
        "llama-3.1-70b",
        "--engine",
        "vllm",
        "--gpu",
        "H100-80GBx4",
        "-tp",
        "4",
        "--max-model-len",
        "32k",
        "-o",
        "json",
    )
    assert r.exit_code == 0, r.output
    doc = r.json()
    e = doc["engine"]
    # 8 KV heads / tp 4 = 2 per rank: 2 × 256 × 2 B × 80 layers
    assert e["bytes_per_token"] == 81920 and doc["fits"] and len(doc["devices"]) == 4
    # the boundary: the answer is exactly (blocks − null block) ÷ blocks per request
    assert doc["n_seq"] == e["sequences_that_fit"] == (e["blocks"] - 1) // 2048 and doc["mode"] == "max-parallel"
    assert doc["answer"].startswith(f"vLLM: max parallel that fits: {doc['n_seq']} sequences of 32,768 tokens")
    r = kv("fit", "llama-3.1-70b", "--engine", "vllm", "--gpu", "H100-80GBx2", "--tensor-parallel-size", "4")
    assert r.exit_code == 2 and "2 GPU(s) for tensor parallel 4" in r.stderr
    r = kv("fit", "llama-3.1-70b", "--engine", "sglang", "--gpu", "L4", "--params", "70B")
    assert r.exit_code == 1 and "does not fit" in r.stdout and "the weights" in r.stdout
    r = kv(
        "fit",
        "gpt-oss-120b",
        "--engine",
        "vllm",
        "--gpu",
        "H100-80GB",
        "--weights",
        "mxfp4",
        "--min-parallel",
        "4",
        "--cache-types",
        "auto",
        "-o",
        "json",
    )
    assert r.exit_code == 0, r.output
    doc = r.json()
    assert doc["mode"] == "cache-types" and doc["engine"]["cache_dtype"] == "fp8" and doc["n_seq"] == 4
    assert [g["kind"] for g in doc["engine"]["groups"]] == ["sliding_window", "full"]
    r = kv("fit", "qwen3-next-80b-a3b", "--engine", "trtllm", "--gpu", "H100-80GB")
    assert r.exit_code == 4 and "state pages" in r.stderr


def test_vllm_hybrid_alignment_by_hand() -> None:
    """Nemotron-H-8B on an H100: a Mamba-2 state of 3 × 10,240 bf16 (conv) + 128 × 64 × 128 fp32 (SSM, the
    checkpoint's float32) = 4,255,744 B; one attention token 8 heads × 256 × 2 B = 4,096 B; the block grows to
    16 × cdiv(4,255,744, 16 × 4,096) = 1,040 tokens and the state page is padded to 1,040 × 4,096 = 4,259,840 B;
    4 attention layers + 24 Mamba layers make 7 groups of 4, so a block id costs 4 pages."""
    from kvplan.sources.hf_config import load_hf_config

    m = load_hf_config(str(FIXTURES / "engines" / "configs" / "nemotron-h-8b"))
    lay = layout(m, EngineSettings(capability=(9, 0)))
    state = next(sp for sp in lay.specs.values() if sp.kind == "state")
    assert state.content_bytes == 3 * 10240 * 2 + 128 * 64 * 128 * 4 == 4_255_744
    assert lay.block_tokens == 1040 == 16 * -(-4_255_744 // (16 * 4096))
    assert state.page_bytes == 1040 * 4096 and len(lay.groups) == 7 and lay.block_bytes == 4 * 1040 * 4096
    assert lay.backends == ("FLASH_ATTN", "MAMBA2_ATTN")
    # prefix caching on: 2 pages + 1 prefill checkpoint (Mamba-2); off: 1
    assert state.request_blocks(8192, 0) == 3
    off = layout(m, EngineSettings(capability=(9, 0), enable_prefix_caching=False))
    assert next(sp for sp in off.specs.values() if sp.kind == "state").request_blocks(8192, 0) == 1
