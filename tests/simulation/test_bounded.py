"""Simulations in bounded memory and time (issue 26, item 3): the statistics stream (kvplan/simulation/stats.py),
the per-step series keeps a bounded resolution, a workload past the step bound is refused before it runs, and a
request vLLM would refuse is reported as vLLM reports it."""

from __future__ import annotations

import json
import random
import time
import tracemalloc
from pathlib import Path

import pytest
from helpers import kv
from hypothesis import given, settings
from hypothesis import strategies as st

import kvplan
from kvplan.errors import SpecError
from kvplan.simulation import run, stats
from kvplan.simulation.stats import Quantiles, Series, StepPoint, percentile

BASE = ("simulate", "llama-3.1-8b", "--engine", "vllm", "--gpu", "H100-80GB")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1e4, allow_nan=False), min_size=1, max_size=300), st.sampled_from([50, 90, 99, 100]))
def test_quantiles_exact_and_past_the_exact_bound(values: list[float], q: float) -> None:
    exact = Quantiles()
    for v in values:
        exact.add(v)
    assert exact.exact and exact.percentile(q) == percentile(values, q) and exact.maximum == max(values)
    saved = stats.EXACT_VALUES
    stats.EXACT_VALUES = 10
    try:
        sketch = Quantiles()
        for v in values:
            sketch.add(v)
    finally:
        stats.EXACT_VALUES = saved
    want, got = percentile(values, q), sketch.percentile(q)
    assert want is not None and got is not None
    assert abs(got - want) <= 1.001e-4 * want + (1e-300 if want == 0 else 0.0), (want, got)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.floats(0, 1e4, allow_nan=False), max_size=8), max_size=40), st.integers(1, 30))
def test_quantiles_extend_is_add_for_each(chunks: list[list[float]], bound: int) -> None:
    """One step's gaps at once (Quantiles.extend) count as each added in turn — below, across and past the exact
    bound."""
    saved = stats.EXACT_VALUES
    stats.EXACT_VALUES = bound
    try:
        one, many = Quantiles(), Quantiles()
        for chunk in chunks:
            for v in chunk:
                one.add(v)
            many.extend(chunk)
    finally:
        stats.EXACT_VALUES = saved
    assert (many.count, many.maximum, many.exact) == (one.count, one.maximum, one.exact)
    assert [many.percentile(q) for q in (1, 50, 90, 100)] == [one.percentile(q) for q in (1, 50, 90, 100)]


def _point(rng: random.Random, t: float) -> StepPoint:
    return StepPoint(t, rng.random() / 100, rng.randint(0, 9), rng.randint(0, 9), rng.randint(0, 50),
                     rng.randint(0, 50), rng.randint(0, 999), rng.randint(0, 2), rng.randint(0, 10**9),
                     rng.random() * 1e12, rng.random() < 0.3)  # fmt: skip


