"""llama.cpp on GPUs: placement by llama.cpp's layer split (all layers, -ngl, -ts, -nkvo), the compute buffer
against llama.cpp's recorded one, and solver answers checked at the boundary through the same layout code (the
answer fits, one more step does not)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from gguf_files import big_vocab_model
from helpers import GIB, MIB, ORACLE

from kvplan.capacity import llamacpp as fit
from kvplan.capacity.hardware import parse_memory
from kvplan.capacity.request import LlamaCppOptions, Request
from kvplan.capacity.results import Constraint, Mode
from kvplan.capacity.weights import bits_per_weight, model_weights
from kvplan.runtimes.llamacpp import Backend, FlashAttn, LlamaCppSettings, derive_context, plan
from kvplan.runtimes.llamacpp.plan import KV_PAD_CELLS
from kvplan.sources import load_model


def test_layer_split_follows_llama_cpp() -> None:
    # upper_bound(cumulative splits, il / (n_layer + 1)): 32 layers + output over [0.5, 1.0]
    where = fit.layer_devices(32, [1, 1])
    assert where[:17] == [0] * 17 and where[17:] == [1] * 16  # layer 16: 16/33 < 0.5 → GPU0; output → GPU1
    assert fit.layer_devices(4, [3, 1]) == [0, 0, 0, 0, 1]  # 3/5 < 0.75, 4/5 ≥ 0.75
    # -ngl 3 of 4 layers + output: i_gpu_start = 4 + 1 - 3 = 2; layers 0-1 on the host (-1); 3 GPU layers over
    # [0.5, 1.0]: (2-2)/3 = 0 → GPU0, 1/3 → GPU0, output 2/3 → GPU1
    assert fit.layer_devices(4, [1, 1], n_gpu_layers=3) == [-1, -1, 0, 0, 1]
    assert fit.layer_devices(4, [1], n_gpu_layers=0) == [-1] * 5
    assert fit.layer_devices(4, [1], n_gpu_layers=99) == [0] * 5  # more than there are: all


def test_bits_per_weight() -> None:
    assert bits_per_weight("q8_0") == 8.5 and bits_per_weight("bf16") == 16 and bits_per_weight("q4_0") == 4.5
    assert bits_per_weight("q4_k_m") == pytest.approx(4.9, abs=0.01)  # 4.58 GiB for Llama-3-8B's 8.03 B
    # serving-engine checkpoints: NVFP4 e2m1 + fp8 scale / 16; AWQ int4 + fp16 scale + 4-bit zero / 128; MXFP4
    assert bits_per_weight("nvfp4") == 4.5 and bits_per_weight("AWQ") == 4.15625 and bits_per_weight("fp8") == 8
    assert bits_per_weight("mxfp4") == 4.25


def _target(memory: tuple[int, ...], name: str = "llama-3.1-8b", **kw: object) -> fit.Target:
    m = load_model(name)
    return fit.Target(m, model_weights(m, "q4_k_m", None), memory, **kw)  # type: ignore[arg-type]


def test_max_context_boundary() -> None:
    target = _target((16 * GIB,))
    s = LlamaCppSettings(n_seq=2, backend=Backend.CUDA)
    p = target.max_context(s, 2, target.model.n_ctx_train)
    assert p is not None and p.fits
    n = p.plan.context.n_ctx_seq
    assert n % KV_PAD_CELLS == 0 and n < target.model.n_ctx_train and p.plan.context.n_ctx_asked == 2 * n
    assert not target.place(fit.per_sequence(s, 2, n + KV_PAD_CELLS)).fits


def test_max_parallel_and_cache_types_boundary() -> None:
    target = _target((24 * GIB,))
    s = LlamaCppSettings(backend=Backend.CUDA, flash_attn=FlashAttn.ON)
    p = target.max_parallel(s, 32768)
    assert p is not None and p.fits
    n = p.plan.context.n_seq
    assert p.plan.context.n_ctx_asked == n * 32768
    assert not target.place(fit.per_sequence(s, n + 1, 32768)).fits
    small = _target((12 * GIB,))
    asked = fit.per_sequence(s, 1, 131072)
    found = small.cheapest_cache_types(asked)
    assert found is not None and found.fits
    pair = (found.plan.context.type_k.name, found.plan.context.type_v.name)
    for tk, tv in fit.CACHE_TYPE_LADDER[: fit.CACHE_TYPE_LADDER.index(pair)]:
        assert not small.place(dataclasses.replace(asked, type_k=tk, type_v=tv)).fits, (tk, tv)


def test_gguf_weights_are_the_tensor_sum_per_device(tmp_path) -> None:
    path = big_vocab_model(tmp_path / "w.gguf", vocab=100, tensor_mib=4)
    m = load_model(str(path))
    w = model_weights(m, None, None)
    # only token_embd (4 MiB): the input layer on the host, duplicated onto the output GPU (tied embeddings)
    assert w.exact and w.input_bytes == 4 << 20 and w.output_bytes == 4 << 20
    p = fit.Target(m, w, (8 * GIB, 8 * GIB), overhead=(0,)).place(LlamaCppSettings(n_ctx=4096))
    assert p.host.weight_bytes == 4 << 20 and p.gpus[1].weight_bytes == 4 << 20
    assert sum(d.kv_bytes for d in p.gpus) == p.plan.total_bytes


def test_partial_offload_and_kv_in_host_memory() -> None:
    """-ngl N keeps the first layers, their weights and their KV in host memory; -nkvo keeps all KV there."""
    target = _target((24 * GIB,))
    s = LlamaCppSettings(n_ctx=8192)
    full = target.place(s)
    part = dataclasses.replace(target, n_gpu_layers=17).place(s)  # 33 - 17 = 16 layers on the host
    per_layer_kv = full.plan.total_bytes // 32
    assert part.host.layers == (0, 15) and part.gpus[0].layers == (16, 31)
    assert part.host.kv_bytes == 16 * per_layer_kv and part.gpus[0].kv_bytes == 16 * per_layer_kv
    assert part.host.weight_bytes == sum(target.weights.layer_bytes[:16]) + target.weights.input_bytes
    nkvo = dataclasses.replace(target, no_kv_offload=True).place(s)
    assert nkvo.gpus[0].kv_bytes == 0 and nkvo.host.kv_bytes == full.plan.total_bytes


def test_cuda_buffer_rules() -> None:
    # MLA K of width 576 in q8_0: one extra row of 512 - 576 % 512 = 448 values (476 bytes), then 128-aligned
    m = load_model("deepseek-v2-lite")
    s = LlamaCppSettings(n_ctx=4096, type_k="q8_0", type_v="q8_0", backend=Backend.CUDA)
    ctx = derive_context(m, s)
    raw = 612 * 4096
    assert ctx.alloc(ctx.type_k, 576, raw) == 2507264  # 612 × 4096 + 476 = 2507228, rounded up to 128
    cpu = plan(m, dataclasses.replace(s, backend=Backend.CPU)).total_bytes
    assert plan(m, s).total_bytes - cpu == 27 * (2507264 - raw)


def _fit(name: str, memory: tuple[int, ...], overhead: int | None = None, **options: object):
    over = None if overhead is None else (overhead,)
    req = Request(name, llamacpp=LlamaCppOptions(**options), hardware=parse_memory(memory), overhead=over)  # type: ignore[arg-type]
    m = load_model(name)
    return fit.RUNTIME.fit(dataclasses.replace(m, n_params=m.n_params or 8_000_000_000), req)


def test_does_not_fit_names_the_binding_constraint() -> None:
    # KV: 8 B × q4_k_m (4.56 GiB) fits in 12 GiB; 128k tokens of f16 KV (16 GiB) do not
    r = _fit("llama-3.1-8b", (12 * GIB,), ctx_size=131072)
    assert not r.fits and r.shortfall is not None and r.shortfall.constraint is Constraint.KV
    s = r.shortfall
    assert s.kv_bytes == 131072 * 131072 and s.short_bytes == s.need_bytes - 12 * GIB > 0
    what = {a.what: a for a in s.alternatives}
    assert {"max-ctx", "cache-types", "gpu-layers"} <= set(what)
    # every alternative is an answer that fits, and the longest context is the solver's boundary
    longest = what["max-ctx"]
    assert _fit("llama-3.1-8b", (12 * GIB,), ctx_size=longest.ctx_per_seq).fits
    assert not _fit("llama-3.1-8b", (12 * GIB,), ctx_size=longest.ctx_per_seq + KV_PAD_CELLS).fits
    cheaper = what["cache-types"].flags
    assert _fit("llama-3.1-8b", (12 * GIB,), ctx_size=131072, cache_type_k=cheaper[1], cache_type_v=cheaper[3]).fits
    # weights: 8 B × q4_k_m do not fit in 4 GiB at all
    r = _fit("llama-3.1-8b", (4 * GIB,))
    assert r.mode is Mode.MAX_CTX and not r.fits and r.shortfall.constraint is Constraint.WEIGHTS
    # overhead: the weights fit, a 1 GiB --overhead does not
    w = model_weights(load_model("llama-3.1-8b"), "q4_k_m", None).total_bytes
    r = _fit("llama-3.1-8b", (w + 512 * MIB,), GIB, ctx_size=4096)
    assert r.shortfall.constraint is Constraint.OVERHEAD
    # compute: with flash attention off the f32 KQ scores of 128k cells (32 heads × 131072 × 512 × 4 B = 8 GiB)
    # do not fit in the 5 GiB left after the weights
    r = _fit("llama-3.1-8b", (w + 5 * GIB,), ctx_size=131072, flash_attn=FlashAttn.OFF)
    assert r.shortfall.constraint is Constraint.COMPUTE


def test_compute_buffer_tracks_llamacpps_compute_buffer() -> None:
    """The context-dependent part of the overhead estimate against llama.cpp's own compute buffer (CPU backend,
    recorded by scripts/record_compute.py): its growth from 4k to 32k cells, and the cost of flash attention
    off. The estimate never falls short by more than 3 % + 8 MiB, and exceeds the measurement by at most 50 %
    wherever the scores dominate (≥ 512 MiB; below that llama.cpp reuses other intermediates' memory and the
    estimate stays on the safe side)."""
    doc = json.loads((ORACLE / "compute.json").read_text())
    measured = {
        (c["gguf"], *(c["params"][k] for k in ("n_ctx", "n_ubatch", "fa", "n_seq_max"))): c["compute_bytes"]
        for c in doc["cases"]
    }
    models: dict[str, object] = {}

    def predicted(g: str, ctx: int, ub: int, fa: int, seqs: int) -> int:
        m = models.setdefault(g, load_model(str(ORACLE / g)))
        s = LlamaCppSettings(n_ctx=ctx, n_ubatch=ub, flash_attn=FlashAttn.ON if fa else FlashAttn.OFF, n_seq=seqs)
        return fit.compute_buffer(plan(m, s))[0]  # type: ignore[arg-type]

    checked = 0
    for (g, ctx, ub, fa, seqs), value in measured.items():
        pairs = []
        if ctx == 32768:
            pairs.append(
                (
                    value - measured[(g, 4096, ub, fa, seqs)],
                    predicted(g, ctx, ub, fa, seqs) - predicted(g, 4096, ub, fa, seqs),
                )
            )
        if fa == 0:
            pairs.append(
                (
                    value - measured[(g, ctx, ub, 1, seqs)],
                    predicted(g, ctx, ub, 0, seqs) - predicted(g, ctx, ub, 1, seqs),
                )
            )
        for real, estimate in pairs:
            assert estimate >= real * 0.97 - 8 * MIB, (g, ctx, ub, fa, seqs, real, estimate)
            if real >= 512 * MIB:
                assert estimate <= real * 1.5, (g, ctx, ub, fa, seqs, real, estimate)
            checked += 1
    assert checked == 144  # 72 growth pairs (the 32k cases) + 72 flash-attention-off pairs


def test_compute_buffer_grows_with_flash_attention_off() -> None:
    m = load_model("llama-3.1-8b")
    on = fit.compute_buffer(plan(m, LlamaCppSettings(n_ctx=32768, flash_attn=FlashAttn.ON)))
    off = fit.compute_buffer(plan(m, LlamaCppSettings(n_ctx=32768, flash_attn=FlashAttn.OFF)))
    assert on[0] == 32768 * 512 * 2  # f16 mask: cells × ubatch × 2 B
    assert off[0] == (32 * 32768 + 32768) * 512 * 4 and "flash attention off" in off[1]  # f32 scores of 32 heads


@pytest.mark.parametrize(
    ("name", "gib", "ctx", "kw"),
    [
        pytest.param("llama-3.1-8b", 24, 32768, {}, marks=pytest.mark.slow),
        ("llama-3.1-8b", 80, 1024, {}),  # more sequences than the default batch allows: refusals above 2048/1024
        pytest.param("gemma-3-27b", 48, 8192, {}, marks=pytest.mark.slow),
        ("minimax-m1", 300, 4096, {"n_ubatch": 512}),  # 64: MiniMax-01 refuses counts that do not divide the ubatch
        pytest.param("qwen3-next-80b-a3b", 96, 16384, {"kv_unified": True}, marks=pytest.mark.slow),  # 30 s
    ],
)
def test_max_parallel_equals_checking_every_count(name: str, gib: int, ctx: int, kw: dict[str, object]) -> None:
    """The bisection over accepted counts answers what checking all 256 counts answers."""
    target = _target((gib * GIB,), name)
    s = dataclasses.replace(LlamaCppSettings(backend=Backend.CUDA), **kw)  # type: ignore[arg-type]
    brute = None
    for n in range(1, fit.LLAMA_MAX_SEQ + 1):
        p = target.fitting(fit.per_sequence(s, n, ctx))
        if p is not None:
            brute = p
    found = target.max_parallel(s, ctx)
    assert (found is None) == (brute is None)
    if found is not None and brute is not None:
        assert found.plan.context.n_seq == brute.plan.context.n_seq


def test_a_draft_model_estimate_fit_and_run_line() -> None:
    """-md: the draft's own KV at the main context (Qwen3-0.6B: 28 layers × 8 KV heads × 128 × (K + V) × 2 B =
    112 KiB a token, 1.75 GiB at 16,384), its weights and KV on the GPUs, the longest context shrinking to make
    room for it, and a run line that gives the same plan back."""
    from helpers import kv

    doc = kv("estimate", "qwen3-32b", "-c", "16384", "-md", "qwen3-0.6b", "-o", "json").json()
    assert doc["draft"]["model"]["name"] == "qwen3-0.6b"
    assert doc["draft"]["memory"]["total_bytes"] == 28 * 8 * 128 * 2 * 2 * 16384 == 1_879_048_192
    assert doc["combined_total_bytes"] == 4 * GIB + 1_879_048_192
    alone = kv("fit", "qwen3-32b", "--gpu", "RTX-4090", "-o", "json").json()
    both = kv("fit", "qwen3-32b", "--gpu", "RTX-4090", "-md", "qwen3-0.6b", "-o", "json").json()
    assert both["ctx_per_seq"] < alone["ctx_per_seq"]
    assert (
        both["kv_bytes"]
        == both["llamacpp"]["memory"]["total_bytes"] + both["llamacpp"]["draft"]["memory"]["total_bytes"]
    )
    args = both["run_args"]
    assert args[args.index("-md") + 1 : args.index("-md") + 4] == ["qwen3-0.6b.gguf", "-ngld", "29"]
    again = kv("fit", "qwen3-32b", "--gpu", "RTX-4090", *[a if a != "qwen3-0.6b.gguf" else "qwen3-0.6b" for a in args],
               "-o", "json").json()  # fmt: skip
    assert again["devices"] == both["devices"]
    r = kv("estimate", "qwen3-32b", "-md", "qwen3-0.6b", "--mtp")
    assert r.exit_code == 2 and "one draft at a time" in r.stderr
    r = kv("fit", "qwen3-32b", "--gpu", "RTX-4090", "-md", "/nonexistent/draft.gguf")
    assert r.exit_code == 3 and "/nonexistent/draft.gguf" in r.stderr and r.stderr.count("\n") == 1


def test_an_mtp_draft_context_in_fit() -> None:
    """--mtp (llama-server: --spec-type draft-mtp): the MTP draft context's KV — estimate --mtp's exact bytes —
    lands with the nextn layer, on the main model's weights; the run line says --spec-type draft-mtp, which
    kvplan reads back as --mtp."""
    from helpers import kv

    base = ("fit", "glm-4.5-air", "--gpu", "H100-80GBx2", "-c", "32768", "-o", "json")
    alone, mtp = kv(*base).json(), kv(*base, "--mtp").json()
    est = kv("estimate", "glm-4.5-air", "-c", "32768", "--mtp", "-o", "json").json()
    extra = est["draft"]["memory"]["total_bytes"]
    assert mtp["kv_bytes"] - alone["kv_bytes"] == extra == mtp["llamacpp"]["draft"]["memory"]["total_bytes"]
    gpu1 = next(d for d in mtp["devices"] if d["device"] == "GPU1")
    gpu1_alone = next(d for d in alone["devices"] if d["device"] == "GPU1")
    assert gpu1["kv_bytes"] - gpu1_alone["kv_bytes"] == extra  # the nextn layer (46) is on GPU1
    assert [d["weight_bytes"] for d in mtp["devices"]] == [d["weight_bytes"] for d in alone["devices"]]
    args = mtp["run_args"]
    assert "--spec-type" in args and args[args.index("--spec-type") + 1] == "draft-mtp"
    again = kv("fit", "glm-4.5-air", "--gpu", "H100-80GBx2", *args, "-o", "json").json()
    assert again["devices"] == mtp["devices"]


@pytest.mark.parametrize(("gib", "ctx"), [(5, 4096), (7, 32768), (9, 131072)])
def test_the_most_gpu_layers_is_what_checking_every_count_finds(gib: int, ctx: int) -> None:
    """max_gpu_layers bisects (a layer more on the GPU never needs less of its memory, compute buffer
    included): the answer is the largest -ngl that fits when every count from all layers down is tried."""
    req = Request("llama-3.1-8b", llamacpp=LlamaCppOptions(ctx_size=ctx), hardware=parse_memory((gib * GIB,)))
    m = load_model("llama-3.1-8b")
    m = dataclasses.replace(m, n_params=m.n_params or 8_000_000_000)
    target = fit.RUNTIME.target(m, req)
    settings = fit.RUNTIME.base_settings(req)
    scanned = next(
        (
            n
            for n in range(m.n_layer_all + 1, -1, -1)
            if dataclasses.replace(target, n_gpu_layers=n).place(settings).fits
        ),
        None,
    )
    assert target.max_gpu_layers(settings) == scanned and scanned not in (None, m.n_layer_all + 1)


def test_overhead_per_device() -> None:
    """--overhead with one size per GPU (as llama-fit-params --fit-print on prints each device's compute) sets each
    device's overhead row; one size stands for every GPU."""
    import kvplan

    one = kvplan.fit("llama-3.1-8b", memory="24GiB,16GiB", overhead="1GiB", ctx_size=8192, fit="off").to_dict()
    each = kvplan.fit("llama-3.1-8b", memory="24GiB,16GiB", overhead="1GiB,300MiB", ctx_size=8192, fit="off")
    rows = {d["device"]: d["overhead_bytes"] for d in each.to_dict()["devices"] if d["device"] != "host"}
    assert rows == {"GPU0": 2**30, "GPU1": 300 * 2**20}
    assert {d["overhead_bytes"] for d in one["devices"] if d["device"] != "host"} == {2**30}
