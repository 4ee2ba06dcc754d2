"""llama-server's slots (kvplan.simulation.llamacpp): hand-checked schedules read off server-context.cpp, the
unified cache's failure, the invariant over random workloads, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import kv
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.simulation.llamacpp import EXCEEDED, Server, ServerConfig, _Task, simulate_server, step
from kvplan.simulation.roofline import CostModel, Hardware
from kvplan.simulation.workload import Lengths, Workload

COST = CostModel(1_000_000, 2e9, 1000, 1e6, Hardware(1e12, 1e14, "test"))


def _steps(server: Server) -> list[tuple[int, int, list[int], list[tuple[int, str | None]]]]:
    out = []
    while (s := step(server)) is not None:
        out.append((s.prefill, s.decode, s.sampled, s.finished))
    return out


def test_slots_one_stream_each_by_hand() -> None:
    """2 slots of 64 cells, -b 32. A (40 prompt, 3 out) takes slot 1 (get_available_slot's LRU picks the last of
    equally old slots), B (10, 2) slot 0, C (70 ≥ 64) waits for a slot and is then refused."""
    server = Server(ServerConfig(n_slots=2, n_ctx_slot=64, pool=None, n_batch=32))
    server.queue.extend([_Task(0, 40, 3, 0), _Task(1, 10, 2, 0), _Task(2, 70, 1, 0)])
    assert _steps(server) == [
        (32, 0, [1], []),  # B's prompt (slot 0 first) and 22 of A's: the batch is full at 32
        (18, 1, [1, 0], [(1, None)]),  # B's second token ends it; A's last 18 prompt tokens, A's first token
        (0, 1, [0], [(2, "request (70 tokens) exceeds the available context size (64 tokens)")]),
        (0, 1, [0], [(0, None)]),
    ]
    assert [s.tokens for s in server.slots] == [11, 42]  # the slots keep their tokens (the prompt cache)
    assert server.held() == 0


def test_a_full_unified_cache_fails_every_request_in_flight() -> None:
    """16 shared cells, 2 slots, -b 8: the fourth step needs 17 cells; the batch halves to one token, the first
    fits, the second cannot, and decode gives up: both requests fail (update_slots / decode)."""
    server = Server(ServerConfig(n_slots=2, n_ctx_slot=16, pool=16, n_batch=8))
    server.queue.extend([_Task(0, 6, 10, 0), _Task(1, 6, 10, 0)])
    got = _steps(server)
    assert got[:3] == [(8, 0, [1], []), (4, 1, [1, 0], []), (0, 2, [1, 0], [])]
    assert got[3] == (0, 0, [], [(1, EXCEEDED), (0, EXCEEDED)])
    assert len(got) == 4 and server.used() == 0  # every slot in flight is cleared (prompt_clear)


def test_idle_slots_are_cleared_before_a_unified_cache_fails() -> None:
    """An idle slot's cached prompt is purged (try_clear_idle_slots) before the batch is halved."""
    server = Server(ServerConfig(n_slots=2, n_ctx_slot=16, pool=16, n_batch=16, cache_idle_slots=False))
    server.queue.append(_Task(0, 10, 1, 0))
    assert _steps(server) == [(10, 0, [0], [(0, None)])]
    server.queue.append(_Task(1, 12, 1, 0))  # the other slot is older: LRU; 10 + 12 > 16 cells
    assert _steps(server) == [(12, 0, [1], [(1, None)])]
    assert sorted(s.tokens for s in server.slots) == [0, 12]


def test_a_cached_prefix_is_reused() -> None:
    """A prompt sharing over 10 % of its tokens with an idle slot's goes to that slot and skips the prefix."""
    server = Server(ServerConfig(n_slots=2, n_ctx_slot=4096, pool=None, n_batch=2048))
    server.queue.append(_Task(0, 1000, 1, 300))
    assert _steps(server) == [(1000, 0, [0], [(0, None)])]
    server.queue.append(_Task(1, 800, 1, 300))
    assert _steps(server) == [(500, 0, [1], [(1, None)])]  # 300 reused, on the slot that held them
    assert server.slots[0].tokens == 0 and server.slots[1].tokens == 800


