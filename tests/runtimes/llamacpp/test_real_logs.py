"""kvplan against llama.cpp's own startup logs of a real GGUF (tests/fixtures/logs/llamacpp/, written by
scripts/oracle/record_logs.py: llama-completion of 2026-10-01 loading the package index's Gemma 3 270M Q4_K_M): every
figure the log prints about the context and its memory — n_ctx, each KV cache's size, cells, layers, sequences, K
and V, the CPU compute buffer — equals kvplan's plan for the same flags, at the log's own precision (MiB to two
decimals). These logs are the first fixtures of `kvplan explain` (issue 25)."""

from __future__ import annotations

import json

import pytest
from graph_cases import REAL, model_of
from helpers import FIXTURES

from kvplan.runtimes.llamacpp import FlashAttn, LlamaCppSettings, plan
from kvplan.runtimes.llamacpp.compute import cpu_compute_buffer
from kvplan.sources.llamacpp_log import LoggedCache, read_log

LOGS = FIXTURES / "logs" / "llamacpp"
#: llama-completion's logs of the real file (the harness's logs of the test models: tests/analysis/test_explain.py)
INDEX = {k: v["command"] for k, v in json.loads((LOGS / "index.json").read_text())["logs"].items()
         if k.startswith("gemma-3-270m")}  # fmt: skip


def _settings(args: list[str]) -> LlamaCppSettings:
    flags = dict(zip(args[1::2], args[2::2], strict=False))  # (llama-completion's own flags, in pairs)
    return LlamaCppSettings(
        n_ctx=int(flags.get("-c", "4096")),
        n_seq=int(flags.get("-np", "1")),
        n_batch=int(flags.get("-b", "2048")),
        n_ubatch=int(flags.get("-ub", "512")),
        type_k=flags.get("-ctk", "f16"),
        type_v=flags.get("-ctv", "f16"),
        flash_attn=FlashAttn(flags.get("-fa", "auto")),
        swa_full="--swa-full" in args,
    )


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f}"


def test_the_logs_are_llama_cpps_own() -> None:
    assert len(INDEX) >= 10
    for name in INDEX:
        log = read_log(str(LOGS / name))
        assert log.runs == 1 and log.model["arch"] == "gemma3" and log.model["n_swa"] == "512"


@pytest.mark.parametrize("name", sorted(INDEX))
def test_every_figure_of_the_log_is_kvplans(name: str) -> None:
    log = read_log(str(LOGS / name))
    p = plan(model_of(REAL), _settings(INDEX[name]))
    ctx = p.context
    assert (log.setting("n_ctx"), log.setting("n_ctx_seq"), log.setting("n_seq_max")) == (
        ctx.n_ctx,
        ctx.n_ctx_seq,
        ctx.n_seq,
    )
    attention = [c for c in p.caches if c.cells]  # (the log lists the full-attention cache, then the window's)
    assert log.caches == [
        LoggedCache(_mib(c.k_bytes + c.v_bytes), c.cells, len(c.layers), ctx.n_seq, ctx.n_seq, ctx.type_k.name,
                    _mib(c.k_bytes), ctx.type_v.name, _mib(c.v_bytes))
        for c in attention
    ]  # fmt: skip
    assert [b.mib for b in log.buffers if b.kind == "KV"] == [_mib(c.buffer_bytes) for c in attention]
    compute = cpu_compute_buffer(p)
    assert compute is not None
    assert [(b.buffer, b.mib) for b in log.buffers if b.kind == "compute"] == [("CPU", _mib(compute.bytes))]
