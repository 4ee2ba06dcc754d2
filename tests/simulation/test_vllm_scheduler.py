"""kvplan's port of vLLM's scheduler against vLLM 0.33.0's own scheduler and KV cache manager, step for step
(tests/fixtures/engines/vllm_sched.json, recorded by scripts/engines/record_vllm_sched.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import FIXTURES

from kvplan.simulation.vllm import GroupSpec, SchedulerConfig, run_by_iteration

RECORDED: list[dict[str, Any]] = json.loads((FIXTURES / "engines" / "vllm_sched.json").read_text())["cases"]


def _config(answer: dict[str, Any]) -> SchedulerConfig:
    r, p = answer["resolved"], answer["planned"]
    groups = tuple(
        GroupSpec(
            g["spec"]["block_size"],
            g["spec"].get("sliding_window") or g["spec"].get("attention_chunk_size") or 0,
            g["spec"]["type"] == "MambaSpec",
            g["spec"]["type"] == "ChunkedLocalAttentionSpec",
        )
        for g in p["groups"]
    )
    # MambaSpec.prefill_checkpoint_alignment, as vLLM's scheduler read it (None: no prefill checkpoint blocks)
    checkpoint = r.get("mamba_prefill_checkpoint_alignment") if r.get("mamba_has_prefill_checkpoint_blocks") else None
    return SchedulerConfig(
        num_blocks=p["num_blocks"],
        block_size=p["block_size"],
        max_model_len=p["max_model_len"],
        max_num_batched_tokens=r["max_num_scheduled_tokens"],
        max_num_seqs=r["max_num_running_reqs"],
        prefix_caching=r["enable_prefix_caching"],
        async_scheduling=r["max_concurrent_batches"] > 1,
        groups=groups if len(groups) > 1 else (),
        state_checkpoint=checkpoint,
    )


@pytest.mark.parametrize("recorded", RECORDED, ids=[c["case"]["name"] for c in RECORDED])
def test_every_step_matches_vllm(recorded: dict[str, Any]) -> None:
    case, answer = recorded["case"], recorded["ok"]
    requests = [tuple(r) for r in case["requests"]]
    loop = run_by_iteration(_config(answer), requests, case.get("shared_prefix", 0))  # type: ignore[arg-type]
    got = [
        {
            "iter": s.iteration,
            "scheduled": [list(x) for x in s.scheduled],
            "running": s.running,
            "waiting": s.waiting,
            "preempted": list(s.preempted),
            "free": s.free_blocks,
        }
        for s in loop.steps
    ]
    for k, (mine, theirs) in enumerate(zip(got, answer["steps"], strict=False)):
        assert mine == theirs, f"{case['name']}: step {k} differs"
    assert len(got) == len(answer["steps"])
    assert loop.scheduler.kv.pool.num_free() == answer["final_free"] == answer["baseline_free"]


def test_the_recordings_cover_what_the_scheduler_does() -> None:
    steps = [s for c in RECORDED for s in c["ok"]["steps"]]
    assert len(RECORDED) >= 12 and len(steps) > 10_000
    assert sum(1 for s in steps if s["preempted"]) > 20  # preemptions happen
    assert {c["ok"]["resolved"]["scheduler"] for c in RECORDED} == {"AsyncScheduler", "Scheduler"}
    assert {c["ok"]["resolved"]["enable_prefix_caching"] for c in RECORDED} == {True, False}


@pytest.mark.parametrize("recorded", RECORDED, ids=[c["case"]["name"] for c in RECORDED])
def test_a_replay_trace_through_simulate_is_every_recorded_step(recorded: dict[str, Any]) -> None:
    """A trace in engine-loop iterations (`arrival_step`, `cancel_step`: issue 27, item 4) through `simulate`'s own
    loop — the clock, the clients, the statistics — schedules what vLLM's scheduler scheduled, step for step."""
    from kvplan.simulation.roofline import CostModel, Hardware
    from kvplan.simulation.run import simulate
    from kvplan.simulation.workload import RequestSpec, Workload

    case, answer = recorded["case"], recorded["ok"]
    trace = tuple(RequestSpec(0.0, p, o, arrival_step=a, cancel_step=c) for a, p, o, c in case["requests"])
    config = _config(answer)
    if any(p >= config.max_model_len for _, p, _, _ in case["requests"]):
        pytest.skip("a prompt vLLM's input processor refuses before the scheduler sees it")
    w = Workload(
        trace=tuple(sorted(trace, key=lambda r: r.arrival_step or 0)), shared_prefix=case.get("shared_prefix", 0)
    )
    r = simulate(config, CostModel(1_000_000, 2e9, 1000, 1e6, Hardware(1e12, 1e14, "test")), w)
    usable = config.num_blocks - 1
    got = [(s.prefill_tokens + s.decode_tokens, s.running, s.waiting, s.preempted, s.blocks_used)
           for s in r.series.finished_rows()]  # fmt: skip
    want = [(sum(n for _, n in s["scheduled"]), s["running"], s["waiting"], len(s["preempted"]), usable - s["free"])
            for s in answer["steps"]]  # fmt: skip
    assert r.series.per_row == 1 and got == want
    assert r.final_free == answer["final_free"]