@settings(max_examples=40, deadline=None)
@given(
    slots=st.integers(1, 6),
    cells=st.integers(64, 4096),
    unified=st.booleans(),
    batch=st.sampled_from([16, 64, 512]),
    seed=st.integers(0, 10**6),
)
def test_cells_never_overflow_and_return(slots: int, cells: int, unified: bool, batch: int, seed: int) -> None:
    per_slot = cells if unified else max(8, cells // slots)
    config = ServerConfig(slots, per_slot, cells if unified else None, batch)
    w = Workload(
        prompt=Lengths("uniform", 1, per_slot + 20),
        output=Lengths("uniform", 1, 300),
        rate=20.0,
        duration=3.0,
        cancel=0.2,
        seed=seed,
    )
    r = simulate_server(config, COST, w)
    assert r.blocks_returned  # nothing held once every request ended
    assert all(s.blocks_used <= r.usable_blocks for s in r.series.finished_rows())
    assert all(q.finished is not None for q in r.requests)
    for q in r.requests:
        assert q.tokens <= q.output
        if q.prompt >= per_slot:  # refused when its slot starts, unless a full cache failed it first
            assert q.error is not None and q.tokens == 0
            assert "exceeds the available context size" in q.error or q.error == EXCEEDED


def test_cli_llamacpp_default_and_json() -> None:
    args = ("simulate", "llama-3.1-8b", "--gpu", "H100-80GB", "-c", "8192", "--duration", "20")
    args += ("--request-rate", "4", "--prompt-len", "uniform:500:3000", "--output-len", "800", "-o", "json")
    a, b = kv(*args), kv(*args)
    assert a.stdout == b.stdout and a.exit_code == 0
    doc = json.loads(a.stdout)
    assert doc["scheduler"] == {
        "n_ctx": 8192,
        "n_parallel": 4,
        "kv_unified": True,
        "n_ctx_slot": 8192,
        "cells": 8192,
        "n_batch": 2048,
        "prefix_reuse": True,
    }
    failed = [q for q in doc["requests"] if q["error"]]
    assert failed and all(q["error"] == EXCEEDED for q in failed)
    assert doc["blocks_returned"] is True
    # one stream per slot never fails for lack of cells: only prompts too long for a slot are refused
    c = kv(*args[:-2], "-np", "4", "-o", "json")
    rows = json.loads(c.stdout)["requests"]
    assert {q["error"] for q in rows} <= {None} | {
        f"request ({q['prompt_tokens']} tokens) exceeds the available context size (2048 tokens)" for q in rows
    }
    assert any(q["error"] for q in rows)


def test_cli_llamacpp_budgets_and_refusals() -> None:
    base = ("simulate", "llama-3.1-8b", "--gpu", "H100-80GB", "-c", "8192", "--duration", "20", "--request-rate", "4")
    r = kv(*base, "--prompt-len", "uniform:500:3000", "--output-len", "800", "--max-failed", "0")
    assert r.exit_code == 1 and "max_failed" in r.stdout
    r = kv("simulate", "qwen3-32b", "--gpu", "RTX-4090", "--duration", "5", "--request-rate", "1")
    assert r.exit_code == 4 and "does not fit" in r.stderr and "give -c" in r.stderr
    r = kv(*base, "--max-failed", "x")
    assert r.exit_code == 2 and "whole number of requests" in r.stderr


def test_cli_llamacpp_svg_draws_cells_as_a_share(tmp_path: Path) -> None:
    import re

    from kvplan.render.simulate_svg import TITLE_LINE, TOP

    svg = tmp_path / "s.svg"
    args = ("simulate", "llama-3.1-8b", "--gpu", "H100-80GB", "-c", "8192", "--request-rate", "4", "--duration", "10")
    r = kv(*args, "--prompt-len", "uniform:500:3000", "--output-len", "800", "--svg", str(svg))
    assert r.exit_code == 0
    text = svg.read_text()
    assert "KV cells in use (%)" in text
    first = re.search(r'polyline[^>]*points="([^"]+)"', text)
    assert first is not None
    ys = [float(p.split(",")[1]) for p in first.group(1).split()]
    panel_top = TOP + (text.count('font-size="13"') - 1) * TITLE_LINE + 10  # below the wrapped headline
    assert min(ys) >= panel_top - 0.05  # a share of the pool: at most the panel's top (the cache fills: 100 %)
    assert min(ys) <= panel_top + 0.05
