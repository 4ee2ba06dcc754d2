"""Deployments with a workload: simulated through vLLM's scheduler and held to simulation budgets."""

from __future__ import annotations

from pathlib import Path

from helpers import kv

BASE = """deployments:
  - name: traffic
    model: llama-3.1-8b
    engine: vllm
    gpu: H100-80GB
    kv_cache_memory_bytes: 640MiB
    max_model_len: 4096
"""


def _check(tmp_path: Path, text: str) -> tuple[int, str, str]:
    f = tmp_path / "d.yaml"
    f.write_text(text)
    r = kv("check", str(f), "-o", "json")
    return r.exit_code, r.stdout, r.stderr


def test_a_simulated_deployment_fails_its_budget(tmp_path: Path) -> None:
    code, out, _ = _check(
        tmp_path,
        BASE + "    workload: {max_concurrency: 40, prompt_len: 'uniform:500:3000', output_len: 'uniform:200:1000', "
        "duration: 5}\n    budgets: {max_preemptions: 0, max_ttft_p99: 3600s}\n",
    )
    assert code == 1
    import json

    budgets = {b["budget"]: b for b in json.loads(out)["deployments"][0]["budgets"]}
    assert not budgets["max_preemptions"]["passed"] and budgets["max_ttft_p99"]["passed"]


def test_workload_errors_name_file_line_and_key(tmp_path: Path) -> None:
    cases = [
        ("    workload: {request_rate: 2}\n", "d.yaml:8: deployments[0].workload: a workload needs a budget"),
        ("    budgets: {max_preemptions: 0}\n", "deployments[0].budgets.max_preemptions: a simulation budget needs"),
        (
            "    workload: {request_rate: 2, burst: 3}\n    budgets: {max_preemptions: 0}\n",
            "d.yaml:8: deployments[0].workload.burst: unknown key",
        ),
        (
            "    workload: {request_rate: -2}\n    budgets: {max_preemptions: 0}\n",
            "d.yaml:8: deployments[0].workload.request_rate: expected a number",
        ),
        (
            "    workload: {request_rate: 2}\n    budgets:\n      max_ttft_p99: soon\n",
            "d.yaml:10: deployments[0].budgets.max_ttft_p99: expected a duration",
        ),
    ]
    for extra, message in cases:
        code, _, err = _check(tmp_path, BASE + extra)
        assert code == 3 and message in err, (extra, err)


def test_a_llamacpp_deployment_is_simulated_through_llama_servers_slots(tmp_path: Path) -> None:
    """A unified cache that fills fails requests; one stream per slot of the same memory does not."""
    text = """deployments:
  - name: unified
    model: llama-3.1-8b
    gpu: H100-80GB
    ctx_size: 8192
    workload: {request_rate: 4, duration: 20, prompt_len: 'uniform:500:3000', output_len: 800}
    budgets: {max_failed: 0}
  - name: streams
    model: llama-3.1-8b
    gpu: H100-80GB
    ctx_size: 8192
    parallel: 2
    workload: {request_rate: 4, duration: 20, prompt_len: 'uniform:500:3000', output_len: 800}
    budgets: {max_failed: 0}
"""
    code, out, _ = _check(tmp_path, text)
    import json

    got = [{b["budget"]: b for b in d["budgets"]}["max_failed"] for d in json.loads(out)["deployments"]]
    assert code == 1
    assert not got[0]["passed"] and got[0]["actual"] > 0
    assert got[1]["passed"] and got[1]["actual"] == 0
