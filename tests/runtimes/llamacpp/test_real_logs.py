"""kvplan against llama.cpp's own startup logs of a real GGUF (tests/fixtures/logs/llamacpp/, written by
scripts/oracle/record_logs.py: llama-completion of 2026-10-01 loading the package index's Gemma 3 270M Q4_K_M): every
figure the log prints about the context and its memory — n_ctx, each KV cache's size, cells, layers, sequences, K
and V, the CPU compute buffer — equals kvplan's plan for the same flags, at the log's own precision (MiB to two
decimals). These logs are the first fixtures of `kvplan explain` (issue 25)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from graph_cases import REAL, model_of
from helpers import FIXTURES

from kvplan.runtimes.llamacpp import FlashAttn, LlamaCppSettings, plan
from kvplan.runtimes.llamacpp.compute import cpu_compute_buffer

LOGS = FIXTURES / "logs" / "llamacpp"
INDEX = json.loads((LOGS / "index.json").read_text())["logs"]
_KV = re.compile(
    r"llama_kv_cache: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers, +(\d+)/(\d+) seqs\), "
    r"K \((\w+)\): +([\d.]+) MiB, V \((\w+)\): +([\d.]+) MiB"
)
_COMPUTE = re.compile(r"sched_reserve: +CPU compute buffer size = +([\d.]+) MiB")
_N_CTX = re.compile(r"llama_context: n_ctx += (\d+)")


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
        text = (LOGS / name).read_text()
        assert "print_info: arch                  = gemma3" in text and "sched_reserve:" in text


@pytest.mark.parametrize("name", sorted(INDEX))
def test_every_figure_of_the_log_is_kvplans(name: str) -> None:
    text = Path(LOGS / name).read_text()
    p = plan(model_of(REAL), _settings(INDEX[name]))
    assert [int(x) for x in _N_CTX.findall(text)] == [p.context.n_ctx]
    logged = [m.groups() for m in _KV.finditer(text)]
    attention = [c for c in p.caches if c.cells]  # (the log lists the full-attention cache, then the window's)
    mine = [
        (
            _mib(c.k_bytes + c.v_bytes),
            str(c.cells),
            str(len(c.layers)),
            str(p.context.n_seq),
            str(p.context.n_seq),
            p.context.type_k.name,
            _mib(c.k_bytes),
            p.context.type_v.name,
            _mib(c.v_bytes),
        )
        for c in attention
    ]
    assert logged == mine
    compute = cpu_compute_buffer(p)
    assert compute is not None
    assert _COMPUTE.findall(text) == [_mib(compute.bytes)]
