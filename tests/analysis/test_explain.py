"""The library part of `kvplan explain` (kvplan/analysis/explain.py) on llama.cpp's own startup logs of the real
Gemma 3 270M (tests/fixtures/logs/llamacpp/): every figure of every log equal to kvplan's, each with its rule; a
log whose figures differ says so (not explained), and a log cut short before its settings is one clear error."""

from __future__ import annotations

import dataclasses
import json

import pytest
from graph_cases import REAL, model_of
from helpers import FIXTURES

from kvplan.analysis.explain import Explanation, explain_llamacpp, settings_of
from kvplan.errors import BadInputError
from kvplan.runtimes.llamacpp import Backend, FlashAttn
from kvplan.sources.llamacpp_log import parse_lines, read_log

LOGS = FIXTURES / "logs" / "llamacpp"


@pytest.mark.parametrize("path", sorted(LOGS.glob("*.log")), ids=lambda p: p.stem)
def test_every_figure_of_every_log_is_explained(path: object) -> None:
    e = explain_llamacpp(read_log(str(path)), model_of(REAL))
    assert e.explained and len(e.figures) == 16
    assert all(f.why and not f.why.startswith("not explained") for f in e.figures)


def test_the_reasons_are_the_rules() -> None:
    e = explain_llamacpp(read_log(str(LOGS / "gemma-3-270m-c20000-padded.log")), model_of(REAL))
    by = {f.what: f for f in e.figures}
    assert by["n_ctx"].logged == "20224" and "padded to 256" in by["n_ctx"].why
    assert by["sliding window: cells"].why == "window 512 + ubatch 512 = 1,024, capped at 20,224, padded → 1,024"
    assert by["CPU compute buffer, MiB"].kvplan_bytes == 539_494_400  # the logits: 262,144 × 512 × 4 B
    assert "logits 512.00 MiB" in by["CPU compute buffer, MiB"].why


def test_settings_come_from_the_log() -> None:
    s = settings_of(read_log(str(LOGS / "gemma-3-270m-np3-swa-full.log")))
    assert (s.n_ctx, s.n_seq, s.swa_full, s.kv_unified, s.flash_attn, s.backend) == (
        12288, 3, True, False, FlashAttn.AUTO, Backend.CPU
    )  # fmt: skip
    assert settings_of(read_log(str(LOGS / "gemma-3-270m-q8_0-cache.log"))).type_v == "q8_0"


def test_a_figure_that_differs_is_not_explained() -> None:
    log = read_log(str(LOGS / "gemma-3-270m-default-c4096.log"))
    cache = dataclasses.replace(log.caches[0], k_mib="6.01")
    e = explain_llamacpp(dataclasses.replace(log, caches=[cache, *log.caches[1:]]), model_of(REAL))
    wrong = [f for f in e.figures if not f.equal]
    assert not e.explained and [(f.what, f.logged, f.kvplan, f.why) for f in wrong] == [
        ("full attention: K (f16), MiB", "6.01", "6.00", "not explained")
    ]


def test_a_log_cut_before_its_settings_is_one_error() -> None:
    text = (LOGS / "gemma-3-270m-np4.log").read_text().splitlines()
    cut = [line for line in text if "llama_context: n_" not in line]
    with pytest.raises(BadInputError, match="does not print llama_context's n_ctx, n_seq_max, n_batch, n_ubatch"):
        settings_of(parse_lines(cut))


INDEX = json.loads((LOGS / "index.json").read_text())["logs"]
HARNESS = sorted(k for k in INDEX if k.startswith("harness/"))


@pytest.mark.parametrize("name", HARNESS)
def test_every_figure_of_llama_cpps_test_models_is_explained(name: str) -> None:
    """The oracle harness's own logs of llama.cpp's test models (scripts/oracle/record_logs.py): sliding windows,
    MLA, sinks, recurrent and hybrid memory (Qwen3-Next, Mamba-2, Granite-4 hybrid, LFM2, Nemotron-H)."""
    log = read_log(str(LOGS / name))
    e = explain_llamacpp(log, model_of(INDEX[name]["model"]))
    assert e.explained, [(f.what, f.logged, f.kvplan, f.why) for f in e.figures if not f.equal]
    assert len(e.figures) >= 8 and (log.caches or log.states)


def test_the_harness_logs_cover_recurrent_memory() -> None:
    archs = {read_log(str(LOGS / n)).model["arch"] for n in HARNESS}
    assert len(archs) >= 12 and sum(bool(read_log(str(LOGS / n)).states) for n in HARNESS) >= 10


def test_what_would_change_it_is_what_llama_cpp_then_prints() -> None:
    """From the -c 8192 -fa off log, the q8_0 cache and the half context are the configurations of two other real
    logs: each change's KV and compute equal kvplan's plan of that log, which equals what llama.cpp printed."""

    def explained(name: str) -> Explanation:
        return explain_llamacpp(read_log(str(LOGS / name)), model_of(REAL))

    fa_off = explained("gemma-3-270m-fa-off.log")
    changes = {c.flags: c for c in fa_off.changes}
    assert set(changes) >= {"-ctk q8_0 -ctv q8_0 -fa on", "-c 4096", "-c 16384", "-ub 256"}
    q8 = explained("gemma-3-270m-q8_0-cache.log")
    c4096 = explained("gemma-3-270m-default-c4096.log")
    assert q8.explained and c4096.explained
    q8_change = changes["-ctk q8_0 -ctv q8_0 -fa on"]
    assert (q8_change.kv_bytes, q8_change.compute_bytes) == (q8.kv_bytes, q8.compute_bytes)
    assert changes["-c 4096"].kv_bytes == c4096.kv_bytes
    half = changes["-ub 256"].compute_bytes
    assert half is not None and half * 2 == fa_off.compute_bytes  # (the logits: 262,144 × ubatch × 4 B)


