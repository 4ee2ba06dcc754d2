"""kvplan simulate: the workload, the time loop, the invariant, the roofline, the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import kv
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.simulation.roofline import CostModel, Hardware
from kvplan.simulation.vllm import SchedulerConfig, StepRecord, run_by_iteration
from kvplan.simulation.workload import Lengths, parse_lengths

BASE = ("simulate", "llama-3.1-8b", "--engine", "vllm", "--gpu", "H100-80GB")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 9000), st.integers(0, 200_000)), max_size=60))
def test_the_roofline_from_sums_is_the_roofline(work: list[tuple[int, int]]) -> None:
    """CostModel.totals (the sums SGLang's loop keeps in one pass) costs a step as step() does, to the bit."""
    cost = CostModel(16_000_000_000, 1.6e10, 131072, 1.1e6, Hardware(3.35e12, 9.89e14, "t"), state_bytes=12345)
    new = sum(n for n, _ in work)
    ctx = sum(b + n for n, b in work)
    pairs = sum(n * b + n * (n + 1) // 2 for n, b in work)
    assert cost.totals(len(work), new, ctx, pairs) == cost.step(work)


def test_roofline_hand_checked() -> None:
    """Llama-3.1-8B on one H100: a decode step of one request at 1,000 tokens of context reads the 16 GB of
    weights and 1,001 tokens x 128 KiB of KV; 2 x 8e9 FLOPs per token plus attention."""
    hw = Hardware(3.35e12, 989.4e12, "test")
    cost = CostModel(16_000_000_000, 16e9, 131072, 32 * 2 * 32 * 256, hw)
    step = cost.step([(1, 1000)])
    assert step.bytes == 16_000_000_000 + 131072 * 1001
    assert step.flops == 16e9 + 524288 * 1001
    assert step.seconds == pytest.approx(step.bytes / 3.35e12) and not step.compute_bound
    prefill = cost.step([(8192, 0)])  # a full prefill chunk is compute-bound
    assert prefill.compute_bound and prefill.seconds == pytest.approx(prefill.flops / 989.4e12)


def _requests(prompt: int, output: int, most: int) -> st.SearchStrategy[list[tuple[int, int, int, int | None]]]:
    """(arrival iteration, prompt, output, cancel at) for run_by_iteration."""
    cancel = st.one_of(st.none(), st.integers(0, 200))
    arrival = st.tuples(st.integers(0, 40), st.integers(1, prompt), st.integers(1, output), cancel)
    return st.lists(arrival, min_size=1, max_size=most)


def _every_block_returns(
    config: SchedulerConfig, requests: list[tuple[int, int, int, int | None]], shared: int
) -> list[StepRecord]:
    """Runs the requests (clipped to --max-model-len, as vLLM clips them) to the end: every block is free again,
    and no step used more blocks than there are. The steps."""
    n = config.max_model_len
    clipped = [(a, min(p, n - 1), max(1, min(o, n - min(p, n - 1))), c) for a, p, o, c in requests]
    loop = run_by_iteration(config, clipped, shared)
    assert loop.idle()
    assert loop.scheduler.kv.pool.num_free() == config.num_blocks - 1
    assert all(0 <= s.free_blocks <= config.num_blocks - 1 for s in loop.steps)
    return loop.steps


@settings(max_examples=60, deadline=None)
@given(
    _requests(700, 300, 40),
    st.booleans(),
    st.booleans(),
    st.integers(0, 200),
)
def test_blocks_return_to_the_baseline(
    requests: list[tuple[int, int, int, int | None]], asynchronous: bool, caching: bool, shared: int
) -> None:
    """The invariant from the field: whatever arrives, runs, is preempted or cancelled, once every request has
    ended every block is free again, and no step uses more blocks than there are."""
    config = SchedulerConfig(70, 16, 1024, 256, 16, caching, asynchronous)
    steps = _every_block_returns(config, requests, shared)
    assert all(sum(n for _, n in s.scheduled) <= config.max_num_batched_tokens for s in steps)


def test_moe_roofline_counts_active_parameters(tmp_path: Path) -> None:
    """Qwen3-30B-A3B from a GGUF: 8 of 128 experts; active = total less the routed experts a token skips, exact
    from the tensor infos (30,532,122,624 − 28,991,029,248 × 120/128 = 3,353,032,704: the card says 3.3 B);
    a step reads at least the dense bytes and 8/128 of the experts'."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from gguf_files import sparse_fit_model

    from kvplan.simulation.roofline import active, expert_fraction
    from kvplan.sources import load_model

    m = load_model(str(sparse_fit_model(tmp_path / "q.gguf", "qwen3-30b-a3b", "Q8_0")))
    assert (m.n_params, m.expert_params, m.active_params) == (30_532_122_624, 28_991_029_248, 3_353_032_704)
    tw = m.tensor_weights
    assert tw is not None
    fraction = expert_fraction(m)
    assert fraction == sum(tw.expert_bytes) / (tw.total_bytes - tw.input_bytes)
    a = active(m, fraction)
    assert a.params == 3_353_032_704 and a.read_share == pytest.approx(1 - fraction * 120 / 128)
    assert "8 of 128 routed experts" in a.note
    dense = active(load_model("llama-3.1-8b"), None)
    assert (dense.params, dense.read_share, dense.note) == (8_030_261_248, 1.0, "")
    # the CLI's floor uses them: FLOPs of the active parameters, reads of the active share
    doc = kv("simulate", "qwen3-30b-a3b", "--engine", "vllm", "--gpu", "H100-80GB", "--request-rate", "2",
             "--duration", "5", "-o", "json").json()  # fmt: skip
    assert any("FLOPs of 3 B active parameters" in n for n in doc["notes"])


def test_lengths_parse_and_refuse() -> None:
    assert parse_lengths("512") == Lengths("fixed", 512)
    assert parse_lengths("uniform:10:20") == Lengths("uniform", 10, 20)
    assert parse_lengths("lognormal:1000:0.8") == Lengths("lognormal", 1000, 0.8)
    for bad in ("0", "-5", "uniform:20:10", "lognormal:0:1", "normal:5:1", "1e400", "nan"):
        with pytest.raises(ValueError, match="expected N, uniform:LO:HI or lognormal:MEDIAN:SIGMA"):
            parse_lengths(bad)


def test_cli_json_is_deterministic_and_keeps_the_invariant() -> None:
    args = (*BASE, "--request-rate", "5", "--duration", "10", "--cancel-rate", "0.2", "--seed", "3", "-o", "json")
    a, b = kv(*args), kv(*args)
    assert a.exit_code == 0, a.output
    assert a.stdout == b.stdout
    doc = json.loads(a.stdout)
    assert doc["kind"] == "simulate" and doc["blocks_returned"] is True
    assert doc["scheduler"] == {
        "num_blocks": 28322,
        "block_size": 16,
        "max_model_len": 131072,
        "max_num_batched_tokens": 8192,
        "max_num_seqs": 1024,
        "prefix_caching": True,
        "async_scheduling": True,
    }
    assert all(isinstance(s["bytes_read"], int) for s in doc["steps"])
    cancelled = [r for r in doc["requests"] if r["cancelled"]]
    assert cancelled and all(r["tokens"] < r["output_tokens"] for r in cancelled)
    assert {r["metric"] for r in doc["run"]} >= {"preemptions", "peak blocks in use"}


def test_cli_preempts_when_the_pool_is_small(tmp_path: Path) -> None:
    args = (*BASE, "--kv-cache-memory-bytes", "640MiB", "--max-model-len", "4096", "--max-concurrency", "40")
    r = kv(*args, "--prompt-len", "uniform:500:3000", "--output-len", "uniform:200:1000", "--duration", "5",
           "--svg", str(tmp_path / "s.svg"), "-o", "json")  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert any(s["preempted"] for s in doc["steps"]) and doc["blocks_returned"]
    assert any("preemptions" in w for w in doc["warnings"])
    assert (tmp_path / "s.svg").read_text().startswith("<svg")
    csv = kv(*args, "--duration", "2", "-o", "csv").stdout.splitlines()
    assert csv[0].startswith("start_s,seconds,prefill_tokens,decode_tokens,running,waiting,blocks_used")


def test_cli_trace(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        '{"arrival": 0, "prompt_tokens": 100, "output_tokens": 10}\n'
        '{"arrival": 0.5, "prompt_tokens": 2000, "output_tokens": 50, "cancel_after": 0.01}\n'
    )
    doc = kv(*BASE, "--trace", str(trace), "-o", "json").json()
    assert doc["requests"][0]["tokens"] == 10 and doc["requests"][1]["cancelled"]
    csv = tmp_path / "t.csv"
    csv.write_text("arrival,prompt_tokens,output_tokens\n0,100,5\n1,50,5\n")
    assert kv(*BASE, "--trace", str(csv), "-o", "json").json()["run"][0]["value"] == 2


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        ((), 2, "give one of --request-rate R, --max-concurrency N or --trace FILE"),
        (("--request-rate", "2", "--max-concurrency", "3"), 2, "--max-concurrency: give one of"),
        (("--request-rate", "-1"), 2, "--request-rate: expected a number"),
        (("--request-rate", "1", "--output-len", "uniform:9:1"), 2, "--output-len: expected N"),
        (("--request-rate", "1", "--cancel-rate", "2"), 2, "--cancel-rate: expected a number from 0 to 1"),
    ],
)
def test_cli_usage_errors(args: tuple[str, ...], code: int, message: str) -> None:
    r = kv(*BASE, *args)
    assert r.exit_code == code and message in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1


def test_cli_refusals(tmp_path: Path) -> None:
    r = kv("simulate", "llama-3.1-8b", "--engine", "trtllm", "--gpu", "H100-80GB", "--request-rate", "1")
    assert r.exit_code == 4 and "give --engine vllm, sglang or llama.cpp" in r.stderr
    r = kv(*BASE[:-1], "T4", "--kv-cache-memory-bytes", "4GiB", "--max-model-len", "8192", "--request-rate", "1")
    assert r.exit_code == 2 and "--bandwidth" in r.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"arrival": 0, "prompt_tokens": -3, "output_tokens": 10}\n')
    r = kv(*BASE, "--trace", str(bad))
    assert r.exit_code == 3 and "prompt_tokens must be a whole number" in r.stderr


def test_cli_budgets_pass_and_fail() -> None:
    args = (*BASE, "--kv-cache-memory-bytes", "640MiB", "--max-model-len", "4096", "--max-concurrency", "40",
            "--prompt-len", "uniform:500:3000", "--output-len", "uniform:200:1000", "--duration", "5")  # fmt: skip
    r = kv(*args, "--max-preemptions", "0", "--max-ttft-p99", "100s", "--max-peak-kv", "100%", "-o", "json")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    by = {b["budget"]: b for b in doc["budgets"]}
    assert not by["max_preemptions"]["passed"] and by["max_preemptions"]["actual"] > 0
    assert by["max_ttft_p99"]["passed"] and by["max_peak_kv"]["passed"]
    assert "kvplan: budget failed: max_preemptions" in r.stderr and "preemptions over)" in r.stderr
    ok = kv(*args, "--max-itl-p99", "10s")
    assert ok.exit_code == 0 and "Budgets" in ok.stdout
    bad = kv(*args, "--max-ttft-p99", "fast")
    assert bad.exit_code == 2 and "--max-ttft-p99: expected a duration" in bad.stderr


def test_curve_gains_decode_bytes_and_the_itl_floor() -> None:
    """Hand-checked: 16 GB of weights (given: none of it the embedding table) plus the 512 MiB cache at 4,096
    tokens, read once per decode step at the H100's 3.35 TB/s."""
    doc = kv("curve", "llama-3.1-8b", "-c", "4k,8k", "--gpu", "H100-80GB", "--weight-bytes", "16GB", "-o", "json")
    rows = doc.json()["rows"]
    assert rows[0]["decode_bytes"] == 16_000_000_000 + 536_870_912
    assert rows[0]["itl_floor_s"] == pytest.approx((16_000_000_000 + 536_870_912) / 3.35e12)
    assert rows[1]["decode_bytes"] == 16_000_000_000 + 2 * 536_870_912
    assert "decode_bytes" not in kv("curve", "llama-3.1-8b", "-c", "4k", "-o", "json").json()["rows"][0]


def test_cli_workload_file(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text("workload:\n  request_rate: 2\n  duration: 5\n  prompt_len: uniform:100:200\n  seed: 4\n")
    a = kv(*BASE, "--workload", str(f), "-o", "json").json()
    b = kv(*BASE, "--request-rate", "2", "--duration", "5", "--prompt-len", "uniform:100:200", "--seed", "4",
           "-o", "json").json()  # fmt: skip
    assert a == b
    assert kv(*BASE, "--workload", str(f), "--max-concurrency", "3", "-o", "json").exit_code == 0  # flags win
    f.write_text("request_rate: 2\ncancel_rate: 7\n")
    r = kv(*BASE, "--workload", str(f))
    assert r.exit_code == 3 and "w.yaml:2: cancel_rate: expected a number from 0 to 1" in r.stderr
    f.write_text("request_rate: 2\nburst: 1\n")
    r = kv(*BASE, "--workload", str(f))
    assert r.exit_code == 3 and "w.yaml:2: burst: unknown workload key" in r.stderr


def test_hybrid_models() -> None:
    """gpt-oss (sliding-window + full groups) runs with and without prefix caching (proven on the recorded
    gpt-oss / Gemma-3 workloads); a Mamba hybrid too: prefix caching on is vLLM's 'align' mode (proven on the
    recorded Qwen3-Next / Nemotron-H / Falcon-H1 / Jamba / LFM2 / Kimi-Linear workloads)."""
    args = ("simulate", "gpt-oss-20b", "--engine", "vllm", "--gpu", "H100-80GB", "--request-rate", "2",
            "--duration", "5", "-o", "json")  # fmt: skip
    for extra in ((), ("--no-enable-prefix-caching",)):
        doc = kv(*args, *extra).json()
        assert doc["scheduler"]["prefix_caching"] is not bool(extra) and doc["blocks_returned"]
    mamba = ("simulate", "granite-4.0-h-small", "--engine", "vllm", "--gpu", "H100-80GB", "--max-model-len",
             "32768", "--request-rate", "2", "--duration", "5", "-o", "json")  # fmt: skip
    for extra in ((), ("--no-enable-prefix-caching",)):
        doc = kv(*mamba, *extra).json()
        assert doc["scheduler"]["prefix_caching"] is not bool(extra) and doc["blocks_returned"]


@settings(max_examples=60, deadline=None)
@given(
    _requests(3000, 600, 30),
    st.booleans(),
    st.sampled_from([None, 1, 64]),
    st.integers(0, 1500),
)
def test_state_blocks_return_to_the_baseline_in_align_mode(
    requests: list[tuple[int, int, int, int | None]], asynchronous: bool, checkpoint: int | None, shared: int
) -> None:
    """The invariant for a Mamba hybrid with prefix caching (vLLM's 'align' mode): state and attention blocks
    all come back, whatever is preempted, cancelled or hit."""
    from kvplan.simulation.vllm import GroupSpec

    groups = (GroupSpec(64, state=True), GroupSpec(64, state=True), GroupSpec(64))
    config = SchedulerConfig(120, 64, 4096, 512, 16, True, asynchronous, groups, checkpoint)
    _every_block_returns(config, requests, shared)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--request-rate", "1000000", "--duration", "86400"), "--request-rate: 1e+06 requests/s for 86400 s"),
        (("--max-concurrency", "1000000"), "--max-concurrency: expected a whole number from 1 to 100000"),
        (("--request-rate", "nan"), "--request-rate: expected a number"),
        (("--request-rate", "inf"), "--request-rate: expected a number"),
        (("--request-rate", "1", "--duration", "1e9"), "--duration: expected a number"),
        (("--request-rate", "1", "--shared-prefix", "-4"), "--shared-prefix: expected a whole number"),
        (("--request-rate", "1", "--seed", "1.5"), "--seed: expected a whole number"),
        (("--request-rate", "1", "--prompt-len", "lognormal:1000:9"), "--prompt-len: expected N"),
    ],
)
def test_hostile_workloads_are_one_line_usage_errors(args: tuple[str, ...], message: str) -> None:
    """No hang and no unbounded memory: every bound is checked before anything runs."""
    r = kv(*BASE, *args)
    assert r.exit_code == 2 and message in r.stderr and r.stderr.count("\n") == 1, r.stderr


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400), st.sampled_from([".jsonl", ".csv"]))
def test_hostile_traces_are_bad_input_or_requests(data: bytes, suffix: str) -> None:
    import tempfile

    from kvplan.errors import KvplanError
    from kvplan.simulation.workload import load_trace

    with tempfile.NamedTemporaryFile(suffix=suffix, delete=False) as fh:
        fh.write(data)
    code = 0
    try:
        trace = load_trace(fh.name)
    except KvplanError as exc:
        code, trace = exc.exit_code, ()
    assert code in (0, 3)
    assert all(r.prompt >= 1 and r.output >= 1 and r.arrival >= 0 for r in trace)