def test_the_series_keeps_a_bounded_resolution_and_every_total(monkeypatch) -> None:
    monkeypatch.setattr(stats, "MAX_SERIES_ROWS", 64)
    rng = random.Random(1)
    points = [_point(rng, i * 0.01) for i in range(1000)]
    series = Series()
    for p in points:
        series.add(p)
        assert len(series.rows) < 64
    rows = series.finished_rows()
    assert series.per_row == 16 and len(rows) == -(-1000 // 16) and series.steps == 1000
    assert sum(r.prefill_tokens for r in rows) == sum(p.prefill_tokens for p in points)
    assert sum(r.preempted for r in rows) == sum(p.preempted for p in points) == series.preemptions
    assert abs(sum(r.seconds for r in rows) - sum(p.seconds for p in points)) < 1e-9
    assert max(r.blocks_used for r in rows) == max(p.blocks_used for p in points) == series.peak_blocks
    assert rows[1].start == points[16].start and rows[1].running == max(p.running for p in points[16:32])


@pytest.mark.slow
def test_memory_does_not_grow_with_the_run(monkeypatch) -> None:
    """The same workload over 100 and 600 seconds: six times the steps and requests, the same peak memory. Every
    bound is shrunk so that both runs pass it, the pool is small (vLLM's free-block table takes memory with the
    pool, not the run) and the prefix cache off (its hashes grow with the pool too); a first run warms the
    roofline's caches. Before (issue 26) the gaps between tokens and every step were kept: 6× the memory."""
    monkeypatch.setattr(stats, "EXACT_VALUES", 200)
    monkeypatch.setattr(stats, "MAX_SERIES_ROWS", 64)
    monkeypatch.setattr(run, "MAX_REQUEST_ROWS", 20)
    model = kvplan.load_model("llama-3.1-8b")
    kw = {"engine": "vllm", "gpu": "H100-80GB", "request_rate": 2, "output_len": 32, "prompt_len": 256,
          "enable_prefix_caching": False, "kv_cache_memory_bytes": "1GiB", "max_model_len": 4096}  # fmt: skip
    kvplan.simulate(model, duration=100, **kw)
    peaks, steps = [], []
    for duration in (100, 600):
        tracemalloc.start(1)
        doc = kvplan.simulate(model, duration=duration, **kw)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        steps.append({r["metric"]: r["value"] for r in doc.to_dict()["run"]}["engine steps"])
    assert steps[1] > 5 * steps[0]
    # what remains grows far slower than the run: the percentile buckets (a key per 0.02 % of a value's range
    # met so far) and the interpreter's free lists of small objects (at most 2,000 tuples of each size); 100 →
    # 600 s measured 110 → 195 kB over 5,674 → 34,794 steps, 2.9 B per added step (3,600 s: 352 kB, 208,019
    # steps, 0.9 B per step past 600 s). Keeping each step's point (a tuple of 11 numbers, over 200 B) or every
    # gap between tokens — as before issue 26, 6× the memory — is 70× past this bound.
    grown, added = peaks[1] - peaks[0], steps[1] - steps[0]
    assert grown < 16 * added, (peaks, steps)


def test_a_workload_past_the_step_bound_is_refused_before_it_runs() -> None:
    started = time.monotonic()
    r = kv("simulate", "llama-3.1-8b", "--gpu", "H100-80GB", "--request-rate", "10", "--duration", "86400")
    assert r.exit_code == 4 and "needs at least about 55,296,000 server steps" in r.stderr
    r = kv(*BASE, "--request-rate", "10", "--duration", "86400", "--max-num-seqs", "8")
    assert r.exit_code == 4 and "needs at least about 27,648,000 engine steps" in r.stderr
    assert time.monotonic() - started < 2


def test_a_prompt_vllm_refuses_is_reported_as_vllm_reports_it(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        '{"arrival": 0, "prompt_tokens": 100, "output_tokens": 10}\n'
        '{"arrival": 0.1, "prompt_tokens": 4096, "output_tokens": 10}\n'
        '{"arrival": 0.2, "prompt_tokens": 5000, "output_tokens": 10}\n'
        '{"arrival": 0.3, "prompt_tokens": 4000, "output_tokens": 500}\n'
    )
    r = kv(*BASE, "--max-model-len", "4096", "--trace", str(trace), "-o", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    rows = doc["requests"]
    assert rows[1]["error"].startswith("The decoder prompt (length 4096) plus the number of requested output tokens")
    assert rows[2]["error"].startswith("The decoder prompt (length 5000) is longer than the maximum model length of")
    assert rows[1]["tokens"] == rows[2]["tokens"] == 0 and rows[1]["e2e_s"] == 0.0
    assert rows[3]["error"] is None and rows[3]["tokens"] == 96  # vLLM stops it at max_model_len
    run_rows = {x["metric"]: x["value"] for x in doc["run"]}
    assert run_rows["served to the end"] == 2 and run_rows["refused by vLLM (prompt ≥ max_model_len)"] == 2
    assert "2 refused" in doc["answer"] and any("refused by vLLM" in w for w in doc["warnings"])


@pytest.mark.slow
def test_two_hours_at_10_requests_a_second_under_a_2_gib_cap() -> None:
    """The issue's MemoryError (exit 70): 72,000 requests, 4.6 million llama-server steps, now ~0.4 GB."""
    import resource
    import subprocess
    import sys

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    out = subprocess.run([sys.executable, "-m", "kvplan", "simulate", "llama-3.1-8b", "--gpu", "H100-80GB",
                          "--request-rate", "10", "--duration", "7200", "-o", "json"],
                         capture_output=True, text=True, preexec_fn=limit, timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stderr[-500:]
    doc = json.loads(out.stdout)
    assert doc["steps_per_row"] > 1 and len(doc["steps"]) < stats.MAX_SERIES_ROWS


def test_a_fixed_concurrency_past_the_bound_stops_at_the_pace_of_its_first_steps() -> None:
    """A fixed concurrency has no floor from its workload alone (its requests depend on the run): a run projects
    the steps its duration needs once 50,000 are done and stops there (about 2 s here) instead of at the bound."""
    started = time.monotonic()
    r = kv("simulate", "smollm2-135m", "--gpu", "H100-80GB", "--engine", "vllm", "--max-concurrency", "4",
           "--duration", "86400", "--max-model-len", "2048")  # fmt: skip
    assert r.exit_code == 4 and "at the pace of its first 50,000 engine steps the workload needs about" in r.stderr
    assert r.stderr.count("\n") == 1 and time.monotonic() - started < 20


def test_a_trace_past_the_text_cap_is_read_line_by_line(tmp_path: Path, monkeypatch) -> None:
    """A trace may be larger than the 16 MiB other text files get (a day at 10 requests/s is ~17 MB of CSV): each
    line becomes a request as it is read, up to MAX_TRACE_BYTES."""
    from kvplan.simulation import workload
    from kvplan.sources import files

    monkeypatch.setattr(files, "MAX_TEXT_BYTES", 1 << 10)
    trace = tmp_path / "t.csv"
    trace.write_text("arrival,prompt_tokens,output_tokens\n" + "".join(f"{i / 10},100,5\n" for i in range(2000)))
    assert trace.stat().st_size > 1 << 10
    with pytest.raises(SpecError, match="too large for a spec"):
        files.read_text(str(trace), "a spec")  # what every other text file gets
    specs = workload.load_trace(str(trace))
    assert len(specs) == 2000 and specs[-1].arrival == 199.9
    monkeypatch.setattr(workload, "MAX_TRACE_BYTES", 1 << 10)
    with pytest.raises(SpecError, match="too large for a workload trace"):
        workload.load_trace(str(trace))


@pytest.mark.parametrize("engine", [("--engine", "vllm"), ("-c", "8192")])
def test_a_trace_cancels_after_a_number_of_tokens(tmp_path: Path, engine: tuple[str, str]) -> None:
    """`cancel_after_tokens` (issue 27, item 4): the client leaves once it has seen that many output tokens —
    the engine aborts the request before its next step — or at `cancel_after` seconds, whichever comes first."""
    trace = tmp_path / "t.csv"
    trace.write_text("arrival,prompt_tokens,output_tokens,cancel_after,cancel_after_tokens\n"
                     "0,100,50,,5\n0.1,100,50,,\n0.2,100,3,,10\n0.3,100,400,0.0001,300\n")  # fmt: skip
    r = kv("simulate", "llama-3.1-8b", "--gpu", "H100-80GB", *engine, "--trace", str(trace), "-o", "json")
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)["requests"]
    assert [q["tokens"] for q in rows[:3]] == [5, 50, 3]
    assert [q["cancelled"] for q in rows] == [True, False, False, True]
    assert rows[3]["tokens"] < 300  # its seconds came first
    r = kv("simulate", "llama-3.1-8b", "--gpu", "H100-80GB", *engine, "--trace", str(_bad(tmp_path)))
    assert r.exit_code == 3 and "cancel_after_tokens must be a whole number ≥ 1" in r.stderr


def _bad(tmp_path: Path) -> Path:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"arrival": 0, "prompt_tokens": 10, "output_tokens": 5, "cancel_after_tokens": 0.5}\n')
    return path


def test_a_trace_in_engine_steps_on_the_command_line(tmp_path: Path) -> None:
    """`arrival_step` / `cancel_step` (issue 27, item 4): a replay in vLLM's engine-loop iterations; every
    recorded scheduler case replays step for step through simulate (test_vllm_scheduler.py)."""
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"arrival_step": 0, "prompt_tokens": 100, "output_tokens": 20}\n'
                     '{"arrival_step": 5, "prompt_tokens": 100, "output_tokens": 20, "cancel_step": 8}\n')  # fmt: skip
    r = kv(*BASE, "--trace", str(trace), "-o", "json")
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)["requests"]
    assert rows[0]["tokens"] == 20 and rows[1]["cancelled"] and 0 < rows[1]["tokens"] < 20  # added before 5, out at 8
    r = kv("simulate", "llama-3.1-8b", "--gpu", "H100-80GB", "--trace", str(trace))
    assert r.exit_code == 4 and "arrival_step replays vLLM's engine-loop iterations" in r.stderr
    mixed = tmp_path / "m.jsonl"
    mixed.write_text('{"arrival": 0, "prompt_tokens": 1, "output_tokens": 1}\n'
                     '{"arrival_step": 1, "prompt_tokens": 1, "output_tokens": 1}\n')  # fmt: skip
    r = kv(*BASE, "--trace", str(mixed))
    assert r.exit_code == 3 and "not both" in r.stderr