PUBLIC = json.loads((LOGS / "public" / "index.json").read_text())["logs"]


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_cuda_logs_are_explained_from_the_log_alone(name: str) -> None:
    """Real llama-server runs on CUDA GPUs published in a public repository (public/index.json: URL, GPU, flags):
    with no model file, every context and KV figure equals kvplan's plan of the model the log's metadata dump
    describes; only the model and compute buffers, which the GGUF's tensors decide, are left, and say so."""
    from kvplan.sources.log_model import model_from_log

    log = read_log(str(LOGS / "public" / name))
    e = explain_llamacpp(log, model_from_log(log, name))
    entry = PUBLIC[name]
    assert (len(e.figures), sum(f.equal for f in e.figures)) == (entry["figures"], entry["explained_figures"])
    assert log.model["arch"] == entry["arch"] and log.build.startswith("10644")
    for f in e.figures:
        if not f.equal:
            assert f.what.endswith(("model buffer, MiB", "compute buffer, MiB")) and "tensors decide it" in f.why


def test_why_a_public_run_failed_to_start() -> None:
    """The run llama-server refused (cudaMalloc out of memory): the buffer it could not allocate is kvplan's KV
    cache to the byte, and the log's own figures say by how much the GPU fell short."""
    from kvplan.sources.log_model import model_from_log

    log = read_log(str(LOGS / "public" / "mcgyvr-deepseek-coder-v2-lite-rtx3060-c16384-np8-oom.log"))
    assert log.failed == ("CUDA0", 4_529_848_320) and log.failure == "failed to allocate buffer for kv cache"
    e = explain_llamacpp(log, model_from_log(log, "x"))
    failed = next(f for f in e.figures if "not allocated" in f.what)
    assert failed.equal and failed.kvplan_bytes == 2048 * 8 * 27 * (16 * 192 + 16 * 128) * 2
    assert "11,798 MiB free on CUDA0 − model 7485.27 MiB = 4,312.73 MiB left, 7.27 MiB short" in failed.why
    q8 = next(c for c in e.changes if c.flags.startswith("-ctk q8_0"))
    assert q8.kv_bytes < failed.kvplan_bytes // 2 + (1 << 20) * 200  # (a q8_0 cache: 34 B per 32 values)


def test_equal_caches_are_a_capped_window_not_swa_full() -> None:
    """-c 2048 -np 8: each sequence's 256 cells cap the window cache (128 + ubatch 256 → 256), so both caches
    print 256 cells without --swa-full; kvplan does not invent the flag."""
    from kvplan.sources.log_model import model_from_log

    log = read_log(str(LOGS / "public" / "mcgyvr-gpt-oss-20b-gtx1660s-c2048-np8.log"))
    e = explain_llamacpp(log, model_from_log(log, "x"))
    by = {f.what: f for f in e.figures}
    assert not e.settings.swa_full and "capped at 256" in by["sliding window: cells"].why
    assert "without --swa-full" not in {c.flags for c in e.changes}


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_cuda_logs_with_the_reconstructed_file(name: str) -> None:
    """With the GGUF each log loaded (reconstructed from the log: scripts/oracle/reconstruct_public_gguf.py),
    kvplan re-places the run on the log's GPU: the -ncmoe the log does not print is the one whose placement gives
    the GPU's model buffer, and every buffer of the GPU and of the pinned host memory is kvplan's, but the one the
    index names. The host's mapped buffer is a range of the file, whose tensor order the log does not show."""
    entry = PUBLIC[name]
    log = read_log(str(LOGS / "public" / name))
    e = explain_llamacpp(log, model_of(f"FILE:{entry['file']}"))
    left = {f.what for f in e.figures if not f.equal}
    differs = {f"{k} buffer, MiB" for k in entry.get("cuda_differs", {})}
    assert left == {"CPU_Mapped model buffer, MiB"} | differs, [(f.what, f.logged, f.kvplan) for f in e.figures]
    gpu = next(f for f in e.figures if f.what == "CUDA0 model buffer, MiB")
    assert f"-ncmoe {entry['n_cpu_moe']}: the first" in gpu.why


@pytest.mark.parametrize(
    ("device", "host", "backend"),
    [("CUDA0", "CUDA_Host", Backend.CUDA), ("ROCm0", "ROCm_Host", Backend.ROCM), ("MTL0", "CPU", Backend.METAL),
     ("Vulkan0", "Vulkan_Host", Backend.VULKAN), ("RPC0[127.0.0.1:50052]", "CPU", Backend.CPU)],
)  # fmt: skip
def test_a_logs_buffers_name_its_backends_rules(device: str, host: str, backend: Backend) -> None:
    """The buffer names llama.cpp prints pick the rules kvplan re-plans with (ggml's buffer type names: CUDA0,
    ROCm0, MTL0, Vulkan0; an RPC device keeps the CPU backend's); the same public CUDA log renamed."""
    from kvplan.analysis.explain import backend_of

    text = (FIXTURES / "logs" / "llamacpp" / "public" / "mcgyvr-gpt-oss-20b-rtx3060-c8192-np8.log").read_text()
    log = parse_lines(text.replace("CUDA_Host", host).replace("CUDA0", device).splitlines())
    assert backend_of(log) is backend
    assert settings_of(log, model_of("file/gpt-oss-20b-mxfp4.meta.gguf")).backend is backend