def test_a_trace_that_breaks_the_csv_reader_is_bad_input(tmp_path: Path) -> None:
    """Found by the property test above: a carriage return before a NUL made the csv module raise."""
    f = tmp_path / "t.csv"
    f.write_bytes(b"\r\x00")
    r = kv(*BASE, "--trace", str(f))
    assert r.exit_code == 3 and r.stderr.startswith("kvplan: error:") and r.stderr.count("\n") == 1, r.stderr


def test_a_deeply_nested_jsonl_trace_is_bad_input(tmp_path: Path) -> None:
    f = tmp_path / "t.jsonl"
    f.write_bytes(b"[" * 100_000)
    r = kv(*BASE, "--trace", str(f))
    assert r.exit_code == 3 and "t.jsonl:1: not valid JSON: nested deeper than" in r.stderr, r.stderr


def test_the_roofline_reads_the_one_gpu_table() -> None:
    """Bandwidth and dense peak are columns of the GPU presets (issue 27, item 3): `kvplan gpus -o json` carries
    them, simulate uses them, and a preset without them asks for the flags, naming the presets that have them."""
    rows = {r["name"]: r for r in kv("gpus", "-o", "json").json()["gpus"]}
    assert rows["H100-80GB"]["bandwidth_bytes_per_s"] == 3_350_000_000_000
    assert rows["H100-80GB"]["peak_flops"] == 989_400_000_000_000 and rows["T4"]["peak_flops"] is None
    doc = kv(*BASE, "--request-rate", "1", "--duration", "2", "-o", "json").json()
    assert doc["hardware"]["bandwidth_bytes_per_s"] == 3.35e12 and "H100 datasheet" in doc["hardware"]["source"]
    r = kv("simulate", "smollm2-135m", "--engine", "vllm", "--gpu", "T4", "--request-rate", "1", "--max-model-len",
           "2048", "--duration", "2")  # fmt: skip
    assert r.exit_code == 2 and "no bandwidth and peak FLOPS for" in r.stderr and "H100-80GB" in r.stderr
