"""Decode stretches (kvplan/simulation/vllm/stretch.py): a simulation that takes steady decode iterations together
equals, field for field, the same simulation stepped one iteration at a time — the series of steps, every
request's outcome and latencies, the pool at the end. Stepping is what the recorded vLLM workloads prove
(tests/simulation/test_vllm_scheduler.py); these workloads make stretches begin and end at every kind of event:
arrivals, a client that leaves after N tokens or after seconds, requests that end, blocks that run out and
preempt, a shared prefix, the prefix cache off, the context's end."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kvplan.simulation.vllm.stretch as stretch
from kvplan.simulation.roofline import CostModel, Hardware
from kvplan.simulation.run import SimResult, simulate
from kvplan.simulation.stats import Quantiles
from kvplan.simulation.vllm import SchedulerConfig
from kvplan.simulation.workload import Lengths, RequestSpec, Workload

#: Llama-3.1-8B on one H100, as `simulate` costs it (weights, 2 × 8e9 FLOPs a token, 128 KiB of KV a token)
COST = CostModel(16_000_000_000, 16e9, 131072, 32 * 2 * 32 * 256, Hardware(3.35e12, 989.4e12, "test"))


def _config(**kw: Any) -> SchedulerConfig:
    base: dict[str, Any] = {
        "num_blocks": 4000,
        "block_size": 16,
        "max_model_len": 8192,
        "max_num_batched_tokens": 2048,
        "max_num_seqs": 256,
    }
    return SchedulerConfig(**{**base, **kw})


def _quantiles(q: Quantiles) -> tuple[object, ...]:
    exact = q._exact
    return (q.count, q.maximum, None if exact is None else sorted(exact), dict(q._buckets))


def _same(a: SimResult, b: SimResult) -> None:
    assert a.series.steps == b.series.steps
    assert a.series.finished_rows() == b.series.finished_rows()
    assert a.requests == b.requests
    assert (a.final_free, a.end, a.usable_blocks) == (b.final_free, b.end, b.usable_blocks)
    for name in ("arrived", "served", "cancelled", "failed", "tokens", "preempted", "failures"):
        assert getattr(a.stats, name) == getattr(b.stats, name), name
    for name in ("ttft", "e2e", "itl"):
        assert _quantiles(getattr(a.stats, name)) == _quantiles(getattr(b.stats, name)), name


def _both(config: SchedulerConfig, workload: Workload, monkeypatch: pytest.MonkeyPatch) -> int:
    """Both ways equal; the iterations taken in stretches."""
    taken = [0]
    advance = stretch.advance

    def counting(loop: Any, run: stretch.DecodeRun, plan: stretch.Shape, iterations: int) -> Any:
        taken[0] += iterations
        free_after, ended = advance(loop, run, plan, iterations)
        ENDED[0] += sum(len(e) for e in ended)
        return free_after, ended

    monkeypatch.setattr(stretch, "advance", counting)
    stepped = simulate(config, COST, workload, stretches=False)
    assert taken[0] == 0
    _same(stepped, simulate(config, COST, workload))
    return taken[0]


ENDED = [0]  # requests that ended inside a stretch, over the module's runs

WORKLOADS = {
    "rate": (
        _config(),
        Workload(
            Lengths("lognormal", 1000, 0.8), Lengths("uniform", 50, 500), rate=10, duration=20, cancel=0.05, seed=1
        ),
    ),
    "concurrency": (
        _config(),
        Workload(Lengths("uniform", 100, 3000), Lengths("uniform", 1, 700), concurrency=24, duration=15, seed=2),
    ),
    "small pool preempts": (
        _config(num_blocks=700),
        Workload(Lengths("uniform", 200, 1500), Lengths("uniform", 100, 900), rate=12, duration=15, seed=3),
    ),
    "shared prefix": (
        _config(),
        Workload(Lengths("fixed", 1200), Lengths("uniform", 20, 400), rate=8, duration=15, shared_prefix=512, seed=4),
    ),
    "no prefix caching": (
        _config(prefix_caching=False),
        Workload(Lengths("uniform", 10, 2000), Lengths("uniform", 1, 300), rate=15, duration=10, cancel=0.2, seed=5),
    ),
    "the context's end": (
        _config(max_model_len=1100),
        Workload(Lengths("uniform", 500, 1000), Lengths("fixed", 900), rate=5, duration=15, seed=6),
    ),
    "pages of one token": (
        _config(block_size=1, num_blocks=60_000),
        Workload(Lengths("uniform", 1, 600), Lengths("uniform", 1, 200), rate=20, duration=5, seed=7),
    ),
}


@pytest.mark.parametrize("name", WORKLOADS)
def test_stretches_equal_stepping(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    config, workload = WORKLOADS[name]
    ended = ENDED[0]
    taken = _both(config, workload, monkeypatch)
    assert taken > 0  # the workload did take stretches (a test that cannot fail is none)
    if workload.concurrency is None and name != "the context's end":
        assert ENDED[0] > ended  # and requests ended inside them


def test_a_trace_with_cancels_after_seconds_and_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(8)
    trace = tuple(
        RequestSpec(
            i * 0.07 + rng.random() * 0.05,
            rng.randint(50, 1500),
            rng.randint(5, 400),
            cancel_after=rng.choice([None, rng.uniform(0.05, 2.0)]),
            cancel_after_tokens=rng.choice([None, rng.randint(1, 300)]),
        )
        for i in range(200)
    )
    assert _both(_config(), Workload(trace=trace), monkeypatch) > 0


def test_synchronous_scheduling_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without async scheduling (one batch in flight) no stretch is taken: the loop steps."""
    config, workload = WORKLOADS["rate"]
    sync = SchedulerConfig(**{**config.__dict__, "async_scheduling": False})
    assert _both(sync, workload, monkeypatch) == 0


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 64),
    st.integers(200, 3000),
    st.integers(1, 3000),
    st.integers(1, 800),
    st.floats(1, 40),
    st.booleans(),
    st.integers(0, 2**32),
)
def test_any_workload_equals_stepping(
    block: int, blocks: int, prompt: int, output: int, rate: float, caching: bool, seed: int
) -> None:
    config = _config(block_size=block, num_blocks=max(blocks, (prompt + output) // block + 8), prefix_caching=caching)
    workload = Workload(
        Lengths("uniform", 1, prompt), Lengths("uniform", 1, output), rate=rate, duration=3, cancel=0.1, seed=seed
    )
    with pytest.MonkeyPatch.context() as mp:
        _both(config, workload, mp)
